#include "switch_emu/parse.hpp"

#include "dataplane/wire/ip.hpp"
#include "dataplane/wire/udp.hpp"

namespace rocefab::switch_emu {
namespace {

constexpr std::uint16_t ipv4_more_fragments_and_offset = 0x3fff;

void read_udp_ports(std::span<std::uint8_t> frame, std::size_t offset, std::uint32_t l4_length, parsed_frame& out) {
    // A router does not validate L4: a UDP payload too short for its header is still routed,
    // it just hashes as port 0.
    if (out.protocol != wire::ip_protocol::udp || l4_length < sizeof(wire::udp_header)) return;
    const auto* udp = header_at<wire::udp_header>(frame, offset);
    if (!udp) return;
    out.source_port = udp->source_port.load();
    out.destination_port = udp->destination_port.load();
}

// An IPv4 packet whose header, `header_length` bytes at out.l3_offset, lies within the frame.
// Once its total length is known to fit the frame too, so does a UDP header within it, read
// without checking again.
[[gnu::always_inline]] inline parse_verdict take_ipv4(std::span<std::uint8_t> frame, const wire::ipv4_header& ip,
                                                     std::size_t header_length, parsed_frame& out) {
    if (!ip.checksum_ok()) return parse_verdict::malformed;
    const std::uint32_t total_length = ip.total_length.load();
    // Ethernet pads short frames to 60 bytes, so the frame may be longer than the packet, never shorter.
    if (total_length < header_length || out.l3_offset + total_length > frame.size()) return parse_verdict::malformed;
    out.l3_length = total_length;
    out.dscp = ip.dscp();
    out.ecn = ip.ecn();
    out.protocol = ip.protocol;
    // Ports as read_udp_ports() reads them; a fragment hashes as port 0 (the later ones have no
    // UDP header, and all of a datagram's fragments must take one path).
    const bool udp_ports = ip.protocol == wire::ip_protocol::udp &&
                           total_length >= header_length + sizeof(wire::udp_header) &&
                           (ip.flags_fragment.load() & ipv4_more_fragments_and_offset) == 0;
    if (udp_ports) {
        const auto* udp = reinterpret_cast<const wire::udp_header*>(frame.data() + out.l3_offset + header_length);
        out.source_port = udp->source_port.load();
        out.destination_port = udp->destination_port.load();
    }
    return parse_verdict::ip;
}

// An IPv4 header of any length (IHL 5 to 15).
parse_verdict parse_ipv4_any(std::span<std::uint8_t> frame, parsed_frame& out) {
    const auto* ip = header_at<wire::ipv4_header>(frame, out.l3_offset);
    if (!ip || ip->version() != 4) return parse_verdict::malformed;
    const std::size_t header_length = ip->header_length();
    // IHL < 5 is not a header; IHL past the frame end would make the checksum read past it.
    if (header_length < sizeof(wire::ipv4_header)) return parse_verdict::malformed;
    if (out.l3_offset + header_length > frame.size()) return parse_verdict::malformed;
    return take_ipv4(frame, *ip, header_length, out);
}

// parse_ipv4_any() for the header every RoCEv2 packet has, 20 bytes without options, inline.
[[gnu::always_inline]] inline parse_verdict parse_ipv4(std::span<std::uint8_t> frame, parsed_frame& out) {
    const auto* ip = header_at<wire::ipv4_header>(frame, out.l3_offset);
    if (!ip || ip->version_ihl != 0x45) return parse_ipv4_any(frame, out);
    return take_ipv4(frame, *ip, sizeof(wire::ipv4_header), out);
}

parse_verdict parse_ipv6(std::span<std::uint8_t> frame, parsed_frame& out) {
    const auto* ip = header_at<wire::ipv6_header>(frame, out.l3_offset);
    if (!ip || ip->version() != 6) return parse_verdict::malformed;
    const std::uint32_t payload_length = ip->payload_length.load();
    if (out.l3_offset + sizeof(wire::ipv6_header) + payload_length > frame.size()) return parse_verdict::malformed;

    out.v6 = true;
    out.l3_length = sizeof(wire::ipv6_header) + payload_length;
    out.dscp = ip->dscp();
    out.ecn = ip->ecn();
    out.protocol = ip->next_header;
    // Only a UDP header right after the fixed header is hashed; behind extension headers the
    // flow hashes on addresses alone, which keeps it on one path all the same.
    read_udp_ports(frame, out.l3_offset + sizeof(wire::ipv6_header), payload_length, out);
    return parse_verdict::ip;
}

// parse_frame()'s body, inline here so that parse_frames() runs it without a call per frame.
[[gnu::always_inline]] inline parse_verdict parse_one(rte_mbuf* mbuf, const wire::mac_address& port_mac,
                                                     parsed_frame& out) {
    out = parsed_frame{};
    const std::span<std::uint8_t> frame = frame_bytes(mbuf); // found once, for every header
    const auto* ethernet = header_at<wire::ethernet_header>(frame, 0);
    if (!ethernet) return parse_verdict::malformed;
    // Broadcast has the group bit set too; it and multicast pass on to the EtherType checks
    // (PFC goes to 01:80:c2:00:00:01, ARP to ff:ff:ff:ff:ff:ff).
    // Unicast to another MAC is bridged, not routed: it is parsed all the same, because its
    // priority comes from its DSCP like any other frame's.
    out.bridged = !ethernet->destination.is_multicast() && !(ethernet->destination == port_mac);

    std::uint16_t ether_type = ethernet->ether_type.load();
    out.l3_offset = sizeof(wire::ethernet_header);
    if (ether_type == wire::ethertype::vlan) {
        const auto* tag = header_at<wire::vlan_header>(frame, out.l3_offset);
        if (!tag) return parse_verdict::malformed;
        out.vlan_tagged = true;
        out.pcp = tag->pcp();
        ether_type = tag->ether_type.load();
        out.l3_offset += sizeof(wire::vlan_header);
    }

    if (ether_type == wire::ethertype::ipv4) [[likely]] // asked first: every RoCEv2 frame is
        return parse_ipv4(frame, out);
    switch (ether_type) {
    case wire::ethertype::ipv6: return parse_ipv6(frame, out);
    case wire::ethertype::mac_control: return parse_verdict::mac_control;
    default: return parse_verdict::non_ip;
    }
}

} // namespace

parse_verdict parse_frame(rte_mbuf* frame, const wire::mac_address& port_mac, parsed_frame& out) {
    return parse_one(frame, port_mac, out);
}

void parse_frames(std::span<rte_mbuf* const> frames, const wire::mac_address& port_mac, parsed_frame* out,
                  parse_verdict* verdicts) {
    for (std::size_t i = 0; i < frames.size(); ++i) verdicts[i] = parse_one(frames[i], port_mac, out[i]);
}

} // namespace rocefab::switch_emu
