#include "switch_emu/route.hpp"

#include "dataplane/wire/ip.hpp"
#include "dataplane/wire/udp.hpp"

#include <algorithm>
#include <cstring>
#include <new>
#include <numeric>
#include <sys/mman.h>
#include <utility>

namespace rocefab::switch_emu {
namespace {

// MurmurHash3's 32-bit block mix and finaliser: cheap, and every input bit reaches every
// output bit, so flows differing only in the low bits of a UDP port still spread.
constexpr std::uint32_t mix(std::uint32_t h, std::uint32_t k) {
    k *= 0xcc9e2d51u;
    k = (k << 15) | (k >> 17);
    k *= 0x1b873593u;
    h ^= k;
    h = (h << 13) | (h >> 19);
    return h * 5 + 0xe6546b64u;
}

constexpr std::uint32_t finalise(std::uint32_t h) {
    h ^= h >> 16;
    h *= 0x85ebca6bu;
    h ^= h >> 13;
    h *= 0xc2b2ae35u;
    h ^= h >> 16;
    return h;
}

std::uint32_t mix_bytes(std::uint32_t h, const std::uint8_t* bytes, std::size_t length) {
    for (std::size_t i = 0; i + 4 <= length; i += 4) {
        std::uint32_t word;
        std::memcpy(&word, bytes + i, sizeof word);
        h = mix(h, word);
    }
    return h;
}

} // namespace

ipv4_lpm::ipv4_lpm(std::span<const std::uint32_t> prefixes, std::span<const std::uint8_t> lengths,
                   std::span<const std::int32_t> groups) {
    void* mapped = ::mmap(nullptr, first_level_entries * sizeof(std::uint32_t), PROT_READ | PROT_WRITE,
                          MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (mapped == MAP_FAILED) throw std::bad_alloc();
    _first = static_cast<std::uint32_t*>(mapped); // zero: no prefix covers any /24 yet
    // Shorter prefixes first, so that a longer one overwrites what it covers and an entry ends
    // up with the longest: no prefix length needs keeping per entry. A second-level block
    // starts as a copy of the entry it replaces, the longest prefix of 24 bits or fewer, which
    // the order guarantees is already final.
    std::vector<std::size_t> order(prefixes.size());
    std::iota(order.begin(), order.end(), std::size_t(0));
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return lengths[a] < lengths[b]; });
    for (const std::size_t i : order) {
        const std::uint32_t prefix = prefixes[i];
        const unsigned length = lengths[i];
        const auto entry = static_cast<std::uint32_t>(groups[i] + 1);
        if (length == 0) {
            _default_group = groups[i];
        } else if (length <= 24) {
            const std::size_t first = prefix >> 8;
            std::fill_n(_first + first, std::size_t(1) << (24 - length), entry);
        } else {
            std::uint32_t& top = _first[prefix >> 8];
            if (!(top & second_level)) {
                const auto block = static_cast<std::uint32_t>(_second.size() / 256);
                _second.resize(_second.size() + 256, top);
                top = second_level | block;
            }
            const std::size_t first = std::size_t(top & ~second_level) << 8 | (prefix & 0xffu);
            std::fill_n(_second.begin() + static_cast<std::ptrdiff_t>(first), std::size_t(1) << (32 - length), entry);
        }
    }
}

ipv4_lpm::ipv4_lpm(ipv4_lpm&& other) noexcept
    : _first(std::exchange(other._first, nullptr)), _second(std::move(other._second)),
      _default_group(other._default_group) {}

ipv4_lpm::~ipv4_lpm() {
    if (_first) ::munmap(_first, first_level_entries * sizeof(std::uint32_t));
}

route_table::route_table(const std::vector<route_spec>& routes) : _v4(build_v4(routes)) {
    for (const auto& route : routes) {
        const auto group = static_cast<std::int32_t>(_groups.size());
        _groups.push_back({static_cast<std::uint32_t>(_ports.size()), static_cast<std::uint32_t>(route.ports.size())});
        _ports.insert(_ports.end(), route.ports.begin(), route.ports.end());
        if (route.v6) insert(_v6, route.prefix.bytes.data(), route.length, group);
    }
}

ipv4_lpm route_table::build_v4(const std::vector<route_spec>& routes) {
    std::vector<std::uint32_t> prefixes;
    std::vector<std::uint8_t> lengths;
    std::vector<std::int32_t> groups;
    for (std::size_t i = 0; i < routes.size(); ++i) {
        if (routes[i].v6) continue;
        prefixes.push_back(routes[i].prefix.v4()); // the a.b.c.d of ::ffff:a.b.c.d
        lengths.push_back(static_cast<std::uint8_t>(routes[i].length));
        groups.push_back(static_cast<std::int32_t>(i)); // groups are numbered as the routes are listed
    }
    return ipv4_lpm(prefixes, lengths, groups);
}

void route_table::insert(trie& t, const std::uint8_t* key, unsigned length, std::int32_t group) {
    if (length == 0) {
        t.default_group = group;
        return;
    }
    // Whole bytes lead down to the node of the last byte the prefix touches.
    const unsigned last = (length - 1) / 8;
    std::size_t node = 0;
    for (unsigned level = 0; level < last; ++level) {
        const std::size_t at = node * 256 + key[level];
        if (t.entries[at].child < 0) {
            t.entries[at].child = static_cast<std::int32_t>(t.entries.size() / 256);
            t.entries.resize(t.entries.size() + 256); // may reallocate: index, never hold a reference
        }
        node = static_cast<std::size_t>(t.entries[at].child);
    }
    // The prefix fixes the top `fixed` bits of the last byte and covers every value of the rest.
    const unsigned fixed = length - 8 * last;
    const unsigned first = key[last] & (0xffu << (8 - fixed)) & 0xffu;
    for (unsigned value = first; value < first + (1u << (8 - fixed)); ++value) {
        trie_entry& e = t.entries[node * 256 + value];
        if (e.group < 0 || e.length <= length) {
            e.group = group;
            e.length = static_cast<std::uint8_t>(length);
        }
    }
}

std::uint32_t flow_hash(rte_mbuf* frame, const parsed_frame& parsed, std::uint32_t seed) {
    std::uint32_t h = seed;
    if (parsed.v6) {
        const auto* ip = header_at<wire::ipv6_header>(frame, parsed.l3_offset);
        if (ip) {
            h = mix_bytes(h, ip->source.bytes.data(), 16);
            h = mix_bytes(h, ip->destination.bytes.data(), 16);
        }
    } else {
        const auto* ip = header_at<wire::ipv4_header>(frame, parsed.l3_offset);
        if (ip) {
            h = mix(h, ip->source.raw());
            h = mix(h, ip->destination.raw());
        }
    }
    h = mix(h, parsed.protocol);
    h = mix(h, std::uint32_t(parsed.source_port) << 16 | parsed.destination_port);
    return finalise(h);
}

router::router(const switch_spec& spec) : _table(spec.routes), _adaptive(spec), _ecmp_seed(spec.ecmp_seed) {
    // The table numbers next hops as the routes list them, route by route.
    for (const auto& route : spec.routes)
        for (std::size_t i = 0; i < route.ports.size(); ++i) {
            const port_spec& port = spec.ports[route.ports[i]];
            hop_rewrite hop{{}, route.ports[i], port.mtu};
            std::memcpy(hop.macs.data(), route.next_hop_macs[i].bytes.data(), sizeof(wire::mac_address));
            std::memcpy(hop.macs.data() + sizeof(wire::mac_address), port.mac.bytes.data(), sizeof(wire::mac_address));
            _rewrites.push_back(hop);
        }
    _table.mark_adaptive([this](std::span<const std::uint16_t> ports) { return _adaptive.eligible_group(ports); });
}

route_verdict router::route_v6(rte_mbuf* frame, const parsed_frame& parsed, std::uint16_t& egress) {
    auto* ip = rte_pktmbuf_mtod_offset(frame, wire::ipv6_header*, parsed.l3_offset);
    const route_group* group = _table.lookup_v6(ip->destination.bytes.data());
    if (!group) return route_verdict::no_route;
    const hop_rewrite* hop = next_hop(frame, parsed, *group, ip->hop_limit, egress);
    if (!hop) return route_verdict::ttl_expired;
    if (parsed.l3_length > hop->mtu) return route_verdict::mtu_exceeded;
    --ip->hop_limit;
    rewrite_macs(frame, *hop);
    return route_verdict::forward;
}

std::uint32_t router::choose_member(rte_mbuf* frame, const parsed_frame& parsed, const route_group& group) {
    // Multiply-shift instead of modulo: no division, and no bias worth measuring for group
    // sizes far below 2^32.
    const auto hashed =
        static_cast<std::uint32_t>((std::uint64_t(flow_hash(frame, parsed, _ecmp_seed)) * group.count) >> 32);
    const bool roce = parsed.protocol == wire::ip_protocol::udp && parsed.destination_port == wire::roce_v2_udp_port;
    if (!group.adaptive || !roce) return hashed;
    const std::uint32_t member = _adaptive.choose(_table.ports(group), hashed, rte_pktmbuf_pkt_len(frame));
    _rerouted += member != hashed;
    return member;
}

} // namespace rocefab::switch_emu
