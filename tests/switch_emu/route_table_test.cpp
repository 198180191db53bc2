// The route table against the definition of longest-prefix match: for random route tables and
// random addresses, the group found is the one a scan of every prefix picks (IPv4's DIR-24-8
// table and IPv6's trie alike); and IPv4's table on the overlaps its two levels split: prefixes
// up to /24 in the first, longer ones in a block of the second that starts from the first.
#include "switch_emu/route.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <random>
#include <set>

namespace rocefab::switch_emu {
namespace {

bool covers(const route_spec& r, const std::uint8_t* address, unsigned bits) {
    const std::uint8_t* prefix = r.prefix.bytes.data() + (bits == 32 ? 12 : 0);
    for (unsigned i = 0; i < r.length; ++i) {
        const unsigned bit = 7 - i % 8;
        if (((prefix[i / 8] >> bit) & 1u) != ((address[i / 8] >> bit) & 1u)) return false;
    }
    return true;
}

// The index of the longest route covering `address`, or -1.
int longest_match(const std::vector<route_spec>& routes, const std::uint8_t* address, unsigned bits) {
    int best = -1;
    for (std::size_t i = 0; i < routes.size(); ++i)
        if (covers(routes[i], address, bits) &&
            (best < 0 || routes[i].length > routes[static_cast<std::size_t>(best)].length))
            best = static_cast<int>(i);
    return best;
}

// `values[i]`: how many values address byte i takes (the rest are 0), from 1 up; byte 0 is 10.
void check_random_table(bool v6, unsigned seed, std::array<unsigned, 4> values = {1, 2, 256, 256}) {
    std::mt19937 random(seed);
    const unsigned bits = v6 ? 128 : 32;
    // Addresses drawn near each other (a few fixed leading bytes) so that prefixes overlap.
    auto random_address = [&] {
        wire::ipv6_address a = v6 ? wire::ipv6_address{} : wire::ipv6_address::v4_mapped(0);
        std::uint8_t* key = a.bytes.data() + (v6 ? 0 : 12);
        key[0] = 10;
        for (unsigned i = 1; i < bits / 8; ++i)
            key[i] = static_cast<std::uint8_t>(random() % (i < values.size() ? values[i] : 256));
        return a;
    };
    std::vector<route_spec> routes;
    std::set<std::pair<wire::ipv6_address, unsigned>> seen;
    for (int i = 0; i < 200; ++i) {
        wire::ipv6_address prefix = random_address();
        const unsigned length = static_cast<unsigned>(random() % (bits + 1));
        std::uint8_t* key = prefix.bytes.data() + (v6 ? 0 : 12);
        for (unsigned b = length; b < bits; ++b) key[b / 8] &= static_cast<std::uint8_t>(~(0x80u >> (b % 8)));
        if (!seen.insert({prefix, length}).second) continue;
        routes.push_back({prefix, length, v6, {static_cast<std::uint16_t>(routes.size() % 7)}, {wire::mac_address{}}});
    }
    const route_table table(routes);
    for (int i = 0; i < 5'000; ++i) {
        const wire::ipv6_address address = random_address();
        const std::uint8_t* key = address.bytes.data() + (v6 ? 0 : 12);
        const int expected = longest_match(routes, key, bits);
        const route_group* found = v6 ? table.lookup_v6(key) : table.lookup_v4(key);
        ASSERT_EQ(found != nullptr, expected >= 0) << address.to_string();
        if (!found) continue;
        // Groups are numbered in route order; each holds one next hop.
        EXPECT_EQ(found->first, static_cast<std::uint32_t>(expected)) << address.to_string();
    }
}

TEST(route_table, ipv4_lookups_agree_with_a_scan_for_the_longest_prefix) {
    for (unsigned seed = 1; seed <= 5; ++seed) check_random_table(false, seed);
}

// Few /24s, so that most addresses fall in one with a second-level block, and prefixes longer
// than /24 overlap each other and the shorter ones the block was copied from.
TEST(route_table, ipv4_lookups_agree_with_a_scan_where_prefixes_longer_than_24_bits_crowd) {
    for (unsigned seed = 1; seed <= 5; ++seed) check_random_table(false, seed, {1, 1, 4, 256});
}

std::uint32_t ipv4(const char* text) {
    std::uint32_t a = 0;
    EXPECT_TRUE(wire::parse_ipv4(text, a)) << text;
    return a;
}

route_spec v4_route(const char* prefix, unsigned length, std::uint16_t port) {
    return {wire::ipv6_address::v4_mapped(ipv4(prefix)), length, false, {port}, {wire::mac_address{}}};
}

// The port of the route `table` finds for `address`, or -1 when none covers it.
int port_for(const route_table& table, const char* address) {
    const wire::ipv6_address a = wire::ipv6_address::v4_mapped(ipv4(address));
    const route_group* group = table.lookup_v4(a.bytes.data() + 12);
    return group ? table.ports(*group)[0] : -1;
}

TEST(route_table, the_longest_of_nested_ipv4_prefixes_wins_whatever_the_order_they_are_listed_in) {
    std::vector<route_spec> routes = {
        v4_route("10.1.2.3", 32, 32), v4_route("10.0.0.0", 8, 8),   v4_route("10.1.2.0", 25, 25),
        v4_route("0.0.0.0", 0, 0),    v4_route("10.1.2.0", 24, 24), v4_route("10.1.2.0", 30, 30),
        v4_route("10.1.0.0", 16, 16), v4_route("10.1.2.2", 31, 31), v4_route("10.1.2.0", 28, 28),
    };
    for (int round = 0; round < 2; ++round) {
        const route_table table(routes);
        EXPECT_EQ(port_for(table, "10.1.2.3"), 32);
        EXPECT_EQ(port_for(table, "10.1.2.2"), 31);
        EXPECT_EQ(port_for(table, "10.1.2.1"), 30);
        EXPECT_EQ(port_for(table, "10.1.2.4"), 28);
        EXPECT_EQ(port_for(table, "10.1.2.16"), 25);
        EXPECT_EQ(port_for(table, "10.1.2.128"), 24);
        EXPECT_EQ(port_for(table, "10.1.3.1"), 16);
        EXPECT_EQ(port_for(table, "10.2.0.1"), 8);
        EXPECT_EQ(port_for(table, "11.0.0.0"), 0);
        EXPECT_EQ(port_for(table, "255.255.255.255"), 0);
        std::reverse(routes.begin(), routes.end());
    }
}

TEST(route_table, an_address_no_ipv4_prefix_covers_has_no_route_unless_there_is_a_default) {
    const route_table without({v4_route("10.0.0.0", 8, 1), v4_route("10.9.9.128", 25, 2)});
    EXPECT_EQ(port_for(without, "9.255.255.255"), -1);
    EXPECT_EQ(port_for(without, "0.0.0.0"), -1);
    EXPECT_EQ(port_for(without, "10.9.9.127"), 1);
    EXPECT_EQ(port_for(without, "10.9.9.128"), 2);
    const route_table with_default({v4_route("0.0.0.0", 0, 7), v4_route("10.9.9.128", 25, 2)});
    EXPECT_EQ(port_for(with_default, "0.0.0.0"), 7);
    EXPECT_EQ(port_for(with_default, "10.9.9.127"), 7); // the block of 10.9.9.0/24 starts from /0
    EXPECT_EQ(port_for(with_default, "10.9.9.255"), 2);
    EXPECT_EQ(port_for(with_default, "255.255.255.255"), 7);
    EXPECT_EQ(port_for(route_table({}), "10.0.0.1"), -1);
}

// A /24 or shorter prefix listed after a longer one inside it must not overwrite the longer
// one's block, and the block must keep the shorter one's route for the rest of its /24.
TEST(route_table, prefixes_of_25_to_32_bits_keep_their_addresses_from_a_shorter_prefix_around_them) {
    const route_table table({v4_route("10.0.0.64", 26, 26), v4_route("10.0.0.5", 32, 32), v4_route("10.0.0.0", 24, 24),
                             v4_route("10.0.0.0", 23, 23), v4_route("10.0.1.0", 27, 27)});
    EXPECT_EQ(port_for(table, "10.0.0.5"), 32);
    EXPECT_EQ(port_for(table, "10.0.0.4"), 24);
    EXPECT_EQ(port_for(table, "10.0.0.64"), 26);
    EXPECT_EQ(port_for(table, "10.0.0.127"), 26);
    EXPECT_EQ(port_for(table, "10.0.0.128"), 24);
    EXPECT_EQ(port_for(table, "10.0.1.31"), 27);
    EXPECT_EQ(port_for(table, "10.0.1.32"), 23);
    EXPECT_EQ(port_for(table, "10.0.2.0"), -1);
}

TEST(route_table, ipv6_lookups_agree_with_a_scan_for_the_longest_prefix) {
    for (unsigned seed = 1; seed <= 5; ++seed) check_random_table(true, seed);
}

} // namespace
} // namespace rocefab::switch_emu
