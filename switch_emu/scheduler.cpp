#include "switch_emu/scheduler.hpp"

namespace rocefab::switch_emu {

ets_scheduler::ets_scheduler(const ets_spec& spec, std::uint16_t port_count) : _ports(port_count) {
    for (unsigned tc = 0; tc < traffic_class_count; ++tc) {
        if (spec.mode[tc] == tc_mode::strict) {
            _strict |= static_cast<std::uint8_t>(1u << tc);
        } else if (spec.bandwidth_percent[tc] > 0) {
            _weighted |= static_cast<std::uint8_t>(1u << tc);
            _quantum[tc] = spec.bandwidth_percent[tc] * quantum_per_percent;
        }
    }
}

std::uint8_t ets_scheduler::pick_weighted(port_state& s, std::uint8_t weighted) {
    // A class that ran dry starts its next busy period without credit or debt (DRR).
    if (weighted != s.last_weighted) {
        for (unsigned tc = 0; tc < traffic_class_count; ++tc)
            if (!(weighted & (1u << tc))) s.deficit[tc] = 0;
        s.last_weighted = weighted;
    }
    // The class whose turn it is keeps it while its deficit lasts; otherwise the turn passes
    // round the backlogged classes, each adding its quantum as it comes up. A class in debt
    // (it sent a frame larger than its credit) may need more than one round: at most a frame's
    // worth, so this ends.
    for (;;) {
        if ((weighted & (1u << s.current)) && s.deficit[s.current] > 0) return s.current;
        s.current = static_cast<std::uint8_t>((s.current + 1) % traffic_class_count);
        if (weighted & (1u << s.current)) s.deficit[s.current] += _quantum[s.current];
    }
}

} // namespace rocefab::switch_emu
