// The multibit trie against the definition of longest-prefix match: for random route tables and
// random addresses, the group found is the one a scan of every prefix picks.
#include "switch_emu/route.hpp"

#include <gtest/gtest.h>

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

void check_random_table(bool v6, unsigned seed) {
    std::mt19937 random(seed);
    const unsigned bits = v6 ? 128 : 32;
    // Addresses drawn near each other (a few fixed leading bytes) so that prefixes overlap.
    auto random_address = [&] {
        wire::ipv6_address a = v6 ? wire::ipv6_address{} : wire::ipv6_address::v4_mapped(0);
        std::uint8_t* key = a.bytes.data() + (v6 ? 0 : 12);
        key[0] = 10;
        for (unsigned i = 1; i < bits / 8; ++i) key[i] = static_cast<std::uint8_t>(random() % (i < 2 ? 2 : 256));
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

TEST(route_table, ipv6_lookups_agree_with_a_scan_for_the_longest_prefix) {
    for (unsigned seed = 1; seed <= 5; ++seed) check_random_table(true, seed);
}

} // namespace
} // namespace rocefab::switch_emu
