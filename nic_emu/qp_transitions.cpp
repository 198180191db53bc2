#include "nic_emu/qp_transitions.hpp"

namespace rocefab::nic {

namespace {

constexpr int rc = 1 << IBV_QPT_RC;
constexpr int uc = 1 << IBV_QPT_UC;
constexpr int ud = 1 << IBV_QPT_UD;

struct row {
    ibv_qp_state from, to;
    int transports;
    int required;
    int optional;
};

// IBA 10.3.1 Table 93, for the transports this NIC has. Transitions to RESET and ERR are
// allowed from every state with no attribute but the state, and are handled in code.
constexpr row table[] = {
    {IBV_QPS_RESET, IBV_QPS_INIT, rc | uc, IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS, 0},
    {IBV_QPS_RESET, IBV_QPS_INIT, ud, IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY, 0},
    {IBV_QPS_INIT, IBV_QPS_INIT, rc | uc, 0, IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS},
    {IBV_QPS_INIT, IBV_QPS_INIT, ud, 0, IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY},
    {IBV_QPS_INIT, IBV_QPS_RTR, rc,
     IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER,
     IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS | IBV_QP_PKEY_INDEX},
    {IBV_QPS_INIT, IBV_QPS_RTR, uc, IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN,
     IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS | IBV_QP_PKEY_INDEX},
    {IBV_QPS_INIT, IBV_QPS_RTR, ud, 0, IBV_QP_PKEY_INDEX | IBV_QP_QKEY},
    {IBV_QPS_RTR, IBV_QPS_RTS, rc,
     IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC,
     IBV_QP_CUR_STATE | IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS | IBV_QP_MIN_RNR_TIMER | IBV_QP_PATH_MIG_STATE},
    {IBV_QPS_RTR, IBV_QPS_RTS, uc, IBV_QP_SQ_PSN,
     IBV_QP_CUR_STATE | IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS | IBV_QP_PATH_MIG_STATE},
    {IBV_QPS_RTR, IBV_QPS_RTS, ud, IBV_QP_SQ_PSN, IBV_QP_CUR_STATE | IBV_QP_QKEY},
    {IBV_QPS_RTS, IBV_QPS_RTS, rc, 0,
     IBV_QP_CUR_STATE | IBV_QP_ACCESS_FLAGS | IBV_QP_ALT_PATH | IBV_QP_PATH_MIG_STATE | IBV_QP_MIN_RNR_TIMER},
    {IBV_QPS_RTS, IBV_QPS_RTS, uc, 0, IBV_QP_CUR_STATE | IBV_QP_ACCESS_FLAGS | IBV_QP_ALT_PATH | IBV_QP_PATH_MIG_STATE},
    {IBV_QPS_RTS, IBV_QPS_RTS, ud, 0, IBV_QP_CUR_STATE | IBV_QP_QKEY},
    {IBV_QPS_RTS, IBV_QPS_SQD, rc | uc | ud, 0, IBV_QP_EN_SQD_ASYNC_NOTIFY},
    {IBV_QPS_SQD, IBV_QPS_RTS, rc, 0,
     IBV_QP_CUR_STATE | IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS | IBV_QP_MIN_RNR_TIMER | IBV_QP_PATH_MIG_STATE},
    {IBV_QPS_SQD, IBV_QPS_RTS, uc, 0, IBV_QP_CUR_STATE | IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS | IBV_QP_PATH_MIG_STATE},
    {IBV_QPS_SQD, IBV_QPS_RTS, ud, 0, IBV_QP_CUR_STATE | IBV_QP_QKEY},
    {IBV_QPS_SQD, IBV_QPS_SQD, rc, 0,
     IBV_QP_AV | IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS | IBV_QP_PKEY_INDEX | IBV_QP_MIN_RNR_TIMER |
         IBV_QP_PATH_MIG_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC |
         IBV_QP_MAX_DEST_RD_ATOMIC},
    {IBV_QPS_SQD, IBV_QPS_SQD, uc, 0,
     IBV_QP_AV | IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS | IBV_QP_PKEY_INDEX | IBV_QP_PATH_MIG_STATE},
    {IBV_QPS_SQD, IBV_QPS_SQD, ud, 0, IBV_QP_PKEY_INDEX | IBV_QP_QKEY},
    // SQE exists for UC and UD only: an RC send-queue error takes the whole QP to ERR.
    {IBV_QPS_SQE, IBV_QPS_RTS, uc, 0, IBV_QP_CUR_STATE | IBV_QP_ACCESS_FLAGS},
    {IBV_QPS_SQE, IBV_QPS_RTS, ud, 0, IBV_QP_CUR_STATE | IBV_QP_QKEY},
};

} // namespace

transition_rule qp_transition(ibv_qp_type type, ibv_qp_state cur, ibv_qp_state next) {
    if (next == IBV_QPS_RESET || next == IBV_QPS_ERR) return {true, 0, 0};
    for (const row& r : table)
        if (r.from == cur && r.to == next && (r.transports & (1 << type))) return {true, r.required, r.optional};
    return {};
}

const char* check_transition(ibv_qp_type type, ibv_qp_state cur, ibv_qp_state next, int mask) {
    const transition_rule rule = qp_transition(type, cur, next);
    if (!rule.allowed) return "transition not allowed";
    const int given = mask & ~IBV_QP_STATE;
    if ((given & rule.required) != rule.required) return "required attribute missing";
    if (given & ~(rule.required | rule.optional)) return "attribute not allowed in this transition";
    return nullptr;
}

} // namespace rocefab::nic
