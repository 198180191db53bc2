// A switch's buffer, adaptive routing and static routes in the topology file: defaults, what each
// key changes, and where each bad value is reported.
#include "control/config/topology.hpp"

#include <gtest/gtest.h>

namespace rocefab::config {
namespace {

#define EXPECT_CONTAINS(text, part) EXPECT_NE((text).find(part), std::string::npos) << "in: " << (text)

// Two leaves, each with a host, joined by two parallel links (swp31, swp32). `extra` is added to
// leaf1's entry, on line 4.
std::string fabric_with(const std::string& extra) {
    return R"(
switches:
  - name: leaf1
)" + (extra.empty() ? std::string() : "    " + extra + "\n") +
           R"(  - name: leaf2
hosts:
  - { name: h1, nics: [ { name: rfab0, address: 10.0.1.1/24 } ] }
  - { name: h2, nics: [ { name: rfab0, address: 10.0.2.1/24 } ] }
links:
  - { a: h1/rfab0, b: leaf1/swp1 }
  - { a: h2/rfab0, b: leaf2/swp1 }
  - { a: leaf1/swp31, b: leaf2/swp31 }
  - { a: leaf1/swp32, b: leaf2/swp32 }
)";
}

topology loaded(const std::string& extra) {
    topology fabric;
    config_error error;
    EXPECT_TRUE(parse_topology(fabric_with(extra), "test.yaml", fabric, error)) << error.to_string();
    return fabric;
}

config_error error_of(const std::string& extra) {
    topology fabric;
    config_error error;
    EXPECT_FALSE(parse_topology(fabric_with(extra), "configs/bad.yaml", fabric, error)) << "loaded";
    return error;
}

const route* route_to(const topology& fabric, std::size_t sw, const std::string& prefix) {
    for (const route& r : fabric.routes[sw])
        if (r.destination.to_string() == prefix) return &r;
    return nullptr;
}

TEST(switch_config, a_switch_that_says_nothing_has_the_switch_defaults) {
    const topology fabric = loaded("");
    const switch_config& sw = fabric.switches[0];
    EXPECT_EQ(sw.buffer.size_bytes, 16u * 1024 * 1024);
    EXPECT_EQ(sw.buffer.alpha, 1.0);
    EXPECT_EQ(sw.buffer.reserved_bytes, 0u);
    EXPECT_FALSE(sw.adaptive_routing.enabled);
    EXPECT_TRUE(sw.static_routes.empty());
}

TEST(switch_config, buffer_keys_take_units_and_spectrums_alphas) {
    const auto b = loaded("buffer: { size: 42MB, alpha: 1/8, reserved: 10KiB }").switches[0].buffer;
    EXPECT_EQ(b.size_bytes, 42'000'000u);
    EXPECT_EQ(b.alpha, 0.125);
    EXPECT_EQ(b.reserved_bytes, 10'240u);
    EXPECT_EQ(loaded("buffer: { alpha: 4 }").switches[0].buffer.alpha, 4.0);
    EXPECT_EQ(loaded("buffer: { alpha: 0.5 }").switches[0].buffer.alpha, 0.5);
}

TEST(switch_config, adaptive_routing_defaults_to_the_ports_facing_other_switches) {
    const switch_config sw = loaded("adaptive-routing: { state: enabled }").switches[0];
    EXPECT_TRUE(sw.adaptive_routing.enabled);
    EXPECT_EQ(sw.adaptive_routing.link_utilization_threshold_percent, 70);
    ASSERT_EQ(sw.ports.size(), 3u);             // swp1, swp31, swp32
    EXPECT_FALSE(sw.ports[0].adaptive_routing); // the host's port
    EXPECT_TRUE(sw.ports[1].adaptive_routing);
    EXPECT_TRUE(sw.ports[2].adaptive_routing);
}

TEST(switch_config, adaptive_routing_takes_its_interfaces_and_threshold) {
    const switch_config sw =
        loaded("adaptive-routing: { link-utilization-threshold: 50, interfaces: [swp31] }").switches[0];
    EXPECT_TRUE(sw.adaptive_routing.enabled);
    EXPECT_EQ(sw.adaptive_routing.link_utilization_threshold_percent, 50);
    EXPECT_FALSE(sw.ports[0].adaptive_routing);
    EXPECT_TRUE(sw.ports[1].adaptive_routing);
    EXPECT_FALSE(sw.ports[2].adaptive_routing);
    EXPECT_FALSE(loaded("adaptive-routing: { state: disabled }").switches[0].adaptive_routing.enabled);
}

TEST(switch_config, a_static_route_replaces_the_computed_route_for_its_prefix) {
    // Computed: h2's /32 over both parallel links. Static: only over swp32.
    const topology computed = loaded("");
    const route* ecmp = route_to(computed, 0, "10.0.2.1/32");
    ASSERT_NE(ecmp, nullptr);
    EXPECT_EQ(ecmp->egress_ports.size(), 2u);

    const topology fabric =
        loaded("routes: [ { prefix: 10.0.2.1/32, via: [swp32] }, { prefix: 10.9.0.0/16, via: [swp31] } ]");
    const route* pinned = route_to(fabric, 0, "10.0.2.1/32");
    ASSERT_NE(pinned, nullptr);
    ASSERT_EQ(pinned->egress_ports.size(), 1u);
    EXPECT_EQ(fabric.switches[0].ports[pinned->egress_ports[0]].name, "swp32");
    EXPECT_EQ(pinned->next_hop_macs[0],
              fabric.mac_of(fabric.peer_of({endpoint::switch_port, 0, pinned->egress_ports[0]})));
    EXPECT_NE(route_to(fabric, 0, "10.9.0.0/16"), nullptr); // a prefix nothing computed: added
    EXPECT_EQ(fabric.routes[0].size(), computed.routes[0].size() + 1);
    EXPECT_EQ(route_to(fabric, 1, "10.0.2.1/32")->egress_ports.size(), 1u); // leaf2 untouched: its host's port
}

TEST(switch_config, bad_values_name_their_line_key_and_the_valid_range) {
    struct bad {
        const char* extra;
        const char* key;
        const char* message;
    };
    const bad cases[] = {
        {"buffer: { size: 16 }", "buffer.size", "expected 64KiB to 1024MiB"},
        {"buffer: { size: 16GB }", "buffer.size", "with a unit B, KB, MB, KiB or MiB"},
        {"buffer: { alpha: 3 }", "buffer.alpha", "a power of two: 1/128, 1/64"},
        {"buffer: { alpha: 50% }", "buffer.alpha", "a power of two"},
        {"buffer: { alpha: 128 }", "buffer.alpha", "32 or 64"},
        {"buffer: { reserved: 2MB }", "buffer.reserved", "expected 0 to 1MB a priority group"},
        {"buffer: { headroom: 1 }", "buffer.headroom", "valid keys: size, alpha, reserved"},
        {"adaptive-routing: { state: on }", "adaptive-routing.state", "expected enabled or disabled"},
        {"adaptive-routing: { link-utilization-threshold: 0 }", "adaptive-routing.link-utilization-threshold",
         "from 1 to 100"},
        {"adaptive-routing: { interfaces: [swp33] }", "adaptive-routing.interfaces",
         "switch 'leaf1' has no port 'swp33' (ports, from links: swp1, swp31, swp32)"},
        {"routes: [ { prefix: 10.0.2.1/24, via: [swp31] } ]", "routes[0].prefix",
         "has host bits set; did you mean 10.0.2.0/24?"},
        {"routes: [ { prefix: 10.0.2.1, via: [swp31] } ]", "routes[0].prefix", "expected ADDRESS/LENGTH"},
        {"routes: [ { prefix: 10.0.2.1/32, via: [] } ]", "routes[0].via", "at least one port"},
        {"routes: [ { prefix: 10.0.2.1/32, via: [swp9] } ]", "routes[0].via", "has no port 'swp9'"},
        {"routes: [ { prefix: 10.0.2.1/32, via: [swp31, swp31] } ]", "routes[0].via", "listed twice"},
        {"routes: [ { prefix: 10.0.2.1/32 } ]", "routes[0]", "missing required key 'via'"},
        {"routes: [ { prefix: 10.0.2.1/32, via: [swp31] }, { prefix: 10.0.2.1/32, via: [swp32] } ]", "routes[1].prefix",
         "has a static route already"},
    };
    for (const bad& c : cases) {
        SCOPED_TRACE(c.extra);
        const config_error e = error_of(c.extra);
        EXPECT_EQ(e.line, 4);
        EXPECT_EQ(e.key, std::string("switches[0].") + c.key);
        EXPECT_CONTAINS(e.message, c.message);
    }
}

} // namespace
} // namespace rocefab::config
