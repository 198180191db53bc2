// Fix-ups a frame fuzzer applies to a mutated frame before handing it over, when the record asks
// for them: a fuzzer cannot guess a CRC-32 or an IPv4 header checksum, so without them every
// mutation of a RoCE frame would stop at the ICRC check and the transport engines behind it would
// never run. Each fix-up goes as far as the frame's headers can be found and leaves the rest as
// it is, so that a frame too broken to fix still reaches the parser.
//
// The ICRC is written by the shipped code (wire::seal_roce_frame), not a copy of it.
#pragma once

#include "dataplane/wire/bth.hpp"
#include "dataplane/wire/ethernet.hpp"
#include "dataplane/wire/ip.hpp"
#include "dataplane/wire/roce_frame.hpp"
#include "dataplane/wire/udp.hpp"

#include <cstdint>
#include <cstring>
#include <optional>
#include <span>

namespace rocefab::fuzz {

struct roce_fixups {
    bool lengths = false;                  // IP and UDP lengths end at the frame's end
    std::optional<std::uint32_t> dest_qpn; // the BTH's destination QP
    bool seal = false;                     // IPv4 header checksum, then ICRC (and IPv6's UDP checksum)
};

namespace detail {

template <typename Header> Header* at(std::span<std::uint8_t> frame, std::size_t offset) {
    if (offset > frame.size() || frame.size() - offset < sizeof(Header)) return nullptr;
    return reinterpret_cast<Header*>(frame.data() + offset);
}

// Where the L3 header starts and which it is; false when the frame has no IPv4/IPv6 header.
inline bool find_ip(std::span<std::uint8_t> frame, std::size_t& l3, bool& v4) {
    const auto* eth = at<wire::ethernet_header>(frame, 0);
    if (!eth) return false;
    std::uint16_t type = eth->ether_type.load();
    l3 = sizeof(wire::ethernet_header);
    if (type == wire::ethertype::vlan) {
        const auto* tag = at<wire::vlan_header>(frame, l3);
        if (!tag) return false;
        type = tag->ether_type.load();
        l3 += sizeof(wire::vlan_header);
    }
    if (type == wire::ethertype::ipv4 && at<wire::ipv4_header>(frame, l3)) {
        v4 = true;
        return true;
    }
    if (type == wire::ethertype::ipv6 && at<wire::ipv6_header>(frame, l3)) {
        v4 = false;
        return true;
    }
    return false;
}

} // namespace detail

inline void apply(std::span<std::uint8_t> frame, const roce_fixups& fix) {
    std::size_t l3 = 0;
    bool v4 = false;
    if (!detail::find_ip(frame, l3, v4)) return;
    auto* ip4 = v4 ? detail::at<wire::ipv4_header>(frame, l3) : nullptr;
    auto* ip6 = v4 ? nullptr : detail::at<wire::ipv6_header>(frame, l3);
    const std::size_t ip_header = v4 ? ip4->header_length() : sizeof(wire::ipv6_header);
    if (ip_header < sizeof(wire::ipv4_header) || l3 + ip_header > frame.size()) return; // IHL < 5 or past the end
    const std::size_t l4 = l3 + ip_header;

    if (fix.lengths) {
        const std::size_t datagram = std::min<std::size_t>(frame.size() - l3, 0xffff);
        if (v4)
            ip4->total_length.store(static_cast<std::uint16_t>(datagram));
        else if (datagram >= sizeof(wire::ipv6_header))
            ip6->payload_length.store(static_cast<std::uint16_t>(datagram - sizeof(wire::ipv6_header)));
        if (auto* udp = detail::at<wire::udp_header>(frame, l4))
            udp->length.store(static_cast<std::uint16_t>(std::min<std::size_t>(l3 + datagram - l4, 0xffff)));
    }
    if (fix.dest_qpn)
        if (auto* bth = detail::at<wire::bth>(frame, l4 + sizeof(wire::udp_header))) bth->set_dest_qpn(*fix.dest_qpn);
    if (!fix.seal) return;
    if (v4) ip4->update_checksum();
    // The datagram ends where its IP header says, or at the frame's end if that comes first.
    const std::size_t stated =
        v4 ? l3 + ip4->total_length.load() : l3 + sizeof(wire::ipv6_header) + ip6->payload_length.load();
    const std::size_t end = std::min(stated, frame.size());
    wire::seal_roce_frame(frame.data(), end); // checks lengths itself: does nothing if no BTH fits
}

} // namespace rocefab::fuzz
