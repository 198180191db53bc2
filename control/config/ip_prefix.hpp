// An interface address with its prefix length, IPv4 or IPv6, as in `ip addr add 10.0.0.1/24`.
#pragma once

#include "dataplane/wire/ip.hpp"

#include <optional>
#include <string>
#include <string_view>

namespace rocefab::config {

struct ip_prefix {
    bool v6 = false;
    // IPv4 addresses are stored v4-mapped (::ffff:a.b.c.d), the form a RoCEv2 GID takes, so that one type
    // serves both families in GID tables and routing tables.
    wire::ipv6_address address;
    unsigned length = 0; // 0-32 for IPv4 (in IPv4 terms, not 96+), 0-128 for IPv6

    friend bool operator==(const ip_prefix&, const ip_prefix&) = default;

    // "10.0.0.1/24" or "fd00::1/64".
    std::string to_string() const;
    // Whether the first `length` bits of `other` equal those of `address`. An IPv4 prefix contains only
    // v4-mapped addresses.
    bool contains(const wire::ipv6_address& other) const;
    // The /32 (or /128) prefix of the address itself: what a host route points at.
    ip_prefix host_prefix() const;

    static ip_prefix v4(std::uint32_t address_host_order, unsigned length);
};

// "a.b.c.d/len" or "ipv6/len". The length is required: a bare address is rejected rather than silently
// taken as /32. IPv4-mapped IPv6 text ("::ffff:10.0.0.1/120") is rejected: write such addresses as IPv4.
std::optional<ip_prefix> parse_ip_prefix(std::string_view text);

} // namespace rocefab::config
