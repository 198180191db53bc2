#include "switch_emu/switch_spec.hpp"

#include <set>
#include <utility>

namespace rocefab::switch_emu {
namespace {

constexpr std::uint32_t min_ipv4_mtu = 68; // RFC 791
constexpr std::uint32_t max_queue_frames = 1u << 20;

std::string describe(const route_spec& route) {
    const std::string address = route.v6 ? route.prefix.to_string() : wire::ipv4_to_string(route.prefix.v4());
    return address + "/" + std::to_string(route.length);
}

bool host_bits_clear(const std::uint8_t* key, unsigned length, unsigned bits) {
    for (unsigned i = length; i < bits; ++i)
        if ((key[i / 8] >> (7 - i % 8)) & 1u) return false;
    return true;
}

} // namespace

std::string validate(const switch_spec& spec) {
    const std::string where = "switch " + spec.name + ": ";
    if (spec.ports.empty()) return where + "has no ports";
    if (spec.ports.size() > 0xffff) return where + "has more than 65535 ports";
    std::set<std::string> names;
    for (std::size_t i = 0; i < spec.ports.size(); ++i) {
        const port_spec& port = spec.ports[i];
        const std::string what = where + "port " + std::to_string(i) + " (" + port.name + ") ";
        if (port.name.empty()) return where + "port " + std::to_string(i) + " has no name";
        if (!names.insert(port.name).second) return what + "has the same name as an earlier port";
        if (port.mac.is_multicast()) return what + "has a multicast MAC " + port.mac.to_string();
        if (port.speed_bps == 0) return what + "has speed 0; give it in bits per second, e.g. 100000000000";
        if (port.mtu < min_ipv4_mtu) return what + "has MTU " + std::to_string(port.mtu) + "; the least is 68";
    }

    std::set<std::pair<bool, std::pair<wire::ipv6_address, unsigned>>> prefixes;
    for (const route_spec& route : spec.routes) {
        const std::string what = where + "route " + describe(route) + " ";
        if (!route.v6 && !route.prefix.is_v4_mapped())
            return what + "is IPv4 (v6 = false) but its prefix is not v4-mapped (::ffff:a.b.c.d)";
        const unsigned bits = route.v6 ? 128 : 32;
        if (route.length > bits) return what + "has a prefix length over " + std::to_string(bits);
        const std::uint8_t* key = route.prefix.bytes.data() + (route.v6 ? 0 : 12);
        if (!host_bits_clear(key, route.length, bits)) return what + "has bits set past its prefix length";
        if (!prefixes.insert({route.v6, {route.prefix, route.length}}).second) return what + "is given twice";
        if (route.ports.empty()) return what + "has no ports";
        if (route.next_hop_macs.size() != route.ports.size())
            return what + "has " + std::to_string(route.ports.size()) + " ports but " +
                   std::to_string(route.next_hop_macs.size()) + " next-hop MACs; give one per port";
        for (std::uint16_t port : route.ports)
            if (port >= spec.ports.size())
                return what + "uses port " + std::to_string(port) + "; the switch has ports 0.." +
                       std::to_string(spec.ports.size() - 1);
    }

    for (const neighbour_spec& n : spec.neighbours) {
        if (n.port >= spec.ports.size())
            return where + "neighbour " + n.mac.to_string() + " is behind port " + std::to_string(n.port) +
                   "; the switch has ports 0.." + std::to_string(spec.ports.size() - 1);
        if (n.mac.is_multicast()) return where + "neighbour " + n.mac.to_string() + " is a multicast MAC";
    }

    const adaptive_routing_spec& ar = spec.adaptive_routing;
    if (ar.link_utilization_threshold_percent < 1 || ar.link_utilization_threshold_percent > 100)
        return where + "adaptive routing's link-utilization threshold must be 1..100 %";
    if (ar.decision_interval <= 0) return where + "adaptive routing's decision interval must be positive";
    if (spec.buffer_alpha <= 0) return where + "buffer alpha must be positive";

    if (spec.buffer_bytes == 0) return where + "has a buffer of 0 bytes";
    if (spec.queue_frames == 0 || spec.queue_frames > max_queue_frames)
        return where + "queue_frames must be 1.." + std::to_string(max_queue_frames);
    const qos_spec& qos = spec.qos;
    for (std::size_t dscp = 0; dscp < qos.dscp_to_priority.size(); ++dscp)
        if (qos.dscp_to_priority[dscp] >= traffic_class_count)
            return where + "DSCP " + std::to_string(dscp) + " maps to priority " +
                   std::to_string(qos.dscp_to_priority[dscp]) + "; priorities are 0..7";
    if (qos.default_priority >= traffic_class_count) return where + "default priority must be 0..7";
    for (std::size_t priority = 0; priority < traffic_class_count; ++priority)
        if (qos.priority_to_tc[priority] >= traffic_class_count)
            return where + "priority " + std::to_string(priority) + " maps to traffic class " +
                   std::to_string(qos.priority_to_tc[priority]) + "; traffic classes are 0..7";
    for (std::size_t tc = 0; tc < traffic_class_count; ++tc) {
        const congestion_spec& c = qos.congestion[tc];
        if (!c.enabled) continue;
        const std::string which = where + "traffic class " + std::to_string(tc) + " congestion control: ";
        if (c.min_bytes >= c.max_bytes)
            return which + "min " + std::to_string(c.min_bytes) + " B must be below max " +
                   std::to_string(c.max_bytes) + " B";
        if (c.probability_percent > 100)
            return which + "probability " + std::to_string(c.probability_percent) + " %; it is 0..100";
    }
    unsigned shares = 0;
    for (std::size_t tc = 0; tc < traffic_class_count; ++tc) {
        if (qos.ets.mode[tc] != tc_mode::dwrr) continue;
        if (qos.ets.bandwidth_percent[tc] > 100)
            return where + "traffic class " + std::to_string(tc) + " has a bandwidth share of " +
                   std::to_string(qos.ets.bandwidth_percent[tc]) + " %; shares are 0..100";
        shares += qos.ets.bandwidth_percent[tc];
    }
    if (shares > 100)
        return where + "the DWRR traffic classes share " + std::to_string(shares) + " % of the port; at most 100";
    return {};
}

} // namespace rocefab::switch_emu
