// The NIC-side objects behind the verbs: protection domains, memory regions, completion queues
// and queue pairs, with the state the transport engines keep for each. They are created and
// destroyed on the control path (allocation allowed) and used by the data path.
#pragma once

#include "dataplane/time.hpp"
#include "dataplane/wire/roce_frame.hpp"
#include "nic_emu/address_space.hpp"
#include "nic_emu/dcqcn.hpp"
#include "nic_emu/engine_state.hpp"
#include "nic_emu/hw_abi.hpp"

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
    std::uint64_t iova = 0;   // what remote addresses (RETH VA) are relative to
    std::uint32_t access = 0; // enum ibv_access_flags
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
    bool in_error = false;      // overflowed: IBA 11.4.2.1, the CQ is unusable
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
    std::uint32_t size = 0; // ring slots, a power of two
    std::uint32_t max_wr = 0;
    std::uint32_t max_sge = 0;
    std::uint32_t limit = 0;    // armed SRQ limit (IBA 10.2.9.4); 0 = not armed
    std::uint32_t consumed = 0; // == control->recv.consumer, kept privately
};

// As `rdma resource show qp` names them.
inline const char* qp_type_name(ibv_qp_type type) {
    return type == IBV_QPT_RC ? "RC" : type == IBV_QPT_UC ? "UC" : type == IBV_QPT_UD ? "UD" : "?";
}
inline const char* qp_state_name(ibv_qp_state state) {
    static constexpr const char* names[] = {"RESET", "INIT", "RTR", "RTS", "SQD", "SQE", "ERR"};
    return state >= IBV_QPS_RESET && state <= IBV_QPS_ERR ? names[state] : "?";
}

// Whether a QP is in the NIC's list of QPs that may have work (nic_node::activate): poll() looks
// only at those, so that idle QPs cost nothing.
enum class poll_listing : std::uint8_t {
    idle,   // not listed: a doorbell, a frame or a verb lists it
    listed, // until qp_deadline() says it waits for nothing
    always, // for its life: its context has no doorbell queue to say when it has work
};

struct queue_pair {
    std::uint32_t handle = 0;
    std::uint32_t context = 0;
    poll_listing listing = poll_listing::idle;
    // The PFC priority its frames travel in (transport_context::priority_for its headers), kept
    // here, on the line every poll reads, whenever the headers change.
    std::uint8_t priority = 0;
    std::uint32_t qpn = 0;
    std::uint32_t pd = 0;
    ibv_qp_type type = IBV_QPT_RC;
    ibv_qp_state state = IBV_QPS_RESET; // set through nic_node::set_qp_state, which traces it
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
    sim_time ack_timeout = 0;        // 4.096 us * 2^timeout; 0 = wait forever (IBA 9.7.6.1.3)
    wire::roce_headers_spec headers; // addresses of the connection, filled at RTR
    // DCQCN (dcqcn.hpp): the QP's sending rate as a reaction point, and its CNP pacing as a
    // notification point. Set when the QP is created.
    std::optional<dcqcn_rate> rate;
    std::optional<dcqcn_notifier> notifier;

    // The transport engines' own state (IBA 9.7).
    requester_record requester;
    completer_record completer;
    responder_record responder;
};

} // namespace rocefab::nic
