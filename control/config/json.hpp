// The topology as JSON, for `rocefab show --json` and the management API.
#pragma once

#include "control/config/topology.hpp"

#include <nlohmann/json.hpp>

namespace rocefab::config {

// Keys keep the order below, so the output reads top-down like the YAML file:
// {"fabric", "source_file", "seed", "hosts": [{"name", "nics": [{"name", "address", "mac", "link", "peer",
// "gateway_mac"}]}],
//  "switches": [{"name", "ports": [{"name", "mac", "link", "peer"}], "routes": [{"destination",
//  "egress_ports": [names], "next_hop_macs": [...]}], "buffer": {"size_bytes", "alpha", "reserved_bytes"},
//  "adaptive_routing": {"enabled", "link_utilization_threshold", "interfaces": [names]}}], "links": [{"a", "b",
//  "speed", "speed_bps", "delay", "delay_ns", "mtu", "up", "faults": {"loss", "corruption", "duplication", "reordering"
//  (fractions 0-1), "reorder_delay", "reorder_delay_ns"}, "line"}]}
nlohmann::ordered_json to_json_value(const topology& fabric);

} // namespace rocefab::config
