// The NIC-side objects behind the verbs: protection domains, memory regions, completion queues
// and queue pairs, with the state the transport engines keep for each. They are created and
// destroyed on the control path (allocation allowed) and used by the data path.
#pragma once

#include "dataplane/time.hpp"
#include "dataplane/wire/roce_frame.hpp"
#include "nic_emu/address_space.hpp"
#include "nic_emu/dcqcn.hpp"
#include "nic_emu/hw_abi.hpp"
#include "nic_emu/reorder_buffer.hpp"

#include <infiniband/verbs.h>

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

namespace rocefab::nic {

// A shared-memory mapping the NIC owns for the lifetime of a CQ or QP.
class shared_region {
public:
    shared_region() = default;
    shared_region(void* base, std::size_t length) : _base(base), _length(length) {}
    ~shared_region();
    shared_region(shared_region&& other) noexcept { *this = std::move(other); }
    shared_region& operator=(shared_region&& other) noexcept;
    shared_region(const shared_region&) = delete;
    shared_region& operator=(const shared_region&) = delete;

    // A memfd of `length` bytes mapped here, sealed against resizing; the descriptor is returned
    // for passing to the application, which maps the same pages. Returns false and sets errno
    // on failure.
    static bool create(const char* name, std::size_t length, shared_region& out, int& fd);

    void* base() const { return _base; }
    std::size_t length() const { return _length; }

private:
    void* _base = nullptr;
    std::size_t _length = 0;
};

struct context_state {
    std::uint32_t id = 0;
    std::unique_ptr<address_space> memory;
    int async_fd = -1; // write end; the application reads async_event_record from the other
    // The program's doorbell queue (hw::doorbell_queue): which QPs it posted work to. A context
    // without one (the traffic generator, tests) has its QPs looked at on every poll.
    shared_region doorbell_region;
    hw::doorbell_queue* doorbells = nullptr;
    std::uint32_t doorbells_taken = 0; // == doorbells->ring.consumer, kept privately
};

struct protection_domain {
    std::uint32_t handle = 0;
    std::uint32_t context = 0;
};

struct memory_region {
    std::uint32_t handle = 0;
    std::uint32_t context = 0;
    std::uint32_t pd = 0;
    std::uint64_t address = 0; // in the owner's address space
    std::uint64_t length = 0;
    std::uint64_t iova = 0;    // what remote addresses (RETH VA) are relative to
    std::uint32_t access = 0;  // enum ibv_access_flags
    std::uint32_t lkey = 0;
    std::uint32_t rkey = 0;
    address_space* memory = nullptr;
};

struct completion_queue {
    std::uint32_t handle = 0;
    std::uint32_t context = 0;
    shared_region region;
    hw::cq_control* control = nullptr;
    hw::cqe* slots = nullptr;
    std::uint32_t size = 0;
    int channel_fd = -1; // write end of the completion channel, or -1
    std::uint32_t channel = 0;
    bool in_error = false; // overflowed: IBA 11.4.2.1, the CQ is unusable
    std::uint32_t produced = 0; // the NIC's own producer index; the shared copy is only published
};

// An address handle (IBA 10.2.2): where UD sends go. The headers are resolved once, at
// creation; a send WQE names the handle and adds the destination QPN and Q_Key.
struct address_handle {
    std::uint32_t handle = 0;
    std::uint32_t context = 0;
    std::uint32_t pd = 0;
    ibv_ah_attr attr{};
    wire::roce_headers_spec headers;
};

// A shared receive queue (IBA 10.2.9): one receive ring the QPs created with it take WQEs from.
struct shared_receive_queue {
    std::uint32_t handle = 0;
    std::uint32_t context = 0;
    std::uint32_t pd = 0;
    shared_region region;
    hw::srq_control* control = nullptr;
    hw::recv_wqe* slots = nullptr;
    std::uint32_t size = 0;     // ring slots, a power of two
    std::uint32_t max_wr = 0;
    std::uint32_t max_sge = 0;
    std::uint32_t limit = 0;    // armed SRQ limit (IBA 10.2.9.4); 0 = not armed
    std::uint32_t consumed = 0; // == control->recv.consumer, kept privately
};

// What the requester keeps of a send WQE once it starts on it: a private copy (the application
// may scribble on the ring; what was validated stays what is sent) and its PSN range.
struct send_work {
    hw::send_wqe wqe;
    std::uint64_t length = 0;
    std::uint32_t first_psn = 0;
    std::uint32_t packets = 0;
    ibv_wc_status status = IBV_WC_SUCCESS; // set when the WQE itself failed
};

// As `rdma resource show qp` names them.
inline const char* qp_type_name(ibv_qp_type type) {
    return type == IBV_QPT_RC ? "RC" : type == IBV_QPT_UC ? "UC" : type == IBV_QPT_UD ? "UD" : "?";
}
inline const char* qp_state_name(ibv_qp_state state) {
    static constexpr const char* names[] = {"RESET", "INIT", "RTR", "RTS", "SQD", "SQE", "ERR"};
    return state >= IBV_QPS_RESET && state <= IBV_QPS_ERR ? names[state] : "?";
}

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
    bool pending = false;           // responses still to send
    // The pending responses answer a duplicate (C9-112/C9-113). The requester may be done with
    // the request already (a late duplicate, or a retry overtaken by the original responses), so
    // a replay does not count against max_dest_rd_atomic.
    bool replay = false;
};

inline constexpr std::uint32_t max_responder_resources = 16; // max_qp_rd_atom

struct queue_pair {
    std::uint32_t handle = 0;
    std::uint32_t context = 0;
    // In the NIC's list of QPs that may have work (nic_node::activate). A QP of a context
    // without a doorbell queue stays in it for its life.
    bool active = false;
    bool always_active = false;
    std::uint32_t qpn = 0;
    std::uint32_t pd = 0;
    ibv_qp_type type = IBV_QPT_RC;
    ibv_qp_state state = IBV_QPS_RESET;
    completion_queue* send_cq = nullptr;
    completion_queue* recv_cq = nullptr;
    bool sq_sig_all = false;
    ibv_qp_cap cap{};
    shared_receive_queue* srq = nullptr; // receive WQEs come from here when set

    shared_region region;
    hw::qp_control* control = nullptr;
    hw::send_wqe* send_slots = nullptr;
    hw::recv_wqe* recv_slots = nullptr;
    std::uint32_t send_size = 0; // ring slots, powers of two
    std::uint32_t recv_size = 0;

    // Attributes from ibv_modify_qp.
    ibv_qp_attr attr{};
    std::uint32_t mtu_bytes = 1024;
    sim_time ack_timeout = 0;  // 4.096 us * 2^timeout; 0 = wait forever (IBA 9.7.6.1.3)
    wire::roce_headers_spec headers; // addresses of the connection, filled at RTR
    // DCQCN (dcqcn.hpp): the QP's sending rate as a reaction point, and its CNP pacing as a
    // notification point. Set when the QP is created.
    std::optional<dcqcn_rate> rate;
    std::optional<dcqcn_notifier> notifier;

    // Requester (IBA 9.7): WQEs in [sq_retired, sq_started) have been started; of those,
    // sq_current is being sent, at byte sq_offset with next PSN next_psn.
    std::vector<nic::send_work> started_work;
    std::uint32_t sq_retired = 0; // == control->send.consumer, kept privately
    std::uint32_t sq_started = 0;
    std::uint32_t sq_current = 0;
    std::uint64_t sq_offset = 0;
    std::uint32_t next_psn = 0;
    std::uint32_t last_acked_psn = 0; // the PSN the responder last acknowledged
    std::uint32_t psn_frontier = 0;   // one past the highest PSN ever sent
    sim_time retransmit_deadline = never;
    sim_time rnr_wait_until = 0;
    unsigned retries_left = 0;
    unsigned rnr_retries_left = 0;
    bool implied_retry_started = false; // an implied NAK rewound the requester (rxe's started_retry)
    bool sqd_notify = false; // in SQD, IBV_EVENT_SQ_DRAINED is still to be raised
    // Responses that arrived past an unanswered READ/atomic (reorder_buffer.hpp): READ responses
    // and atomic ACKs are held, the furthest plain ACK is remembered, and only if the missing
    // responses are still missing at response_gap_deadline does the implied NAK ask again.
    reorder_buffer early_responses;
    sim_time response_gap_deadline = never;
    bool ack_waiting = false;
    std::uint32_t waiting_ack_psn = 0;
    std::uint32_t gap_evidence_psn = 0; // the furthest PSN seen past the gap

    // Responder (IBA 9.7.5): expected PSN, MSN, and the message in progress.
    std::uint32_t expected_psn = 0;
    std::uint32_t msn = 0;
    bool nak_outstanding = false; // a sequence NAK was sent and the gap is not filled yet
    // Requests that arrived ahead of a gap (reorder_buffer.hpp), and when the gap, if it is
    // still open, is reported with a sequence NAK.
    reorder_buffer early;
    sim_time gap_deadline = never;
    bool receiving = false;       // a multi-packet SEND is in progress into recv_work
    hw::recv_wqe recv_work{};
    std::uint64_t recv_offset = 0;
    bool writing = false;         // a multi-packet RDMA WRITE is in progress
    std::uint32_t write_rkey = 0;
    std::uint64_t write_va = 0;
    std::uint64_t write_remaining = 0;
    std::uint64_t write_total = 0;
    std::uint32_t rq_consumed = 0; // == control->recv.consumer, kept privately

    // UC responder (IBA 9.4 and 9.7.5.1.1, as rxe's drop_msg): after a PSN gap or a bad packet the rest of
    // the message is discarded until a FIRST or ONLY starts a new one. `receiving` then means
    // only that recv_work is held, to be reused by the next SEND (uc_send_in_progress is false).
    bool uc_dropping = false;
    bool uc_send_in_progress = false;
    // Responder resources for RDMA READ and atomics, oldest at rd_atomic_head.
    std::array<responder_resource, max_responder_resources> rd_atomic{};
    std::uint32_t rd_atomic_head = 0; // the next slot to fill
    // An ACK or NAK that must wait until the READ and atomic responses before it are out, so
    // that it does not acknowledge past them (the requester would take it as an implied NAK).
    bool ack_deferred = false;
    std::uint32_t deferred_ack_psn = 0;
    std::uint8_t deferred_ack_syndrome = 0;
};

} // namespace rocefab::nic
