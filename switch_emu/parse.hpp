// Stage 1, parse: find the L3 header of a frame received on a routed port and check that the
// frame really holds what its headers claim. Nothing after this stage re-checks lengths. The
// headers are parsed by wire::parse_headers(), the one parse the NIC's receive path shares.
#pragma once

#include "dataplane/packet.hpp"
#include "dataplane/wire/ethernet.hpp"
#include "dataplane/wire/frame_info.hpp"

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

// The frame's headers as wire::frame_info holds them (l3_offset, l3_length, v6, vlan_tagged,
// pcp, traffic_class, protocol, the UDP ports the ECMP hash reads), and what only a switch asks.
// Like frame_info, without member initializers: parse_frame() sets every field.
struct parsed_frame : wire::frame_info {
    bool bridged; // unicast to another MAC than the port's: switched at L2
};

// Decides what the frame is; `out` is meaningful only for parse_verdict::ip. Reads only within
// the frame's data, so any byte sequence, of any length, is safe to pass.
parse_verdict parse_frame(rte_mbuf* frame, const wire::mac_address& port_mac, parsed_frame& out);

// The stage over a vector: parse_frame() of frames[i] into out[i] and verdicts[i]. `out` and
// `verdicts` hold at least frames.size() entries.
void parse_frames(std::span<rte_mbuf* const> frames, const wire::mac_address& port_mac, parsed_frame* out,
                  parse_verdict* verdicts);

} // namespace rocefab::switch_emu
