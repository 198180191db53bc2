#include "switch_emu/adaptive_routing.hpp"

namespace rocefab::switch_emu {

adaptive_routing::adaptive_routing(const switch_spec& spec)
    : _enabled(spec.adaptive_routing.enabled),
      _threshold_percent(spec.adaptive_routing.link_utilization_threshold_percent),
      _interval(spec.adaptive_routing.decision_interval), _ports(spec.ports.size()) {
    for (std::size_t p = 0; p < spec.ports.size(); ++p) {
        _ports[p].speed_bps = spec.ports[p].speed_bps;
        _ports[p].enabled = spec.ports[p].adaptive_routing;
    }
}

bool adaptive_routing::eligible_group(std::span<const std::uint16_t> ports) const {
    if (!_enabled || ports.size() < 2) return false;
    for (std::uint16_t port : ports)
        if (!_ports[port].enabled) return false;
    return true;
}

void adaptive_routing::grade(port_state& port, const port_load& load, sim_time elapsed) const {
    const std::uint64_t sent = load.tx_bytes - port.tx_bytes_at_grading;
    port.tx_bytes_at_grading = load.tx_bytes;
    // sent × 8 / (speed × elapsed) >= threshold / 100, without division or overflow for any
    // interval a fabric runs for (unsigned __int128).
    const auto sent_bits_percent = static_cast<unsigned __int128>(sent) * 8 * 100 * 1'000'000'000u;
    const auto capacity_bits_percent =
        static_cast<unsigned __int128>(port.speed_bps) * static_cast<std::uint64_t>(elapsed) * _threshold_percent;
    port.over_threshold = elapsed > 0 && sent_bits_percent >= capacity_bits_percent;
    port.load_bytes = load.queued_bytes;
}

std::uint32_t adaptive_routing::choose(std::span<const std::uint16_t> ports, std::uint32_t hashed,
                                       std::uint32_t length) {
    // Members under the threshold are preferred; if none is, all of them compete on load.
    bool any_under = false;
    for (std::uint16_t port : ports) any_under |= !_ports[port].over_threshold;
    // Starting from the hashed member, so that ties keep the flow on its ECMP path.
    const auto count = static_cast<std::uint32_t>(ports.size());
    std::uint32_t best = hashed;
    for (std::uint32_t step = 0; step < count; ++step) {
        const std::uint32_t i = (hashed + step) % count;
        const port_state& candidate = _ports[ports[i]];
        if (any_under && candidate.over_threshold) continue;
        const port_state& current = _ports[ports[best]];
        if ((any_under && current.over_threshold) || candidate.load_bytes < current.load_bytes) best = i;
    }
    _ports[ports[best]].load_bytes += length;
    return best;
}

} // namespace rocefab::switch_emu
