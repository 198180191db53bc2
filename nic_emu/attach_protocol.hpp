// The control path between the verbs library and the daemon: one SOCK_SEQPACKET Unix socket per
// device context (plus a short-lived one for ibv_get_device_list). Every request is one
// datagram and gets exactly one reply datagram; descriptors ride along with SCM_RIGHTS. This
// path is the "command interface" of the emulated NIC and is used only by slow-path verbs; the
// fast path (post, poll) touches shared memory only.
//
// Each emulated host has a socket of its own (`rocefab run --host` names it in ROCEFAB_SOCKET),
// so a program sees the NICs of its host and no other. The daemon learns who connected from
// SO_PEERCRED, never from a request, and reaches the program's memory only through the
// descriptors the program passes with open_device (nic_emu/process_memory.hpp).
#pragma once

#include <infiniband/verbs.h>

#include <cstdint>

namespace rocefab::attach {

inline constexpr std::uint32_t protocol_version = 3;
inline constexpr std::size_t name_length = 64;
inline constexpr std::size_t max_devices = 8;
inline constexpr std::uint32_t gid_table_size = 2; // index 0: link-local from the MAC; 1: IPv4-mapped

// Environment of a program started by `rocefab run`.
inline constexpr const char* socket_env = "ROCEFAB_SOCKET";
inline constexpr const char* host_env = "ROCEFAB_HOST";

enum class op : std::uint32_t {
    hello = 1,
    // Passes /proc/self/mem (open for reading and writing) and /proc/self/maps. The reply
    // passes the context's async event pipe, its doorbell (an eventfd), the data plane's wake
    // page (dataplane/wake_flag.hpp, to map read-only) and its doorbell queue
    // (hw::doorbell_queue, hw::doorbell_queue_region_size bytes), in that order.
    open_device,
    query_device,
    query_port,
    alloc_pd,
    dealloc_pd,
    reg_mr,
    dereg_mr,
    create_comp_channel,
    destroy_comp_channel,
    create_cq,
    destroy_cq,
    create_qp,
    modify_qp,
    query_qp,
    destroy_qp,
    create_ah,
    destroy_ah,
    create_srq, // replies with the SRQ ring's memfd (hw::srq_control)
    modify_srq,
    query_srq,
    destroy_srq,
};

struct device_info {
    char name[name_length];
    std::uint64_t node_guid; // network order, as ibv_get_device_guid returns it
    std::uint8_t mac[6];
    std::uint8_t gids[gid_table_size][16];
    ibv_device_attr device;
    ibv_port_attr port;
};

inline constexpr std::size_t open_device_request_fds = 2; // mem, maps
inline constexpr std::size_t open_device_reply_fds = 4;   // async events, doorbell, wake page, doorbell queue
inline constexpr std::size_t max_fds = 4;                 // on any message (descriptor_passing.hpp)

struct request {
    op code;
    std::uint32_t handle; // the object acted on (PD, MR, CQ, QP, channel); 0 when none
    union {
        struct {
            std::uint32_t version;
            char host[name_length]; // must be the host whose socket this is (or empty)
        } hello;
        struct {
            char device[name_length];
        } open_device;
        struct {
            std::uint32_t pd;
            std::uint32_t access;
            std::uint64_t address;
            std::uint64_t length;
            std::uint64_t iova;
            // The whole pages of the range the library moved onto a memfd, which comes with the
            // request (verbs/shared_pages.hpp); length 0 and no descriptor when none did.
            std::uint64_t shared_address;
            std::uint64_t shared_length;
        } reg_mr;
        struct {
            std::uint32_t cqe;
            std::uint32_t channel; // 0: none
        } create_cq;
        struct {
            std::uint32_t pd;
            std::uint32_t send_cq;
            std::uint32_t recv_cq;
            std::uint32_t srq;
            std::uint32_t qp_type; // enum ibv_qp_type
            std::uint32_t sq_sig_all;
            ibv_qp_cap cap;
        } create_qp;
        struct {
            ibv_qp_attr attr;
            std::int32_t mask;
        } modify_qp;
        struct {
            std::uint32_t pd;
            ibv_ah_attr attr;
        } create_ah;
        struct {
            std::uint32_t pd;
            ibv_srq_attr attr;
        } create_srq;
        struct {
            ibv_srq_attr attr;
            std::int32_t mask; // enum ibv_srq_attr_mask
        } modify_srq;
    };
};

struct reply {
    std::int32_t status; // 0 or an errno value
    std::uint32_t handle;
    union {
        struct {
            std::uint32_t version;
            std::uint32_t device_count;
            device_info devices[max_devices];
        } hello;
        struct {
            device_info device;
        } open_device;
        struct {
            std::uint32_t lkey;
            std::uint32_t rkey;
        } reg_mr;
        struct {
            std::uint32_t slots; // CQE slots in the shared ring (>= requested cqe)
        } create_cq;
        struct {
            std::uint32_t qp_num;
            std::uint32_t send_slots;
            std::uint32_t recv_slots;
            ibv_qp_cap cap; // what the QP really got
        } create_qp;
        struct {
            ibv_qp_attr attr;
            ibv_qp_cap cap;
            std::uint32_t qp_type;
            std::uint32_t sq_sig_all;
        } query_qp;
        struct {
            std::uint32_t slots; // recv_wqe slots in the shared ring
            ibv_srq_attr attr;   // what the SRQ really got
        } create_srq;
        struct {
            ibv_srq_attr attr;
        } query_srq;
    };
};

// What a completion channel's descriptor carries: one record a CQ event.
struct cq_event_record {
    std::uint32_t cq_handle;
};

// What a context's async descriptor carries.
struct async_event_record {
    std::uint32_t event_type; // enum ibv_event_type
    std::uint32_t handle;     // QP/CQ/SRQ handle, or port number for port events
};

} // namespace rocefab::attach
