#include "switch_emu/pfc.hpp"

#include "dataplane/wire/pfc.hpp"

#include <algorithm>

namespace rocefab::switch_emu {

pfc_receiver::pfc_receiver(const switch_spec& spec) : _ports(spec.ports.size()), _tc_of_priority(spec.qos.priority_to_tc) {
    for (const port_spec& p : spec.ports) _speed_bps.push_back(p.speed_bps);
}

void pfc_receiver::on_pause(std::uint16_t port, std::uint8_t enable_vector, const std::array<std::uint16_t, 8>& quanta,
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

std::uint8_t pfc_receiver::paused_classes(std::uint16_t port, sim_time now) const {
    const port_state& s = _ports[port];
    std::uint8_t classes = 0;
    for (unsigned p = 0; p < traffic_class_count; ++p)
        if (s.paused_until[p] > now) classes |= static_cast<std::uint8_t>(1u << _tc_of_priority[p]);
    return classes;
}

sim_time pfc_receiver::resume_time(std::uint16_t port, std::uint8_t classes, sim_time now) const {
    const port_state& s = _ports[port];
    sim_time earliest = never;
    for (unsigned p = 0; p < traffic_class_count; ++p)
        if (s.paused_until[p] > now && (classes & (1u << _tc_of_priority[p])))
            earliest = std::min(earliest, s.paused_until[p]);
    return earliest;
}

} // namespace rocefab::switch_emu
