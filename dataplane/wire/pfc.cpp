#include "dataplane/wire/pfc.hpp"

#include <cstring>

namespace rocefab::wire {

std::size_t write_pfc_frame(std::uint8_t* out, const mac_address& source, std::uint8_t enable_vector,
                            const std::array<std::uint16_t, 8>& quanta) {
    pfc_frame f{};
    f.ethernet.destination = pfc_destination_mac;
    f.ethernet.source = source;
    f.ethernet.ether_type.store(ethertype::mac_control);
    f.opcode.store(pfc_mac_control_opcode);
    f.priority_enable_vector.store(enable_vector);
    for (std::size_t i = 0; i < pfc_priority_count; ++i) f.quanta[i].store(quanta[i]);
    std::memcpy(out, &f, sizeof f);
    std::memset(out + sizeof f, 0, pfc_frame_length - sizeof f);
    return pfc_frame_length;
}

bool parse_pfc_frame(std::span<const std::uint8_t> frame, std::uint8_t& enable_vector,
                     std::array<std::uint16_t, 8>& quanta) {
    if (frame.size() < sizeof(pfc_frame)) return false;
    const auto* f = reinterpret_cast<const pfc_frame*>(frame.data());
    if (f->ethernet.destination != pfc_destination_mac) return false;
    if (f->ethernet.ether_type.load() != ethertype::mac_control) return false;
    if (f->opcode.load() != pfc_mac_control_opcode) return false;
    enable_vector = static_cast<std::uint8_t>(f->priority_enable_vector.load() & 0xff);
    for (std::size_t i = 0; i < pfc_priority_count; ++i) quanta[i] = f->quanta[i].load();
    return true;
}

} // namespace rocefab::wire
