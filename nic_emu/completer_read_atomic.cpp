// The completer's RDMA READ and atomic side (IBA 9.7.5.2 and rxe_comp.c): scatters READ
// responses into the WQE's local buffers, writes an atomic's original value, completes the
// WQE, and detects lost responses: an acknowledgement or response whose PSN lies beyond an
// unanswered READ or atomic means its responses were lost (implied NAK, IBA 9.7.5.2.3), and
// the requester asks again from the first missing PSN.

#include "nic_emu/nic_node.hpp"

#include <algorithm>
#include <cstring>

namespace rocefab::nic {

bool nic_node::scatter_to_send_sges(queue_pair& qp, const hw::send_wqe& wqe, std::uint64_t offset,
                                    std::uint8_t* data, std::size_t length) {
    ibv_wc_status unused;
    return stage_scatter(qp, {wqe.sg_list, std::min<std::size_t>(wqe.num_sge, hw::max_sge)}, offset, data, length,
                         unused);
}

bool nic_node::implied_nak(queue_pair& qp, std::uint32_t acked_psn, sim_time now) {
    const std::uint32_t mask = qp.send_size - 1;
    for (std::uint32_t i = qp.sq_retired; i != qp.sq_started; ++i) {
        send_work& work = qp.started_work[i & mask];
        if (!is_read_or_atomic(work.wqe.opcode)) continue;
        // The first response PSN not received yet: responses are only accepted for the oldest
        // WQE, so a WQE behind others has received none.
        const std::uint32_t next_acked = wire::psn_add(qp.last_acked_psn, 1);
        const std::uint32_t resume =
            i == qp.sq_retired && wire::psn_diff(next_acked, work.first_psn) > 0 ? next_acked : work.first_psn;
        if (wire::psn_diff(acked_psn, resume) < 0) return false; // nothing skipped
        // Everything before the READ/atomic is acknowledged; its missing responses are asked for
        // again, once per loss (a retry in progress ignores the stale responses still coming).
        retire_acknowledged(qp, wire::psn_add(resume, wire::psn_mask), now);
        if (qp.implied_retry_started) return true;
        ++_counters.implied_nak_seq_err;
        if (qp.retries_left == 0) {
            qp.started_work[qp.sq_retired & mask].status = IBV_WC_RETRY_EXC_ERR;
            enter_error(qp);
            return true;
        }
        --qp.retries_left;
        qp.implied_retry_started = true;
        rewind_to(qp, resume);
        qp.retransmit_deadline = qp.ack_timeout ? now + qp.ack_timeout : never;
        return true;
    }
    return false;
}

void nic_node::handle_read_atomic_response(queue_pair& qp, const wire::parsed_roce& packet, sim_time now) {
    const std::uint32_t psn = packet.bth_header->psn();
    if (wire::psn_diff(psn, qp.psn_frontier) >= 0 || wire::psn_diff(psn, qp.last_acked_psn) <= 0) {
        ++_counters.duplicate_request; // a response already taken, or to nothing sent
        return;
    }
    // A response acknowledges every request before it (IBA 9.7.5.2.2), unless it skips
    // responses of an earlier READ/atomic.
    const std::uint32_t before = wire::psn_add(psn, wire::psn_mask);
    if (implied_nak(qp, before, now)) return;
    retire_acknowledged(qp, before, now);
    if (qp.state == IBV_QPS_ERR || qp.sq_retired == qp.sq_started) return;

    const std::uint32_t mask = qp.send_size - 1;
    send_work& work = qp.started_work[qp.sq_retired & mask];
    const std::int32_t into = wire::psn_diff(psn, work.first_psn);
    if (!is_read_or_atomic(work.wqe.opcode) || into < 0 || into >= static_cast<std::int32_t>(work.packets)) {
        ++_counters.port_rcv_errors; // a response to no READ or atomic
        return;
    }
    auto fail = [&](ibv_wc_status status) {
        work.status = status;
        enter_error(qp);
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
        auto* original = reinterpret_cast<std::uint8_t*>(const_cast<wire::atomic_ack_eth*>(packet.atomic_ack_eth_header));
        const std::uint64_t value = packet.atomic_ack_eth_header->original.load();
        std::memcpy(original, &value, sizeof value);
        if (!scatter_to_send_sges(qp, work.wqe, 0, original, sizeof value)) {
            ++_counters.local_protection_errors;
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
            ++_counters.local_protection_errors;
            fail(IBV_WC_LOC_PROT_ERR);
            return;
        }
    }
    qp.last_acked_psn = psn;
    qp.implied_retry_started = false;
    qp.retries_left = qp.attr.retry_cnt;
    qp.rnr_retries_left = qp.attr.rnr_retry;
    if (done) {
        retire_oldest(qp); // the completion follows the data
        complete_send(qp, work, IBV_WC_SUCCESS);
    }
    const bool outstanding = qp.sq_retired != qp.sq_started;
    qp.retransmit_deadline = outstanding && qp.ack_timeout ? now + qp.ack_timeout : never;
}

} // namespace rocefab::nic
