// One engine, two clocks: the same two-node exchange runs under the virtual-time driver and
// the realtime driver, and must end with the same counters and the same frames. Only the
// virtual-time run is held to exact times.
#include "dataplane/realtime_driver.hpp"
#include "dataplane/virtual_time_driver.hpp"
#include "tests/dataplane/runtime/test_nodes.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

namespace rocefab::testing {
namespace {

constexpr ping_plan plan{
    .count = 64, .burst = 8, .first_send = microseconds(10), .interval = microseconds(20), .frame_length = 1476};
// 1476 + 24 wire bytes at 10 Gb/s: 1200 ns a frame.
const link_model cable{.speed_bps = 10'000'000'000ull, .propagation_delay = nanoseconds(1000), .mtu = 1500};

// A pinger and an echo joined by one cable, and what is left of them after a run.
struct exchange {
    ping_node pinger{"pinger", 1, 2, plan};
    echo_node echo{"echo", 1};
    wiring w;
    exchange() {
        const node_id p = w.add_node(pinger);
        const node_id e = w.add_node(echo);
        w.connect(p, 0, e, 0, cable); // link 0 goes there, link 1 comes back
        w.attach_all(test_pool());
    }

    struct outcome {
        std::uint32_t sent, received, bad, allocation_failures;
        std::uint64_t digest, echoed;
        link_counters there, back;
        std::vector<std::uint32_t> order;
    };
    outcome result() const {
        outcome o{pinger.sent(),
                  pinger.received(),
                  pinger.bad(),
                  pinger.allocation_failures(),
                  pinger.digest(),
                  echo.echoed(),
                  w.link_at(0).counters(),
                  w.link_at(1).counters(),
                  {}};
        for (const auto& r : pinger.trace()) o.order.push_back(r.seq);
        return o;
    }
};

void expect_same(const exchange::outcome& a, const exchange::outcome& b) {
    EXPECT_EQ(a.sent, b.sent);
    EXPECT_EQ(a.received, b.received);
    EXPECT_EQ(a.bad, b.bad);
    EXPECT_EQ(a.allocation_failures, b.allocation_failures);
    EXPECT_EQ(a.digest, b.digest) << "different frames came back";
    EXPECT_EQ(a.echoed, b.echoed);
    for (auto [x, y] : {std::pair{a.there, b.there}, std::pair{a.back, b.back}}) {
        EXPECT_EQ(x.tx_frames, y.tx_frames);
        EXPECT_EQ(x.tx_bytes, y.tx_bytes);
        EXPECT_EQ(x.drops_link_down, y.drops_link_down);
        EXPECT_EQ(x.drops_mtu, y.drops_mtu);
        EXPECT_EQ(x.drops_queue_full, y.drops_queue_full);
    }
    EXPECT_EQ(a.order, b.order);
}

exchange::outcome run_in_virtual_time(sim_time& completion) {
    exchange x;
    virtual_time_driver driver(x.w);
    EXPECT_TRUE(driver.run_until_idle(seconds(1)));
    EXPECT_TRUE(x.pinger.done());
    completion = x.pinger.last_receive();
    return x.result();
}

TEST(two_drivers_test, virtual_time_exchange_completes_at_the_analytic_time) {
    ASSERT_NE(test_pool(), nullptr);
    sim_time completion = 0;
    const auto o = run_in_virtual_time(completion);
    EXPECT_EQ(o.received, plan.count);
    EXPECT_EQ(o.bad, 0u);
    EXPECT_EQ(o.there.tx_frames, plan.count);
    EXPECT_EQ(o.there.tx_bytes, std::uint64_t{plan.count} * plan.frame_length);
    // The last burst leaves at first_send + 7 intervals. Its 8 frames leave back to back
    // (S = 1200 ns each); each is echoed as it arrives, so the echoes are spaced by S too and
    // the last one is back (burst + 1) * S + 2 * delay after the burst started.
    constexpr sim_time serialisation = 1200;
    const sim_time last_burst = plan.first_send + (plan.count / plan.burst - 1) * plan.interval;
    EXPECT_EQ(completion, last_burst + (plan.burst + 1) * serialisation + 2 * cable.propagation_delay);
    EXPECT_EQ(completion, 162'800);
}

TEST(two_drivers_test, same_exchange_gives_the_same_counters_and_frames_under_both_drivers) {
    ASSERT_NE(test_pool(), nullptr);
    const unsigned available_before = rte_mempool_avail_count(test_pool());
    sim_time completion = 0;
    const auto virtual_outcome = run_in_virtual_time(completion);

    exchange::outcome realtime_outcome;
    {
        exchange x;
        realtime_driver driver(x.w);
        std::atomic<bool> stop{false};
        std::thread data_plane([&] { driver.run(stop); });
        // The pinger belongs to the data plane thread, so it is asked through the mailbox.
        // Bounded: a generous deadline, and no assertion on how fast it went.
        const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(30);
        bool done = false;
        while (!done && std::chrono::steady_clock::now() < give_up) {
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
            done = driver.mail().call([&] { return x.pinger.done(); });
        }
        stop = true;
        driver.mail().wake();
        data_plane.join();
        EXPECT_TRUE(done) << "realtime exchange did not finish within 30 s";
        realtime_outcome = x.result();
    }
    expect_same(virtual_outcome, realtime_outcome);
    EXPECT_EQ(rte_mempool_avail_count(test_pool()), available_before) << "mbuf leak";
}

} // namespace
} // namespace rocefab::testing
