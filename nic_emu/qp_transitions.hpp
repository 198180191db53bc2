// Which attributes ibv_modify_qp must and may carry for each QP state transition and transport
// (IBA 10.3.1, Table 93 "QP State Transition Properties" and 11.2.4.2; the same rules as the
// kernel's ib_modify_qp_is_ok()). A transition that is not in the table, a missing required
// attribute or an attribute that is not allowed makes the verb fail with EINVAL.
#pragma once

#include <infiniband/verbs.h>

namespace rocefab::nic {

struct transition_rule {
    bool allowed = false;
    int required = 0;
    int optional = 0;
};

// The rule for cur -> next on a QP of `type`; `allowed` is false for transitions IBA forbids.
transition_rule qp_transition(ibv_qp_type type, ibv_qp_state cur, ibv_qp_state next);

// Why a modify is rejected, for the caller's error message; nullptr when it is acceptable.
const char* check_transition(ibv_qp_type type, ibv_qp_state cur, ibv_qp_state next, int mask);

} // namespace rocefab::nic
