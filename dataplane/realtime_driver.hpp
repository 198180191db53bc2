// Runs a wiring in real time: a run-to-completion poll loop on the calling thread (the daemon
// gives it an lcore or a std::thread). Time is TSC nanoseconds since run() started. Every
// iteration: run posted closures, deliver each link's frames whose arrival <= now, poll every
// node. When the fabric is idle the loop backs off (spin, then progressively longer sleeps)
// so an idle fabric does not eat a core.
#pragma once

#include "dataplane/clock.hpp"
#include "dataplane/mailbox.hpp"
#include "dataplane/time.hpp"
#include "dataplane/wiring.hpp"

#include <algorithm>
#include <atomic>
#include <cstdint>

namespace rocefab {

struct backoff_policy {
    // Idle iterations spent spinning before the first sleep: a frame in flight or a host's
    // doorbell is usually microseconds away, and a sleep costs more than that.
    unsigned spin_iterations = 512;
    sim_time first_sleep = microseconds(1);
    // The cap: the worst extra latency an idle fabric adds to the first frame of a burst
    // (plus the kernel's timer slack, which run() lowers to 1 µs for its thread). 200 µs keeps
    // an idle fabric's CPU use around a percent while staying far below any RDMA timeout.
    sim_time max_sleep = microseconds(200);
    // An arrival or deadline closer than this is waited for by spinning, not sleeping.
    sim_time imminent = microseconds(2);
};

// The back-off decision, pure so it can be tested without a clock.
class idle_backoff {
public:
    explicit idle_backoff(const backoff_policy& policy = {}) : _policy(policy), _next_sleep(policy.first_sleep) {}

    void on_work() {
        _idle_iterations = 0;
        _next_sleep = _policy.first_sleep;
    }

    // After an idle iteration at `now`, with the next known event at `next_event` (`never`
    // if none): how long to sleep; 0 means spin on.
    sim_time on_idle(sim_time now, sim_time next_event) {
        if (_idle_iterations < _policy.spin_iterations) {
            ++_idle_iterations;
            return 0;
        }
        const sim_time until_event = next_event == never ? never : next_event - now;
        if (until_event <= _policy.imminent) return 0;
        const sim_time sleep = until_event < _next_sleep ? until_event : _next_sleep;
        _next_sleep = _next_sleep * 2 < _policy.max_sleep ? _next_sleep * 2 : _policy.max_sleep;
        return sleep;
    }

private:
    backoff_policy _policy;
    unsigned _idle_iterations = 0;
    sim_time _next_sleep;
};

// When an iteration comes later than the one before by more than a step (the thread did not
// run: on a machine with fewer cores than busy programs the scheduler takes it off its CPU for
// milliseconds), the time it missed is gone through in steps, as a switch and NICs that never
// stop would have lived it. Handing everything over at once at the late time would let effects
// overtake their causes: a NIC whose PFC pause ran out during the gap sends again before the
// switch's refresh of the pause (due at half the pause, inside the gap) reaches it, and the
// switch's headroom, sized for the cable, overflows.
struct catch_up_policy {
    // At most this much time an iteration; below half the shortest PFC pause a port can ask
    // (0xffff quanta at 400G: 84 µs) with room to spare.
    sim_time max_step = microseconds(20);
    // A gap longer than this (a stopped process, a suspended machine) is gone through only for
    // its last max_behind; what came before is handed over late, as it would be without steps.
    sim_time max_behind = milliseconds(100);
};

// The time of the next iteration, pure so it can be tested without a clock: `clock` is now,
// `previous` the time of the iteration before, `next_event` the earliest arrival or deadline
// (`never` if none). Time with nothing due is skipped in one go.
inline sim_time iteration_time(sim_time clock, sim_time previous, sim_time next_event,
                               const catch_up_policy& policy = {}) {
    if (clock - previous <= policy.max_step) return clock;
    const sim_time from = std::max(previous, clock - policy.max_behind);
    return std::min(clock, std::max(from + policy.max_step, next_event));
}

class realtime_driver {
public:
    // Per-iteration budget per link, so one busy link cannot starve the others.
    static constexpr unsigned delivery_burst = 64;

    // Needs the EAL started (TSC frequency).
    explicit realtime_driver(wiring& w, const backoff_policy& policy = {});

    // Runs until `stop` is set; then returns. Call mail().wake() after setting `stop` to cut
    // a sleep short (otherwise it returns within max_sleep).
    void run(const std::atomic<bool>& stop);

    // One iteration at the current time, or when the loop has fallen behind, at the next step
    // of the time it missed (iteration_time); returns whether it did work or is still behind.
    bool run_once();

    // Time since run() started (or construction).
    sim_time now() const { return _clock.now(); }

    mailbox& mail() { return _mailbox; }

    // Readable from any thread.
    std::uint64_t iterations() const { return _iterations.load(std::memory_order_relaxed); }
    std::uint64_t sleeps() const { return _sleeps.load(std::memory_order_relaxed); }
    // Iterations that ran behind the clock, going through time the loop had missed.
    std::uint64_t catch_up_steps() const { return _catch_up_steps.load(std::memory_order_relaxed); }

private:
    sim_time next_event();

    wiring& _wiring;
    backoff_policy _policy;
    tsc_clock _clock;
    mailbox _mailbox;
    std::atomic<std::uint64_t> _iterations{0};
    std::atomic<std::uint64_t> _sleeps{0};
    std::atomic<std::uint64_t> _catch_up_steps{0};
    catch_up_policy _catch_up;
    sim_time _previous = 0; // the time of the last iteration
};

} // namespace rocefab
