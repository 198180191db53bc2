// rdma-integrity's verbs resources: see resources.hpp.
#include "resources.hpp"

#include <poll.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <random>

namespace rocefab::tools::integrity {

void open_device(verbs_context& v, const options& o, const peer_link& peer) {
    int n = 0;
    ibv_device** list = ibv_get_device_list(&n);
    if (!list || n == 0) fail(peer, "no RDMA devices found");
    ibv_device* chosen = nullptr;
    for (int i = 0; i < n; ++i)
        if (o.device.empty() || o.device == ibv_get_device_name(list[i])) {
            chosen = list[i];
            break;
        }
    if (!chosen) fail(peer, "device %s not found", o.device.c_str());
    v.context = ibv_open_device(chosen);
    if (!v.context) fail(peer, "ibv_open_device %s: %s", ibv_get_device_name(chosen), std::strerror(errno));
    ibv_free_device_list(list);
    if (ibv_query_device(v.context, &v.device)) fail(peer, "ibv_query_device failed");
    if (ibv_query_port(v.context, 1, &v.port)) fail(peer, "ibv_query_port failed");
    if (ibv_query_gid(v.context, 1, o.gid_index, &v.gid)) fail(peer, "ibv_query_gid index %d failed", o.gid_index);
    v.pd = ibv_alloc_pd(v.context);
    if (!v.pd) fail(peer, "ibv_alloc_pd failed");
    if (o.events) {
        v.channel = ibv_create_comp_channel(v.context);
        if (!v.channel) fail(peer, "ibv_create_comp_channel failed");
    }
    std::random_device entropy;
    v.psn = entropy() & 0xffffff;
}

void create_queue_pair(verbs_context& v, std::uint32_t send_depth, std::uint32_t receive_depth, std::uint32_t send_sge,
                       std::uint32_t recv_sge, int remote_access, const peer_link& peer) {
    const int cqe = static_cast<int>(send_depth + receive_depth + 16);
    v.cq = ibv_create_cq(v.context, std::min(cqe, v.device.max_cqe), nullptr, v.channel, 0);
    if (!v.cq) fail(peer, "ibv_create_cq(%d) failed", cqe);
    const std::uint32_t sge_limit = static_cast<std::uint32_t>(std::max(1, v.device.max_sge));
    // Not every device offers 256 bytes of inline data; take the most it grants.
    for (std::uint32_t inline_data : {256u, 64u, 0u}) {
        ibv_qp_init_attr a{};
        a.send_cq = v.cq;
        a.recv_cq = v.cq;
        a.qp_type = IBV_QPT_RC;
        a.cap.max_send_wr = send_depth;
        a.cap.max_recv_wr = receive_depth;
        a.cap.max_send_sge = std::min(send_sge, sge_limit);
        a.cap.max_recv_sge = std::min(recv_sge, sge_limit);
        a.cap.max_inline_data = inline_data;
        v.qp = ibv_create_qp(v.pd, &a);
        if (v.qp) {
            v.max_inline = std::min(a.cap.max_inline_data, 256u);
            v.max_send_sge = std::min(a.cap.max_send_sge, send_sge);
            v.max_recv_sge = std::min(a.cap.max_recv_sge, recv_sge);
            v.max_read_sge =
                v.device.max_sge_rd > 0 ? std::min<std::uint32_t>(v.max_send_sge, v.device.max_sge_rd) : v.max_send_sge;
            break;
        }
    }
    if (!v.qp) fail(peer, "ibv_create_qp failed: %s", std::strerror(errno));
    ibv_qp_attr attr{};
    attr.qp_state = IBV_QPS_INIT;
    attr.pkey_index = 0;
    attr.port_num = 1;
    attr.qp_access_flags = remote_access;
    if (ibv_modify_qp(v.qp, &attr, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
        fail(peer, "ibv_modify_qp to INIT failed");
}

namespace {

ibv_mtu mtu_enum(std::uint32_t mtu) { return mtu == 4096 ? IBV_MTU_4096 : IBV_MTU_1024; }

} // namespace

void connect_queue_pair(verbs_context& v, const options& o, std::uint32_t mtu, std::uint32_t remote_qpn,
                        std::uint32_t remote_psn, std::uint32_t remote_lid, const std::uint8_t remote_gid[16],
                        const peer_link& peer) {
    ibv_qp_attr attr{};
    attr.qp_state = IBV_QPS_RTR;
    attr.path_mtu = mtu_enum(mtu);
    attr.dest_qp_num = remote_qpn;
    attr.rq_psn = remote_psn;
    // As many READs and atomics in flight as the device allows, up to 16 (IBA 9.4.4, C9-150).
    attr.max_dest_rd_atomic = static_cast<std::uint8_t>(std::clamp(v.device.max_qp_rd_atom, 1, 16));
    attr.min_rnr_timer = 12;
    attr.ah_attr.is_global = 1;
    attr.ah_attr.dlid = static_cast<std::uint16_t>(remote_lid);
    attr.ah_attr.sl = 0;
    attr.ah_attr.port_num = 1;
    std::memcpy(attr.ah_attr.grh.dgid.raw, remote_gid, 16);
    attr.ah_attr.grh.sgid_index = static_cast<std::uint8_t>(o.gid_index);
    attr.ah_attr.grh.hop_limit = 64;
    if (ibv_modify_qp(v.qp, &attr,
                      IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                          IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
        fail(peer, "ibv_modify_qp to RTR failed (path MTU %u, GID index %d)", mtu, o.gid_index);
    attr = {};
    attr.qp_state = IBV_QPS_RTS;
    attr.timeout = 14;
    attr.retry_cnt = 7;
    attr.rnr_retry = 7;
    attr.sq_psn = v.psn;
    attr.max_rd_atomic = static_cast<std::uint8_t>(std::clamp(v.device.max_qp_init_rd_atom, 1, 16));
    if (ibv_modify_qp(v.qp, &attr,
                      IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
                          IBV_QP_MAX_QP_RD_ATOMIC))
        fail(peer, "ibv_modify_qp to RTS failed");
}

ibv_mr* register_memory(verbs_context& v, std::vector<std::uint8_t>& buffer, int access, const peer_link& peer) {
    ibv_mr* mr = ibv_reg_mr(v.pd, buffer.data(), buffer.size(), access);
    if (!mr) fail(peer, "ibv_reg_mr of %zu bytes failed: %s", buffer.size(), std::strerror(errno));
    return mr;
}

int poll_completions(verbs_context& v, ibv_wc* wc, int n, const peer_link& peer) {
    const int got = ibv_poll_cq(v.cq, n, wc);
    if (got < 0) fail(peer, "ibv_poll_cq failed");
    return got;
}

void wait_for_completion(verbs_context& v, const peer_link& peer) {
    if (!v.channel) return;
    if (!v.armed) {
        if (ibv_req_notify_cq(v.cq, 0)) fail(peer, "ibv_req_notify_cq failed");
        v.armed = true;
        return; // the caller polls again before sleeping
    }
    // The peer's socket too: a peer that fails while this side sleeps wakes it.
    pollfd fds[2] = {{v.channel->fd, POLLIN, 0}, {peer.fd(), POLLIN, 0}};
    if (::poll(fds, peer.peer_done() ? 1 : 2, 1000) < 0 && errno != EINTR) fail(peer, "poll: %s", std::strerror(errno));
    if (fds[0].revents & POLLIN) {
        ibv_cq* cq;
        void* ctx;
        if (ibv_get_cq_event(v.channel, &cq, &ctx)) fail(peer, "ibv_get_cq_event failed");
        if (cq != v.cq) fail(peer, "completion event for an unknown CQ");
        ibv_ack_cq_events(cq, 1);
        v.armed = false;
    }
}

void check_status(const ibv_wc& wc, const peer_link& peer) {
    if (wc.status != IBV_WC_SUCCESS)
        fail(peer, "completion wr_id %llu: status %s (%d), vendor error 0x%x",
             static_cast<unsigned long long>(wc.wr_id), ibv_wc_status_str(wc.status), wc.status, wc.vendor_err);
}

const char* wc_opcode_name(int op) {
    switch (op) {
    case IBV_WC_SEND: return "SEND";
    case IBV_WC_RDMA_WRITE: return "RDMA_WRITE";
    case IBV_WC_RDMA_READ: return "RDMA_READ";
    case IBV_WC_COMP_SWAP: return "COMP_SWAP";
    case IBV_WC_FETCH_ADD: return "FETCH_ADD";
    case IBV_WC_RECV: return "RECV";
    case IBV_WC_RECV_RDMA_WITH_IMM: return "RECV_RDMA_WITH_IMM";
    default: return "other";
    }
}

} // namespace rocefab::tools::integrity
