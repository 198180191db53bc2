// UDP header (RFC 768). RoCEv2 uses destination port 4791; the source port carries flow entropy.
#pragma once

#include "dataplane/wire/endian.hpp"

namespace rocefab::wire {

inline constexpr std::uint16_t roce_v2_udp_port = 4791;

struct udp_header {
    be16 source_port;
    be16 destination_port;
    be16 length;
    be16 checksum; // RoCEv2 sends 0 over IPv4 (IBA Annex A17.4.2)
} __attribute__((packed));
static_assert(sizeof(udp_header) == 8);

} // namespace rocefab::wire
