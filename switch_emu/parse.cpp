#include "switch_emu/parse.hpp"

namespace rocefab::switch_emu {
namespace {

// parse_frame()'s body, inline here so that parse_frames() runs it without a call per frame.
[[gnu::always_inline]] inline parse_verdict parse_one(rte_mbuf* mbuf, const wire::mac_address& port_mac,
                                                      parsed_frame& out) {
    const std::span<const std::uint8_t> frame = frame_bytes(mbuf); // found once, for every header
    const auto* ethernet = wire::header_at<wire::ethernet_header>(frame, 0);
    if (!ethernet) [[unlikely]] {
        out = parsed_frame{};
        return parse_verdict::malformed;
    }
    // Broadcast has the group bit set too; it and multicast pass on to the EtherType checks
    // (PFC goes to 01:80:c2:00:00:01, ARP to ff:ff:ff:ff:ff:ff).
    // Unicast to another MAC is bridged, not routed: it is parsed all the same, because its
    // priority comes from its DSCP like any other frame's.
    out.bridged = !ethernet->destination.is_multicast() && !(ethernet->destination == port_mac);
    const wire::frame_status status = wire::parse_headers(frame, out);
    if (status == wire::frame_status::ip) [[likely]]
        return parse_verdict::ip;
    if (status != wire::frame_status::not_ip) return parse_verdict::malformed;
    return out.ether_type == wire::ethertype::mac_control ? parse_verdict::mac_control : parse_verdict::non_ip;
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
