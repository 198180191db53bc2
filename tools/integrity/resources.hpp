// rdma-integrity's verbs resources, common to both sides: the device, its protection domain, the
// completion channel and CQ, the RC queue pair and its connection, registered memory, and
// waiting for completions. Every failure ends the run through fail(peer, ...).
#pragma once

#include "communication.hpp"
#include "parameters.hpp"

#include <infiniband/verbs.h>

#include <cstdint>
#include <vector>

namespace rocefab::tools::integrity {

struct verbs_context {
    ibv_context* context = nullptr;
    ibv_pd* pd = nullptr;
    ibv_comp_channel* channel = nullptr;
    ibv_cq* cq = nullptr;
    ibv_qp* qp = nullptr;
    ibv_device_attr device{};
    ibv_port_attr port{};
    ibv_gid gid{};
    std::uint32_t psn = 0;
    std::uint32_t max_inline = 0, max_send_sge = 1, max_recv_sge = 1, max_read_sge = 1;
    bool armed = false;
};

// Opens -d DEV (the first device without it), queries it, port 1 and GID -g, allocates the PD and,
// with -e, the completion channel; draws the initial PSN.
void open_device(verbs_context& v, const options& o, const peer_link& peer);

// The CQ and the RC QP, in INIT with `remote_access`. The QP's limits (inline data, SGEs) are the
// ones asked for or the smaller ones the device grants, in v.max_*.
void create_queue_pair(verbs_context& v, std::uint32_t send_depth, std::uint32_t receive_depth, std::uint32_t send_sge,
                       std::uint32_t recv_sge, int remote_access, const peer_link& peer);

// INIT -> RTR -> RTS towards the peer's QP, as its hello describes it.
void connect_queue_pair(verbs_context& v, const options& o, std::uint32_t mtu, std::uint32_t remote_qpn,
                        std::uint32_t remote_psn, std::uint32_t remote_lid, const std::uint8_t remote_gid[16],
                        const peer_link& peer);

ibv_mr* register_memory(verbs_context& v, std::vector<std::uint8_t>& buffer, int access, const peer_link& peer);

// Polls up to `n` completions.
int poll_completions(verbs_context& v, ibv_wc* wc, int n, const peer_link& peer);

// With completion events, when the CQ is empty: arms it (the caller then polls once more, closing
// the race) and, once armed, sleeps on the channel and the peer's socket for up to a second.
// Without events it returns at once: the caller busy-polls.
void wait_for_completion(verbs_context& v, const peer_link& peer);

void check_status(const ibv_wc& wc, const peer_link& peer);

const char* wc_opcode_name(int op);

} // namespace rocefab::tools::integrity
