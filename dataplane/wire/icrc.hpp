// RoCEv2 Invariant CRC (IBA Annex A17.3.3; InfiniBand ICRC in IBA 7.8.1).
//
// The ICRC is the Ethernet CRC-32 (polynomial 0x04C11DB7, reflected, initial value and final XOR
// 0xFFFFFFFF — the same function as zlib's crc32()) computed over:
//   1. 8 bytes of 0xFF, standing in for the LRH that RoCEv2 does not carry;
//   2. the IP header with its variant fields set to all ones — IPv4: TOS (DSCP+ECN), TTL and header
//      checksum; IPv6: traffic class, flow label and hop limit — because routers may change them;
//   3. the UDP header with its checksum set to all ones;
//   4. the BTH with byte 4 (FECN, BECN, reserved) set to all ones;
//   5. everything after the BTH up to the ICRC: extension headers, payload and pad bytes.
//
// On the wire the 32-bit CRC value is stored least-significant byte first (as the Ethernet FCS
// is): Linux rxe writes ~crc through a little-endian u32 and scapy's BTH packs it reversed.
// store_icrc()/load_icrc() are the only places that know this.
#pragma once

#include <cstdint>
#include <span>

namespace rocefab::wire {

inline constexpr std::size_t icrc_length = 4;

// CRC-32 as zlib computes it, for arbitrary bytes (exposed for tests and for other CRC users).
std::uint32_t crc32(std::span<const std::uint8_t> bytes);

// `ip_to_end_of_payload` starts at the IPv4/IPv6 header and ends right before the 4 ICRC bytes
// (pad bytes included). Never reads outside the span, whatever it holds: a span too short for the
// headers it claims is hashed as far as it goes (the result then simply does not match).
std::uint32_t compute_icrc(std::span<const std::uint8_t> ip_to_end_of_payload);

// `ip_to_end_of_icrc` is the same range plus the 4 ICRC bytes.
bool icrc_matches(std::span<const std::uint8_t> ip_to_end_of_icrc);

constexpr void store_icrc(std::uint8_t* at, std::uint32_t icrc) {
    at[0] = static_cast<std::uint8_t>(icrc);
    at[1] = static_cast<std::uint8_t>(icrc >> 8);
    at[2] = static_cast<std::uint8_t>(icrc >> 16);
    at[3] = static_cast<std::uint8_t>(icrc >> 24);
}

constexpr std::uint32_t load_icrc(const std::uint8_t* at) {
    return std::uint32_t(at[0]) | std::uint32_t(at[1]) << 8 | std::uint32_t(at[2]) << 16 | std::uint32_t(at[3]) << 24;
}

} // namespace rocefab::wire
