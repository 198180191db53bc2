#include "control/config/ip_prefix.hpp"

#include <charconv>

namespace rocefab::config {

std::string ip_prefix::to_string() const {
    const std::string text = v6 ? address.to_string() : wire::ipv4_to_string(address.v4());
    return text + "/" + std::to_string(length);
}

bool ip_prefix::contains(const wire::ipv6_address& other) const {
    // Compared on the 128-bit form: an IPv4 /len is a /96+len over ::ffff:0:0/96.
    const unsigned bits = v6 ? length : 96 + length;
    for (unsigned i = 0; i < bits / 8; ++i)
        if (address.bytes[i] != other.bytes[i]) return false;
    if (bits % 8 == 0) return true;
    const auto mask = static_cast<std::uint8_t>(0xff << (8 - bits % 8));
    return (address.bytes[bits / 8] & mask) == (other.bytes[bits / 8] & mask);
}

ip_prefix ip_prefix::host_prefix() const {
    ip_prefix host = *this;
    host.length = v6 ? 128 : 32;
    return host;
}

ip_prefix ip_prefix::v4(std::uint32_t address_host_order, unsigned length) {
    return ip_prefix{false, wire::ipv6_address::v4_mapped(address_host_order), length};
}

std::optional<ip_prefix> parse_ip_prefix(std::string_view text) {
    const auto slash = text.find('/');
    if (slash == std::string_view::npos) return std::nullopt;
    const std::string address_text(text.substr(0, slash));
    const std::string_view length_text = text.substr(slash + 1);
    unsigned length = 0;
    const auto [end, status] = std::from_chars(length_text.data(), length_text.data() + length_text.size(), length);
    if (length_text.empty() || status != std::errc{} || end != length_text.data() + length_text.size())
        return std::nullopt;
    // from_chars accepts "024"; a prefix length with a leading zero is almost certainly a typo.
    if (length_text.size() > 1 && length_text[0] == '0') return std::nullopt;

    std::uint32_t v4 = 0;
    if (wire::parse_ipv4(address_text, v4)) {
        if (length > 32) return std::nullopt;
        return ip_prefix::v4(v4, length);
    }
    ip_prefix prefix;
    prefix.v6 = true;
    if (!wire::ipv6_address::parse(address_text, prefix.address) || prefix.address.is_v4_mapped() || length > 128)
        return std::nullopt;
    prefix.length = length;
    return prefix;
}

} // namespace rocefab::config
