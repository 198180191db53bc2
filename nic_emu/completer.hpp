// The completer (IBA 9.7.5.2 and rxe_comp.c): reads ACKs, NAKs, READ responses and atomic ACKs,
// retires acknowledged send WQEs into the send CQ, and owns the transport timer and the wait for
// READ/atomic responses a sprayed fabric delays. Its place in its state machine is
// qp.completer.state (engine_state.hpp); it rewinds the requester (go-back-N) directly.
#pragma once

#include "nic_emu/transport_context.hpp"

namespace rocefab::nic {

class requester;

class completer {
public:
    completer(transport_context& context, requester& requester) : _context(context), _requester(requester) {}
    completer(const completer&) = delete;
    completer& operator=(const completer&) = delete;

    // A response (ACK, NAK, READ response or atomic ACK) for `qp`, in the context's frame in hand.
    void handle(queue_pair& qp, const wire::parsed_roce& packet, sim_time now);
    // Called once the frame handle() was given is done with (the DMA batch's frame protocol
    // allows one frame in hand at a time): takes the held responses that now follow in order,
    // then the ACK that waited for them.
    void resume(queue_pair& qp, sim_time now);
    // The transport timer (IBA 9.7.6.1.3) and the wait for READ/atomic responses past a gap.
    // True when a timer fired.
    bool run_timers(queue_pair& qp, sim_time now);
    // When a timer of `qp`'s is next due (`never`: none armed).
    sim_time deadline(const queue_pair& qp) const;
    // Reports a send WQE's completion, if it is signalled or failed, after the data it reports.
    void complete_send(queue_pair& qp, const send_work& work, ibv_wc_status status);
    void set_state(queue_pair& qp, completer_state next) {
        _context.transition(qp, "completer", qp.completer.state, next);
    }

private:
    bool check_transport_timer(queue_pair& qp, sim_time now);
    // Retires the WQE at sq_retired (the oldest), keeping the requester off it.
    void retire_oldest(queue_pair& qp);
    void retire_acknowledged(queue_pair& qp, std::uint32_t acked_psn, sim_time now);
    // completer_read_atomic.cpp: READ responses and atomic ACKs (IBA 9.7.5.2, rxe_comp.c).
    void handle_read_atomic_response(queue_pair& qp, const wire::parsed_roce& packet, sim_time now);
    // Stops at an unfinished READ/atomic WQE: an acknowledgement at or past its next expected
    // response PSN means responses were lost (implied NAK, IBA 9.7.5.2.3). Returns true when
    // the requester was rewound for that reason.
    bool implied_nak(queue_pair& qp, std::uint32_t acked_psn, sim_time now);
    bool scatter_to_send_sges(queue_pair& qp, const hw::send_wqe& wqe, std::uint64_t offset, std::uint8_t* data,
                              std::size_t length);
    // Responses past a READ/atomic whose responses are missing.
    bool implied_gap(const queue_pair& qp, std::uint32_t acked_psn, std::uint32_t& resume) const;
    bool wait_for_missing_responses(queue_pair& qp, std::uint32_t acked_psn, const wire::parsed_roce* response,
                                    sim_time now);
    void give_up_waiting_for_responses(queue_pair& qp, sim_time now);

    transport_context& _context;
    requester& _requester;
};

} // namespace rocefab::nic
