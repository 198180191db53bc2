// BTH opcodes as data (IBA 9.2.1 Table 39, RoCEv2 CNP from Annex A17.9.2): one constexpr table
// says, for each of the 256 opcode values, whether it is valid, which extension headers follow
// the BTH and where, and what kind of packet it is. Parsing, building and validation all read
// this table instead of switching on opcodes, as rxe does with rxe_opcode[].
#pragma once

#include "dataplane/wire/bth.hpp"
#include "dataplane/wire/ib_extension_headers.hpp"

#include <array>
#include <cstdint>

namespace rocefab::wire {

enum class ib_opcode : std::uint8_t {
    rc_send_first = 0x00,
    rc_send_middle = 0x01,
    rc_send_last = 0x02,
    rc_send_last_with_immediate = 0x03,
    rc_send_only = 0x04,
    rc_send_only_with_immediate = 0x05,
    rc_rdma_write_first = 0x06,
    rc_rdma_write_middle = 0x07,
    rc_rdma_write_last = 0x08,
    rc_rdma_write_last_with_immediate = 0x09,
    rc_rdma_write_only = 0x0a,
    rc_rdma_write_only_with_immediate = 0x0b,
    rc_rdma_read_request = 0x0c,
    rc_rdma_read_response_first = 0x0d,
    rc_rdma_read_response_middle = 0x0e,
    rc_rdma_read_response_last = 0x0f,
    rc_rdma_read_response_only = 0x10,
    rc_acknowledge = 0x11,
    rc_atomic_acknowledge = 0x12,
    rc_compare_swap = 0x13,
    rc_fetch_add = 0x14,
    // 0x15 is reserved for RC.
    rc_send_last_with_invalidate = 0x16,
    rc_send_only_with_invalidate = 0x17,

    uc_send_first = 0x20,
    uc_send_middle = 0x21,
    uc_send_last = 0x22,
    uc_send_last_with_immediate = 0x23,
    uc_send_only = 0x24,
    uc_send_only_with_immediate = 0x25,
    uc_rdma_write_first = 0x26,
    uc_rdma_write_middle = 0x27,
    uc_rdma_write_last = 0x28,
    uc_rdma_write_last_with_immediate = 0x29,
    uc_rdma_write_only = 0x2a,
    uc_rdma_write_only_with_immediate = 0x2b,

    ud_send_only = 0x64,
    ud_send_only_with_immediate = 0x65,

    cnp = 0x81,
};

constexpr std::uint8_t to_byte(ib_opcode op) { return static_cast<std::uint8_t>(op); }

enum class ib_transport : std::uint8_t { none, rc, uc, ud, cnp };

// Extension headers in the order they follow the BTH (IBA 9.3: DETH, RETH, AtomicETH, AETH,
// AtomicAckETH, ImmDt, IETH). The table's offsets come from this order.
enum class ext_header : std::uint8_t { deth, reth, atomic_eth, aeth, atomic_ack_eth, immdt, ieth, count };

inline constexpr std::size_t ext_header_count = static_cast<std::size_t>(ext_header::count);

namespace opcode_mask {
inline constexpr std::uint32_t reth = 1u << 0;
inline constexpr std::uint32_t aeth = 1u << 1;
inline constexpr std::uint32_t deth = 1u << 2;
inline constexpr std::uint32_t immdt = 1u << 3;
inline constexpr std::uint32_t ieth = 1u << 4;
inline constexpr std::uint32_t atomic_eth = 1u << 5;
inline constexpr std::uint32_t atomic_ack_eth = 1u << 6;
inline constexpr std::uint32_t payload = 1u << 7;  // may carry payload bytes
inline constexpr std::uint32_t request = 1u << 8;  // requester to responder
inline constexpr std::uint32_t response = 1u << 9; // responder to requester (ACKs, read responses)
inline constexpr std::uint32_t ack = response;     // rxe's name for the same thing
inline constexpr std::uint32_t first = 1u << 10;
inline constexpr std::uint32_t middle = 1u << 11;
inline constexpr std::uint32_t last = 1u << 12;
inline constexpr std::uint32_t only = 1u << 13;
inline constexpr std::uint32_t send = 1u << 14;
inline constexpr std::uint32_t write = 1u << 15;
inline constexpr std::uint32_t read = 1u << 16;
inline constexpr std::uint32_t atomic = 1u << 17;
// The SE bit is meaningful (IBA 9.2.3: the last or only packet of a SEND, or of an RDMA WRITE
// with immediate, may request a solicited event).
inline constexpr std::uint32_t solicitable = 1u << 18;
inline constexpr std::uint32_t cnp = 1u << 19;
} // namespace opcode_mask

struct opcode_info {
    const char* name = "INVALID";
    bool valid = false;
    ib_transport transport = ib_transport::none;
    std::uint32_t mask = 0;
    std::uint8_t header_length = 0;                         // BTH + extension headers
    std::array<std::uint8_t, ext_header_count> offset_of{}; // from the start of the BTH; 0 if absent

    constexpr bool has(std::uint32_t bits) const { return (mask & bits) == bits; }
    constexpr std::uint8_t offset(ext_header h) const { return offset_of[static_cast<std::size_t>(h)]; }
};

// RoCEv2 CNP (Annex A17.9.2): BTH, then 16 reserved bytes that must be zero, then the ICRC.
// The table treats the 16 bytes as the CNP's fixed payload.
inline constexpr std::size_t cnp_payload_length = 16;

namespace detail {

struct ext_layout {
    std::uint32_t bit;
    std::uint8_t size;
};

// In wire order, matching ext_header.
inline constexpr std::array<ext_layout, ext_header_count> ext_layouts{{
    {opcode_mask::deth, sizeof(deth)},
    {opcode_mask::reth, sizeof(reth)},
    {opcode_mask::atomic_eth, sizeof(atomic_eth)},
    {opcode_mask::aeth, sizeof(aeth)},
    {opcode_mask::atomic_ack_eth, sizeof(atomic_ack_eth)},
    {opcode_mask::immdt, sizeof(immdt)},
    {opcode_mask::ieth, sizeof(ieth)},
}};

constexpr opcode_info make_opcode(const char* name, ib_transport transport, std::uint32_t mask) {
    opcode_info info{.name = name, .valid = true, .transport = transport, .mask = mask};
    std::uint8_t offset = sizeof(bth);
    for (std::size_t i = 0; i < ext_header_count; ++i) {
        if (!(mask & ext_layouts[i].bit)) continue;
        info.offset_of[i] = offset;
        offset = static_cast<std::uint8_t>(offset + ext_layouts[i].size);
    }
    info.header_length = offset;
    return info;
}

// The operations shared by RC and UC (IBA Table 39 lists them under both transports).
constexpr void add_send_and_write(std::array<opcode_info, 256>& t, std::uint8_t base, ib_transport tr,
                                  const char* const names[12]) {
    namespace m = opcode_mask;
    constexpr std::uint32_t sq = m::request | m::payload;
    const std::uint32_t masks[12] = {
        sq | m::send | m::first,                                       // SEND_FIRST
        sq | m::send | m::middle,                                      // SEND_MIDDLE
        sq | m::send | m::last | m::solicitable,                       // SEND_LAST
        sq | m::send | m::last | m::immdt | m::solicitable,            // SEND_LAST_WITH_IMMEDIATE
        sq | m::send | m::only | m::solicitable,                       // SEND_ONLY
        sq | m::send | m::only | m::immdt | m::solicitable,            // SEND_ONLY_WITH_IMMEDIATE
        sq | m::write | m::first | m::reth,                            // RDMA_WRITE_FIRST
        sq | m::write | m::middle,                                     // RDMA_WRITE_MIDDLE
        sq | m::write | m::last,                                       // RDMA_WRITE_LAST
        sq | m::write | m::last | m::immdt | m::solicitable,           // RDMA_WRITE_LAST_WITH_IMMEDIATE
        sq | m::write | m::only | m::reth,                             // RDMA_WRITE_ONLY
        sq | m::write | m::only | m::reth | m::immdt | m::solicitable, // RDMA_WRITE_ONLY_WITH_IMMEDIATE
    };
    for (std::uint8_t i = 0; i < 12; ++i) t[base + i] = make_opcode(names[i], tr, masks[i]);
}

constexpr std::array<opcode_info, 256> make_opcode_table() {
    namespace m = opcode_mask;
    std::array<opcode_info, 256> t{};
    constexpr const char* rc_names[12] = {"RC_SEND_FIRST",       "RC_SEND_MIDDLE",
                                          "RC_SEND_LAST",        "RC_SEND_LAST_WITH_IMMEDIATE",
                                          "RC_SEND_ONLY",        "RC_SEND_ONLY_WITH_IMMEDIATE",
                                          "RC_RDMA_WRITE_FIRST", "RC_RDMA_WRITE_MIDDLE",
                                          "RC_RDMA_WRITE_LAST",  "RC_RDMA_WRITE_LAST_WITH_IMMEDIATE",
                                          "RC_RDMA_WRITE_ONLY",  "RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE"};
    constexpr const char* uc_names[12] = {"UC_SEND_FIRST",       "UC_SEND_MIDDLE",
                                          "UC_SEND_LAST",        "UC_SEND_LAST_WITH_IMMEDIATE",
                                          "UC_SEND_ONLY",        "UC_SEND_ONLY_WITH_IMMEDIATE",
                                          "UC_RDMA_WRITE_FIRST", "UC_RDMA_WRITE_MIDDLE",
                                          "UC_RDMA_WRITE_LAST",  "UC_RDMA_WRITE_LAST_WITH_IMMEDIATE",
                                          "UC_RDMA_WRITE_ONLY",  "UC_RDMA_WRITE_ONLY_WITH_IMMEDIATE"};
    add_send_and_write(t, 0x00, ib_transport::rc, rc_names);
    add_send_and_write(t, 0x20, ib_transport::uc, uc_names);

    const auto rc = ib_transport::rc;
    t[0x0c] = make_opcode("RC_RDMA_READ_REQUEST", rc, m::request | m::read | m::only | m::reth);
    t[0x0d] = make_opcode("RC_RDMA_READ_RESPONSE_FIRST", rc, m::response | m::read | m::first | m::aeth | m::payload);
    t[0x0e] = make_opcode("RC_RDMA_READ_RESPONSE_MIDDLE", rc, m::response | m::read | m::middle | m::payload);
    t[0x0f] = make_opcode("RC_RDMA_READ_RESPONSE_LAST", rc, m::response | m::read | m::last | m::aeth | m::payload);
    t[0x10] = make_opcode("RC_RDMA_READ_RESPONSE_ONLY", rc, m::response | m::read | m::only | m::aeth | m::payload);
    t[0x11] = make_opcode("RC_ACKNOWLEDGE", rc, m::response | m::only | m::aeth);
    t[0x12] = make_opcode("RC_ATOMIC_ACKNOWLEDGE", rc, m::response | m::atomic | m::only | m::aeth | m::atomic_ack_eth);
    t[0x13] = make_opcode("RC_COMPARE_SWAP", rc, m::request | m::atomic | m::only | m::atomic_eth);
    t[0x14] = make_opcode("RC_FETCH_ADD", rc, m::request | m::atomic | m::only | m::atomic_eth);
    t[0x16] = make_opcode("RC_SEND_LAST_WITH_INVALIDATE", rc,
                          m::request | m::payload | m::send | m::last | m::ieth | m::solicitable);
    t[0x17] = make_opcode("RC_SEND_ONLY_WITH_INVALIDATE", rc,
                          m::request | m::payload | m::send | m::only | m::ieth | m::solicitable);

    t[0x64] = make_opcode("UD_SEND_ONLY", ib_transport::ud,
                          m::request | m::payload | m::send | m::only | m::deth | m::solicitable);
    t[0x65] = make_opcode("UD_SEND_ONLY_WITH_IMMEDIATE", ib_transport::ud,
                          m::request | m::payload | m::send | m::only | m::deth | m::immdt | m::solicitable);

    t[0x81] = make_opcode("CNP", ib_transport::cnp, m::cnp | m::payload);
    return t;
}

} // namespace detail

inline constexpr std::array<opcode_info, 256> opcode_table = detail::make_opcode_table();

constexpr const opcode_info& opcode_info_of(std::uint8_t opcode) { return opcode_table[opcode]; }
constexpr const opcode_info& opcode_info_of(ib_opcode opcode) { return opcode_table[to_byte(opcode)]; }

// Pad bytes that bring a payload to a multiple of 4 (IBA 9.2.4: PadCnt).
constexpr std::uint8_t pad_for(std::size_t payload_length) {
    return static_cast<std::uint8_t>((4 - payload_length % 4) % 4);
}

} // namespace rocefab::wire
