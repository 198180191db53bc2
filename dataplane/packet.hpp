// A packet is an rte_mbuf from the fabric's mempool, with a small metadata block in the mbuf's
// dynamic field area. Frames are whole Ethernet frames, FCS excluded (as DPDK delivers them).
#pragma once

#include "dataplane/dpdk.hpp"
#include "dataplane/time.hpp"

#include <cstddef>
#include <cstdint>
#include <span>

namespace rocefab {

struct packet_meta {
    sim_time arrival = 0; // when the last bit reaches the receiver (set by the link)
    std::uint16_t ingress_port = 0;
    std::uint8_t priority = 0; // switch priority, set by classification
    std::uint8_t traffic_class = 0;
    std::uint8_t buffer_pool = 0; // which pool of the switch buffer holds the frame (admission)
};

// Where packet_meta lives: in the mbuf's second cache line, DPDK's dynamic field area, which
// start_eal() reserves for it ("rocefab_packet_meta"), beside `next`, which every free reads. The
// pool's buffers have no private area, so a frame's data starts on a cache line: Ethernet to BTH
// (and an AETH) lie on one. A frame's life then touches three lines where it touched five.
inline constexpr std::size_t packet_meta_offset =
    (offsetof(rte_mbuf, dynfield1) + alignof(packet_meta) - 1) / alignof(packet_meta) * alignof(packet_meta);
static_assert(packet_meta_offset + sizeof(packet_meta) <= offsetof(rte_mbuf, dynfield1) + sizeof(rte_mbuf::dynfield1),
              "packet_meta no longer fits the mbuf's dynamic field area");

inline packet_meta& meta(rte_mbuf* m) { return *RTE_MBUF_DYNFIELD(m, packet_meta_offset, packet_meta*); }

// A RoCE frame whose ICRC is not written yet (nor, over IPv6, its UDP checksum, which covers the
// ICRC): what a ConnectX does in hardware as the frame leaves. The NICs of this fabric build each
// frame whole except those bytes and mark it so. The ICRC masks every field a switch may change
// (TTL, DSCP, ECN, IP checksum; the MACs and a VLAN tag lie outside it), so a marked frame's
// ICRC, computed at any point of its way, is the one its sender would have written. It is
// computed only where something can see it: a capture, the link that corrupts the frame (the
// receiver must then find the damage), anything that takes the frame out of this process. A
// receiving NIC does not verify a marked frame's ICRC, which nothing could have broken; it
// verifies every other frame's. Two CRC passes over every payload byte are saved (a quarter of
// the daemon's samples under ib_write_bw).
//
// The mark is a DPDK dynamic mbuf flag, so rte_pktmbuf_copy() (a link's duplicate) keeps it and
// rte_pktmbuf_alloc() clears it. 0 until start_eal() registered it: then nothing is deferred.
extern std::uint64_t icrc_deferred_flag;
inline bool icrc_deferred(const rte_mbuf* m) { return (m->ol_flags & icrc_deferred_flag) != 0; }
// Writes a marked frame's ICRC (and IPv6 UDP checksum) and clears the mark; nothing for others.
// Call before anything observes the bytes as they would be on a wire.
void seal_deferred_icrc(rte_mbuf* m);

inline std::span<std::uint8_t> frame_bytes(rte_mbuf* m) {
    return {rte_pktmbuf_mtod(m, std::uint8_t*), rte_pktmbuf_data_len(m)};
}

// Typed view of `sizeof(Header)` bytes at `offset`, or nullptr when the frame is too short.
// Every parser goes through this: a frame from the wire is never trusted to be long enough.
// A parser that reads several headers takes frame_bytes() once and passes the span.
template <typename Header> inline Header* header_at(std::span<std::uint8_t> bytes, std::size_t offset) {
    if (offset + sizeof(Header) > bytes.size()) return nullptr;
    return reinterpret_cast<Header*>(bytes.data() + offset);
}
template <typename Header> inline Header* header_at(rte_mbuf* m, std::size_t offset) {
    return header_at<Header>(frame_bytes(m), offset);
}

} // namespace rocefab
