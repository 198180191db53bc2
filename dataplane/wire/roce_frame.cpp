#include "dataplane/wire/roce_frame.hpp"

#include <cstring>

namespace rocefab::wire {
namespace {

std::size_t l2_length(bool vlan) { return sizeof(ethernet_header) + (vlan ? sizeof(vlan_header) : 0); }

std::size_t l3_length(const roce_headers_spec& spec) {
    return uses_ipv4(spec) ? sizeof(ipv4_header) : sizeof(ipv6_header);
}

// RFC 1071 one's-complement sum of `n` bytes, folded into `sum` (not yet complemented).
std::uint32_t ones_sum(std::uint32_t sum, const std::uint8_t* p, std::size_t n) {
    for (; n >= 2; p += 2, n -= 2) sum += std::uint32_t(p[0]) << 8 | p[1];
    if (n) sum += std::uint32_t(p[0]) << 8;
    return sum;
}

// UDP checksum over IPv6 (RFC 8200 8.1: mandatory, pseudo-header included). The traffic class
// is not part of the pseudo-header, so ECN marking on the way leaves it valid.
void write_udp_checksum_ipv6(std::uint8_t* frame, std::size_t l3, std::size_t l4, std::size_t udp_end) {
    const auto* ip = reinterpret_cast<const ipv6_header*>(frame + l3);
    auto* udp = reinterpret_cast<udp_header*>(frame + l4);
    const std::size_t udp_length = udp_end - l4;
    udp->checksum.store(0);
    std::uint32_t sum = ones_sum(0, ip->source.bytes.data(), 32); // source and destination
    sum += static_cast<std::uint32_t>(udp_length >> 16) + static_cast<std::uint32_t>(udp_length & 0xffff);
    sum += ip_protocol::udp;
    sum = ones_sum(sum, reinterpret_cast<const std::uint8_t*>(udp), udp_length);
    while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
    const auto checksum = static_cast<std::uint16_t>(~sum);
    udp->checksum.store(checksum == 0 ? 0xffff : checksum); // 0 would mean "no checksum"
}

template <typename Header> void write_at(std::uint8_t* out, std::size_t offset, const Header& h) {
    std::memcpy(out + offset, &h, sizeof h);
}

} // namespace

std::size_t roce_header_length(const roce_headers_spec& spec) {
    const opcode_info& info = opcode_info_of(spec.opcode);
    if (!info.valid) return 0;
    return l2_length(spec.vlan) + l3_length(spec) + sizeof(udp_header) + info.header_length;
}

std::size_t roce_frame_length(const roce_headers_spec& spec, std::size_t payload_length) {
    const std::size_t headers = roce_header_length(spec);
    if (headers == 0) return 0;
    return headers + payload_length + pad_for(payload_length) + icrc_length;
}

std::size_t write_roce_headers(std::uint8_t* out, const roce_headers_spec& spec, std::size_t payload_length) {
    const opcode_info& info = opcode_info_of(spec.opcode);
    if (!info.valid) return 0;
    const std::uint8_t pad = pad_for(payload_length);
    const std::size_t udp_length = sizeof(udp_header) + info.header_length + payload_length + pad + icrc_length;

    std::size_t at = 0;
    ethernet_header eth{};
    eth.destination = spec.destination_mac;
    eth.source = spec.source_mac;
    const bool v4 = uses_ipv4(spec);
    const std::uint16_t l3_type = v4 ? ethertype::ipv4 : ethertype::ipv6;
    eth.ether_type.store(spec.vlan ? ethertype::vlan : l3_type);
    write_at(out, at, eth);
    at += sizeof eth;
    if (spec.vlan) {
        vlan_header tag{};
        tag.set(spec.pcp, spec.vid);
        tag.ether_type.store(l3_type);
        write_at(out, at, tag);
        at += sizeof tag;
    }

    if (v4) {
        ipv4_header ip{};
        ip.version_ihl = 0x45;
        ip.set_dscp_ecn(spec.dscp, spec.ecn);
        ip.total_length.store(static_cast<std::uint16_t>(sizeof(ipv4_header) + udp_length));
        // Don't Fragment, as rxe and ConnectX send: RoCE relies on path MTU, never on fragments.
        ip.flags_fragment.store(0x4000);
        ip.ttl = spec.hop_limit;
        ip.protocol = ip_protocol::udp;
        ip.source.store(spec.source_gid.v4());
        ip.destination.store(spec.destination_gid.v4());
        ip.update_checksum();
        write_at(out, at, ip);
        at += sizeof ip;
    } else {
        ipv6_header ip{};
        ip.set(spec.dscp, spec.ecn, spec.flow_label);
        ip.payload_length.store(static_cast<std::uint16_t>(udp_length));
        ip.next_header = ip_protocol::udp;
        ip.hop_limit = spec.hop_limit;
        ip.source = spec.source_gid;
        ip.destination = spec.destination_gid;
        write_at(out, at, ip);
        at += sizeof ip;
    }

    udp_header udp{};
    udp.source_port.store(spec.udp_source_port);
    udp.destination_port.store(roce_v2_udp_port);
    udp.length.store(static_cast<std::uint16_t>(udp_length));
    // Checksum 0 over IPv4 (RFC 768 allows it): RoCEv2 relies on the ICRC (Annex A17.4.2), and a
    // switch rewriting DSCP/ECN would otherwise have to fix it up. Over IPv6 a zero checksum is
    // illegal (RFC 8200 8.1), so seal_roce_frame() computes it once the payload is in place.
    write_at(out, at, udp);
    at += sizeof udp;

    const std::size_t bth_at = at;
    bth base{};
    base.set_opcode(spec.opcode);
    base.set_solicited(spec.solicited);
    base.set_pad_count(pad);
    base.set_pkey(spec.pkey);
    base.set_becn(spec.becn);
    base.set_dest_qpn(spec.dest_qpn);
    base.set_ack_request(spec.ack_request);
    base.set_psn(spec.psn);
    write_at(out, at, base);

    if (info.has(opcode_mask::deth)) {
        deth h{};
        h.qkey.store(spec.deth_qkey);
        h.set_source_qpn(spec.deth_source_qpn);
        write_at(out, bth_at + info.offset(ext_header::deth), h);
    }
    if (info.has(opcode_mask::reth)) {
        reth h{};
        h.virtual_address.store(spec.reth_va);
        h.rkey.store(spec.reth_rkey);
        h.dma_length.store(spec.reth_length);
        write_at(out, bth_at + info.offset(ext_header::reth), h);
    }
    if (info.has(opcode_mask::atomic_eth)) {
        atomic_eth h{};
        h.virtual_address.store(spec.atomic_va);
        h.rkey.store(spec.atomic_rkey);
        h.swap_add.store(spec.atomic_swap_add);
        h.compare.store(spec.atomic_compare);
        write_at(out, bth_at + info.offset(ext_header::atomic_eth), h);
    }
    if (info.has(opcode_mask::aeth)) {
        aeth h{};
        h.set_syndrome(spec.aeth_syndrome);
        h.set_msn(spec.aeth_msn);
        write_at(out, bth_at + info.offset(ext_header::aeth), h);
    }
    if (info.has(opcode_mask::atomic_ack_eth)) {
        atomic_ack_eth h{};
        h.original.store(spec.atomic_original);
        write_at(out, bth_at + info.offset(ext_header::atomic_ack_eth), h);
    }
    if (info.has(opcode_mask::immdt)) {
        immdt h{};
        h.data.store(spec.immediate);
        write_at(out, bth_at + info.offset(ext_header::immdt), h);
    }
    if (info.has(opcode_mask::ieth)) {
        ieth h{};
        h.rkey.store(spec.ieth_rkey);
        write_at(out, bth_at + info.offset(ext_header::ieth), h);
    }
    return bth_at + info.header_length;
}

roce_layout roce_layout_of(const roce_headers_spec& spec, std::size_t payload_length) {
    roce_layout layout;
    layout.l3_offset = l2_length(spec.vlan);
    layout.l4_offset = layout.l3_offset + l3_length(spec);
    layout.length = roce_frame_length(spec, payload_length);
    layout.ipv6 = !uses_ipv4(spec);
    return layout;
}

void seal_roce_frame(std::uint8_t* frame, std::size_t frame_length) {
    // Sealing makes a frame whole again after a test or the fuzzer changed it, so only where the
    // headers lie is read here, not whether they are valid: an IPv4 header's IHL is taken as it is.
    const std::span<const std::uint8_t> view(frame, frame_length);
    frame_info info;
    if (parse_l2(view, info) != frame_status::ip) return;
    roce_layout layout{info.l3_offset, info.l3_offset + sizeof(ipv6_header), frame_length,
                       info.ether_type == ethertype::ipv6};
    if (!layout.ipv6) {
        const auto* ip = header_at<ipv4_header>(view, info.l3_offset);
        if (!ip) return;
        layout.l4_offset = info.l3_offset + ip->header_length();
    }
    const std::size_t bth_at = layout.l4_offset + sizeof(udp_header);
    if (!header_at<bth>(view, bth_at) || frame_length < bth_at + sizeof(bth) + icrc_length) return;
    seal_roce_frame(frame, layout);
}

void seal_roce_frame(std::uint8_t* frame, const roce_layout& layout) {
    const std::size_t bth_at = layout.l4_offset + sizeof(udp_header);
    const auto* base = reinterpret_cast<const bth*>(frame + bth_at);
    const std::size_t icrc_at = layout.length - icrc_length;
    const std::size_t pad = base->pad_count();
    if (icrc_at - pad >= bth_at + sizeof(bth)) std::memset(frame + icrc_at - pad, 0, pad);
    const std::span<const std::uint8_t> view(frame, layout.length);
    store_icrc(frame + icrc_at, compute_icrc(view.subspan(layout.l3_offset, icrc_at - layout.l3_offset)));
    // After the ICRC: the UDP checksum covers the ICRC bytes, while the ICRC masks the checksum.
    if (layout.ipv6) write_udp_checksum_ipv6(frame, layout.l3_offset, layout.l4_offset, layout.length);
}

const char* to_string(parse_error e) {
    switch (e) {
    case parse_error::none: return "none";
    case parse_error::too_short: return "too_short";
    case parse_error::not_ip: return "not_ip";
    case parse_error::bad_ip_header: return "bad_ip_header";
    case parse_error::bad_ip_checksum: return "bad_ip_checksum";
    case parse_error::not_udp: return "not_udp";
    case parse_error::not_roce: return "not_roce";
    case parse_error::bad_length: return "bad_length";
    case parse_error::bad_opcode: return "bad_opcode";
    case parse_error::bad_bth: return "bad_bth";
    case parse_error::bad_icrc: return "bad_icrc";
    }
    return "unknown";
}

parse_error parse_roce_frame(std::span<const std::uint8_t> frame, parsed_roce& out, icrc_check check) {
    out = parsed_roce{};
    frame_info headers;
    const frame_status status = parse_headers(frame, headers);
    switch (status) {
    case frame_status::truncated_l2:
    case frame_status::truncated_l3: return parse_error::too_short;
    case frame_status::not_ip: return parse_error::not_ip;
    case frame_status::bad_ip_header: return parse_error::bad_ip_header;
    case frame_status::bad_ip_checksum: return parse_error::bad_ip_checksum;
    case frame_status::ip:
    case frame_status::bad_ip_length:
    case frame_status::truncated_datagram: break; // the IP header's fields are in: they are checked first
    }
    const std::size_t l3 = headers.l3_offset, l4 = headers.l4_offset, ip_end = headers.l3_end();
    const auto* ipv4 = headers.v6 ? nullptr : reinterpret_cast<const ipv4_header*>(frame.data() + l3);
    // More Fragments or a non-zero offset: RoCE is never fragmented (A17.4.1 sets DF).
    if (ipv4 && is_fragment(*ipv4)) return parse_error::bad_ip_header;
    if (headers.protocol != ip_protocol::udp) return parse_error::not_udp;
    if (status == frame_status::bad_ip_length) return parse_error::bad_length;
    if (status == frame_status::truncated_datagram) return parse_error::too_short;

    out.l3_offset = l3;
    out.vlan_present = headers.vlan_tagged;
    out.pcp = headers.pcp;
    out.vid = headers.vid;
    out.is_ipv6 = headers.v6;
    out.dscp = headers.dscp();
    out.ecn = headers.ecn();
    out.hop_limit = headers.hop_limit;
    if (headers.v6) {
        const auto* ip = reinterpret_cast<const ipv6_header*>(frame.data() + l3);
        out.flow_label = ip->flow_label();
        out.source_gid = ip->source;
        out.destination_gid = ip->destination;
    } else {
        out.source_gid = ipv6_address::v4_mapped(ipv4->source.load());
        out.destination_gid = ipv6_address::v4_mapped(ipv4->destination.load());
    }
    // Anything after the datagram must be Ethernet padding of a minimum-size frame (60 bytes, 64
    // when a VLAN tag was removed from or added to a padded frame).
    if (ip_end < frame.size() && frame.size() > ethernet_min_frame_length + sizeof(vlan_header))
        return parse_error::bad_length;
    out.l4_offset = l4;

    const auto* udp = header_at<udp_header>(frame, l4);
    if (!udp || l4 + sizeof(udp_header) > ip_end) return parse_error::bad_length;
    if (udp->destination_port.load() != roce_v2_udp_port) return parse_error::not_roce;
    if (udp->length.load() != ip_end - l4) return parse_error::bad_length;
    out.udp_source_port = udp->source_port.load();

    const std::size_t bth_at = l4 + sizeof(udp_header);
    if (ip_end - bth_at < sizeof(bth) + icrc_length) return parse_error::bad_length;
    const auto* base = reinterpret_cast<const bth*>(frame.data() + bth_at);
    const opcode_info& info = opcode_info_of(base->opcode());
    if (!info.valid) return parse_error::bad_opcode;
    if (base->tver() != 0) return parse_error::bad_bth;
    out.bth_offset = bth_at;
    out.bth_header = base;
    out.info = &info;

    const std::size_t transport_length = ip_end - bth_at; // BTH .. ICRC inclusive
    const std::size_t pad = base->pad_count();
    if (transport_length < info.header_length + pad + icrc_length) return parse_error::bad_length;
    const std::size_t payload_length = transport_length - info.header_length - pad - icrc_length;
    if (!info.has(opcode_mask::payload) && (payload_length != 0 || pad != 0)) return parse_error::bad_length;
    if (info.has(opcode_mask::cnp) && payload_length != cnp_payload_length) return parse_error::bad_length;

    const std::uint8_t* b = frame.data() + bth_at;
    auto ext = [&](ext_header h) { return b + info.offset(h); };
    if (info.has(opcode_mask::reth)) out.reth_header = reinterpret_cast<const reth*>(ext(ext_header::reth));
    if (info.has(opcode_mask::aeth)) out.aeth_header = reinterpret_cast<const aeth*>(ext(ext_header::aeth));
    if (info.has(opcode_mask::deth)) out.deth_header = reinterpret_cast<const deth*>(ext(ext_header::deth));
    if (info.has(opcode_mask::immdt)) out.immdt_header = reinterpret_cast<const immdt*>(ext(ext_header::immdt));
    if (info.has(opcode_mask::ieth)) out.ieth_header = reinterpret_cast<const ieth*>(ext(ext_header::ieth));
    if (info.has(opcode_mask::atomic_eth))
        out.atomic_eth_header = reinterpret_cast<const atomic_eth*>(ext(ext_header::atomic_eth));
    if (info.has(opcode_mask::atomic_ack_eth))
        out.atomic_ack_eth_header = reinterpret_cast<const atomic_ack_eth*>(ext(ext_header::atomic_ack_eth));
    out.payload = b + info.header_length;
    out.payload_length = payload_length;
    out.pad_count = static_cast<std::uint8_t>(pad);
    out.roce_length = ip_end;

    if (check == icrc_check::skip) return parse_error::none;
    const std::size_t icrc_at = ip_end - icrc_length;
    out.icrc = load_icrc(frame.data() + icrc_at);
    if (compute_icrc(frame.subspan(l3, icrc_at - l3)) != out.icrc) return parse_error::bad_icrc;
    return parse_error::none;
}

bool is_roce_frame(std::span<const std::uint8_t> frame) {
    frame_info headers;
    return parse_headers(frame, headers) == frame_status::ip && headers.protocol == ip_protocol::udp &&
           headers.destination_port == roce_v2_udp_port;
}

} // namespace rocefab::wire
