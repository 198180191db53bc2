// One direction of a cable, from (node A, port a) to (node B, port b): a rate, a propagation
// delay and an MTU. The sender's side serialises frames one after another; each frame gets
// the time its last bit reaches the receiver (packet_meta::arrival) and waits in a
// single-producer/single-consumer rte_ring until the receiving side's driver delivers it.
// Arrival times are monotonic per link (FIFO + serialisation), so a FIFO is all it takes.
#pragma once

#include "dataplane/dpdk.hpp"
#include "dataplane/packet.hpp"
#include "dataplane/time.hpp"

#include <atomic>
#include <cstdint>
#include <limits>
#include <span>
#include <string>

namespace rocefab {

using node_id = std::uint32_t;
using link_id = std::uint32_t;

struct link_model {
    std::uint64_t speed_bps;
    sim_time propagation_delay;
    std::uint32_t mtu; // IP MTU: frames longer than mtu + 18 (Ethernet + VLAN) are dropped
    // Frames on the wire or waiting for delivery; beyond it the link drops (drops_queue_full).
    // The receiving side may hold one more, the head it has peeked at.
    unsigned queue_frames = 4096;
};

// Bytes a frame occupies on the wire beyond what DPDK shows: FCS (4), preamble + SFD (8),
// inter-frame gap (12). Serialisation is charged on all of them.
inline constexpr std::uint32_t wire_overhead_bytes = 4 + 8 + 12;
// Ethernet header (14) + one VLAN tag (4) on top of the IP MTU.
inline constexpr std::uint32_t l2_header_allowance = 18;

struct link_endpoint {
    node_id node = 0;
    std::uint16_t port = 0;
};

// What a link counts; a snapshot, readable from any thread.
struct link_counters {
    std::uint64_t tx_frames = 0;
    std::uint64_t tx_bytes = 0; // frame bytes as DPDK counts them: FCS, preamble and IFG excluded
    std::uint64_t drops_link_down = 0;
    std::uint64_t drops_mtu = 0;
    std::uint64_t drops_queue_full = 0;
};

// Sees every frame a link puts on the wire (for pcap). Runs on the transmitting thread, before
// the frame can be delivered, so the bytes are stable; must not keep the span.
class frame_tap {
public:
    virtual ~frame_tap() = default;
    virtual void on_frame(sim_time departure, std::span<const std::uint8_t> frame) = 0;
};

class link {
public:
    // Control path: throws std::runtime_error when the ring cannot be created (EAL not
    // started, out of memory). `name` is for people ("h1:0->sw1:3").
    link(std::string name, link_endpoint from, link_endpoint to, const link_model& model);
    ~link();
    link(const link&) = delete;
    link& operator=(const link&) = delete;

    const std::string& name() const { return _name; }
    link_endpoint from() const { return _from; }
    link_endpoint to() const { return _to; }
    const link_model& model() const { return _model; }

    // --- sending side (the transmitting node's thread) ---

    // Takes ownership of `frame`: queues it for delivery, or frees it and counts why.
    // Returns whether the frame went on the wire.
    bool transmit(rte_mbuf* frame, sim_time now);
    // When the last frame handed over finishes serialising; <= now when the line is idle.
    sim_time busy_until() const { return _busy_until; }

    // Fault injection and administrative state: a down link drops what is transmitted;
    // frames already on the wire still arrive.
    void set_up(bool up) { _up.store(up, std::memory_order_relaxed); }
    bool is_up() const { return _up.load(std::memory_order_relaxed); }

    // nullptr removes the tap. Set it from the data plane thread (through its mailbox).
    void set_tap(frame_tap* tap) { _tap = tap; }

    link_counters counters() const;

    // --- receiving side (the delivering driver's thread) ---

    // The oldest frame whose arrival <= now, still owned by the link; nullptr when none.
    rte_mbuf* peek_ready(sim_time now);
    // Removes and returns the frame peek_ready() returned; the caller owns it.
    rte_mbuf* pop();
    // Arrival time of the oldest frame on the wire; `never` when the link is empty.
    // Not const: it may pull the head frame out of the ring.
    sim_time next_arrival();
    // Frames on the wire or waiting for delivery.
    unsigned in_flight() const;

    // Hands every frame whose arrival <= now, in FIFO order, to `deliver(rte_mbuf*)`, which
    // owns it from there; stops after `max_frames`. Returns how many were delivered.
    template <typename Deliver>
    unsigned deliver_ready(sim_time now, Deliver&& deliver,
                           unsigned max_frames = std::numeric_limits<unsigned>::max()) {
        unsigned delivered = 0;
        while (delivered < max_frames && peek_ready(now)) {
            deliver(pop());
            ++delivered;
        }
        return delivered;
    }

private:
    static void bump(std::atomic<std::uint64_t>& counter, std::uint64_t by = 1) {
        // One writer (the sending thread): a relaxed load + store is a plain add, and readers
        // on other threads never see a torn value.
        counter.store(counter.load(std::memory_order_relaxed) + by, std::memory_order_relaxed);
    }
    bool fill_head();

    std::string _name;
    link_endpoint _from;
    link_endpoint _to;
    link_model _model;
    std::uint32_t _max_frame_bytes;
    rte_ring* _ring = nullptr;

    // Sending side.
    alignas(64) sim_time _busy_until = 0;
    frame_tap* _tap = nullptr;
    std::atomic<bool> _up{true};
    std::atomic<std::uint64_t> _tx_frames{0};
    std::atomic<std::uint64_t> _tx_bytes{0};
    std::atomic<std::uint64_t> _drops_link_down{0};
    std::atomic<std::uint64_t> _drops_mtu{0};
    std::atomic<std::uint64_t> _drops_queue_full{0};

    // Receiving side: the ring's head, taken out so it can be peeked without DPDK's
    // experimental peek API.
    alignas(64) rte_mbuf* _head = nullptr;
};

} // namespace rocefab
