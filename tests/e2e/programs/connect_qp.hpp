// Bringing a connected QP (RC or UC) from RESET to RTS against a peer whose QPN and GID are
// known, as every test program here does, with plain libibverbs.
#pragma once

#include <infiniband/verbs.h>

#include <cstdint>

namespace rocefab::test_programs {

struct connect_options {
    ibv_mtu mtu = IBV_MTU_1024;
    std::uint8_t timeout = 14; // ConnectX's default as perftest sets it: about 67 ms
    std::uint8_t retry_cnt = 7;
    std::uint8_t rnr_retry = 7; // 7: for ever
    std::uint8_t min_rnr_timer = 12;
    std::uint32_t sq_psn = 0, rq_psn = 0;
    unsigned access = 0; // what the peer may do here (IBV_ACCESS_REMOTE_*)
    std::uint8_t gid_index = 1;
};

// 0, or the errno of the transition that failed; `failed_at` (if given) names it.
inline int connect_qp(ibv_qp* qp, const ibv_gid& remote_gid, std::uint32_t remote_qpn, const connect_options& o,
                      const char** failed_at = nullptr) {
    const bool rc = qp->qp_type == IBV_QPT_RC;
    ibv_qp_attr a{};
    a.qp_state = IBV_QPS_INIT;
    a.port_num = 1;
    a.qp_access_flags = o.access;
    if (int e = ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS)) {
        if (failed_at) *failed_at = "INIT";
        return e;
    }
    a = {};
    a.qp_state = IBV_QPS_RTR;
    a.path_mtu = o.mtu;
    a.dest_qp_num = remote_qpn;
    a.rq_psn = o.rq_psn;
    a.max_dest_rd_atomic = 1;
    a.min_rnr_timer = o.min_rnr_timer;
    a.ah_attr.is_global = 1;
    a.ah_attr.port_num = 1;
    a.ah_attr.grh.dgid = remote_gid;
    a.ah_attr.grh.sgid_index = o.gid_index;
    a.ah_attr.grh.hop_limit = 64;
    if (int e = ibv_modify_qp(qp, &a,
                              IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                                  (rc ? IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER : 0))) {
        if (failed_at) *failed_at = "RTR";
        return e;
    }
    a = {};
    a.qp_state = IBV_QPS_RTS;
    a.timeout = o.timeout;
    a.retry_cnt = o.retry_cnt;
    a.rnr_retry = o.rnr_retry;
    a.sq_psn = o.sq_psn;
    a.max_rd_atomic = 1;
    if (int e = ibv_modify_qp(
            qp, &a,
            IBV_QP_STATE | IBV_QP_SQ_PSN |
                (rc ? IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC : 0))) {
        if (failed_at) *failed_at = "RTS";
        return e;
    }
    return 0;
}

} // namespace rocefab::test_programs
