// The parsers of the topology file's sections, one file each, so that each sits with the words of the feature it
// configures: links and their faults (link.cpp, dataplane/link's model), the hosts' NICs (nic.cpp, nic_emu's
// trust and DCQCN), a switch's QoS (qos.cpp, switch_emu's classify, PFC, ETS, ECN and watchdog), its buffer,
// adaptive routing and static routes (switch.cpp), and the daemon (daemon.cpp). The engines themselves never
// see YAML: these fill the plain specs of topology.hpp, which the fabric builder hands on.
//
// loader.cpp reads what ties the sections together (names, hosts, links and their ends, ports, MACs) and calls
// these in order. Every parser reports through the yaml_reader it is given, so the messages keep one form.
// Internal to control/config; topology.hpp documents the keys.
#pragma once

#include "control/config/topology.hpp"
#include "control/config/yaml_reader.hpp"

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace rocefab::config::sections {

// `defaults:` (its `link:` defaults), over `defaults`.
void read_defaults(const yaml_reader& reader, const YAML::Node& node, link_params& defaults);
// The speed, delay, mtu, faults and up keys of a link (or of defaults.link), over `params`.
void read_link_params(const yaml_reader& reader, const yaml_mapping& m, link_params& params);

// `nic:`: the NICs' settings for every host of `out`, then each nic.hosts.NAME's on top.
void read_nic(const yaml_reader& reader, const YAML::Node& node, topology& out);

// `daemon:`.
void read_daemon(const yaml_reader& reader, const YAML::Node& node, daemon_settings& out);

// A switch's `qos:`: a preset's name or an NVUE-style mapping over a preset.
switch_emu::qos_spec read_qos(const yaml_reader& reader, const YAML::Node& node, const std::string& path);

// A switch's `buffer:`.
buffer_config read_buffer(const yaml_reader& reader, const YAML::Node& node, const std::string& path);
// A switch's `adaptive-routing:` state and threshold, into `sw`; its `interfaces:` name ports, which exist only
// once the links are read, so they are left to read_adaptive_interfaces: returns their node, if given.
std::optional<YAML::Node> read_adaptive_routing(const yaml_reader& reader, const YAML::Node& node,
                                                const std::string& path, switch_config& sw);
// Marks the ports of switch `s` listed in its adaptive-routing `interfaces:` (at `node`, `path`).
void read_adaptive_interfaces(const yaml_reader& reader, const YAML::Node& node, const std::string& path, topology& out,
                              std::size_t s);
// A switch's `routes:`, once its ports are numbered and every MAC assigned.
std::vector<route> read_static_routes(const yaml_reader& reader, const YAML::Node& node, const std::string& path,
                                      const topology& out, std::size_t s);

} // namespace rocefab::config::sections
