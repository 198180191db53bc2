// The responder (IBA 9.7.5.1 and rxe_resp.c): takes requests in PSN order, places their payload
// after the key, PD, bounds and access checks, consumes receive WQEs (its own ring or an SRQ's)
// and answers with ACKs, NAKs, READ responses and atomic ACKs; UC and UD receive here too
// (uc_ud_transport.cpp). Its places in its state machines are qp.responder.state and
// qp.responder.receive (engine_state.hpp). An ACK that would promise data not yet written waits
// for the DMA batch (dma_batch.hpp), which flush_dma() makes.
#pragma once

#include "nic_emu/transport_context.hpp"

namespace rocefab::nic {

class responder {
public:
    explicit responder(transport_context& context) : _context(context) {}
    responder(const responder&) = delete;
    responder& operator=(const responder&) = delete;

    // A request for `qp` (any transport), in the context's frame in hand.
    void handle(queue_pair& qp, const wire::parsed_roce& packet, sim_time now);
    // Called once the frame handle() was given is done with: takes the requests held ahead of a
    // gap that now follow in order (reorder_buffer.hpp).
    void resume(queue_pair& qp, sim_time now);
    // Sends the READ responses and atomic ACKs that are due, in PSN order, as the link allows.
    // Asked of every QP at every poll: the common answer, nothing to send, is given here.
    bool run(queue_pair& qp, sim_time now) {
        return (responses_pending(qp) || qp.responder.deferred_ack) && send_responses(qp, now);
    }
    // The sequence NAK of a gap that stayed open past reorder_grace. True when it sent one.
    bool run_timers(queue_pair& qp, sim_time now);
    sim_time deadline(const queue_pair& qp) const;
    bool responses_pending(const queue_pair& qp) const { return qp.responder.pending_slots != 0; }
    // Drops the requests `qp` holds ahead of gaps: it takes none any more.
    void release_early(queue_pair& qp);
    // Makes the staged writes, then posts the completions and sends the acknowledgements that
    // waited for them; a QP whose write failed gets error completions and its NAK instead.
    bool flush_dma();
    void set_state(queue_pair& qp, responder_state next) {
        _context.transition(qp, "responder", qp.responder.state, next);
    }
    void set_state(queue_pair& qp, receive_state next) {
        _context.transition(qp, "receive WQE", qp.responder.receive, next);
    }

private:
    bool send_responses(queue_pair& qp, sim_time now);
    void handle_request(queue_pair& qp, const wire::parsed_roce& packet, sim_time now);
    // Requests ahead of a PSN gap (reorder_buffer.hpp). A held frame stays out of receive()'s
    // hands through the context's current_frame_kept.
    bool hold_early(queue_pair& qp, const wire::parsed_roce& packet, std::uint32_t psn, std::int32_t distance,
                    sim_time now);
    void report_gap(queue_pair& qp, sim_time now); // the sequence NAK, once per gap
    // An ACK or NAK of a QP whose writes are still staged waits for them (dma_batch.hpp).
    void send_ack(queue_pair& qp, std::uint32_t psn, std::uint8_t syndrome, sim_time now);
    // Checks a RETH (RC and UC RDMA WRITE FIRST/ONLY) and starts the write; false (counted)
    // when the QP's access flags or the rkey do not allow it.
    bool begin_remote_write(queue_pair& qp, const wire::reth& reth);
    bool take_receive_wqe(queue_pair& qp);
    // A request's payload into a receive WQE; `psn` is the request's.
    bool write_payload_to_sges(queue_pair& qp, const hw::recv_wqe& wqe, std::uint64_t offset, const std::uint8_t* data,
                               std::size_t length, std::uint32_t psn, ibv_wc_status& status);
    // The first PSN of a message of `bytes` that ended at `last_psn`: every packet but the last
    // carries a whole MTU (IBA 9.7.5.1.3).
    static std::uint32_t first_psn_of(const queue_pair& qp, std::uint32_t last_psn, std::uint64_t bytes) {
        const std::uint64_t packets = bytes == 0 ? 1 : (bytes + qp.mtu_bytes - 1) / qp.mtu_bytes;
        return wire::psn_add(last_psn,
                             static_cast<std::uint32_t>((wire::psn_mask + 1 - (packets - 1)) & wire::psn_mask));
    }
    // uc_ud_transport.cpp: the unreliable transports (IBA 9.4 UC, 9.8 UD) and SRQ receive WQEs.
    void handle_uc_request(queue_pair& qp, const wire::parsed_roce& packet);
    void handle_ud_request(queue_pair& qp, const wire::parsed_roce& packet);
    bool take_srq_wqe(queue_pair& qp);
    // responder_read_atomic.cpp: RDMA READ and atomic requests (IBA 9.7.5.1.4-6, rxe_resp.c).
    void handle_read_atomic_request(queue_pair& qp, const wire::parsed_roce& packet, sim_time now);
    void handle_duplicate_read_atomic(queue_pair& qp, const wire::parsed_roce& packet, sim_time now);

    transport_context& _context;
    std::array<write_origin, dma_batch::max_segments> _failed_writes; // flush_dma's, kept to spare it the setup
};

} // namespace rocefab::nic
