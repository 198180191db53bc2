// Stage 3, route: longest-prefix match on the destination address, an ECMP member chosen by a
// hash of the flow, TTL / hop limit, the egress MTU, and the L2 rewrite towards the next hop.
#pragma once

#include "dataplane/packet.hpp"
#include "dataplane/wire/ip.hpp"
#include "switch_emu/adaptive_routing.hpp"
#include "switch_emu/parse.hpp"
#include "switch_emu/switch_spec.hpp"

#include <array>
#include <cstdint>
#include <cstring>
#include <span>
#include <vector>

namespace rocefab::switch_emu {

// A route as the data path sees it: its next hops, numbered [first, first + count) in the
// order the routes list them (route_table::ports, router::hop_rewrite).
struct route_group {
    std::uint32_t first = 0;
    std::uint32_t count = 0;
    bool adaptive = false; // an adaptive-routing group (adaptive_routing.hpp)
};

// IPv4 longest-prefix match as DIR-24-8 (Gupta, Lin and McKeown, INFOCOM 1998), the layout of
// DPDK's rte_lpm: a first table with one entry for each of the 2^24 /24s, indexed by the top 24
// bits of the address, holding the route of the longest prefix of at most 24 bits that covers
// it, or, where a longer prefix lies inside that /24, the number of a 256-entry second-level
// block indexed by the last byte. A lookup is one load, or two for an address inside a prefix
// longer than /24, whatever the destination: no state is kept between lookups.
//
// Not rte_lpm itself: it takes its 64 MiB first table from the EAL's heap and zeroes it, which
// with --no-huge is a fixed-size region (eal_options::memory_mb) that a few switches would
// exhaust, and it would make every switch resident for the whole table. Here the table is an
// anonymous mapping: a page costs memory only once a route has been written into it, so a
// switch pays 4 bytes per /24 its prefixes cover (4 KiB pages, or 2 MiB ones where transparent
// huge pages are on), and a /0 route is kept aside rather than written into all 2^24 entries.
class ipv4_lpm {
public:
    // Prefix `i` of `prefixes` (host order, host bits clear) has length `lengths[i]` and
    // leads to group `i`; each (prefix, length) at most once. Throws std::bad_alloc when the
    // table cannot be mapped.
    ipv4_lpm(std::span<const std::uint32_t> prefixes, std::span<const std::uint8_t> lengths,
             std::span<const std::int32_t> groups);
    ipv4_lpm(ipv4_lpm&& other) noexcept;
    ipv4_lpm& operator=(ipv4_lpm&&) = delete;
    ipv4_lpm(const ipv4_lpm&) = delete;
    ~ipv4_lpm();

    // The group of the longest prefix covering `address` (host order), or -1.
    std::int32_t lookup(std::uint32_t address) const {
        std::uint32_t entry = _first[address >> 8];
        if (entry & second_level) [[unlikely]]
            entry = _second[(entry & ~second_level) << 8 | (address & 0xffu)];
        return entry == 0 ? _default_group : static_cast<std::int32_t>(entry - 1);
    }

    static constexpr std::size_t first_level_entries = std::size_t(1) << 24;

private:
    // An entry: 0 when no prefix of the level's reach covers it (the /0 route applies, if
    // any), else the group + 1; in the first level, with second_level set, a block number.
    static constexpr std::uint32_t second_level = 0x8000'0000u;
    std::uint32_t* _first = nullptr;    // first_level_entries, mapped
    std::vector<std::uint32_t> _second; // blocks of 256
    std::int32_t _default_group = -1;
};

// Longest-prefix match over IPv4 and IPv6, built once at construction: IPv4 in a DIR-24-8 table
// (ipv4_lpm), IPv6 in a multibit trie with a stride of 8 bits in flat arrays. A trie node is 256
// entries, one per value of the next address byte; a prefix ending inside that byte is expanded
// over every entry it covers (a /26 fills 64), and an entry keeps the longest prefix that reached
// it. An IPv6 lookup is one array load per address byte, at most 16. Neither allocates.
class route_table {
public:
    // `routes` must have passed validate().
    explicit route_table(const std::vector<route_spec>& routes);

    // nullptr when no prefix covers the address. `destination` points at 4 (IPv4) or 16 (IPv6)
    // bytes in network order, as they sit in the header.
    const route_group* lookup_v4(const std::uint8_t* destination) const {
        wire::be32 address;
        std::memcpy(&address, destination, sizeof address);
        return lookup_v4(address);
    }
    // The IPv4 header's field as it is: one load and a byte swap.
    const route_group* lookup_v4(wire::be32 destination) const { return group(_v4.lookup(destination.load())); }
    const route_group* lookup_v6(const std::uint8_t* destination) const { return group(lookup(_v6, destination)); }
    std::span<const std::uint16_t> ports(const route_group& group) const { return {&_ports[group.first], group.count}; }
    // Marks the groups whose ports `is_adaptive(std::span<const std::uint16_t>)` accepts.
    template <typename Predicate> void mark_adaptive(Predicate&& is_adaptive) {
        for (route_group& group : _groups) group.adaptive = is_adaptive(ports(group));
    }

private:
    struct trie_entry {
        std::int32_t child = -1; // the node for the next byte, or -1
        std::int32_t group = -1; // index into _groups of the longest prefix covering this entry, or -1
        std::uint8_t length = 0; // that prefix's length
    };
    // Node n is entries [256 n, 256 n + 256); node 0 is the root. A /0 route is kept aside.
    struct trie {
        std::vector<trie_entry> entries = std::vector<trie_entry>(256);
        std::int32_t default_group = -1;
    };

    static ipv4_lpm build_v4(const std::vector<route_spec>& routes);
    static void insert(trie& t, const std::uint8_t* key, unsigned length, std::int32_t group);
    static std::int32_t lookup(const trie& t, const std::uint8_t* key) {
        std::int32_t best = t.default_group;
        std::size_t node = 0;
        for (unsigned level = 0; level < 16; ++level) {
            const trie_entry& e = t.entries[node * 256 + key[level]];
            if (e.group >= 0) best = e.group; // deeper entries hold longer prefixes
            if (e.child < 0) break;
            node = static_cast<std::size_t>(e.child);
        }
        return best;
    }
    const route_group* group(std::int32_t index) const {
        return index < 0 ? nullptr : &_groups[static_cast<std::size_t>(index)];
    }

    ipv4_lpm _v4;
    trie _v6;
    std::vector<route_group> _groups;
    std::vector<std::uint16_t> _ports; // each next hop's port, by next-hop index, the routes' order
};

enum class route_verdict : std::uint8_t { forward, no_route, ttl_expired, mtu_exceeded };

// The ECMP hash over the 5-tuple: source and destination address, protocol, UDP source and
// destination port. For RoCEv2 the UDP source port is the flow's entropy (IBA A17.3.1), so
// queue pairs between the same two hosts spread over the group. Exposed for tests and for
// `rocefab` to explain a path.
std::uint32_t flow_hash(rte_mbuf* frame, const parsed_frame& parsed, std::uint32_t seed);

class router {
public:
    // `spec` must have passed validate().
    explicit router(const switch_spec& spec);

    // `parsed` is what parse_frame() found in `frame` (parse_verdict::ip), which is what makes
    // reading its L3 header here safe without checking the length again.
    // On forward: `egress` is the chosen port, TTL / hop limit is decremented (the IPv4
    // checksum updated incrementally, wire::ipv4_header::decrement_ttl) and the MACs rewritten.
    // On mtu_exceeded `egress` is set too, so the drop can be counted on the port whose MTU was
    // exceeded. Otherwise the frame is untouched. A RoCE packet on an adaptive-routing group
    // goes where adaptive() chooses; the caller regrades it first (adaptive_routing::regrade_if_due).
    // Inline: every routed frame takes it; only the choice within an ECMP group is not.
    route_verdict route(rte_mbuf* frame, const parsed_frame& parsed, std::uint16_t& egress) {
        if (parsed.v6) [[unlikely]]
            return route_v6(frame, parsed, egress);
        auto* ip = rte_pktmbuf_mtod_offset(frame, wire::ipv4_header*, parsed.l3_offset);
        const route_group* group = _table.lookup_v4(ip->destination);
        if (!group) return route_verdict::no_route;
        const hop_rewrite* hop = next_hop(frame, parsed, *group, ip->ttl, egress);
        if (!hop) return route_verdict::ttl_expired;
        if (parsed.l3_length > hop->mtu) return route_verdict::mtu_exceeded;
        ip->decrement_ttl();
        rewrite_macs(frame, *hop);
        return route_verdict::forward;
    }

    adaptive_routing& adaptive() { return _adaptive; }
    // Packets adaptive routing sent to another member than their ECMP hash chose.
    std::uint64_t rerouted() const { return _rerouted; }

private:
    // The member of an ECMP group (more than one) the frame takes: by its flow hash, or for RoCE
    // on an adaptive-routing group, by adaptive().
    std::uint32_t choose_member(rte_mbuf* frame, const parsed_frame& parsed, const route_group& group);
    route_verdict route_v6(rte_mbuf* frame, const parsed_frame& parsed, std::uint16_t& egress);

    // Everything forwarding through one next hop needs, in one place: per frame, route() reads
    // one of these after the lookup rather than three tables in turn.
    struct hop_rewrite {
        // The next hop's MAC, then the egress port's: the Ethernet header's first 12 bytes as
        // the frame leaves, written with one copy.
        std::array<std::uint8_t, 2 * sizeof(wire::mac_address)> macs{};
        std::uint16_t port = 0;
        std::uint32_t mtu = 0; // the egress port's
    };

    // The group's member the frame takes, with `egress` set to its port; nullptr when the TTL
    // (hop limit) `ttl` would not stay positive after the decrement (RFC 1812 5.3.1).
    const hop_rewrite* next_hop(rte_mbuf* frame, const parsed_frame& parsed, const route_group& group, std::uint8_t ttl,
                                std::uint16_t& egress) {
        const hop_rewrite& hop = _rewrites[group.first + (group.count > 1 ? choose_member(frame, parsed, group) : 0)];
        if (ttl <= 1) return nullptr;
        egress = hop.port;
        return &hop;
    }
    static void rewrite_macs(rte_mbuf* frame, const hop_rewrite& hop) {
        std::memcpy(rte_pktmbuf_mtod(frame, wire::ethernet_header*), hop.macs.data(), hop.macs.size());
    }

    route_table _table;
    adaptive_routing _adaptive;
    std::uint64_t _rerouted = 0;
    std::vector<hop_rewrite> _rewrites; // by next-hop index: route_group::first + member
    std::uint32_t _ecmp_seed;
};

} // namespace rocefab::switch_emu
