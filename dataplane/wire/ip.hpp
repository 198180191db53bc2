// IPv4 (RFC 791) and IPv6 (RFC 8200) headers, with the DSCP and ECN bits of the traffic class
// (RFC 2474, RFC 3168) that classification and ECN marking read and write.
#pragma once

#include "dataplane/wire/endian.hpp"

#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>

namespace rocefab::wire {

namespace ip_protocol {
inline constexpr std::uint8_t udp = 17;
}

namespace ecn {
inline constexpr std::uint8_t not_ect = 0;
inline constexpr std::uint8_t ect1 = 1;
inline constexpr std::uint8_t ect0 = 2;
inline constexpr std::uint8_t ce = 3;
} // namespace ecn

struct ipv4_header {
    std::uint8_t version_ihl; // version 4, IHL in 32-bit words
    std::uint8_t tos;         // DSCP (6) | ECN (2)
    be16 total_length;
    be16 identification;
    be16 flags_fragment;
    std::uint8_t ttl;
    std::uint8_t protocol;
    be16 checksum;
    be32 source;
    be32 destination;

    constexpr std::uint8_t version() const { return version_ihl >> 4; }
    constexpr std::size_t header_length() const { return (version_ihl & 0x0f) * 4u; }
    constexpr std::uint8_t dscp() const { return tos >> 2; }
    constexpr std::uint8_t ecn() const { return tos & 3; }
    constexpr void set_dscp_ecn(std::uint8_t dscp, std::uint8_t ecn_bits) {
        tos = static_cast<std::uint8_t>((dscp & 0x3f) << 2 | (ecn_bits & 3));
    }
    // RFC 1071 checksum over the header as it stands (the checksum field included). The ones'
    // complement sum does not depend on byte order, so the header (IHL x 4 bytes) is summed as
    // native 32-bit words, folded to 16 bits, and swapped to network order at the end: five
    // loads instead of twenty byte reads. Inline: every routed frame is checked.
    std::uint16_t compute_checksum() const {
        const auto* bytes = reinterpret_cast<const std::uint8_t*>(this);
        auto word = [bytes](std::size_t i) {
            std::uint32_t w;
            std::memcpy(&w, bytes + 4 * i, sizeof w);
            return std::uint64_t(w);
        };
        std::uint64_t sum = 0;
        if (header_length() == sizeof(ipv4_header)) {
            sum = word(0) + word(1) + word(2) + word(3) + word(4); // no options: no loop
        } else {
            for (std::size_t i = 0; i < header_length() / 4; ++i) sum += word(i);
        }
        while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
        const auto folded = static_cast<std::uint16_t>(~sum);
        if constexpr (std::endian::native == std::endian::little) return __builtin_bswap16(folded);
        return folded;
    }
    void update_checksum();
    bool checksum_ok() const { return compute_checksum() == 0; }
} __attribute__((packed));
static_assert(sizeof(ipv4_header) == 20);

struct ipv6_address {
    std::array<std::uint8_t, 16> bytes{};
    friend constexpr bool operator==(const ipv6_address&, const ipv6_address&) = default;
    friend constexpr auto operator<=>(const ipv6_address&, const ipv6_address&) = default;

    // ::ffff:a.b.c.d, the form RoCEv2 GIDs take for IPv4 addresses.
    static ipv6_address v4_mapped(std::uint32_t ipv4_host_order);
    // Inline, as a 12-byte compare: every RoCE frame a NIC builds asks it (a byte loop here
    // was 2 % of `rocefab sim`'s instructions).
    bool is_v4_mapped() const {
        static constexpr std::array<std::uint8_t, 12> prefix{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
        return std::memcmp(bytes.data(), prefix.data(), prefix.size()) == 0;
    }
    std::uint32_t v4() const; // meaningful only when is_v4_mapped()
    std::string to_string() const;
    static bool parse(const std::string& text, ipv6_address& out);
} __attribute__((packed));
static_assert(sizeof(ipv6_address) == 16);

struct ipv6_header {
    be32 version_class_flow; // version (4) | traffic class (8) | flow label (20)
    be16 payload_length;
    std::uint8_t next_header;
    std::uint8_t hop_limit;
    ipv6_address source;
    ipv6_address destination;

    constexpr std::uint8_t version() const { return version_class_flow.load() >> 28; }
    constexpr std::uint8_t traffic_class() const { return (version_class_flow.load() >> 20) & 0xff; }
    constexpr std::uint8_t dscp() const { return traffic_class() >> 2; }
    constexpr std::uint8_t ecn() const { return traffic_class() & 3; }
    constexpr std::uint32_t flow_label() const { return version_class_flow.load() & 0xfffff; }
    constexpr void set(std::uint8_t dscp, std::uint8_t ecn_bits, std::uint32_t flow_label) {
        version_class_flow.store(6u << 28 | std::uint32_t((dscp & 0x3f) << 2 | (ecn_bits & 3)) << 20 |
                                 (flow_label & 0xfffff));
    }
} __attribute__((packed));
static_assert(sizeof(ipv6_header) == 40);

// Host-order IPv4 address to and from dotted quad text.
std::string ipv4_to_string(std::uint32_t address);
bool parse_ipv4(const std::string& text, std::uint32_t& out);

} // namespace rocefab::wire
