#include "switch_emu/pfc_watchdog.hpp"

namespace rocefab::switch_emu {

pfc_watchdog::pfc_watchdog(const switch_spec& spec) : _spec(spec.qos.pfc_watchdog), _ports(spec.ports.size()) {}

void pfc_watchdog::arm(sim_time now) {
    if (_spec.enabled && _next_poll == never) _next_poll = now + _spec.polling_interval;
}

pfc_watchdog::events pfc_watchdog::poll_port(std::uint16_t port, std::uint8_t paused, std::uint8_t backlog) {
    port_state& s = _ports[port];
    events e;
    s.watched = 0;
    for (unsigned tc = 0; tc < traffic_class_count; ++tc) {
        const std::uint8_t bit = static_cast<std::uint8_t>(1u << tc);
        const bool held = (paused & bit) && (backlog & bit);
        if (!(s.stormed & bit)) {
            s.paused_polls[tc] = held ? static_cast<std::uint8_t>(s.paused_polls[tc] + 1) : 0;
            if (s.paused_polls[tc] >= _spec.robustness) {
                s.stormed |= bit;
                s.paused_polls[tc] = 0;
                s.clear_polls[tc] = 0;
                e.stormed |= bit;
            }
        } else {
            // Restored once the neighbour has stopped pausing for as long as it took to detect.
            s.clear_polls[tc] = (paused & bit) ? 0 : static_cast<std::uint8_t>(s.clear_polls[tc] + 1);
            if (s.clear_polls[tc] >= _spec.robustness) {
                s.stormed &= static_cast<std::uint8_t>(~bit);
                s.clear_polls[tc] = 0;
                e.restored |= bit;
            }
        }
        if ((paused & bit) || (s.stormed & bit)) s.watched |= bit;
    }
    return e;
}

void pfc_watchdog::polled(sim_time now) {
    bool needed = false;
    for (const port_state& s : _ports) needed |= s.watched != 0;
    _next_poll = needed ? now + _spec.polling_interval : never;
}

} // namespace rocefab::switch_emu
