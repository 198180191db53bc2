#include "dataplane/wire/cnp.hpp"
#include "dataplane/wire/roce_frame.hpp"
#include "tests/dataplane/wire/test_frames.hpp"

#include <gtest/gtest.h>

#include <random>
#include <vector>

namespace rocefab::wire {
namespace {

using testing::build_frame;
using testing::payload_byte;
using testing::sample_spec;

std::vector<std::size_t> payload_lengths_for(const opcode_info& info) {
    if (info.has(opcode_mask::cnp)) return {cnp_payload_length};
    if (!info.has(opcode_mask::payload)) return {0};
    return {0, 1, 2, 3, 4, 61, 1024};
}

void expect_round_trip(std::uint8_t opcode, bool ipv6, bool vlan, std::size_t payload_length) {
    const opcode_info& info = opcode_info_of(opcode);
    SCOPED_TRACE(std::string(info.name) + (ipv6 ? " ipv6" : " ipv4") + (vlan ? " vlan" : "") + " payload " +
                 std::to_string(payload_length));
    const roce_headers_spec spec = sample_spec(opcode, ipv6, vlan);
    const std::vector<std::uint8_t> frame = build_frame(spec, payload_length);
    const std::size_t l2 = vlan ? 18 : 14, l3 = ipv6 ? 40 : 20;
    ASSERT_EQ(roce_header_length(spec), l2 + l3 + 8 + info.header_length);
    ASSERT_EQ(frame.size(), roce_header_length(spec) + payload_length + pad_for(payload_length) + 4);

    parsed_roce p;
    ASSERT_EQ(parse_roce_frame(frame, p), parse_error::none) << to_string(parse_roce_frame(frame, p));
    EXPECT_TRUE(is_roce_frame(frame));
    EXPECT_EQ(p.vlan_present, vlan);
    if (vlan) {
        EXPECT_EQ(p.pcp, spec.pcp);
        EXPECT_EQ(p.vid, spec.vid);
    }
    EXPECT_EQ(p.l3_offset, l2);
    EXPECT_EQ(p.is_ipv6, ipv6);
    EXPECT_EQ(p.dscp, spec.dscp);
    EXPECT_EQ(p.ecn, spec.ecn);
    EXPECT_EQ(p.hop_limit, spec.hop_limit);
    if (ipv6) {
        EXPECT_EQ(p.flow_label, spec.flow_label);
    }
    EXPECT_EQ(p.source_gid, spec.source_gid);
    EXPECT_EQ(p.destination_gid, spec.destination_gid);
    EXPECT_EQ(p.udp_source_port, spec.udp_source_port);
    EXPECT_EQ(p.info, &info);
    ASSERT_NE(p.bth_header, nullptr);
    EXPECT_EQ(p.bth_header->opcode(), opcode);
    EXPECT_EQ(p.bth_header->solicited(), spec.solicited);
    EXPECT_EQ(p.bth_header->ack_request(), spec.ack_request);
    EXPECT_EQ(p.bth_header->pkey(), spec.pkey);
    EXPECT_EQ(p.bth_header->dest_qpn(), spec.dest_qpn);
    EXPECT_EQ(p.bth_header->psn(), spec.psn);
    EXPECT_EQ(p.bth_header->pad_count(), pad_for(payload_length));
    EXPECT_EQ(p.bth_header->becn(), spec.becn);
    EXPECT_FALSE(p.bth_header->fecn());
    EXPECT_EQ(p.bth_header->tver(), 0);

    EXPECT_EQ(p.reth_header != nullptr, info.has(opcode_mask::reth));
    if (p.reth_header) {
        EXPECT_EQ(p.reth_header->virtual_address.load(), spec.reth_va);
        EXPECT_EQ(p.reth_header->rkey.load(), spec.reth_rkey);
        EXPECT_EQ(p.reth_header->dma_length.load(), spec.reth_length);
    }
    EXPECT_EQ(p.aeth_header != nullptr, info.has(opcode_mask::aeth));
    if (p.aeth_header) {
        EXPECT_EQ(p.aeth_header->syndrome(), spec.aeth_syndrome);
        EXPECT_EQ(p.aeth_header->msn(), spec.aeth_msn);
    }
    EXPECT_EQ(p.deth_header != nullptr, info.has(opcode_mask::deth));
    if (p.deth_header) {
        EXPECT_EQ(p.deth_header->qkey.load(), spec.deth_qkey);
        EXPECT_EQ(p.deth_header->source_qpn(), spec.deth_source_qpn);
    }
    EXPECT_EQ(p.immdt_header != nullptr, info.has(opcode_mask::immdt));
    if (p.immdt_header) {
        EXPECT_EQ(p.immdt_header->data.load(), spec.immediate);
    }
    EXPECT_EQ(p.ieth_header != nullptr, info.has(opcode_mask::ieth));
    if (p.ieth_header) {
        EXPECT_EQ(p.ieth_header->rkey.load(), spec.ieth_rkey);
    }
    EXPECT_EQ(p.atomic_eth_header != nullptr, info.has(opcode_mask::atomic_eth));
    if (p.atomic_eth_header) {
        EXPECT_EQ(p.atomic_eth_header->virtual_address.load(), spec.atomic_va);
        EXPECT_EQ(p.atomic_eth_header->rkey.load(), spec.atomic_rkey);
        EXPECT_EQ(p.atomic_eth_header->swap_add.load(), spec.atomic_swap_add);
        EXPECT_EQ(p.atomic_eth_header->compare.load(), spec.atomic_compare);
    }
    EXPECT_EQ(p.atomic_ack_eth_header != nullptr, info.has(opcode_mask::atomic_ack_eth));
    if (p.atomic_ack_eth_header) {
        EXPECT_EQ(p.atomic_ack_eth_header->original.load(), spec.atomic_original);
    }

    ASSERT_EQ(p.payload_length, payload_length);
    EXPECT_EQ(p.payload, frame.data() + roce_header_length(spec));
    for (std::size_t i = 0; i < payload_length && !info.has(opcode_mask::cnp); ++i)
        ASSERT_EQ(p.payload[i], payload_byte(i)) << i;
    for (std::size_t i = 0; i < p.pad_count; ++i) EXPECT_EQ(p.payload[payload_length + i], 0) << "pad byte " << i;
    EXPECT_EQ(p.roce_length, frame.size());
    EXPECT_EQ(p.icrc, load_icrc(frame.data() + frame.size() - 4));
}

TEST(roce_frame, every_opcode_round_trips_over_ipv4_and_ipv6_with_and_without_vlan) {
    int opcodes = 0;
    for (int op = 0; op < 256; ++op) {
        const opcode_info& info = opcode_info_of(static_cast<std::uint8_t>(op));
        if (!info.valid) continue;
        ++opcodes;
        for (bool ipv6 : {false, true})
            for (bool vlan : {false, true})
                for (std::size_t n : payload_lengths_for(info))
                    expect_round_trip(static_cast<std::uint8_t>(op), ipv6, vlan, n);
    }
    EXPECT_EQ(opcodes, 38);
}

TEST(roce_frame, invalid_opcode_builds_nothing) {
    const roce_headers_spec spec = sample_spec(0x15, false, false);
    EXPECT_EQ(roce_header_length(spec), 0u);
    EXPECT_EQ(roce_frame_length(spec, 100), 0u);
    std::uint8_t out[128] = {};
    EXPECT_EQ(write_roce_headers(out, spec, 0), 0u);
    EXPECT_EQ(out[0], 0);
}

TEST(roce_frame, ipv4_header_is_well_formed) {
    const auto frame = build_frame(sample_spec(to_byte(ib_opcode::rc_send_only), false, false), 10);
    const auto* ip = reinterpret_cast<const ipv4_header*>(frame.data() + 14);
    EXPECT_EQ(ip->version(), 4);
    EXPECT_EQ(ip->header_length(), 20u);
    EXPECT_TRUE(ip->checksum_ok());
    EXPECT_EQ(ip->total_length.load(), frame.size() - 14);
    EXPECT_EQ(ip->flags_fragment.load(), 0x4000); // DF
    EXPECT_EQ(ip->tos, 26 << 2 | ecn::ect0);
    const auto* udp = reinterpret_cast<const udp_header*>(frame.data() + 34);
    EXPECT_EQ(udp->destination_port.load(), 4791);
    EXPECT_EQ(udp->length.load(), frame.size() - 34);
    EXPECT_EQ(udp->checksum.load(), 0);
}

TEST(roce_frame, ipv6_carries_a_valid_udp_checksum) {
    const auto frame = build_frame(sample_spec(to_byte(ib_opcode::rc_send_only), true, false), 11);
    const auto* udp = reinterpret_cast<const udp_header*>(frame.data() + 14 + 40);
    EXPECT_NE(udp->checksum.load(), 0);
    // Summing pseudo-header and datagram, checksum included, gives all ones (RFC 1071).
    std::uint32_t sum = 17 + (frame.size() - 54);
    for (std::size_t i = 14 + 8; i < 14 + 40; i += 2) sum += frame[i] << 8 | frame[i + 1];
    for (std::size_t i = 54; i < frame.size(); i += 2) sum += frame[i] << 8 | (i + 1 < frame.size() ? frame[i + 1] : 0);
    while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
    EXPECT_EQ(sum, 0xffffu);
}

TEST(roce_frame, parser_rejects_every_truncation) {
    for (bool ipv6 : {false, true}) {
        for (auto op : {ib_opcode::rc_rdma_write_only_with_immediate, ib_opcode::rc_acknowledge, ib_opcode::cnp}) {
            const auto spec = sample_spec(to_byte(op), ipv6, true);
            const auto frame = build_frame(spec, op == ib_opcode::cnp              ? cnp_payload_length
                                                 : op == ib_opcode::rc_acknowledge ? 0
                                                                                   : 37);
            for (std::size_t n = 0; n < frame.size(); ++n) {
                // An exact-size copy, so that reading past the end is reading past an allocation.
                const std::vector<std::uint8_t> cut(frame.begin(), frame.begin() + static_cast<std::ptrdiff_t>(n));
                parsed_roce p;
                EXPECT_NE(parse_roce_frame(cut, p), parse_error::none) << n;
            }
        }
    }
}

TEST(roce_frame, parser_names_what_is_wrong) {
    const auto spec = sample_spec(to_byte(ib_opcode::rc_send_only), false, false);
    const auto good = build_frame(spec, 8);
    parsed_roce p;
    ASSERT_EQ(parse_roce_frame(good, p), parse_error::none);

    auto f = good;
    f[34 + 3] = 0x00; // UDP destination port 0x12b7 (4791) -> 0x1200
    EXPECT_EQ(parse_roce_frame(f, p), parse_error::not_roce);
    EXPECT_FALSE(is_roce_frame(f));

    f = good;
    f[42] = 0x15; // reserved RC opcode
    EXPECT_EQ(parse_roce_frame(f, p), parse_error::bad_opcode);

    f = good;
    f[42 + 1] |= 0x01; // TVer 1
    EXPECT_EQ(parse_roce_frame(f, p), parse_error::bad_bth);

    f = good;
    f[42 + 12] ^= 0x80; // first payload byte
    EXPECT_EQ(parse_roce_frame(f, p), parse_error::bad_icrc);

    f = good;
    f[f.size() - 1] ^= 0x01; // the ICRC itself
    EXPECT_EQ(parse_roce_frame(f, p), parse_error::bad_icrc);

    f = good;
    f[12] = 0x08, f[13] = 0x06; // ARP
    EXPECT_EQ(parse_roce_frame(f, p), parse_error::not_ip);

    f = good;
    f[14 + 9] = 6; // TCP (checksum left stale: fix it so the protocol is what fails)
    reinterpret_cast<ipv4_header*>(f.data() + 14)->update_checksum();
    EXPECT_EQ(parse_roce_frame(f, p), parse_error::not_udp);

    f = good;
    f[14 + 8] -= 1; // TTL without fixing the checksum
    EXPECT_EQ(parse_roce_frame(f, p), parse_error::bad_ip_checksum);

    f = good;
    f[14] = 0x55; // version 5
    EXPECT_EQ(parse_roce_frame(f, p), parse_error::bad_ip_header);

    f = good;
    f[34 + 5] -= 4; // UDP length disagrees with IP total length
    EXPECT_EQ(parse_roce_frame(f, p), parse_error::bad_length);

    f = good;
    f.insert(f.end(), 30, 0); // 30 extra bytes beyond the datagram in a frame above 64 bytes
    EXPECT_EQ(parse_roce_frame(f, p), parse_error::bad_length);

    f = build_frame(sample_spec(to_byte(ib_opcode::rc_acknowledge), false, false), 4); // ACK with payload
    EXPECT_EQ(parse_roce_frame(f, p), parse_error::bad_length);
}

TEST(roce_frame, ethernet_padding_of_a_minimum_frame_is_accepted) {
    auto f = build_frame(sample_spec(to_byte(ib_opcode::rc_send_only), false, false), 0);
    ASSERT_EQ(f.size(), 58u);
    f.resize(ethernet_min_frame_length, 0);
    parsed_roce p;
    ASSERT_EQ(parse_roce_frame(f, p), parse_error::none);
    EXPECT_EQ(p.roce_length, 58u);
    EXPECT_EQ(p.payload_length, 0u);
}

TEST(roce_frame, switch_rewrites_of_ecn_and_becn_keep_the_icrc_valid) {
    auto f = build_frame(sample_spec(to_byte(ib_opcode::rc_rdma_write_first), false, true), 256);
    auto* ip = reinterpret_cast<ipv4_header*>(f.data() + 18);
    ip->set_dscp_ecn(ip->dscp(), ecn::ce);
    ip->ttl -= 1;
    ip->update_checksum();
    reinterpret_cast<bth*>(f.data() + 18 + 20 + 8)->set_becn(true);
    parsed_roce p;
    ASSERT_EQ(parse_roce_frame(f, p), parse_error::none);
    EXPECT_EQ(p.ecn, ecn::ce);
    EXPECT_TRUE(p.bth_header->becn());

    auto g = build_frame(sample_spec(to_byte(ib_opcode::rc_rdma_write_first), true, false), 256);
    auto* ip6 = reinterpret_cast<ipv6_header*>(g.data() + 14);
    ip6->set(ip6->dscp(), ecn::ce, 0x54321);
    ip6->hop_limit = 1;
    ASSERT_EQ(parse_roce_frame(g, p), parse_error::none);
    EXPECT_EQ(p.ecn, ecn::ce);
}

TEST(roce_frame, random_corruption_never_escapes_the_checks) {
    // Any corrupted byte past L2 is caught, except in the variant fields the ICRC skips; and the
    // parser never reads outside the (exact-size) frame.
    std::mt19937 rng(4791);
    const auto spec = sample_spec(to_byte(ib_opcode::ud_send_only_with_immediate), true, false);
    const auto good = build_frame(spec, 100);
    for (int round = 0; round < 2000; ++round) {
        auto f = good;
        const std::size_t at = rng() % f.size();
        f[at] ^= static_cast<std::uint8_t>(1 + rng() % 255);
        f.resize(f.size() - rng() % 3);
        parsed_roce p;
        const parse_error e = parse_roce_frame(f, p);
        const bool variant = (at >= 14 && at < 18) || at == 14 + 7 || at == 54 + 6 || at == 54 + 7 || at == 62 + 4;
        if (e == parse_error::none) {
            EXPECT_TRUE(variant || at < 14) << "byte " << at;
        }
    }
}

TEST(cnp, is_a_bth_with_sixteen_zero_bytes_and_an_icrc) {
    auto spec = sample_spec(0, false, false);
    spec.dscp = 48;
    make_cnp_spec(spec, 0x000123);
    std::vector<std::uint8_t> f(cnp_frame_length(spec), 0xaa);
    ASSERT_EQ(f.size(), 14u + 20 + 8 + 12 + 16 + 4);
    ASSERT_EQ(write_cnp_frame(f.data(), spec), f.size());
    for (std::size_t i = 54; i < 70; ++i) EXPECT_EQ(f[i], 0) << i;
    parsed_roce p;
    ASSERT_EQ(parse_roce_frame(f, p), parse_error::none);
    EXPECT_EQ(p.bth_header->opcode(), 0x81);
    EXPECT_EQ(p.bth_header->dest_qpn(), 0x000123u);
    EXPECT_TRUE(p.bth_header->becn());
    EXPECT_EQ(p.info->transport, ib_transport::cnp);
    EXPECT_EQ(p.payload_length, cnp_payload_length);
    EXPECT_EQ(p.dscp, 48);
}

TEST(cnp, with_the_wrong_length_is_rejected) {
    auto spec = sample_spec(0, false, false);
    make_cnp_spec(spec, 7);
    const auto f = build_frame(spec, 20);
    parsed_roce p;
    EXPECT_EQ(parse_roce_frame(f, p), parse_error::bad_length);
    auto other = sample_spec(to_byte(ib_opcode::rc_send_only), false, false);
    std::uint8_t out[128];
    EXPECT_EQ(write_cnp_frame(out, other), 0u);
}

} // namespace
} // namespace rocefab::wire
