#include "dataplane/wire/frame_info.hpp"
#include "dataplane/wire/roce_frame.hpp"
#include "tests/dataplane/wire/test_frames.hpp"

#include <gtest/gtest.h>

#include <vector>

namespace rocefab::wire {
namespace {

using testing::build_frame;
using testing::sample_spec;

constexpr auto send_only = static_cast<std::uint8_t>(ib_opcode::rc_send_only);

ipv4_header& ipv4_of(std::vector<std::uint8_t>& frame, std::size_t l3) {
    return *reinterpret_cast<ipv4_header*>(frame.data() + l3);
}

TEST(frame_info, records_every_header_of_a_tagged_ipv4_roce_frame) {
    const roce_headers_spec spec = sample_spec(send_only, false, true);
    const std::vector<std::uint8_t> frame = build_frame(spec, 61);
    frame_info info;
    ASSERT_EQ(parse_headers(frame, info), frame_status::ip);
    EXPECT_EQ(info.l3_offset, 18);
    EXPECT_EQ(info.l4_offset, 38);
    EXPECT_EQ(info.l3_end(), frame.size());
    EXPECT_EQ(info.ether_type, ethertype::ipv4);
    EXPECT_TRUE(info.vlan_tagged);
    EXPECT_EQ(info.pcp, spec.pcp);
    EXPECT_EQ(info.vid, spec.vid);
    EXPECT_FALSE(info.v6);
    EXPECT_EQ(info.dscp(), spec.dscp);
    EXPECT_EQ(info.ecn(), spec.ecn);
    EXPECT_EQ(info.hop_limit, spec.hop_limit);
    EXPECT_EQ(info.protocol, ip_protocol::udp);
    EXPECT_EQ(info.source_port, spec.udp_source_port);
    EXPECT_EQ(info.destination_port, roce_v2_udp_port);
}

TEST(frame_info, records_every_header_of_an_untagged_ipv6_roce_frame) {
    const roce_headers_spec spec = sample_spec(send_only, true, false);
    const std::vector<std::uint8_t> frame = build_frame(spec, 4);
    frame_info info;
    ASSERT_EQ(parse_headers(frame, info), frame_status::ip);
    EXPECT_EQ(info.l3_offset, 14);
    EXPECT_EQ(info.l4_offset, 54);
    EXPECT_EQ(info.l3_end(), frame.size());
    EXPECT_FALSE(info.vlan_tagged);
    EXPECT_TRUE(info.v6);
    EXPECT_EQ(info.dscp(), spec.dscp);
    EXPECT_EQ(info.ecn(), spec.ecn);
    EXPECT_EQ(info.hop_limit, spec.hop_limit);
    EXPECT_EQ(info.source_port, spec.udp_source_port);
    EXPECT_EQ(info.destination_port, roce_v2_udp_port);
}

// The builder's layout, the parse and the RoCE parser agree on where every header lies, and
// sealing by the known layout writes the same bytes as sealing by the length alone.
TEST(frame_info, the_builders_layout_is_where_the_parsers_find_the_headers) {
    for (const bool ipv6 : {false, true}) {
        for (const bool vlan : {false, true}) {
            SCOPED_TRACE(std::string(ipv6 ? "ipv6" : "ipv4") + (vlan ? " vlan" : ""));
            const roce_headers_spec spec = sample_spec(send_only, ipv6, vlan);
            std::vector<std::uint8_t> frame = build_frame(spec, 3);
            frame_info info;
            ASSERT_EQ(parse_headers(frame, info), frame_status::ip);
            parsed_roce roce;
            ASSERT_EQ(parse_roce_frame(frame, roce), parse_error::none);
            const roce_layout layout = roce_layout_of(spec, 3);
            EXPECT_EQ(layout.l3_offset, info.l3_offset);
            EXPECT_EQ(layout.l4_offset, info.l4_offset);
            EXPECT_EQ(layout.length, info.l3_end());
            EXPECT_EQ(layout.ipv6, info.v6);
            EXPECT_EQ(roce.l3_offset, info.l3_offset);
            EXPECT_EQ(roce.l4_offset, info.l4_offset);
            EXPECT_EQ(roce.roce_length, info.l3_end());

            const std::vector<std::uint8_t> sealed = frame;
            frame[frame.size() - 1] ^= 0xff; // the ICRC is rewritten, and over IPv6 the UDP checksum
            if (ipv6) frame[layout.l4_offset + 6] ^= 0xff;
            seal_roce_frame(frame.data(), layout);
            EXPECT_EQ(frame, sealed);
        }
    }
}

TEST(frame_info, a_frame_cut_anywhere_is_flagged_where_it_ends) {
    const std::vector<std::uint8_t> whole = build_frame(sample_spec(send_only, false, true), 8);
    for (std::size_t n = 0; n < whole.size(); ++n) {
        const std::vector<std::uint8_t> cut(whole.begin(), whole.begin() + static_cast<std::ptrdiff_t>(n));
        frame_info info;
        const frame_status status = parse_headers(cut, info);
        if (n < 18)
            EXPECT_EQ(status, frame_status::truncated_l2) << n;
        else if (n < 38)
            EXPECT_EQ(status, frame_status::truncated_l3) << n;
        else
            EXPECT_EQ(status, frame_status::truncated_datagram) << n;
    }
}

// A port buffer classifies a frame before its IP header is checked: the DSCP is there even
// when the header turns out bad, and the IP fields are there for the RoCE parser to check first.
TEST(frame_info, a_damaged_ip_header_still_gives_its_traffic_class) {
    const roce_headers_spec spec = sample_spec(send_only, false, false);
    const std::vector<std::uint8_t> good = build_frame(spec, 0);
    frame_info info;

    std::vector<std::uint8_t> f = good;
    ipv4_of(f, 14).checksum.store(ipv4_of(f, 14).checksum.load() ^ 1);
    EXPECT_EQ(parse_headers(f, info), frame_status::bad_ip_checksum);
    EXPECT_EQ(info.dscp(), spec.dscp);

    f = good;
    ipv4_of(f, 14).version_ihl = 0x65;
    EXPECT_EQ(parse_headers(f, info), frame_status::bad_ip_header);
    EXPECT_EQ(info.dscp(), spec.dscp);
    EXPECT_EQ(info.ecn(), spec.ecn);

    f.assign(good.begin(), good.begin() + 16); // two bytes of IP header
    EXPECT_EQ(parse_headers(f, info), frame_status::truncated_l3);
    EXPECT_EQ(info.dscp(), spec.dscp);

    f = good;
    ipv4_of(f, 14).total_length.store(19);
    ipv4_of(f, 14).flags_fragment.store(0x2000); // More Fragments
    ipv4_of(f, 14).update_checksum();
    EXPECT_EQ(parse_headers(f, info), frame_status::bad_ip_length);
    EXPECT_EQ(info.protocol, ip_protocol::udp);
    parsed_roce roce; // which looks at the fragment first
    EXPECT_EQ(parse_roce_frame(f, roce), parse_error::bad_ip_header);
}

TEST(frame_info, a_frame_that_is_not_ip_says_its_ether_type) {
    std::vector<std::uint8_t> f = build_frame(sample_spec(send_only, false, true), 0);
    reinterpret_cast<vlan_header*>(f.data() + 14)->ether_type.store(ethertype::arp);
    frame_info info;
    EXPECT_EQ(parse_headers(f, info), frame_status::not_ip);
    EXPECT_EQ(info.ether_type, ethertype::arp);
    EXPECT_EQ(info.l3_offset, 18);
    EXPECT_EQ(info.pcp, 3);
    EXPECT_FALSE(is_roce_frame(f));
}

// The switch decrements every routed frame's TTL with an incremental checksum update: over every
// identification value (so every checksum a header of these fields can have), the result is
// the one a full recomputation gives, including where the end-around carry makes 0xffff.
TEST(ipv4_header, ttl_decrement_gives_the_checksum_a_full_recomputation_gives) {
    ipv4_header ip{};
    ip.version_ihl = 0x45;
    ip.total_length.store(1024);
    ip.protocol = ip_protocol::udp;
    ip.source.store(0x0a000102);
    ip.destination.store(0x0a010203);
    unsigned carried_to_zero = 0;
    for (const std::uint8_t ttl : {1, 2, 64, 255}) {
        for (std::uint32_t id = 0; id <= 0xffff; ++id) {
            ip.ttl = ttl;
            ip.identification.store(static_cast<std::uint16_t>(id));
            ip.update_checksum();
            carried_to_zero += ip.checksum.load() == 0xfeff;
            ipv4_header expected = ip;
            expected.ttl = static_cast<std::uint8_t>(ttl - 1);
            expected.update_checksum();
            ip.decrement_ttl();
            ASSERT_EQ(ip.ttl, ttl - 1);
            ASSERT_EQ(ip.checksum.load(), expected.checksum.load()) << "ttl " << int(ttl) << " id " << id;
            ASSERT_TRUE(ip.checksum_ok());
        }
    }
    EXPECT_GT(carried_to_zero, 0u); // 0xfeff + 0x0100 = 0xffff, ones' complement zero, stored as 0x0000
}

// checksum_ok() tests the unfolded sum modulo 0xffff: it must agree with the folded checksum for
// every value the field can hold, and accept the two forms of a zero (RFC 1624 section 3).
TEST(ipv4_header, checksum_ok_agrees_with_the_folded_checksum_for_every_field_value) {
    ipv4_header ip{};
    ip.version_ihl = 0x45;
    ip.total_length.store(60);
    ip.ttl = 64;
    ip.protocol = ip_protocol::udp;
    ip.source.store(0xc0a80001);
    ip.destination.store(0xc0a800ff);
    unsigned accepted = 0;
    for (std::uint32_t value = 0; value <= 0xffff; ++value) {
        ip.checksum.store(static_cast<std::uint16_t>(value));
        ASSERT_EQ(ip.checksum_ok(), ip.compute_checksum() == 0) << "checksum field " << value;
        accepted += ip.checksum_ok();
    }
    EXPECT_GE(accepted, 1u);
    EXPECT_LE(accepted, 2u);
    ip.update_checksum();
    EXPECT_TRUE(ip.checksum_ok());
    // A header whose words sum to 0 (no IHL: no words) has no valid checksum.
    const ipv4_header empty{};
    EXPECT_FALSE(empty.checksum_ok());
    EXPECT_NE(empty.compute_checksum(), 0);
}

} // namespace
} // namespace rocefab::wire
