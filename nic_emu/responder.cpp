// The responder (IBA 9.7.5.1 and rxe_resp.c): checks each request's PSN, places SEND payloads
// into receive WQEs and RDMA WRITE payloads into registered memory after checking the rkey,
// and answers with ACKs, NAKs and RNR NAKs. READ and atomic requests: responder_read_atomic.cpp.

#include "nic_emu/responder.hpp"

#include <algorithm>

namespace rocefab::nic {

namespace {
using wire::aeth_syndrome::invalid_credits;
}

void responder::send_ack(queue_pair& qp, std::uint32_t psn, std::uint8_t syndrome, sim_time now) {
    // An acknowledgement promises that what it acknowledges is in the program's memory: while
    // the QP's writes are still staged, it waits for them (flush_dma sends it, or replaces it
    // with the NAK of a write that failed).
    if (_context.dma.writes_for(&qp)) {
        if (!_context.dma.has_ack_room()) flush_dma();
        if (_context.dma.writes_for(&qp)) {
            _context.dma.add_acknowledgement({&qp, psn, syndrome, now});
            return;
        }
    }
    // While READ responses or atomic ACKs are still to go out, an ACK (or an RNR or sequence
    // NAK, which acknowledge what precedes them) would overtake them: it waits, and only the
    // latest is kept, since each acknowledges everything before it. A NAK that ends the
    // connection goes at once.
    const bool fatal = wire::aeth_syndrome::is_nak(syndrome) &&
                       wire::aeth_syndrome::nak_code_of(syndrome) != wire::nak_code::psn_sequence_error;
    if (!fatal && responses_pending(qp)) {
        // A deferred sequence NAK is not replaced by a plain ACK: the requests it reports as
        // discarded must still be resent (run_read_atomic_responder brings its PSN up to date).
        std::optional<deferred_ack>& deferred = qp.responder.deferred_ack;
        const bool sequence_nak_waits = deferred && wire::aeth_syndrome::is_nak(deferred->syndrome);
        if (sequence_nak_waits && wire::aeth_syndrome::is_ack(syndrome)) return;
        deferred = deferred_ack{psn, syndrome};
        return;
    }
    wire::roce_headers_spec spec = qp.headers;
    spec.opcode = wire::to_byte(wire::ib_opcode::rc_acknowledge);
    spec.psn = psn;
    spec.ack_request = false;
    spec.solicited = false;
    spec.aeth_syndrome = syndrome;
    spec.aeth_msn = qp.responder.msn & wire::mask24;
    std::uint8_t* payload;
    rte_mbuf* frame = _context.port.start_frame(spec, 0, payload);
    if (!frame) return; // the requester's timer recovers a lost ACK
    if (wire::aeth_syndrome::is_ack(syndrome))
        ++_context.counters.acks_sent;
    else
        ++_context.counters.naks_sent;
    _context.port.finish_frame(frame, now);
}

bool responder::hold_early(queue_pair& qp, const wire::parsed_roce& packet, std::uint32_t psn, std::int32_t distance,
                           sim_time now) {
    if (qp.type != IBV_QPT_RC || distance >= reorder_buffer::max_distance) return false;
    if (qp.responder.early.contains(_context.held, psn)) {
        ++_context.counters.duplicate_request; // a copy of one already held: dropped
        return true;
    }
    if (!qp.responder.early.hold(_context.held, psn, _context.current_frame, packet, now)) return false;
    _context.current_frame_kept = true;
    // Give the missing packets the time a reordering fabric takes before asking for them.
    if (qp.responder.gap_deadline == never && qp.responder.state != responder_state::sequence_nak_sent)
        qp.responder.gap_deadline = now + transport_context::reorder_grace;
    return true;
}

void responder::report_gap(queue_pair& qp, sim_time now) {
    qp.responder.gap_deadline = never;
    if (qp.responder.state == responder_state::sequence_nak_sent) return;
    set_state(qp, responder_state::sequence_nak_sent);
    send_ack(qp, qp.responder.expected_psn, wire::aeth_syndrome::nak(wire::nak_code::psn_sequence_error), now);
}

void responder::resume(queue_pair& qp, sim_time now) {
    held_packet e;
    bool drained = false;
    while (qp.state != IBV_QPS_ERR && qp.responder.early.take(_context.held, qp.responder.expected_psn, e)) {
        _context.handle_frame(e.frame, [&] { handle_request(qp, e.packet, now); });
        drained = true;
    }
    if (drained && qp.state != IBV_QPS_ERR && qp.responder.early.held() &&
        _context.spec.retransmission == retransmission_mode::selective_repeat) {
        // Selective repeat: another gap behind what was drained. Once a packet past it has waited
        // out the reorder grace (it may have waited while the first gap was being filled), the
        // gap is reported at once: the NAK acknowledges what was drained, and the requester
        // resends just the packet it names.
        const sim_time due = qp.responder.early.oldest_arrival(_context.held) + transport_context::reorder_grace;
        if (due <= now) {
            report_gap(qp, now);
            return;
        }
        send_ack(qp, wire::psn_add(qp.responder.expected_psn, wire::psn_mask),
                 wire::aeth_syndrome::ack(invalid_credits), now);
        qp.responder.gap_deadline = due;
        return;
    }
    // The requester may be resending what was held (go-back-N after a NAK or a timeout): tell it
    // at once how far the responder got, so that it skips ahead.
    if (drained && qp.state != IBV_QPS_ERR)
        send_ack(qp, wire::psn_add(qp.responder.expected_psn, wire::psn_mask),
                 wire::aeth_syndrome::ack(invalid_credits), now);
    if (!qp.responder.early.held())
        qp.responder.gap_deadline = never;
    else if (drained && qp.responder.state != responder_state::sequence_nak_sent)
        qp.responder.gap_deadline =
            now + transport_context::reorder_grace; // another gap behind what was drained: its own grace
}

bool responder::run_timers(queue_pair& qp, sim_time now) {
    if (qp.responder.gap_deadline > now) return false;
    if (qp.state == IBV_QPS_ERR)
        release_early(qp);
    else if (qp.responder.early.held())
        report_gap(qp, now);
    else
        qp.responder.gap_deadline = never;
    return true;
}

sim_time responder::deadline(const queue_pair& qp) const {
    if (qp.state == IBV_QPS_ERR) {
        // What the responder holds or what is posted is flushed (IBA 10.3.1).
        const bool to_flush = qp.responder.receive != receive_state::none ||
                              qp.control->recv.producer.load(std::memory_order_acquire) != qp.responder.rq_consumed;
        return to_flush ? 0 : qp.responder.gap_deadline;
    }
    // READ responses, atomic ACKs and the acknowledgement deferred behind them go out as the
    // port and PFC allow.
    if (qp.responder.deferred_ack || responses_pending(qp))
        return std::min(qp.responder.gap_deadline, std::max(_context.port.link_busy_until() - transmit_fifo_time,
                                                            _context.port.paused_until(qp.priority)));
    return qp.responder.gap_deadline;
}

void responder::release_early(queue_pair& qp) {
    qp.responder.early.release_all(_context.held);
    qp.completer.early_responses.release_all(_context.held);
    qp.responder.gap_deadline = never;
    qp.completer.response_gap_deadline = never;
    qp.completer.waiting_ack_psn.reset();
}

bool responder::take_receive_wqe(queue_pair& qp) {
    if (qp.srq) return take_srq_wqe(qp);
    const std::uint32_t producer = qp.control->recv.producer.load(std::memory_order_acquire);
    if (producer == qp.responder.rq_consumed) return false;
    if (producer - qp.responder.rq_consumed > qp.recv_size) return false; // a corrupt ring holds nothing usable
    qp.responder.recv_work = qp.recv_slots[qp.responder.rq_consumed & (qp.recv_size - 1)];
    ++qp.responder.rq_consumed;
    set_state(qp, receive_state::held);
    qp.responder.recv_offset = 0;
    return true;
}

bool responder::write_payload_to_sges(queue_pair& qp, const hw::recv_wqe& wqe, std::uint64_t offset,
                                      const std::uint8_t* data, std::size_t length, std::uint32_t psn,
                                      ibv_wc_status& status) {
    return _context.stage_scatter(qp, {wqe.sg_list, std::min<std::size_t>(wqe.num_sge, hw::max_sge)}, offset, data,
                                  length, status,
                                  write_origin::request(qp, psn, wire::nak_code::remote_operational_error));
}

bool responder::flush_dma() {
    if (_context.dma.empty()) return false;
    // The first write of each QP that failed: its origin says how the failure is answered.
    auto& failed = _failed_writes;
    std::size_t failures = 0;
    auto failed_for = [&](const queue_pair* qp) -> const write_origin* {
        for (std::size_t i = 0; i < failures; ++i)
            if (failed[i].qp == qp) return &failed[i];
        return nullptr;
    };
    if (!_context.dma.local().empty() && !_context.dma.memory()->write(_context.dma.local(), _context.dma.remote())) {
        // The program unmapped the memory, made it read-only or is gone: which writes failed
        // is found one at a time (a rare path; the ones that work are made again, harmlessly).
        for (std::size_t i = 0; i < _context.dma.origins().size(); ++i) {
            const write_origin& origin = _context.dma.origins()[i];
            if (failed_for(origin.qp) ||
                _context.dma.memory()->write(_context.dma.local().subspan(i, 1), _context.dma.remote().subspan(i, 1)))
                continue;
            ++_context.counters.memory_access_faults;
            failed[failures++] = origin;
        }
    }
    // What waits for the writes is copied out first: answering may stage nothing more here,
    // but the batch must be empty before anything is sent.
    std::array<dma_batch::completion, dma_batch::max_completions> completions;
    std::array<dma_batch::acknowledgement, dma_batch::max_acks> acks;
    const std::size_t completion_count = _context.dma.completions().size(),
                      ack_count = _context.dma.acknowledgements().size();
    std::copy(_context.dma.completions().begin(), _context.dma.completions().end(), completions.begin());
    std::copy(_context.dma.acknowledgements().begin(), _context.dma.acknowledgements().end(), acks.begin());
    _context.dma.clear(_context.current_frame);

    for (std::size_t i = 0; i < completion_count; ++i) {
        dma_batch::completion& c = completions[i];
        const write_origin* f = failed_for(c.qp);
        if (f && c.entry.status == IBV_WC_SUCCESS && wire::psn_diff(c.last_psn, f->psn) >= 0) {
            // The message that held the failed write ends in error; those after it never
            // happened, as on a QP that went to ERR at the failed write: flushed.
            const bool flushed = wire::psn_diff(c.first_psn, f->psn) > 0;
            c.entry.status = flushed ? IBV_WC_WR_FLUSH_ERR : IBV_WC_LOC_PROT_ERR;
            const bool receive = c.entry.opcode == IBV_WC_RECV || c.entry.opcode == IBV_WC_RECV_RDMA_WITH_IMM;
            if (flushed)
                ++(receive ? _context.counters.resp_cqe_flush_error : _context.counters.req_cqe_flush_error);
            else
                ++(receive ? _context.counters.resp_cqe_error : _context.counters.req_cqe_error);
        }
        _context.port.post_completion(*c.cq, c.entry, c.solicited);
    }
    for (std::size_t i = 0; i < ack_count; ++i)
        if (!failed_for(acks[i].qp)) send_ack(*acks[i].qp, acks[i].psn, acks[i].syndrome, acks[i].when);
    for (std::size_t i = 0; i < failures; ++i) {
        const write_origin& f = failed[i];
        if (f.nak) {
            // The NAK acknowledges what precedes the failed request, and nothing after it.
            if (f.code == wire::nak_code::remote_access_error) ++_context.counters.resp_remote_access_errors;
            send_ack(*f.qp, f.psn, wire::aeth_syndrome::nak(f.code), _context.latest);
        }
        _context.port.enter_error(*f.qp,
                                  f.nak && f.code == wire::nak_code::remote_access_error
                                      ? "an RDMA WRITE's target is not mapped writable in the program any more"
                                      : "a receive or response buffer is not mapped writable in the program any more");
    }
    return true;
}

bool responder::begin_remote_write(queue_pair& qp, const wire::reth& reth) {
    const std::uint64_t va = reth.virtual_address.load();
    const std::uint32_t dma_length = reth.dma_length.load();
    const std::uint32_t rkey = reth.rkey.load();
    // IBA 9.7.5.1.4 (C9-88): the QP must allow remote writes, and the rkey must name an MR of the
    // QP's PD with remote write access covering the whole range.
    const bool allowed =
        (qp.attr.qp_access_flags & IBV_ACCESS_REMOTE_WRITE) &&
        (dma_length == 0 || _context.port.remote_mr(rkey, qp.pd, va, dma_length, IBV_ACCESS_REMOTE_WRITE));
    if (!allowed) {
        ++_context.counters.resp_remote_access_errors;
        return false;
    }
    qp.responder.write = remote_write{rkey, va, dma_length, dma_length};
    return true;
}

void responder::handle(queue_pair& qp, const wire::parsed_roce& packet, sim_time now) {
    if (qp.type == IBV_QPT_UC)
        handle_uc_request(qp, packet);
    else if (qp.type == IBV_QPT_UD)
        handle_ud_request(qp, packet);
    else
        handle_request(qp, packet, now);
}

void responder::handle_request(queue_pair& qp, const wire::parsed_roce& packet, sim_time now) {
    if (qp.state == IBV_QPS_ERR) {
        ++_context.counters.rx_qp_state_drops;
        return;
    }
    const wire::bth& bth = *packet.bth_header;
    const wire::opcode_info& op = *packet.info;
    const std::uint32_t psn = bth.psn();
    const std::int32_t distance = wire::psn_diff(psn, qp.responder.expected_psn);

    if (distance > 0) {
        // A gap: what precedes this was lost or is still on its way (a sprayed fabric reorders).
        ++_context.counters.out_of_sequence;
        if (hold_early(qp, packet, psn, distance, now)) return;
        // Too far ahead to hold: one NAK per gap (IBA 9.7.5.1.1), and go-back-N resends it.
        report_gap(qp, now);
        return;
    }
    if (distance < 0 && (op.has(wire::opcode_mask::read) || op.has(wire::opcode_mask::atomic))) {
        handle_duplicate_read_atomic(qp, packet, now);
        return;
    }
    if (distance < 0) {
        // A duplicate: its effect already happened. Acknowledge what has been received so the
        // requester can move on (IBA 9.7.5.1.2).
        ++_context.counters.duplicate_request;
        if (bth.ack_request())
            send_ack(qp, wire::psn_add(qp.responder.expected_psn, wire::psn_mask),
                     wire::aeth_syndrome::ack(invalid_credits), now);
        return;
    }
    set_state(qp, responder_state::in_sequence);

    auto nak = [&](wire::nak_code code) {
        send_ack(qp, psn, wire::aeth_syndrome::nak(code), now);
        _context.port.enter_error(qp, wire::to_string(code));
    };
    auto complete_receive = [&](ibv_wc_status status, std::uint32_t byte_len, bool with_imm, bool write_imm) {
        hw::cqe e{};
        e.wr_id = qp.responder.recv_work.wr_id;
        e.status = status;
        e.opcode = write_imm ? IBV_WC_RECV_RDMA_WITH_IMM : IBV_WC_RECV;
        e.byte_len = byte_len;
        e.qp_num = qp.qpn;
        e.src_qp = qp.attr.dest_qp_num;
        if (with_imm) {
            e.wc_flags |= IBV_WC_WITH_IMM;
            e.immediate = packet.immdt_header->data.raw(); // network order, as ibv_wc::imm_data
        }
        if (status != IBV_WC_SUCCESS) ++_context.counters.resp_cqe_error;
        set_state(qp, receive_state::none);
        qp.control->recv.consumer.store(qp.responder.rq_consumed, std::memory_order_release);
        _context.stage_completion(qp, *qp.recv_cq, e, bth.solicited(), first_psn_of(qp, psn, byte_len), psn);
    };

    const std::size_t length = packet.payload_length;
    const bool first = op.has(wire::opcode_mask::first) || op.has(wire::opcode_mask::only);
    const bool last = op.has(wire::opcode_mask::last) || op.has(wire::opcode_mask::only);
    // IBA 9.7.5.1.3: FIRST and MIDDLE packets carry exactly one MTU; LAST and ONLY at most one.
    const bool length_ok = (first && last) || last ? length <= qp.mtu_bytes : length == qp.mtu_bytes;

    if (op.has(wire::opcode_mask::send)) {
        if (first == (qp.responder.receive != receive_state::none) || !length_ok) {
            // A FIRST inside a message or a MIDDLE outside one: the opcode sequence is broken.
            nak(wire::nak_code::invalid_request);
            return;
        }
        if (first && !take_receive_wqe(qp)) {
            // No receive WQE: RNR NAK, the PSN stays expected (IBA 9.7.5.2.8).
            ++_context.counters.rnr_nak_sent;
            send_ack(qp, psn, wire::aeth_syndrome::rnr_nak(qp.attr.min_rnr_timer), now);
            return;
        }
        if (first) set_state(qp, receive_state::filling);
        ibv_wc_status status = IBV_WC_SUCCESS;
        if (!write_payload_to_sges(qp, qp.responder.recv_work, qp.responder.recv_offset, packet.payload, length, psn,
                                   status)) {
            if (status == IBV_WC_LOC_LEN_ERR) ++_context.counters.resp_local_length_error;
            complete_receive(status, 0, false, false);
            nak(status == IBV_WC_LOC_LEN_ERR ? wire::nak_code::invalid_request
                                             : wire::nak_code::remote_operational_error);
            return;
        }
        qp.responder.recv_offset += length;
        if (last) {
            complete_receive(IBV_WC_SUCCESS, static_cast<std::uint32_t>(qp.responder.recv_offset),
                             packet.immdt_header != nullptr, false);
            qp.responder.msn = wire::psn_add(qp.responder.msn, 1);
        }
    } else if (op.has(wire::opcode_mask::write)) {
        if (first == qp.responder.write.has_value() || !length_ok) {
            nak(wire::nak_code::invalid_request);
            return;
        }
        if (first) {
            if (!begin_remote_write(qp, *packet.reth_header)) {
                nak(wire::nak_code::remote_access_error);
                return;
            }
        }
        remote_write& write = *qp.responder.write;
        if (length > write.remaining || (last && length != write.remaining)) {
            nak(wire::nak_code::invalid_request);
            return;
        }
        const bool with_imm = packet.immdt_header != nullptr;
        if (last && with_imm && qp.responder.receive == receive_state::none && !take_receive_wqe(qp)) {
            ++_context.counters.rnr_nak_sent;
            send_ack(qp, psn, wire::aeth_syndrome::rnr_nak(qp.attr.min_rnr_timer), now);
            return;
        }
        if (length) {
            const memory_region* mr =
                _context.port.remote_mr(write.rkey, qp.pd, write.va, length, IBV_ACCESS_REMOTE_WRITE);
            if (!mr) {
                ++_context.counters.resp_remote_access_errors;
                nak(wire::nak_code::remote_access_error);
                return;
            }
            if (!_context.dma.fits(mr->memory, 1)) flush_dma();
            _context.dma.add_write(mr->memory, const_cast<std::uint8_t*>(packet.payload),
                                   mr->address + (write.va - mr->iova), length,
                                   write_origin::request(qp, psn, wire::nak_code::remote_access_error));
            if (!_context.dma.holds(_context.current_frame)) _context.dma.hold(_context.current_frame);
        }
        write.va += length;
        write.remaining -= length;
        if (last) {
            const std::uint64_t total = write.total;
            qp.responder.write.reset();
            if (with_imm) complete_receive(IBV_WC_SUCCESS, static_cast<std::uint32_t>(total), true, true);
            qp.responder.msn = wire::psn_add(qp.responder.msn, 1);
        }
    } else if (op.has(wire::opcode_mask::read) || op.has(wire::opcode_mask::atomic)) {
        handle_read_atomic_request(qp, packet, now); // answered by run_read_atomic_responder
        return;
    } else {
        nak(wire::nak_code::invalid_request);
        return;
    }

    qp.responder.expected_psn = wire::psn_add(psn, 1);
    // Selective repeat: when the next request is held already, resume() takes it next and
    // acknowledges past it (or names the gap after it); an ACK of this one alone would tell a
    // requester recovering from a timeout that the held ones are missing.
    if (bth.ack_request() && !(_context.spec.retransmission == retransmission_mode::selective_repeat &&
                               qp.responder.early.contains(_context.held, qp.responder.expected_psn)))
        send_ack(qp, psn, wire::aeth_syndrome::ack(invalid_credits), now);
}

} // namespace rocefab::nic
