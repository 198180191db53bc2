// PFC (IEEE 802.1Qbb) as a switch port receives it: a pause frame from the neighbour stops the
// port's egress for the paused priorities, each for its quanta at the port's speed (a quantum
// is 512 bit times); a frame with quanta 0 (XON) resumes at once. The scheduler leaves paused
// priorities' traffic classes out of its choice. Counted per priority as Spectrum's
// `ethtool -S` shows them: rx_prioN_pause and rx_prioN_pause_duration.
#pragma once

#include "dataplane/time.hpp"
#include "switch_emu/switch_spec.hpp"

#include <array>
#include <cstdint>
#include <vector>

namespace rocefab::switch_emu {

struct priority_counters {
    std::uint64_t rx_pause = 0;             // PFC frames received enabling this priority
    std::uint64_t rx_pause_duration_us = 0; // time paused, up to the latest pause frame
    std::uint64_t tx_pause = 0;             // PFC frames sent for this priority (XOFF and XON)
};

class pfc_receiver {
public:
    pfc_receiver(const switch_spec& spec);

    // A well-formed PFC frame arrived on `port` (its enable vector and the eight timers).
    void on_pause(std::uint16_t port, std::uint8_t enable_vector, const std::array<std::uint16_t, 8>& quanta,
                  sim_time now);
    // Traffic classes of `port` that may not send at `now` (bit t: TC t is paused).
    std::uint8_t paused_classes(std::uint16_t port, sim_time now) const;
    // When the earliest pause of `port` among `classes` ends; `never` if none is paused.
    sim_time resume_time(std::uint16_t port, std::uint8_t classes, sim_time now) const;

    const priority_counters& counters(std::uint16_t port, std::uint8_t priority) const {
        return _ports[port].counters[priority];
    }
    priority_counters& counters(std::uint16_t port, std::uint8_t priority) { return _ports[port].counters[priority]; }

private:
    struct port_state {
        std::array<sim_time, traffic_class_count> paused_since{};
        std::array<sim_time, traffic_class_count> paused_until{}; // <= now: not paused
        std::array<priority_counters, traffic_class_count> counters{};
    };
    std::vector<port_state> _ports;
    std::vector<std::uint64_t> _speed_bps;
    std::array<std::uint8_t, traffic_class_count> _tc_of_priority;
};

} // namespace rocefab::switch_emu
