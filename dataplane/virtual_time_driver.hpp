// Runs a wiring as a single-threaded discrete-event simulation: time jumps from event to
// event (a frame's arrival, a node's deadline). Nothing here reads a clock or iterates an
// unordered container, so the same wiring and inputs give the same result, bit for bit.
//
// At each instant t (the earliest pending event):
//   1. every frame with arrival <= t is delivered, links in index order (ties at t are broken
//      by link index; within a link, by arrival time: FIFO, except that a frame held back by
//      fault injection's reordering is overtaken by later ones);
//   2. every node that received a frame at t, or whose next_deadline() <= t, is polled at t,
//      nodes in index order;
//   steps 1-2 repeat while they do work, since a zero-delay link or a poll can create more
//   work at the same instant.
// Cost per instant is O(links + nodes): fine for the tens of nodes of a lab fabric.
#pragma once

#include "dataplane/time.hpp"
#include "dataplane/wiring.hpp"

#include <cstdint>
#include <vector>

namespace rocefab {

class virtual_time_driver {
public:
    // Re-checks at one instant before moving on. Bounds a livelock of misbehaving nodes (a
    // poll that always claims work) so that time still advances.
    static constexpr unsigned max_rounds_per_instant = 1u << 16;
    // The most frames of one link handed to its receiver in one receive_burst().
    static constexpr unsigned delivery_burst = 64;

    explicit virtual_time_driver(wiring& w, sim_time start = 0);

    sim_time now() const { return _now; }

    // The earliest pending event, or `never`. A node deadline in the past counts as now, or as
    // now + 1 once the instant `now` was processed: a node that keeps its deadline there after
    // a poll is polled every nanosecond (a bug in the node that shows up as slowness, not as a
    // hang).
    sim_time next_event_time();

    // Processes the next instant if it is <= limit; returns false (time unchanged) otherwise.
    bool step(sim_time limit);

    // Processes every event up to and including `end`, then sets now() to `end`.
    void run_until(sim_time end);

    // Processes events until none is pending (returns true; now() is the last event's time)
    // or the next one would be after `limit` (returns false; now() is `limit`).
    bool run_until_idle(sim_time limit);

    std::uint64_t instants_processed() const { return _instants; }
    std::uint64_t frames_delivered() const { return _frames_delivered; }

private:
    bool deliver_due(sim_time t);
    bool poll_due(sim_time t);

    wiring& _wiring;
    sim_time _now;
    sim_time _done_through;              // the last instant processed
    std::vector<std::uint8_t> _received; // per node: got a frame at this instant, poll it
    std::uint64_t _instants = 0;
    std::uint64_t _frames_delivered = 0;
};

} // namespace rocefab
