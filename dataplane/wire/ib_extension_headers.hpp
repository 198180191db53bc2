// InfiniBand extended transport headers (IBA 9.3): which of them follow the BTH depends only on
// the opcode (see opcodes.hpp); each is a packed struct of big-endian fields with its size checked.
#pragma once

#include "dataplane/wire/endian.hpp"

#include <cstdint>

namespace rocefab::wire {

// RDMA Extended Transport Header, IBA 9.3.3: RDMA WRITE first/only and RDMA READ request.
struct reth {
    be64 virtual_address;
    be32 rkey;
    be32 dma_length;
} __attribute__((packed));
static_assert(sizeof(reth) == 16);

// ACK Extended Transport Header, IBA 9.3.5: syndrome (8) | MSN (24).
struct aeth {
    be32 syndrome_msn;

    constexpr std::uint8_t syndrome() const { return syndrome_msn.load() >> 24; }
    constexpr std::uint32_t msn() const { return syndrome_msn.load() & mask24; }
    constexpr void set_syndrome(std::uint8_t s) {
        syndrome_msn.store(std::uint32_t(s) << 24 | (syndrome_msn.load() & mask24));
    }
    constexpr void set_msn(std::uint32_t msn) { syndrome_msn.store((syndrome_msn.load() & ~mask24) | (msn & mask24)); }
} __attribute__((packed));
static_assert(sizeof(aeth) == 4);

// Datagram Extended Transport Header, IBA 9.3.2: Q_Key, reserved (8) | source QP (24).
struct deth {
    be32 qkey;
    be32 source_qpn_word;

    constexpr std::uint32_t source_qpn() const { return source_qpn_word.load() & mask24; }
    constexpr void set_source_qpn(std::uint32_t qpn) { source_qpn_word.store(qpn & mask24); }
} __attribute__((packed));
static_assert(sizeof(deth) == 8);

// Immediate data, IBA 9.3.6: opaque to the transport, delivered in the receive completion.
struct immdt {
    be32 data;
} __attribute__((packed));
static_assert(sizeof(immdt) == 4);

// Invalidate Extended Transport Header, IBA 9.3.7: the R_Key that SEND with invalidate revokes.
struct ieth {
    be32 rkey;
} __attribute__((packed));
static_assert(sizeof(ieth) == 4);

// Atomic Extended Transport Header, IBA 9.3.4: COMPARE_SWAP and FETCH_ADD requests.
struct atomic_eth {
    be64 virtual_address;
    be32 rkey;
    be64 swap_add; // swap value for COMPARE_SWAP, addend for FETCH_ADD
    be64 compare;
} __attribute__((packed));
static_assert(sizeof(atomic_eth) == 28);

// Atomic ACK Extended Transport Header, IBA 9.3.5.3: the value at the address before the atomic.
struct atomic_ack_eth {
    be64 original;
} __attribute__((packed));
static_assert(sizeof(atomic_ack_eth) == 8);

// NAK codes carried in the low 5 bits of a NAK syndrome, IBA 9.7.5.2.8 Table 51.
enum class nak_code : std::uint8_t {
    psn_sequence_error = 0,
    invalid_request = 1,
    remote_access_error = 2,
    remote_operational_error = 3,
    invalid_rd_request = 4,
};

constexpr const char* to_string(nak_code code) {
    switch (code) {
    case nak_code::psn_sequence_error: return "PSN sequence error";
    case nak_code::invalid_request: return "invalid request";
    case nak_code::remote_access_error: return "remote access error";
    case nak_code::remote_operational_error: return "remote operational error";
    case nak_code::invalid_rd_request: return "invalid RD request";
    }
    return "reserved NAK code";
}

// AETH syndrome, IBA 9.7.5.2.8 Table 51: bit 7 reserved (0), bits 6..5 the kind
// (00 ACK, 01 RNR NAK, 10 reserved, 11 NAK), bits 4..0 credits, RNR timer or NAK code.
namespace aeth_syndrome {

inline constexpr std::uint8_t kind_mask = 0x60;
inline constexpr std::uint8_t kind_ack = 0x00;
inline constexpr std::uint8_t kind_rnr_nak = 0x20;
inline constexpr std::uint8_t kind_nak = 0x60;
inline constexpr std::uint8_t value_mask = 0x1f;
// Credit count 11111b: end-to-end credits do not apply (IBA 9.7.7.2.3), e.g. QPs with an SRQ.
inline constexpr std::uint8_t invalid_credits = 0x1f;

constexpr std::uint8_t ack(std::uint8_t credits) { return kind_ack | (credits & value_mask); }
constexpr std::uint8_t rnr_nak(std::uint8_t timer5) { return kind_rnr_nak | (timer5 & value_mask); }
constexpr std::uint8_t nak(nak_code code) { return kind_nak | (static_cast<std::uint8_t>(code) & value_mask); }

constexpr bool is_ack(std::uint8_t s) { return (s & kind_mask) == kind_ack; }
constexpr bool is_rnr_nak(std::uint8_t s) { return (s & kind_mask) == kind_rnr_nak; }
constexpr bool is_nak(std::uint8_t s) { return (s & kind_mask) == kind_nak; }
// Meaningful only for the matching kind; a receiver must check the kind first.
constexpr nak_code nak_code_of(std::uint8_t s) { return static_cast<nak_code>(s & value_mask); }
constexpr std::uint8_t rnr_timer_of(std::uint8_t s) { return s & value_mask; }
constexpr std::uint8_t credits_of(std::uint8_t s) { return s & value_mask; }

} // namespace aeth_syndrome

} // namespace rocefab::wire
