// The completer (IBA 9.7.5.2 and rxe_comp.c): reads ACKs and NAKs, retires acknowledged send
// WQEs into the send CQ, and owns the transport and RNR timers. READ responses and atomic
// ACKs: completer_read_atomic.cpp.

#include "nic_emu/completer.hpp"

#include "nic_emu/requester.hpp"

namespace rocefab::nic {

namespace {

// IBA 9.7.5.2.8 Table 45: the RNR NAK timer field encodes these waits, in microseconds x100.
constexpr std::uint32_t rnr_timer_us100[32] = {65536, 1,    2,    3,    4,    6,     8,     12,    16,    24,   32,
                                               48,    64,   96,   128,  192,  256,   384,   512,   768,   1024, 1536,
                                               2048,  3072, 4096, 6144, 8192, 12288, 16384, 24576, 32768, 49152};

sim_time rnr_wait(std::uint8_t timer) { return sim_time(rnr_timer_us100[timer & 31]) * 10'000; }

ibv_wc_opcode completion_opcode(std::uint8_t wr_opcode) {
    switch (wr_opcode) {
    case IBV_WR_RDMA_WRITE:
    case IBV_WR_RDMA_WRITE_WITH_IMM: return IBV_WC_RDMA_WRITE;
    case IBV_WR_RDMA_READ: return IBV_WC_RDMA_READ;
    case IBV_WR_ATOMIC_CMP_AND_SWP: return IBV_WC_COMP_SWAP;
    case IBV_WR_ATOMIC_FETCH_AND_ADD: return IBV_WC_FETCH_ADD;
    case IBV_WR_BIND_MW: return IBV_WC_BIND_MW;
    case IBV_WR_LOCAL_INV: return IBV_WC_LOCAL_INV;
    default: return IBV_WC_SEND;
    }
}

} // namespace

void completer::complete_send(queue_pair& qp, const send_work& work, ibv_wc_status status) {
    const bool signaled = (work.wqe.flags & hw::wqe_flag::signaled) || qp.sq_sig_all;
    if (status == IBV_WC_SUCCESS && !signaled) return;
    if (status == IBV_WC_WR_FLUSH_ERR)
        ++_context.counters.req_cqe_flush_error;
    else if (status != IBV_WC_SUCCESS)
        ++_context.counters.req_cqe_error;
    hw::cqe e{};
    e.wr_id = work.wqe.wr_id;
    e.status = status;
    e.opcode = completion_opcode(work.wqe.opcode);
    e.qp_num = qp.qpn;
    e.byte_len = is_read_or_atomic(work.wqe.opcode) ? static_cast<std::uint32_t>(work.length) : 0;
    // After the READ data or atomic result it reports, if those are still staged.
    _context.stage_completion(qp, *qp.send_cq, e, false, work.first_psn,
                              wire::psn_add(work.first_psn, work.packets ? work.packets - 1 : 0));
}

void completer::retire_oldest(queue_pair& qp) {
    // Free the slot before the completion is visible: a program that polls it may post again at
    // once (rxe's do_complete orders them the same way).
    ++qp.requester.sq_retired;
    qp.control->send.consumer.store(qp.requester.sq_retired, std::memory_order_release);
    // A rewind (timeout or NAK) may have left the requester on this WQE with its retry not sent
    // yet, e.g. while the port was busy, and then the original responses arrived. The retry is
    // pointless now; left there, the requester would wait for ever on a WQE that is gone. It goes
    // on from the next WQE, resending it whole if it had been sent.
    requester_record& req = qp.requester;
    if (static_cast<std::int32_t>(req.sq_current - req.sq_retired) < 0) {
        req.sq_current = req.sq_retired;
        req.sq_offset = 0;
        req.next_psn = req.sq_current != req.sq_started
                           ? req.started_work[req.sq_current & (qp.send_size - 1)].first_psn
                           : req.psn_frontier;
    }
}

void completer::retire_acknowledged(queue_pair& qp, std::uint32_t acked_psn, sim_time now) {
    const std::uint32_t mask = qp.send_size - 1;
    bool progressed = false;
    while (qp.requester.sq_retired != qp.requester.sq_started) {
        const send_work& work = qp.requester.started_work[qp.requester.sq_retired & mask];
        const std::uint32_t last_psn = wire::psn_add(work.first_psn, work.packets - 1);
        if (wire::psn_diff(last_psn, acked_psn) > 0) break;
        if (is_read_or_atomic(work.wqe.opcode)) {
            // Only its responses complete a READ or atomic (completer_read_atomic.cpp); an
            // acknowledgement past it acknowledges nothing beyond what was received of it.
            acked_psn = wire::psn_diff(qp.completer.last_acked_psn, work.first_psn) >= 0
                            ? qp.completer.last_acked_psn
                            : wire::psn_add(work.first_psn, wire::psn_mask);
            break;
        }
        retire_oldest(qp);
        complete_send(qp, work, IBV_WC_SUCCESS);
        progressed = true;
    }
    if (wire::psn_diff(acked_psn, qp.completer.last_acked_psn) > 0) {
        qp.completer.last_acked_psn = acked_psn;
        progressed = true;
        if (qp.requester.recovery != recovery_state::none) {
            // Selective repeat: the recovery is over once everything sent before it began is
            // acknowledged. Short of that, after a timeout, the ACK names the next lost packet:
            // the responder had everything up to here and nothing after it, and what follows
            // was sent a timeout ago.
            const std::uint32_t next = wire::psn_add(acked_psn, 1);
            if (wire::psn_diff(next, qp.requester.recovery_point) >= 0)
                _context.transition(qp, "recovery", qp.requester.recovery, recovery_state::none);
            else if (qp.requester.recovery == recovery_state::after_timeout)
                _requester.resend_missing(qp, next, requester::loss_evidence::partial_ack);
        }
    }
    // An ACK beyond where a rewind left the requester makes resending those packets pointless.
    if (wire::psn_diff(qp.requester.next_psn, wire::psn_add(acked_psn, 1)) < 0)
        _requester.rewind_to(qp, wire::psn_add(acked_psn, 1));
    if (progressed) {
        qp.completer.retries_left = qp.attr.retry_cnt;
        _context.transport_progressed(qp, now);
    }
}

void completer::handle(queue_pair& qp, const wire::parsed_roce& packet, sim_time now) {
    if (qp.state != IBV_QPS_RTS && qp.state != IBV_QPS_SQD && qp.state != IBV_QPS_SQE) {
        ++_context.counters.rx_qp_state_drops;
        return;
    }
    if (packet.info->has(wire::opcode_mask::read) || packet.info->has(wire::opcode_mask::atomic_ack_eth)) {
        handle_read_atomic_response(qp, packet, now);
        return;
    }
    if (!packet.aeth_header) {
        ++_context.counters.port_rcv_errors;
        return;
    }
    const std::uint32_t psn = packet.bth_header->psn();
    // Only PSNs of packets actually sent and not yet acknowledged mean anything (IBA 9.7.5.2.1).
    if (wire::psn_diff(psn, qp.requester.psn_frontier) >= 0 || wire::psn_diff(psn, qp.completer.last_acked_psn) < 0) {
        ++_context.counters.duplicate_request;
        return;
    }
    const std::uint8_t syndrome = packet.aeth_header->syndrome();
    const std::uint32_t before = wire::psn_add(psn, wire::psn_mask); // psn - 1
    // A NAK names the PSN the responder expected, so it acknowledges only what precedes it
    // (IBA 9.7.5.2.8). One naming a PSN already acknowledged (by a READ response or atomic ACK
    // that overtook it, or a late duplicate) is stale: the retry it asks for has happened.
    if (!wire::aeth_syndrome::is_ack(syndrome) && wire::psn_diff(psn, qp.completer.last_acked_psn) <= 0) {
        ++_context.counters.duplicate_request;
        return;
    }

    if (wire::aeth_syndrome::is_ack(syndrome)) {
        if (wait_for_missing_responses(qp, psn, nullptr, now)) return;
        if (implied_nak(qp, psn, now)) {
            // Selective repeat asks again only for the missing responses: the ACK still
            // acknowledges the requests after them, once they are in (resume() takes it).
            std::optional<std::uint32_t>& waiting = qp.completer.waiting_ack_psn;
            if (_context.spec.retransmission == retransmission_mode::selective_repeat &&
                (!waiting || wire::psn_diff(psn, *waiting) > 0))
                waiting = psn;
            return;
        }
        if (wire::psn_diff(psn, qp.completer.last_acked_psn) > 0) set_state(qp, completer_state::ready);
        retire_acknowledged(qp, psn, now);
        qp.completer.rnr_retries_left = qp.attr.rnr_retry;
        return;
    }

    // Every NAK acknowledges what precedes its PSN (IBA 9.7.5.2.8). One that ends the
    // connection is taken as it is; an RNR or sequence NAK past an unanswered READ/atomic
    // means its responses were lost too: the retry starts there.
    const bool fatal = wire::aeth_syndrome::is_nak(syndrome) &&
                       wire::aeth_syndrome::nak_code_of(syndrome) != wire::nak_code::psn_sequence_error;
    if (!fatal && implied_nak(qp, before, now)) return;
    retire_acknowledged(qp, before, now);
    const std::uint32_t mask = qp.send_size - 1;
    auto fail_current = [&](ibv_wc_status status) {
        requester_record& req = qp.requester;
        if (req.sq_retired != req.sq_started) req.started_work[req.sq_retired & mask].status = status;
        _context.port.enter_error(qp, wire::aeth_syndrome::is_nak(syndrome)
                                          ? wire::to_string(wire::aeth_syndrome::nak_code_of(syndrome))
                                          : "RNR retry count exceeded");
    };

    if (wire::aeth_syndrome::is_rnr_nak(syndrome)) {
        ++_context.counters.rnr_nak_received;
        if (qp.attr.rnr_retry != 7) { // 7 means retry for ever (IBA 9.7.5.2.8)
            if (qp.completer.rnr_retries_left == 0) {
                ++_context.counters.rnr_nak_retry_err;
                fail_current(IBV_WC_RNR_RETRY_EXC_ERR);
                return;
            }
            --qp.completer.rnr_retries_left;
        }
        qp.requester.rnr_wait_until = now + rnr_wait(wire::aeth_syndrome::rnr_timer_of(syndrome));
        _requester.rewind_to(qp, psn);
        // The transport timer does not run while waiting out an RNR NAK.
        qp.completer.retransmit_deadline = never;
        return;
    }

    switch (wire::aeth_syndrome::nak_code_of(syndrome)) {
    case wire::nak_code::psn_sequence_error:
        ++_context.counters.packet_seq_err;
        if (_context.spec.retransmission == retransmission_mode::selective_repeat)
            _requester.resend_missing(qp, psn, requester::loss_evidence::sequence_nak);
        else
            _requester.rewind_to(qp, psn);
        return;
    case wire::nak_code::remote_access_error:
        ++_context.counters.req_remote_access_errors;
        fail_current(IBV_WC_REM_ACCESS_ERR);
        return;
    case wire::nak_code::remote_operational_error: fail_current(IBV_WC_REM_OP_ERR); return;
    case wire::nak_code::invalid_request:
    case wire::nak_code::invalid_rd_request:
    default:
        ++_context.counters.req_remote_invalid_request;
        fail_current(IBV_WC_REM_INV_REQ_ERR);
        return;
    }
}

bool completer::run_timers(queue_pair& qp, sim_time now) {
    const bool fired = check_transport_timer(qp, now);
    if (qp.completer.response_gap_deadline <= now) give_up_waiting_for_responses(qp, now);
    return fired;
}

sim_time completer::deadline(const queue_pair& qp) const {
    sim_time earliest = std::min(qp.completer.retransmit_deadline, qp.completer.response_gap_deadline);
    // A stopped transport timer with requests outstanding is re-armed by check_transport_timer().
    if (qp.type == IBV_QPT_RC && qp.completer.retransmit_deadline == never && qp.ack_timeout &&
        qp.requester.sq_retired != qp.requester.sq_started && (qp.state == IBV_QPS_RTS || qp.state == IBV_QPS_SQD))
        earliest = std::min(earliest, qp.requester.rnr_wait_until);
    return earliest;
}

bool completer::check_transport_timer(queue_pair& qp, sim_time now) {
    // IBA 9.7.6.1.3: the transport timer runs whenever requests are unacknowledged. Paths that
    // stop it (an RNR wait, a rewind that finds nothing to resend) must not leave it stopped, or
    // the QP waits for ever: re-arm it once any RNR wait is over.
    if (qp.completer.retransmit_deadline == never && qp.type == IBV_QPT_RC &&
        qp.requester.sq_retired != qp.requester.sq_started && now >= qp.requester.rnr_wait_until &&
        (qp.state == IBV_QPS_RTS || qp.state == IBV_QPS_SQD))
        _context.start_transport_timer(qp, now);
    if (qp.completer.retransmit_deadline > now) return false;
    if (qp.state != IBV_QPS_RTS && qp.state != IBV_QPS_SQD) {
        qp.completer.retransmit_deadline = never;
        return false;
    }
    if (qp.requester.sq_retired == qp.requester.sq_started) {
        qp.completer.retransmit_deadline = never;
        return false;
    }
    // IBA 9.7.6.1.3: the transport timer expired; resend from the oldest unacknowledged PSN,
    // at most retry_cnt times. Adaptive timeouts are shorter and more: they give up once
    // nothing moved on for as long as retry_cnt timeouts of the QP's own.
    ++_context.counters.local_ack_timeout_err;
    const bool adaptive = _context.spec.adaptive_retransmission;
    const bool exhausted = adaptive ? now - qp.completer.progress_at >= qp.ack_timeout * qp.attr.retry_cnt
                                    : qp.completer.retries_left == 0;
    if (exhausted) {
        qp.requester.started_work[qp.requester.sq_retired & (qp.send_size - 1)].status = IBV_WC_RETRY_EXC_ERR;
        _context.port.enter_error(qp, "transport retry count exceeded (no acknowledgement)");
        return true;
    }
    if (adaptive)
        qp.completer.adaptive.timed_out(_context.spec.adaptive_timeouts);
    else
        --qp.completer.retries_left;
    set_state(qp, completer_state::ready); // the retry an implied NAK started may itself be lost
    // Selective repeat resends only the oldest unacknowledged packet (IRN): the responder
    // holds what came after it, and names the next gap once that one is filled.
    if (_context.spec.retransmission == retransmission_mode::selective_repeat)
        _requester.resend_missing(qp, wire::psn_add(qp.completer.last_acked_psn, 1), requester::loss_evidence::timeout);
    else
        _requester.rewind_to(qp, wire::psn_add(qp.completer.last_acked_psn, 1));
    qp.completer.retransmit_deadline = _context.transport_deadline(qp, now);
    return true;
}

} // namespace rocefab::nic
