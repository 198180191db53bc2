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

class realtime_driver {
public:
    // Per-iteration budget per link, so one busy link cannot starve the others.
    static constexpr unsigned delivery_burst = 64;

    // Needs the EAL started (TSC frequency).
    explicit realtime_driver(wiring& w, const backoff_policy& policy = {});

    // Runs until `stop` is set; then returns. Call mail().wake() after setting `stop` to cut
    // a sleep short (otherwise it returns within max_sleep).
    void run(const std::atomic<bool>& stop);

    // One iteration at the current time; returns whether it did work.
    bool run_once();

    // Time since run() started (or construction).
    sim_time now() const { return _clock.now(); }

    mailbox& mail() { return _mailbox; }

    // Readable from any thread.
    std::uint64_t iterations() const { return _iterations.load(std::memory_order_relaxed); }
    std::uint64_t sleeps() const { return _sleeps.load(std::memory_order_relaxed); }

private:
    sim_time next_event();

    wiring& _wiring;
    backoff_policy _policy;
    tsc_clock _clock;
    mailbox _mailbox;
    std::atomic<std::uint64_t> _iterations{0};
    std::atomic<std::uint64_t> _sleeps{0};
};

} // namespace rocefab
