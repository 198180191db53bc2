#include "switch_emu/egress_queue.hpp"

#include <algorithm>
#include <bit>

namespace rocefab::switch_emu {

egress_queues::egress_queues(std::uint16_t port_count, std::uint32_t frames_per_queue)
    : _mask(std::bit_ceil(std::max<std::uint32_t>(frames_per_queue, 1)) - 1), _ports(port_count),
      _fifos(std::size_t(port_count) * traffic_class_count),
      _slots(new rte_mbuf*[std::size_t(port_count) * traffic_class_count * (_mask + 1 + ring_padding)]),
      _backlog(port_count, 0) {}

egress_queues::~egress_queues() {
    for (std::uint16_t port = 0; port < _backlog.size(); ++port)
        for (std::uint8_t tc = 0; tc < traffic_class_count; ++tc)
            while (rte_mbuf* frame = dequeue(port, tc)) rte_pktmbuf_free(frame);
}

std::uint32_t egress_queues::depth_frames(std::uint16_t port, std::uint8_t tc) const {
    const fifo& q = fifo_at(port, tc);
    return q.tail - q.head;
}

} // namespace rocefab::switch_emu
