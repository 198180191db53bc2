// What the NIC's transport engines share, as rxe's requester, responder and completer share
// their rxe_dev: the counters, the DMA batch and the frame in hand, the packets held ahead of
// gaps, and a narrow way back to the NIC that holds them (transport_port) for what stays there:
// its port, its MR and CQ tables, a QP's move to the error state.
//
// Threading: the data-plane thread's, as the nic_node that owns it.
#pragma once

#include "dataplane/log.hpp"
#include "dataplane/time.hpp"
#include "dataplane/wire/roce_frame.hpp"
#include "nic_emu/counters.hpp"
#include "nic_emu/dma_batch.hpp"
#include "nic_emu/engine_state.hpp"
#include "nic_emu/nic_spec.hpp"
#include "nic_emu/reorder_buffer.hpp"
#include "nic_emu/resources.hpp"

#include <infiniband/verbs.h>

#include <array>
#include <span>
#include <string>

namespace rocefab::nic {

// How far ahead of the wire the NIC may queue frames on its port: a small transmit FIFO, so a
// poll loop that runs slower than one frame time still keeps the link busy.
inline constexpr sim_time transmit_fifo_time = microseconds(2);

// The NIC as its engines see it (nic_node implements it). Each call is one the NIC answers from
// state that is not any engine's: its memory regions, its completion queues and the QP table a
// CQ overflow walks.
class transport_port {
public:
    // Memory checks (IBA 10.6.3.3 and 9.7.5.1.4): the MR, if the key, PD, bounds and access fit.
    virtual const memory_region* local_mr(std::uint32_t lkey, std::uint32_t pd, std::uint64_t address,
                                          std::uint64_t length, std::uint32_t needed_access) const = 0;
    virtual const memory_region* remote_mr(std::uint32_t rkey, std::uint32_t pd, std::uint64_t va, std::uint64_t length,
                                           std::uint32_t needed_access) const = 0;
    virtual bool post_completion(completion_queue& cq, const hw::cqe& entry, bool solicited) = 0;
    // An affiliated asynchronous event for the program that opened `context` (IBA 11.6.3).
    virtual void raise_async_event(std::uint32_t context, ibv_event_type type, std::uint32_t handle) = 0;
    // `why` is logged (a QP the program moves to ERR itself at debug level, others as warnings).
    virtual void enter_error(queue_pair& qp, const char* why) = 0;
    // Makes the staged writes, then posts the completions and sends the acknowledgements that
    // waited for them (dma_batch.hpp).
    virtual bool flush_dma() = 0;
    // A send WQE failed: RC goes to ERR, UC and UD to SQE (IBA 10.3.1).
    virtual void fail_send_queue(queue_pair& qp) = 0;
    // The memory of the program that opened `context` (nullptr once it is closed).
    virtual address_space* context_memory(std::uint32_t context) const = 0;
    // The address handle a UD send names, if the NIC has it.
    virtual const address_handle* find_address_handle(std::uint32_t handle) const = 0;

    // The port. start_frame() writes the headers `spec` describes and points `payload` past them
    // (nullptr and counted when no buffer is free); finish_frame() seals the frame (ICRC,
    // padding) and sends it, or loops it back when it is for this NIC.
    virtual rte_mbuf* start_frame(const wire::roce_headers_spec& spec, std::size_t payload_length,
                                  std::uint8_t*& payload) = 0;
    virtual void finish_frame(rte_mbuf* frame, sim_time now) = 0;
    // How far ahead the port's transmit queue reaches.
    virtual sim_time link_busy_until() const = 0;
    // When received PFC lets `priority` send again (<= now: not paused).
    virtual sim_time paused_until(std::uint8_t priority) const = 0;

protected:
    ~transport_port() = default;
};

// The packets of one burst, whose payloads are copied from application memory with one
// process_vm_readv (see dma_batch.hpp for why): the requester's, and the READ responder's.
struct gather_batch {
    static constexpr std::size_t max_packets = 16;
    address_space* memory = nullptr;
    // Left uninitialised on purpose: only [0, segments) and [0, count) are ever read, and the
    // requester and the responder build one of these at every run(), whether or not they send.
    // Zeroing the 8 KiB of segments took over half of `rocefab sim`'s instructions (callgrind,
    // 16:1 incast).
    std::array<iovec, max_packets * hw::max_sge> local;
    std::array<iovec, max_packets * hw::max_sge> remote;
    std::size_t segments = 0;
    std::array<rte_mbuf*, max_packets> frames;
    std::array<std::uint32_t, max_packets> wqe_index;
    std::size_t count = 0;
};

struct transport_context {
    transport_context(transport_port& port_, const nic_spec& spec_, const std::string& nic_name_)
        : port(port_), spec(spec_), nic_name(nic_name_) {}
    transport_context(const transport_context&) = delete;
    transport_context& operator=(const transport_context&) = delete;

    transport_port& port;
    const nic_spec& spec;
    const std::string& nic_name; // the node's, for the traces
    // Beside the references above, on the line every packet reads: each receive() writes them.
    rte_mbuf* current_frame = nullptr; // the frame receive() is handling, for dma.hold()
    bool current_frame_kept = false;   // ... and now held in a reorder buffer
    sim_time latest = 0;               // the latest time receive() or poll() was given: when flush_dma() answers
    nic_counters counters;
    dma_batch dma;
    // Packets held ahead of gaps by all QPs (reorder_buffer.hpp): bounded so that reordering
    // cannot drain the packet pool.
    held_packet_store held;

    // How long a gap may stay open before the sequence NAK asks for what is missing: longer
    // than the skew of a sprayed fabric (and the 10 us of the lossy example's reorder_delay),
    // far shorter than any transport timeout.
    static constexpr sim_time reorder_grace = microseconds(20);

    // Runs `handle` with `frame` as the frame in hand (current_frame), then frees the frame
    // unless a reorder buffer kept it or the DMA batch still needs its payload. True when kept.
    template <typename Handle> bool handle_frame(rte_mbuf* frame, Handle&& handle) {
        current_frame = frame;
        handle();
        current_frame = nullptr;
        if (current_frame_kept) {
            current_frame_kept = false;
            return true;
        }
        if (!dma.holds(frame)) rte_pktmbuf_free(frame); // else freed once its payload is written
        return false;
    }

    // The transport timer (IBA 9.7.6.1.3), for an RC QP with requests outstanding: when it
    // expires if started `now`, with the QP's `timeout` or, with adaptive retransmission, the
    // adaptive one (adaptive_retransmission.hpp); never when the QP's timeout is 0 (for ever).
    sim_time transport_deadline(const queue_pair& qp, sim_time now) const {
        if (!qp.ack_timeout) return never;
        return now + (spec.adaptive_retransmission
                          ? qp.completer.adaptive.duration(qp.ack_timeout, spec.adaptive_timeouts)
                          : qp.ack_timeout);
    }
    // Starts the timer if it is stopped (the first request outstanding, or an RNR wait over).
    void start_transport_timer(queue_pair& qp, sim_time now) const {
        if (qp.completer.retransmit_deadline != never || !qp.ack_timeout) return;
        qp.completer.progress_at = now;
        qp.completer.retransmit_deadline = transport_deadline(qp, now);
    }
    // An acknowledgement or response moved the QP on: the timer restarts, or stops when nothing
    // is outstanding; an adaptive timeout comes down.
    void transport_progressed(queue_pair& qp, sim_time now) const {
        qp.completer.progress_at = now;
        if (spec.adaptive_retransmission) qp.completer.adaptive.progressed(spec.adaptive_timeouts);
        const bool outstanding = qp.requester.sq_retired != qp.requester.sq_started;
        qp.completer.retransmit_deadline = outstanding ? transport_deadline(qp, now) : never;
    }

    // The PFC priority frames with headers `h` travel in, by the NIC's trust mode: a QP's, kept
    // in queue_pair::priority.
    std::uint8_t priority_for(const wire::roce_headers_spec& h) const {
        return spec.trust_pcp ? h.pcp : spec.dscp_to_priority[h.dscp & 63];
    }

    // Stages `length` bytes of `data` for the local buffers `sges` describe, from byte `offset`
    // of them, after checking each piece's MR (local write access); status says why not.
    bool stage_scatter(queue_pair& qp, std::span<const hw::sge> sges, std::uint64_t offset, const std::uint8_t* data,
                       std::size_t length, ibv_wc_status& status, const write_origin& origin);
    // Posts `entry` once the writes staged before it are made (dma_batch.hpp); the message it
    // reports took the PSNs first_psn to last_psn.
    void stage_completion(queue_pair& qp, completion_queue& cq, const hw::cqe& entry, bool solicited,
                          std::uint32_t first_psn, std::uint32_t last_psn);

    // An engine's state changes here, each change traced at debug level; with the level off it
    // costs a comparison, so the data path may call it per packet.
    template <typename State>
    void transition(const queue_pair& qp, const char* engine, State& state, State next) const {
        if (state == next) return;
        if (log::nic().should_log(spdlog::level::debug)) [[unlikely]]
            log::nic().debug("{}: QP {:#x} {}: {} -> {}", nic_name, qp.qpn, engine, state_name(state),
                             state_name(next));
        state = next;
    }
};

} // namespace rocefab::nic
