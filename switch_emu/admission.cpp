#include "switch_emu/admission.hpp"

#include <algorithm>

namespace rocefab::switch_emu {

namespace {
// An IP MTU's frame on the wire: Ethernet header, 802.1Q tag, FCS, preamble and gap.
std::uint32_t max_frame(const port_spec& port) { return port.mtu + 14 + 4 + 4 + 20; }
} // namespace

std::uint32_t headroom_bytes(const port_spec& port, sim_time transmit_fifo, sim_time reaction) {
    const sim_time exposure = 2 * port.cable_delay + transmit_fifo + reaction;
    const auto in_flight = static_cast<std::uint64_t>(
        (static_cast<unsigned __int128>(port.speed_bps) * exposure + 7'999'999'999u) / 8'000'000'000u);
    return static_cast<std::uint32_t>(2 * max_frame(port) + in_flight);
}

shared_buffer::shared_buffer(const switch_spec& spec)
    : _shared_size(spec.buffer_bytes), _alpha(spec.buffer_alpha), _lossless(spec.qos.lossless_priorities),
      _reserved_per_group(spec.reserved_bytes_per_group), _xon_margin(0), _headroom(spec.ports.size()),
      _groups(spec.ports.size() * 8) {
    std::uint32_t largest = 0;
    for (std::size_t p = 0; p < spec.ports.size(); ++p) {
        _headroom[p] = headroom_bytes(spec.ports[p], spec.transmit_fifo, spec.pfc_reaction);
        largest = std::max(largest, max_frame(spec.ports[p]));
    }
    _xon_margin = 2 * largest;
}

} // namespace rocefab::switch_emu
