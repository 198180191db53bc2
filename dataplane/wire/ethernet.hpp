// Ethernet II and IEEE 802.1Q headers.
#pragma once

#include "dataplane/wire/endian.hpp"

#include <array>
#include <bit>
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>

namespace rocefab::wire {

struct mac_address {
    std::array<std::uint8_t, 6> bytes{};

    // Two integer compares: the switch compares a MAC for every frame it receives, and the
    // defaulted comparison of a packed array becomes a call to memcmp.
    friend constexpr bool operator==(const mac_address& a, const mac_address& b) {
        if (std::is_constant_evaluated()) return a.bytes == b.bytes;
        std::uint32_t a4, b4;
        std::uint16_t a2, b2;
        std::memcpy(&a4, a.bytes.data(), 4);
        std::memcpy(&b4, b.bytes.data(), 4);
        std::memcpy(&a2, a.bytes.data() + 4, 2);
        std::memcpy(&b2, b.bytes.data() + 4, 2);
        return a4 == b4 && a2 == b2;
    }
    constexpr bool is_multicast() const { return bytes[0] & 1; }
    // The six bytes as they lie in memory, in the low-addressed six bytes of a 64-bit word (the
    // rest zero): compared with an 8-byte load of a frame's start under address_mask, one test
    // tells whether the frame is for this address.
    std::uint64_t as_word() const {
        std::uint64_t word = 0;
        std::memcpy(&word, bytes.data(), bytes.size());
        return word;
    }
    static constexpr std::uint64_t address_mask =
        std::endian::native == std::endian::little ? 0x0000'ffff'ffff'ffffull : 0xffff'ffff'ffff'0000ull;
    std::string to_string() const;
    // Parses "aa:bb:cc:dd:ee:ff"; returns false on anything else.
    static bool parse(const std::string& text, mac_address& out);
} __attribute__((packed));
static_assert(sizeof(mac_address) == 6);

namespace ethertype {
inline constexpr std::uint16_t ipv4 = 0x0800;
inline constexpr std::uint16_t arp = 0x0806;
inline constexpr std::uint16_t vlan = 0x8100;
inline constexpr std::uint16_t ipv6 = 0x86dd;
inline constexpr std::uint16_t mac_control = 0x8808; // 802.3x / 802.1Qbb PFC
} // namespace ethertype

struct ethernet_header {
    mac_address destination;
    mac_address source;
    be16 ether_type;
} __attribute__((packed));
static_assert(sizeof(ethernet_header) == 14);

// 802.1Q tag: follows the source MAC; ether_type of the outer header is 0x8100.
struct vlan_header {
    be16 tci; // PCP (3) | DEI (1) | VID (12)
    be16 ether_type;

    constexpr std::uint8_t pcp() const { return tci.load() >> 13; }
    constexpr std::uint16_t vid() const { return tci.load() & 0x0fff; }
    constexpr void set(std::uint8_t pcp, std::uint16_t vid) {
        tci.store(static_cast<std::uint16_t>((pcp & 7) << 13 | (vid & 0x0fff)));
    }
} __attribute__((packed));
static_assert(sizeof(vlan_header) == 4);

} // namespace rocefab::wire
