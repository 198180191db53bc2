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
    // native 32-bit words (word_sum()), folded to 16 bits, and swapped to network order at the
    // end: five loads instead of twenty byte reads. Inline: every routed frame is checked.
    std::uint16_t compute_checksum() const {
        std::uint64_t sum = word_sum();
        while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
        const auto folded = static_cast<std::uint16_t>(~sum);
        if constexpr (std::endian::native == std::endian::little) return __builtin_bswap16(folded);
        return folded;
    }
    void update_checksum();
    // compute_checksum() == 0 without the folding: folding keeps a sum's value modulo 0xffff
    // (2^16 = 1 modulo 0xffff) and ends at 0xffff, the checksum 0, exactly when a sum other than
    // 0 is a multiple of 0xffff; a remainder by a constant is a multiply and a shift or two.
    bool checksum_ok() const {
        const std::uint64_t sum = word_sum();
        return sum != 0 && sum % 0xffff == 0;
    }
    // TTL - 1, the checksum updated incrementally as Linux's ip_decrease_ttl() does: the 16-bit
    // word holding TTL and protocol falls by 0x0100, so the checksum (the complement of the
    // ones' complement sum) rises by 0x0100 with the end-around carry, and a result of 0xffff,
    // ones' complement zero, becomes 0x0000, as a full update_checksum() (and RFC 1624's eqn. 3)
    // would give. The TTL must be at least 1.
    void decrement_ttl() {
        --ttl;
        const std::uint32_t sum = std::uint32_t{checksum.load()} + 0x0100u;
        checksum.store(static_cast<std::uint16_t>(sum + (sum >= 0xffffu)));
    }

private:
    // The header's IHL x 4 bytes as native 32-bit words, added without folding.
    std::uint64_t word_sum() const {
        const auto* bytes = reinterpret_cast<const std::uint8_t*>(this);
        auto word = [bytes](std::size_t i) {
            std::uint32_t w;
            std::memcpy(&w, bytes + 4 * i, sizeof w);
            return std::uint64_t(w);
        };
        if (header_length() == sizeof(ipv4_header)) return word(0) + word(1) + word(2) + word(3) + word(4); // no loop
        std::uint64_t sum = 0;
        for (std::size_t i = 0; i < header_length() / 4; ++i) sum += word(i);
        return sum;
    }
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
