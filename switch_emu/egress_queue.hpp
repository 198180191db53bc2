// Stage 5, egress queue: per port, one FIFO per traffic class. The rings are allocated once,
// at construction; enqueue and dequeue only move indices. WRED/ECN marking will happen here
// on enqueue, against the depth these queues keep.
//
// Where the slots lie is chosen for the cache, since every queued frame writes one and reads
// it back. A FIFO that empties starts again at its first slot, so a queue that seldom holds
// more than a few frames keeps to one line rather than sweeping its whole ring (32 KiB a
// queue by default) through the cache. The rings of one class lie side by side, port after
// port, each one line longer than its slots: the first slots of the ports a class uses then
// fall on different cache sets instead of all on one, as rings a power of two apart would.
#pragma once

#include "dataplane/packet.hpp"
#include "switch_emu/switch_spec.hpp"

#include <cstdint>
#include <memory>
#include <vector>

namespace rocefab::switch_emu {

class egress_queues {
public:
    // `frames_per_queue` is rounded up to a power of two (at least 1).
    egress_queues(std::uint16_t port_count, std::uint32_t frames_per_queue);
    ~egress_queues(); // frees every frame still queued: the switch owns them
    egress_queues(const egress_queues&) = delete;
    egress_queues& operator=(const egress_queues&) = delete;

    // False when that FIFO is full; the caller still owns `frame`. Inline, as dequeue(): a
    // frame takes both on its way through the switch.
    bool enqueue(std::uint16_t port, std::uint8_t tc, rte_mbuf* frame) {
        fifo& q = fifo_at(port, tc);
        if (q.tail - q.head > _mask) return false;
        slot(port, tc, q.tail++) = frame;
        q.bytes += rte_pktmbuf_pkt_len(frame);
        _backlog[port] = static_cast<std::uint8_t>(_backlog[port] | 1u << tc);
        return true;
    }
    // nullptr when empty.
    rte_mbuf* dequeue(std::uint16_t port, std::uint8_t tc) {
        fifo& q = fifo_at(port, tc);
        if (q.head == q.tail) return nullptr;
        rte_mbuf* frame = slot(port, tc, q.head++);
        q.bytes -= rte_pktmbuf_pkt_len(frame);
        if (q.head == q.tail) {
            q.head = q.tail = 0; // the next frame takes the first slot again (above)
            _backlog[port] = static_cast<std::uint8_t>(_backlog[port] & ~(1u << tc));
        }
        return frame;
    }

    // Bit t set when TC t of `port` holds a frame: what a scheduler chooses from.
    std::uint8_t backlog(std::uint16_t port) const { return _backlog[port]; }
    std::uint32_t depth_frames(std::uint16_t port, std::uint8_t tc) const;
    std::uint64_t depth_bytes(std::uint16_t port, std::uint8_t tc) const { return fifo_at(port, tc).bytes; }
    std::uint64_t port_bytes(std::uint16_t port) const {
        std::uint64_t bytes = 0;
        for (std::uint8_t tc = 0; tc < traffic_class_count; ++tc) bytes += depth_bytes(port, tc);
        return bytes;
    }
    std::uint32_t capacity() const { return _mask + 1; }

private:
    struct fifo {
        // Head and tail run freely and wrap; both go back to 0 when they meet (above).
        std::uint32_t head = 0; // next to dequeue
        std::uint32_t tail = 0; // next free slot
        std::uint64_t bytes = 0;
    };
    // The cache line of unused slots after each ring (above).
    static constexpr std::size_t ring_padding = RTE_CACHE_LINE_SIZE / sizeof(void*);
    fifo& fifo_at(std::uint16_t port, std::uint8_t tc) { return _fifos[port * traffic_class_count + tc]; }
    const fifo& fifo_at(std::uint16_t port, std::uint8_t tc) const { return _fifos[port * traffic_class_count + tc]; }
    rte_mbuf*& slot(std::uint16_t port, std::uint8_t tc, std::uint32_t index) {
        return _slots[(std::size_t(tc) * _ports + port) * (_mask + 1 + ring_padding) + (index & _mask)];
    }

    std::uint32_t _mask;
    std::uint16_t _ports;
    std::vector<fifo> _fifos;
    // Left uninitialised: only slots between a FIFO's head and tail are read, each written
    // first. Zeroing them would fault in every page of the rings (67 MB for 256 ports) for
    // queues that never use more than their first lines.
    std::unique_ptr<rte_mbuf*[]> _slots;
    std::vector<std::uint8_t> _backlog;
};

} // namespace rocefab::switch_emu
