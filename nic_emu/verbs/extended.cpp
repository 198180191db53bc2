// The extended verbs programs reach through verbs_context: ibv_query_device_ex,
// ibv_create_cq_ex with its start_poll/next_poll/end_poll readers, and ibv_create_qp_ex with
// the ibv_qp_ex work-request builders (ibv_wr_start ... ibv_wr_complete), as rdma-core 44's
// providers offer them. What a flag asks for and this NIC lacks fails with EOPNOTSUPP at
// creation, never later.

#include "nic_emu/verbs/objects.hpp"

#include <infiniband/verbs.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <sched.h>

using namespace rocefab;
using namespace rocefab::verbs;

namespace {

// ---- ibv_query_device_ex -----------------------------------------------------------------

int query_device_ex(ibv_context* context, const ibv_query_device_ex_input* input, ibv_device_attr_ex* attr,
                    size_t attr_size) {
    if (input && input->comp_mask) return EINVAL;
    if (attr_size < sizeof(ibv_device_attr)) return EINVAL;
    ibv_device_attr_ex full{};
    if (int error = ibv_query_device(context, &full.orig_attr)) return error;
    // No ODP, timestamps, TSO, RSS, packet pacing or tag matching: all zero, as a device
    // without them reports. The raw packet caps and the rest stay zero too.
    full.max_dm_size = 0;
    // rdma-core fills it from the legacy field for every provider (ibv_query_device_ex).
    full.phys_port_cnt_ex = full.orig_attr.phys_port_cnt;
    std::memcpy(attr, &full, std::min(attr_size, sizeof full));
    if (attr_size > sizeof full) std::memset(reinterpret_cast<char*>(attr) + sizeof full, 0, attr_size - sizeof full);
    return 0;
}

// ---- ibv_cq_ex ----------------------------------------------------------------------------

// Readers of the completion start_poll/next_poll made current.
rf_cq* cq_ex_of(ibv_cq_ex* cq) { return reinterpret_cast<rf_cq*>(cq); }

const hw::cqe& current_cqe(ibv_cq_ex* ibcq) {
    rf_cq* cq = cq_ex_of(ibcq);
    const std::uint32_t consumer = cq->control->ring.consumer.load(std::memory_order_relaxed);
    return cq->slots[consumer & (cq->slot_count - 1)];
}

void load_current(ibv_cq_ex* ibcq) {
    const hw::cqe& e = current_cqe(ibcq);
    ibcq->wr_id = e.wr_id;
    ibcq->status = static_cast<ibv_wc_status>(e.status);
}

bool cq_empty(rf_cq* cq) {
    return cq->control->ring.consumer.load(std::memory_order_relaxed) ==
           cq->control->ring.producer.load(std::memory_order_acquire);
}

int start_poll(ibv_cq_ex* ibcq, ibv_poll_cq_attr* attr) {
    if (attr && attr->comp_mask) return EINVAL;
    rf_cq* cq = cq_ex_of(ibcq);
    cq->poll_lock.lock(); // held until end_poll, or released here when there is nothing
    if (cq_empty(cq)) {
        cq->poll_lock.unlock();
        if (cq->empty_polls.fetch_add(1, std::memory_order_relaxed) >= 4) {
            cq->empty_polls.store(0, std::memory_order_relaxed);
            sched_yield(); // see poll_cq in verbs.cpp
            // A dead device's flush completions are there to be polled at once.
            if (!device_alive(context_of(ibcq->context))) return start_poll(ibcq, attr);
        }
        return ENOENT;
    }
    load_current(ibcq);
    cq->ex_current = true;
    return 0;
}

int next_poll(ibv_cq_ex* ibcq) {
    rf_cq* cq = cq_ex_of(ibcq);
    auto& ring = cq->control->ring;
    ring.consumer.store(ring.consumer.load(std::memory_order_relaxed) + 1, std::memory_order_release);
    cq->ex_current = !cq_empty(cq);
    if (!cq->ex_current) return ENOENT;
    load_current(ibcq);
    return 0;
}

void end_poll(ibv_cq_ex* ibcq) {
    rf_cq* cq = cq_ex_of(ibcq);
    auto& ring = cq->control->ring;
    // The completion the program last read is consumed: free its slot.
    if (cq->ex_current)
        ring.consumer.store(ring.consumer.load(std::memory_order_relaxed) + 1, std::memory_order_release);
    cq->ex_current = false;
    cq->poll_lock.unlock();
}

ibv_wc_opcode read_opcode(ibv_cq_ex* cq) { return static_cast<ibv_wc_opcode>(current_cqe(cq).opcode); }
uint32_t read_vendor_err(ibv_cq_ex* cq) { return current_cqe(cq).vendor_err; }
uint32_t read_byte_len(ibv_cq_ex* cq) { return current_cqe(cq).byte_len; }
__be32 read_imm_data(ibv_cq_ex* cq) { return current_cqe(cq).immediate; }
uint32_t read_qp_num(ibv_cq_ex* cq) { return current_cqe(cq).qp_num; }
uint32_t read_src_qp(ibv_cq_ex* cq) { return current_cqe(cq).src_qp; }
unsigned int read_wc_flags(ibv_cq_ex* cq) { return current_cqe(cq).wc_flags; }
uint32_t read_slid(ibv_cq_ex* cq) { return current_cqe(cq).slid; }
uint8_t read_sl(ibv_cq_ex* cq) { return current_cqe(cq).sl; }
uint8_t read_dlid_path_bits(ibv_cq_ex* cq) { return current_cqe(cq).dlid_path_bits; }

ibv_cq_ex* create_cq_ex(ibv_context* context, ibv_cq_init_attr_ex* attr) {
    constexpr std::uint64_t supported_wc = IBV_WC_EX_WITH_BYTE_LEN | IBV_WC_EX_WITH_IMM | IBV_WC_EX_WITH_QP_NUM |
                                           IBV_WC_EX_WITH_SRC_QP | IBV_WC_EX_WITH_SLID | IBV_WC_EX_WITH_SL |
                                           IBV_WC_EX_WITH_DLID_PATH_BITS;
    if (attr->comp_mask & ~static_cast<std::uint32_t>(IBV_CQ_INIT_ATTR_MASK_FLAGS | IBV_CQ_INIT_ATTR_MASK_PD)) {
        errno = EINVAL;
        return nullptr;
    }
    // Completion timestamps, flow tags, CVLAN and tag matching: the NIC has none of them.
    if ((attr->wc_flags & ~supported_wc) || ((attr->comp_mask & IBV_CQ_INIT_ATTR_MASK_FLAGS) && attr->flags) ||
        ((attr->comp_mask & IBV_CQ_INIT_ATTR_MASK_PD) && attr->parent_domain)) {
        errno = EOPNOTSUPP;
        return nullptr;
    }
    rf_cq* cq = create_cq_object(context, static_cast<int>(attr->cqe), attr->cq_context, attr->channel,
                                 static_cast<int>(attr->comp_vector));
    if (!cq) return nullptr;
    ibv_cq_ex& ex = cq->ex;
    ex.comp_mask = 0;
    ex.start_poll = start_poll;
    ex.next_poll = next_poll;
    ex.end_poll = end_poll;
    ex.read_opcode = read_opcode;
    ex.read_vendor_err = read_vendor_err;
    ex.read_byte_len = read_byte_len;
    ex.read_imm_data = read_imm_data;
    ex.read_qp_num = read_qp_num;
    ex.read_src_qp = read_src_qp;
    ex.read_wc_flags = read_wc_flags;
    ex.read_slid = read_slid;
    ex.read_sl = read_sl;
    ex.read_dlid_path_bits = read_dlid_path_bits;
    return &ex;
}

// ---- ibv_qp_ex: work requests built in place ----------------------------------------------------

rf_qp* qp_ex_of(ibv_qp_ex* qp) { return reinterpret_cast<rf_qp*>(qp); }

// Starts a WQE at the builder's position; later setters fill it. Errors are kept for
// wr_complete, as providers do (the setters return nothing).
hw::send_wqe* begin_wqe(ibv_qp_ex* ibqp, ibv_wr_opcode opcode) {
    rf_qp* qp = qp_ex_of(ibqp);
    hw::ring_header& ring = qp->control->send;
    if (qp->wr_error) return qp->wr_current = nullptr;
    if (qp->wr_producer - ring.consumer.load(std::memory_order_acquire) >= qp->cap.max_send_wr) {
        qp->wr_error = ENOMEM;
        return qp->wr_current = nullptr;
    }
    hw::send_wqe& w = qp->send_slots[qp->wr_producer & (qp->send_slot_count - 1)];
    std::memset(&w, 0, offsetof(hw::send_wqe, sg_list));
    w.wr_id = ibqp->wr_id;
    w.opcode = static_cast<std::uint8_t>(opcode);
    if ((ibqp->wr_flags & IBV_SEND_SIGNALED) || qp->sq_sig_all) w.flags |= hw::wqe_flag::signaled;
    if (ibqp->wr_flags & IBV_SEND_SOLICITED) w.flags |= hw::wqe_flag::solicited;
    if (ibqp->wr_flags & IBV_SEND_FENCE) w.flags |= hw::wqe_flag::fence;
    ++qp->wr_producer;
    return qp->wr_current = &w;
}

void wr_start(ibv_qp_ex* ibqp) {
    rf_qp* qp = qp_ex_of(ibqp);
    qp->send_lock.lock(); // held until wr_complete or wr_abort
    qp->wr_producer = qp->control->send.producer.load(std::memory_order_relaxed);
    qp->wr_current = nullptr;
    qp->wr_error = ibqp->qp_base.state < IBV_QPS_RTS ? EINVAL : 0; // RESET, INIT, RTR: nothing may be sent yet
    if (context_of(ibqp->qp_base.context)->dead.load(std::memory_order_acquire)) qp->wr_error = EIO;
}

int wr_complete(ibv_qp_ex* ibqp) {
    rf_qp* qp = qp_ex_of(ibqp);
    const int error = qp->wr_error;
    if (!error) {
        qp->control->send.producer.store(qp->wr_producer, std::memory_order_release);
        notify_nic(context_of(ibqp->qp_base.context), qp);
    }
    qp->wr_current = nullptr;
    qp->send_lock.unlock();
    return error;
}

void wr_abort(ibv_qp_ex* ibqp) {
    rf_qp* qp = qp_ex_of(ibqp);
    qp->wr_current = nullptr;
    qp->wr_error = 0;
    qp->send_lock.unlock();
}

void wr_send(ibv_qp_ex* qp) { begin_wqe(qp, IBV_WR_SEND); }

void wr_send_imm(ibv_qp_ex* qp, __be32 imm) {
    if (hw::send_wqe* w = begin_wqe(qp, IBV_WR_SEND_WITH_IMM)) w->immediate = imm;
}

void wr_rdma_write(ibv_qp_ex* qp, uint32_t rkey, uint64_t remote_addr) {
    if (hw::send_wqe* w = begin_wqe(qp, IBV_WR_RDMA_WRITE)) {
        w->rkey = rkey;
        w->remote_address = remote_addr;
    }
}

void wr_rdma_write_imm(ibv_qp_ex* qp, uint32_t rkey, uint64_t remote_addr, __be32 imm) {
    if (hw::send_wqe* w = begin_wqe(qp, IBV_WR_RDMA_WRITE_WITH_IMM)) {
        w->rkey = rkey;
        w->remote_address = remote_addr;
        w->immediate = imm;
    }
}

void wr_rdma_read(ibv_qp_ex* qp, uint32_t rkey, uint64_t remote_addr) {
    if (hw::send_wqe* w = begin_wqe(qp, IBV_WR_RDMA_READ)) {
        w->rkey = rkey;
        w->remote_address = remote_addr;
    }
}

void wr_atomic_cmp_swp(ibv_qp_ex* qp, uint32_t rkey, uint64_t remote_addr, uint64_t compare, uint64_t swap) {
    if (hw::send_wqe* w = begin_wqe(qp, IBV_WR_ATOMIC_CMP_AND_SWP)) {
        w->rkey = rkey;
        w->remote_address = remote_addr;
        w->compare_add = compare;
        w->swap = swap;
    }
}

void wr_atomic_fetch_add(ibv_qp_ex* qp, uint32_t rkey, uint64_t remote_addr, uint64_t add) {
    if (hw::send_wqe* w = begin_wqe(qp, IBV_WR_ATOMIC_FETCH_AND_ADD)) {
        w->rkey = rkey;
        w->remote_address = remote_addr;
        w->compare_add = add;
    }
}

void wr_set_ud_addr(ibv_qp_ex* ibqp, ibv_ah* ah, uint32_t remote_qpn, uint32_t remote_qkey) {
    rf_qp* qp = qp_ex_of(ibqp);
    if (!qp->wr_current) return;
    qp->wr_current->ud_ah = ah ? ah->handle : 0;
    qp->wr_current->ud_remote_qpn = remote_qpn;
    qp->wr_current->ud_remote_qkey = remote_qkey;
}

void wr_set_sge_list(ibv_qp_ex* ibqp, size_t num_sge, const ibv_sge* sg_list) {
    rf_qp* qp = qp_ex_of(ibqp);
    hw::send_wqe* w = qp->wr_current;
    if (!w) return;
    if (num_sge > qp->cap.max_send_sge) {
        qp->wr_error = EINVAL;
        return;
    }
    w->num_sge = static_cast<std::uint8_t>(num_sge);
    w->inline_length = 0;
    for (size_t i = 0; i < num_sge; ++i) w->sg_list[i] = {sg_list[i].addr, sg_list[i].length, sg_list[i].lkey};
}

void wr_set_sge(ibv_qp_ex* qp, uint32_t lkey, uint64_t addr, uint32_t length) {
    const ibv_sge sge{addr, length, lkey};
    wr_set_sge_list(qp, 1, &sge);
}

void wr_set_inline_data_list(ibv_qp_ex* ibqp, size_t num_buf, const ibv_data_buf* buf_list) {
    rf_qp* qp = qp_ex_of(ibqp);
    hw::send_wqe* w = qp->wr_current;
    if (!w) return;
    std::size_t total = 0;
    for (size_t i = 0; i < num_buf; ++i) total += buf_list[i].length;
    if (total > qp->cap.max_inline_data) {
        qp->wr_error = EINVAL;
        return;
    }
    std::size_t at = 0;
    for (size_t i = 0; i < num_buf; ++i) {
        std::memcpy(w->inline_bytes + at, buf_list[i].addr, buf_list[i].length);
        at += buf_list[i].length;
    }
    w->flags |= hw::wqe_flag::inline_data;
    w->inline_length = static_cast<std::uint32_t>(total);
    w->num_sge = 0;
}

void wr_set_inline_data(ibv_qp_ex* qp, void* addr, size_t length) {
    const ibv_data_buf buf{addr, length};
    wr_set_inline_data_list(qp, 1, &buf);
}

ibv_qp* create_qp_ex(ibv_context* context, ibv_qp_init_attr_ex* attr) {
    constexpr std::uint32_t known =
        IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_CREATE_FLAGS | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
    if (!(attr->comp_mask & IBV_QP_INIT_ATTR_PD) || !attr->pd || attr->pd->context != context) {
        errno = EINVAL;
        return nullptr;
    }
    // XRC, RSS, indirection tables and TSO are not offered; nor are creation flags.
    if ((attr->comp_mask & ~known) || ((attr->comp_mask & IBV_QP_INIT_ATTR_CREATE_FLAGS) && attr->create_flags)) {
        errno = EOPNOTSUPP;
        return nullptr;
    }
    constexpr std::uint64_t supported_ops = IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM |
                                            IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM |
                                            IBV_QP_EX_WITH_RDMA_READ | IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP |
                                            IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD;
    const bool send_ops = attr->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
    if (send_ops && (attr->send_ops_flags & ~supported_ops)) {
        errno = EOPNOTSUPP;
        return nullptr;
    }
    ibv_qp_init_attr init{};
    init.qp_context = attr->qp_context;
    init.send_cq = attr->send_cq;
    init.recv_cq = attr->recv_cq;
    init.srq = attr->srq;
    init.cap = attr->cap;
    init.qp_type = attr->qp_type;
    init.sq_sig_all = attr->sq_sig_all;
    rf_qp* qp = create_qp_object(attr->pd, &init);
    if (!qp) return nullptr;
    attr->cap = init.cap;
    if (send_ops) {
        ibv_qp_ex& ex = qp->ex;
        qp->extended = true;
        ex.comp_mask = 0;
        const std::uint64_t ops = attr->send_ops_flags;
        if (ops & IBV_QP_EX_WITH_SEND) ex.wr_send = wr_send;
        if (ops & IBV_QP_EX_WITH_SEND_WITH_IMM) ex.wr_send_imm = wr_send_imm;
        if (ops & IBV_QP_EX_WITH_RDMA_WRITE) ex.wr_rdma_write = wr_rdma_write;
        if (ops & IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM) ex.wr_rdma_write_imm = wr_rdma_write_imm;
        if (ops & IBV_QP_EX_WITH_RDMA_READ) ex.wr_rdma_read = wr_rdma_read;
        if (ops & IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP) ex.wr_atomic_cmp_swp = wr_atomic_cmp_swp;
        if (ops & IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD) ex.wr_atomic_fetch_add = wr_atomic_fetch_add;
        ex.wr_set_ud_addr = wr_set_ud_addr;
        ex.wr_set_inline_data = wr_set_inline_data;
        ex.wr_set_inline_data_list = wr_set_inline_data_list;
        ex.wr_set_sge = wr_set_sge;
        ex.wr_set_sge_list = wr_set_sge_list;
        ex.wr_start = wr_start;
        ex.wr_complete = wr_complete;
        ex.wr_abort = wr_abort;
    }
    return &qp->qp;
}

} // namespace

namespace rocefab::verbs {

void install_extended_ops(verbs_context& context) {
    context.query_device_ex = query_device_ex;
    context.create_cq_ex = create_cq_ex;
    context.create_qp_ex = create_qp_ex;
}

} // namespace rocefab::verbs

extern "C" {

ibv_qp_ex* ibv_qp_to_qp_ex(ibv_qp* qp) {
    rf_qp* q = qp_of(qp);
    // rdma-core returns the extension only for QPs created with send ops flags.
    return q->extended ? &q->ex : nullptr;
}

} // extern "C"
