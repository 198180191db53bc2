#include "dataplane/virtual_time_driver.hpp"
#include "tests/dataplane/runtime/test_nodes.hpp"

#include <gtest/gtest.h>

namespace rocefab::testing {
namespace {

constexpr std::uint64_t ten_gbps = 10'000'000'000ull;

class virtual_time_driver_test : public ::testing::Test {
protected:
    void SetUp() override {
        ASSERT_NE(test_pool(), nullptr);
        _available_before = rte_mempool_avail_count(test_pool());
    }
    void TearDown() override { EXPECT_EQ(rte_mempool_avail_count(test_pool()), _available_before) << "mbuf leak"; }

    unsigned _available_before = 0;
};

TEST_F(virtual_time_driver_test, time_jumps_to_deadlines_including_one_at_the_start) {
    probe_node a("a", 1, {0, microseconds(5), seconds(2)});
    wiring w;
    w.add_node(a);
    w.attach_all(test_pool());
    virtual_time_driver driver(w);
    driver.run_until(seconds(1));
    EXPECT_EQ(a.poll_times(), (std::vector<sim_time>{0, microseconds(5)}));
    EXPECT_EQ(driver.now(), seconds(1));
    EXPECT_EQ(driver.instants_processed(), 2u);
}

TEST_F(virtual_time_driver_test, frame_is_received_at_its_arrival_time_and_the_receiver_polled_then) {
    probe_node a("a", 1, {microseconds(1)}), b("b", 1);
    wiring w;
    const node_id ia = w.add_node(a), ib = w.add_node(b);
    w.connect(ia, 0, ib, 0, {.speed_bps = ten_gbps, .propagation_delay = nanoseconds(800), .mtu = 1500});
    w.attach_all(test_pool());
    a.on_timer = [](probe_node& self, sim_time now) { self.send(0, make_pattern_frame(1476, 42), now); };
    virtual_time_driver driver(w);
    EXPECT_TRUE(driver.run_until_idle(seconds(1)));
    const sim_time arrival = microseconds(1) + 1200 + 800;
    EXPECT_EQ(driver.now(), arrival);
    ASSERT_EQ(b.receptions().size(), 1u);
    EXPECT_EQ(b.receptions()[0], (probe_node::event{probe_node::event::received, arrival, 0, 42}));
    EXPECT_EQ(b.poll_times(), (std::vector<sim_time>{arrival}));
    EXPECT_EQ(driver.frames_delivered(), 1u);
}

TEST_F(virtual_time_driver_test, simultaneous_arrivals_are_delivered_in_link_order) {
    probe_node a1("a1", 1, {0}), a2("a2", 1, {0}), b("b", 2);
    wiring w;
    const node_id i1 = w.add_node(a1), i2 = w.add_node(a2), ib = w.add_node(b);
    const link_model m{.speed_bps = ten_gbps, .propagation_delay = 0, .mtu = 1500};
    w.connect(i2, 0, ib, 1, m); // connected first: its link has the lower index
    w.connect(i1, 0, ib, 0, m);
    w.attach_all(test_pool());
    a1.on_timer = [](probe_node& self, sim_time now) { self.send(0, make_pattern_frame(1476, 1), now); };
    a2.on_timer = [](probe_node& self, sim_time now) { self.send(0, make_pattern_frame(1476, 2), now); };
    virtual_time_driver driver(w);
    driver.run_until_idle(seconds(1));
    const auto got = b.receptions();
    ASSERT_EQ(got.size(), 2u);
    EXPECT_EQ(got[0].seq, 2u);
    EXPECT_EQ(got[1].seq, 1u);
    EXPECT_EQ(got[0].time, got[1].time);
}

TEST_F(virtual_time_driver_test, zero_time_link_delivers_within_the_same_instant) {
    probe_node a("a", 1, {microseconds(3)}), b("b", 1);
    wiring w;
    const node_id ia = w.add_node(a), ib = w.add_node(b);
    // speed 0 stands for an infinitely fast line.
    w.connect(ia, 0, ib, 0, {.speed_bps = 0, .propagation_delay = 0, .mtu = 1500});
    w.attach_all(test_pool());
    a.on_timer = [](probe_node& self, sim_time now) { self.send(0, make_pattern_frame(64, 5), now); };
    virtual_time_driver driver(w);
    driver.run_until_idle(seconds(1));
    ASSERT_EQ(b.receptions().size(), 1u);
    EXPECT_EQ(b.receptions()[0].time, microseconds(3));
    EXPECT_EQ(driver.instants_processed(), 1u);
}

TEST_F(virtual_time_driver_test, run_until_idle_stops_at_the_limit_when_work_remains) {
    probe_node a("a", 1, {microseconds(1), milliseconds(10)});
    wiring w;
    w.add_node(a);
    w.attach_all(test_pool());
    virtual_time_driver driver(w);
    EXPECT_FALSE(driver.run_until_idle(milliseconds(1)));
    EXPECT_EQ(driver.now(), milliseconds(1));
    EXPECT_TRUE(driver.run_until_idle(seconds(1)));
    EXPECT_EQ(driver.now(), milliseconds(10));
    EXPECT_EQ(a.poll_times(), (std::vector<sim_time>{microseconds(1), milliseconds(10)}));
}

// Two pingers into one two-port echo, over links of different speeds: frames cross, queue
// and tie. The whole trace (who received what, when) must be identical run after run.
std::vector<probe_node::event> traced_run() {
    std::vector<probe_node::event> trace;
    ping_node p1("p1", 1, 3,
                 {.count = 40, .burst = 5, .first_send = 0, .interval = microseconds(3), .frame_length = 1000});
    ping_node p2("p2", 2, 3,
                 {.count = 30, .burst = 3, .first_send = 0, .interval = microseconds(2), .frame_length = 600});
    echo_node echo("echo", 2);
    wiring w;
    const node_id i1 = w.add_node(p1), i2 = w.add_node(p2), ie = w.add_node(echo);
    w.connect(i1, 0, ie, 0, {.speed_bps = 25'000'000'000ull, .propagation_delay = 300, .mtu = 1500});
    w.connect(i2, 0, ie, 1, {.speed_bps = 10'000'000'000ull, .propagation_delay = 700, .mtu = 1500});
    w.attach_all(test_pool());
    virtual_time_driver driver(w);
    EXPECT_TRUE(driver.run_until_idle(seconds(1)));
    EXPECT_TRUE(p1.done());
    EXPECT_TRUE(p2.done());
    for (const auto& r : p1.trace()) trace.push_back({probe_node::event::received, r.time, 1, r.seq});
    for (const auto& r : p2.trace()) trace.push_back({probe_node::event::received, r.time, 2, r.seq});
    trace.push_back(
        {probe_node::event::polled, driver.now(), 0, static_cast<std::uint32_t>(driver.instants_processed())});
    return trace;
}

TEST_F(virtual_time_driver_test, same_wiring_gives_the_same_trace_bit_for_bit) {
    const auto first = traced_run();
    const auto second = traced_run();
    ASSERT_EQ(first.size(), 40u + 30u + 1u);
    EXPECT_EQ(first, second);
}

} // namespace
} // namespace rocefab::testing
