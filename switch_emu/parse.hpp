// Stage 1, parse: find the L3 header of a frame received on a routed port and check that the
// frame really holds what its headers claim. Nothing after this stage re-checks lengths. The
// headers are parsed by wire::parse_headers(), the one parse the NIC's receive path shares.
#pragma once

#include "dataplane/packet.hpp"
#include "dataplane/wire/ethernet.hpp"
#include "dataplane/wire/frame_info.hpp"

#include <cstdint>
#include <cstring>
#include <span>

namespace rocefab::switch_emu {

enum class parse_verdict : std::uint8_t {
    ip,          // an IPv4 or IPv6 packet for us to route; `parsed_frame` is filled in
    mac_control, // 802.3x PAUSE / 802.1Qbb PFC: consumed by the port, never forwarded
    not_for_us,  // unicast to a MAC the switch does not know (see parsed_frame::bridged)
    malformed,   // shorter than its headers say, bad version/IHL, bad IPv4 header checksum
    non_ip,      // ARP, QinQ, anything else
};

// The frame's headers as wire::frame_info holds them (l3_offset, l3_length, v6, vlan_tagged,
// pcp, traffic_class, protocol, the UDP ports the ECMP hash reads), and what only a switch asks.
// Like frame_info, without member initializers: parse_frame() sets every field.
struct parsed_frame : wire::frame_info {
    bool bridged; // unicast to another MAC than the port's: switched at L2
};

// Decides what the frame is; `out` is meaningful only for parse_verdict::ip. Reads only within
// the frame's data, so any byte sequence, of any length, is safe to pass. `port_mac` is the
// receiving port's MAC as mac_address::as_word() gives it: a register for the whole vector.
// Inline: the switch runs it in the loop that also classifies and routes each frame
// (switch_node::receive_burst).
[[gnu::always_inline]] inline parse_verdict parse_frame(rte_mbuf* mbuf, std::uint64_t port_mac, parsed_frame& out) {
    const std::span<const std::uint8_t> frame = frame_bytes(mbuf); // found once, for every header
    if (frame.size() < sizeof(wire::ethernet_header)) [[unlikely]] {
        out = parsed_frame{};
        return parse_verdict::malformed;
    }
    // Broadcast has the group bit set too; it and multicast pass on to the EtherType checks
    // (PFC goes to 01:80:c2:00:00:01, ARP to ff:ff:ff:ff:ff:ff).
    // Unicast to another MAC is bridged, not routed: it is parsed all the same, because its
    // priority comes from its DSCP like any other frame's.
    std::uint64_t destination; // and the first two bytes of the source, masked off
    std::memcpy(&destination, frame.data(), sizeof destination);
    out.bridged = !(frame[0] & 1) && ((destination ^ port_mac) & wire::mac_address::address_mask) != 0;
    const wire::frame_status status = wire::parse_headers(frame, out);
    if (status == wire::frame_status::ip) [[likely]]
        return parse_verdict::ip;
    if (status != wire::frame_status::not_ip) return parse_verdict::malformed;
    return out.ether_type == wire::ethertype::mac_control ? parse_verdict::mac_control : parse_verdict::non_ip;
}

inline parse_verdict parse_frame(rte_mbuf* frame, const wire::mac_address& port_mac, parsed_frame& out) {
    return parse_frame(frame, port_mac.as_word(), out);
}

} // namespace rocefab::switch_emu
