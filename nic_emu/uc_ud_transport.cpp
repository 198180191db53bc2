// The unreliable transports and shared receive queues. UC (IBA 9.4, and rxe_resp.c's drop_msg)
// sends SENDs and RDMA WRITEs with PSNs but without acknowledgements: a gap drops the rest of
// the message in progress, and the next FIRST or ONLY starts afresh. UD (IBA 9.8) sends one
// packet a message with a DETH (Q_Key, source QPN) to the address an address handle names;
// the receiver checks the Q_Key and writes the 40-byte GRH area before the payload. Neither
// retransmits: the requester completes a WQE once its last packet is on the wire.

#include "dataplane/wire/ip.hpp"
#include "nic_emu/completer.hpp"
#include "nic_emu/requester.hpp"
#include "nic_emu/responder.hpp"

namespace rocefab::nic {

namespace {

// wc.sl of a UD receive completion over RoCE (see handle_ud_request).
constexpr std::uint8_t roce_v2_udp_header = 0x8, roce_l3_ipv6 = 0x1, roce_l3_ipv4 = 0x2;

// Over RoCEv2/IPv4 the first 20 bytes of the GRH area carry nothing (rdma-core's ibv_grh
// convention for RoCE, rxe's union rdma_network_hdr): they are written as zeros.
constexpr std::uint8_t unused_grh_bytes[hw::grh_length - sizeof(wire::ipv4_header)] = {};

std::uint64_t receive_capacity(const hw::recv_wqe& wqe) {
    std::uint64_t total = 0;
    const unsigned sges = std::min<unsigned>(wqe.num_sge, hw::max_sge);
    for (unsigned i = 0; i < sges; ++i) total += wqe.sg_list[i].length;
    return total;
}

} // namespace

// ---- requester ---------------------------------------------------------------------------------

ibv_wc_status requester::start_ud_send(queue_pair& qp, send_work& work) {
    const hw::send_wqe& wqe = work.wqe;
    // IBA 9.8.1: UD offers SEND (with immediate) only.
    if (wqe.opcode != IBV_WR_SEND && wqe.opcode != IBV_WR_SEND_WITH_IMM) return IBV_WC_LOC_QP_OP_ERR;
    const address_handle* ah = _context.port.find_address_handle(wqe.ud_ah);
    if (!ah || ah->context != qp.context || ah->pd != qp.pd) {
        ++_context.counters.local_protection_errors;
        return IBV_WC_LOC_QP_OP_ERR;
    }
    // IBA 9.8.2: a UD message is one packet, so at most the path MTU (the port's active MTU).
    if (work.length > qp.mtu_bytes) {
        ++_context.counters.ud_send_too_long;
        return IBV_WC_LOC_LEN_ERR;
    }
    wire::roce_headers_spec& h = qp.headers; // this WQE's packet is built before the next starts
    h = ah->headers;
    h.dest_qpn = wqe.ud_remote_qpn & wire::mask24;
    // IBA 10.2.5: a Q_Key with its high-order bit set in the WR means the QP's own Q_Key.
    h.deth_qkey = (wqe.ud_remote_qkey & 0x80000000u) ? qp.attr.qkey : wqe.ud_remote_qkey;
    h.deth_source_qpn = qp.qpn;
    h.udp_source_port =
        static_cast<std::uint16_t>(0xc000 | ((qp.qpn * 0x9e3779b1u) ^ (h.dest_qpn * 0x85ebca6bu)) >> 18);
    return IBV_WC_SUCCESS;
}

void requester::retire_sent(queue_pair& qp) {
    const std::uint32_t mask = qp.send_size - 1;
    while (qp.requester.sq_retired != qp.requester.sq_current) {
        const send_work& work = qp.requester.started_work[qp.requester.sq_retired & mask];
        ++qp.requester.sq_retired;
        qp.control->send.consumer.store(qp.requester.sq_retired, std::memory_order_release);
        _completer.complete_send(qp, work, work.status); // the WQE that took the QP to SQE reports why
    }
    // Nothing will acknowledge these PSNs: the requester's window is always open.
    qp.completer.last_acked_psn = wire::psn_add(qp.requester.next_psn, wire::psn_mask);
}

// ---- shared receive queue ------------------------------------------------------------------------

bool responder::take_srq_wqe(queue_pair& qp) {
    shared_receive_queue& srq = *qp.srq;
    const std::uint32_t producer = srq.control->recv.producer.load(std::memory_order_acquire);
    if (producer == srq.consumed) return false;
    if (producer - srq.consumed > srq.size) return false; // a corrupt ring holds nothing usable
    qp.responder.recv_work = srq.slots[srq.consumed & (srq.size - 1)];
    ++srq.consumed;
    // The WQE is the QP's now (a private copy): its slot is free at once.
    srq.control->recv.consumer.store(srq.consumed, std::memory_order_release);
    set_state(qp, receive_state::held);
    qp.responder.recv_offset = 0;
    // IBA 10.2.9.4 (and 11.6.3.2): an armed SRQ reports once that it fell below its limit,
    // and is disarmed until ibv_modify_srq arms it again.
    if (srq.limit && producer - srq.consumed < srq.limit) {
        srq.limit = 0;
        ++_context.counters.srq_limit_events;
        _context.port.raise_async_event(srq.context, IBV_EVENT_SRQ_LIMIT_REACHED, srq.handle);
    }
    return true;
}

// ---- UC responder --------------------------------------------------------------------------------

void responder::handle_uc_request(queue_pair& qp, const wire::parsed_roce& packet) {
    if (qp.state == IBV_QPS_ERR) {
        ++_context.counters.rx_qp_state_drops;
        return;
    }
    const wire::bth& bth = *packet.bth_header;
    const wire::opcode_info& op = *packet.info;
    const std::uint32_t psn = bth.psn();
    const bool first = op.has(wire::opcode_mask::first) || op.has(wire::opcode_mask::only);
    const bool last = op.has(wire::opcode_mask::last) || op.has(wire::opcode_mask::only);

    // The message in progress is given up; what it placed stays, and a held receive WQE
    // serves the next SEND (IBA 9.7.5.1.1 for UC: no completion for a partial message).
    auto abandon = [&] {
        if (qp.responder.receive == receive_state::filling) set_state(qp, receive_state::held);
        qp.responder.write.reset();
    };
    auto drop = [&] {
        abandon();
        set_state(qp, responder_state::dropping_message);
        ++_context.counters.uc_dropped_packets;
    };
    auto complete = [&](ibv_wc_status status, std::uint32_t byte_len, bool write_imm) {
        hw::cqe e{};
        e.wr_id = qp.responder.recv_work.wr_id;
        e.status = status;
        e.opcode = write_imm ? IBV_WC_RECV_RDMA_WITH_IMM : IBV_WC_RECV;
        e.byte_len = byte_len;
        e.qp_num = qp.qpn;
        e.src_qp = qp.attr.dest_qp_num;
        if (packet.immdt_header) {
            e.wc_flags |= IBV_WC_WITH_IMM;
            e.immediate = packet.immdt_header->data.raw(); // network order, as ibv_wc::imm_data
        }
        if (status != IBV_WC_SUCCESS) ++_context.counters.resp_cqe_error;
        set_state(qp, receive_state::none);
        qp.control->recv.consumer.store(qp.responder.rq_consumed, std::memory_order_release);
        _context.stage_completion(qp, *qp.recv_cq, e, bth.solicited(), first_psn_of(qp, psn, byte_len), psn);
    };

    // No NAK exists for UC: a PSN other than the expected one means packets were lost, and
    // the responder follows the sender's PSN from here on.
    if (psn != qp.responder.expected_psn) {
        ++_context.counters.out_of_sequence;
        abandon();
        set_state(qp, responder_state::dropping_message);
    }
    qp.responder.expected_psn = wire::psn_add(psn, 1);
    if (qp.responder.state == responder_state::dropping_message) {
        if (!first) {
            ++_context.counters.uc_dropped_packets;
            return;
        }
        set_state(qp, responder_state::in_sequence);
    }
    if (first) abandon(); // a FIRST inside a message: that message lost its end

    const std::size_t length = packet.payload_length;
    // IBA 9.7.5.1.3: FIRST and MIDDLE packets carry exactly one MTU; LAST and ONLY at most one.
    if (last ? length > qp.mtu_bytes : length != qp.mtu_bytes) return drop();

    if (op.has(wire::opcode_mask::send)) {
        if (!first && qp.responder.receive != receive_state::filling) return drop();
        if (first) {
            if (qp.responder.receive == receive_state::none && !take_receive_wqe(qp)) {
                ++_context.counters.out_of_buffer; // UC has no RNR NAK: the message is lost
                return drop();
            }
            qp.responder.recv_offset = 0;
            set_state(qp, receive_state::filling);
        }
        ibv_wc_status status = IBV_WC_SUCCESS;
        if (!write_payload_to_sges(qp, qp.responder.recv_work, qp.responder.recv_offset, packet.payload, length, psn,
                                   status)) {
            if (status == IBV_WC_LOC_LEN_ERR) ++_context.counters.resp_local_length_error;
            complete(status, 0, false);
            return drop();
        }
        qp.responder.recv_offset += length;
        if (last) complete(IBV_WC_SUCCESS, static_cast<std::uint32_t>(qp.responder.recv_offset), false);
        return;
    }
    if (!op.has(wire::opcode_mask::write)) return drop(); // nothing else is a UC request

    if (!first && !qp.responder.write) return drop();
    if (first && !begin_remote_write(qp, *packet.reth_header)) return drop();
    remote_write& write = *qp.responder.write;
    if (length > write.remaining || (last && length != write.remaining)) return drop();
    const bool with_imm = packet.immdt_header != nullptr;
    if (last && with_imm && qp.responder.receive == receive_state::none && !take_receive_wqe(qp)) {
        ++_context.counters.out_of_buffer;
        return drop();
    }
    if (length) {
        const memory_region* mr = _context.port.remote_mr(write.rkey, qp.pd, write.va, length, IBV_ACCESS_REMOTE_WRITE);
        if (!mr) {
            ++_context.counters.resp_remote_access_errors;
            return drop();
        }
        if (!_context.dma.fits(mr->memory, 1)) flush_dma();
        _context.dma.add_write(mr->memory, const_cast<std::uint8_t*>(packet.payload),
                               mr->address + (write.va - mr->iova), length, write_origin::local(qp));
        if (!_context.dma.holds(_context.current_frame)) _context.dma.hold(_context.current_frame);
    }
    write.va += length;
    write.remaining -= length;
    if (last) {
        const std::uint64_t total = write.total;
        qp.responder.write.reset();
        if (with_imm) complete(IBV_WC_SUCCESS, static_cast<std::uint32_t>(total), true);
    }
}

// ---- UD responder --------------------------------------------------------------------------------

void responder::handle_ud_request(queue_pair& qp, const wire::parsed_roce& packet) {
    if (qp.state == IBV_QPS_ERR) {
        ++_context.counters.rx_qp_state_drops;
        return;
    }
    const wire::deth& deth = *packet.deth_header;
    const std::uint32_t psn = packet.bth_header->psn();
    // IBA 10.2.5 (C10-13): a datagram whose Q_Key differs from the QP's is silently dropped.
    if (deth.qkey.load() != qp.attr.qkey) {
        ++_context.counters.qkey_violations;
        return;
    }
    if (!take_receive_wqe(qp)) {
        ++_context.counters.out_of_buffer; // UD has no RNR NAK: the datagram is lost
        return;
    }
    const hw::recv_wqe& wqe = qp.responder.recv_work;
    const std::size_t length = packet.payload_length;
    auto complete = [&](ibv_wc_status status, std::uint32_t byte_len) {
        hw::cqe e{};
        e.wr_id = wqe.wr_id;
        e.status = status;
        e.opcode = IBV_WC_RECV;
        e.byte_len = byte_len;
        e.qp_num = qp.qpn;
        e.src_qp = deth.source_qpn();
        e.wc_flags = IBV_WC_GRH;
        // A ConnectX reports a RoCE datagram's network header type where IB has the SL (the
        // PRM's CQE: bit 3 "has a UDP header", bits 2..0 the L3 type, 1 IPv6 and 2 IPv4), and
        // mlx5 copies it to wc.sl. UCX's ud_verbs reads it to find the destination GID in the
        // GRH area: 20 bytes into it for IPv4, the whole 40 for IPv6.
        e.sl = roce_v2_udp_header | (packet.is_ipv6 ? roce_l3_ipv6 : roce_l3_ipv4);
        if (packet.immdt_header) {
            e.wc_flags |= IBV_WC_WITH_IMM;
            e.immediate = packet.immdt_header->data.raw();
        }
        if (status != IBV_WC_SUCCESS) ++_context.counters.resp_cqe_error;
        set_state(qp, receive_state::none);
        qp.control->recv.consumer.store(qp.responder.rq_consumed, std::memory_order_release);
        _context.stage_completion(qp, *qp.recv_cq, e, packet.bth_header->solicited(), psn, psn);
    };
    if (hw::grh_length + length > receive_capacity(wqe)) {
        ++_context.counters.resp_local_length_error;
        complete(IBV_WC_LOC_LEN_ERR, 0);
        return;
    }
    // The GRH area and the payload are staged together: no flush may come between them and
    // free the frame they point into.
    address_space* memory = _context.port.context_memory(qp.context);
    if (!memory) return;
    if (!_context.dma.has_room(memory, 3 * hw::max_sge, 2, 2)) flush_dma();
    const std::uint8_t* frame = reinterpret_cast<const std::uint8_t*>(packet.bth_header) - packet.bth_offset;
    const std::uint8_t* ip = frame + packet.l3_offset;
    ibv_wc_status status = IBV_WC_SUCCESS;
    bool placed;
    if (packet.is_ipv6) {
        placed = write_payload_to_sges(qp, wqe, 0, ip, hw::grh_length, psn, status);
    } else {
        constexpr std::size_t unused = sizeof unused_grh_bytes;
        placed = write_payload_to_sges(qp, wqe, 0, unused_grh_bytes, unused, psn, status) &&
                 write_payload_to_sges(qp, wqe, unused, ip, sizeof(wire::ipv4_header), psn, status);
    }
    placed = placed && write_payload_to_sges(qp, wqe, hw::grh_length, packet.payload, length, psn, status);
    complete(placed ? IBV_WC_SUCCESS : status, placed ? static_cast<std::uint32_t>(hw::grh_length + length) : 0);
}

} // namespace rocefab::nic
