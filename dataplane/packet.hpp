// A packet is an rte_mbuf from the fabric's mempool, with a small metadata block in the
// mbuf's private area. Frames are whole Ethernet frames, FCS excluded (as DPDK delivers them).
#pragma once

#include "dataplane/dpdk.hpp"
#include "dataplane/time.hpp"

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

inline packet_meta& meta(rte_mbuf* m) { return *static_cast<packet_meta*>(rte_mbuf_to_priv(m)); }

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
