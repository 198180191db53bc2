#include "control/config/json.hpp"
#include "control/config/topology.hpp"

#include <gtest/gtest.h>

namespace rocefab::config {
namespace {

wire::mac_address mac(const char* text) {
    wire::mac_address m;
    EXPECT_TRUE(wire::mac_address::parse(text, m)) << text;
    return m;
}

topology load(const std::string& yaml, const std::string& file = "test.yaml") {
    topology fabric;
    config_error error;
    EXPECT_TRUE(parse_topology(yaml, file, fabric, error)) << error.to_string();
    return fabric;
}

const std::string two_hosts = R"(
fabric: two-hosts
defaults:
  link: { speed: 100G, delay: 1us, mtu: 4200 }
switches:
  - name: sw1
hosts:
  - name: h1
    nics:
      - { name: rfab0, address: 10.0.0.1/24 }
  - name: h2
    nics:
      - { name: rfab0, address: 10.0.0.2/24 }
links:
  - { a: h1/rfab0, b: sw1/swp1 }
  - { a: h2/rfab0, b: sw1/swp2, speed: 25G, delay: 500ns }
)";

TEST(topology_load, two_hosts_on_one_switch_gives_nodes_links_and_parameters) {
    const topology fabric = load(two_hosts);
    EXPECT_EQ(fabric.name, "two-hosts");
    EXPECT_EQ(fabric.source_file, "test.yaml");
    ASSERT_EQ(fabric.hosts.size(), 2u);
    ASSERT_EQ(fabric.switches.size(), 1u);
    ASSERT_EQ(fabric.links.size(), 2u);

    EXPECT_EQ(fabric.hosts[1].name, "h2");
    ASSERT_EQ(fabric.hosts[1].nics.size(), 1u);
    EXPECT_EQ(fabric.hosts[1].nics[0].name, "rfab0");
    EXPECT_EQ(fabric.hosts[1].nics[0].address.to_string(), "10.0.0.2/24");
    EXPECT_EQ(fabric.hosts[1].nics[0].link_index, 1u);

    ASSERT_EQ(fabric.switches[0].ports.size(), 2u);
    EXPECT_EQ(fabric.switches[0].ports[0].name, "swp1");
    EXPECT_EQ(fabric.switches[0].ports[1].name, "swp2");
    EXPECT_EQ(fabric.switches[0].ports[1].link_index, 1u);

    const link_config& second = fabric.links[1];
    EXPECT_EQ(second.a, (endpoint{endpoint::host_nic, 1, 0}));
    EXPECT_EQ(second.b, (endpoint{endpoint::switch_port, 0, 1}));
    EXPECT_EQ(second.params.speed_bps, 25'000'000'000u);
    EXPECT_EQ(second.params.delay, nanoseconds(500));
    EXPECT_EQ(second.params.mtu, 4200u);
    EXPECT_EQ(second.line, 16);
    EXPECT_EQ(fabric.links[0].params.speed_bps, 100'000'000'000u);
    EXPECT_EQ(fabric.links[0].params.delay, microseconds(1));
}

TEST(topology_load, macs_are_locally_administered_and_derived_from_indices) {
    const topology fabric = load(two_hosts);
    EXPECT_EQ(fabric.hosts[0].nics[0].mac, mac("02:01:00:01:00:01"));
    EXPECT_EQ(fabric.hosts[1].nics[0].mac, mac("02:01:00:02:00:01"));
    EXPECT_EQ(fabric.switches[0].ports[0].mac, mac("02:02:00:01:00:01"));
    EXPECT_EQ(fabric.switches[0].ports[1].mac, mac("02:02:00:01:00:02"));
    EXPECT_EQ(fabric.gateway_mac(0, 0), mac("02:02:00:01:00:01"));
    EXPECT_EQ(fabric.gateway_mac(1, 0), mac("02:02:00:01:00:02"));
    // The same text loads to the same MACs every time.
    EXPECT_EQ(load(two_hosts).hosts[1].nics[0].mac, fabric.hosts[1].nics[0].mac);
}

TEST(topology_load, single_switch_routes_each_nic_out_of_its_own_port) {
    const topology fabric = load(two_hosts);
    ASSERT_EQ(fabric.routes.size(), 1u);
    const auto& table = fabric.routes[0];
    ASSERT_EQ(table.size(), 2u);
    EXPECT_EQ(table[0].destination.to_string(), "10.0.0.1/32");
    EXPECT_EQ(table[0].egress_ports, std::vector<std::size_t>{0});
    EXPECT_EQ(table[0].next_hop_macs, std::vector<wire::mac_address>{fabric.hosts[0].nics[0].mac});
    EXPECT_EQ(table[1].destination.to_string(), "10.0.0.2/32");
    EXPECT_EQ(table[1].egress_ports, std::vector<std::size_t>{1});
}

TEST(topology_load, defaults_apply_when_the_file_sets_none) {
    const topology fabric = load(R"(
hosts:
  - { name: a, nics: [ { name: n0, address: 192.168.1.1/31 } ] }
  - { name: b, nics: [ { name: n0, address: 192.168.1.0/31 } ] }
links:
  - { a: a/n0, b: b/n0 }
)",
                                 "configs/lab.yaml");
    EXPECT_EQ(fabric.name, "lab");
    EXPECT_EQ(fabric.links[0].params.speed_bps, default_link_speed_bps);
    EXPECT_EQ(fabric.links[0].params.delay, default_link_delay);
    EXPECT_EQ(fabric.links[0].params.mtu, default_link_mtu);
}

TEST(topology_load, back_to_back_hosts_send_to_each_others_mac_and_need_no_switch) {
    const topology fabric = load(R"(
hosts:
  - { name: a, nics: [ { name: n0, address: 10.1.0.1/24, mac: "0a:00:00:00:00:0a" } ] }
  - { name: b, nics: [ { name: n0, address: 10.1.0.2/24 } ] }
links:
  - { a: a/n0, b: b/n0, mtu: 9000 }
)");
    EXPECT_TRUE(fabric.switches.empty());
    EXPECT_TRUE(fabric.routes.empty());
    EXPECT_EQ(fabric.hosts[0].nics[0].mac, mac("0a:00:00:00:00:0a"));
    EXPECT_EQ(fabric.gateway_mac(1, 0), mac("0a:00:00:00:00:0a"));
    EXPECT_EQ(fabric.gateway_mac(0, 0), fabric.hosts[1].nics[0].mac);
    EXPECT_EQ(fabric.links[0].params.mtu, 9000u);
}

TEST(topology_load, switch_ports_are_numbered_by_name_with_numeric_digit_runs_not_by_link_order) {
    const topology fabric = load(R"(
switches: [ { name: sw1 }, { name: sw2 } ]
hosts:
  - { name: h1, nics: [ { name: rfab0, address: 10.0.0.1/24 } ] }
  - { name: h2, nics: [ { name: rfab0, address: 10.0.0.2/24 } ] }
links:
  - { a: sw1/swp10, b: sw2/swp10 }
  - { a: h2/rfab0, b: sw1/swp2 }
  - { a: sw1/swp9, b: sw2/swp9 }
  - { a: h1/rfab0, b: sw1/swp1 }
)");
    const auto& ports = fabric.switches[0].ports;
    ASSERT_EQ(ports.size(), 4u);
    EXPECT_EQ(ports[0].name, "swp1");
    EXPECT_EQ(ports[1].name, "swp2");
    EXPECT_EQ(ports[2].name, "swp9");
    EXPECT_EQ(ports[3].name, "swp10");
    EXPECT_EQ(ports[3].link_index, 0u);
    EXPECT_EQ(fabric.links[0].a, (endpoint{endpoint::switch_port, 0, 3}));
    EXPECT_EQ(fabric.links[0].b, (endpoint{endpoint::switch_port, 1, 1}));
    EXPECT_EQ(fabric.endpoint_name(fabric.links[2].a), "sw1/swp9");
    EXPECT_EQ(fabric.peer_of(fabric.links[2].b), fabric.links[2].a);
    // Parallel links between the same two switches are both equal-cost next hops.
    const auto& sw2_to_h1 = fabric.routes[1][0];
    EXPECT_EQ(sw2_to_h1.egress_ports, (std::vector<std::size_t>{0, 1}));
}

const std::string leaf_spine = R"(
fabric: leaf-spine
switches:
  - name: leaf1
  - name: leaf2
  - name: spine1
  - name: spine2
hosts:
  - { name: h1, nics: [ { name: rfab0, address: 10.0.1.1/24 } ] }
  - { name: h2, nics: [ { name: rfab0, address: 10.0.1.2/24 } ] }
  - { name: h3, nics: [ { name: rfab0, address: 10.0.2.1/24 }, { name: rfab1, address: "fd00:2::1/64" } ] }
links:
  - { a: leaf1/swp32, b: spine2/swp1 }
  - { a: leaf1/swp31, b: spine1/swp1 }
  - { a: leaf2/swp31, b: spine1/swp2 }
  - { a: leaf2/swp32, b: spine2/swp2 }
  - { a: h1/rfab0, b: leaf1/swp1 }
  - { a: h2/rfab0, b: leaf1/swp2 }
  - { a: h3/rfab0, b: leaf2/swp1 }
  - { a: h3/rfab1, b: leaf2/swp2 }
)";

TEST(topology_load, leaf_spine_leaves_spread_remote_hosts_over_both_spines) {
    const topology fabric = load(leaf_spine);
    ASSERT_EQ(fabric.routes.size(), 4u);
    const auto spine_port_mac = [&](std::size_t spine, std::size_t port) {
        return fabric.switches[spine].ports[port].mac;
    };

    // leaf1: swp1 h1, swp2 h2, swp31 -> spine1, swp32 -> spine2.
    const auto& leaf1 = fabric.routes[0];
    ASSERT_EQ(leaf1.size(), 4u);
    EXPECT_EQ(leaf1[0].destination.to_string(), "10.0.1.1/32");
    EXPECT_EQ(leaf1[0].egress_ports, std::vector<std::size_t>{0});
    EXPECT_EQ(leaf1[2].destination.to_string(), "10.0.2.1/32");
    EXPECT_EQ(leaf1[2].egress_ports, (std::vector<std::size_t>{2, 3}));
    EXPECT_EQ(leaf1[2].next_hop_macs, (std::vector<wire::mac_address>{spine_port_mac(2, 0), spine_port_mac(3, 0)}));
    EXPECT_EQ(leaf1[3].destination.to_string(), "fd00:2::1/128");
    EXPECT_EQ(leaf1[3].egress_ports, (std::vector<std::size_t>{2, 3}));

    const auto& leaf2 = fabric.routes[1];
    ASSERT_EQ(leaf2.size(), 4u);
    for (std::size_t i : {0, 1}) EXPECT_EQ(leaf2[i].egress_ports, (std::vector<std::size_t>{2, 3})) << i;
    EXPECT_EQ(leaf2[1].next_hop_macs, (std::vector<wire::mac_address>{spine_port_mac(2, 1), spine_port_mac(3, 1)}));
    EXPECT_EQ(leaf2[3].egress_ports, std::vector<std::size_t>{1});
}

TEST(topology_load, leaf_spine_spines_have_a_single_path_down_to_each_leaf) {
    const topology fabric = load(leaf_spine);
    const auto& spine1 = fabric.routes[2];
    ASSERT_EQ(spine1.size(), 4u);
    EXPECT_EQ(spine1[0].egress_ports, std::vector<std::size_t>{0});
    EXPECT_EQ(spine1[0].next_hop_macs, std::vector<wire::mac_address>{fabric.switches[0].ports[2].mac});
    EXPECT_EQ(spine1[2].egress_ports, std::vector<std::size_t>{1});
    EXPECT_EQ(spine1[2].next_hop_macs, std::vector<wire::mac_address>{fabric.switches[1].ports[2].mac});
}

TEST(topology_load, a_switch_cut_off_from_a_host_has_no_route_to_it) {
    const topology fabric = load(R"(
switches: [ { name: sw1 }, { name: island } ]
hosts:
  - { name: h1, nics: [ { name: rfab0, address: 10.0.0.1/24 } ] }
  - { name: h2, nics: [ { name: rfab0, address: 10.0.0.2/24 } ] }
links:
  - { a: h1/rfab0, b: sw1/swp1 }
  - { a: h2/rfab0, b: island/swp1 }
)");
    ASSERT_EQ(fabric.routes.size(), 2u);
    ASSERT_EQ(fabric.routes[0].size(), 1u);
    EXPECT_EQ(fabric.routes[0][0].destination.to_string(), "10.0.0.1/32");
    ASSERT_EQ(fabric.routes[1].size(), 1u);
    EXPECT_EQ(fabric.routes[1][0].destination.to_string(), "10.0.0.2/32");
}

TEST(topology_load, find_host_and_find_switch_look_up_by_name) {
    const topology fabric = load(two_hosts);
    ASSERT_NE(fabric.find_host("h2"), nullptr);
    EXPECT_EQ(fabric.find_host("h2")->nics[0].address.to_string(), "10.0.0.2/24");
    EXPECT_EQ(fabric.find_host("sw1"), nullptr);
    EXPECT_NE(fabric.find_switch("sw1"), nullptr);
    EXPECT_EQ(fabric.find_switch("h3"), nullptr);
}

TEST(topology_json, describes_nodes_links_and_routes_by_name) {
    const std::string text = to_json(load(two_hosts));
    EXPECT_EQ(text.find("\"fabric\""), 4u) << "keys keep the file's order, fabric first";
    const auto doc = nlohmann::json::parse(text);
    EXPECT_EQ(doc["fabric"], "two-hosts");
    EXPECT_EQ(doc["hosts"][0]["nics"][0]["mac"], "02:01:00:01:00:01");
    EXPECT_EQ(doc["hosts"][0]["nics"][0]["gateway_mac"], "02:02:00:01:00:01");
    EXPECT_EQ(doc["hosts"][1]["nics"][0]["address"], "10.0.0.2/24");
    EXPECT_EQ(doc["switches"][0]["ports"][1]["peer"], "h2/rfab0");
    EXPECT_EQ(doc["switches"][0]["routes"][1]["destination"], "10.0.0.2/32");
    EXPECT_EQ(doc["switches"][0]["routes"][1]["egress_ports"][0], "swp2");
    EXPECT_EQ(doc["links"][1]["speed"], "25G");
    EXPECT_EQ(doc["links"][1]["delay_ns"], 500);
    EXPECT_EQ(doc["links"][1]["a"], "h2/rfab0");
}

} // namespace
} // namespace rocefab::config
