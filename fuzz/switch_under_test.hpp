// The switch fuzz_switch_rx feeds: what it is made of, shared with the seed tool so that seeds
// are addressed to its ports, routes and neighbours.
//
// Three ports at three speeds (the sink serialises at these rates, so queues build where a
// fast port sends into a slow one), NVIDIA's RoCE QoS preset (qos_spec's defaults: trust DSCP,
// 26 -> priority 3 lossless, 48 -> 6 strict, ECN on TC 0 and 3, ETS 50/50, PFC watchdog), a
// route table with plain, ECMP, host and default routes over IPv4 and IPv6, and a neighbour
// behind each port for bridged frames. The buffer is small (256 KiB) so that a few records
// reach the dynamic threshold, XOFF and headroom.
#pragma once

#include "switch_emu/switch_spec.hpp"

#include <array>
#include <cstdint>

namespace rocefab::fuzz::switch_under_test {

inline constexpr std::uint16_t port_count = 3;
inline constexpr std::array<std::uint64_t, port_count> port_speed_bps = {100'000'000'000ull, 25'000'000'000ull,
                                                                         1'000'000'000ull};
inline constexpr std::array<std::uint32_t, port_count> port_mtu = {9000, 4200, 1500};

constexpr wire::mac_address port_mac(std::uint16_t port) {
    return {{0x02, 0, 0, 0, 0, static_cast<std::uint8_t>(port)}};
}
// The host (or next switch) at the far end of each port.
constexpr wire::mac_address neighbour_mac(std::uint16_t port) {
    return {{0x02, 0, 0, 0, 0xbb, static_cast<std::uint8_t>(port)}};
}
// 10.0.P.0/24 is behind port P; 10.0.P.2 is its host.
constexpr std::uint32_t host_ipv4(std::uint16_t port) { return 0x0a000002u | std::uint32_t(port) << 8; }
// 2001:db8:0:P::2 is behind port P.
inline wire::ipv6_address host_ipv6(std::uint16_t port) {
    wire::ipv6_address a{};
    a.bytes = {0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, static_cast<std::uint8_t>(port), 0, 0, 0, 0, 0, 0, 0, 2};
    return a;
}
// Routed over ECMP (ports 1 and 2): 10.1.0.0/16, and IPv6's default route.
inline constexpr std::uint32_t ecmp_ipv4 = 0x0a010203u;

// `config`, the input's first byte, picks a variant:
namespace config_bit {
inline constexpr std::uint8_t trust_pcp = 1 << 0;        // qos.trust l2
inline constexpr std::uint8_t lossy = 1 << 1;            // the roce-lossy preset: no PFC priority
inline constexpr std::uint8_t adaptive_routing = 1 << 2; // on ports 1 and 2 (the ECMP group)
inline constexpr std::uint8_t watchdog_forward = 1 << 3; // PFC watchdog action forward, not drop
inline constexpr std::uint8_t reserved_bytes = 1 << 4;   // 4 KiB reserved per priority group
inline constexpr std::uint8_t transmit_fifo = 1 << 5;    // a realtime fabric's 2 us transmit FIFO
inline constexpr std::uint8_t fast_watchdog = 1 << 6;    // watchdog polls every 1 ms
inline constexpr std::uint8_t small_alpha = 1 << 7;      // dynamic threshold alpha 1/8
} // namespace config_bit

inline switch_emu::switch_spec make_spec(std::uint8_t config) {
    using namespace switch_emu;
    switch_spec spec;
    spec.name = "fuzz";
    for (std::uint16_t p = 0; p < port_count; ++p) {
        port_spec port{"swp" + std::to_string(p + 1), port_mac(p), port_speed_bps[p], port_mtu[p]};
        port.adaptive_routing = (config & config_bit::adaptive_routing) && p != 0;
        spec.ports.push_back(port);
        spec.routes.push_back(
            {wire::ipv6_address::v4_mapped(host_ipv4(p) & 0xffffff00u), 24, false, {p}, {neighbour_mac(p)}});
        wire::ipv6_address v6 = host_ipv6(p);
        v6.bytes[15] = 0;
        spec.routes.push_back({v6, 64, true, {p}, {neighbour_mac(p)}});
        spec.neighbours.push_back({neighbour_mac(p), p});
    }
    const std::vector<std::uint16_t> ecmp = {1, 2};
    const std::vector<wire::mac_address> ecmp_macs = {neighbour_mac(1), neighbour_mac(2)};
    spec.routes.push_back({wire::ipv6_address::v4_mapped(0x0a010000u), 16, false, ecmp, ecmp_macs});
    spec.routes.push_back({wire::ipv6_address::v4_mapped(0x0a000301u), 32, false, {2}, {neighbour_mac(2)}});
    spec.routes.push_back({wire::ipv6_address{}, 0, true, ecmp, ecmp_macs});
    spec.buffer_bytes = 256 * 1024;
    spec.queue_frames = 256;
    if (config & config_bit::trust_pcp) spec.qos.trust = trust_mode::pcp;
    if (config & config_bit::lossy) spec.qos.lossless_priorities = 0;
    spec.adaptive_routing.enabled = config & config_bit::adaptive_routing;
    if (config & config_bit::watchdog_forward) spec.qos.pfc_watchdog.action = pfc_watchdog_action::forward;
    if (config & config_bit::reserved_bytes) spec.reserved_bytes_per_group = 4096;
    if (config & config_bit::transmit_fifo) spec.transmit_fifo = microseconds(2);
    if (config & config_bit::fast_watchdog) spec.qos.pfc_watchdog.polling_interval = milliseconds(1);
    if (config & config_bit::small_alpha) spec.buffer_alpha = 1.0 / 8;
    return spec;
}

// A record's flags.
namespace flag {
inline constexpr std::uint8_t port_mask = 3; // ingress port (3 is port 0 too)
inline constexpr std::uint8_t fix_lengths = 1 << 2;
inline constexpr std::uint8_t seal = 1 << 3; // IPv4 header checksum and ICRC
inline constexpr std::uint8_t hold = 1 << 4; // goes in one burst with the next record's frames
} // namespace flag

} // namespace rocefab::fuzz::switch_under_test
