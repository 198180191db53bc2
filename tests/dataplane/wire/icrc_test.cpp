#include "dataplane/wire/icrc.hpp"
#include "dataplane/wire/roce_frame.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <vector>

namespace rocefab::wire {
namespace {

#include "tests/dataplane/wire/icrc_vectors.inc"

std::size_t l3_offset_of(const std::uint8_t* frame) {
    return (frame[12] == 0x81 && frame[13] == 0x00) ? 18 : 14;
}

TEST(crc32, matches_the_standard_check_value) {
    const std::uint8_t digits[] = {'1', '2', '3', '4', '5', '6', '7', '8', '9'};
    EXPECT_EQ(crc32(digits), 0xcbf4'3926u);
    EXPECT_EQ(crc32({}), 0u);
    // Long enough to exercise the 8-byte path and an odd tail.
    std::vector<std::uint8_t> ramp(1027);
    for (std::size_t i = 0; i < ramp.size(); ++i) ramp[i] = static_cast<std::uint8_t>(i);
    std::uint32_t bitwise = 0xffffffff;
    for (std::uint8_t b : ramp) {
        bitwise ^= b;
        for (int k = 0; k < 8; ++k) bitwise = (bitwise >> 1) ^ (0xedb88320u & (0u - (bitwise & 1)));
    }
    EXPECT_EQ(crc32(ramp), ~bitwise);
}

TEST(icrc, agrees_with_scapy_on_every_vector) {
    ASSERT_GT(std::size(icrc_vectors), 10u);
    for (const auto& v : icrc_vectors) {
        SCOPED_TRACE(v.name);
        const std::size_t l3 = l3_offset_of(v.bytes);
        const std::span<const std::uint8_t> packet(v.bytes + l3, v.length - l3);
        const std::uint32_t ours = compute_icrc(packet.first(packet.size() - icrc_length));
        std::uint8_t wire[4];
        store_icrc(wire, ours);
        EXPECT_EQ(0, std::memcmp(wire, v.bytes + v.length - 4, 4))
            << std::hex << "ours " << ours << " theirs " << load_icrc(v.bytes + v.length - 4);
        EXPECT_TRUE(icrc_matches(packet));
    }
}

TEST(icrc, parser_accepts_every_scapy_vector) {
    for (const auto& v : icrc_vectors) {
        SCOPED_TRACE(v.name);
        parsed_roce p;
        EXPECT_EQ(parse_roce_frame({v.bytes, v.length}, p), parse_error::none) << to_string(parse_roce_frame({v.bytes, v.length}, p));
    }
}

TEST(icrc, ignores_variant_fields_and_covers_everything_else) {
    for (const auto& v : icrc_vectors) {
        SCOPED_TRACE(v.name);
        const std::size_t l3 = l3_offset_of(v.bytes);
        const bool ipv6 = (v.bytes[l3] >> 4) == 6;
        const std::size_t l4 = l3 + (ipv6 ? 40 : 20);
        std::vector<std::uint8_t> f(v.bytes, v.bytes + v.length);
        std::span<const std::uint8_t> packet(f.data() + l3, f.size() - l3);
        // What switches and routers change on the way: ECN/DSCP, TTL/hop limit, flow label, UDP
        // checksum, FECN/BECN.
        f[l3 + 1] ^= 0x03;
        if (ipv6) {
            f[l3 + 0] ^= 0x0f;
            f[l3 + 3] ^= 0x55;
            f[l3 + 7] -= 1;
        } else {
            f[l3 + 8] -= 1;
            f[l3 + 10] ^= 0xff;
        }
        f[l4 + 6] ^= 0x12;
        f[l4 + 8 + 4] ^= 0xc0;
        EXPECT_TRUE(icrc_matches(packet));
        // Anything else is invariant: flip each byte after the variant ones in turn.
        for (std::size_t i = l3; i + 4 < f.size(); ++i) {
            const std::size_t r = i - l3;
            const bool variant = ipv6 ? (r < 4 || r == 7) : (r == 1 || r == 8 || r == 10 || r == 11);
            const bool udp_checksum = i == l4 + 6 || i == l4 + 7;
            if (variant || udp_checksum || i == l4 + 8 + 4) continue;
            f[i] ^= 0x01;
            EXPECT_FALSE(icrc_matches(packet)) << "byte " << i;
            f[i] ^= 0x01;
        }
    }
}

TEST(icrc, never_reads_outside_a_short_span) {
    // A lone IPv4 version nibble claiming a 60-byte header in a 3-byte span.
    const std::vector<std::uint8_t> tiny{0x4f, 0x00, 0x00};
    (void)compute_icrc(tiny);
    EXPECT_FALSE(icrc_matches(std::vector<std::uint8_t>{0x60, 0x00}));
    EXPECT_FALSE(icrc_matches({}));
}

} // namespace
} // namespace rocefab::wire
