// Stage 3, route, its adaptive part: Spectrum's adaptive routing (AR) for RoCE. ECMP keeps a flow
// on one hashed member, so two large flows that hash alike share one uplink while another sits
// idle. With AR a RoCE packet may take any member of its group: the least-loaded one among
// those under the link-utilisation threshold.
//
// As on Spectrum, the load picture is refreshed every decision interval (1 us), not per packet:
// each port is graded by its utilisation over the last interval and the bytes queued for it.
// Between gradings the switch adds what it sends each port to that port's load, so that a burst
// arriving within one interval does not all go to the same "least-loaded" port.
//
// The receiver sees RoCE packets out of order; a ConnectX with AR support places them by PSN,
// as this project's NIC does (nic_emu/reorder_buffer.hpp). Packets that are not RoCE, and all
// packets when nothing is loaded, follow the ECMP hash, so their order is kept.
#pragma once

#include "dataplane/time.hpp"
#include "switch_emu/switch_spec.hpp"

#include <cstdint>
#include <span>
#include <vector>

namespace rocefab::switch_emu {

class adaptive_routing {
public:
    // What the switch knows about one egress port when it grades it.
    struct port_load {
        std::uint64_t tx_bytes;     // sent since the switch started (a counter)
        std::uint64_t queued_bytes; // waiting in its egress queues now
    };

    explicit adaptive_routing(const switch_spec& spec);

    bool enabled() const { return _enabled; }
    // Whether a route over `ports` is an AR group: more than one member, every one AR-enabled.
    bool eligible_group(std::span<const std::uint16_t> ports) const;

    // Grades every port when a decision interval has passed since the last grading.
    // `load_of(port)` returns its port_load.
    template <typename LoadOf> void regrade_if_due(sim_time now, LoadOf&& load_of) {
        if (now < _next_grading) return;
        const sim_time elapsed = now - _last_grading;
        for (std::uint16_t port = 0; port < _ports.size(); ++port) {
            const port_load load = load_of(port);
            grade(_ports[port], load, elapsed);
        }
        _last_grading = now;
        _next_grading = now + _interval;
    }

    // Chooses among `ports` (a group eligible_group() accepted) for a packet of `length` bytes
    // whose ECMP hash picked `ports[hashed]`; returns the index of the member to use.
    std::uint32_t choose(std::span<const std::uint16_t> ports, std::uint32_t hashed, std::uint32_t length);

private:
    struct port_state {
        std::uint64_t speed_bps = 0;
        bool enabled = false;
        std::uint64_t tx_bytes_at_grading = 0;
        bool over_threshold = false;  // utilisation in the last interval at or over the threshold
        std::uint64_t load_bytes = 0; // queued at grading, plus what AR sent it since
    };
    void grade(port_state& port, const port_load& load, sim_time elapsed) const;

    bool _enabled;
    std::uint8_t _threshold_percent;
    sim_time _interval;
    sim_time _last_grading = 0;
    sim_time _next_grading = 0;
    std::vector<port_state> _ports;
};

} // namespace rocefab::switch_emu
