// One test per kind of bad input: each pins the position (line and column, 1-based), the key path and the
// words that tell the user what would be valid.
#include "control/config/topology.hpp"

#include <gtest/gtest.h>

namespace rocefab::config {
namespace {

// The YAML texts below start with a newline for readability; it is dropped so that line 1 is the first line.
config_error load_error(std::string yaml) {
    if (!yaml.empty() && yaml[0] == '\n') yaml.erase(0, 1);
    topology fabric;
    config_error error;
    EXPECT_FALSE(parse_topology(yaml, "configs/bad.yaml", fabric, error)) << "loaded although it should not";
    EXPECT_EQ(error.file, "configs/bad.yaml");
    return error;
}

#define EXPECT_CONTAINS(text, part) EXPECT_NE((text).find(part), std::string::npos) << "in: " << (text)

// Two good hosts on one switch, with a hole for the line under test.
std::string fabric_with(const std::string& extra_link) {
    return R"(
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
)" + extra_link +
           "\n";
}

TEST(topology_errors, to_string_reads_file_line_column_key_message) {
    const config_error error{"configs/bad.yaml", 14, 7, "links[1].b", "unknown node 'h3'"};
    EXPECT_EQ(error.to_string(), "configs/bad.yaml:14:7: links[1].b: unknown node 'h3'");
    const config_error no_position{"missing.yaml", 0, 0, "", "cannot read: No such file or directory"};
    EXPECT_EQ(no_position.to_string(), "missing.yaml: cannot read: No such file or directory");
}

TEST(topology_errors, unknown_top_level_key_lists_the_valid_keys) {
    const auto error = load_error(R"(
fabric: lab
qos: { trust: dscp }
hosts: []
)");
    EXPECT_EQ(error.line, 2);
    EXPECT_EQ(error.column, 1);
    EXPECT_EQ(error.key, "qos");
    EXPECT_CONTAINS(error.message, "unknown key 'qos'");
    EXPECT_CONTAINS(error.message, "valid keys: fabric, defaults, switches, hosts, links");
}

TEST(topology_errors, misspelt_link_key_suggests_the_close_valid_key) {
    const auto error = load_error(fabric_with("  - { a: h2/rfab0, b: sw1/swp2, sped: 25G }"));
    EXPECT_EQ(error.line, 12);
    EXPECT_EQ(error.column, 33);
    EXPECT_EQ(error.key, "links[1].sped");
    EXPECT_CONTAINS(error.message, "did you mean 'speed'?");
    EXPECT_CONTAINS(error.message, "valid keys: a, b, speed, delay, mtu");
    EXPECT_EQ(error.to_string().rfind("configs/bad.yaml:12:33: links[1].sped: unknown key 'sped'", 0), 0u);
}

TEST(topology_errors, unknown_nic_key_is_rejected) {
    const auto error = load_error(R"(
hosts:
  - name: h1
    nics:
      - name: rfab0
        address: 10.0.0.1/24
        pfc: on
)");
    EXPECT_EQ(error.line, 6);
    EXPECT_EQ(error.column, 9);
    EXPECT_EQ(error.key, "hosts[0].nics[0].pfc");
    EXPECT_CONTAINS(error.message, "valid keys: name, address, mac");
}

TEST(topology_errors, repeated_yaml_key_is_rejected_rather_than_first_one_wins) {
    const auto error = load_error(fabric_with("  - { a: h2/rfab0, b: sw1/swp2, mtu: 9000, mtu: 1500 }"));
    EXPECT_EQ(error.line, 12);
    EXPECT_EQ(error.key, "links[1].mtu");
    EXPECT_CONTAINS(error.message, "duplicate key (first given at line 12)");
}

TEST(topology_errors, list_given_as_a_scalar_is_a_wrong_type) {
    const auto error = load_error(R"(
switches: sw1
hosts: []
)");
    EXPECT_EQ(error.line, 1);
    EXPECT_EQ(error.column, 11);
    EXPECT_EQ(error.key, "switches");
    EXPECT_CONTAINS(error.message, "expected a list");
    EXPECT_CONTAINS(error.message, "got 'sw1'");
}

TEST(topology_errors, name_given_as_a_list_is_a_wrong_type) {
    const auto error = load_error(R"(
switches:
  - name: [sw1, sw2]
hosts: []
)");
    EXPECT_EQ(error.line, 2);
    EXPECT_EQ(error.column, 11);
    EXPECT_EQ(error.key, "switches[0].name");
    EXPECT_CONTAINS(error.message, "got a list");
}

TEST(topology_errors, missing_required_key_names_it) {
    const auto error = load_error(R"(
hosts:
  - name: h1
    nics:
      - { name: rfab0 }
)");
    EXPECT_EQ(error.line, 4);
    EXPECT_EQ(error.key, "hosts[0].nics[0]");
    EXPECT_CONTAINS(error.message, "missing required key 'address'");
}

TEST(topology_errors, a_file_without_hosts_is_rejected) {
    const auto missing = load_error("switches: [ { name: sw1 } ]\n");
    EXPECT_EQ(missing.key, "hosts");
    EXPECT_CONTAINS(missing.message, "at least one host");
    const auto empty = load_error("");
    EXPECT_CONTAINS(empty.message, "expected a mapping with the keys fabric, defaults, switches, hosts, links");
}

TEST(topology_errors, bad_name_says_which_characters_are_allowed) {
    const auto error = load_error(R"(
switches:
  - name: "leaf 1"
hosts: []
)");
    EXPECT_EQ(error.key, "switches[0].name");
    EXPECT_CONTAINS(error.message, "letters, digits, '_', '.' and '-'");
}

TEST(topology_errors, duplicate_host_name_points_at_the_second_and_names_the_first) {
    const auto error = load_error(R"(
hosts:
  - name: h1
    nics: [ { name: rfab0, address: 10.0.0.1/24 } ]
  - name: h1
    nics: [ { name: rfab0, address: 10.0.0.2/24 } ]
)");
    EXPECT_EQ(error.line, 4);
    EXPECT_EQ(error.column, 11);
    EXPECT_EQ(error.key, "hosts[1].name");
    EXPECT_CONTAINS(error.message, "duplicate name 'h1': already used by the host at line 2");
}

TEST(topology_errors, a_host_cannot_share_a_name_with_a_switch) {
    const auto error = load_error(R"(
switches: [ { name: n1 } ]
hosts:
  - { name: n1, nics: [ { name: rfab0, address: 10.0.0.1/24 } ] }
)");
    EXPECT_EQ(error.line, 3);
    EXPECT_EQ(error.key, "hosts[0].name");
    EXPECT_CONTAINS(error.message, "already used by the switch at line 1");
}

TEST(topology_errors, duplicate_nic_name_on_one_host) {
    const auto error = load_error(R"(
hosts:
  - name: h1
    nics:
      - { name: rfab0, address: 10.0.0.1/24 }
      - { name: rfab0, address: 10.0.1.1/24 }
)");
    EXPECT_EQ(error.line, 5);
    EXPECT_EQ(error.key, "hosts[0].nics[1].name");
    EXPECT_CONTAINS(error.message, "duplicate NIC name 'rfab0' on host 'h1'");
}

TEST(topology_errors, duplicate_ip_address_names_the_nic_that_has_it) {
    const auto error = load_error(R"(
hosts:
  - name: h1
    nics: [ { name: rfab0, address: 10.0.0.1/24 } ]
  - name: h2
    nics: [ { name: rfab0, address: 10.0.0.1/16 } ]
)");
    EXPECT_EQ(error.line, 5);
    EXPECT_EQ(error.column, 37);
    EXPECT_EQ(error.key, "hosts[1].nics[0].address");
    EXPECT_CONTAINS(error.message, "duplicate address 10.0.0.1: already used by h1/rfab0 at line 3");
}

TEST(topology_errors, duplicate_explicit_mac) {
    const auto error = load_error(R"(
hosts:
  - name: h1
    nics: [ { name: rfab0, address: 10.0.0.1/24, mac: "0a:00:00:00:00:01" } ]
  - name: h2
    nics: [ { name: rfab0, address: 10.0.0.2/24, mac: "0A:00:00:00:00:01" } ]
links:
  - { a: h1/rfab0, b: h2/rfab0 }
)");
    EXPECT_EQ(error.line, 5);
    EXPECT_EQ(error.key, "hosts[1].nics[0].mac");
    EXPECT_CONTAINS(error.message, "duplicate MAC 0a:00:00:00:00:01: already used by h1/rfab0 at line 3");
}

TEST(topology_errors, explicit_mac_equal_to_a_generated_one_is_a_duplicate) {
    const auto error = load_error(R"(
switches: [ { name: sw1 } ]
hosts:
  - name: h1
    nics: [ { name: rfab0, address: 10.0.0.1/24, mac: "02:02:00:01:00:01" } ]
links:
  - { a: h1/rfab0, b: sw1/swp1 }
)");
    EXPECT_EQ(error.line, 4);
    EXPECT_EQ(error.key, "hosts[0].nics[0].mac");
    EXPECT_CONTAINS(error.message, "generated MAC of sw1/swp1");
}

TEST(topology_errors, bad_or_multicast_mac) {
    const auto bad = load_error(R"(
hosts:
  - { name: h1, nics: [ { name: rfab0, address: 10.0.0.1/24, mac: "2:0:0:0:0:1" } ] }
)");
    EXPECT_EQ(bad.key, "hosts[0].nics[0].mac");
    EXPECT_CONTAINS(bad.message, "expected six two-digit hex bytes");
    const auto multicast = load_error(R"(
hosts:
  - { name: h1, nics: [ { name: rfab0, address: 10.0.0.1/24, mac: "01:00:5e:00:00:01" } ] }
)");
    EXPECT_CONTAINS(multicast.message, "must be unicast");
}

TEST(topology_errors, link_to_an_unknown_node_lists_hosts_and_switches) {
    const auto error = load_error(fabric_with("  - { a: h2/rfab0, b: h3/rfab0 }"));
    EXPECT_EQ(error.line, 12);
    EXPECT_EQ(error.column, 23);
    EXPECT_EQ(error.key, "links[1].b");
    EXPECT_EQ(error.message, "unknown node 'h3' (hosts: h1, h2; switches: sw1)");
}

TEST(topology_errors, link_to_an_unknown_nic_lists_the_hosts_nics) {
    const auto error = load_error(fabric_with("  - { a: h2/eth0, b: sw1/swp2 }"));
    EXPECT_EQ(error.line, 12);
    EXPECT_EQ(error.column, 10);
    EXPECT_EQ(error.key, "links[1].a");
    EXPECT_EQ(error.message, "host 'h2' has no NIC 'eth0' (NICs: rfab0)");
}

TEST(topology_errors, endpoint_without_a_slash_shows_the_expected_form) {
    const auto error = load_error(fabric_with("  - { a: h2, b: sw1/swp2 }"));
    EXPECT_EQ(error.key, "links[1].a");
    EXPECT_CONTAINS(error.message, "expected NODE/PORT, e.g. h1/rfab0 or sw1/swp1");
    const auto on_b = load_error(fabric_with("  - { a: sw1/swp2, b: sw1 }"));
    EXPECT_EQ(on_b.key, "links[1].b");
    EXPECT_CONTAINS(on_b.message, "bad endpoint 'sw1'");
}

TEST(topology_errors, nic_linked_twice_names_the_first_link) {
    const auto error = load_error(fabric_with("  - { a: sw1/swp2, b: h1/rfab0 }"));
    EXPECT_EQ(error.line, 12);
    EXPECT_EQ(error.key, "links[1].b");
    EXPECT_CONTAINS(error.message, "NIC 'h1/rfab0' is already linked by links[0] (line 11)");
}

TEST(topology_errors, switch_port_linked_twice_names_the_first_link) {
    const auto error = load_error(fabric_with("  - { a: h2/rfab0, b: sw1/swp1 }"));
    EXPECT_EQ(error.line, 12);
    EXPECT_EQ(error.key, "links[1].b");
    EXPECT_CONTAINS(error.message, "port 'sw1/swp1' is already linked by links[0] (line 11)");
}

TEST(topology_errors, nic_without_a_link_points_at_the_nic) {
    const auto error = load_error(fabric_with(""));
    EXPECT_EQ(error.line, 9);
    EXPECT_EQ(error.column, 9);
    EXPECT_EQ(error.key, "hosts[1].nics[0]");
    EXPECT_CONTAINS(error.message, "NIC 'h2/rfab0' is not linked");
}

// Found by fuzz_topology_config: the loader accepted it, and the fabric then failed to start with
// "switch sw2: has no ports", naming no place in the file.
TEST(topology_errors, switch_without_links_is_named_with_its_position) {
    const auto error = load_error(R"(
switches:
  - name: sw1
  - { name: sw2 }
hosts:
  - name: h1
    nics:
      - { name: rfab0, address: 10.0.0.1/24 }
links:
  - { a: h1/rfab0, b: sw1/swp1 }
)");
    EXPECT_EQ(error.line, 3);
    EXPECT_EQ(error.column, 5);
    EXPECT_EQ(error.key, "switches[1]");
    EXPECT_CONTAINS(error.message, "switch 'sw2' is not linked");
    EXPECT_CONTAINS(error.message, "add it to links:");
}

TEST(topology_errors, link_from_a_node_to_itself) {
    const auto error = load_error(fabric_with("  - { a: sw1/swp3, b: sw1/swp4 }"));
    EXPECT_EQ(error.line, 12);
    EXPECT_EQ(error.key, "links[1].b");
    EXPECT_CONTAINS(error.message, "both ends are on 'sw1'");
}

TEST(topology_errors, bad_speed_syntax_shows_examples) {
    const auto error = load_error(fabric_with("  - { a: h2/rfab0, b: sw1/swp2, speed: 25 }"));
    EXPECT_EQ(error.line, 12);
    EXPECT_EQ(error.column, 40);
    EXPECT_EQ(error.key, "links[1].speed");
    EXPECT_CONTAINS(error.message, "bad speed '25'");
    EXPECT_CONTAINS(error.message, "25G");
}

TEST(topology_errors, speed_out_of_range_states_the_range) {
    const auto error = load_error(fabric_with("  - { a: h2/rfab0, b: sw1/swp2, speed: 3.2T }"));
    EXPECT_EQ(error.key, "links[1].speed");
    EXPECT_CONTAINS(error.message, "expected 1M to 1600G");
}

TEST(topology_errors, bad_delay_syntax_and_range) {
    const auto syntax = load_error(fabric_with("  - { a: h2/rfab0, b: sw1/swp2, delay: 1s }"));
    EXPECT_EQ(syntax.key, "links[1].delay");
    EXPECT_CONTAINS(syntax.message, "unit ns, us or ms");
    const auto range = load_error(R"(
defaults:
  link: { delay: 200ms }
hosts: []
)");
    EXPECT_EQ(range.line, 2);
    EXPECT_EQ(range.key, "defaults.link.delay");
    EXPECT_CONTAINS(range.message, "expected 0ns to 100ms");
}

TEST(topology_errors, bad_mtu_syntax_and_range) {
    const auto syntax = load_error(fabric_with("  - { a: h2/rfab0, b: sw1/swp2, mtu: 4k }"));
    EXPECT_EQ(syntax.key, "links[1].mtu");
    EXPECT_CONTAINS(syntax.message, "bad MTU '4k'");
    const auto range = load_error(fabric_with("  - { a: h2/rfab0, b: sw1/swp2, mtu: 9600 }"));
    EXPECT_EQ(range.line, 12);
    EXPECT_EQ(range.column, 38);
    EXPECT_CONTAINS(range.message, "MTU 9600 is out of range; expected 256 to 9216");
}

TEST(topology_errors, bad_cidr_shows_both_families) {
    const auto error = load_error(R"(
hosts:
  - { name: h1, nics: [ { name: rfab0, address: 10.0.0.1 } ] }
)");
    EXPECT_EQ(error.line, 2);
    EXPECT_EQ(error.column, 49);
    EXPECT_EQ(error.key, "hosts[0].nics[0].address");
    EXPECT_CONTAINS(error.message, "bad address '10.0.0.1'");
    EXPECT_CONTAINS(error.message, "10.0.0.1/24");
    EXPECT_CONTAINS(error.message, "fd00::1/64");
}

TEST(topology_errors, multicast_address_cannot_be_a_nic_address) {
    const auto error = load_error(R"(
hosts:
  - { name: h1, nics: [ { name: rfab0, address: 224.0.0.1/24 } ] }
)");
    EXPECT_CONTAINS(error.message, "cannot be a NIC address");
}

TEST(topology_errors, unknown_retransmission_mode_names_the_two_valid_ones) {
    const auto error = load_error(fabric_with(R"(nic:
  hosts: { h2: { retransmission: selective } })"));
    EXPECT_EQ(error.line, 13);
    EXPECT_EQ(error.column, 34);
    EXPECT_EQ(error.key, "nic.hosts.h2.retransmission");
    EXPECT_CONTAINS(error.message, "unknown retransmission 'selective'");
    EXPECT_CONTAINS(error.message, "go-back-n");
    EXPECT_CONTAINS(error.message, "selective-repeat");
}

TEST(topology_errors, adaptive_retransmission_is_enabled_or_disabled) {
    const auto error = load_error(fabric_with(R"(nic:
  adaptive-retransmission: yes)"));
    EXPECT_EQ(error.line, 13);
    EXPECT_EQ(error.key, "nic.adaptive-retransmission");
    EXPECT_CONTAINS(error.message, "expected enabled or disabled, got 'yes'");
}

TEST(topology_errors, adaptive_retransmission_profile_keeps_the_firmwares_limits) {
    struct bad {
        const char* profile;
        const char* key;
        const char* says;
    };
    for (const bad& b : {
             bad{"{ time-base: 5000ns }", "nic.adaptive-retransmission.time-base", "must be a power of two"},
             bad{"{ time-base: 2048ns }", "nic.adaptive-retransmission.time-base", "4us"},
             bad{"{ ranges: [ { low: 5, size: 2 }, { low: 7 } ] }", "nic.adaptive-retransmission.ranges[1].low",
                 "must be sorted and must not overlap: this one starts at 7, and the one before reaches 7"},
             bad{"{ ranges: [ {low: 1}, {low: 3}, {low: 5}, {low: 7}, {low: 9} ] }",
                 "nic.adaptive-retransmission.ranges", "at most 4"},
             bad{"{ ranges: [ { size: 2 } ] }", "nic.adaptive-retransmission.ranges[0]", "missing required key 'low'"},
             bad{"{ ranges: [ { low: 3 } ], start-range: 1 }", "nic.adaptive-retransmission.start-range",
                 "start-range 1 names no range: the profile has 1"},
             bad{"{ initial: { low: 40 } }", "nic.adaptive-retransmission.initial.low", "from 0 to 31"},
         }) {
        SCOPED_TRACE(b.profile);
        const auto error = load_error(fabric_with(std::string("nic:\n  adaptive-retransmission: ") + b.profile));
        EXPECT_EQ(error.line, 13);
        EXPECT_EQ(error.key, b.key);
        EXPECT_CONTAINS(error.message, b.says);
    }
}

TEST(topology_errors, yaml_syntax_error_carries_the_parser_position) {
    const auto error = load_error(R"(
hosts:
  - name: h1
    nics: [ { name: rfab0, address: 10.0.0.1/24 }
links: []
)");
    EXPECT_GT(error.line, 0);
    EXPECT_GT(error.column, 0);
    EXPECT_TRUE(error.key.empty());
    EXPECT_CONTAINS(error.message, "YAML syntax error");
}

} // namespace
} // namespace rocefab::config
