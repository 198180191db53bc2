// The switch's counters as `rocefab show --json` gives them: formatting, off the engine. The
// data plane hands over a switch_node::snapshot_data (plain data); whoever reads it formats it
// here, on its own thread.
#pragma once

#include "switch_emu/switch_node.hpp"

#include <nlohmann/json.hpp>

namespace rocefab::switch_emu {

// {"name", "buffer": {"size_bytes", "in_use_bytes", "peak_bytes"}, "adaptive_routing": {"enabled", "rerouted"},
//  "ports": [...]}, ports in spec order, each
// {"port": name, every port counter by name, the per-priority PFC counters under their `ethtool -S`
//  names (rx_prio3_pause, rx_prio3_pause_duration, tx_prio3_pause, tx_prio3_pause_duration),
//  "queues": [{"tc", "tx_packets", "tx_bytes", "tail_drops", "wred_drops", "watchdog_drops", "ecn_marked",
//              "depth_bytes", "peak_bytes"}] (8, by traffic class),
//  "priorities": [{"priority", "rx_packets", "rx_bytes", "headroom_drops", "buffer_bytes",
//                  "buffer_peak_bytes", "rx_pause", "rx_pause_duration", "tx_pause", "tx_pause_duration"}]}.
// `spec` and `name` are the switch's: fixed at construction, so any thread may read them.
nlohmann::json to_json(const std::string& name, const switch_spec& spec, const switch_node::snapshot_data& s);

// Snapshot and format at once, where one thread drives the switch (tests, virtual time).
nlohmann::json counters_json(const switch_node& sw);

} // namespace rocefab::switch_emu
