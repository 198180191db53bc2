// A switch's `buffer:` (switch_emu's shared pool and Spectrum's dynamic threshold), `adaptive-routing:` (NVUE's
// router adaptive-routing) and `routes:` (static routes out of named ports).
#include "control/config/sections/sections.hpp"

#include "control/config/units.hpp"

#include <algorithm>
#include <cmath>

namespace rocefab::config::sections {
namespace {

// One of Spectrum's dynamic-threshold alphas, 2^-7 .. 2^6, written as a number (0.5) or a fraction (1/2).
std::optional<double> parse_alpha(const std::string& text) {
    if (text.find('%') != std::string::npos) return std::nullopt; // parse_probability would take it
    std::optional<double> value;
    if (const auto slash = text.find('/'); slash != std::string::npos) {
        const auto over = parse_probability(text.substr(0, slash)), under = parse_probability(text.substr(slash + 1));
        if (over && under && *under > 0) value = *over / *under;
    } else {
        value = parse_probability(text);
    }
    for (int n = -7; n <= 6 && value; ++n)
        if (*value == std::ldexp(1.0, n)) return value;
    return std::nullopt;
}

// The port of switch `s` called by the scalar `node`, or an error listing the switch's ports.
std::size_t expect_port(const yaml_reader& reader, const YAML::Node& node, const std::string& path, const topology& out,
                        std::size_t s) {
    const std::string name = reader.expect_scalar(node, path, "swp1");
    const auto& ports = out.switches[s].ports;
    for (std::size_t p = 0; p < ports.size(); ++p)
        if (ports[p].name == name) return p;
    std::vector<std::string> names;
    for (const auto& port : ports) names.push_back(port.name);
    reader.fail(node, path,
                "switch '" + out.switches[s].name + "' has no port '" + name + "' (ports, from links: " + join(names) +
                    ")");
}

wire::ipv6_address network_of(const ip_prefix& prefix) {
    wire::ipv6_address network = prefix.address;
    const unsigned first = prefix.v6 ? 0 : 96, bits = first + prefix.length;
    for (unsigned i = bits; i < 128; ++i) network.bytes[i / 8] &= static_cast<std::uint8_t>(~(0x80u >> (i % 8)));
    return network;
}

} // namespace

buffer_config read_buffer(const yaml_reader& reader, const YAML::Node& node, const std::string& path) {
    const yaml_mapping m = reader.expect_map(node, path, {"size", "alpha", "reserved"});
    buffer_config buffer;
    if (const yaml_entry* e = m.find("size")) {
        const std::string at = m.child_path("size");
        const std::string text = reader.expect_scalar(e->value, at, "16MiB");
        const auto size = parse_bytes(text);
        constexpr std::uint64_t least = 64 * 1024, most = 1ull << 30;
        if (!size || *size < least || *size > most)
            reader.fail(e->value, at,
                        "bad buffer size '" + text +
                            "'; expected 64KiB to 1024MiB, in bytes or with a unit B, KB, "
                            "MB, KiB or MiB (Spectrum-2 has 42MB, Spectrum-4 160MB)");
        buffer.size_bytes = *size;
    }
    if (const yaml_entry* e = m.find("alpha")) {
        const std::string at = m.child_path("alpha");
        const std::string text = reader.expect_scalar(e->value, at, "1");
        const auto alpha = parse_alpha(text);
        if (!alpha)
            reader.fail(e->value, at,
                        "bad alpha '" + text +
                            "'; Spectrum's dynamic threshold takes a power of two: 1/128, 1/64, "
                            "1/32, 1/16, 1/8, 1/4, 1/2, 1, 2, 4, 8, 16, 32 or 64");
        buffer.alpha = *alpha;
    }
    if (const yaml_entry* e = m.find("reserved")) {
        const std::string at = m.child_path("reserved");
        const std::string text = reader.expect_scalar(e->value, at, "0");
        const auto reserved = parse_bytes(text);
        if (!reserved || *reserved > 1'000'000)
            reader.fail(e->value, at,
                        "bad reserved '" + text +
                            "'; expected 0 to 1MB a priority group, in bytes or with a unit B, "
                            "KB, MB, KiB or MiB");
        buffer.reserved_bytes = static_cast<std::uint32_t>(*reserved);
    }
    return buffer;
}

std::optional<YAML::Node> read_adaptive_routing(const yaml_reader& reader, const YAML::Node& node,
                                                const std::string& path, switch_config& sw) {
    const yaml_mapping m = reader.expect_map(node, path, {"state", "link-utilization-threshold", "interfaces"});
    sw.adaptive_routing.enabled = true; // a switch that configures it means it, unless it says disabled
    if (const yaml_entry* e = m.find("state"))
        sw.adaptive_routing.enabled = reader.expect_either(e->value, m.child_path("state"), "enabled", "disabled");
    if (const yaml_entry* e = m.find("link-utilization-threshold"))
        sw.adaptive_routing.link_utilization_threshold_percent = static_cast<std::uint8_t>(reader.expect_whole(
            e->value, m.child_path("link-utilization-threshold"), 1, 100, "link-utilization-threshold (%)"));
    if (const yaml_entry* e = m.find("interfaces")) return e->value;
    return std::nullopt;
}

void read_adaptive_interfaces(const yaml_reader& reader, const YAML::Node& node, const std::string& path, topology& out,
                              std::size_t s) {
    for (const YAML::Node& item : reader.expect_list(node, path))
        out.switches[s].ports[expect_port(reader, item, path, out, s)].adaptive_routing = true;
}

std::vector<route> read_static_routes(const yaml_reader& reader, const YAML::Node& node, const std::string& path,
                                      const topology& out, std::size_t s) {
    const switch_config& sw = out.switches[s];
    std::vector<route> routes;
    const auto items = reader.expect_list(node, path);
    for (std::size_t i = 0; i < items.size(); ++i) {
        const yaml_mapping m = reader.expect_map(items[i], path + "[" + std::to_string(i) + "]", {"prefix", "via"});
        const YAML::Node& prefix_node = reader.required(m, "prefix", " (e.g. prefix: 10.0.3.0/24)");
        const std::string text = reader.expect_scalar(prefix_node, m.child_path("prefix"), "10.0.3.0/24");
        const auto prefix = parse_ip_prefix(text);
        if (!prefix)
            reader.fail(prefix_node, m.child_path("prefix"),
                        "bad prefix '" + text + "'; expected ADDRESS/LENGTH, e.g. 10.0.3.0/24 or fd00:3::/64");
        route r;
        r.destination = *prefix;
        r.destination.address = network_of(*prefix);
        if (r.destination.address != prefix->address)
            reader.fail(prefix_node, m.child_path("prefix"),
                        "prefix " + text + " has host bits set; did you mean " + r.destination.to_string() + "?");
        for (const route& earlier : routes)
            if (earlier.destination == r.destination)
                reader.fail(prefix_node, m.child_path("prefix"), "prefix " + text + " has a static route already");
        const YAML::Node& via = reader.required(m, "via", " (e.g. via: [swp2])");
        const auto ports = reader.expect_list(via, m.child_path("via"));
        if (ports.empty()) reader.fail(via, m.child_path("via"), "a route needs at least one port");
        for (const YAML::Node& port_node : ports) {
            const std::size_t p = expect_port(reader, port_node, m.child_path("via"), out, s);
            if (std::find(r.egress_ports.begin(), r.egress_ports.end(), p) != r.egress_ports.end())
                reader.fail(port_node, m.child_path("via"), "port '" + sw.ports[p].name + "' is listed twice");
            r.egress_ports.push_back(p);
        }
        std::sort(r.egress_ports.begin(), r.egress_ports.end());
        for (std::size_t p : r.egress_ports)
            r.next_hop_macs.push_back(out.mac_of(out.peer_of({endpoint::switch_port, s, p})));
        routes.push_back(std::move(r));
    }
    return routes;
}

} // namespace rocefab::config::sections
