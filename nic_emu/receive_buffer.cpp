// A slow receiver's receive buffer: frames from the wire wait here until the host takes them at
// nic_spec::host_rx_bps, and the NIC sends PFC for its lossless priorities as the buffer fills,
// as a ConnectX does when its host cannot keep up. A NIC whose host keeps up (host_rx_bps 0)
// has no buffer and never pauses anyone.

#include "nic_emu/nic_node.hpp"

#include "dataplane/wire/ip.hpp"
#include "dataplane/wire/pfc.hpp"

#include <algorithm>

namespace rocefab::nic {

std::uint8_t nic_node::priority_of_frame(rte_mbuf* frame) const {
    // As priority_of(packet) classifies it: trusting PCP, a tagged frame travels in its PCP;
    // otherwise by the DSCP behind the tag, if any; anything that is not IP in priority 0.
    const auto bytes = frame_bytes(frame);
    std::size_t l3 = sizeof(wire::ethernet_header);
    if (bytes.size() < l3) return 0;
    std::uint16_t ether_type = reinterpret_cast<const wire::ethernet_header*>(bytes.data())->ether_type.load();
    if (ether_type == wire::ethertype::vlan) {
        if (bytes.size() < l3 + sizeof(wire::vlan_header)) return 0;
        const auto* tag = reinterpret_cast<const wire::vlan_header*>(bytes.data() + l3);
        if (_spec.trust_pcp) return tag->pcp();
        ether_type = tag->ether_type.load();
        l3 += sizeof(wire::vlan_header);
    }
    if (bytes.size() < l3 + 2) return 0;
    const std::uint8_t* ip = bytes.data() + l3;
    std::uint8_t traffic_class;
    if (ether_type == wire::ethertype::ipv4)
        traffic_class = ip[1];
    else if (ether_type == wire::ethertype::ipv6)
        traffic_class = static_cast<std::uint8_t>((ip[0] & 0x0f) << 4 | ip[1] >> 4);
    else
        return 0;
    return _spec.dscp_to_priority[traffic_class >> 2];
}

void nic_node::send_pfc(std::uint8_t priority, std::uint16_t quanta, sim_time now) {
    rte_mbuf* m = allocate_frame();
    if (!m) {
        ++_counters.tx_no_buffer; // the next refresh or XON tries again
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
        ++_counters.rx_prio_buf_discard[priority];
        rte_pktmbuf_free(frame);
        return true;
    }
    if (_rx.head == _rx.tail) _rx.next_delivery = std::max(_rx.next_delivery, now);
    meta(frame).priority = priority; // for its delivery, without parsing it again
    _rx.ring[_rx.tail++ & (_rx.ring.size() - 1)] = frame;
    _rx.bytes += length;
    _rx.bytes_by_priority[priority] += length;
    if ((_spec.pfc_priorities & (1u << priority)) && _rx.bytes_by_priority[priority] > _spec.rx_xoff_bytes &&
        _rx_pauses.start(priority, now, _counters.tx_prio_pause))
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
            _rx_pauses.stop(p, now, _counters.tx_prio_pause, _counters.tx_prio_pause_duration_us)) {
            send_pfc(p, 0, now);
            did_work = true;
        }
    }
    for (std::uint8_t due = _rx_pauses.refresh_due(now, _counters.tx_prio_pause), p = 0; due; due >>= 1, ++p) {
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
