// What the transport engines keep for each QP (IBA 9.7), one record an engine, as rxe keeps
// qp->req, qp->resp and qp->comp: the requester's, the completer's and the responder's. Each
// engine's place in its state machine is an explicit state with a name (for the debug trace of
// its transitions, each engine's set_state) instead of a set of flags; data that only means something
// in some states is an optional that holds it exactly then.
#pragma once

#include "dataplane/time.hpp"
#include "nic_emu/adaptive_retransmission.hpp"
#include "nic_emu/hw_abi.hpp"
#include "nic_emu/reorder_buffer.hpp"

#include <infiniband/verbs.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <optional>
#include <vector>

namespace rocefab::nic {

// What the requester keeps of a send WQE once it starts on it: a private copy (the application
// may scribble on the ring; what was validated stays what is sent) and its PSN range.
struct send_work {
    hw::send_wqe wqe;
    std::uint64_t length = 0;
    std::uint32_t first_psn = 0;
    std::uint32_t packets = 0;
    ibv_wc_status status = IBV_WC_SUCCESS; // set when the WQE itself failed
};

inline bool is_read_or_atomic(std::uint8_t wr_opcode) {
    return wr_opcode == IBV_WR_RDMA_READ || wr_opcode == IBV_WR_ATOMIC_CMP_AND_SWP ||
           wr_opcode == IBV_WR_ATOMIC_FETCH_AND_ADD;
}

// One responder resource (IBA 9.7.5.1.6, C9-112/C9-113; rxe's resp_res): what the responder
// remembers of an RDMA READ or atomic request, so that the responses go out in PSN order after
// the request was accepted, a duplicate READ is read again and a duplicate atomic is answered
// from the saved result instead of being executed twice.
struct responder_resource {
    enum class kind : std::uint8_t { none, read, atomic };
    kind type = kind::none;
    std::uint32_t first_psn = 0; // of the original request
    std::uint32_t packets = 0;   // PSNs the original request consumed
    // READ: the range being answered (the original's, or a duplicate's remaining part) and
    // how far the responses have gone.
    std::uint64_t va = 0;
    std::uint32_t rkey = 0;
    std::uint32_t length = 0;
    std::uint32_t sent = 0;
    std::uint32_t response_psn = 0; // PSN of the first response of the range being answered
    std::uint64_t original = 0;     // atomic: the value before the operation (host order)
    // The responses still to send (responder_record::pending_slots) answer a duplicate
    // (C9-112/C9-113). The requester may be done with the request already (a late duplicate, or
    // a retry overtaken by the original responses), so a replay does not count against
    // max_dest_rd_atomic.
    bool replay = false;
};

inline constexpr std::uint32_t max_responder_resources = 16; // max_qp_rd_atom

// The requester (IBA 9.7.4, rxe_req.c): how it stands towards the send queue's drain.
enum class requester_state : std::uint8_t {
    ready,    // sends what is posted, as the QP state allows
    draining, // in SQD with en_sqd_async_notify: IBV_EVENT_SQ_DRAINED once nothing started is outstanding
    drained,  // ... and raised it (IBA 10.3.1 SQ Drain; rxe's QP_STATE_DRAIN / DRAINED)
};
inline const char* state_name(requester_state state) {
    static constexpr const char* names[] = {"ready", "draining", "drained"};
    return names[static_cast<std::uint8_t>(state)];
}

// Selective repeat (retransmission_mode::selective_repeat; IRN's loss recovery): whether the
// requester is resending what the responder reported missing, and what started it. Go-back-N
// never leaves `none`.
enum class recovery_state : std::uint8_t {
    none,
    // A sequence NAK named a hole: the responder names each further hole with its own NAK once
    // a packet past it has waited out the reorder grace.
    after_nak,
    // The transport timer fired: everything before recovery_point was sent a timeout ago, so an
    // ACK that stops short of it names a lost packet (NewReno's partial ACK, RFC 6582).
    after_timeout,
};
inline const char* state_name(recovery_state state) {
    static constexpr const char* names[] = {"none", "after-nak", "after-timeout"};
    return names[static_cast<std::uint8_t>(state)];
}

// The packets selective repeat is to resend before anything new, oldest request first: a
// sequence NAK and an implied NAK (lost READ responses) may both ask before the requester runs.
class resend_queue {
public:
    static constexpr std::uint32_t capacity = 4;
    bool empty() const { return _count == 0; }
    bool full() const { return _count == capacity; }
    bool contains(std::uint32_t psn) const {
        return std::find(_psns.begin(), _psns.begin() + _count, psn) != _psns.begin() + _count;
    }
    void push(std::uint32_t psn) { _psns[_count++] = psn; } // not when full
    void push_front(std::uint32_t psn) {                    // not when full
        std::copy_backward(_psns.begin(), _psns.begin() + _count, _psns.begin() + _count + 1);
        _psns[0] = psn;
        ++_count;
    }
    std::uint32_t pop() { // not when empty
        const std::uint32_t psn = _psns[0];
        std::copy(_psns.begin() + 1, _psns.begin() + _count, _psns.begin());
        --_count;
        return psn;
    }
    void clear() { _count = 0; }

private:
    std::array<std::uint32_t, capacity> _psns{};
    std::uint32_t _count = 0;
};

struct requester_record {
    requester_state state = requester_state::ready;
    // WQEs in [sq_retired, sq_started) have been started; of those, sq_current is being sent, at
    // byte sq_offset with next PSN next_psn.
    std::vector<nic::send_work> started_work;
    std::uint32_t sq_retired = 0; // == control->send.consumer, kept privately
    // The send queue's producer index as the NIC last read it from the program's memory
    // (requester::read_posted). A program with a doorbell queue rings for every post after that
    // read (hw_abi.hpp's handshake), and taking the doorbell reads it again: a poll need not
    // reach into the program's memory, a cache line of its own, for each listed QP.
    std::uint32_t sq_posted = 0;
    std::uint32_t sq_started = 0;
    std::uint32_t sq_current = 0;
    std::uint64_t sq_offset = 0;
    std::uint32_t next_psn = 0;
    std::uint32_t psn_frontier = 0; // one past the highest PSN ever sent
    sim_time rnr_wait_until = 0;    // an RNR NAK holds the requester back until then
    // Selective repeat. While `recovery` is not none: the recovery ends once everything before
    // recovery_point (psn_frontier when it began) is acknowledged, and PSNs before resent_up_to
    // were resent in it already (a NAK for one again, a duplicate, resends nothing).
    recovery_state recovery = recovery_state::none;
    std::uint32_t recovery_point = 0;
    std::uint32_t resent_up_to = 0;
    resend_queue resends;
};

// The completer (IBA 9.7.5.2, rxe_comp.c): whether a retry it started is under way.
enum class completer_state : std::uint8_t {
    ready,
    // An implied NAK (IBA 9.7.5.2.3) rewound the requester to ask again for lost READ/atomic
    // responses: more evidence of the same loss is not a new loss, until a response or ACK moves
    // on or the transport timer fires (rxe's comp.started_retry).
    implied_retry,
};
inline const char* state_name(completer_state state) {
    static constexpr const char* names[] = {"ready", "implied-retry"};
    return names[static_cast<std::uint8_t>(state)];
}

struct completer_record {
    completer_state state = completer_state::ready;
    std::uint32_t last_acked_psn = 0;     // the PSN the responder last acknowledged
    sim_time retransmit_deadline = never; // the transport timer (IBA 9.7.6.1.3)
    unsigned retries_left = 0;
    // With adaptive retransmission (nic_spec): the timer's place in the profile, and when the
    // QP last moved on (or its timer started), which bounds how long it keeps trying.
    adaptive_timeout adaptive;
    sim_time progress_at = 0;
    unsigned rnr_retries_left = 0;
    // Responses that arrived past an unanswered READ/atomic (reorder_buffer.hpp): READ responses
    // and atomic ACKs are held, the furthest plain ACK waits in waiting_ack_psn, and only if the
    // missing responses are still missing at response_gap_deadline does the implied NAK ask again.
    // (The buffer last: what every look at the QP reads stays together above it.)
    sim_time response_gap_deadline = never;
    std::optional<std::uint32_t> waiting_ack_psn;
    std::uint32_t gap_evidence_psn = 0; // the furthest PSN seen past the gap
    reorder_buffer early_responses;
};

// The responder (IBA 9.7.5.1, rxe_resp.c): where it stands in the request stream.
enum class responder_state : std::uint8_t {
    in_sequence,
    // RC: a gap was reported with a PSN sequence NAK, and is not filled yet: one NAK per gap
    // (IBA 9.7.5.1.1, rxe's resp.sent_psn_nak).
    sequence_nak_sent,
    // UC: after a PSN gap or a bad packet the rest of the message is discarded until a FIRST or
    // ONLY starts a new one (IBA 9.4 and 9.7.5.1.1; rxe's resp.drop_msg).
    dropping_message,
};
inline const char* state_name(responder_state state) {
    static constexpr const char* names[] = {"in-sequence", "sequence-nak-sent", "dropping-message"};
    return names[static_cast<std::uint8_t>(state)];
}

// The responder's receive WQE (rxe's resp.wqe).
enum class receive_state : std::uint8_t {
    none,    // none taken
    held,    // taken and not being filled: RC between taking it and completing it; UC kept for the next SEND
    filling, // a multi-packet SEND is being placed into it
};
inline const char* state_name(receive_state state) {
    static constexpr const char* names[] = {"none", "held", "filling"};
    return names[static_cast<std::uint8_t>(state)];
}

// A multi-packet RDMA WRITE in progress (its RETH, checked when its FIRST arrived).
struct remote_write {
    std::uint32_t rkey = 0;
    std::uint64_t va = 0;
    std::uint64_t remaining = 0;
    std::uint64_t total = 0;
};

// An ACK or NAK that must wait until the READ and atomic responses before it are out, so that it
// does not acknowledge past them (the requester would take it as an implied NAK).
struct deferred_ack {
    std::uint32_t psn = 0;
    std::uint8_t syndrome = 0;
};

struct responder_record {
    responder_state state = responder_state::in_sequence;
    receive_state receive = receive_state::none;
    // Expected PSN, MSN, and the message in progress.
    std::uint32_t expected_psn = 0;
    std::uint32_t msn = 0;
    // What every request and every look at the QP reads comes first, together; the arrays
    // after it are read only when they hold something.
    // The stamp of the NIC's DMA batch while it holds writes for this QP, as responder or as
    // requester (dma_batch::writes_for): an acknowledgement waits for them.
    std::uint64_t dma_batch_stamp = 0;
    // When the gap before the requests in `early`, if it is still open, is reported with a
    // sequence NAK.
    sim_time gap_deadline = never;
    std::uint32_t rq_consumed = 0;    // == control->recv.consumer, kept privately
    std::uint32_t rd_atomic_head = 0; // the next slot of rd_atomic to fill
    // One bit per slot of rd_atomic: the resources with responses still to send. The responder
    // asks at every poll and deadline of every QP; looking through the 16 slots each time was
    // a fifth of `rocefab sim`'s instructions (callgrind, 16:1 incast).
    std::uint16_t pending_slots = 0;
    std::optional<nic::deferred_ack> deferred_ack;
    std::uint64_t recv_offset = 0;
    std::optional<remote_write> write;
    // Requests that arrived ahead of a gap (reorder_buffer.hpp).
    reorder_buffer early;
    hw::recv_wqe recv_work{}; // meaningful while `receive` is not none
    // Responder resources for RDMA READ and atomics, oldest at rd_atomic_head.
    std::array<responder_resource, max_responder_resources> rd_atomic{};
};

} // namespace rocefab::nic
