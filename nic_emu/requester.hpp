// The requester (IBA 9.7.4 and rxe_req.c): turns send WQEs into request packets, one MTU at a
// time, with PSNs, paced by DCQCN and the port; the completer rewinds it (go-back-N) on a NAK or
// a timeout. Its place in its state machine is qp.requester.state (engine_state.hpp).
#pragma once

#include "nic_emu/transport_context.hpp"

namespace rocefab::nic {

class completer;

class requester {
public:
    requester(transport_context& context, completer& completer) : _context(context), _completer(completer) {}
    requester(const requester&) = delete;
    requester& operator=(const requester&) = delete;

    // Sends what `qp`'s send queue holds, as the window, the pacer and the port allow: one burst.
    // True when it did anything.
    bool run(queue_pair& qp, sim_time now);
    // When the requester of `qp` next has something to do: 0 at once, `never` when it waits for a
    // doorbell, an acknowledgement or a verb.
    sim_time deadline(const queue_pair& qp) const;
    // Go-back-N (IBA 9.7.5.2.8): resend from `psn`, which lies in a started WQE.
    void rewind_to(queue_pair& qp, std::uint32_t psn);
    // Selective repeat: why the requester takes a packet for missing at the responder.
    enum class loss_evidence : std::uint8_t {
        sequence_nak,      // the responder named it
        missing_responses, // a READ's or atomic's responses from it on are missing (implied NAK)
        partial_ack,       // an ACK stopped short of it in a recovery a timeout began
        timeout,           // the transport timer fired: it is the oldest unacknowledged
    };
    // Selective repeat: resend the packet `psn` alone, unless this recovery has resent it
    // already. For a READ, the request for what is missing of its responses from `psn` on.
    void resend_missing(queue_pair& qp, std::uint32_t psn, loss_evidence evidence);
    void set_state(queue_pair& qp, requester_state next) {
        _context.transition(qp, "requester", qp.requester.state, next);
    }
    // The send queue's producer index, read from the program's memory now and kept in
    // qp.requester.sq_posted: when the NIC takes a doorbell for `qp`, or flushes its queue.
    static std::uint32_t read_posted(queue_pair& qp) {
        return qp.requester.sq_posted = qp.control->send.producer.load(std::memory_order_acquire);
    }
    // The producer index the requester goes by: the one last read, unless no doorbell queue says
    // when it moves (poll_listing::always), and then the program's own, at every look.
    static std::uint32_t posted(const queue_pair& qp) {
        return qp.listing == poll_listing::always ? qp.control->send.producer.load(std::memory_order_acquire)
                                                  : qp.requester.sq_posted;
    }
    // In SQD with en_sqd_async_notify, every WQE started before the drain has completed: time for
    // IBV_EVENT_SQ_DRAINED (IBA 10.3.1).
    static bool drain_complete(const queue_pair& qp) {
        return qp.requester.state == requester_state::draining && qp.state == IBV_QPS_SQD &&
               qp.requester.sq_retired == qp.requester.sq_started;
    }

private:
    bool start_next_wqe(queue_pair& qp);
    // The started WQE that holds `psn`, and the byte offset of that packet in it.
    bool locate(const queue_pair& qp, std::uint32_t psn, std::uint32_t& wqe, std::uint64_t& offset) const;
    // `resend` asks for an acknowledgement of the packet whatever its place in the message: a
    // selectively resent packet may be the last the requester has to send for a while.
    bool prepare_packet(queue_pair& qp, sim_time now, gather_batch& batch, bool resend = false);
    // Adds the first pending selective resend to the burst, if it is still wanted, leaving the
    // send position as it was. False when no buffer was free (it stays pending).
    bool prepare_resend(queue_pair& qp, sim_time now, gather_batch& batch);
    bool prepare_read_atomic_request(queue_pair& qp, sim_time now, gather_batch& batch);
    void transmit_batch(queue_pair& qp, gather_batch& batch, sim_time now);
    // IBA 10.8.3.3 / 9.7.4.1.4: the WQE may not go out yet, because max_rd_atomic READ/atomic
    // requests are outstanding or it is fenced behind unfinished ones.
    bool must_wait(const queue_pair& qp, const hw::send_wqe& next) const;
    // uc_ud_transport.cpp: a UD send's addressing (IBA 9.8), and the retirement of UC and UD WQEs
    // once sent, which no acknowledgement follows.
    ibv_wc_status start_ud_send(queue_pair& qp, send_work& work);
    void retire_sent(queue_pair& qp);

    // The requester's window: at most this many packets sent and not yet acknowledged. With the
    // window full, only an ACK or the transport timer lets it go on.
    static constexpr std::uint32_t max_unacked_packets = 1024;
    // With selective repeat, no more than the responder can hold past a gap (IRN's BDP-FC,
    // ConnectX's roce_tx_window_en): a packet it has no room for is dropped, and would cost a
    // resend and a round trip of its own where go-back-N resends it anyway.
    bool window_full(const queue_pair& qp) const {
        const std::uint32_t window = _context.spec.retransmission == retransmission_mode::selective_repeat
                                         ? reorder_buffer::max_held
                                         : max_unacked_packets;
        return wire::psn_diff(qp.requester.next_psn, qp.completer.last_acked_psn) > static_cast<std::int32_t>(window);
    }
    // When DCQCN's pacer lets the QP's requester send again (0: not rate-limited). The rate
    // must have been advanced to now.
    static sim_time paced_until(const queue_pair& qp) { return qp.rate->limited() ? qp.rate->next_send_time() : 0; }
    // When the requester should look again: the pacer's time, or sooner if a rate increase is
    // due before it (the next frame may then go earlier).
    static sim_time pacer_wakeup(const queue_pair& qp) {
        return qp.rate->limited() ? std::min(qp.rate->next_send_time(), qp.rate->next_event()) : 0;
    }

    transport_context& _context;
    completer& _completer;
};

} // namespace rocefab::nic
