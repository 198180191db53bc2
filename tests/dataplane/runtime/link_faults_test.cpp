// Fault injection on links: loss, corruption, duplication and reordering, decided by the link's
// seeded PRNG. First one link on its own (what each fault does to frames), then a wiring under
// the virtual-time driver (same seed, same trace; probability 0, no change at all).
#include "dataplane/link.hpp"
#include "dataplane/virtual_time_driver.hpp"
#include "dataplane/wire/roce_frame.hpp"
#include "tests/dataplane/runtime/test_nodes.hpp"
#include "tests/dataplane/wire/test_frames.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <set>

namespace rocefab::testing {
namespace {

constexpr std::uint64_t ten_gbps = 10'000'000'000ull;

link_model faulty(const link_faults& faults, unsigned queue = 4096) {
    return link_model{.speed_bps = ten_gbps,
                      .propagation_delay = nanoseconds(500),
                      .mtu = 4200,
                      .queue_frames = queue,
                      .faults = faults};
}

std::uint32_t seq_of(rte_mbuf* m) {
    const auto bytes = frame_bytes(m);
    std::uint32_t seq = 0;
    for (int i = 0; i < 4; ++i) seq = (seq << 8) | bytes[14 + i];
    return seq;
}

struct delivery {
    std::uint32_t seq;
    sim_time arrival;
    std::vector<std::uint8_t> bytes;
};

// Sends `count` numbered pattern frames, one every 2 µs (the line is idle between them), and
// returns what the link delivers, in delivery order.
std::vector<delivery> send_through(link& l, std::uint32_t count, std::uint16_t length = 200) {
    for (std::uint32_t i = 0; i < count; ++i) l.transmit(make_pattern_frame(length, i), microseconds(2) * i);
    std::vector<delivery> out;
    l.deliver_ready(never, [&](rte_mbuf* m) {
        const auto bytes = frame_bytes(m);
        out.push_back({seq_of(m), meta(m).arrival, {bytes.begin(), bytes.end()}});
        rte_pktmbuf_free(m);
    });
    return out;
}

std::vector<std::uint32_t> seqs(const std::vector<delivery>& d) {
    std::vector<std::uint32_t> s;
    for (const auto& x : d) s.push_back(x.seq);
    return s;
}

rte_mbuf* make_roce_frame(bool ipv6, bool vlan, std::size_t payload) {
    const auto spec = wire::testing::sample_spec(wire::to_byte(wire::ib_opcode::rc_send_only), ipv6, vlan);
    return make_frame(wire::testing::build_frame(spec, payload));
}

class link_faults_test : public ::testing::Test {
protected:
    void SetUp() override {
        ASSERT_NE(test_pool(), nullptr);
        _available_before = rte_mempool_avail_count(test_pool());
    }
    void TearDown() override { EXPECT_EQ(rte_mempool_avail_count(test_pool()), _available_before) << "mbuf leak"; }

    unsigned _available_before = 0;
};

TEST_F(link_faults_test, loss_drops_about_p_of_n_frames_and_the_same_seed_drops_the_same_ones) {
    constexpr std::uint32_t n = 4000;
    link a("a", {0, 0}, {1, 0}, faulty({.loss = 0.1}));
    link b("b", {0, 0}, {1, 0}, faulty({.loss = 0.1}));
    link c("c", {0, 0}, {1, 0}, faulty({.loss = 0.1}));
    a.seed_faults(42);
    b.seed_faults(42);
    c.seed_faults(43);
    const auto got_a = seqs(send_through(a, n)), got_b = seqs(send_through(b, n)), got_c = seqs(send_through(c, n));
    // Binomial(4000, 0.1): mean 400, standard deviation 19; 5 sigma either way.
    const std::uint64_t lost = a.counters().drops_loss;
    EXPECT_GT(lost, 305u);
    EXPECT_LT(lost, 495u);
    EXPECT_EQ(got_a.size() + lost, n);
    EXPECT_EQ(a.counters().tx_frames, n) << "a lost frame was on the wire";
    EXPECT_TRUE(std::is_sorted(got_a.begin(), got_a.end())) << "loss alone keeps the order";
    EXPECT_EQ(got_a, got_b) << "same seed, same drops";
    EXPECT_NE(got_a, got_c) << "another seed, other drops";
}

TEST_F(link_faults_test, corrupted_roce_frames_fail_the_icrc_check_and_keep_their_length) {
    link l("a", {0, 0}, {1, 0}, faulty({.corruption = 1.0}));
    struct shape {
        bool ipv6, vlan;
        std::size_t payload;
    };
    const shape shapes[] = {{false, false, 0}, {false, true, 1}, {true, false, 1024}, {true, true, 37}};
    for (int round = 0; round < 50; ++round)
        for (const auto& s : shapes) {
            rte_mbuf* m = make_roce_frame(s.ipv6, s.vlan, s.payload);
            const std::uint32_t length = rte_pktmbuf_pkt_len(m);
            ASSERT_TRUE(l.transmit(m, microseconds(10) * round));
            rte_mbuf* got = l.pop();
            ASSERT_NE(got, nullptr);
            EXPECT_EQ(rte_pktmbuf_pkt_len(got), length);
            wire::parsed_roce parsed;
            EXPECT_EQ(wire::parse_roce_frame(frame_bytes(got), parsed), wire::parse_error::bad_icrc)
                << "ipv6 " << s.ipv6 << " vlan " << s.vlan << " payload " << s.payload;
            rte_pktmbuf_free(got);
        }
    EXPECT_EQ(l.counters().frames_corrupted, 200u);
}

TEST_F(link_faults_test, corruption_hits_about_p_of_the_frames_and_leaves_the_others_intact) {
    link l("a", {0, 0}, {1, 0}, faulty({.corruption = 0.25}));
    std::uint32_t bad = 0, good = 0;
    for (int i = 0; i < 1000; ++i) {
        ASSERT_TRUE(l.transmit(make_roce_frame(i % 2, false, 64), microseconds(2) * i));
        rte_mbuf* got = l.pop();
        wire::parsed_roce parsed;
        const auto e = wire::parse_roce_frame(frame_bytes(got), parsed);
        if (e == wire::parse_error::bad_icrc) ++bad;
        if (e == wire::parse_error::none) ++good;
        rte_pktmbuf_free(got);
    }
    EXPECT_EQ(bad + good, 1000u) << "corruption never breaks a header the parser reads before the ICRC";
    EXPECT_EQ(bad, l.counters().frames_corrupted);
    EXPECT_GT(bad, 180u); // Binomial(1000, 0.25): mean 250, sd 14
    EXPECT_LT(bad, 320u);
}

TEST_F(link_faults_test, corrupted_frame_without_an_icrc_is_dropped_as_its_fcs_would_have_it) {
    link l("a", {0, 0}, {1, 0}, faulty({.corruption = 1.0}));
    EXPECT_TRUE(send_through(l, 10).empty());
    EXPECT_EQ(l.counters().frames_corrupted, 10u);
    EXPECT_EQ(l.counters().tx_frames, 10u);
}

TEST_F(link_faults_test, duplication_delivers_an_identical_copy_right_after_the_frame) {
    link l("a", {0, 0}, {1, 0}, faulty({.duplication = 1.0}));
    const auto got = send_through(l, 20);
    ASSERT_EQ(got.size(), 40u);
    for (std::size_t i = 0; i < got.size(); i += 2) {
        EXPECT_EQ(got[i].seq, i / 2);
        EXPECT_EQ(got[i + 1].seq, i / 2);
        EXPECT_EQ(got[i].bytes, got[i + 1].bytes);
        // The copy takes its own wire time: 200 + 24 bytes at 10 Gb/s = 180 ns (179.2 rounded up).
        EXPECT_EQ(got[i + 1].arrival - got[i].arrival, 180);
    }
    const auto c = l.counters();
    EXPECT_EQ(c.frames_duplicated, 20u);
    EXPECT_EQ(c.tx_frames, 20u) << "tx counts what the sender handed over";
}

TEST_F(link_faults_test, duplication_at_p_adds_about_p_times_n_extra_frames) {
    link l("a", {0, 0}, {1, 0}, faulty({.duplication = 0.2}));
    const auto got = send_through(l, 2000);
    const std::uint64_t extra = l.counters().frames_duplicated;
    EXPECT_EQ(got.size(), 2000u + extra);
    EXPECT_GT(extra, 310u); // Binomial(2000, 0.2): mean 400, sd 18
    EXPECT_LT(extra, 490u);
    const auto numbers = seqs(got);
    EXPECT_EQ(std::set<std::uint32_t>(numbers.begin(), numbers.end()).size(), 2000u);
}

TEST_F(link_faults_test, reordered_frame_is_overtaken_by_later_frames) {
    link l("a", {0, 0}, {1, 0}, faulty({}));
    l.set_faults({.reordering = 1.0, .reorder_delay = microseconds(5)});
    ASSERT_TRUE(l.transmit(make_pattern_frame(200, 0), 0));
    l.set_faults({});
    for (std::uint32_t i = 1; i < 6; ++i) ASSERT_TRUE(l.transmit(make_pattern_frame(200, i), microseconds(2) * i));
    EXPECT_EQ(l.next_arrival(), 180 + 500 + microseconds(2)) << "frame 1 is due first";
    std::vector<std::uint32_t> order;
    std::vector<sim_time> arrivals;
    l.deliver_ready(never, [&](rte_mbuf* m) {
        order.push_back(seq_of(m));
        arrivals.push_back(meta(m).arrival);
        rte_pktmbuf_free(m);
    });
    EXPECT_EQ(order, (std::vector<std::uint32_t>{1, 2, 0, 3, 4, 5}));
    EXPECT_EQ(arrivals[2], 180 + 500 + microseconds(5));
    EXPECT_TRUE(std::is_sorted(arrivals.begin(), arrivals.end())) << "delivery follows arrival time";
    EXPECT_EQ(l.counters().frames_reordered, 1u);
    EXPECT_EQ(l.in_flight(), 0u);
}

TEST_F(link_faults_test, reordering_at_p_delivers_every_frame_some_after_a_later_one) {
    link l("a", {0, 0}, {1, 0}, faulty({.reordering = 0.1, .reorder_delay = microseconds(7)}));
    const auto got = send_through(l, 1000);
    ASSERT_EQ(got.size(), 1000u);
    std::uint32_t overtaken = 0;
    for (std::size_t i = 1; i < got.size(); ++i) {
        overtaken += got[i].seq < got[i - 1].seq;
        EXPECT_LE(got[i - 1].arrival, got[i].arrival);
    }
    EXPECT_GT(overtaken, 0u);
    EXPECT_GT(l.counters().frames_reordered, 50u);
    EXPECT_LT(l.counters().frames_reordered, 150u);
}

TEST_F(link_faults_test, full_reorder_queue_sends_frames_in_order_instead) {
    link l("a", {0, 0}, {1, 0}, faulty({.reordering = 1.0}));
    for (std::uint32_t i = 0; i < reorder_queue_frames + 10; ++i) ASSERT_TRUE(l.transmit(make_pattern_frame(64, i), 0));
    EXPECT_EQ(l.counters().frames_reordered, reorder_queue_frames);
    EXPECT_EQ(l.in_flight(), reorder_queue_frames + 10);
    EXPECT_EQ(l.deliver_ready(never, [](rte_mbuf* m) { rte_pktmbuf_free(m); }), reorder_queue_frames + 10);
}

TEST_F(link_faults_test, down_link_drops_before_any_fault_is_drawn) {
    link l("a", {0, 0}, {1, 0}, faulty({.loss = 0.5}));
    link twin("b", {0, 0}, {1, 0}, faulty({.loss = 0.5}));
    l.set_up(false);
    EXPECT_FALSE(l.transmit(make_pattern_frame(64), 0));
    l.set_up(true);
    EXPECT_EQ(seqs(send_through(l, 100)), seqs(send_through(twin, 100))) << "the dropped frame drew nothing";
    EXPECT_EQ(l.counters().drops_link_down, 1u);
}

TEST_F(link_faults_test, set_faults_clamps_probabilities_into_range) {
    link l("a", {0, 0}, {1, 0}, faulty({}));
    l.set_faults({.loss = 2.0, .corruption = -1.0, .duplication = std::nan(""), .reorder_delay = -5});
    EXPECT_EQ(l.faults().loss, 1.0);
    EXPECT_EQ(l.faults().corruption, 0.0);
    EXPECT_EQ(l.faults().duplication, 0.0);
    EXPECT_EQ(l.faults().reorder_delay, 0);
    EXPECT_TRUE(send_through(l, 5).empty());
}

// --- under the virtual-time driver ---

struct run_result {
    std::vector<receive_record> trace;
    std::uint64_t digest;
    std::uint32_t received, bad;
    std::vector<link_counters> links;
    std::uint64_t frames_delivered;
};

// A pinger and an echo on one cable; `faults` on both directions.
run_result ping_echo(std::uint64_t seed, const link_faults& faults, bool set_seed = true) {
    wiring w;
    if (set_seed) w.set_seed(seed);
    ping_node ping("ping", 1, 2, {.count = 400, .burst = 4, .interval = microseconds(5), .frame_length = 300});
    echo_node echo("echo", 1);
    const node_id p = w.add_node(ping), e = w.add_node(echo);
    w.connect(p, 0, e, 0, faulty(faults));
    w.attach_all(test_pool());
    virtual_time_driver driver(w);
    driver.run_until_idle(seconds(1));
    return {ping.trace(),
            ping.digest(),
            ping.received(),
            ping.bad(),
            {w.link_at(0).counters(), w.link_at(1).counters()},
            driver.frames_delivered()};
}

TEST_F(link_faults_test, same_seed_gives_an_identical_trace_and_another_seed_a_different_one) {
    const link_faults faults{
        .loss = 0.05, .corruption = 0.05, .duplication = 0.05, .reordering = 0.1, .reorder_delay = microseconds(3)};
    const run_result first = ping_echo(7, faults), second = ping_echo(7, faults), other = ping_echo(8, faults);
    EXPECT_EQ(first.trace, second.trace);
    EXPECT_EQ(first.digest, second.digest);
    EXPECT_EQ(first.bad, second.bad);
    EXPECT_EQ(first.links, second.links);
    EXPECT_EQ(first.frames_delivered, second.frames_delivered);
    EXPECT_NE(first.trace, other.trace);
    // Every fault happened, on both directions.
    for (const auto& c : first.links) {
        EXPECT_GT(c.drops_loss, 0u);
        EXPECT_GT(c.frames_corrupted, 0u);
        EXPECT_GT(c.frames_duplicated, 0u);
        EXPECT_GT(c.frames_reordered, 0u);
    }
    EXPECT_LT(first.received, 400u);
}

TEST_F(link_faults_test, zero_probabilities_change_nothing) {
    const run_result plain = ping_echo(1, {}, false);
    const run_result zero = ping_echo(99, {.loss = 0, .corruption = 0, .duplication = 0, .reordering = 0});
    EXPECT_EQ(plain.received, 400u);
    EXPECT_EQ(plain.bad, 0u);
    EXPECT_EQ(zero.trace, plain.trace);
    EXPECT_EQ(zero.digest, plain.digest);
    EXPECT_EQ(zero.links, plain.links);
    for (const auto& c : zero.links) {
        EXPECT_EQ(c.drops_loss + c.frames_corrupted + c.frames_duplicated + c.frames_reordered, 0u);
    }
}

TEST_F(link_faults_test, wiring_seeds_each_link_from_the_fabric_seed_and_its_index) {
    auto losses = [](std::uint64_t seed) {
        wiring w;
        probe_node a("a", 1), b("b", 1);
        w.connect(w.add_node(a), 0, w.add_node(b), 0, faulty({.loss = 0.5}));
        w.set_seed(seed);
        return std::pair{seqs(send_through(w.link_at(0), 64)), seqs(send_through(w.link_at(1), 64))};
    };
    const auto [forward, backward] = losses(3);
    EXPECT_NE(forward, backward) << "two directions of one cable draw from different streams";
    EXPECT_EQ(losses(3), std::pair(forward, backward));
    EXPECT_NE(losses(4).first, forward);
}

} // namespace
} // namespace rocefab::testing
