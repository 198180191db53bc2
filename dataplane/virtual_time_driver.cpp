#include "dataplane/virtual_time_driver.hpp"

#include <algorithm>
#include <array>

namespace rocefab {

virtual_time_driver::virtual_time_driver(wiring& w, sim_time start)
    : _wiring(w), _now(start), _done_through(start - 1) {}

sim_time virtual_time_driver::next_event_time() {
    sim_time earliest = never;
    for (std::size_t i = 0; i < _wiring.link_count(); ++i)
        earliest = std::min(earliest, _wiring.link_at(static_cast<link_id>(i)).next_arrival());
    for (std::size_t i = 0; i < _wiring.node_count(); ++i)
        earliest = std::min(earliest, _wiring.node_at(static_cast<node_id>(i)).next_deadline());
    if (earliest == never) return never;
    // Arrivals are never in the past (everything due was delivered); only a stale deadline
    // is, or one set from outside between runs. Time never goes back, and an instant already
    // processed is not processed again.
    earliest = std::max(earliest, _now);
    if (earliest <= _done_through) earliest = _done_through + 1;
    return earliest;
}

bool virtual_time_driver::deliver_due(sim_time t) {
    bool delivered_any = false;
    for (std::size_t i = 0; i < _wiring.link_count(); ++i) {
        link& l = _wiring.link_at(static_cast<link_id>(i));
        const link_endpoint to = l.to();
        node& receiver = _wiring.node_at(to.node);
        // What is due is handed over in bursts, as the realtime driver does: the switch takes
        // them a vector at a time, with the same result as one frame at a time.
        std::array<rte_mbuf*, delivery_burst> burst;
        for (;;) {
            const unsigned n = l.take_ready(t, burst);
            if (n == 0) break;
            receiver.receive_burst(to.port, {burst.data(), n}, t);
            _received[to.node] = 1;
            _frames_delivered += n;
            delivered_any = true;
        }
    }
    return delivered_any;
}

bool virtual_time_driver::poll_due(sim_time t) {
    bool worked = false;
    for (std::size_t i = 0; i < _wiring.node_count(); ++i) {
        node& n = _wiring.node_at(static_cast<node_id>(i));
        if (!_received[i] && n.next_deadline() > t) continue;
        _received[i] = 0;
        worked |= n.poll(t);
    }
    return worked;
}

bool virtual_time_driver::step(sim_time limit) {
    const sim_time t = next_event_time();
    if (t == never || t > limit) return false;
    _now = t;
    _done_through = t;
    ++_instants;
    _received.assign(_wiring.node_count(), 0);
    for (unsigned round = 0; round < max_rounds_per_instant; ++round) {
        const bool delivered = deliver_due(t);
        const bool polled = poll_due(t);
        if (!delivered && !polled) break;
    }
    return true;
}

void virtual_time_driver::run_until(sim_time end) {
    while (step(end)) {}
    if (end > _now) _now = end;
}

bool virtual_time_driver::run_until_idle(sim_time limit) {
    while (step(limit)) {}
    if (next_event_time() == never) return true;
    if (limit > _now) _now = limit;
    return false;
}

} // namespace rocefab
