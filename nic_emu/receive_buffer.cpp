// A slow receiver's receive buffer: frames from the wire wait here until the host takes them at
// nic_spec::host_rx_bps, and the NIC sends PFC for its lossless priorities as the buffer fills,
// as a ConnectX does when its host cannot keep up. A NIC whose host keeps up (host_rx_bps 0)
// has no buffer and never pauses anyone.

#include "nic_emu/nic_node.hpp"

#include "dataplane/wire/frame_info.hpp"
#include "dataplane/wire/pfc.hpp"

#include <algorithm>

namespace rocefab::nic {

std::uint8_t nic_node::priority_of_frame(rte_mbuf* frame) const {
    // As priority_of(packet) classifies it: trusting PCP, a tagged frame travels in its PCP;
    // otherwise by the DSCP behind the tag, if any, valid IP header or not (the buffer takes a
    // frame before its headers are checked); anything that is not IP in priority 0.
    const auto bytes = frame_bytes(frame);
    wire::frame_info headers;
    const wire::frame_status status = wire::parse_headers(bytes, headers);
    if (_spec.trust_pcp && headers.vlan_tagged) return headers.pcp;
    // The DSCP is read once the frame holds the IP header's first two bytes.
    if (status == wire::frame_status::not_ip || status == wire::frame_status::truncated_l2 ||
        bytes.size() < headers.l3_offset + 2u)
        return 0;
    return _spec.dscp_to_priority[headers.dscp()];
}

void nic_node::send_pfc(std::uint8_t priority, std::uint16_t quanta, sim_time now) {
    rte_mbuf* m = allocate_frame();
    if (!m) {
        ++_transport.counters.tx_no_buffer; // the next refresh or XON tries again
        return;
    }
    auto* data = reinterpret_cast<std::uint8_t*>(rte_pktmbuf_append(m, wire::pfc_frame_length));
    std::array<std::uint16_t, 8> quanta_of{};
    quanta_of[priority] = quanta;
    wire::write_pfc_frame(data, _spec.mac, static_cast<std::uint8_t>(1u << priority), quanta_of);
    // MAC control frames go out at once: no priority's pause holds them.
    transmit(0, m, now);
}

bool nic_node::buffer_received(rte_mbuf* frame, sim_time now) {
    if (!_spec.host_rx_bps || _rx.delivering) return false;
    const std::uint8_t priority = priority_of_frame(frame);
    const std::uint32_t length = rte_pktmbuf_pkt_len(frame);
    if (_rx.bytes + length > _spec.rx_buffer_bytes || _rx.tail - _rx.head == _rx.ring.size()) {
        ++_transport.counters.rx_prio_buf_discard[priority];
        rte_pktmbuf_free(frame);
        return true;
    }
    if (_rx.head == _rx.tail) _rx.next_delivery = std::max(_rx.next_delivery, now);
    meta(frame).priority = priority; // for its delivery, without parsing it again
    _rx.ring[_rx.tail++ & (_rx.ring.size() - 1)] = frame;
    _rx.bytes += length;
    _rx.bytes_by_priority[priority] += length;
    if ((_spec.pfc_priorities & (1u << priority)) && _rx.bytes_by_priority[priority] > _spec.rx_xoff_bytes &&
        _rx_pauses.start(priority, now, _transport.counters.tx_prio_pause))
        send_pfc(priority, pause_sender::xoff_quanta, now);
    return true;
}

bool nic_node::run_receive_buffer(sim_time now) {
    if (!_spec.host_rx_bps) return false;
    bool did_work = false;
    while (_rx.head != _rx.tail && _rx.next_delivery <= now) {
        rte_mbuf* frame = _rx.ring[_rx.head++ & (_rx.ring.size() - 1)];
        const std::uint8_t priority = meta(frame).priority;
        const std::uint32_t length = rte_pktmbuf_pkt_len(frame);
        _rx.bytes -= length;
        _rx.bytes_by_priority[priority] -= length;
        _rx.next_delivery += serialization_time(length, _spec.host_rx_bps);
        _rx.delivering = true;
        receive(0, frame, now);
        _rx.delivering = false;
        did_work = true;
    }
    for (std::uint8_t p = 0; p < 8; ++p) {
        if (_rx.bytes_by_priority[p] < _spec.rx_xon_bytes &&
            _rx_pauses.stop(p, now, _transport.counters.tx_prio_pause, _transport.counters.tx_prio_pause_duration_us)) {
            send_pfc(p, 0, now);
            did_work = true;
        }
    }
    for (std::uint8_t due = _rx_pauses.refresh_due(now, _transport.counters.tx_prio_pause), p = 0; due;
         due >>= 1, ++p) {
        if (due & 1) send_pfc(p, pause_sender::xoff_quanta, now);
        did_work = true;
    }
    return did_work;
}

sim_time nic_node::receive_buffer_deadline() const {
    if (!_spec.host_rx_bps) return never;
    return std::min(_rx.head != _rx.tail ? _rx.next_delivery : never, _rx_pauses.next_refresh());
}

} // namespace rocefab::nic
