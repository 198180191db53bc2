// The bounds on packets held ahead of a PSN gap (README, "up to 128 packets a QP, 512 a NIC"):
// past either, hold() says no and the NIC falls back to asking again (a sequence NAK).
#include "nic_emu/reorder_buffer.hpp"

#include <gtest/gtest.h>

#include <array>

namespace rocefab::nic {
namespace {

// hold() never touches the frame it is given; these tests give none.
bool hold(reorder_buffer& qp, held_packet_store& store, std::uint32_t psn) {
    return qp.hold(store, psn, nullptr, wire::parsed_roce{});
}

TEST(reorder_limits, a_qp_holds_128_packets_and_refuses_the_next) {
    held_packet_store store;
    reorder_buffer qp;
    for (std::uint32_t psn = 1; psn <= 128; ++psn) ASSERT_TRUE(hold(qp, store, psn)) << psn;
    EXPECT_EQ(qp.held(), 128u);
    EXPECT_FALSE(hold(qp, store, 129));
    EXPECT_EQ(store.in_use(), 128u);
    // Taking one out makes room for one more.
    held_packet out;
    ASSERT_TRUE(qp.take(store, 1, out));
    EXPECT_TRUE(hold(qp, store, 129));
}

TEST(reorder_limits, the_nic_holds_512_packets_across_its_qps_and_refuses_the_next) {
    held_packet_store store;
    std::array<reorder_buffer, 5> qps;
    std::uint32_t held = 0;
    for (auto& qp : qps)
        for (std::uint32_t psn = 1; psn <= 128 && held < 512; ++psn, ++held) ASSERT_TRUE(hold(qp, store, psn));
    EXPECT_EQ(held, 512u);
    EXPECT_TRUE(store.full());
    EXPECT_EQ(qps[4].held(), 0u); // four QPs took it all
    EXPECT_FALSE(hold(qps[4], store, 1));
    held_packet out;
    ASSERT_TRUE(qps[0].take(store, 7, out));
    EXPECT_EQ(out.psn, 7u);
    EXPECT_TRUE(hold(qps[4], store, 1));
}

TEST(reorder_limits, packets_come_out_in_psn_order_from_the_gap_across_the_wrap) {
    held_packet_store store;
    reorder_buffer qp;
    for (std::uint32_t psn : {0x000002u, 0xfffffeu, 0x000000u}) ASSERT_TRUE(hold(qp, store, psn));
    std::uint32_t first = 0;
    ASSERT_TRUE(qp.earliest(store, 0xfffffd, first));
    EXPECT_EQ(first, 0xfffffeu);
}

} // namespace
} // namespace rocefab::nic
