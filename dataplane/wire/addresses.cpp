#include "dataplane/wire/ethernet.hpp"
#include "dataplane/wire/ip.hpp"

#include <arpa/inet.h>
#include <cstdio>

namespace rocefab::wire {

std::string mac_address::to_string() const {
    char text[18];
    std::snprintf(text, sizeof text, "%02x:%02x:%02x:%02x:%02x:%02x", bytes[0], bytes[1], bytes[2], bytes[3], bytes[4],
                  bytes[5]);
    return text;
}

bool mac_address::parse(const std::string& text, mac_address& out) {
    unsigned b[6];
    char tail;
    if (std::sscanf(text.c_str(), "%2x:%2x:%2x:%2x:%2x:%2x%c", &b[0], &b[1], &b[2], &b[3], &b[4], &b[5], &tail) != 6)
        return false;
    for (int i = 0; i < 6; ++i) out.bytes[i] = static_cast<std::uint8_t>(b[i]);
    return true;
}

void ipv4_header::update_checksum() {
    checksum.store(0);
    checksum.store(compute_checksum());
}

ipv6_address ipv6_address::v4_mapped(std::uint32_t v4) {
    ipv6_address a;
    a.bytes[10] = a.bytes[11] = 0xff;
    a.bytes[12] = v4 >> 24;
    a.bytes[13] = v4 >> 16;
    a.bytes[14] = v4 >> 8;
    a.bytes[15] = v4;
    return a;
}

std::uint32_t ipv6_address::v4() const {
    return std::uint32_t(bytes[12]) << 24 | std::uint32_t(bytes[13]) << 16 | std::uint32_t(bytes[14]) << 8 | bytes[15];
}

std::string ipv6_address::to_string() const {
    char text[INET6_ADDRSTRLEN];
    inet_ntop(AF_INET6, bytes.data(), text, sizeof text);
    return text;
}

bool ipv6_address::parse(const std::string& text, ipv6_address& out) {
    return inet_pton(AF_INET6, text.c_str(), out.bytes.data()) == 1;
}

std::string ipv4_to_string(std::uint32_t address) {
    char text[16];
    std::snprintf(text, sizeof text, "%u.%u.%u.%u", address >> 24, (address >> 16) & 0xff, (address >> 8) & 0xff,
                  address & 0xff);
    return text;
}

bool parse_ipv4(const std::string& text, std::uint32_t& out) {
    in_addr a{};
    if (inet_pton(AF_INET, text.c_str(), &a) != 1) return false;
    out = ntohl(a.s_addr);
    return true;
}

} // namespace rocefab::wire
