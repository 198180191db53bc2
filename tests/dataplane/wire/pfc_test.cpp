#include "dataplane/wire/pfc.hpp"

#include <gtest/gtest.h>

#include <vector>

namespace rocefab::wire {
namespace {

const mac_address source{{0x02, 0xfc, 0x00, 0x00, 0x00, 0x09}};

TEST(pfc, frame_has_the_802_1qbb_layout) {
    std::vector<std::uint8_t> f(pfc_frame_length, 0xaa);
    ASSERT_EQ(write_pfc_frame(f.data(), source, 0x08, {0, 0, 0, 0xffff, 0, 0, 0, 0}), 60u);
    const std::vector<std::uint8_t> head{0x01, 0x80, 0xc2, 0x00, 0x00, 0x01, // destination
                                         0x02, 0xfc, 0x00, 0x00, 0x00, 0x09, // source
                                         0x88, 0x08,                         // MAC control
                                         0x01, 0x01,                         // PFC opcode
                                         0x00, 0x08,                         // priority 3 enabled
                                         0,    0,    0,    0,    0,    0,    0xff, 0xff, 0, 0, 0, 0, 0, 0, 0, 0};
    EXPECT_EQ(std::vector<std::uint8_t>(f.begin(), f.begin() + 34), head);
    for (std::size_t i = 34; i < 60; ++i) EXPECT_EQ(f[i], 0) << i;
}

TEST(pfc, round_trips_vector_and_quanta) {
    std::uint8_t f[60];
    const std::array<std::uint16_t, 8> quanta{1, 2, 3, 4, 5, 6, 7, 0xffff};
    write_pfc_frame(f, source, 0xa5, quanta);
    std::uint8_t vector = 0;
    std::array<std::uint16_t, 8> got{};
    ASSERT_TRUE(parse_pfc_frame(f, vector, got));
    EXPECT_EQ(vector, 0xa5);
    EXPECT_EQ(got, quanta);
}

TEST(pfc, parser_rejects_what_is_not_pfc) {
    std::uint8_t f[60];
    write_pfc_frame(f, source, 0x08, {});
    std::uint8_t vector;
    std::array<std::uint16_t, 8> q;
    EXPECT_FALSE(parse_pfc_frame(std::span(f, 33), vector, q));
    auto g = std::to_array(f);
    g[15] = 0x01; // 802.3x PAUSE (opcode 0x0001), not PFC
    g[14] = 0x00;
    EXPECT_FALSE(parse_pfc_frame(g, vector, q));
    g = std::to_array(f);
    g[5] = 0x02;
    EXPECT_FALSE(parse_pfc_frame(g, vector, q));
    g = std::to_array(f);
    g[13] = 0x00;
    EXPECT_FALSE(parse_pfc_frame(g, vector, q));
}

TEST(pfc, quanta_are_512_bit_times) {
    EXPECT_EQ(pause_quanta_to_time(1, 100'000'000'000), 6);            // 5.12 ns, rounded up
    EXPECT_EQ(pause_quanta_to_time(0xffff, 100'000'000'000), 335'540); // 335.5392 us
    EXPECT_EQ(pause_quanta_to_time(0xffff, 25'000'000'000), 1'342'157);
    EXPECT_EQ(pause_quanta_to_time(1000, 1'000'000'000), 512'000);
    EXPECT_EQ(pause_quanta_to_time(0, 100'000'000'000), 0);
    EXPECT_EQ(pause_quanta_to_time(10, 0), 0);
}

} // namespace
} // namespace rocefab::wire
