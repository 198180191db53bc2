// The requester (IBA 9.7.4 and rxe_req.c): turns send WQEs into request packets, one MTU at a
// time, with PSNs; go-back-N rewinds it when the completer sees a NAK or a timeout. RDMA READ
// and atomic requests are one packet each, and at most max_rd_atomic of them are outstanding.

#include "nic_emu/requester.hpp"

#include "dataplane/link.hpp"
#include "nic_emu/completer.hpp"

#include <algorithm>
#include <cstring>

namespace rocefab::nic {

namespace {

using wire::ib_opcode;

// Request packets the requester may have unacknowledged at once; the ACK-request bit is set on
// every message's last packet and at least this often, so the completer can free the window.
constexpr std::uint32_t ack_request_interval = 64;

std::uint64_t message_length(const hw::send_wqe& wqe) {
    if (wqe.flags & hw::wqe_flag::inline_data) return wqe.inline_length;
    std::uint64_t total = 0;
    for (unsigned i = 0; i < wqe.num_sge; ++i) total += wqe.sg_list[i].length;
    return total;
}

ib_opcode packet_opcode(std::uint8_t wr_opcode, bool first, bool last) {
    const bool only = first && last;
    switch (wr_opcode) {
    case IBV_WR_SEND:
        return only    ? ib_opcode::rc_send_only
               : first ? ib_opcode::rc_send_first
               : last  ? ib_opcode::rc_send_last
                       : ib_opcode::rc_send_middle;
    case IBV_WR_SEND_WITH_IMM:
        return only    ? ib_opcode::rc_send_only_with_immediate
               : first ? ib_opcode::rc_send_first
               : last  ? ib_opcode::rc_send_last_with_immediate
                       : ib_opcode::rc_send_middle;
    case IBV_WR_RDMA_WRITE:
        return only    ? ib_opcode::rc_rdma_write_only
               : first ? ib_opcode::rc_rdma_write_first
               : last  ? ib_opcode::rc_rdma_write_last
                       : ib_opcode::rc_rdma_write_middle;
    default: // IBV_WR_RDMA_WRITE_WITH_IMM
        return only    ? ib_opcode::rc_rdma_write_only_with_immediate
               : first ? ib_opcode::rc_rdma_write_first
               : last  ? ib_opcode::rc_rdma_write_last_with_immediate
                       : ib_opcode::rc_rdma_write_middle;
    }
}

// UC carries the same SEND and WRITE opcodes as RC, 0x20 above them (IBA 9.2.1 Table 39); a UD
// message is one packet, SEND ONLY (with immediate).
std::uint8_t transport_opcode(ibv_qp_type type, ib_opcode rc_opcode) {
    if (type == IBV_QPT_UC) return static_cast<std::uint8_t>(wire::to_byte(rc_opcode) + 0x20);
    if (type == IBV_QPT_UD)
        return wire::to_byte(rc_opcode == ib_opcode::rc_send_only_with_immediate
                                 ? ib_opcode::ud_send_only_with_immediate
                                 : ib_opcode::ud_send_only);
    return wire::to_byte(rc_opcode);
}

} // namespace

bool requester::run(queue_pair& qp, sim_time now) {
    if (qp.state != IBV_QPS_RTS && qp.state != IBV_QPS_SQD) return false;
    if (now < qp.requester.rnr_wait_until) return false;
    qp.rate->advance(now); // a rate increase due by now counts for this burst
    // UC and UD expect no acknowledgement: a WQE is done once its last packet is sent.
    const bool retire_when_sent = qp.type != IBV_QPT_RC;
    // Nothing to resend and no WQE posted that has not started: the loop below would find that
    // out after asking the port, and every poll of the NIC runs every QP.
    if (qp.requester.resends.empty() && qp.requester.sq_current == qp.requester.sq_started &&
        posted(qp) == qp.requester.sq_started) {
        if (retire_when_sent) retire_sent(qp);
        return false;
    }
    bool did_work = false;
    gather_batch batch;
    // The port's transmit FIFO: what is already on the link plus what this burst adds.
    sim_time link_free = std::max(_context.port.link_busy_until(), now);
    while (batch.count < gather_batch::max_packets) {
        if (link_free > now + transmit_fifo_time) break;
        if (paced_until(qp) > now) break; // DCQCN: the QP's rate, not the port's, limits it
        if (!qp.requester.resends.empty()) {
            // Selective repeat: what the responder reported missing goes before anything new, and
            // inside the window it already counts in.
            const std::size_t before = batch.count;
            const bool prepare_failed = !prepare_resend(qp, now, batch);
            if (qp.state == IBV_QPS_ERR || qp.state == IBV_QPS_SQE) break;
            if (batch.count == before) {
                if (prepare_failed) break; // no buffer: try again on the next poll
                continue;                  // acknowledged meanwhile: nothing to resend
            }
            const std::uint32_t wire_bytes = rte_pktmbuf_data_len(batch.frames[batch.count - 1]) + wire_overhead_bytes;
            link_free += serialization_time(wire_bytes, _context.spec.speed_bps);
            qp.rate->on_sent(wire_bytes, now);
            did_work = true;
            continue;
        }
        if (qp.requester.sq_current == qp.requester.sq_started) {
            if (qp.state == IBV_QPS_SQD) break; // drained: no new WQE starts
            if (!start_next_wqe(qp)) break;
            did_work = true;
            if (qp.state == IBV_QPS_ERR || qp.state == IBV_QPS_SQE) break;
        }
        if (window_full(qp)) break;
        if (must_wait(qp, qp.requester.started_work[qp.requester.sq_current & (qp.send_size - 1)].wqe)) break;
        if (!prepare_packet(qp, now, batch)) break;
        const std::uint32_t wire_bytes = rte_pktmbuf_data_len(batch.frames[batch.count - 1]) + wire_overhead_bytes;
        link_free += serialization_time(wire_bytes, _context.spec.speed_bps);
        qp.rate->on_sent(wire_bytes, now);
        did_work = true;
    }
    transmit_batch(qp, batch, now);
    if (retire_when_sent && qp.state != IBV_QPS_ERR) retire_sent(qp);
    return did_work;
}

sim_time requester::deadline(const queue_pair& qp) const {
    const requester_record& req = qp.requester;
    const std::uint32_t send_posted = posted(qp);
    // In ERR and SQE what is posted is flushed (IBA 10.3.1); in SQD the drain may be complete.
    if (qp.state == IBV_QPS_ERR) return send_posted != req.sq_retired ? 0 : never;
    if (drain_complete(qp)) return 0;
    if (qp.state == IBV_QPS_SQE) return send_posted != req.sq_retired ? 0 : never;
    if (qp.state != IBV_QPS_RTS && qp.state != IBV_QPS_SQD) return never;
    if (!req.resends.empty()) // a selective resend waits for nothing but the port, PFC and the pacer
        return std::max({req.rnr_wait_until, _context.port.link_busy_until() - transmit_fifo_time,
                         _context.port.paused_until(qp.priority), pacer_wakeup(qp)});
    if (req.sq_current == req.sq_started && send_posted == req.sq_started) return never;
    // A requester waiting for READ/atomic responses (max_rd_atomic, fence) or for ACKs (a full
    // window) has nothing to do until one arrives.
    const std::uint32_t mask = qp.send_size - 1;
    const hw::send_wqe& next = req.sq_current != req.sq_started ? req.started_work[req.sq_current & mask].wqe
                                                                : qp.send_slots[req.sq_started & mask];
    if (must_wait(qp, next) || window_full(qp)) return never;
    return std::max({req.rnr_wait_until, _context.port.link_busy_until() - transmit_fifo_time,
                     _context.port.paused_until(qp.priority), pacer_wakeup(qp)});
}

bool requester::start_next_wqe(queue_pair& qp) {
    const std::uint32_t producer = posted(qp);
    if (producer == qp.requester.sq_started) return false;
    if (producer - qp.requester.sq_retired > qp.send_size) {
        // The application moved its producer index past the ring: its own queue is corrupt.
        _context.port.enter_error(qp, "the program moved its send queue's producer index past the ring");
        return true;
    }
    send_work& work = qp.requester.started_work[qp.requester.sq_started & (qp.send_size - 1)];
    work.wqe = qp.send_slots[qp.requester.sq_started & (qp.send_size - 1)]; // the private copy
    hw::send_wqe& wqe = work.wqe;
    if (qp.sq_sig_all) wqe.flags |= hw::wqe_flag::signaled;
    work.first_psn = qp.requester.next_psn;
    work.packets = 1;
    work.length = 0;
    ++qp.requester.sq_started;

    work.status = IBV_WC_SUCCESS;
    auto fail = [&](ibv_wc_status status) {
        // The WQE completes with this status and takes the QP to the error state (IBA
        // 10.8.3.1); flush() reports it, after those before it.
        work.status = status;
        qp.requester.sq_current = qp.requester.sq_started;
        _context.port.fail_send_queue(qp);
        return true;
    };

    switch (wqe.opcode) {
    case IBV_WR_SEND:
    case IBV_WR_SEND_WITH_IMM:
    case IBV_WR_RDMA_WRITE:
    case IBV_WR_RDMA_WRITE_WITH_IMM:
    case IBV_WR_RDMA_READ:
    case IBV_WR_ATOMIC_CMP_AND_SWP:
    case IBV_WR_ATOMIC_FETCH_AND_ADD: break;
    default:
        // Memory windows, local invalidate and the rest: the NIC does not claim them in its
        // capabilities and rejects the WQE as hardware rejects an opcode the QP cannot carry.
        return fail(IBV_WC_LOC_QP_OP_ERR);
    }
    // READ responses and atomic results are written into the local buffers (IBA 10.6.3.3).
    const bool read_or_atomic = is_read_or_atomic(wqe.opcode);
    // IBA 9.4 (Table 38): UC carries SEND and RDMA WRITE only, UD SEND only.
    if (read_or_atomic && qp.type != IBV_QPT_RC) return fail(IBV_WC_LOC_QP_OP_ERR);
    const std::uint32_t local_access = read_or_atomic ? IBV_ACCESS_LOCAL_WRITE : 0;
    if (read_or_atomic && (wqe.flags & hw::wqe_flag::inline_data)) return fail(IBV_WC_LOC_QP_OP_ERR);
    if (wqe.flags & hw::wqe_flag::inline_data) {
        if (wqe.inline_length > qp.cap.max_inline_data) return fail(IBV_WC_LOC_LEN_ERR);
    } else {
        if (wqe.num_sge > qp.cap.max_send_sge) return fail(IBV_WC_LOC_LEN_ERR);
        for (unsigned i = 0; i < wqe.num_sge; ++i) {
            const hw::sge& s = wqe.sg_list[i];
            if (s.length == 0) continue;
            if (!_context.port.local_mr(s.lkey, qp.pd, s.address, s.length, local_access)) {
                ++_context.counters.local_protection_errors;
                return fail(IBV_WC_LOC_PROT_ERR);
            }
        }
    }
    work.length = message_length(wqe);
    if (work.length > (1ull << 31)) return fail(IBV_WC_LOC_LEN_ERR);
    if (qp.type == IBV_QPT_UD) {
        if (const ibv_wc_status status = start_ud_send(qp, work); status != IBV_WC_SUCCESS) return fail(status);
    }
    if (wqe.opcode == IBV_WR_ATOMIC_CMP_AND_SWP || wqe.opcode == IBV_WR_ATOMIC_FETCH_AND_ADD) {
        // The original 64-bit value lands in the first 8 bytes of the local buffer.
        if (work.length < 8) return fail(IBV_WC_LOC_LEN_ERR);
        work.length = 8;
    }
    work.packets =
        std::max<std::uint32_t>(1, static_cast<std::uint32_t>((work.length + qp.mtu_bytes - 1) / qp.mtu_bytes));
    qp.requester.next_psn = wire::psn_add(work.first_psn, 0);
    qp.requester.sq_offset = 0;
    return true;
}

bool requester::must_wait(const queue_pair& qp, const hw::send_wqe& next) const {
    const bool fenced = next.flags & hw::wqe_flag::fence;
    if (!fenced && !is_read_or_atomic(next.opcode)) return false;
    // ConnectX takes max_rd_atomic 0 as 1 (mlx5 encodes log2 of it); so does this NIC.
    const std::uint32_t limit = std::clamp<std::uint32_t>(qp.attr.max_rd_atomic, 1, max_responder_resources);
    std::uint32_t outstanding = 0;
    for (std::uint32_t i = qp.requester.sq_retired; i != qp.requester.sq_current; ++i) {
        if (!is_read_or_atomic(qp.requester.started_work[i & (qp.send_size - 1)].wqe.opcode)) continue;
        if (fenced || ++outstanding >= limit) return true;
    }
    return false;
}

bool requester::prepare_read_atomic_request(queue_pair& qp, sim_time now, gather_batch& batch) {
    send_work& work = qp.requester.started_work[qp.requester.sq_current & (qp.send_size - 1)];
    const hw::send_wqe& wqe = work.wqe;
    const std::uint32_t psn = qp.requester.next_psn;
    wire::roce_headers_spec& spec = qp.headers;
    spec.psn = psn;
    spec.ack_request = true;
    spec.solicited = false;
    std::uint32_t packets = 1;
    if (wqe.opcode == IBV_WR_RDMA_READ) {
        // IBA 9.7.4.1.4: one request, whose responses take one PSN per MTU. A retry after
        // lost responses asks only for what is missing, from the PSN it would have had.
        const std::uint64_t remaining = work.length - qp.requester.sq_offset;
        spec.opcode = wire::to_byte(ib_opcode::rc_rdma_read_request);
        spec.reth_va = wqe.remote_address + qp.requester.sq_offset;
        spec.reth_rkey = wqe.rkey;
        spec.reth_length = static_cast<std::uint32_t>(remaining);
        packets = std::max<std::uint32_t>(1, static_cast<std::uint32_t>((remaining + qp.mtu_bytes - 1) / qp.mtu_bytes));
    } else {
        // IBA 9.7.4.1.5: AtomicETH; compare_add is the compare value of a CAS and the addend
        // of a fetch-and-add, as in ibv_send_wr.
        const bool cas = wqe.opcode == IBV_WR_ATOMIC_CMP_AND_SWP;
        spec.opcode = wire::to_byte(cas ? ib_opcode::rc_compare_swap : ib_opcode::rc_fetch_add);
        spec.atomic_va = wqe.remote_address;
        spec.atomic_rkey = wqe.rkey;
        spec.atomic_swap_add = cas ? wqe.swap : wqe.compare_add;
        spec.atomic_compare = cas ? wqe.compare_add : 0;
    }
    std::uint8_t* out = nullptr;
    rte_mbuf* frame = _context.port.start_frame(spec, 0, out);
    if (!frame) return false;
    batch.frames[batch.count] = frame;
    batch.wqe_index[batch.count] = qp.requester.sq_current;
    ++batch.count;

    if (wire::psn_diff(psn, qp.requester.psn_frontier) < 0) ++_context.counters.retransmitted_packets;
    qp.requester.next_psn = wire::psn_add(psn, packets);
    if (wire::psn_diff(qp.requester.next_psn, qp.requester.psn_frontier) > 0)
        qp.requester.psn_frontier = qp.requester.next_psn;
    ++qp.requester.sq_current;
    qp.requester.sq_offset = 0;
    _context.start_transport_timer(qp, now);
    return true;
}

bool requester::prepare_packet(queue_pair& qp, sim_time now, gather_batch& batch, bool resend) {
    send_work& work = qp.requester.started_work[qp.requester.sq_current & (qp.send_size - 1)];
    if (is_read_or_atomic(work.wqe.opcode)) return prepare_read_atomic_request(qp, now, batch);
    const hw::send_wqe& wqe = work.wqe;
    const std::uint64_t payload = std::min<std::uint64_t>(qp.mtu_bytes, work.length - qp.requester.sq_offset);
    const bool first = qp.requester.sq_offset == 0;
    const bool last = qp.requester.sq_offset + payload >= work.length;
    const std::uint32_t psn = qp.requester.next_psn;

    wire::roce_headers_spec& spec = qp.headers;
    spec.opcode = transport_opcode(qp.type, packet_opcode(wqe.opcode, first, last));
    spec.psn = psn;
    spec.ack_request = qp.type == IBV_QPT_RC && (last || resend || (psn % ack_request_interval) == 0);
    spec.solicited = last && (wqe.flags & hw::wqe_flag::solicited);
    const bool is_write = wqe.opcode == IBV_WR_RDMA_WRITE || wqe.opcode == IBV_WR_RDMA_WRITE_WITH_IMM;
    if (is_write && first) {
        spec.reth_va = wqe.remote_address;
        spec.reth_rkey = wqe.rkey;
        spec.reth_length = static_cast<std::uint32_t>(work.length);
    }
    spec.immediate = be32toh(wqe.immediate);

    std::uint8_t* out = nullptr;
    rte_mbuf* frame = _context.port.start_frame(spec, payload, out);
    if (!frame) return false;

    if (wqe.flags & hw::wqe_flag::inline_data) {
        std::memcpy(out, wqe.inline_bytes + qp.requester.sq_offset, payload);
    } else if (payload) {
        // Gather [offset, offset + payload) of the message from its SGEs, checking each MR
        // again: it may have been deregistered since the WQE started. The copy itself is
        // made for the whole burst at once (transmit_batch).
        std::uint64_t skip = qp.requester.sq_offset, left = payload, written = 0;
        for (unsigned i = 0; i < wqe.num_sge && left; ++i) {
            const hw::sge& s = wqe.sg_list[i];
            if (skip >= s.length) {
                skip -= s.length;
                continue;
            }
            const std::uint64_t take = std::min<std::uint64_t>(s.length - skip, left);
            const memory_region* mr = _context.port.local_mr(s.lkey, qp.pd, s.address + skip, take, 0);
            if (!mr || (batch.memory && batch.memory != mr->memory)) {
                rte_pktmbuf_free(frame);
                ++_context.counters.local_protection_errors;
                work.status = IBV_WC_LOC_PROT_ERR;
                qp.requester.sq_current = qp.requester.sq_started;
                _context.port.fail_send_queue(qp);
                return false;
            }
            batch.memory = mr->memory;
            batch.local[batch.segments] = {out + written, take};
            batch.remote[batch.segments] = {reinterpret_cast<void*>(s.address + skip), take};
            ++batch.segments;
            written += take;
            left -= take;
            skip = 0;
        }
    }
    batch.frames[batch.count] = frame;
    batch.wqe_index[batch.count] = qp.requester.sq_current;
    ++batch.count;

    if (wire::psn_diff(psn, qp.requester.psn_frontier) < 0) ++_context.counters.retransmitted_packets;
    if (wqe.opcode == IBV_WR_SEND || wqe.opcode == IBV_WR_SEND_WITH_IMM)
        ++_context.counters.rdma_sends;
    else
        ++_context.counters.rdma_writes;

    qp.requester.next_psn = wire::psn_add(psn, 1);
    if (wire::psn_diff(qp.requester.next_psn, qp.requester.psn_frontier) > 0)
        qp.requester.psn_frontier = qp.requester.next_psn;
    qp.requester.sq_offset += payload;
    if (last) {
        ++qp.requester.sq_current;
        qp.requester.sq_offset = 0;
    }
    _context.start_transport_timer(qp, now);
    return true;
}

void requester::transmit_batch(queue_pair& qp, gather_batch& batch, sim_time now) {
    if (batch.count == 0) return;
    if (batch.segments &&
        !batch.memory->read({batch.local.data(), batch.segments}, {batch.remote.data(), batch.segments})) {
        // The registered memory is gone (the process died or unmapped it): nothing of the burst
        // can be sent, and the WQE it started with completes in error (IBA 10.8.3.1).
        for (std::size_t i = 0; i < batch.count; ++i) rte_pktmbuf_free(batch.frames[i]);
        ++_context.counters.memory_access_faults;
        // The WQEs after it in the burst lost their packets with it: they are flushed.
        const std::uint32_t mask = qp.send_size - 1;
        qp.requester.started_work[batch.wqe_index[0] & mask].status = IBV_WC_LOC_PROT_ERR;
        for (std::uint32_t i = batch.wqe_index[0] + 1; i != qp.requester.sq_started; ++i)
            qp.requester.started_work[i & mask].status = IBV_WC_WR_FLUSH_ERR;
        qp.requester.sq_current = qp.requester.sq_started;
        _context.port.fail_send_queue(qp);
        return;
    }
    for (std::size_t i = 0; i < batch.count; ++i) _context.port.finish_frame(batch.frames[i], now);
}

bool requester::locate(const queue_pair& qp, std::uint32_t psn, std::uint32_t& wqe, std::uint64_t& offset) const {
    for (std::uint32_t i = qp.requester.sq_retired; i != qp.requester.sq_started; ++i) {
        const send_work& work = qp.requester.started_work[i & (qp.send_size - 1)];
        const std::int32_t into = wire::psn_diff(psn, work.first_psn);
        if (into >= 0 && into < static_cast<std::int32_t>(work.packets)) {
            wqe = i;
            offset = std::uint64_t(into) * qp.mtu_bytes;
            return true;
        }
    }
    return false;
}

void requester::resend_missing(queue_pair& qp, std::uint32_t psn, loss_evidence evidence) {
    requester_record& req = qp.requester;
    std::uint32_t wqe;
    std::uint64_t offset;
    // Not sent yet (a go-back-N fallback rewound the requester before it), or not started
    // (acknowledged already): nothing to resend.
    if (wire::psn_diff(psn, req.next_psn) >= 0 || !locate(qp, psn, wqe, offset)) return;
    // An ACK short of a READ or atomic says nothing of its responses: the implied NAK asks for them.
    if (evidence == loss_evidence::partial_ack &&
        is_read_or_atomic(req.started_work[wqe & (qp.send_size - 1)].wqe.opcode))
        return;
    if (req.resends.contains(psn)) return;
    if (req.resends.full()) {
        rewind_to(qp, psn); // asked for more at once than the queue holds: go back instead
        return;
    }
    // Lost responses are found in their own order, not the request gaps' (an earlier READ's may
    // be found missing after a later request was NAKed): the completer's implied_retry state
    // asks once per loss, and the recovery's bookkeeping is left alone.
    if (evidence == loss_evidence::missing_responses) {
        req.resends.push(psn);
        return;
    }
    const bool timed_out = evidence == loss_evidence::timeout;
    // One resend per packet per recovery: the responder names its gaps in PSN order, so a NAK
    // (or its duplicate) for a PSN before resent_up_to asks again for what was resent. Only a
    // timeout, which means the resend itself may be lost, resends it again.
    if (req.recovery != recovery_state::none && !timed_out && wire::psn_diff(psn, req.resent_up_to) < 0) return;
    if (req.recovery == recovery_state::none || timed_out) {
        _context.transition(qp, "recovery", req.recovery,
                            timed_out ? recovery_state::after_timeout : recovery_state::after_nak);
        req.recovery_point = req.psn_frontier;
    }
    req.resent_up_to = wire::psn_add(psn, 1);
    req.resends.push(psn);
}

bool requester::prepare_resend(queue_pair& qp, sim_time now, gather_batch& batch) {
    requester_record& req = qp.requester;
    const std::uint32_t psn = req.resends.pop();
    std::uint32_t wqe;
    std::uint64_t offset;
    // Acknowledged since it was asked for, or sent again in order by a go-back-N fallback.
    if (wire::psn_diff(psn, qp.completer.last_acked_psn) <= 0 || wire::psn_diff(psn, req.next_psn) >= 0 ||
        !locate(qp, psn, wqe, offset))
        return true;
    const std::uint32_t sq_current = req.sq_current, next_psn = req.next_psn;
    const std::uint64_t sq_offset = req.sq_offset;
    req.sq_current = wqe;
    req.sq_offset = offset;
    req.next_psn = psn;
    const bool prepared = prepare_packet(qp, now, batch, true);
    if (qp.state == IBV_QPS_ERR || qp.state == IBV_QPS_SQE) return true; // the send queue failed: no position to keep
    req.sq_current = sq_current;
    req.sq_offset = sq_offset;
    req.next_psn = next_psn;
    if (!prepared) req.resends.push_front(psn); // no buffer free: the next poll tries again
    return prepared;
}

void requester::rewind_to(queue_pair& qp, std::uint32_t psn) {
    // Go-back-N (IBA 9.7.5.2.8): resend from `psn`, which lies in a started WQE.
    std::uint32_t wqe;
    std::uint64_t offset;
    if (locate(qp, psn, wqe, offset)) {
        qp.requester.sq_current = wqe;
        qp.requester.sq_offset = offset;
        qp.requester.next_psn = psn;
        return;
    }
    // A PSN before every started WQE was acknowledged already (a stale NAK): resending from
    // the frontier would skip a WQE started but not sent yet, whose first PSN then goes to the
    // next one too. Stay where the requester is.
    if (qp.requester.sq_retired != qp.requester.sq_started &&
        wire::psn_diff(psn, qp.requester.started_work[qp.requester.sq_retired & (qp.send_size - 1)].first_psn) < 0)
        return;
    // Nothing started is unacknowledged: carry on from the frontier.
    qp.requester.sq_current = qp.requester.sq_started;
    qp.requester.sq_offset = 0;
    qp.requester.next_psn = qp.requester.psn_frontier;
}

} // namespace rocefab::nic
