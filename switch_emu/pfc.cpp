#include "switch_emu/pfc.hpp"

#include "dataplane/wire/pfc.hpp"

#include <algorithm>

namespace rocefab::switch_emu {

pfc_state::pfc_state(const switch_spec& spec) : _ports(spec.ports.size()), _tc_of_priority(spec.qos.priority_to_tc) {
    for (const port_spec& p : spec.ports) {
        _speed_bps.push_back(p.speed_bps);
        _refresh_interval.push_back(std::max<sim_time>(1, wire::pause_quanta_to_time(xoff_quanta, p.speed_bps) / 2));
    }
}

void pfc_state::on_pause(std::uint16_t port, std::uint8_t enable_vector, const std::array<std::uint16_t, 8>& quanta,
                         sim_time now) {
    port_state& s = _ports[port];
    for (unsigned p = 0; p < traffic_class_count; ++p) {
        if (!(enable_vector & (1u << p))) continue;
        priority_counters& c = s.counters[p];
        ++c.rx_pause;
        // Account the pause so far (up to its end, or now if it is still running), then start
        // again from this frame: it replaces the timer (802.1Qbb 36.1.3.3).
        if (s.paused_until[p] > s.paused_since[p]) {
            const sim_time end = std::min(s.paused_until[p], now);
            if (end > s.paused_since[p]) c.rx_pause_duration_us += static_cast<std::uint64_t>(end - s.paused_since[p]) / 1000;
        }
        s.paused_since[p] = now;
        s.paused_until[p] = now + wire::pause_quanta_to_time(quanta[p], _speed_bps[port]);
    }
}

std::uint8_t pfc_state::paused_classes(std::uint16_t port, sim_time now) const {
    const port_state& s = _ports[port];
    std::uint8_t classes = 0;
    for (unsigned p = 0; p < traffic_class_count; ++p)
        if (s.paused_until[p] > now) classes |= static_cast<std::uint8_t>(1u << _tc_of_priority[p]);
    return classes;
}

sim_time pfc_state::resume_time(std::uint16_t port, std::uint8_t classes, sim_time now) const {
    const port_state& s = _ports[port];
    sim_time earliest = never;
    for (unsigned p = 0; p < traffic_class_count; ++p)
        if (s.paused_until[p] > now && (classes & (1u << _tc_of_priority[p])))
            earliest = std::min(earliest, s.paused_until[p]);
    return earliest;
}

bool pfc_state::start_pausing(std::uint16_t port, std::uint8_t priority, sim_time now) {
    port_state& s = _ports[port];
    if (s.xoff_since[priority] != never) return false;
    s.xoff_since[priority] = now;
    s.refresh_at[priority] = now + _refresh_interval[port];
    ++s.counters[priority].tx_pause;
    return true;
}

bool pfc_state::stop_pausing(std::uint16_t port, std::uint8_t priority, sim_time now) {
    port_state& s = _ports[port];
    if (s.xoff_since[priority] == never) return false;
    s.counters[priority].tx_pause_duration_us += static_cast<std::uint64_t>(now - s.xoff_since[priority]) / 1000;
    s.xoff_since[priority] = never;
    s.refresh_at[priority] = never;
    ++s.counters[priority].tx_pause;
    return true;
}

std::uint8_t pfc_state::refresh_due(std::uint16_t port, sim_time now) {
    port_state& s = _ports[port];
    std::uint8_t due = 0;
    for (unsigned p = 0; p < traffic_class_count; ++p) {
        if (s.refresh_at[p] > now) continue;
        due |= static_cast<std::uint8_t>(1u << p);
        s.refresh_at[p] = now + _refresh_interval[port];
        ++s.counters[p].tx_pause;
    }
    return due;
}

sim_time pfc_state::next_refresh() const {
    sim_time earliest = never;
    for (const port_state& s : _ports)
        for (sim_time t : s.refresh_at) earliest = std::min(earliest, t);
    return earliest;
}

} // namespace rocefab::switch_emu
