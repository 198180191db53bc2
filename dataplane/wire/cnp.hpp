// RoCEv2 Congestion Notification Packet (IBA Annex A17.9.2 / DCQCN): sent by the notification
// point back to the sender of ECN-CE-marked packets. BTH with opcode 0x81 and DestQP = the QP
// that must slow down, 16 reserved zero bytes, ICRC. Built through the ordinary RoCE builder:
// the opcode table gives CNP a fixed 16-byte payload.
#pragma once

#include "dataplane/wire/roce_frame.hpp"

#include <cstring>

namespace rocefab::wire {

// Fills the BTH part of `spec` for a CNP to `dest_qpn`. Addresses, DSCP/PCP and UDP port stay
// as the caller set them (NVIDIA sends CNPs with DSCP 48 / priority 6 by default). BECN is set,
// as ConnectX and scapy's cnp() do; the P_Key is the default partition.
inline void make_cnp_spec(roce_headers_spec& spec, std::uint32_t dest_qpn) {
    spec.opcode = static_cast<std::uint8_t>(ib_opcode::cnp);
    spec.dest_qpn = dest_qpn;
    spec.psn = 0;
    spec.solicited = false;
    spec.ack_request = false;
    spec.becn = true;
}

inline std::size_t cnp_frame_length(const roce_headers_spec& spec) {
    return roce_frame_length(spec, cnp_payload_length);
}

// Writes a whole sealed CNP (spec.opcode must be CNP) and returns its length (0 otherwise).
inline std::size_t write_cnp_frame(std::uint8_t* out, const roce_headers_spec& spec) {
    if (spec.opcode != static_cast<std::uint8_t>(ib_opcode::cnp)) return 0;
    const std::size_t headers = write_roce_headers(out, spec, cnp_payload_length);
    std::memset(out + headers, 0, cnp_payload_length);
    const std::size_t length = cnp_frame_length(spec);
    seal_roce_frame(out, length);
    return length;
}

} // namespace rocefab::wire
