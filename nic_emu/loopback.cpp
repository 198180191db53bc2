// NIC loopback: QPs of one NIC talking to each other. A ConnectX turns frames addressed to its
// own MAC around inside the adapter (its e-switch): they never reach the cable, yet they are
// counted as sent and received like any other, and a capture on the port shows them. rdma-core's
// tests, UCX and MPI put both ends of a connection on one device all the time.
//
// A frame goes round once: finish_frame() hands it here instead of to the link, and the next
// poll delivers it through receive(), as the wire would, so the engine that sent it is never
// re-entered from inside itself. The engines start a burst only while the ring has room for it
// and for an answer to everything already waiting (nic_node::loopback_has_room), so in practice
// nothing is ever dropped here; if it were, RC would retransmit and the counter would say why.

#include "nic_emu/nic_node.hpp"

namespace rocefab::nic {

void nic_node::loop_back(rte_mbuf* frame, sim_time now) {
    if (_loopback.held() == loopback_ring::slots) {
        ++_transport.counters.loopback_discards;
        rte_pktmbuf_free(frame);
        return;
    }
    ++_transport.counters.loopback_packets;
    if (_loopback_tap) {
        seal_deferred_icrc(frame);
        _loopback_tap->on_frame(now, frame_bytes(frame));
    }
    _loopback.frames[_loopback.tail++ & (loopback_ring::slots - 1)] = frame;
}

bool nic_node::deliver_looped_back(sim_time now) {
    // Only what is waiting now: the answers these frames produce wait for the next poll.
    const std::uint32_t end = _loopback.tail;
    if (_loopback.head == end) return false;
    while (_loopback.head != end) receive(0, _loopback.frames[_loopback.head++ & (loopback_ring::slots - 1)], now);
    return true;
}

} // namespace rocefab::nic
