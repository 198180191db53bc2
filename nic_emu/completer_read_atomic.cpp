// The completer's RDMA READ and atomic side (IBA 9.7.5.2 and rxe_comp.c): scatters READ
// responses into the WQE's local buffers, writes an atomic's original value, completes the
// WQE, and detects lost responses: an acknowledgement or response whose PSN lies beyond an
// unanswered READ or atomic means its responses were lost (implied NAK, IBA 9.7.5.2.3), and
// the requester asks again from the first missing PSN.

#include "nic_emu/completer.hpp"

#include "nic_emu/requester.hpp"

#include <algorithm>
#include <cstring>

namespace rocefab::nic {

bool completer::scatter_to_send_sges(queue_pair& qp, const hw::send_wqe& wqe, std::uint64_t offset, std::uint8_t* data,
                                     std::size_t length) {
    ibv_wc_status unused;
    return _context.stage_scatter(qp, {wqe.sg_list, std::min<std::size_t>(wqe.num_sge, hw::max_sge)}, offset, data,
                                  length, unused, write_origin::local(qp));
}

bool completer::implied_gap(const queue_pair& qp, std::uint32_t acked_psn, std::uint32_t& resume) const {
    const std::uint32_t mask = qp.send_size - 1;
    for (std::uint32_t i = qp.requester.sq_retired; i != qp.requester.sq_started; ++i) {
        const send_work& work = qp.requester.started_work[i & mask];
        if (!is_read_or_atomic(work.wqe.opcode)) continue;
        // The first response PSN not received yet: responses are only accepted for the oldest
        // WQE, so a WQE behind others has received none.
        const std::uint32_t next_acked = wire::psn_add(qp.completer.last_acked_psn, 1);
        resume = i == qp.requester.sq_retired && wire::psn_diff(next_acked, work.first_psn) > 0 ? next_acked
                                                                                                : work.first_psn;
        return wire::psn_diff(acked_psn, resume) >= 0;
    }
    return false;
}

bool completer::implied_nak(queue_pair& qp, std::uint32_t acked_psn, sim_time now) {
    std::uint32_t resume;
    if (!implied_gap(qp, acked_psn, resume)) return false; // nothing skipped
    // Everything before the READ/atomic is acknowledged; its missing responses are asked for
    // again, once per loss (a retry in progress ignores the stale responses still coming).
    retire_acknowledged(qp, wire::psn_add(resume, wire::psn_mask), now);
    if (qp.completer.state == completer_state::implied_retry) return true;
    ++_context.counters.implied_nak_seq_err;
    if (qp.completer.retries_left == 0) {
        qp.requester.started_work[qp.requester.sq_retired & (qp.send_size - 1)].status = IBV_WC_RETRY_EXC_ERR;
        _context.port.enter_error(qp, "transport retry count exceeded (READ or atomic responses missing)");
        return true;
    }
    --qp.completer.retries_left;
    set_state(qp, completer_state::implied_retry);
    // Selective repeat asks again for the missing responses alone: the requests after the READ
    // or atomic reached the responder, and what came back for them is held here.
    if (_context.spec.retransmission == retransmission_mode::selective_repeat)
        _requester.resend_missing(qp, resume, requester::loss_evidence::missing_responses);
    else
        _requester.rewind_to(qp, resume);
    qp.completer.retransmit_deadline = _context.transport_deadline(qp, now);
    return true;
}

bool completer::wait_for_missing_responses(queue_pair& qp, std::uint32_t acked_psn, const wire::parsed_roce* response,
                                           sim_time now) {
    // A response or ACK past an unanswered READ/atomic: lost responses, or ones a sprayed fabric
    // delays. Like a ConnectX with out-of-order placement, wait reorder_grace for them before the
    // implied NAK asks again; a retry already under way is left to implied_nak().
    std::uint32_t resume;
    // Selective repeat holds on during the retry too: it asked again only for the missing
    // responses, so nothing else would bring back what arrives past them (go-back-N asks for it
    // all again, and drops it here).
    const bool retrying = qp.completer.state == completer_state::implied_retry &&
                          _context.spec.retransmission == retransmission_mode::go_back_n;
    if (retrying || !implied_gap(qp, acked_psn, resume)) return false;
    if (qp.completer.response_gap_deadline == never)
        qp.completer.response_gap_deadline = now + transport_context::reorder_grace;
    else if (qp.completer.response_gap_deadline <= now)
        return false; // waited long enough
    if (!qp.completer.waiting_ack_psn && !qp.completer.early_responses.held())
        qp.completer.gap_evidence_psn = acked_psn;
    if (wire::psn_diff(acked_psn, qp.completer.gap_evidence_psn) > 0) qp.completer.gap_evidence_psn = acked_psn;
    if (!response) {
        // An ACK: it acknowledges everything before it, which it may do once the gap is filled.
        std::optional<std::uint32_t>& waiting = qp.completer.waiting_ack_psn;
        if (!waiting || wire::psn_diff(acked_psn, *waiting) > 0) waiting = acked_psn;
        return true;
    }
    const std::uint32_t psn = wire::psn_add(acked_psn, 1);
    if (wire::psn_diff(psn, resume) >= reorder_buffer::max_distance) return false;
    if (qp.completer.early_responses.contains(_context.held, psn)) {
        ++_context.counters.duplicate_request;
        return true;
    }
    if (!qp.completer.early_responses.hold(_context.held, psn, _context.current_frame, *response)) return false;
    _context.current_frame_kept = true;
    return true;
}

void completer::resume(queue_pair& qp, sim_time now) {
    // Called by receive() once the frame it handled is done with (the DMA batch's frame protocol
    // allows one frame in hand at a time): the held responses that now follow in order are taken,
    // then the ACK that waited, which may find another gap and wait again.
    bool progressed = false;
    // The next response is not always at last_acked + 1: requests between two READs (a SEND, a
    // WRITE) take PSNs that only an ACK or the next response acknowledges.
    held_packet e;
    std::uint32_t next, resume;
    while (qp.state != IBV_QPS_ERR &&
           qp.completer.early_responses.earliest(_context.held, qp.completer.last_acked_psn, next) &&
           !implied_gap(qp, wire::psn_add(next, wire::psn_mask), resume) &&
           qp.completer.early_responses.take(_context.held, next, e)) {
        _context.handle_frame(e.frame, [&] { handle_read_atomic_response(qp, e.packet, now); });
        progressed = true;
    }
    if (qp.state == IBV_QPS_ERR) return;
    if (qp.completer.waiting_ack_psn && !implied_gap(qp, *qp.completer.waiting_ack_psn, resume)) {
        const std::uint32_t acked = *qp.completer.waiting_ack_psn;
        qp.completer.waiting_ack_psn.reset();
        progressed = true;
        if (wire::psn_diff(acked, qp.completer.last_acked_psn) > 0) retire_acknowledged(qp, acked, now);
    }
    if (!qp.completer.early_responses.held() && !qp.completer.waiting_ack_psn &&
        !implied_gap(qp, qp.completer.gap_evidence_psn, resume))
        qp.completer.response_gap_deadline = never; // every gap filled
    else if (progressed || (qp.completer.response_gap_deadline == never &&
                            _context.spec.retransmission == retransmission_mode::selective_repeat))
        // What is still missing gets its own grace. Selective repeat kept what arrived past a gap
        // it gave up on: a second gap behind it needs a deadline of its own once the first fills.
        qp.completer.response_gap_deadline = now + transport_context::reorder_grace;
}

void completer::give_up_waiting_for_responses(queue_pair& qp, sim_time now) {
    qp.completer.response_gap_deadline = never;
    // Go-back-N asks for everything after the gap again; selective repeat only for what is
    // missing, so what arrived past it is kept for when the gap fills.
    if (_context.spec.retransmission == retransmission_mode::go_back_n) {
        qp.completer.early_responses.release_all(_context.held);
        qp.completer.waiting_ack_psn.reset();
    }
    if (qp.state != IBV_QPS_RTS && qp.state != IBV_QPS_SQD) return;
    // The missing responses did not come: what arrived past them says they were lost.
    implied_nak(qp, qp.completer.gap_evidence_psn, now);
}

void completer::handle_read_atomic_response(queue_pair& qp, const wire::parsed_roce& packet, sim_time now) {
    const std::uint32_t psn = packet.bth_header->psn();
    if (wire::psn_diff(psn, qp.requester.psn_frontier) >= 0 || wire::psn_diff(psn, qp.completer.last_acked_psn) <= 0) {
        ++_context.counters.duplicate_request; // a response already taken, or to nothing sent
        return;
    }
    // A response acknowledges every request before it (IBA 9.7.5.2.2), unless it skips
    // responses of an earlier READ/atomic.
    const std::uint32_t before = wire::psn_add(psn, wire::psn_mask);
    if (wait_for_missing_responses(qp, before, &packet, now)) return;
    if (implied_nak(qp, before, now)) return;
    retire_acknowledged(qp, before, now);
    if (qp.state == IBV_QPS_ERR || qp.requester.sq_retired == qp.requester.sq_started) return;

    const std::uint32_t mask = qp.send_size - 1;
    send_work& work = qp.requester.started_work[qp.requester.sq_retired & mask];
    const std::int32_t into = wire::psn_diff(psn, work.first_psn);
    if (!is_read_or_atomic(work.wqe.opcode) || into < 0 || into >= static_cast<std::int32_t>(work.packets)) {
        ++_context.counters.port_rcv_errors; // a response to no READ or atomic
        return;
    }
    auto fail = [&](ibv_wc_status status) {
        work.status = status;
        _context.port.enter_error(qp, "a READ response or atomic acknowledgement could not be delivered");
    };
    const wire::opcode_info& op = *packet.info;
    const bool atomic_wqe = work.wqe.opcode != IBV_WR_RDMA_READ;
    if (atomic_wqe != op.has(wire::opcode_mask::atomic_ack_eth)) {
        fail(IBV_WC_BAD_RESP_ERR);
        return;
    }
    bool done;
    if (atomic_wqe) {
        // The original value goes to the local buffer in host order; the frame, held until
        // the write, carries it.
        auto* original =
            reinterpret_cast<std::uint8_t*>(const_cast<wire::atomic_ack_eth*>(packet.atomic_ack_eth_header));
        const std::uint64_t value = packet.atomic_ack_eth_header->original.load();
        std::memcpy(original, &value, sizeof value);
        if (!scatter_to_send_sges(qp, work.wqe, 0, original, sizeof value)) {
            ++_context.counters.local_protection_errors;
            fail(IBV_WC_LOC_PROT_ERR);
            return;
        }
        done = true;
    } else {
        // IBA 9.7.5.2.4: FIRST/MIDDLE carry a full MTU, LAST/ONLY the rest, in PSN order.
        done = into == static_cast<std::int32_t>(work.packets) - 1;
        const std::uint64_t offset = std::uint64_t(into) * qp.mtu_bytes;
        const std::uint64_t expected = done ? work.length - offset : qp.mtu_bytes;
        const bool opcode_ok = done ? op.has(wire::opcode_mask::last) || op.has(wire::opcode_mask::only)
                                    : op.has(wire::opcode_mask::first) || op.has(wire::opcode_mask::middle);
        if (!opcode_ok || packet.payload_length != expected) {
            fail(IBV_WC_BAD_RESP_ERR);
            return;
        }
        if (expected && !scatter_to_send_sges(qp, work.wqe, offset, const_cast<std::uint8_t*>(packet.payload),
                                              packet.payload_length)) {
            ++_context.counters.local_protection_errors;
            fail(IBV_WC_LOC_PROT_ERR);
            return;
        }
    }
    qp.completer.last_acked_psn = psn;
    set_state(qp, completer_state::ready);
    qp.completer.retries_left = qp.attr.retry_cnt;
    qp.completer.rnr_retries_left = qp.attr.rnr_retry;
    if (done) {
        retire_oldest(qp); // the completion follows the data
        complete_send(qp, work, IBV_WC_SUCCESS);
    }
    _context.transport_progressed(qp, now);
}

} // namespace rocefab::nic
