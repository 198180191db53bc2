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
//   work at the same instant. A link that gets a due frame, or a node whose deadline becomes
//   due, while its step runs is served in that same step if its index is still ahead, in the
//   next round otherwise.
//
// The driver keeps a calendar (event_calendar.hpp) of every link's next arrival and every
// node's next deadline, so an instant costs O(what is due × log(what waits)), not a look at
// every link and node. That rests on when those times can change:
//   - a link's next arrival, when a frame is queued (it tells the driver: arrival_listener)
//     and when the driver takes frames off it;
//   - a node's next deadline, only through its own receive() and poll(), or those of a node
//     coupled to it (wiring::couple), or from outside between calls to the driver (every
//     public call starts by asking all of them again).
// The driver asks again after each of these, at the point where the loop above would have
// looked, so the order of deliveries and polls is the one the loop above defines.
//
// Running ahead (set_run_ahead, off by default). Nodes touch each other only through links,
// which take at least the shortest propagation delay d, and through the memory coupled nodes
// share. So from the earliest pending event T, nothing one group of coupled nodes does before
// T + d can reach another group before T + d either. With running ahead on, the driver takes
// time a window [T, T + d) at a time and in it serves each group in turn, all of its instants
// before the next group's: a group's nodes then do a stretch of work while their state is in
// the CPU's cache, instead of one event between every other group's. Each group sees the same
// instants, frames and polls, in the same order, as above, with one difference: the rounds of an
// instant repeat while the group did work in the last one, not while anyone did. Only a node
// that leaves itself or a partner due at an instant without doing any work sees it: it is
// polled at the next nanosecond, where above another group's work could have had it polled
// again at the same instant. A window never reaches past the next instant of a node that
// observes the others (wiring::set_observer); such an instant is served as above, every node
// at once.
#pragma once

#include "dataplane/event_calendar.hpp"
#include "dataplane/time.hpp"
#include "dataplane/wiring.hpp"

#include <cstdint>
#include <vector>

namespace rocefab {

class virtual_time_driver final : private arrival_listener {
public:
    // Re-checks at one instant before moving on. Bounds a livelock of misbehaving nodes (a
    // poll that always claims work) so that time still advances.
    static constexpr unsigned max_rounds_per_instant = 1u << 16;
    // The most frames of one link handed to its receiver in one receive_burst().
    static constexpr unsigned delivery_burst = 64;

    // The wiring must outlive the driver: the driver listens to its links, and stops on
    // destruction.
    explicit virtual_time_driver(wiring& w, sim_time start = 0);
    ~virtual_time_driver();
    virtual_time_driver(const virtual_time_driver&) = delete;
    virtual_time_driver& operator=(const virtual_time_driver&) = delete;

    sim_time now() const { return _now; }

    // The earliest pending event, or `never`. A node deadline in the past counts as now, or as
    // now + 1 once the instant `now` was processed: a node that keeps its deadline there after
    // a poll is polled every nanosecond (a bug in the node that shows up as slowness, not as a
    // hang).
    sim_time next_event_time();

    // Lets groups of coupled nodes run ahead of each other within windows of the shortest link
    // delay (above). Off by default. Has no effect while a link has no propagation delay.
    void set_run_ahead(bool on);
    // The window running ahead uses now: the shortest link delay; 0 when off or not possible.
    sim_time lookahead() const { return _lookahead; }

    // Processes the next instant if it is <= limit; returns false (time unchanged) otherwise.
    // Running ahead, processes the next window, up to limit.
    bool step(sim_time limit);

    // Processes every event up to and including `end`, then sets now() to `end`.
    void run_until(sim_time end);
    // The same, for a caller that has changed no node and no link since the last run: carries
    // on from the calendar as that run left it, where run_until first asks every node and link
    // again (a cost that grows with the fabric, not with its traffic).
    void continue_until(sim_time end);

    // Processes events until none is pending (returns true; now() is the last event's time)
    // or the next one would be after `limit` (returns false; now() is `limit`).
    bool run_until_idle(sim_time limit);

    std::uint64_t instants_processed() const { return _instants; }
    std::uint64_t frames_delivered() const { return _frames_delivered; }

private:
    // What the instant being processed is doing.
    enum class phase : std::uint8_t { between_instants, gathering, delivering, polling };
    static constexpr std::uint32_t nobody = ~0u;

    // Asks every node and link again: what may have changed between calls.
    void resync();
    sim_time earliest_event() const;
    bool process_next_instant(sim_time limit);
    // One window or one instant, whichever running ahead allows.
    bool process_next(sim_time limit);
    // Serves every group's instants in [start, end), group by group.
    void run_window(sim_time start, sim_time end);
    // Delivers and polls what is queued at instant t, in rounds, then puts what is left back in
    // the calendar.
    void serve_instant(sim_time t);
    void schedule_entity(std::uint32_t entity);
    // Puts `entity` in the calendar at `time`, or moves it there.
    void set_event(std::uint32_t entity, sim_time time);
    void clear_event(std::uint32_t entity);
    // Nodes joined by coupling, and the shortest link delay.
    void find_groups();
    bool deliver_due(sim_time t);
    bool poll_due(sim_time t);

    void frame_queued(link_id id, sim_time arrival) override;
    // Puts node i (link k) among what is served at this instant: in the step running now if
    // its index is still ahead, in the next round otherwise.
    void schedule_node(node_id i);
    void schedule_link(link_id k);
    // Asks node i's deadline (link k's next arrival) again: due now, or into the calendar.
    void requery_node(node_id i);
    void requery_link(link_id k);
    // Something node i did can have changed its coupled nodes' deadlines.
    void touch_coupled(node_id i);

    std::uint32_t link_entity(link_id k) const { return static_cast<std::uint32_t>(_wiring.node_count()) + k; }

    wiring& _wiring;
    sim_time _now;
    sim_time _done_through;   // the last instant processed
    event_calendar _calendar; // nodes 0 .. n-1, then links n .. n+l-1

    phase _phase = phase::between_instants;
    sim_time _instant = 0;          // the instant being processed
    std::uint32_t _cursor = nobody; // the index the running step has reached
    link_id _delivering = nobody;   // the link whose frames are being handed over

    // Per node: got a frame at this instant (poll it), is among what is served at this
    // instant, must have its deadline asked again before it is looked at.
    struct node_flags {
        std::uint8_t received = 0;
        std::uint8_t queued = 0;
        std::uint8_t stale = 0;
    };
    std::vector<node_flags> _node_flags;
    std::vector<std::uint8_t> _link_queued;
    // Served by the step running now (min-heaps of indices), and by the next round.
    std::vector<node_id> _nodes_now, _nodes_next;
    std::vector<link_id> _links_now, _links_next;

    // Running ahead: each entity's group (the lowest node id coupled to it, a link's that of
    // the node it delivers to; 0 for all when not running ahead), which is also its group in
    // the calendar; the observers; and the window being served, with the groups due in it in
    // the order they are served (by group), each one's instants in time order.
    bool _run_ahead = false;
    sim_time _lookahead = 0;
    std::vector<std::uint32_t> _group;
    std::vector<node_id> _observers;
    std::vector<std::uint32_t> _window_groups;
    bool _in_window = false;
    sim_time _window_end = 0;

    std::uint64_t _instants = 0;
    std::uint64_t _frames_delivered = 0;
};

} // namespace rocefab
