#include "switch_emu/classify.hpp"

namespace rocefab::switch_emu {

void classify_frame(const qos_spec& qos, const parsed_frame& parsed, packet_meta& meta) {
    std::uint8_t priority;
    if (qos.trust == trust_mode::pcp)
        priority = parsed.vlan_tagged ? parsed.pcp : qos.default_priority;
    else
        priority = qos.dscp_to_priority[parsed.dscp & 0x3f];
    meta.priority = priority;
    meta.traffic_class = qos.priority_to_tc[priority & 7];
}

} // namespace rocefab::switch_emu
