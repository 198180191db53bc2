#include "switch_emu/pfc.hpp"

#include "dataplane/wire/pfc.hpp"

#include <algorithm>

namespace rocefab::switch_emu {

pfc_state::pfc_state(const switch_spec& spec) : _tc_of_priority(spec.qos.priority_to_tc) {
    for (const port_spec& p : spec.ports) {
        _speed_bps.push_back(p.speed_bps);
        _ports.emplace_back(p.speed_bps);
    }
}

void pfc_state::on_pause(std::uint16_t port, std::uint8_t enable_vector, const std::array<std::uint16_t, 8>& quanta,
                         sim_time now) {
    port_state& s = _ports[port];
    s.received.on_frame(enable_vector, quanta, _speed_bps[port], now, s.rx_pause, s.rx_pause_duration_us);
    s.received_until = 0;
    for (unsigned p = 0; p < traffic_class_count; ++p)
        s.received_until = std::max(s.received_until, s.received.until(p));
}

std::uint8_t pfc_state::paused_classes_slow(std::uint16_t port, sim_time now) const {
    const port_state& s = _ports[port];
    std::uint8_t classes = 0;
    for (unsigned p = 0; p < traffic_class_count; ++p)
        if (s.received.until(p) > now) classes |= static_cast<std::uint8_t>(1u << _tc_of_priority[p]);
    return classes;
}

sim_time pfc_state::resume_time(std::uint16_t port, std::uint8_t classes, sim_time now) const {
    const port_state& s = _ports[port];
    sim_time earliest = never;
    for (unsigned p = 0; p < traffic_class_count; ++p)
        if (s.received.until(p) > now && (classes & (1u << _tc_of_priority[p])))
            earliest = std::min(earliest, s.received.until(p));
    return earliest;
}

bool pfc_state::start_pausing(std::uint16_t port, std::uint8_t priority, sim_time now) {
    port_state& s = _ports[port];
    if (!s.sent.start(priority, now, s.tx_pause)) return false;
    _next_refresh = std::min(_next_refresh, s.sent.next_refresh());
    return true;
}

bool pfc_state::stop_pausing(std::uint16_t port, std::uint8_t priority, sim_time now) {
    port_state& s = _ports[port];
    if (!s.sent.stop(priority, now, s.tx_pause, s.tx_pause_duration_us)) return false;
    update_next_refresh();
    return true;
}

std::uint8_t pfc_state::refresh_due(std::uint16_t port, sim_time now) {
    port_state& s = _ports[port];
    return s.sent.refresh_due(now, s.tx_pause);
}

void pfc_state::update_next_refresh() {
    _next_refresh = never;
    for (const port_state& s : _ports) _next_refresh = std::min(_next_refresh, s.sent.next_refresh());
}

} // namespace rocefab::switch_emu
