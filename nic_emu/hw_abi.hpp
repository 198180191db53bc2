// The "hardware" interface between the verbs library (the provider) and the emulated NIC:
// work-queue and completion rings in shared memory, as a ConnectX exposes WQE and CQE rings
// to mlx5. The library writes send and receive WQEs and reads CQEs; the NIC engine reads WQEs
// and writes CQEs. Nothing here is trusted by the NIC: every index, count and length read from
// a ring is checked before use, because the other side is an arbitrary program.
//
// Ordering (rdma-core's rxe_queue.h does the same): a producer fills a slot, then publishes it
// with a release store of `producer`; a consumer reads `producer` with acquire, reads the slot,
// then frees it with a release store of `consumer`.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace rocefab::hw {

inline constexpr std::uint32_t abi_version = 1;

inline constexpr std::uint32_t max_sge = 16;
inline constexpr std::uint32_t max_inline_data = 256;
inline constexpr std::uint32_t max_queue_depth = 16384; // max_qp_wr and max_srq_wr
// max_cqe as a ConnectX-5/6 reports it (2^22 - 1): stacks size CQs for every peer they may have
// (libfabric's ofi_rxm asks 262144 entries). A ring's memory is only touched where CQEs land.
inline constexpr std::uint32_t max_cqe = (1u << 22) - 1;
inline constexpr std::uint32_t cache_line = 64;

struct ring_header {
    alignas(cache_line) std::atomic<std::uint32_t> producer;
    alignas(cache_line) std::atomic<std::uint32_t> consumer;
    alignas(cache_line) std::uint32_t size; // slots, a power of two; fixed at creation
    std::uint32_t slot_size;
};
static_assert(std::atomic<std::uint32_t>::is_always_lock_free);

struct sge {
    std::uint64_t address;
    std::uint32_t length;
    std::uint32_t lkey;
};
static_assert(sizeof(sge) == 16);

namespace wqe_flag {
inline constexpr std::uint8_t signaled = 1 << 0;
inline constexpr std::uint8_t solicited = 1 << 1;
inline constexpr std::uint8_t inline_data = 1 << 2;
inline constexpr std::uint8_t fence = 1 << 3;
} // namespace wqe_flag

// One send queue slot. `opcode` holds an enum ibv_wr_opcode value.
struct send_wqe {
    std::uint64_t wr_id;
    std::uint8_t opcode;
    std::uint8_t flags;
    std::uint8_t num_sge;
    std::uint8_t reserved0;
    std::uint32_t immediate; // network order, as ibv_send_wr::imm_data
    std::uint64_t remote_address;
    std::uint32_t rkey;
    std::uint32_t inline_length;
    std::uint64_t compare_add;
    std::uint64_t swap;
    std::uint32_t ud_ah; // UD: address handle id
    std::uint32_t ud_remote_qpn;
    std::uint32_t ud_remote_qkey;
    std::uint32_t reserved1;
    union {
        sge sg_list[max_sge];
        std::uint8_t inline_bytes[max_inline_data];
    };
};
static_assert(sizeof(send_wqe) == 64 + 256);

struct recv_wqe {
    std::uint64_t wr_id;
    std::uint32_t num_sge;
    std::uint32_t reserved;
    sge sg_list[max_sge];
};
static_assert(sizeof(recv_wqe) == 16 + 256);

// One completion. Field meanings follow struct ibv_wc.
struct cqe {
    std::uint64_t wr_id;
    std::uint32_t status; // enum ibv_wc_status
    std::uint32_t opcode; // enum ibv_wc_opcode
    std::uint32_t vendor_err;
    std::uint32_t byte_len;
    std::uint32_t immediate; // network order
    std::uint32_t qp_num;
    std::uint32_t src_qp;
    std::uint32_t wc_flags;
    std::uint16_t pkey_index;
    std::uint16_t slid;
    std::uint8_t sl;
    std::uint8_t dlid_path_bits;
    std::uint16_t reserved0;
    std::uint32_t reserved1[2];
};
static_assert(sizeof(cqe) == 56);

namespace cq_arm {
inline constexpr std::uint32_t none = 0;
inline constexpr std::uint32_t next = 1;      // ibv_req_notify_cq(cq, 0)
inline constexpr std::uint32_t solicited = 2; // ibv_req_notify_cq(cq, 1)
} // namespace cq_arm

// A CQ's shared block: the ring header, then the arm word, then the CQE slots.
struct cq_control {
    ring_header ring;
    alignas(cache_line) std::atomic<std::uint32_t> armed;
    std::atomic<std::uint32_t> overflowed; // set by the NIC when a CQE found no room
};

// A QP's shared block: send ring then receive ring, each followed by its slots, and the word
// that says the QP waits in its context's doorbell queue (below).
struct qp_control {
    ring_header send;
    ring_header recv;
    alignas(cache_line) std::atomic<std::uint32_t> queued;
};

// A device context's doorbell queue: the QPs its program posted work to, as a ConnectX's
// doorbell record names the QP, so that the NIC looks at those QPs and not at every QP it has.
// The program publishes its WQEs, then (after a sequentially consistent fence) sets the QP's
// `queued` word and pushes the QP's handle only if the word was clear; the NIC clears the word
// (and fences) before it looks at the QP's rings. Either the program's push or the NIC's look
// sees the new WQEs (Dekker's handshake, as in wake_flag.hpp). A program whose queue is full
// raises `overflowed`, and the NIC looks at every QP of the context once.
//
// Everything here is the program's to scribble on: the NIC takes handles as names to look up
// among the context's own QPs, never as indices, and bounds what it reads by `slots`.
inline constexpr std::uint32_t doorbell_queue_slots = 1024;
struct doorbell_queue {
    ring_header ring; // producer: the program; consumer: the NIC
    alignas(cache_line) std::atomic<std::uint32_t> overflowed;
    alignas(cache_line) std::atomic<std::uint32_t> handles[doorbell_queue_slots];
};

// The program's side of the handshake above, after it published its WQEs: true when the QP was
// not queued yet and the program must push its handle (push_doorbell), under whatever lock keeps
// its other threads off the queue.
inline bool claim_doorbell(qp_control& qp) {
    std::atomic_thread_fence(std::memory_order_seq_cst);
    return qp.queued.exchange(1, std::memory_order_seq_cst) == 0;
}
inline void push_doorbell(doorbell_queue& q, std::uint32_t qp_handle) {
    const std::uint32_t producer = q.ring.producer.load(std::memory_order_relaxed);
    if (producer - q.ring.consumer.load(std::memory_order_acquire) >= doorbell_queue_slots) {
        q.overflowed.store(1, std::memory_order_release); // the NIC will look at every QP
        return;
    }
    q.handles[producer % doorbell_queue_slots].store(qp_handle, std::memory_order_relaxed);
    q.ring.producer.store(producer + 1, std::memory_order_release);
}

inline constexpr std::size_t align_up(std::size_t n, std::size_t a) { return (n + a - 1) / a * a; }

inline constexpr std::size_t cq_slots_offset = align_up(sizeof(cq_control), cache_line);
inline constexpr std::size_t cq_region_size(std::uint32_t slots) {
    return align_up(cq_slots_offset + std::size_t(slots) * sizeof(cqe), 4096);
}

inline constexpr std::size_t doorbell_queue_region_size = align_up(sizeof(doorbell_queue), 4096);

inline constexpr std::size_t qp_send_slots_offset = align_up(sizeof(qp_control), cache_line);
inline constexpr std::size_t qp_recv_slots_offset(std::uint32_t send_slots) {
    return qp_send_slots_offset + std::size_t(send_slots) * sizeof(send_wqe);
}
inline constexpr std::size_t qp_region_size(std::uint32_t send_slots, std::uint32_t recv_slots) {
    return align_up(qp_recv_slots_offset(send_slots) + std::size_t(recv_slots) * sizeof(recv_wqe), 4096);
}

// An SRQ's shared block: one receive ring shared by the QPs created with it (IBA 10.2.9),
// followed by its recv_wqe slots.
struct srq_control {
    ring_header recv;
};

inline constexpr std::size_t srq_slots_offset = align_up(sizeof(srq_control), cache_line);
inline constexpr std::size_t srq_region_size(std::uint32_t slots) {
    return align_up(srq_slots_offset + std::size_t(slots) * sizeof(recv_wqe), 4096);
}

// UD receive buffers start with this many bytes for the GRH (IBA 11.4.1.1); over RoCEv2/IPv4
// the IPv4 header fills the last 20 of them (rdma-core's ibv_grh convention, as rxe does).
inline constexpr std::uint32_t grh_length = 40;

inline constexpr std::uint32_t ring_slots_for(std::uint32_t requested) {
    std::uint32_t n = 1;
    while (n < requested) n <<= 1;
    return n;
}

} // namespace rocefab::hw
