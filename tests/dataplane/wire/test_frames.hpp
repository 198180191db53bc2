// Frames for the wire tests: a spec with every field set to a distinct value, and a helper that
// builds a whole sealed frame into a vector of exactly the frame's size (so that an over-read in
// the parser is an over-read of the allocation, which sanitizers report).
#pragma once

#include "dataplane/wire/roce_frame.hpp"

#include <cstring>
#include <vector>

namespace rocefab::wire::testing {

inline roce_headers_spec sample_spec(std::uint8_t opcode, bool ipv6, bool vlan) {
    roce_headers_spec s;
    s.source_mac = {{0x02, 0xfc, 0x00, 0x00, 0x00, 0x01}};
    s.destination_mac = {{0x02, 0xfc, 0x00, 0x00, 0x00, 0x02}};
    s.vlan = vlan;
    s.pcp = 3;
    s.vid = 100;
    if (ipv6) {
        ipv6_address::parse("fd00::1:10", s.source_gid);
        ipv6_address::parse("fd00::2:20", s.destination_gid);
    } else {
        s.source_gid = ipv6_address::v4_mapped(0xc0a8'010a);
        s.destination_gid = ipv6_address::v4_mapped(0xc0a8'0114);
    }
    s.dscp = 26;
    s.ecn = ecn::ect0;
    s.hop_limit = 63;
    s.flow_label = 0xabcde;
    s.udp_source_port = 0xc321;
    s.opcode = opcode;
    s.solicited = opcode_info_of(opcode).has(opcode_mask::solicitable);
    s.ack_request = true;
    s.pkey = 0x8001;
    s.dest_qpn = 0x00abcd;
    s.psn = 0xfffffe;
    s.reth_va = 0x00007f00'12345678;
    s.reth_rkey = 0x1111'2222;
    s.reth_length = 65536;
    s.aeth_syndrome = aeth_syndrome::nak(nak_code::remote_access_error);
    s.aeth_msn = 0x123456;
    s.deth_qkey = 0x8001'0000;
    s.deth_source_qpn = 0x000777;
    s.immediate = 0xdeadbeef;
    s.ieth_rkey = 0x3333'4444;
    s.atomic_va = 0x1000'2000'3000'4000;
    s.atomic_rkey = 0x5555'6666;
    s.atomic_swap_add = 0x0102'0304'0506'0708;
    s.atomic_compare = 0x1112'1314'1516'1718;
    s.atomic_original = 0x2122'2324'2526'2728;
    return s;
}

inline std::uint8_t payload_byte(std::size_t i) { return static_cast<std::uint8_t>(i * 13 + 5); }

inline std::vector<std::uint8_t> build_frame(const roce_headers_spec& spec, std::size_t payload_length) {
    std::vector<std::uint8_t> frame(roce_frame_length(spec, payload_length), 0xee); // 0xee: pad must be zeroed
    const std::size_t headers = write_roce_headers(frame.data(), spec, payload_length);
    for (std::size_t i = 0; i < payload_length; ++i) frame[headers + i] = payload_byte(i);
    seal_roce_frame(frame.data(), frame.size());
    return frame;
}

} // namespace rocefab::wire::testing
