#include "switch_emu/scheduler.hpp"

#include <bit>

namespace rocefab::switch_emu {

namespace {
std::uint8_t highest(std::uint8_t classes) { return static_cast<std::uint8_t>(7 - std::countl_zero(classes)); }
} // namespace

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

std::optional<std::uint8_t> ets_scheduler::pick(std::uint16_t port, std::uint8_t backlog) {
    if (backlog == 0) return std::nullopt;
    if (const std::uint8_t strict = backlog & _strict) return highest(strict);
    const std::uint8_t weighted = backlog & _weighted;
    if (weighted == 0) return highest(backlog); // only classes without a share have frames
    port_state& s = _ports[port];
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

void ets_scheduler::sent(std::uint16_t port, std::uint8_t tc, std::uint32_t bytes) {
    if (_weighted & (1u << tc)) _ports[port].deficit[tc] -= bytes;
}

} // namespace rocefab::switch_emu
