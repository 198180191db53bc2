#include "dataplane/link.hpp"
#include "tests/dataplane/runtime/test_nodes.hpp"

#include <gtest/gtest.h>

#include <array>
#include <limits>
#include <vector>

namespace rocefab::testing {
namespace {

constexpr std::uint64_t ten_gbps = 10'000'000'000ull;

link_model ten_gig(sim_time delay = nanoseconds(500), unsigned queue = 4096) {
    return link_model{.speed_bps = ten_gbps, .propagation_delay = delay, .mtu = 1500, .queue_frames = queue};
}

class recording_tap final : public frame_tap {
public:
    void on_frame(sim_time departure, std::span<const std::uint8_t> frame) override {
        departures.push_back(departure);
        frames.emplace_back(frame.begin(), frame.end());
    }
    std::vector<sim_time> departures;
    std::vector<std::vector<std::uint8_t>> frames;
};

class link_test : public ::testing::Test {
protected:
    void SetUp() override {
        ASSERT_NE(test_pool(), nullptr);
        _available_before = rte_mempool_avail_count(test_pool());
    }
    void TearDown() override { EXPECT_EQ(rte_mempool_avail_count(test_pool()), _available_before) << "mbuf leak"; }

    unsigned _available_before = 0;
};

TEST_F(link_test, frame_arrives_after_serialisation_of_wire_bytes_plus_propagation) {
    link l("a->b", {0, 0}, {1, 3}, ten_gig(nanoseconds(500)));
    // 1476 + 24 (FCS, preamble, IFG) = 1500 wire bytes = 12 000 bits = 1200 ns at 10 Gb/s.
    ASSERT_TRUE(l.transmit(make_pattern_frame(1476), 1000));
    EXPECT_EQ(l.busy_until(), 1000 + 1200);
    EXPECT_EQ(l.next_arrival(), 1000 + 1200 + 500);
    rte_mbuf* m = l.peek_ready(never);
    ASSERT_NE(m, nullptr);
    EXPECT_EQ(meta(m).arrival, 2700);
    rte_pktmbuf_free(l.pop());
}

TEST_F(link_test, serialisation_time_rounds_up_to_whole_nanoseconds) {
    link l("a->b", {0, 0}, {1, 0}, ten_gig(nanoseconds(0)));
    // (1500 + 24) * 8 / 10 = 1219.2 ns: the frame is not complete before 1220.
    ASSERT_TRUE(l.transmit(make_pattern_frame(1500), 0));
    EXPECT_EQ(l.next_arrival(), 1220);
}

// The 64-bit fast path must give the exact 128-bit quotient, rounded up, on both sides of where
// it hands over (2^31 bytes), for rates that divide evenly and rates that do not.
TEST(serialization_time, equals_the_exact_rounded_up_quotient_on_both_paths) {
    const std::array<std::uint64_t, 9> rates = {1,
                                                3,
                                                1'000'000'000,
                                                10'000'000'000,
                                                25'000'000'000,
                                                100'000'000'000,
                                                400'000'000'000,
                                                999'999'999'989,
                                                ~std::uint64_t{0} >> 1};
    const std::array<std::uint64_t, 12> sizes = {
        0, 1, 60, 64, 1518, 4200 + 24, 9216, 9238, 1u << 20, (1ull << 31) - 1, 1ull << 31, (1ull << 31) + 7};
    for (const std::uint64_t rate : rates)
        for (const std::uint64_t bytes : sizes) {
            const unsigned __int128 bits = static_cast<unsigned __int128>(bytes) * 8'000'000'000u;
            const unsigned __int128 exact = (bits + rate - 1) / rate;
            if (exact > static_cast<unsigned __int128>(std::numeric_limits<sim_time>::max())) continue;
            EXPECT_EQ(serialization_time(bytes, rate), static_cast<sim_time>(exact)) << bytes << " B at " << rate;
        }
    EXPECT_EQ(serialization_time(1518, 0), 0);
}

TEST_F(link_test, back_to_back_frames_queue_behind_each_other) {
    link l("a->b", {0, 0}, {1, 0}, ten_gig(nanoseconds(1000)));
    for (std::uint32_t i = 0; i < 3; ++i) ASSERT_TRUE(l.transmit(make_pattern_frame(1476, i), 0));
    EXPECT_EQ(l.busy_until(), 3600);
    // Once the line is idle again, a frame starts when it is handed over.
    ASSERT_TRUE(l.transmit(make_pattern_frame(1476, 3), 10'000));
    std::vector<sim_time> arrivals;
    l.deliver_ready(never, [&](rte_mbuf* m) {
        arrivals.push_back(meta(m).arrival);
        rte_pktmbuf_free(m);
    });
    EXPECT_EQ(arrivals, (std::vector<sim_time>{2200, 3400, 4600, 12'200}));
}

TEST_F(link_test, frame_is_not_delivered_before_its_arrival_time) {
    link l("a->b", {0, 0}, {1, 0}, ten_gig(nanoseconds(500)));
    ASSERT_TRUE(l.transmit(make_pattern_frame(1476), 0));
    EXPECT_EQ(l.peek_ready(1699), nullptr);
    EXPECT_EQ(l.deliver_ready(1699, [](rte_mbuf* m) { rte_pktmbuf_free(m); }), 0u);
    EXPECT_NE(l.peek_ready(1700), nullptr);
    EXPECT_EQ(l.deliver_ready(1700, [](rte_mbuf* m) { rte_pktmbuf_free(m); }), 1u);
    EXPECT_EQ(l.next_arrival(), never);
    EXPECT_EQ(l.in_flight(), 0u);
}

TEST_F(link_test, delivery_is_fifo_and_honours_the_frame_budget) {
    link l("a->b", {0, 0}, {1, 0}, ten_gig());
    for (std::uint32_t i = 0; i < 5; ++i) ASSERT_TRUE(l.transmit(make_pattern_frame(100, i), 0));
    std::vector<std::uint32_t> seqs;
    auto collect = [&](rte_mbuf* m) {
        seqs.push_back(frame_bytes(m)[17]);
        rte_pktmbuf_free(m);
    };
    EXPECT_EQ(l.deliver_ready(never, collect, 2), 2u);
    EXPECT_EQ(l.deliver_ready(never, collect), 3u);
    EXPECT_EQ(seqs, (std::vector<std::uint32_t>{0, 1, 2, 3, 4}));
}

TEST_F(link_test, take_ready_fills_a_burst_in_order_up_to_its_size) {
    link l("a->b", {0, 0}, {1, 0}, ten_gig());
    for (std::uint32_t i = 0; i < 5; ++i) ASSERT_TRUE(l.transmit(make_pattern_frame(100, i), 0));
    std::array<rte_mbuf*, 3> burst{};
    std::vector<std::uint32_t> seqs;
    for (unsigned expected : {3u, 2u, 0u}) {
        const unsigned n = l.take_ready(never, burst);
        EXPECT_EQ(n, expected);
        for (unsigned i = 0; i < n; ++i) {
            seqs.push_back(frame_bytes(burst[i])[17]);
            rte_pktmbuf_free(burst[i]);
        }
    }
    EXPECT_EQ(seqs, (std::vector<std::uint32_t>{0, 1, 2, 3, 4}));
}

TEST_F(link_test, frame_longer_than_mtu_plus_ethernet_and_vlan_headers_is_dropped) {
    link l("a->b", {0, 0}, {1, 0}, ten_gig());
    EXPECT_TRUE(l.transmit(make_pattern_frame(1518), 0));
    EXPECT_FALSE(l.transmit(make_pattern_frame(1519), 0));
    const link_counters c = l.counters();
    EXPECT_EQ(c.drops_mtu, 1u);
    EXPECT_EQ(c.tx_frames, 1u);
    EXPECT_EQ(c.tx_bytes, 1518u);
    // The dropped frame took no wire time.
    EXPECT_EQ(l.busy_until(), serialization_time(1518 + 24, ten_gbps));
    l.deliver_ready(never, [](rte_mbuf* m) { rte_pktmbuf_free(m); });
}

TEST_F(link_test, down_link_drops_new_frames_but_delivers_those_already_on_the_wire) {
    link l("a->b", {0, 0}, {1, 0}, ten_gig());
    ASSERT_TRUE(l.transmit(make_pattern_frame(200, 1), 0));
    l.set_up(false);
    EXPECT_FALSE(l.is_up());
    EXPECT_FALSE(l.transmit(make_pattern_frame(200, 2), 0));
    EXPECT_EQ(l.counters().drops_link_down, 1u);
    EXPECT_EQ(l.deliver_ready(never, [](rte_mbuf* m) { rte_pktmbuf_free(m); }), 1u);
    l.set_up(true);
    EXPECT_TRUE(l.transmit(make_pattern_frame(200, 3), 0));
    EXPECT_EQ(l.counters().tx_frames, 2u);
    l.deliver_ready(never, [](rte_mbuf* m) { rte_pktmbuf_free(m); });
}

TEST_F(link_test, full_queue_drops_without_taking_wire_time) {
    link l("a->b", {0, 0}, {1, 0}, ten_gig(nanoseconds(0), 4));
    for (std::uint32_t i = 0; i < 4; ++i) ASSERT_TRUE(l.transmit(make_pattern_frame(1476, i), 0));
    const sim_time busy = l.busy_until();
    EXPECT_FALSE(l.transmit(make_pattern_frame(1476, 4), 0));
    EXPECT_EQ(l.busy_until(), busy);
    const link_counters c = l.counters();
    EXPECT_EQ(c.drops_queue_full, 1u);
    EXPECT_EQ(c.tx_frames, 4u);
    EXPECT_EQ(c.tx_bytes, 4u * 1476);
    EXPECT_EQ(l.in_flight(), 4u);
    EXPECT_EQ(l.deliver_ready(never, [](rte_mbuf* m) { rte_pktmbuf_free(m); }), 4u);
    EXPECT_TRUE(l.transmit(make_pattern_frame(1476, 5), busy));
    l.deliver_ready(never, [](rte_mbuf* m) { rte_pktmbuf_free(m); });
}

TEST_F(link_test, tap_sees_each_frame_put_on_the_wire_with_its_departure_time) {
    link l("a->b", {0, 0}, {1, 0}, ten_gig());
    recording_tap tap;
    l.set_tap(&tap);
    ASSERT_TRUE(l.transmit(make_pattern_frame(1476, 9), 100));
    EXPECT_FALSE(l.transmit(make_pattern_frame(2000, 10), 100)); // over MTU: not on the wire
    l.set_tap(nullptr);
    ASSERT_TRUE(l.transmit(make_pattern_frame(1476, 11), 100));
    ASSERT_EQ(tap.departures, (std::vector<sim_time>{1300}));
    std::vector<std::uint8_t> expected(1476);
    write_pattern(expected, 9, 1, 2);
    EXPECT_EQ(tap.frames[0], expected);
    l.deliver_ready(never, [](rte_mbuf* m) { rte_pktmbuf_free(m); });
}

TEST_F(link_test, metadata_crossing_the_link_is_reset_to_the_receiving_port) {
    link l("a->b", {0, 2}, {1, 7}, ten_gig());
    rte_mbuf* m = make_pattern_frame(100);
    meta(m).priority = 3;
    meta(m).traffic_class = 3;
    meta(m).ingress_port = 2;
    ASSERT_TRUE(l.transmit(m, 0));
    rte_mbuf* got = l.peek_ready(never);
    ASSERT_NE(got, nullptr);
    EXPECT_EQ(meta(got).ingress_port, 7);
    EXPECT_EQ(meta(got).priority, 0);
    EXPECT_EQ(meta(got).traffic_class, 0);
    rte_pktmbuf_free(l.pop());
}

TEST_F(link_test, metadata_has_its_own_mbuf_field_beside_next_and_frames_start_on_a_cache_line) {
    rte_mbuf_dynfield reserved{};
    EXPECT_EQ(rte_mbuf_dynfield_lookup("rocefab_packet_meta", &reserved), static_cast<int>(packet_meta_offset));
    EXPECT_EQ(reserved.size, sizeof(packet_meta));
    // A driver that asks for a dynamic field later is given another place.
    const rte_mbuf_dynfield other{"rocefab_link_test_field", 8, 8, 0};
    const int offset = rte_mbuf_dynfield_register(&other);
    ASSERT_GE(offset, 0);
    EXPECT_TRUE(static_cast<std::size_t>(offset) + other.size <= packet_meta_offset ||
                static_cast<std::size_t>(offset) >= packet_meta_offset + sizeof(packet_meta))
        << "offset " << offset;
    rte_mbuf* m = make_pattern_frame(100);
    const auto line_of = [m](const void* p) {
        return (reinterpret_cast<std::uintptr_t>(p) - reinterpret_cast<std::uintptr_t>(m)) / RTE_CACHE_LINE_SIZE;
    };
    const auto* first = reinterpret_cast<const char*>(&meta(m));
    EXPECT_EQ(line_of(first), line_of(&m->next));
    EXPECT_EQ(line_of(first + sizeof(packet_meta) - 1), line_of(&m->next));
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(rte_pktmbuf_mtod(m, void*)) % RTE_CACHE_LINE_SIZE, 0u);
    rte_pktmbuf_free(m);
}

TEST_F(link_test, destroying_a_link_frees_frames_still_on_the_wire) {
    auto l = std::make_unique<link>("a->b", link_endpoint{0, 0}, link_endpoint{1, 0}, ten_gig());
    for (std::uint32_t i = 0; i < 3; ++i) ASSERT_TRUE(l->transmit(make_pattern_frame(100, i), 0));
    ASSERT_NE(l->next_arrival(), never); // one frame held out of the ring as the head
    l.reset();                           // TearDown checks the pool got all of them back
}

} // namespace
} // namespace rocefab::testing
