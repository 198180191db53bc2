#include "control/config/ip_prefix.hpp"

#include <gtest/gtest.h>

namespace rocefab::config {
namespace {

TEST(parse_ip_prefix, reads_ipv4_cidr_into_a_v4_mapped_address_with_a_v4_length) {
    const auto prefix = parse_ip_prefix("10.0.0.1/24");
    ASSERT_TRUE(prefix);
    EXPECT_FALSE(prefix->v6);
    EXPECT_TRUE(prefix->address.is_v4_mapped());
    EXPECT_EQ(prefix->address.v4(), 0x0a000001u);
    EXPECT_EQ(prefix->length, 24u);
    EXPECT_EQ(prefix->to_string(), "10.0.0.1/24");
}

TEST(parse_ip_prefix, reads_ipv6_cidr) {
    const auto prefix = parse_ip_prefix("fd00::1/64");
    ASSERT_TRUE(prefix);
    EXPECT_TRUE(prefix->v6);
    EXPECT_EQ(prefix->length, 64u);
    EXPECT_EQ(prefix->to_string(), "fd00::1/64");
    EXPECT_EQ(prefix->host_prefix().to_string(), "fd00::1/128");
}

TEST(parse_ip_prefix, rejects_missing_or_out_of_range_lengths_and_bad_addresses) {
    for (const char* text : {"10.0.0.1", "10.0.0.1/33", "10.0.0.1/", "10.0.0.1/024", "10.0.0.1/2x", "10.0.0/24",
                             "10.0.0.256/24", "fd00::1/129", "fd00:::1/64", "::ffff:10.0.0.1/120", "/24", "host/24"})
        EXPECT_FALSE(parse_ip_prefix(text)) << text;
}

TEST(ip_prefix, contains_compares_only_the_prefix_bits) {
    const auto net = *parse_ip_prefix("10.0.0.1/23");
    EXPECT_TRUE(net.contains(wire::ipv6_address::v4_mapped(0x0a000164)));  // 10.0.1.100
    EXPECT_FALSE(net.contains(wire::ipv6_address::v4_mapped(0x0a000264))); // 10.0.2.100
    const auto host = net.host_prefix();
    EXPECT_EQ(host.length, 32u);
    EXPECT_TRUE(host.contains(net.address));
    EXPECT_FALSE(host.contains(wire::ipv6_address::v4_mapped(0x0a000002)));

    const auto v6 = *parse_ip_prefix("fd00:1::5/64");
    wire::ipv6_address inside, outside;
    ASSERT_TRUE(wire::ipv6_address::parse("fd00:1::ffff:1", inside));
    ASSERT_TRUE(wire::ipv6_address::parse("fd00:2::1", outside));
    EXPECT_TRUE(v6.contains(inside));
    EXPECT_FALSE(v6.contains(outside));
}

TEST(ip_prefix, an_ipv4_prefix_never_contains_a_native_ipv6_address) {
    const auto everything_v4 = *parse_ip_prefix("0.0.0.0/0");
    wire::ipv6_address v6;
    ASSERT_TRUE(wire::ipv6_address::parse("fd00::1", v6));
    EXPECT_FALSE(everything_v4.contains(v6));
    EXPECT_TRUE(everything_v4.contains(wire::ipv6_address::v4_mapped(0x01020304)));
}

} // namespace
} // namespace rocefab::config
