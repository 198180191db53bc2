// Stage 1, parse: find the L3 header of a frame received on a routed port and check that the
// frame really holds what its headers claim. Nothing after this stage re-checks lengths.
#pragma once

#include "dataplane/packet.hpp"
#include "dataplane/wire/ethernet.hpp"

#include <cstdint>
#include <span>

namespace rocefab::switch_emu {

enum class parse_verdict : std::uint8_t {
    ip,          // an IPv4 or IPv6 packet for us to route; `parsed_frame` is filled in
    mac_control, // 802.3x PAUSE / 802.1Qbb PFC: consumed by the port, never forwarded
    not_for_us,  // unicast to a MAC the switch does not know (see parsed_frame::bridged)
    malformed,   // shorter than its headers say, bad version/IHL, bad IPv4 header checksum
    non_ip,      // ARP, QinQ, anything else
};

struct parsed_frame {
    std::uint16_t l3_offset = 0;  // 14, or 18 behind an 802.1Q tag
    std::uint32_t l3_length = 0;  // IPv4 total length, or 40 + IPv6 payload length
    bool v6 = false;
    bool bridged = false;         // unicast to another MAC than the port's: switched at L2
    bool vlan_tagged = false;
    std::uint8_t pcp = 0;         // meaningful only when vlan_tagged
    std::uint8_t dscp = 0;
    std::uint8_t ecn = 0;         // the IP header's ECN field (wire::ecn)
    std::uint8_t protocol = 0;    // IPv4 protocol or IPv6 next header
    // UDP ports in host order for the ECMP hash; 0 when not UDP, or an IPv4 fragment (a later
    // fragment has no UDP header, and all fragments of a datagram must take the same path).
    std::uint16_t source_port = 0;
    std::uint16_t destination_port = 0;
};

// Decides what the frame is; fills `out` only for parse_verdict::ip. Reads only within the
// frame's data, so any byte sequence, of any length, is safe to pass.
parse_verdict parse_frame(rte_mbuf* frame, const wire::mac_address& port_mac, parsed_frame& out);

// The stage over a vector: parse_frame() of frames[i] into out[i] and verdicts[i]. `out` and
// `verdicts` hold at least frames.size() entries.
void parse_frames(std::span<rte_mbuf* const> frames, const wire::mac_address& port_mac, parsed_frame* out,
                  parse_verdict* verdicts);

} // namespace rocefab::switch_emu
