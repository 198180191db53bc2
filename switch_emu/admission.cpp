#include "switch_emu/admission.hpp"

#include <algorithm>

namespace rocefab::switch_emu {

namespace {
// An IP MTU's frame on the wire: Ethernet header, 802.1Q tag, FCS, preamble and gap.
std::uint32_t max_frame(const port_spec& port) { return port.mtu + 14 + 4 + 4 + 20; }
} // namespace

std::uint32_t headroom_bytes(const port_spec& port, sim_time transmit_fifo, sim_time reaction) {
    const sim_time exposure = 2 * port.cable_delay + transmit_fifo + reaction;
    const auto in_flight = static_cast<std::uint64_t>((static_cast<unsigned __int128>(port.speed_bps) * exposure + 7'999'999'999u) /
                                                      8'000'000'000u);
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

std::uint64_t shared_buffer::threshold() const {
    const std::size_t free = _shared_size - std::min(_shared_size, _shared_used);
    return static_cast<std::uint64_t>(_alpha * static_cast<double>(free));
}

shared_buffer::verdict shared_buffer::admit(std::uint16_t ingress, std::uint8_t priority, std::uint32_t bytes,
                                            port_counters& egress, buffer_pool& pool) {
    priority_group& g = group(ingress, priority);
    if (g.reserved + bytes <= _reserved_per_group) {
        g.reserved += bytes;
        _reserved_used += bytes;
        pool = buffer_pool::reserved;
    } else if (g.headroom == 0 && g.shared + bytes <= threshold() && _shared_used + bytes <= _shared_size) {
        g.shared += bytes;
        _shared_used += bytes;
        pool = buffer_pool::shared;
    } else if (lossless(priority)) {
        // Paused (or about to be): what still arrives goes to the headroom, in order behind the
        // rest, until the PG drains.
        if (g.headroom + bytes > _headroom[ingress]) return verdict::headroom_drop;
        g.headroom += bytes;
        _headroom_used += bytes;
        pool = buffer_pool::headroom;
    } else {
        return verdict::tail_drop;
    }
    _peak = std::max(_peak, in_use());
    g.peak = std::max(g.peak, g.reserved + g.shared + g.headroom);
    const std::uint64_t held = egress[port_counter::buffer_bytes] + bytes;
    egress.set(port_counter::buffer_bytes, held);
    egress.set(port_counter::buffer_peak_bytes, std::max(egress[port_counter::buffer_peak_bytes], held));
    return verdict::admitted;
}

void shared_buffer::release(std::uint16_t ingress, std::uint8_t priority, buffer_pool pool, std::uint32_t bytes,
                            port_counters& egress) {
    // Never below zero, even if a caller releases twice: a wrong gauge is a bug, a wrapped one
    // would also lock the buffer for good.
    priority_group& g = group(ingress, priority);
    auto take = [bytes](std::uint32_t& from, std::size_t& total) {
        const std::uint32_t n = std::min(from, bytes);
        from -= n;
        total -= std::min<std::size_t>(total, n);
    };
    switch (pool) {
    case buffer_pool::reserved: take(g.reserved, _reserved_used); break;
    case buffer_pool::shared: take(g.shared, _shared_used); break;
    case buffer_pool::headroom: take(g.headroom, _headroom_used); break;
    }
    egress.set(port_counter::buffer_bytes, egress[port_counter::buffer_bytes] - std::min<std::uint64_t>(egress[port_counter::buffer_bytes], bytes));
}

bool shared_buffer::wants_pause(std::uint16_t ingress, std::uint8_t priority) const {
    return lossless(priority) && group(ingress, priority).headroom > 0;
}

bool shared_buffer::allows_resume(std::uint16_t ingress, std::uint8_t priority) const {
    const priority_group& g = group(ingress, priority);
    return g.headroom == 0 && g.shared + _xon_margin <= threshold();
}

} // namespace rocefab::switch_emu
