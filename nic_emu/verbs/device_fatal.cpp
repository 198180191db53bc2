// When the daemon dies the device is dead, as a ConnectX that fails is (IBA 11.6.2, affiliated
// "catastrophic error"): the program gets IBV_EVENT_DEVICE_FATAL, its outstanding work requests
// complete with IBV_WC_WR_FLUSH_ERR (so that a program waiting for them wakes), and verbs fail
// from then on. Nobody else will write the rings now, so the library writes the flush
// completions into them itself, the way mlx5 generates software completions after an internal
// error.
//
// The daemon's death shows as end-of-file on the descriptors whose other end it held (the async
// event pipe, completion channels, the command socket). A program blocked reading one learns at
// once; a program that busy-polls a CQ looks at the command socket every 10 ms while its CQ is
// empty. The dead descriptors are then replaced, under the same numbers, by pipes the library
// owns, holding the events a dead device gives, so that a program reading them blocks after those
// instead of spinning on end-of-file.

#include "nic_emu/verbs/objects.hpp"

#include <cerrno>
#include <ctime>
#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

namespace rocefab::verbs {

namespace {

std::int64_t coarse_now() {
    timespec t{};
    ::clock_gettime(CLOCK_MONOTONIC_COARSE, &t);
    return std::int64_t(t.tv_sec) * 1'000'000'000 + t.tv_nsec;
}

ibv_wc_opcode flushed_opcode(std::uint8_t wr_opcode) {
    switch (wr_opcode) {
    case IBV_WR_RDMA_WRITE:
    case IBV_WR_RDMA_WRITE_WITH_IMM: return IBV_WC_RDMA_WRITE;
    case IBV_WR_RDMA_READ: return IBV_WC_RDMA_READ;
    case IBV_WR_ATOMIC_CMP_AND_SWP: return IBV_WC_COMP_SWAP;
    case IBV_WR_ATOMIC_FETCH_AND_ADD: return IBV_WC_FETCH_ADD;
    default: return IBV_WC_SEND;
    }
}

// A completion into `cq`'s ring, as the NIC would have written it; dropped if the ring is full.
void complete(rf_cq* cq, std::uint64_t wr_id, ibv_wc_opcode opcode, std::uint32_t qp_num) {
    hw::ring_header& ring = cq->control->ring;
    const std::uint32_t producer = ring.producer.load(std::memory_order_relaxed);
    if (producer - ring.consumer.load(std::memory_order_acquire) >= cq->slot_count) {
        cq->control->overflowed.store(1, std::memory_order_relaxed);
        return;
    }
    hw::cqe& e = cq->slots[producer & (cq->slot_count - 1)];
    e = {};
    e.wr_id = wr_id;
    e.status = IBV_WC_WR_FLUSH_ERR;
    e.opcode = opcode;
    e.qp_num = qp_num;
    ring.producer.store(producer + 1, std::memory_order_release);
}

// Every WQE the program posted that the NIC did not retire completes with a flush error.
void flush(rf_qp* qp) {
    hw::ring_header& send = qp->control->send;
    std::uint32_t at = send.consumer.load(std::memory_order_acquire);
    std::uint32_t end = send.producer.load(std::memory_order_relaxed);
    const std::uint32_t send_mask = qp->send_slot_count - 1;
    if (end - at <= qp->send_slot_count)
        for (; at != end; ++at)
            complete(cq_of(qp->qp.send_cq), qp->send_slots[at & send_mask].wr_id,
                     flushed_opcode(qp->send_slots[at & send_mask].opcode), qp->qp.qp_num);
    send.consumer.store(end, std::memory_order_release);
    if (qp->qp.srq) return; // an SRQ's receives belong to it, not to the QP
    hw::ring_header& recv = qp->control->recv;
    at = recv.consumer.load(std::memory_order_acquire);
    end = recv.producer.load(std::memory_order_relaxed);
    if (end - at <= qp->recv_slot_count)
        for (; at != end; ++at)
            complete(cq_of(qp->qp.recv_cq), qp->recv_slots[at & (qp->recv_slot_count - 1)].wr_id, IBV_WC_RECV,
                     qp->qp.qp_num);
    recv.consumer.store(end, std::memory_order_release);
}

// Puts a pipe of the library's in place of `fd` (the same number), holding `bytes`; its write
// end is kept open so that a reader blocks once it has read them. False if that failed.
bool replace_with_pipe(rf_context* ctx, int fd, const void* bytes, std::size_t length) {
    int ends[2];
    if (::pipe2(ends, O_CLOEXEC) != 0) return false;
    if (length) [[maybe_unused]]
        auto written = ::write(ends[1], bytes, length);
    const bool replaced = ::dup3(ends[0], fd, O_CLOEXEC) == fd;
    ::close(ends[0]);
    ctx->dead_device_pipes.push_back(ends[1]);
    return replaced;
}

} // namespace

void device_died(rf_context* ctx) {
    std::lock_guard death(ctx->death_lock);
    if (ctx->dead.exchange(true, std::memory_order_acq_rel)) return;
    std::lock_guard objects(ctx->objects_lock);
    for (auto& [handle, qp] : ctx->qps) {
        std::scoped_lock rings(qp->send_lock, qp->recv_lock);
        flush(qp);
    }
    // Completion events for the armed CQs that hold completions, as the device's last ones.
    std::map<rf_channel*, std::vector<attach::cq_event_record>> events;
    for (auto& [handle, cq] : ctx->cqs) {
        if (!cq->cq.channel) continue;
        const hw::ring_header& ring = cq->control->ring;
        const bool holds =
            ring.producer.load(std::memory_order_acquire) != ring.consumer.load(std::memory_order_acquire);
        if (holds && cq->control->armed.exchange(hw::cq_arm::none) != hw::cq_arm::none)
            events[reinterpret_cast<rf_channel*>(cq->cq.channel)].push_back({handle});
    }
    for (auto& [handle, channel] : ctx->channels) {
        const auto& records = events[channel];
        replace_with_pipe(ctx, channel->channel.fd, records.data(), records.size() * sizeof(attach::cq_event_record));
    }
    const attach::async_event_record fatal{IBV_EVENT_DEVICE_FATAL, 0};
    if (ctx->verbs.context.async_fd >= 0) replace_with_pipe(ctx, ctx->verbs.context.async_fd, &fatal, sizeof fatal);
}

bool read_event(rf_context* ctx, int fd, void* record, std::size_t length) {
    for (;;) {
        // One read, as libibverbs does: a signal that interrupts it returns -1 with EINTR to the
        // program (qperf's server leaves its latency loop that way when its test timer fires).
        const ssize_t got = ::read(fd, record, length);
        if (got != 0 || ctx->dead.load(std::memory_order_acquire)) return got == static_cast<ssize_t>(length);
        device_died(ctx);
    }
}

bool device_alive(rf_context* ctx) {
    if (ctx->dead.load(std::memory_order_acquire)) return false;
    const std::int64_t now = coarse_now();
    if (now < ctx->next_liveness_check.load(std::memory_order_relaxed)) return true;
    ctx->next_liveness_check.store(now + 10'000'000, std::memory_order_relaxed);
    pollfd p{ctx->channel.fd(), POLLRDHUP, 0};
    if (::poll(&p, 1, 0) == 1 && (p.revents & (POLLHUP | POLLRDHUP | POLLERR))) {
        device_died(ctx);
        return false;
    }
    return true;
}

} // namespace rocefab::verbs
