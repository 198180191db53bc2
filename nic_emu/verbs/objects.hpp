// The library's objects: what a verbs handle points at. Shared by verbs.cpp (the classic
// verbs) and extended.cpp (ibv_create_cq_ex, ibv_qp_ex and the ibv_wr_* calls, query_device_ex).
#pragma once

#include "dataplane/wake_flag.hpp"
#include "nic_emu/attach_protocol.hpp"
#include "nic_emu/hw_abi.hpp"
#include "nic_emu/verbs/command_channel.hpp"

#include <infiniband/verbs.h>

#include <cstddef>
#include <cstring>
#include <atomic>
#include <map>
#include <mutex>
#include <vector>
#include <sys/mman.h>
#include <unistd.h>

namespace rocefab::verbs {

// ---- objects ---------------------------------------------------------------------------

struct rf_device {
    ibv_device device; // first: ibv_device* converts back with a cast
    attach::device_info info;
    int index;
};

struct rf_context;

struct rf_pd {
    ibv_pd pd;
};

struct rf_mr {
    ibv_mr mr;
};

struct rf_channel {
    ibv_comp_channel channel;
    std::uint32_t handle;
};

struct rf_cq {
    // An ibv_cq_ex begins with the fields of an ibv_cq: one object serves both APIs.
    union {
        ibv_cq cq;
        ibv_cq_ex ex;
    };
    hw::cq_control* control = nullptr;
    hw::cqe* slots = nullptr;
    std::uint32_t slot_count = 0;
    std::size_t map_length = 0;
    std::mutex poll_lock;                 // ibv_poll_cq may be called from several threads
    std::atomic<unsigned> empty_polls{0}; // a hint only: polling threads race on it harmlessly
    bool ex_current = false;              // start_poll/next_poll left a CQE current, consumed by the next call
};

struct rf_qp {
    // An ibv_qp_ex begins with an ibv_qp (qp_base): one object serves both APIs.
    union {
        ibv_qp qp;
        ibv_qp_ex ex;
    };
    bool extended = false;         // created with IBV_QP_INIT_ATTR_SEND_OPS_FLAGS
    std::uint32_t wr_producer = 0; // ibv_wr_*: where the next WQE goes, published by wr_complete
    hw::send_wqe* wr_current = nullptr;
    int wr_error = 0;
    hw::qp_control* control = nullptr;
    hw::send_wqe* send_slots = nullptr;
    hw::recv_wqe* recv_slots = nullptr;
    // The rings' sizes, kept here: the shared copies are the program's to scribble on, and a
    // scribbled size must not send the library's own reads out of the ring.
    std::uint32_t send_slot_count = 0, recv_slot_count = 0;
    std::size_t map_length = 0;
    ibv_qp_cap cap{};
    bool sq_sig_all = false;
    std::mutex send_lock; // serialises producers of the send ring
    std::mutex recv_lock; // serialises producers of the receive ring
};

struct rf_srq {
    ibv_srq srq; // first: ibv_srq* converts back with a cast
    hw::srq_control* control = nullptr;
    hw::recv_wqe* slots = nullptr;
    std::uint32_t slot_count = 0; // as rf_qp's
    std::size_t map_length = 0;
    std::uint32_t max_wr = 0;
    std::uint32_t max_sge = 0;
    std::mutex lock; // serialises producers of the shared ring
};

struct rf_ah {
    ibv_ah ah;
};

struct rf_context {
    verbs_context verbs; // first: context_of() depends on it // ibv_context must be last inside it; verbs.h finds
                         // verbs_context by offset
    attach::device_info info;
    verbs::command_channel channel;
    std::mutex objects_lock;
    std::map<std::uint32_t, rf_cq*> cqs; // for completion and async events
    std::map<std::uint32_t, rf_qp*> qps;
    std::map<std::uint32_t, rf_srq*> srqs; // for SRQ async events
    // Telling the NIC about new work (hw_abi.hpp's doorbell queue, wake_flag.hpp): the QPs with
    // work go into the doorbell queue, and the data plane is woken through this context's own
    // eventfd when the wake page says it sleeps.
    const wake_flag* wake = nullptr; // the data plane's page, mapped read-only
    hw::doorbell_queue* doorbells = nullptr;
    int doorbell_fd = -1;
    std::mutex doorbell_lock;                      // serialises producers of the doorbell queue
    std::map<std::uint32_t, rf_channel*> channels; // for completion events when the device dies
    // The daemon plays the device; when it is gone the device is dead (device_fatal.cpp).
    std::atomic<bool> dead{false};
    std::mutex death_lock;
    std::atomic<std::int64_t> next_liveness_check{0}; // CLOCK_MONOTONIC_COARSE nanoseconds
    std::vector<int> dead_device_pipes;               // write ends standing in for the daemon's
};

// device_fatal.cpp. What a program sees when the device dies, as with a ConnectX that dies: an
// IBV_EVENT_DEVICE_FATAL, every outstanding work request completed with a flush error (and the
// completion events of armed CQs), and every verb after that failing. Idempotent; any thread.
void device_died(rf_context* ctx);
// A cheap look whether the daemon is still there, made at most every 10 ms: false once the
// device is dead (and device_died has run).
bool device_alive(rf_context* ctx);
// Reads one event record from a completion channel or the async descriptor. End of file means
// the daemon, which held the other end, is gone: the dead device's last events take the
// descriptor's place, and those are read. False if no whole record came, with errno EINTR
// when a signal interrupted the wait.
bool read_event(rf_context* ctx, int fd, void* record, std::size_t length);

// After publishing WQEs on `qp`'s rings (a release store of the producer): queues the QP for
// the NIC, once however much is posted until the NIC takes it, and wakes the data plane.
inline void notify_nic(rf_context* ctx, rf_qp* qp) {
    if (hw::claim_doorbell(*qp->control)) {
        std::lock_guard guard(ctx->doorbell_lock);
        hw::push_doorbell(*ctx->doorbells, qp->qp.handle);
    }
    ring(*ctx->wake, ctx->doorbell_fd);
}

// rf_context holds a mutex and a map, so it is not standard-layout; `verbs` is its first member
// and sits at offset 0 regardless, which is all this relies on.
inline rf_context* context_of(ibv_context* c) {
    return reinterpret_cast<rf_context*>(reinterpret_cast<char*>(c) - offsetof(verbs_context, context));
}
inline rf_cq* cq_of(ibv_cq* c) { return reinterpret_cast<rf_cq*>(c); }
inline rf_qp* qp_of(ibv_qp* q) { return reinterpret_cast<rf_qp*>(q); }

// Sends a command; returns 0 or the errno value of the transport or of the verb.
// What undoes an object: on a dead device it succeeds, so that a program can free what it held
// (as the kernel lets a program destroy the objects of a disassociated device).
inline bool destroys(attach::op code) {
    using attach::op;
    return code == op::dealloc_pd || code == op::dereg_mr || code == op::destroy_comp_channel ||
           code == op::destroy_cq || code == op::destroy_qp || code == op::destroy_ah || code == op::destroy_srq;
}

// Sends a command; returns 0 or the errno value of the verb. Once the device is dead, EIO
// (and 0 for what destroys an object).
// `send_fds` ride along with the request.
inline int command(ibv_context* context, attach::request& request, attach::reply& reply, int* fd = nullptr,
                   std::span<const int> send_fds = {}) {
    rf_context* ctx = context_of(context);
    if (fd) *fd = -1;
    if (!ctx->dead.load(std::memory_order_acquire)) {
        if (!ctx->channel.call(request, reply, send_fds, fd ? std::span<int>(fd, 1) : std::span<int>()))
            return reply.status;
        device_died(ctx); // the daemon's end of the command channel is gone
    }
    return destroys(request.code) ? 0 : EIO;
}

inline attach::request make_request(attach::op code, std::uint32_t handle = 0) {
    attach::request r;
    std::memset(&r, 0, sizeof r);
    r.code = code;
    r.handle = handle;
    return r;
}

inline void* map_shared(int fd, std::size_t length, int protection = PROT_READ | PROT_WRITE) {
    void* p = ::mmap(nullptr, length, protection, MAP_SHARED, fd, 0);
    ::close(fd);
    return p == MAP_FAILED ? nullptr : p;
}

// Shared by the classic and the extended constructors.
rf_cq* create_cq_object(ibv_context* context, int cqe, void* cq_context, ibv_comp_channel* channel, int comp_vector);
rf_qp* create_qp_object(ibv_pd* pd, ibv_qp_init_attr* init);
// The verbs_context entries of extended.cpp.
void install_extended_ops(verbs_context& context);

} // namespace rocefab::verbs
