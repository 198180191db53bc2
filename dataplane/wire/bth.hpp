// InfiniBand Base Transport Header (IBA 9.2), the first header after UDP in RoCEv2 (Annex A17.4).
// 24-bit fields (destination QP, PSN) share a 32-bit word with flag bits: they are read and written
// through masks, never bit-fields, so the layout does not depend on the compiler.
#pragma once

#include "dataplane/wire/endian.hpp"

#include <cstdint>

namespace rocefab::wire {

struct bth {
    std::uint8_t opcode_byte; // transport (3) | operation (5), IBA 9.2.1 Table 39
    std::uint8_t flags;       // SE (1) | M (1) | PadCnt (2) | TVer (4)
    be16 partition_key;
    be32 fecn_becn_qpn; // FECN (1) | BECN (1) | reserved (6) | DestQP (24)
    be32 ack_psn;       // AckReq (1) | reserved (7) | PSN (24)

    static constexpr std::uint8_t se_bit = 0x80;
    static constexpr std::uint8_t migreq_bit = 0x40;
    static constexpr std::uint32_t fecn_bit = 0x8000'0000u;
    static constexpr std::uint32_t becn_bit = 0x4000'0000u;
    static constexpr std::uint32_t ack_request_bit = 0x8000'0000u;

    constexpr std::uint8_t opcode() const { return opcode_byte; }
    constexpr bool solicited() const { return flags & se_bit; }
    constexpr bool migreq() const { return flags & migreq_bit; }
    constexpr std::uint8_t pad_count() const { return (flags >> 4) & 3; }
    constexpr std::uint8_t tver() const { return flags & 0x0f; }
    constexpr std::uint16_t pkey() const { return partition_key.load(); }
    constexpr bool fecn() const { return fecn_becn_qpn.load() & fecn_bit; }
    constexpr bool becn() const { return fecn_becn_qpn.load() & becn_bit; }
    constexpr std::uint32_t dest_qpn() const { return fecn_becn_qpn.load() & mask24; }
    constexpr bool ack_request() const { return ack_psn.load() & ack_request_bit; }
    constexpr std::uint32_t psn() const { return ack_psn.load() & mask24; }

    constexpr void set_opcode(std::uint8_t op) { opcode_byte = op; }
    constexpr void set_solicited(bool on) { set_flag_bit(se_bit, on); }
    constexpr void set_migreq(bool on) { set_flag_bit(migreq_bit, on); }
    constexpr void set_pad_count(std::uint8_t pad) {
        flags = static_cast<std::uint8_t>((flags & ~0x30) | (pad & 3) << 4);
    }
    constexpr void set_tver(std::uint8_t version) {
        flags = static_cast<std::uint8_t>((flags & ~0x0f) | (version & 0x0f));
    }
    constexpr void set_pkey(std::uint16_t pkey) { partition_key.store(pkey); }
    constexpr void set_fecn(bool on) { set_word_bit(fecn_becn_qpn, fecn_bit, on); }
    constexpr void set_becn(bool on) { set_word_bit(fecn_becn_qpn, becn_bit, on); }
    constexpr void set_dest_qpn(std::uint32_t qpn) {
        fecn_becn_qpn.store((fecn_becn_qpn.load() & ~mask24) | (qpn & mask24));
    }
    constexpr void set_ack_request(bool on) { set_word_bit(ack_psn, ack_request_bit, on); }
    constexpr void set_psn(std::uint32_t psn) { ack_psn.store((ack_psn.load() & ~mask24) | (psn & mask24)); }

private:
    constexpr void set_flag_bit(std::uint8_t bit, bool on) {
        flags = static_cast<std::uint8_t>(on ? (flags | bit) : (flags & ~bit));
    }
    static constexpr void set_word_bit(be32& word, std::uint32_t bit, bool on) {
        word.store(on ? (word.load() | bit) : (word.load() & ~bit));
    }
} __attribute__((packed));
static_assert(sizeof(bth) == 12);

// Offset of the byte holding FECN, BECN and the 6 reserved bits; the ICRC treats it as variant
// (IBA Annex A17.3.3) because switches may set BECN/FECN on the way.
inline constexpr std::size_t bth_variant_byte = 4;

// PSNs are 24-bit sequence numbers that wrap (IBA 9.7.1).
inline constexpr std::uint32_t psn_mask = 0xffffff;

constexpr std::uint32_t psn_add(std::uint32_t psn, std::uint32_t n) { return (psn + n) & psn_mask; }

// Signed distance a - b modulo 2^24, in [-2^23, 2^23): positive when `a` is ahead of `b`. IBA 9.7.1
// splits the PSN space in two halves around the expected PSN (valid ahead, duplicate behind),
// which is exactly the sign of this distance.
constexpr std::int32_t psn_diff(std::uint32_t a, std::uint32_t b) {
    const std::uint32_t d = (a - b) & psn_mask;
    return (d & 0x80'0000u) ? static_cast<std::int32_t>(d) - 0x100'0000 : static_cast<std::int32_t>(d);
}

} // namespace rocefab::wire
