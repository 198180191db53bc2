// One parse of a frame's Ethernet, 802.1Q, IP and UDP headers into one record, as rxe's
// rxe_pkt_info or DPDK's mbuf l2_len/l3_len hold them. The switch's parse stage, the RoCE parser
// (roce_frame.hpp, which goes on to the BTH, extension headers and ICRC) and the NIC's receive
// buffer all start from it, so that they agree on every offset and every field.
//
// Inline, header and all: the switch parses every frame it receives with it, and its parse
// stage is counted in instructions (bench/switch_instructions).
#pragma once

#include "dataplane/wire/ethernet.hpp"
#include "dataplane/wire/ip.hpp"
#include "dataplane/wire/udp.hpp"

#include <cstddef>
#include <cstdint>
#include <span>

namespace rocefab::wire {

// How far parse_headers() got. After bad_ip_length and truncated_datagram the IP header's own
// fields are filled in, so that a caller can check them first (the RoCE parser rejects a
// fragment, is_fragment(), or a non-UDP packet before it looks at lengths).
enum class frame_status : std::uint8_t {
    ip,            // an IPv4 or IPv6 datagram, whole within the frame (Ethernet padding may follow)
    not_ip,        // neither IPv4 nor IPv6 behind Ethernet [802.1Q]: frame_info::ether_type says what
    truncated_l2,  // the frame ends within Ethernet or its 802.1Q tag
    truncated_l3,  // the frame ends within the IP header
    bad_ip_header, // wrong IP version, or IPv4 IHL < 5
    bad_ip_checksum,
    bad_ip_length,      // IPv4 total length shorter than its own header
    truncated_datagram, // the frame ends before the datagram its IP header announces
};

// Plain data, on purpose without member initializers: the switch keeps a vector of these on its
// stack for every burst, and zeroing it there cost 4 instructions a frame (bench/switch_instructions)
// for fields that parse_headers() sets anyway. parse_headers() starts each record from frame_info{}.
struct frame_info {
    std::uint16_t l3_offset;  // 14, or 18 behind an 802.1Q tag (DPDK's l2_len)
    std::uint16_t l4_offset;  // l3_offset + the IP header's length (DPDK's l2_len + l3_len)
    std::uint32_t l3_length;  // IPv4 total length, or 40 + IPv6 payload length
    std::uint16_t ether_type; // behind the tag, if any
    std::uint16_t vid;        // meaningful only when vlan_tagged
    bool vlan_tagged;
    std::uint8_t pcp; // meaningful only when vlan_tagged
    bool v6;
    // IPv4 TOS or IPv6 traffic class: DSCP (6) | ECN (2), kept whole as the header has it (one
    // load and one store for the switch). Read as soon as the frame holds the IP header's first
    // two bytes, before any check: a port buffer classifies a frame before its IP header is validated.
    std::uint8_t traffic_class;
    std::uint8_t hop_limit; // IPv4 TTL or IPv6 hop limit
    std::uint8_t protocol;  // IPv4 protocol or IPv6 next header
    // UDP ports in host order, as the switch's ECMP hash reads them. 0 when not UDP; when the
    // datagram is too short for a UDP header (a router does not validate L4: such a packet is
    // still routed, it hashes as port 0); in an IPv4 fragment (a later fragment has no UDP
    // header, and all of a datagram's fragments must take one path). Over IPv6 only a UDP header
    // right after the fixed header is read: behind extension headers a flow hashes on its
    // addresses alone, which keeps it on one path all the same.
    std::uint16_t source_port;
    std::uint16_t destination_port;

    std::uint8_t dscp() const { return traffic_class >> 2; }
    std::uint8_t ecn() const { return traffic_class & 3; }                    // wire::ecn
    std::size_t l3_end() const { return std::size_t(l3_offset) + l3_length; } // where the datagram ends
};

// Typed view of the header at `offset`, or nullptr when the frame ends before the header does.
// Offsets here are header offsets, far below any size_t overflow.
template <typename Header> inline const Header* header_at(std::span<const std::uint8_t> frame, std::size_t offset) {
    if (offset + sizeof(Header) > frame.size()) return nullptr;
    return reinterpret_cast<const Header*>(frame.data() + offset);
}

// More Fragments or a fragment offset (RFC 791). Masked in wire order, the mask swapped at
// compile time: one test, no byte swap.
inline bool is_fragment(const ipv4_header& ip) {
    constexpr std::uint16_t more_fragments_and_offset = 0x3fff;
    return (ip.flags_fragment.raw() & be16(more_fragments_and_offset).raw()) != 0;
}

namespace detail {

// An IPv4 header of `header_length` bytes at out.l3_offset that lies within the frame. Once its
// total length is known to fit the frame too, so does a UDP header within it, read unchecked.
[[gnu::always_inline]] inline frame_status take_ipv4(std::span<const std::uint8_t> frame, const ipv4_header& ip,
                                                     std::size_t header_length, frame_info& out) {
    if (!ip.checksum_ok()) return frame_status::bad_ip_checksum;
    const std::uint32_t total_length = ip.total_length.load();
    out.l4_offset = static_cast<std::uint16_t>(out.l3_offset + header_length);
    out.l3_length = total_length;
    out.hop_limit = ip.ttl;
    out.protocol = ip.protocol;
    if (total_length < header_length) return frame_status::bad_ip_length;
    // Ethernet pads short frames to 60 bytes, so the frame may be longer than the packet, never shorter.
    if (out.l3_offset + total_length > frame.size()) return frame_status::truncated_datagram;
    if (ip.protocol == ip_protocol::udp && total_length >= header_length + sizeof(udp_header) && !is_fragment(ip)) {
        const auto* udp = reinterpret_cast<const udp_header*>(frame.data() + out.l4_offset);
        out.source_port = udp->source_port.load();
        out.destination_port = udp->destination_port.load();
    }
    return frame_status::ip;
}

// An IPv4 header of any length (IHL 5 to 15), or too short for one.
[[gnu::noinline]] inline frame_status parse_ipv4_any(std::span<const std::uint8_t> frame, frame_info& out) {
    if (frame.size() < out.l3_offset + 2u) return frame_status::truncated_l3;
    out.traffic_class = frame[out.l3_offset + 1];
    const auto* ip = header_at<ipv4_header>(frame, out.l3_offset);
    if (!ip) return frame_status::truncated_l3;
    const std::size_t header_length = ip->header_length();
    if (ip->version() != 4 || header_length < sizeof(ipv4_header)) return frame_status::bad_ip_header;
    // IHL past the frame end would make the checksum read past it.
    if (out.l3_offset + header_length > frame.size()) return frame_status::truncated_l3;
    return take_ipv4(frame, *ip, header_length, out);
}

// parse_ipv4_any() for the header every RoCEv2 packet has, 20 bytes without options, inline.
[[gnu::always_inline]] inline frame_status parse_ipv4(std::span<const std::uint8_t> frame, frame_info& out) {
    const auto* ip = header_at<ipv4_header>(frame, out.l3_offset);
    if (!ip || ip->version_ihl != 0x45) [[unlikely]]
        return parse_ipv4_any(frame, out);
    out.traffic_class = ip->tos;
    return take_ipv4(frame, *ip, sizeof(ipv4_header), out);
}

[[gnu::noinline]] inline frame_status parse_ipv6(std::span<const std::uint8_t> frame, frame_info& out) {
    out.v6 = true;
    if (frame.size() < out.l3_offset + 2u) return frame_status::truncated_l3;
    // Version (4) | traffic class (8) | ...: the traffic class straddles the first two bytes.
    out.traffic_class = static_cast<std::uint8_t>((frame[out.l3_offset] & 0x0f) << 4 | frame[out.l3_offset + 1] >> 4);
    const auto* ip = header_at<ipv6_header>(frame, out.l3_offset);
    if (!ip) return frame_status::truncated_l3;
    if (ip->version() != 6) return frame_status::bad_ip_header;
    const std::uint32_t payload_length = ip->payload_length.load();
    out.l4_offset = static_cast<std::uint16_t>(out.l3_offset + sizeof(ipv6_header));
    out.l3_length = sizeof(ipv6_header) + payload_length;
    out.hop_limit = ip->hop_limit;
    out.protocol = ip->next_header;
    if (out.l3_end() > frame.size()) return frame_status::truncated_datagram;
    if (ip->next_header == ip_protocol::udp && payload_length >= sizeof(udp_header)) {
        const auto* udp = reinterpret_cast<const udp_header*>(frame.data() + out.l4_offset);
        out.source_port = udp->source_port.load();
        out.destination_port = udp->destination_port.load();
    }
    return frame_status::ip;
}

} // namespace detail

namespace detail {

// Ethernet and its 802.1Q tag, if any: out.l3_offset, out.ether_type and the tag's fields; false
// when the frame ends within them. Starts `out` afresh.
[[gnu::always_inline]] inline bool parse_ethernet(std::span<const std::uint8_t> frame, frame_info& out) {
    out = frame_info{};
    const auto* ethernet = header_at<ethernet_header>(frame, 0);
    if (!ethernet) return false;
    std::uint16_t ether_type = ethernet->ether_type.load();
    out.l3_offset = sizeof(ethernet_header);
    if (ether_type == ethertype::vlan) {
        const auto* tag = header_at<vlan_header>(frame, out.l3_offset);
        if (!tag) return false;
        out.vlan_tagged = true;
        out.pcp = tag->pcp();
        out.vid = tag->vid();
        ether_type = tag->ether_type.load();
        out.l3_offset += sizeof(vlan_header);
    }
    out.ether_type = ether_type;
    return true;
}

} // namespace detail

// Ethernet and its 802.1Q tag only: out.l3_offset, out.ether_type and the tag's fields. ip means
// only that an IPv4 or IPv6 header should follow, at out.l3_offset.
inline frame_status parse_l2(std::span<const std::uint8_t> frame, frame_info& out) {
    if (!detail::parse_ethernet(frame, out)) return frame_status::truncated_l2;
    return out.ether_type == ethertype::ipv4 || out.ether_type == ethertype::ipv6 ? frame_status::ip
                                                                                  : frame_status::not_ip;
}

// The whole parse: Ethernet [802.1Q] / IPv4 or IPv6 [/ UDP ports]. Reads only within `frame`, so
// any byte sequence, of any length, is safe to pass; fills `out` as far as it got.
[[gnu::always_inline]] inline frame_status parse_headers(std::span<const std::uint8_t> frame, frame_info& out) {
    if (!detail::parse_ethernet(frame, out)) return frame_status::truncated_l2;
    if (out.ether_type == ethertype::ipv4) [[likely]] // asked first: every RoCEv2 frame is
        return detail::parse_ipv4(frame, out);
    if (out.ether_type == ethertype::ipv6) return detail::parse_ipv6(frame, out);
    return frame_status::not_ip;
}

} // namespace rocefab::wire
