#include "dataplane/wire/icrc.hpp"
#include "dataplane/wire/roce_frame.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

namespace rocefab::wire {

// Defined in icrc.cpp for these tests only; not part of icrc.hpp.
namespace detail {
std::uint32_t crc32_sliced(std::span<const std::uint8_t> bytes);
bool crc32_folding_supported();
} // namespace detail

namespace {

#include "tests/dataplane/wire/icrc_vectors.inc"

std::size_t l3_offset_of(const std::uint8_t* frame) { return (frame[12] == 0x81 && frame[13] == 0x00) ? 18 : 14; }

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

// IEEE 802.3 CRC-32 one bit at a time: slow, but too simple to share a bug with the fast paths.
std::uint32_t bitwise_crc_update(std::uint32_t crc, std::span<const std::uint8_t> bytes) {
    for (std::uint8_t b : bytes) {
        crc ^= b;
        for (int k = 0; k < 8; ++k) crc = (crc >> 1) ^ (0xedb88320u & (0u - (crc & 1)));
    }
    return crc;
}

std::uint32_t bitwise_crc32(std::span<const std::uint8_t> bytes) { return ~bitwise_crc_update(0xffffffff, bytes); }

std::vector<std::uint8_t> random_bytes(std::mt19937& rng, std::size_t n) {
    std::vector<std::uint8_t> v(n);
    for (auto& b : v) b = static_cast<std::uint8_t>(rng());
    return v;
}

// Jumbo frames reach 9000 bytes; offsets 0..63 put the start anywhere in a cache line, so the
// unaligned 16-byte loads and every tail length (n mod 16, n mod 8) are covered.
constexpr std::size_t max_length = 9000;

TEST(crc32, every_path_matches_the_bitwise_reference_at_random_lengths_and_offsets) {
    RecordProperty("pclmul_folding", detail::crc32_folding_supported() ? "yes" : "no");
    std::mt19937 rng(0x1c2c);
    const std::vector<std::uint8_t> buffer = random_bytes(rng, max_length + 64);
    std::uniform_int_distribution<std::size_t> length_of(0, max_length), offset_of(0, 63);
    for (int i = 0; i < 1500; ++i) {
        const std::size_t length = length_of(rng), offset = offset_of(rng);
        const std::span<const std::uint8_t> bytes(buffer.data() + offset, length);
        const std::uint32_t expected = bitwise_crc32(bytes);
        ASSERT_EQ(crc32(bytes), expected) << "length " << length << " offset " << offset;
        ASSERT_EQ(detail::crc32_sliced(bytes), expected) << "length " << length << " offset " << offset;
    }
}

TEST(crc32, every_path_matches_the_bitwise_reference_around_the_folding_thresholds) {
    // Every length up to 300 at every offset 0..15: the switch from slicing to folding (64), one
    // and several four-lane blocks, and each single-lane remainder.
    std::mt19937 rng(0x0f01d);
    const std::vector<std::uint8_t> buffer = random_bytes(rng, 300 + 16);
    for (std::size_t offset = 0; offset < 16; ++offset) {
        for (std::size_t length = 0; length <= 300; ++length) {
            const std::span<const std::uint8_t> bytes(buffer.data() + offset, length);
            const std::uint32_t expected = bitwise_crc32(bytes);
            ASSERT_EQ(crc32(bytes), expected) << "length " << length << " offset " << offset;
            ASSERT_EQ(detail::crc32_sliced(bytes), expected) << "length " << length << " offset " << offset;
        }
    }
}

TEST(crc32, all_zero_and_all_one_buffers_match_the_bitwise_reference) {
    for (std::uint8_t fill : {std::uint8_t{0x00}, std::uint8_t{0xff}}) {
        const std::vector<std::uint8_t> bytes(4096 + 13, fill);
        EXPECT_EQ(crc32(bytes), bitwise_crc32(bytes)) << int(fill);
    }
}

// The ICRC by its definition (IBA Annex A17.3.3), bit by bit over a masked copy.
std::uint32_t bitwise_icrc(std::span<const std::uint8_t> packet) {
    std::vector<std::uint8_t> masked(packet.begin(), packet.end());
    const bool ipv6 = (masked[0] >> 4) == 6;
    const std::size_t l4 = ipv6 ? 40 : 20;
    if (ipv6) {
        masked[0] |= 0x0f;
        masked[1] = masked[2] = masked[3] = 0xff;
        masked[7] = 0xff;
    } else {
        masked[1] = masked[8] = masked[10] = masked[11] = 0xff;
    }
    masked[l4 + 6] = masked[l4 + 7] = 0xff;
    masked[l4 + 8 + 4] = 0xff;
    const std::uint8_t lrh[8] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
    return ~bitwise_crc_update(bitwise_crc_update(0xffffffff, lrh), masked);
}

TEST(icrc, matches_the_bitwise_definition_for_random_packets_of_every_size) {
    // The payload is hashed from a running CRC that is not the initial all-ones value, which the
    // plain crc32() tests above never exercise.
    std::mt19937 rng(0x1c2c6);
    const std::vector<std::uint8_t> buffer = random_bytes(rng, 40 + 8 + 12 + max_length + 64);
    std::uniform_int_distribution<std::size_t> payload_of(0, max_length), offset_of(0, 63);
    for (int i = 0; i < 600; ++i) {
        const bool ipv6 = i % 2;
        const std::size_t offset = offset_of(rng);
        std::vector<std::uint8_t> storage(buffer);
        std::uint8_t* start = storage.data() + offset;
        start[0] = ipv6 ? 0x60 | (start[0] & 0x0f) : 0x45;
        const std::size_t length = (ipv6 ? 40 : 20) + 8 + 12 + payload_of(rng);
        const std::span<const std::uint8_t> packet(start, length);
        ASSERT_EQ(compute_icrc(packet), bitwise_icrc(packet))
            << (ipv6 ? "ipv6" : "ipv4") << " length " << length << " offset " << offset;
    }
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
        EXPECT_EQ(parse_roce_frame({v.bytes, v.length}, p), parse_error::none)
            << to_string(parse_roce_frame({v.bytes, v.length}, p));
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
