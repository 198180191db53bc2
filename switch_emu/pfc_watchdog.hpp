// The PFC watchdog (Spectrum/Cumulus `qos pfc-watchdog`, SONiC PFC_WD): a PFC storm (a neighbour
// that keeps a queue paused, e.g. a stuck NIC or a buffer-dependency deadlock) would hold the
// queue, then its ingress groups, then their neighbours, for ever. Every polling interval the
// watchdog looks at each egress queue; one that was paused with frames waiting at `robustness`
// polls in a row is declared stormed, and its action applies until the pauses stop for as
// many polls:
//   drop    - the queue's frames and those arriving for it are dropped (watchdog_drops);
//   forward - the queue ignores received pauses and sends;
//   alert   - only counted.
// The watchdog polls only while some queue is paused or stormed, so an idle fabric has no timer.
#pragma once

#include "dataplane/time.hpp"
#include "switch_emu/switch_spec.hpp"

#include <array>
#include <cstdint>
#include <vector>

namespace rocefab::switch_emu {

class pfc_watchdog {
public:
    explicit pfc_watchdog(const switch_spec& spec);

    bool enabled() const { return _spec.enabled; }
    // A pause arrived: make sure the watchdog polls.
    void arm(sim_time now);
    sim_time next_poll() const { return _next_poll; }

    struct events {
        std::uint8_t stormed = 0;  // classes declared stormed at this poll (bit t)
        std::uint8_t restored = 0; // classes restored at this poll
    };
    // One poll of `port`: `paused` and `backlog` are its paused and backlogged classes now.
    events poll_port(std::uint16_t port, std::uint8_t paused, std::uint8_t backlog);
    // After every port was polled at `now`: when the next poll is, if any queue still needs one.
    void polled(sim_time now);

    std::uint8_t stormed(std::uint16_t port) const { return _ports[port].stormed; }
    pfc_watchdog_action action() const { return _spec.action; }

private:
    struct port_state {
        std::array<std::uint8_t, traffic_class_count> paused_polls{};
        std::array<std::uint8_t, traffic_class_count> clear_polls{};
        std::uint8_t stormed = 0;
        std::uint8_t watched = 0; // classes paused at the last poll, or stormed
    };
    pfc_watchdog_spec _spec;
    std::vector<port_state> _ports;
    sim_time _next_poll = never;
};

} // namespace rocefab::switch_emu
