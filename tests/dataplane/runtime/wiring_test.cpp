#include "dataplane/wiring.hpp"
#include "tests/dataplane/runtime/test_nodes.hpp"

#include <gtest/gtest.h>

#include <array>
#include <stdexcept>

namespace rocefab::testing {
namespace {

const link_model model{.speed_bps = 10'000'000'000ull, .propagation_delay = nanoseconds(100), .mtu = 1500};

class wiring_test : public ::testing::Test {
protected:
    void SetUp() override {
        ASSERT_NE(test_pool(), nullptr);
        _available_before = rte_mempool_avail_count(test_pool());
    }
    void TearDown() override { EXPECT_EQ(rte_mempool_avail_count(test_pool()), _available_before) << "mbuf leak"; }

    // a:1 cabled to b:0 in `w`, every node attached to the test pool: the link leaving a:1.
    static link& cable_a1_to_b0(wiring& w, probe_node& a, probe_node& b) {
        const node_id ia = w.add_node(a), ib = w.add_node(b);
        w.connect(ia, 1, ib, 0, model);
        w.attach_all(test_pool());
        return *w.outgoing(ia, 1);
    }

    unsigned _available_before = 0;
};

TEST_F(wiring_test, connect_creates_one_link_each_way_between_the_ports) {
    probe_node a("a", 2), b("b", 4);
    wiring w;
    const node_id ia = w.add_node(a), ib = w.add_node(b);
    EXPECT_EQ(ia, 0u);
    EXPECT_EQ(ib, 1u);
    const auto [ab, ba] = w.connect(ia, 1, ib, 3, model);
    ASSERT_EQ(w.link_count(), 2u);
    EXPECT_EQ(w.link_at(ab).from().node, ia);
    EXPECT_EQ(w.link_at(ab).from().port, 1);
    EXPECT_EQ(w.link_at(ab).to().node, ib);
    EXPECT_EQ(w.link_at(ab).to().port, 3);
    EXPECT_EQ(w.link_at(ba).from().node, ib);
    EXPECT_EQ(w.link_at(ba).to().port, 1);
    EXPECT_EQ(w.link_at(ab).name(), "a:1->b:3");
    EXPECT_EQ(w.outgoing(ia, 1), &w.link_at(ab));
    EXPECT_EQ(w.incoming(ia, 1), &w.link_at(ba));
    EXPECT_EQ(w.outgoing(ia, 0), nullptr);
    EXPECT_EQ(&w.node_at(ib), &b);
}

TEST_F(wiring_test, a_node_transmits_on_the_link_of_its_port) {
    probe_node a("a", 2), b("b", 1);
    wiring w;
    link& out = cable_a1_to_b0(w, a, b);
    EXPECT_EQ(a.attached_pool(), test_pool());
    a.send(1, make_pattern_frame(1476), 0);
    EXPECT_EQ(out.counters().tx_frames, 1u);
    EXPECT_EQ(a.port_busy_until(1), 1200);
    EXPECT_EQ(a.port_busy_until(0), 0);
    out.deliver_ready(never, [](rte_mbuf* m) { rte_pktmbuf_free(m); });
}

TEST_F(wiring_test, a_run_of_frames_goes_on_the_link_while_it_is_free_and_the_rest_stay_with_the_sender) {
    // 1476 + 24 bytes of overhead take 1 200 ns at 10G: from an idle link at t=0, a link that
    // takes frames while it is busy until no later than 2 500 ns takes three (busy 1 200, 2 400,
    // then 3 600), and leaves the other two with the sender.
    probe_node a("a", 2), b("b", 1);
    wiring w;
    link& out = cable_a1_to_b0(w, a, b);
    std::array<rte_mbuf*, 5> frames{};
    for (rte_mbuf*& f : frames) f = make_pattern_frame(1476);
    sim_time busy = a.port_busy_until(1);
    EXPECT_EQ(a.send_while_free(1, frames, 0, 2'500, busy), 3u);
    EXPECT_EQ(busy, 3'600);
    EXPECT_EQ(a.port_busy_until(1), 3'600);
    EXPECT_EQ(out.counters().tx_frames, 3u);
    EXPECT_EQ(a.send_while_free(1, {&frames[3], 2}, 0, 2'500, busy), 0u); // still busy
    // On a port with no cable every frame is taken, freed and counted, as transmit() does.
    busy = a.port_busy_until(0);
    EXPECT_EQ(a.send_while_free(0, {&frames[3], 2}, 0, 0, busy), 2u);
    EXPECT_EQ(w.drops_unconnected(0), 2u); // a's
    out.deliver_ready(never, [](rte_mbuf* m) { rte_pktmbuf_free(m); });
}

TEST_F(wiring_test, transmit_on_an_unconnected_port_frees_the_frame_and_counts_it) {
    probe_node a("a", 2);
    wiring w;
    const node_id ia = w.add_node(a);
    w.attach_all(test_pool());
    a.send(0, make_pattern_frame(100), 0);
    a.send(1, make_pattern_frame(100), 0);
    EXPECT_EQ(w.drops_unconnected(ia), 2u);
}

TEST_F(wiring_test, connect_rejects_unknown_nodes_missing_ports_and_ports_in_use) {
    probe_node a("a", 2), b("b", 1);
    wiring w;
    const node_id ia = w.add_node(a), ib = w.add_node(b);
    EXPECT_THROW(w.connect(ia, 0, 7, 0, model), std::invalid_argument);
    EXPECT_THROW(w.connect(ia, 2, ib, 0, model), std::invalid_argument);
    EXPECT_THROW(w.connect(ia, 0, ia, 0, model), std::invalid_argument);
    w.connect(ia, 0, ib, 0, model);
    EXPECT_THROW(w.connect(ia, 1, ib, 0, model), std::invalid_argument);
    EXPECT_EQ(w.link_count(), 2u);
}

} // namespace
} // namespace rocefab::testing
