#include "dataplane/realtime_driver.hpp"

#include <algorithm>
#include <array>
#include <chrono>

#include <sys/prctl.h>

namespace rocefab {

realtime_driver::realtime_driver(wiring& w, const backoff_policy& policy) : _wiring(w), _policy(policy) {}

bool realtime_driver::run_once() {
    const sim_time clock = _clock.now();
    // On time, the clock; late, the next step (iteration_time), which needs the next event: a scan.
    const sim_time now =
        clock - _previous > _catch_up.max_step ? iteration_time(clock, _previous, next_event(), _catch_up) : clock;
    _previous = now;
    // Control-path closures run at the clock (they read driver().now()): not while catching up,
    // so that no node sees its time go back by more than it did before there were steps.
    bool worked = now == clock && _mailbox.run_pending();
    for (std::size_t i = 0; i < _wiring.link_count(); ++i) {
        link& l = _wiring.link_at(static_cast<link_id>(i));
        const link_endpoint to = l.to();
        // The frames due are handed over as one burst, which the switch takes a vector at a time.
        std::array<rte_mbuf*, delivery_burst> burst;
        const unsigned n = l.take_ready(now, burst);
        if (n == 0) continue;
        _wiring.node_at(to.node).receive_burst(to.port, {burst.data(), n}, now);
        worked = true;
    }
    for (std::size_t i = 0; i < _wiring.node_count(); ++i) worked |= _wiring.node_at(static_cast<node_id>(i)).poll(now);
    _iterations.store(_iterations.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    if (now < clock) {
        _catch_up_steps.store(_catch_up_steps.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
        return true; // still behind: no back-off until caught up
    }
    return worked;
}

sim_time realtime_driver::next_event() {
    sim_time earliest = never;
    for (std::size_t i = 0; i < _wiring.link_count(); ++i)
        earliest = std::min(earliest, _wiring.link_at(static_cast<link_id>(i)).next_arrival());
    for (std::size_t i = 0; i < _wiring.node_count(); ++i)
        earliest = std::min(earliest, _wiring.node_at(static_cast<node_id>(i)).next_deadline());
    return earliest;
}

void realtime_driver::run(const std::atomic<bool>& stop) {
    // Linux rounds a sleeping thread's wake-up up by its timer slack (50 µs by default),
    // which would turn the 1 µs first sleep into 50. Lowered for this thread while it runs.
    const int saved_slack = prctl(PR_GET_TIMERSLACK, 0, 0, 0, 0);
    prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0);
    _clock.restart();
    _previous = 0;
    idle_backoff backoff(_policy);
    while (!stop.load(std::memory_order_acquire)) {
        if (run_once()) {
            backoff.on_work();
            continue;
        }
        const sim_time sleep = backoff.on_idle(_clock.now(), next_event());
        if (sleep == 0) {
            rte_pause();
            continue;
        }
        // Announce the sleep, then look once more: work published before the announcement
        // (a WQE a program posted while the doorbell looked awake) is seen here.
        _mailbox.prepare_to_sleep();
        if (next_event() <= _clock.now() + _policy.imminent) {
            _mailbox.cancel_sleep();
            continue;
        }
        _sleeps.store(_sleeps.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
        _mailbox.sleep(std::chrono::nanoseconds(sleep));
    }
    if (saved_slack > 0) prctl(PR_SET_TIMERSLACK, static_cast<unsigned long>(saved_slack), 0, 0, 0);
}

} // namespace rocefab
