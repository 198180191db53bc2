// The NIC's port: frames in, frames out, the poll loop and completion delivery.

#include "nic_emu/nic_node.hpp"

#include "dataplane/wire/cnp.hpp"
#include "dataplane/wire/ethernet.hpp"
#include "dataplane/wire/pfc.hpp"
#include "dataplane/log.hpp"
#include "nic_emu/attach_protocol.hpp"

#include <algorithm>
#include <cstring>
#include <unistd.h>

namespace rocefab::nic {

// ---- frames ------------------------------------------------------------------------------------

rte_mbuf* nic_node::start_frame(const wire::roce_headers_spec& spec, std::size_t payload_length,
                                std::uint8_t*& payload) {
    const std::size_t length = wire::roce_frame_length(spec, payload_length);
    rte_mbuf* m = allocate_frame();
    if (!m) {
        ++_transport.counters.tx_no_buffer;
        return nullptr;
    }
    const std::size_t on_wire = std::max(length, wire::ethernet_min_frame_length);
    auto* data = reinterpret_cast<std::uint8_t*>(rte_pktmbuf_append(m, static_cast<std::uint16_t>(on_wire)));
    if (!data || length == 0) {
        rte_pktmbuf_free(m);
        ++_transport.counters.tx_no_buffer;
        return nullptr;
    }
    const std::size_t header = wire::write_roce_headers(data, spec, payload_length);
    payload = data + header;
    // Where the headers lie, for finish_frame(), in the fields DPDK's transmit offloads read
    // them from; rte_pktmbuf_reset() clears them when the mbuf is next allocated.
    const wire::roce_layout layout = wire::roce_layout_of(spec, payload_length);
    m->l2_len = static_cast<std::uint8_t>(layout.l3_offset);
    m->l3_len = static_cast<std::uint16_t>(layout.l4_offset - layout.l3_offset);
    m->l4_len = sizeof(wire::udp_header);
    return m;
}

void nic_node::finish_frame(rte_mbuf* frame, sim_time now) {
    auto* data = rte_pktmbuf_mtod(frame, std::uint8_t*);
    const std::size_t on_wire = rte_pktmbuf_data_len(frame);
    // start_frame() recorded where the headers lie; the RoCE length is what the UDP header says,
    // as a checksum offload reads it, and Ethernet padding follows the ICRC. The IPv4 header
    // write_roce_headers() writes has no options, so only IPv6's is 40 bytes long.
    wire::roce_layout layout;
    layout.l3_offset = frame->l2_len;
    layout.l4_offset = layout.l3_offset + frame->l3_len;
    const auto* udp = reinterpret_cast<const wire::udp_header*>(data + layout.l4_offset);
    layout.length = layout.l4_offset + udp->length.load();
    layout.ipv6 = frame->l3_len == sizeof(wire::ipv6_header);
    if (layout.length < on_wire) std::memset(data + layout.length, 0, on_wire - layout.length);
    if (icrc_deferred_flag)
        frame->ol_flags |= icrc_deferred_flag; // written where something can see it (packet.hpp)
    else
        wire::seal_roce_frame(data, layout);
    ++_transport.counters.port_xmit_packets;
    _transport.counters.port_xmit_data += on_wire;
    if (reinterpret_cast<const wire::ethernet_header*>(data)->destination == _spec.mac) {
        loop_back(frame, now);
        return;
    }
    transmit(0, frame, now);
}

// ---- GSI (QP1) ------------------------------------------------------------------------------------

// IBA 13.5.2: QP1 takes UD SENDs of one MAD with the GSI Q_Key; anything else is dropped. The
// CM (on the control plane) reads what is kept; a full queue drops, counted, as a GSI with no
// receive WQE posted would.
void nic_node::receive_gsi(const wire::parsed_roce& packet) {
    if (packet.info->transport != wire::ib_transport::ud || !packet.deth_header || packet.payload_length != mad_size ||
        packet.deth_header->qkey.load() != gsi_qkey) {
        ++_transport.counters.gsi_rx_dropped;
        return;
    }
    gsi_datagram d;
    d.source_gid = packet.source_gid;
    d.destination_gid = packet.destination_gid;
    d.source_qpn = packet.deth_header->source_qpn();
    d.qkey = packet.deth_header->qkey.load();
    d.pkey = packet.bth_header->pkey();
    std::memcpy(d.mad.data(), packet.payload, mad_size);
    if (!_gsi->push(d)) {
        ++_transport.counters.gsi_rx_dropped;
        return;
    }
    ++_transport.counters.gsi_rx_mads;
}

int nic_node::send_mad(const wire::ipv6_address& destination, std::uint32_t dest_qpn, std::uint32_t qkey,
                       const std::array<std::uint8_t, mad_size>& mad, sim_time now) {
    wire::mac_address next_hop;
    if (!_resolve || !_resolve(destination, next_hop)) return EHOSTUNREACH;
    wire::roce_headers_spec h;
    h.source_mac = _spec.mac;
    h.destination_mac = next_hop;
    h.source_gid = destination.is_v4_mapped() ? _gids[1] : _gids[0];
    h.destination_gid = destination;
    // The kernel sends MADs with the GID's default traffic class; the NIC's RoCE DSCP keeps
    // them in the lossless class as its other RoCE traffic.
    h.dscp = _spec.dscp;
    h.ecn = _spec.ecn;
    h.hop_limit = 64;
    h.opcode = static_cast<std::uint8_t>(wire::ib_opcode::ud_send_only);
    h.pkey = 0xffff;
    h.dest_qpn = dest_qpn & wire::mask24;
    h.psn = _gsi_psn = (_gsi_psn + 1) & wire::psn_mask;
    h.deth_qkey = qkey;
    h.deth_source_qpn = gsi_qpn;
    h.udp_source_port = 0xc000;
    set_priority_tag(h, 0);
    std::uint8_t* payload = nullptr;
    rte_mbuf* frame = start_frame(h, mad_size, payload);
    if (!frame) return ENOBUFS;
    std::memcpy(payload, mad.data(), mad_size);
    finish_frame(frame, now);
    ++_transport.counters.gsi_tx_mads;
    return 0;
}

// ---- receive -------------------------------------------------------------------------------------

void nic_node::receive(std::uint16_t, rte_mbuf* frame, sim_time now) {
    _transport.latest = std::max(_transport.latest, now);
    const auto bytes = frame_bytes(frame);
    if (bytes.size() >= sizeof(wire::ethernet_header)) {
        const auto* eth = reinterpret_cast<const wire::ethernet_header*>(bytes.data());
        if (eth->ether_type.load() == wire::ethertype::mac_control) {
            on_pfc(bytes, now);
            rte_pktmbuf_free(frame);
            return;
        }
        if (buffer_received(frame, now)) return; // a slow receiver: the host takes it later
        if (!(eth->destination == _spec.mac)) {
            ++_transport.counters.rx_dropped_not_for_us;
            rte_pktmbuf_free(frame);
            return;
        }
    }
    wire::parsed_roce packet;
    const wire::parse_error error =
        wire::parse_roce_frame(bytes, packet, icrc_deferred(frame) ? wire::icrc_check::skip : wire::icrc_check::verify);
    if (error != wire::parse_error::none) {
        if (error == wire::parse_error::bad_icrc)
            ++_transport.counters.rx_icrc_encapsulated;
        else
            ++_transport.counters.port_rcv_errors;
        rte_pktmbuf_free(frame);
        return;
    }
    ++_transport.counters.port_rcv_packets;
    _transport.counters.port_rcv_data += bytes.size();
    if (!(packet.destination_gid == _gids[0]) && !(packet.destination_gid == _gids[1])) {
        ++_transport.counters.rx_dropped_not_for_us;
        rte_pktmbuf_free(frame);
        return;
    }
    if (packet.bth_header->dest_qpn() == gsi_qpn) {
        receive_gsi(packet);
        rte_pktmbuf_free(frame);
        return;
    }
    queue_pair* const* found = _qps_by_number.find(packet.bth_header->dest_qpn());
    if (!found) {
        ++_transport.counters.rx_unknown_qp;
        rte_pktmbuf_free(frame);
        return;
    }
    queue_pair& qp = **found;
    activate(qp);
    const wire::ib_transport transport = packet.info->transport;
    if (transport == wire::ib_transport::cnp) {
        on_cnp(qp, now);
        rte_pktmbuf_free(frame);
        return;
    }
    const bool transport_matches = (transport == wire::ib_transport::rc && qp.type == IBV_QPT_RC) ||
                                   (transport == wire::ib_transport::uc && qp.type == IBV_QPT_UC) ||
                                   (transport == wire::ib_transport::ud && qp.type == IBV_QPT_UD);
    if (!transport_matches) {
        ++_transport.counters.rx_transport_mismatch;
        rte_pktmbuf_free(frame);
        return;
    }
    // IBA 9.6.1.5: a connected QP's packet must come from its peer; UD takes any source.
    if (qp.state == IBV_QPS_RESET || qp.state == IBV_QPS_INIT ||
        (qp.type != IBV_QPT_UD && !(packet.source_gid == qp.headers.destination_gid))) {
        ++_transport.counters.rx_qp_state_drops;
        rte_pktmbuf_free(frame);
        return;
    }
    if (packet.ecn == wire::ecn::ce) on_congestion_experienced(qp, packet, now);
    // By opcode (IBA 9.2.1): RC responses go to the completer, everything else is a request.
    const bool kept = _transport.handle_frame(frame, [&] {
        if (qp.type == IBV_QPT_RC && packet.info->has(wire::opcode_mask::response))
            _completer.handle(qp, packet, now);
        else
            _responder.handle(qp, packet, now);
    });
    if (kept) return; // held ahead of a gap (reorder_buffer.hpp): nothing follows it yet
    // Packets held ahead of a gap the frame may have filled (reorder_buffer.hpp).
    if (qp.responder.early.held()) _responder.resume(qp, now);
    if (qp.completer.early_responses.held() || qp.completer.waiting_ack_psn) _completer.resume(qp, now);
}

void nic_node::on_pfc(std::span<const std::uint8_t> frame, sim_time now) {
    ++_transport.counters.rx_pfc_frames;
    std::uint8_t enable = 0;
    std::array<std::uint16_t, 8> quanta{};
    if (!wire::parse_pfc_frame(frame, enable, quanta)) return; // an 802.3x PAUSE or malformed
    _pauses.on_frame(enable, quanta, _spec.speed_bps, now, _transport.counters.rx_prio_pause,
                     _transport.counters.rx_prio_pause_duration_us);
}

// ---- DCQCN (dcqcn.hpp) ---------------------------------------------------------------------------

void nic_node::on_congestion_experienced(queue_pair& qp, const wire::parsed_roce& packet, sim_time now) {
    ++_transport.counters.np_ecn_marked_roce_packets;
    if (!(_spec.dcqcn_np_priorities & (1u << priority_of(packet)))) return;
    // A UD datagram's sender is named per packet (DETH), not by the QP: no CNP for it here.
    if (qp.type == IBV_QPT_UD || !qp.notifier->should_notify(now)) return;
    wire::roce_headers_spec spec = qp.headers;
    wire::make_cnp_spec(spec, qp.attr.dest_qp_num);
    spec.dscp = _spec.dcqcn.cnp_dscp;
    spec.ecn = wire::ecn::not_ect;
    if (spec.vlan) spec.pcp = _spec.dcqcn.cnp_802p_prio;
    std::uint8_t* payload;
    rte_mbuf* frame = start_frame(spec, wire::cnp_payload_length, payload);
    if (!frame) return;
    std::memset(payload, 0, wire::cnp_payload_length);
    ++_transport.counters.np_cnp_sent;
    finish_frame(frame, now);
}

void nic_node::on_cnp(queue_pair& qp, sim_time now) {
    if (qp.type == IBV_QPT_UD || !(_spec.dcqcn_rp_priorities & (1u << qp.priority))) {
        ++_transport.counters.rp_cnp_ignored;
        return;
    }
    ++_transport.counters.rp_cnp_handled;
    qp.rate->on_cnp(now);
}

// ---- poll ----------------------------------------------------------------------------------------

bool nic_node::take_doorbells() {
    bool did_work = false;
    for (auto& [id, c] : _contexts) {
        hw::doorbell_queue* q = c.doorbells;
        if (!q) continue;
        const std::uint32_t producer = q->ring.producer.load(std::memory_order_acquire);
        // The program may have written anything here: indices that run past the queue mean
        // it is corrupt, and the NIC looks at every QP of the context instead.
        bool look_at_all = q->overflowed.load(std::memory_order_relaxed) != 0 ||
                           producer - c.doorbells_taken > hw::doorbell_queue_slots;
        if (!look_at_all) {
            for (std::uint32_t i = c.doorbells_taken; i != producer; ++i) {
                const auto found = _qps.find(q->handles[i % hw::doorbell_queue_slots].load(std::memory_order_relaxed));
                if (found != _qps.end() && found->second->context == id) take_doorbell(*found->second);
            }
        }
        if (producer != c.doorbells_taken) {
            c.doorbells_taken = producer;
            q->ring.consumer.store(producer, std::memory_order_release);
            did_work = true;
        }
        if (look_at_all) {
            q->overflowed.store(0, std::memory_order_relaxed);
            for (auto& [handle, qp] : _qps)
                if (qp->context == id) take_doorbell(*qp);
            did_work = true;
        }
    }
    return did_work;
}

void nic_node::take_doorbell(queue_pair& qp) {
    // Cleared before the rings are looked at (hw_abi.hpp's doorbell handshake): work published
    // after this either is seen by the look, or queues the QP again.
    qp.control->queued.store(0, std::memory_order_seq_cst);
    std::atomic_thread_fence(std::memory_order_seq_cst);
    requester::read_posted(qp);
    activate(qp);
}

void nic_node::retire_idle_qps() {
    for (std::size_t i = 0; i < _active_qps.size();) {
        queue_pair& qp = *_active_qps[i];
        if (qp.listing == poll_listing::always || qp_deadline(qp) != never) {
            ++i;
            continue;
        }
        qp.listing = poll_listing::idle;
        _active_qps[i] = _active_qps.back();
        _active_qps.pop_back();
    }
    if (_round_robin >= _active_qps.size()) _round_robin = 0;
}

bool nic_node::poll(sim_time now) {
    _transport.latest = std::max(_transport.latest, now);
    bool did_work = run_receive_buffer(now);
    did_work |= deliver_looped_back(now);
    did_work |= _responder.flush_dma();
    did_work |= take_doorbells();
    const std::size_t n = _active_qps.size();
    for (std::size_t i = 0; i < n; ++i) {
        queue_pair& qp = *_active_qps[(_round_robin + i) % n];
        did_work |= _completer.run_timers(qp, now);
        did_work |= _responder.run_timers(qp, now);
        if (qp.state == IBV_QPS_ERR)
            did_work |= flush(qp);
        else if (qp.state == IBV_QPS_SQE)
            did_work |= flush_send_queue(qp);
        else if (requester::drain_complete(qp)) {
            _requester.set_state(qp, requester_state::drained); // nothing started is outstanding
            raise_async_event(qp.context, IBV_EVENT_SQ_DRAINED, qp.handle);
            did_work = true;
        } else if (busy_until(0) <= now + transmit_fifo_time && _pauses.until(qp.priority) <= now &&
                   loopback_has_room()) {
            did_work |= _responder.run(qp, now);
            did_work |= _requester.run(qp, now);
        }
    }
    if (n) _round_robin = (_round_robin + 1) % n;
    retire_idle_qps();
    return did_work;
}

sim_time nic_node::next_deadline() const {
    if (_loopback.held()) return 0;
    sim_time earliest = receive_buffer_deadline();
    for (const auto& [id, c] : _contexts)
        if (c.doorbells && (c.doorbells->ring.producer.load(std::memory_order_acquire) != c.doorbells_taken ||
                            c.doorbells->overflowed.load(std::memory_order_relaxed)))
            return 0;
    for (const queue_pair* qp : _active_qps) earliest = std::min(earliest, qp_deadline(*qp));
    return earliest;
}

sim_time nic_node::qp_deadline(const queue_pair& qp) const {
    return std::min({_requester.deadline(qp), _completer.deadline(qp), _responder.deadline(qp)});
}

// ---- completions and events ------------------------------------------------------------------------

bool nic_node::post_completion(completion_queue& cq, const hw::cqe& entry, bool solicited) {
    if (cq.in_error) {
        ++_transport.counters.cq_overflow;
        return false;
    }
    const std::uint32_t consumer = cq.control->ring.consumer.load(std::memory_order_acquire);
    if (cq.produced - consumer >= cq.size) {
        // IBA 11.4.2.1: a CQ overrun is an error of the CQ, reported asynchronously, and, as on a
        // ConnectX, every QP completing into it goes to the error state with its own event:
        // what they would complete next has nowhere to go.
        cq.in_error = true;
        cq.control->overflowed.store(1, std::memory_order_relaxed);
        ++_transport.counters.cq_overflow;
        std::uint64_t held_back = 0;
        if (log::nic().should_log(spdlog::level::warn) && _error_log.admit(_transport.latest, held_back))
            log::nic().warn("{}: CQ {} overflowed ({} entries); it and its QPs are in error{}", name(), cq.handle,
                            cq.size,
                            held_back ? fmt::format(" ({} more QPs or CQs failed in the last second)", held_back) : "");
        raise_async_event(cq.context, IBV_EVENT_CQ_ERR, cq.handle);
        for (auto& [handle, qp] : _qps)
            if (qp->send_cq == &cq || qp->recv_cq == &cq) enter_error(*qp, "its completion queue overflowed");
        return false;
    }
    cq.slots[cq.produced & (cq.size - 1)] = entry;
    ++cq.produced;
    cq.control->ring.producer.store(cq.produced, std::memory_order_release);
    // Pairs with req_notify_cq's store: see hw_abi.hpp.
    std::atomic_thread_fence(std::memory_order_seq_cst);
    const std::uint32_t armed = cq.control->armed.load(std::memory_order_seq_cst);
    const bool fire =
        armed == hw::cq_arm::next || (armed == hw::cq_arm::solicited && (solicited || entry.status != IBV_WC_SUCCESS));
    if (fire && cq.channel_fd >= 0) {
        std::uint32_t expected = armed;
        if (cq.control->armed.compare_exchange_strong(expected, hw::cq_arm::none)) {
            const attach::cq_event_record record{cq.handle};
            // A pipe write of a few bytes is atomic; the descriptor is non-blocking, and a full
            // pipe means the application has not read thousands of events: nothing is lost that
            // its next read would not also report.
            if (::write(cq.channel_fd, &record, sizeof record) == sizeof record) ++_transport.counters.comp_events;
        }
    }
    return true;
}

void nic_node::raise_async_event(std::uint32_t context, ibv_event_type type, std::uint32_t handle) {
    auto it = _contexts.find(context);
    if (it == _contexts.end() || it->second.async_fd < 0) return;
    const attach::async_event_record record{static_cast<std::uint32_t>(type), handle};
    [[maybe_unused]] auto written = ::write(it->second.async_fd, &record, sizeof record);
}

void nic_node::enter_error(queue_pair& qp, const char* why) {
    _responder.release_early(qp); // requests are no longer taken
    if (qp.state != IBV_QPS_ERR) {
        std::uint64_t held_back = 0;
        if (log::nic().should_log(spdlog::level::warn) && _error_log.admit(_transport.latest, held_back))
            log::nic().warn("{}: QP {:#x} ({}, to QP {:#x}) went to the error state: {}{}", name(), qp.qpn,
                            qp_type_name(qp.type), qp.attr.dest_qp_num, why,
                            held_back ? fmt::format(" ({} more QPs or CQs failed in the last second)", held_back) : "");
        set_qp_state(qp, IBV_QPS_ERR);
        // IBA 11.6.2: a QP that enters the error state on its own reports a fatal event.
        raise_async_event(qp.context, IBV_EVENT_QP_FATAL, qp.handle);
    } else {
        log::nic().debug("{}: QP {:#x} moved to ERR: {}", name(), qp.qpn, why);
    }
    qp.completer.retransmit_deadline = never;
    activate(qp); // what it holds is flushed
}

void nic_node::set_qp_state(queue_pair& qp, ibv_qp_state next) {
    if (next != qp.state && log::nic().should_log(spdlog::level::debug))
        log::nic().debug("{}: QP {:#x} ({}) {} -> {}", name(), qp.qpn, qp_type_name(qp.type), qp_state_name(qp.state),
                         qp_state_name(next));
    qp.state = next;
    qp.attr.qp_state = next;
}

void nic_node::fail_send_queue(queue_pair& qp) {
    if (qp.type == IBV_QPT_RC) {
        enter_error(qp, "a send work request failed");
        return;
    }
    // IBA 10.3.1 (Send Queue Error): on UC and UD a send WQE that fails stops only the send
    // queue. Its error completion is the report (no async event); the WQEs after it are flushed,
    // receives go on, and ibv_modify_qp(SQE -> RTS) restarts sending.
    set_qp_state(qp, IBV_QPS_SQE);
}

bool nic_node::flush_send_queue(queue_pair& qp) {
    // A WQE that failed reports its own status; the others complete with a flush error,
    // signalled or not.
    bool did_work = false;
    const std::uint32_t send_mask = qp.send_size - 1;
    while (qp.requester.sq_retired != qp.requester.sq_started) {
        const send_work& work = qp.requester.started_work[qp.requester.sq_retired & send_mask];
        ++qp.requester.sq_retired;
        qp.control->send.consumer.store(qp.requester.sq_retired, std::memory_order_release);
        _completer.complete_send(qp, work, work.status != IBV_WC_SUCCESS ? work.status : IBV_WC_WR_FLUSH_ERR);
        did_work = true;
    }
    const std::uint32_t send_producer = requester::read_posted(qp);
    if (send_producer - qp.requester.sq_retired <= qp.send_size) {
        while (qp.requester.sq_retired != send_producer) {
            send_work work;
            work.wqe = qp.send_slots[qp.requester.sq_retired & send_mask];
            ++qp.requester.sq_retired;
            qp.control->send.consumer.store(qp.requester.sq_retired, std::memory_order_release);
            _completer.complete_send(qp, work, IBV_WC_WR_FLUSH_ERR);
            did_work = true;
        }
    }
    qp.requester.sq_started = qp.requester.sq_current = qp.requester.sq_retired;
    qp.control->send.consumer.store(qp.requester.sq_retired, std::memory_order_release);
    return did_work;
}

bool nic_node::flush(queue_pair& qp) {
    // IBA 10.3.1 (Error state): every outstanding and newly posted WR completes with a flush
    // error, signalled or not.
    bool did_work = flush_send_queue(qp);
    auto flush_receive = [&](const hw::recv_wqe& wqe) {
        hw::cqe e{};
        e.wr_id = wqe.wr_id;
        e.status = IBV_WC_WR_FLUSH_ERR;
        e.opcode = IBV_WC_RECV;
        e.qp_num = qp.qpn;
        ++_transport.counters.resp_cqe_flush_error;
        post_completion(*qp.recv_cq, e, false);
    };
    if (qp.responder.receive != receive_state::none) {
        qp.control->recv.consumer.store(qp.responder.rq_consumed, std::memory_order_release);
        flush_receive(qp.responder.recv_work);
        _responder.set_state(qp, receive_state::none);
        did_work = true;
    }
    const std::uint32_t recv_producer = qp.control->recv.producer.load(std::memory_order_acquire);
    if (recv_producer - qp.responder.rq_consumed <= qp.recv_size) {
        while (qp.responder.rq_consumed != recv_producer) {
            const hw::recv_wqe wqe = qp.recv_slots[qp.responder.rq_consumed & (qp.recv_size - 1)];
            ++qp.responder.rq_consumed;
            qp.control->recv.consumer.store(qp.responder.rq_consumed, std::memory_order_release);
            flush_receive(wqe);
            did_work = true;
        }
    }
    return did_work;
}

} // namespace rocefab::nic
