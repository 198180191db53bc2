// The fabric as the YAML topology file describes it: hosts with their NICs, switches with their ports, the
// links between them, and the routing tables the switches derive from it. Loading validates everything and
// reports the first problem with file, line, column, key path and what would have been valid.
//
// File format (configs/two-hosts.yaml is the reference example):
//   fabric: NAME                       optional; defaults to the file name without its extension
//   defaults: { link: { speed: 100G, delay: 1us, mtu: 4200 } }   optional, each key optional
//   switches: [ { name: sw1 } ]        optional
//   hosts:    [ { name: h1, nics: [ { name: rfab0, address: 10.0.0.1/24, mac: 02:..:.. (optional) } ] } ]
//   links:    [ { a: h1/rfab0, b: sw1/swp1, speed: 25G, delay: 500ns, mtu: 9000 } ]   speed/delay/mtu optional
//             a link may also say `up: false` (starts down) and `faults:` (below)
//   faults:   { loss: 1%, corruption: 0.1%, duplication: 0.5%, reordering: 1%, reorder_delay: 10us }
//             in a link or in defaults.link, each key optional; probabilities as 0.01 or 1%, 0 to 1;
//             a link's faults override defaults.link's key by key
//   seed: 1                            optional; the fault-injection seed (same seed, same faults)
//   nic:                               optional; the hosts' NICs
//     trust: l3                        l3 (DSCP, the default) or l2 (frames priority-tagged with PCP)
//     dcqcn: { state: enabled, priorities: [3], rpg_ai_rate: 5, rpg_time_reset: 300us, ... }
//                                      the mlx5 knob names (nic_emu/dcqcn.hpp, docs/dcqcn.md): times
//                                      with a unit, rates in Mb/s, the rest as mlx5 has them
//     hosts: { h3: { host-rx-rate: 10G, trust: l2, dcqcn: { ... } } }   one host's NIC: a slow
//                                      receiver (its host takes frames at this rate and its NIC
//                                      sends PFC as its receive buffer fills), and trust and
//                                      dcqcn keys that override the section's for it
//   a switch's `qos:` (optional) is a preset, `roce` (lossless, the default) or `roce-lossy`, or a mapping
//   in the words of Cumulus NVUE's `qos` tree that starts from a preset and overrides parts of it:
//     qos:
//       preset: roce                                  roce or roce-lossy
//       mapping: { trust: l3, dscp: { 26: 3, 48: 6 } }  trust l3 (DSCP) or l2 (PCP); DSCP -> switch priority
//       egress-queue-mapping: { 3: 3 }                switch priority -> traffic class
//       pfc: { switch-priority: [3] }                 the lossless priorities ([] for none)
//       egress-scheduler: { 0: { mode: dwrr, bw-percent: 50 }, 6: { mode: strict } }      per traffic class
//       congestion-control: { 3: { ecn: enable, min-threshold: 150000, max-threshold: 1500000, probability: 100 } }
//       pfc-watchdog: { state: enable, polling-interval: 100ms, robustness: 3, action: drop }   or forward, alert
//   a switch may also say (each key optional):
//     buffer: { size: 16MiB, alpha: 1, reserved: 0 }  the shared pool; Spectrum's dynamic threshold (a power
//                                                     of two from 1/128 to 64); bytes each priority group
//                                                     of each port keeps for itself
//     adaptive-routing: { state: enabled, link-utilization-threshold: 70, interfaces: [swp31, swp32] }
//                                                     NVUE's router adaptive-routing; interfaces default to
//                                                     every port cabled to another switch
//     routes: [ { prefix: 10.0.3.1/32, via: [swp2] } ]  static routes out of the named ports, to the
//                                                     neighbour at their far end; a static route replaces
//                                                     the computed route for the same prefix (a static
//                                                     route's administrative distance is lower than BGP's)
//   daemon:                            optional; the daemon that runs the fabric, not the fabric itself
//     attach-group: rdma               besides the fabric's owner (the user who started it) and root,
//                                      members of this group may run programs on it (docs/security.md)
//     log: info                        spdlog levels, as ROCEFAB_LOG: "info" or "warn,nic=debug,attach=info";
//                                      components daemon, attach, control, link, nic, switch
//     max-sessions: 2048               verbs contexts (and device-list probes) open at once, in all;
//     max-sessions-per-user: 512       ... and per user; more are refused (EAGAIN), never queued
// Unknown keys are errors at every level (a misspelt `sped:` must not silently fall back to a default).
#pragma once

#include "control/config/ip_prefix.hpp"
#include "control/config/units.hpp"
#include "dataplane/time.hpp"
#include "dataplane/wire/ethernet.hpp"
#include "dataplane/wire/ip.hpp"
#include "nic_emu/dcqcn.hpp"
#include "nic_emu/nic_spec.hpp"
#include "switch_emu/switch_spec.hpp"

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace rocefab::config {

// Defaults for a link that sets nothing and a file without `defaults:`.
// 4200 is the IP MTU (as `ip link set mtu`, i.e. without the 14-byte Ethernet header) NVIDIA's RoCE guides use on
// hosts: the smallest round value at which a ConnectX reports active_mtu 4096, because the kernel subtracts 96
// bytes of worst-case RoCEv2 headers (iboe_get_mtu: GRH 40 + UDP 8 + BTH 12 + XRC 4 + AtomicETH 28 + ICRC 4).
inline constexpr std::uint64_t default_link_speed_bps = 100'000'000'000;
inline constexpr sim_time default_link_delay = microseconds(1);
inline constexpr std::uint32_t default_link_mtu = 4200;
// 9216 is the largest MTU Spectrum switches accept; 256 the smallest RoCE path MTU.
inline constexpr std::uint32_t min_link_mtu = 256;
inline constexpr std::uint32_t max_link_mtu = 9216;
inline constexpr std::uint64_t min_link_speed_bps = 1'000'000;         // 1M
inline constexpr std::uint64_t max_link_speed_bps = 1'600'000'000'000; // 1.6T
inline constexpr sim_time max_link_delay = milliseconds(100);

// Fault injection on both directions of a link (dataplane/link.hpp's link_faults).
inline constexpr sim_time default_reorder_delay = microseconds(10);
inline constexpr sim_time max_reorder_delay = milliseconds(100);
struct fault_params {
    double loss = 0, corruption = 0, duplication = 0, reordering = 0; // each in [0, 1]
    sim_time reorder_delay = default_reorder_delay;
    friend bool operator==(const fault_params&, const fault_params&) = default;
};

struct link_params {
    std::uint64_t speed_bps = default_link_speed_bps;
    sim_time delay = default_link_delay;
    std::uint32_t mtu = default_link_mtu; // IP MTU, the same at both ends of the link
    fault_params faults;
    bool up = true; // administrative state at start (only a link, not defaults.link, sets it)
};

struct nic_config {
    std::string name;
    ip_prefix address;
    // From `mac:` or else 02:01:HH:HH:NN:NN with HHHH = host index + 1 and NNNN = NIC index + 1 (locally
    // administered, unicast), so the same file gives the same MACs on every run.
    wire::mac_address mac;
    std::size_t link_index = 0; // into topology::links
};

// The `nic:` section: the NICs' trust mode and DCQCN (mlx5 knob names; ConnectX's defaults).
struct nic_settings {
    bool trust_pcp = false; // `trust: l2`: frames priority-tagged (mlnx_qos --trust pcp)
    nic::dcqcn_params dcqcn;
    std::uint8_t dcqcn_priorities = 0xff; // where DCQCN runs, as reaction and notification point
    nic::retransmission_mode retransmission = nic::retransmission_mode::go_back_n; // `retransmission:`
    bool adaptive_retransmission = false; // `adaptive-retransmission: enabled`, or a profile
    nic::adaptive_profile adaptive_timeouts;
};

struct host_config {
    std::string name;
    std::vector<nic_config> nics;
    // From nic.hosts.NAME.host-rx-rate: the rate the host takes frames at (a slow receiver);
    // 0: as fast as its link brings them.
    std::uint64_t host_rx_bps = 0;
    nic_settings nic; // the nic: section's, with nic.hosts.NAME's trust and dcqcn on top
};

struct port_config {
    std::string name;
    // 02:02:SS:SS:PP:PP with SSSS = switch index + 1 and PPPP = port index + 1.
    wire::mac_address mac;
    std::size_t link_index = 0;
    bool adaptive_routing = false; // listed in (or defaulted into) the switch's adaptive-routing interfaces
};

struct route {
    ip_prefix destination;                        // a /32 or /128 host route, or a static route's prefix
    std::vector<std::size_t> egress_ports;        // switch port indices, ascending (the ECMP set)
    std::vector<wire::mac_address> next_hop_macs; // one per egress port: the MAC at the other end of its link
};

// The shared buffer of switch_emu::switch_spec, with its defaults.
struct buffer_config {
    std::size_t size_bytes = switch_emu::switch_spec{}.buffer_bytes;
    double alpha = switch_emu::switch_spec{}.buffer_alpha;
    std::uint32_t reserved_bytes = switch_emu::switch_spec{}.reserved_bytes_per_group;
};

// Ports exist because links name them. They are ordered by name with digit runs compared as numbers
// (swp2 before swp10), not by order of appearance, so reordering `links:` changes neither port indices nor MACs.
struct switch_config {
    std::string name;
    std::vector<port_config> ports;
    switch_emu::qos_spec qos; // the `roce` preset unless the file says otherwise
    buffer_config buffer;
    switch_emu::adaptive_routing_spec adaptive_routing; // per-port enablement is in port_config
    std::vector<route> static_routes;                   // in file order
};

struct endpoint {
    enum kind { host_nic, switch_port } kind = host_nic;
    std::size_t node = 0; // index into topology::hosts or topology::switches
    std::size_t port = 0; // NIC index or port index
    friend bool operator==(const endpoint&, const endpoint&) = default;
};

struct link_config {
    endpoint a, b;
    link_params params;
    int line = 0; // of the link in the file, for messages about it at run time
};

// The `daemon:` section (the keys are documented at the top of this file).
struct daemon_settings {
    std::string attach_group; // "" when only the owner and root may attach
    std::string log_levels = "info";
    std::uint32_t max_sessions = 2048;
    std::uint32_t max_sessions_per_user = 512;
    // The CPU the data-plane thread runs on alone (fabric::dataplane_cpu): a number, or one of:
    static constexpr int dataplane_cpu_auto = -2; // the last one the daemon may use, given two or more
    static constexpr int dataplane_cpu_none = -1; // none: it shares every CPU with the programs
    int dataplane_cpu = dataplane_cpu_auto;
};

struct topology {
    std::string name;
    std::string source_file;
    std::uint64_t seed = 1; // fault injection: link i of the fabric draws from a seed derived from it and i
    std::vector<host_config> hosts;
    std::vector<switch_config> switches;
    std::vector<link_config> links;
    nic_settings nic;
    daemon_settings daemon;
    // For each switch, its routing table: one /32 (or /128) host route per NIC address in the fabric, in host
    // then NIC order, with the egress ports on all shortest paths (BFS over switches; hosts never forward), plus
    // nothing else. A NIC with no path from a switch (a back-to-back host link, a disconnected part of the
    // fabric) has no route on that switch. A switch's static routes are added, each replacing the computed
    // route for its prefix.
    std::vector<std::vector<route>> routes;

    // The MAC a NIC sends to: the switch port (or the other NIC, for a back-to-back link) at the far end of
    // its link.
    wire::mac_address gateway_mac(std::size_t host, std::size_t nic) const;
    const host_config* find_host(std::string_view name) const;
    const switch_config* find_switch(std::string_view name) const;
    wire::mac_address mac_of(const endpoint& end) const;
    // "h1/rfab0", "sw1/swp1": the spelling of the file.
    std::string endpoint_name(const endpoint& end) const;
    // The other end of the link `end` is on.
    const endpoint& peer_of(const endpoint& end) const;
};

struct config_error {
    std::string file;
    int line = 0;    // 1-based; 0 when the problem has no place in the file (file not found)
    int column = 0;  // 1-based
    std::string key; // path such as "links[1].b" (indices 0-based); empty for file-level problems
    std::string message;

    // "FILE:LINE:COLUMN: KEY: MESSAGE", e.g.
    // "configs/bad.yaml:14:7: links[1].b: unknown node 'h3' (hosts: h1, h2; switches: sw1)";
    // the position and the key are left out when unknown.
    std::string to_string() const;
};

// Loads and validates; never throws to the caller. On error returns false, fills `error` and leaves `out`
// in an unspecified state.
bool load_topology(const std::string& path, topology& out, config_error& error);
// As load_topology, from text; `file_name` is used in messages and for the default fabric name.
bool parse_topology(const std::string& yaml_text, const std::string& file_name, topology& out, config_error& error);
// The same, for a file that also holds other top-level sections (a simulation scenario's
// `traffic:`): `extra_keys` are accepted at the top level and left to their own reader.
bool parse_topology(const std::string& yaml_text, const std::string& file_name,
                    const std::vector<std::string>& extra_keys, topology& out, config_error& error);
// Reads a whole file, or says why it cannot (file name, "cannot read: ...").
bool read_config_file(const std::string& path, std::string& text, config_error& error);

// The routing tables of `topology::routes`, recomputed from hosts, switches and links.
std::vector<std::vector<route>> compute_routes(const topology& fabric);

// Pretty-printed JSON (2-space indent) of the whole topology; see json.hpp for the layout.
std::string to_json(const topology& fabric);

} // namespace rocefab::config
