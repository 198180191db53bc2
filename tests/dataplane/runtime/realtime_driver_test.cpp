#include "dataplane/clock.hpp"
#include "dataplane/mailbox.hpp"
#include "dataplane/realtime_driver.hpp"
#include "tests/dataplane/runtime/test_nodes.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <stdexcept>
#include <thread>

namespace rocefab::testing {
namespace {

// --- the clock ---

TEST(tsc_clock_test, cycles_convert_exactly_when_the_frequency_divides_evenly) {
    const auto m = tsc_clock::multiplier_for(2'000'000'000);
    EXPECT_EQ(tsc_clock::cycles_to_ns(2'000'000'000, m), seconds(1));
    EXPECT_EQ(tsc_clock::cycles_to_ns(3, m), 1);
}

TEST(tsc_clock_test, conversion_stays_within_a_nanosecond_over_an_hour) {
    const std::uint64_t hz = 2'893'437'000; // an odd, realistic TSC frequency
    const auto m = tsc_clock::multiplier_for(hz);
    const std::uint64_t hour = hz * 3600;
    EXPECT_NEAR(static_cast<double>(tsc_clock::cycles_to_ns(hour, m)), 3600e9, 1.0);
    EXPECT_NEAR(static_cast<double>(tsc_clock::cycles_to_ns(hz / 1000, m)), 1e6, 1.0);
}

TEST(tsc_clock_test, reading_never_goes_back) {
    ASSERT_NE(test_pool(), nullptr); // starts the EAL, which calibrates the TSC
    tsc_clock clock;
    sim_time previous = clock.now();
    EXPECT_GE(previous, 0);
    for (int i = 0; i < 10'000; ++i) {
        const sim_time t = clock.now();
        ASSERT_GE(t, previous);
        previous = t;
    }
}

// --- the idle back-off ---

TEST(idle_backoff_test, spins_first_then_sleeps_doubling_up_to_the_cap) {
    idle_backoff b({.spin_iterations = 3,
                    .first_sleep = microseconds(1),
                    .max_sleep = microseconds(200),
                    .imminent = microseconds(2)});
    for (int i = 0; i < 3; ++i) EXPECT_EQ(b.on_idle(0, never), 0);
    std::vector<sim_time> sleeps;
    for (int i = 0; i < 10; ++i) sleeps.push_back(b.on_idle(0, never));
    EXPECT_EQ(sleeps,
              (std::vector<sim_time>{1'000, 2'000, 4'000, 8'000, 16'000, 32'000, 64'000, 128'000, 200'000, 200'000}));
}

TEST(idle_backoff_test, work_resets_to_spinning_and_the_shortest_sleep) {
    idle_backoff b({.spin_iterations = 1, .first_sleep = microseconds(1), .max_sleep = microseconds(200)});
    b.on_idle(0, never);
    b.on_idle(0, never);
    b.on_idle(0, never);
    b.on_work();
    EXPECT_EQ(b.on_idle(0, never), 0);
    EXPECT_EQ(b.on_idle(0, never), microseconds(1));
}

TEST(idle_backoff_test, imminent_event_is_waited_for_by_spinning_and_sleep_ends_at_the_next_event) {
    idle_backoff b({.spin_iterations = 0,
                    .first_sleep = microseconds(100),
                    .max_sleep = microseconds(200),
                    .imminent = microseconds(2)});
    EXPECT_EQ(b.on_idle(1'000'000, 1'000'000 + microseconds(2)), 0);
    EXPECT_EQ(b.on_idle(1'000'000, 1'000'000 + microseconds(30)), microseconds(30));
}

// --- catching up after the thread did not run ---

TEST(catch_up_test, an_iteration_on_time_runs_at_the_clock) {
    EXPECT_EQ(iteration_time(1'000'000, 1'000'000 - microseconds(20), 0), 1'000'000);
    EXPECT_EQ(iteration_time(1'000'000, 1'000'000, never), 1'000'000);
}

TEST(catch_up_test, a_late_iteration_steps_through_what_was_due_and_skips_what_was_not) {
    const sim_time previous = milliseconds(1);
    const sim_time clock = milliseconds(6);                                            // 5 ms off the CPU
    EXPECT_EQ(iteration_time(clock, previous, previous), previous + microseconds(20)); // work was due
    EXPECT_EQ(iteration_time(clock, previous, previous + microseconds(5)), previous + microseconds(20));
    EXPECT_EQ(iteration_time(clock, previous, milliseconds(3)), milliseconds(3)); // nothing due before 3 ms
    EXPECT_EQ(iteration_time(clock, previous, never), clock);                     // nothing due at all
    EXPECT_EQ(iteration_time(clock, previous, milliseconds(7)), clock);
}

TEST(catch_up_test, only_the_last_max_behind_of_a_long_gap_is_stepped_through) {
    const catch_up_policy policy{.max_step = microseconds(20), .max_behind = milliseconds(100)};
    EXPECT_EQ(iteration_time(seconds(10), 0, 0, policy), seconds(10) - milliseconds(100) + microseconds(20));
    EXPECT_EQ(iteration_time(seconds(10), 0, seconds(1), policy), seconds(10) - milliseconds(100) + microseconds(20));
}

// The loop fell 5 ms behind with a frame due 1 ms into the gap: the frame is handed over and its
// receiver polled at about 1 ms, not at the end of the gap, and the loop says it is still busy
// until it has caught up.
TEST(realtime_driver_test, after_a_stall_frames_arrive_in_the_time_they_were_due) {
    ASSERT_NE(test_pool(), nullptr);
    probe_node a("a", 1), b("b", 1);
    wiring w;
    const node_id ia = w.add_node(a), ib = w.add_node(b);
    w.connect(ia, 0, ib, 0, {.speed_bps = 0, .propagation_delay = milliseconds(1), .mtu = 1500});
    w.attach_all(test_pool());
    realtime_driver driver(w);
    driver.run_once();
    const sim_time sent = driver.now();
    a.send(0, make_pattern_frame(100, 7), sent); // arrives at sent + 1 ms
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    while (b.receptions().empty()) ASSERT_TRUE(driver.run_once()); // stepping: busy until caught up
    const sim_time handed_over = b.poll_times().back();
    EXPECT_GE(handed_over, sent + milliseconds(1));
    EXPECT_LE(handed_over, sent + milliseconds(1) + microseconds(20));
    EXPECT_GT(driver.catch_up_steps(), 0u);
    while (driver.now() - b.poll_times().back() > microseconds(20)) driver.run_once(); // the rest at once
    EXPECT_GE(b.poll_times().back(), sent + milliseconds(5));
}

// --- the mailbox ---

TEST(mailbox_test, posted_closures_run_in_order_on_the_draining_thread) {
    mailbox box;
    std::vector<int> ran;
    EXPECT_FALSE(box.has_pending());
    EXPECT_FALSE(box.run_pending());
    box.post([&] { ran.push_back(1); });
    box.post([&] { ran.push_back(2); });
    EXPECT_TRUE(box.has_pending());
    EXPECT_TRUE(ran.empty());
    EXPECT_TRUE(box.run_pending());
    EXPECT_EQ(ran, (std::vector<int>{1, 2}));
    EXPECT_FALSE(box.has_pending());
}

TEST(mailbox_test, a_throwing_posted_closure_is_counted_and_the_rest_still_run) {
    mailbox box;
    bool second_ran = false;
    box.post([] { throw std::runtime_error("boom"); });
    box.post([&] { second_ran = true; });
    box.run_pending();
    EXPECT_TRUE(second_ran);
    EXPECT_EQ(box.failed_closures(), 1u);
}

// Drains `box` on a thread of its own until told to stop, as the data plane would.
class drain_thread {
public:
    explicit drain_thread(mailbox& box)
        : _box(box), _thread([this] {
              while (!_stop.load()) {
                  _box.run_pending();
                  _box.wait(std::chrono::milliseconds(50));
              }
          }) {}
    ~drain_thread() {
        _stop = true;
        _box.wake();
        _thread.join();
    }
    std::thread::id id() const { return _thread.get_id(); }

private:
    mailbox& _box;
    std::atomic<bool> _stop{false};
    std::thread _thread;
};

TEST(mailbox_test, call_runs_on_the_data_plane_thread_and_returns_the_result) {
    mailbox box;
    drain_thread dp(box);
    const auto [value, where] = box.call([] { return std::pair{41 + 1, std::this_thread::get_id()}; });
    EXPECT_EQ(value, 42);
    EXPECT_EQ(where, dp.id());
    int side = 0;
    box.call([&] { side = 7; });
    EXPECT_EQ(side, 7);
}

TEST(mailbox_test, a_call_made_on_the_data_plane_thread_runs_at_once_instead_of_waiting_for_itself) {
    mailbox box;
    drain_thread dp(box);
    // A closure whose work ends in a call (a destructor that ran on the data plane, say).
    const auto [value, where] = box.call([&box] {
        return box.call([] { return std::pair{7, std::this_thread::get_id()}; });
    });
    EXPECT_EQ(value, 7);
    EXPECT_EQ(where, dp.id());
}

TEST(mailbox_test, call_rethrows_the_closures_exception_to_the_caller) {
    mailbox box;
    drain_thread dp(box);
    EXPECT_THROW(box.call([]() -> int { throw std::invalid_argument("bad"); }), std::invalid_argument);
    EXPECT_EQ(box.failed_closures(), 0u);
}

TEST(mailbox_test, wake_before_wait_makes_the_wait_return_at_once) {
    mailbox box;
    box.wake();
    const auto start = std::chrono::steady_clock::now();
    box.wait(std::chrono::seconds(30));
    // Generous bound: only a missed wake-up would wait the full 30 s.
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
}

TEST(mailbox_test, posting_cuts_a_sleep_short) {
    mailbox box;
    std::thread poster([&] {
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
        box.post([] {});
    });
    const auto start = std::chrono::steady_clock::now();
    box.wait(std::chrono::seconds(30));
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
    poster.join();
    EXPECT_TRUE(box.run_pending());
}

// --- the driver loop ---

TEST(realtime_driver_test, run_once_delivers_arrived_frames_and_polls_every_node) {
    ASSERT_NE(test_pool(), nullptr);
    probe_node a("a", 1), b("b", 1);
    wiring w;
    const node_id ia = w.add_node(a), ib = w.add_node(b);
    w.connect(ia, 0, ib, 0, {.speed_bps = 0, .propagation_delay = 0, .mtu = 1500});
    w.attach_all(test_pool());
    realtime_driver driver(w);
    a.send(0, make_pattern_frame(100, 3), 0); // arrival 0: due at any later time
    EXPECT_TRUE(driver.run_once());
    ASSERT_EQ(b.receptions().size(), 1u);
    EXPECT_EQ(b.receptions()[0].seq, 3u);
    EXPECT_EQ(a.poll_times().size(), 1u);
    EXPECT_EQ(b.poll_times().size(), 1u);
    EXPECT_FALSE(driver.run_once());
}

TEST(realtime_driver_test, idle_loop_sleeps_and_returns_promptly_when_stopped) {
    ASSERT_NE(test_pool(), nullptr);
    probe_node a("a", 1);
    wiring w;
    w.add_node(a);
    w.attach_all(test_pool());
    realtime_driver driver(w);
    std::atomic<bool> stop{false};
    std::thread loop([&] { driver.run(stop); });
    // A posted closure runs on the loop's thread even while it backs off.
    const auto id = driver.mail().call([] { return std::this_thread::get_id(); });
    EXPECT_EQ(id, loop.get_id());
    // Wait (bounded) until the loop has gone to sleep at least once.
    for (int i = 0; i < 2000 && driver.sleeps() == 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    EXPECT_GT(driver.sleeps(), 0u);
    stop = true;
    driver.mail().wake();
    loop.join();
    EXPECT_GT(driver.iterations(), 0u);
}

} // namespace
} // namespace rocefab::testing
