// Stage 5, egress queue: per port, one FIFO per traffic class. The rings are allocated once,
// at construction; enqueue and dequeue only move indices. WRED/ECN marking will happen here
// on enqueue, against the depth these queues keep.
#pragma once

#include "dataplane/packet.hpp"
#include "switch_emu/switch_spec.hpp"

#include <cstdint>
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
        if (q.head == q.tail) _backlog[port] = static_cast<std::uint8_t>(_backlog[port] & ~(1u << tc));
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
        std::uint32_t head = 0; // next to dequeue; head and tail run freely and wrap
        std::uint32_t tail = 0; // next free slot
        std::uint64_t bytes = 0;
    };
    fifo& fifo_at(std::uint16_t port, std::uint8_t tc) { return _fifos[port * traffic_class_count + tc]; }
    const fifo& fifo_at(std::uint16_t port, std::uint8_t tc) const { return _fifos[port * traffic_class_count + tc]; }
    rte_mbuf*& slot(std::uint16_t port, std::uint8_t tc, std::uint32_t index) {
        return _slots[(std::size_t(port) * traffic_class_count + tc) * (_mask + 1) + (index & _mask)];
    }

    std::uint32_t _mask;
    std::vector<fifo> _fifos;
    std::vector<rte_mbuf*> _slots;
    std::vector<std::uint8_t> _backlog;
};

} // namespace rocefab::switch_emu
