// IEEE 802.1Qbb Priority-based Flow Control frame (a MAC control frame, IEEE 802.3 Annex 31D):
// one pause timer per priority, each in quanta of 512 bit times at the link's speed.
#pragma once

#include "dataplane/time.hpp"
#include "dataplane/wire/ethernet.hpp"

#include <array>
#include <cstdint>
#include <span>

namespace rocefab::wire {

inline constexpr mac_address pfc_destination_mac{{0x01, 0x80, 0xc2, 0x00, 0x00, 0x01}};
inline constexpr std::uint16_t pfc_mac_control_opcode = 0x0101;
inline constexpr std::size_t pfc_priority_count = 8;
inline constexpr std::uint64_t pfc_quantum_bits = 512;
// Minimum Ethernet frame without FCS; the PFC payload is padded with zeros up to it.
inline constexpr std::size_t pfc_frame_length = 60;

struct pfc_frame {
    ethernet_header ethernet;    // destination 01:80:c2:00:00:01, ether type 0x8808
    be16 opcode;                 // 0x0101
    be16 priority_enable_vector; // bits 15..8 reserved (0), bit n enables time[n]
    be16 quanta[pfc_priority_count];
} __attribute__((packed));
static_assert(sizeof(pfc_frame) == 34);

// Writes a 60-byte frame (FCS excluded) and returns its length. Quanta of priorities whose enable
// bit is clear are written anyway: receivers ignore them (802.1Qbb 36.1.3.2).
std::size_t write_pfc_frame(std::uint8_t* out, const mac_address& source, std::uint8_t enable_vector,
                            const std::array<std::uint16_t, 8>& quanta);

// True for a well-formed PFC frame (destination, ether type and opcode checked, no VLAN tag).
// Trailing padding is accepted; a frame shorter than the PFC fields is not.
bool parse_pfc_frame(std::span<const std::uint8_t> frame, std::uint8_t& enable_vector,
                     std::array<std::uint16_t, 8>& quanta);

// Pause duration of `quanta` at a link of bits_per_second, rounded up to whole nanoseconds
// (a quantum is 512 bit times, 802.3 31B.3.2). 0 for a link without a rate.
constexpr sim_time pause_quanta_to_time(std::uint16_t quanta, std::uint64_t bits_per_second) {
    if (bits_per_second == 0) return 0;
    const unsigned __int128 bit_ns = static_cast<unsigned __int128>(quanta) * pfc_quantum_bits * 1'000'000'000u;
    return static_cast<sim_time>((bit_ns + bits_per_second - 1) / bits_per_second);
}

} // namespace rocefab::wire
