#include "control/cm/mad.hpp"

namespace rocefab::cm {

const char* attribute_name(attribute a) {
    switch (a) {
    case attribute::class_port_info: return "ClassPortInfo";
    case attribute::req: return "REQ";
    case attribute::mra: return "MRA";
    case attribute::rej: return "REJ";
    case attribute::rep: return "REP";
    case attribute::rtu: return "RTU";
    case attribute::dreq: return "DREQ";
    case attribute::drep: return "DREP";
    case attribute::sidr_req: return "SIDR_REQ";
    case attribute::sidr_rep: return "SIDR_REP";
    case attribute::lap: return "LAP";
    case attribute::apr: return "APR";
    }
    return "unknown";
}

std::optional<attribute> classify(const cm_mad& mad) {
    const mad_header& h = mad.header;
    if (h.base_version != mad_base_version || h.mgmt_class != mgmt_class_cm || h.class_version != cm_class_version)
        return std::nullopt;
    if (h.method != method_send) return std::nullopt;
    const auto id = h.attribute_id.load();
    switch (static_cast<attribute>(id)) {
    case attribute::req:
    case attribute::mra:
    case attribute::rej:
    case attribute::rep:
    case attribute::rtu:
    case attribute::dreq:
    case attribute::drep:
    case attribute::sidr_req:
    case attribute::sidr_rep: return static_cast<attribute>(id);
    default: return std::nullopt;
    }
}

void set_header(cm_mad& mad, attribute a, std::uint64_t transaction_id) {
    mad = cm_mad{};
    mad.header.base_version = mad_base_version;
    mad.header.mgmt_class = mgmt_class_cm;
    mad.header.class_version = cm_class_version;
    mad.header.method = method_send;
    mad.header.transaction_id.store(transaction_id);
    mad.header.attribute_id.store(static_cast<std::uint16_t>(a));
}

} // namespace rocefab::cm
