// What a switch is made of: its ports, its routes, its QoS maps and its buffer. Filled by the
// control plane from the topology file; the switch checks it once, at construction.
#pragma once

#include "dataplane/time.hpp"
#include "dataplane/wire/ethernet.hpp"
#include "dataplane/wire/ip.hpp"

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace rocefab::switch_emu {

inline constexpr unsigned traffic_class_count = 8; // 802.1Q priorities and Spectrum egress TCs

struct port_spec {
    std::string name;        // swp1, swp2, ... as Cumulus names front-panel ports
    wire::mac_address mac;   // the routed port's own MAC: frames to it are routed
    std::uint64_t speed_bps; // reported; the link the driver attaches does the shaping
    std::uint32_t mtu;       // IP MTU (L3 length, Ethernet header excluded), as `ip link` shows it
    // One-way delay of the cable to the neighbour (5 ns a metre of fibre): sizes PFC headroom.
    sim_time cable_delay = 500; // NVUE's default cable-length, 100 m
    // NVUE `interface swpN router adaptive-routing state enabled`: a route whose every next hop is
    // on such a port may send RoCE packets over any of them (adaptive_routing.hpp).
    bool adaptive_routing = false;
};

struct route_spec {
    wire::ipv6_address prefix; // v4-mapped (::ffff:a.b.c.d) for IPv4
    unsigned length;           // 0..32 for IPv4, 0..128 for IPv6
    bool v6;
    std::vector<std::uint16_t> ports;             // one entry: a plain route; several: an ECMP group
    std::vector<wire::mac_address> next_hop_macs; // next_hop_macs[i] is the neighbour behind ports[i]
};

// Cumulus `qos.trust`: DSCP (the RoCE default) or PCP (`trust l2`).
enum class trust_mode : std::uint8_t { dscp, pcp };

// NVIDIA's RoCE defaults (DESIGN.md): DSCP 26 → priority 3 (RoCE data, lossless),
// DSCP 48 → priority 6 (CNP); everything else best effort.
constexpr std::array<std::uint8_t, 64> default_dscp_to_priority() {
    std::array<std::uint8_t, 64> map{};
    map[26] = 3;
    map[48] = 6;
    return map;
}

// Cumulus `qos egress-scheduler`: each traffic class is strict or DWRR with a bandwidth share.
enum class tc_mode : std::uint8_t { strict, dwrr };

struct ets_spec {
    // NVIDIA's RoCE default (`nv set qos roce`): TC 6 (CNPs) strict, TC 0 and TC 3 DWRR 50/50.
    // A DWRR class with 0 % sends only when no other class has a frame.
    std::array<tc_mode, 8> mode = {tc_mode::dwrr, tc_mode::dwrr, tc_mode::dwrr,   tc_mode::dwrr,
                                   tc_mode::dwrr, tc_mode::dwrr, tc_mode::strict, tc_mode::dwrr};
    std::array<std::uint8_t, 8> bandwidth_percent = {50, 0, 0, 50, 0, 0, 0, 0};
};

// Cumulus `qos congestion-control` for one traffic class: ECN marking (and, for packets that
// cannot be marked, WRED dropping) against the egress queue's depth. Below min nothing happens;
// between min and max an ECN-capable packet is marked CE with a probability rising linearly to
// probability_percent; above max every ECN-capable packet is marked, and in a lossy class a
// packet that is not ECN-capable is dropped.
struct congestion_spec {
    bool enabled = false;
    std::uint64_t min_bytes = 150'000;
    std::uint64_t max_bytes = 1'500'000;
    std::uint8_t probability_percent = 100;
};

// Cumulus `qos pfc-watchdog` (pfc_watchdog.hpp): polling every 100 ms, a storm declared after
// 3 polls in a row, dropping, as NVIDIA's defaults.
enum class pfc_watchdog_action : std::uint8_t { drop, forward, alert };
inline const char* to_string(pfc_watchdog_action a) {
    return a == pfc_watchdog_action::drop ? "drop" : a == pfc_watchdog_action::forward ? "forward" : "alert";
}

struct pfc_watchdog_spec {
    bool enabled = true;
    sim_time polling_interval = 100'000'000; // 100 ms
    std::uint8_t robustness = 3;
    pfc_watchdog_action action = pfc_watchdog_action::drop;
};

struct qos_spec {
    trust_mode trust = trust_mode::dscp;
    std::array<std::uint8_t, 64> dscp_to_priority = default_dscp_to_priority();
    // Under PCP trust an untagged frame has no PCP; it takes the port's default priority.
    std::uint8_t default_priority = 0;
    std::array<std::uint8_t, traffic_class_count> priority_to_tc = {0, 1, 2, 3, 4, 5, 6, 7};
    ets_spec ets;
    // NVIDIA's RoCE default: ECN on TC 0 and TC 3 at 150 000 / 1 500 000 B, 100 %.
    std::array<congestion_spec, traffic_class_count> congestion = {
        congestion_spec{true}, {}, {}, congestion_spec{true}, {}, {}, {}, {}};
    // Priorities PFC keeps lossless (the RoCE default: 3). Their classes never drop for WRED.
    std::uint8_t lossless_priorities = 1u << 3;
    pfc_watchdog_spec pfc_watchdog;
};

// A host's MAC behind one of the switch's ports: frames to it are bridged there unchanged
// (hosts on one subnet reach each other at L2, as through a Cumulus bridge with an SVI). The
// table is static, from the topology, as after the hosts' first ARP exchange.
struct neighbour_spec {
    wire::mac_address mac;
    std::uint16_t port;
};

// NVUE `router adaptive-routing` (Spectrum's AR): instead of keeping a flow on its hashed ECMP
// member, each RoCE packet goes to the least-loaded member of its group. Every
// decision_interval the switch grades its ports by utilisation and queued bytes; a member whose
// utilisation is at or over the threshold is not eligible while another one is under it.
struct adaptive_routing_spec {
    bool enabled = false;
    std::uint8_t link_utilization_threshold_percent = 70; // NVUE's default
    sim_time decision_interval = 1'000;                   // Spectrum re-grades every 1 us
};

struct switch_spec {
    std::string name;
    std::vector<port_spec> ports;
    std::vector<route_spec> routes;
    std::vector<neighbour_spec> neighbours;
    std::size_t buffer_bytes = 16 * 1024 * 1024; // the shared pool, Spectrum-2 class
    // Dynamic threshold: a priority group may hold up to alpha x the shared pool's free bytes.
    double buffer_alpha = 1.0;
    // Bytes each priority group of each port may hold whatever the shared pool's state.
    std::uint32_t reserved_bytes_per_group = 0;
    qos_spec qos;
    adaptive_routing_spec adaptive_routing;
    // Frames each (port, TC) FIFO can hold; rounded up to a power of two. The byte budget above
    // is what normally limits a queue: this only bounds the ring allocated at construction.
    std::uint32_t queue_frames = 4096;
    // Mixed into the ECMP hash. Tiers of a Clos fabric should differ, or every tier makes the
    // same choice and some uplinks sit idle (hash polarisation).
    std::uint32_t ecmp_seed = 0;
    // Seeds the switch's own random choices (ECN marking probability): same seed, same marks.
    std::uint64_t random_seed = 1;
    // How far ahead of the wire a port may hand frames to its link: a port's transmit FIFO after
    // the scheduler. 0 keeps the whole backlog in the switch's queues (exact under virtual time);
    // a realtime fabric, whose poll loop runs slower than one frame time at 100 Gb/s, needs a
    // few microseconds or the port cannot reach its line rate.
    sim_time transmit_fifo = 0;
    // How long a neighbour takes to act on a pause once it arrives: 1 us for hardware. A realtime
    // fabric's data plane acts on it at its next poll, which the host's scheduler may delay.
    sim_time pfc_reaction = 1'000;
};

// Empty when `spec` is usable; otherwise what is wrong, naming the port or route.
std::string validate(const switch_spec& spec);

} // namespace rocefab::switch_emu
