// PFC (IEEE 802.1Qbb) at a switch port, both ways.
//   Received: a pause frame from the neighbour stops the port's egress for the paused
//   priorities, each for its quanta at the port's speed (a quantum is 512 bit times); quanta 0
//   (XON) resumes at once. The scheduler leaves paused priorities' traffic classes out.
//   Sent: when admission says a lossless priority group of an ingress port is full, the port
//   sends XOFF (quanta 0xffff) for that priority, again before it expires while the group stays
//   full, and XON (quanta 0) once it has drained.
// Counted per priority as Spectrum's `ethtool -S` shows them: rx_prioN_pause,
// rx_prioN_pause_duration, tx_prioN_pause, tx_prioN_pause_duration (microseconds).
#pragma once

#include "dataplane/pfc_pause.hpp"
#include "dataplane/time.hpp"
#include "switch_emu/switch_spec.hpp"

#include <array>
#include <cstdint>
#include <vector>

namespace rocefab::switch_emu {

struct priority_counters {
    std::uint64_t rx_pause = 0;             // PFC frames received enabling this priority
    std::uint64_t rx_pause_duration_us = 0; // time paused by the neighbour, up to the latest pause frame
    std::uint64_t tx_pause = 0;             // PFC frames sent for this priority (XOFF and XON)
    std::uint64_t tx_pause_duration_us = 0; // time the neighbour was asked to pause, up to its XON
};

class pfc_state {
public:
    static constexpr std::uint16_t xoff_quanta = pause_sender::xoff_quanta;

    explicit pfc_state(const switch_spec& spec);

    // -- received ---------------------------------------------------------------------------
    void on_pause(std::uint16_t port, std::uint8_t enable_vector, const std::array<std::uint16_t, 8>& quanta,
                  sim_time now);
    // Traffic classes of `port` that may not send at `now` (bit t: TC t is paused). Inline up
    // to the common case, asked for every frame sent: nothing paused.
    std::uint8_t paused_classes(std::uint16_t port, sim_time now) const {
        return _ports[port].received_until <= now ? 0 : paused_classes_slow(port, now);
    }
    // When the earliest pause of `port` among `classes` ends; `never` if none is paused.
    sim_time resume_time(std::uint16_t port, std::uint8_t classes, sim_time now) const;

    // -- sent: the caller sends the frame when these return true ------------------------------
    bool start_pausing(std::uint16_t port, std::uint8_t priority, sim_time now);
    bool stop_pausing(std::uint16_t port, std::uint8_t priority, sim_time now);
    bool pausing(std::uint16_t port, std::uint8_t priority) const { return _ports[port].sent.pausing(priority); }
    // Priorities of `port` whose XOFF must be sent again at `now` (bit p); marks them refreshed.
    // Call refreshes_taken() once every port has been asked.
    std::uint8_t refresh_due(std::uint16_t port, sim_time now);
    void refreshes_taken() { update_next_refresh(); }
    // Kept up to date by the calls above: poll() and next_deadline() read it every iteration.
    sim_time next_refresh() const { return _next_refresh; }

    priority_counters counters(std::uint16_t port, std::uint8_t priority) const {
        const port_state& s = _ports[port];
        return {s.rx_pause[priority], s.rx_pause_duration_us[priority], s.tx_pause[priority],
                s.tx_pause_duration_us[priority]};
    }

private:
    struct port_state {
        pause_timers received;
        sim_time received_until = 0; // when the latest received pause ends: before it, nothing is paused
        pause_sender sent;
        pause_timers::per_priority rx_pause{}, rx_pause_duration_us{}, tx_pause{}, tx_pause_duration_us{};
        explicit port_state(std::uint64_t bits_per_second) : sent(bits_per_second) {}
    };
    void update_next_refresh();
    std::uint8_t paused_classes_slow(std::uint16_t port, sim_time now) const;

    std::vector<port_state> _ports;
    sim_time _next_refresh = never;
    std::vector<std::uint64_t> _speed_bps;
    std::array<std::uint8_t, traffic_class_count> _tc_of_priority;
};

} // namespace rocefab::switch_emu
