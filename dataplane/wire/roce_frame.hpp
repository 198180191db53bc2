// Whole RoCEv2 Ethernet frames (IBA Annex A17.4): Ethernet [802.1Q] / IPv4 or IPv6 / UDP 4791 /
// BTH / extension headers / payload / pad / ICRC. One builder and one parser, both driven by the
// opcode table, so that the NIC, the switch and the tests agree on every byte. The parser starts
// from parse_headers() (frame_info.hpp), the Ethernet/IP/UDP parse the switch uses too.
#pragma once

#include "dataplane/wire/bth.hpp"
#include "dataplane/wire/ethernet.hpp"
#include "dataplane/wire/frame_info.hpp"
#include "dataplane/wire/ib_extension_headers.hpp"
#include "dataplane/wire/icrc.hpp"
#include "dataplane/wire/ip.hpp"
#include "dataplane/wire/opcodes.hpp"
#include "dataplane/wire/udp.hpp"

#include <cstddef>
#include <cstdint>
#include <span>

namespace rocefab::wire {

// Ethernet frames shorter than this (FCS excluded) are padded by the transmitting port; RoCE
// frames from roce_frame_length() can be shorter (e.g. a zero-length SEND over IPv4 is 58 bytes).
inline constexpr std::size_t ethernet_min_frame_length = 60;

struct roce_headers_spec {
    mac_address source_mac, destination_mac;
    bool vlan = false;
    std::uint8_t pcp = 0;
    std::uint16_t vid = 0;
    // A v4-mapped source GID (::ffff:a.b.c.d) selects an IPv4 header (Annex A17.4.1), else IPv6.
    ipv6_address source_gid, destination_gid;
    std::uint8_t dscp = 0, ecn = 0, hop_limit = 64;
    std::uint32_t flow_label = 0; // IPv6 only
    std::uint16_t udp_source_port = 0xc000;
    std::uint8_t opcode = 0;
    bool solicited = false, ack_request = false;
    std::uint16_t pkey = 0xffff;
    std::uint32_t dest_qpn = 0, psn = 0;
    bool becn = false;
    // Only those the opcode's mask includes are written.
    std::uint64_t reth_va = 0;
    std::uint32_t reth_rkey = 0, reth_length = 0;
    std::uint8_t aeth_syndrome = 0;
    std::uint32_t aeth_msn = 0;
    std::uint32_t deth_qkey = 0, deth_source_qpn = 0;
    std::uint32_t immediate = 0; // host order, written big-endian
    std::uint32_t ieth_rkey = 0;
    std::uint64_t atomic_va = 0;
    std::uint32_t atomic_rkey = 0;
    std::uint64_t atomic_swap_add = 0, atomic_compare = 0, atomic_original = 0;
};

inline bool uses_ipv4(const roce_headers_spec& spec) { return spec.source_gid.is_v4_mapped(); }

// Ethernet (+VLAN) + IP + UDP + BTH + extension headers; 0 when the opcode is not valid.
std::size_t roce_header_length(const roce_headers_spec& spec);
// Headers + payload + pad + 4 ICRC bytes (no Ethernet minimum padding); 0 for an invalid opcode.
std::size_t roce_frame_length(const roce_headers_spec& spec, std::size_t payload_length);

// Writes all headers for a payload of payload_length bytes (IP/UDP lengths, IPv4 checksum, BTH pad
// count) and returns the header length (0, writing nothing, for an invalid opcode). The caller then
// copies the payload right after the headers and calls seal_roce_frame(). The frame must fit an IP
// datagram (the caller's MTU keeps it far below 64 KiB); lengths are not checked here.
std::size_t write_roce_headers(std::uint8_t* out, const roce_headers_spec& spec, std::size_t payload_length);

// Where a RoCE frame's headers lie, as its builder knows them: all seal_roce_frame() needs.
struct roce_layout {
    std::size_t l3_offset = 0; // Ethernet and its tag (DPDK's l2_len)
    std::size_t l4_offset = 0; // the UDP header (l3_offset + DPDK's l3_len)
    std::size_t length = 0;    // up to and including the ICRC, Ethernet padding excluded
    bool ipv6 = false;
};

// The layout write_roce_headers() gives a frame of `spec` with payload_length bytes of payload,
// without writing it; length 0 for an invalid opcode.
roce_layout roce_layout_of(const roce_headers_spec& spec, std::size_t payload_length);

// Zeroes the pad bytes, writes the ICRC and, over IPv6, the UDP checksum (RFC 8200 forbids zero;
// over IPv4 it stays 0). frame_length as returned by roce_frame_length(), i.e. the frame ends
// with the ICRC. Call again after changing any invariant byte. The parser checks neither the
// UDP checksum nor its absence: the ICRC is what protects RoCE (Annex A17.4.2).
void seal_roce_frame(std::uint8_t* frame, std::size_t frame_length);
// The same for a frame whose layout the caller knows (it built the frame): nothing is parsed.
void seal_roce_frame(std::uint8_t* frame, const roce_layout& layout);

enum class parse_error : std::uint8_t {
    none,
    too_short,     // the frame ends before a header or before the IP datagram does
    not_ip,        // ether type neither IPv4 nor IPv6
    bad_ip_header, // wrong version, IHL < 5, fragment
    bad_ip_checksum,
    not_udp,    // IP protocol / next header is not UDP (IPv6 extension headers included)
    not_roce,   // UDP destination port is not 4791
    bad_length, // IP, UDP and BTH lengths disagree with each other or with the frame
    bad_opcode, // opcode not in the table
    bad_bth,    // transport version not 0 (IBA 9.2.6)
    bad_icrc,
};
const char* to_string(parse_error e);

struct parsed_roce {
    std::size_t l3_offset = 0, l4_offset = 0, bth_offset = 0;
    bool vlan_present = false;
    std::uint8_t pcp = 0;
    std::uint16_t vid = 0;
    bool is_ipv6 = false;
    std::uint8_t dscp = 0, ecn = 0, hop_limit = 0;
    std::uint32_t flow_label = 0;
    ipv6_address source_gid, destination_gid; // v4-mapped for IPv4
    std::uint16_t udp_source_port = 0;
    const bth* bth_header = nullptr;
    const opcode_info* info = nullptr;
    // Extension headers; nullptr when the opcode does not carry them.
    const reth* reth_header = nullptr;
    const aeth* aeth_header = nullptr;
    const deth* deth_header = nullptr;
    const immdt* immdt_header = nullptr;
    const ieth* ieth_header = nullptr;
    const atomic_eth* atomic_eth_header = nullptr;
    const atomic_ack_eth* atomic_ack_eth_header = nullptr;
    const std::uint8_t* payload = nullptr;
    std::size_t payload_length = 0; // pad excluded
    std::uint8_t pad_count = 0;
    std::size_t roce_length = 0; // frame bytes up to and including the ICRC (Ethernet padding excluded)
    std::uint32_t icrc = 0;
};

// Validates lengths at every step and never reads past frame.size(): IP version and header (and
// the IPv4 checksum), UDP destination 4791, a known opcode, IP/UDP lengths that agree with the
// frame (Ethernet padding up to 64 bytes allowed after the ICRC), and the ICRC unless told to skip
// it (a frame whose ICRC its sender deferred, dataplane/packet.hpp: `out.icrc` is then 0).
enum class icrc_check : bool { skip, verify };
parse_error parse_roce_frame(std::span<const std::uint8_t> frame, parsed_roce& out,
                             icrc_check check = icrc_check::verify);

// Cheap classification (no ICRC): Ethernet [VLAN] / IPv4 or IPv6 that parse_headers() accepts /
// UDP to port 4791.
bool is_roce_frame(std::span<const std::uint8_t> frame);

} // namespace rocefab::wire
