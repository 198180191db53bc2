// device-fatal-check: what a program sees when its RDMA device dies under it, as a ConnectX
// that fails: IBV_EVENT_DEVICE_FATAL, every outstanding work request completed with
// IBV_WC_WR_FLUSH_ERR, and verbs failing afterwards. Written against plain libibverbs.
//
//   device-fatal-check --peer-socket S --wait async|cq-event|poll
//
// Runs on host h1 (`rocefab run --host h1`); S is host h2's attach socket. It connects a QP on
// h1 (X) to one on h2 (Y) and leaves work outstanding: eight receives on X, and a SEND from X
// that Y answers with RNR NAKs for ever (Y has no receive, rnr_retry 7). It prints "ready", and
// the test kills the device (the daemon). Then it waits the way the --wait mode says: blocked
// in ibv_get_async_event, blocked in ibv_get_cq_event on an armed CQ, or busy-polling the CQ.
// It prints "noticed at NS" (CLOCK_REALTIME) as soon as that returns, then checks the rest and
// prints one line per finding, "ok" at the end; it exits 1 if anything differed.
// Before "ready", with nothing to come yet, it checks that a signal interrupts both blocking
// waits as libibverbs' single read() lets it: -1 with EINTR (a handler without SA_RESTART).

#include "tests/e2e/programs/connect_qp.hpp"
#include "tests/e2e/programs/interrupted_wait.hpp"

#include <infiniband/verbs.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>
#include <vector>

namespace {

bool all_ok = true;

[[noreturn]] void die(const std::string& what) {
    std::fprintf(stderr, "device-fatal-check: %s\n", what.c_str());
    std::exit(2);
}

void check(bool ok, const std::string& what) {
    std::printf("%s: %s\n", ok ? "ok" : "FAILED", what.c_str());
    std::fflush(stdout);
    all_ok &= ok;
}

std::int64_t realtime_ns() {
    timespec t{};
    ::clock_gettime(CLOCK_REALTIME, &t);
    return std::int64_t(t.tv_sec) * 1'000'000'000 + t.tv_nsec;
}

// Calls `wait` under a signal (interrupted_wait.hpp) and checks it returned -1 with EINTR.
template <typename Wait> void check_interrupted(const std::string& verb, Wait wait) {
    int error = 0;
    const int got = rocefab::test_programs::call_interrupted(wait, error);
    check(got == -1 && error == EINTR, verb + " interrupted by a signal returns -1 with EINTR (got " +
                                           std::to_string(got) + ", " + std::strerror(error) + ")");
}

struct side {
    ibv_context* context = nullptr;
    ibv_comp_channel* channel = nullptr;
    ibv_pd* pd = nullptr;
    ibv_cq* cq = nullptr;
    ibv_qp* qp = nullptr;
    ibv_mr* mr = nullptr;
    ibv_gid gid{};
    std::vector<std::uint8_t> buffer = std::vector<std::uint8_t>(1 << 16);
};

void open_side(side& s, const char* socket) {
    if (socket) {
        ::setenv("ROCEFAB_SOCKET", socket, 1);
        ::setenv("ROCEFAB_HOST", "h2", 1);
    }
    int count = 0;
    ibv_device** list = ibv_get_device_list(&count);
    if (!list || count < 1) die("no RDMA device");
    s.context = ibv_open_device(list[0]);
    ibv_free_device_list(list);
    if (!s.context) die("ibv_open_device failed");
    s.channel = ibv_create_comp_channel(s.context);
    s.pd = ibv_alloc_pd(s.context);
    s.cq = s.channel && s.pd ? ibv_create_cq(s.context, 64, nullptr, s.channel, 0) : nullptr;
    s.mr = s.pd ? ibv_reg_mr(s.pd, s.buffer.data(), s.buffer.size(), IBV_ACCESS_LOCAL_WRITE) : nullptr;
    ibv_qp_init_attr init{};
    init.send_cq = init.recv_cq = s.cq;
    init.qp_type = IBV_QPT_RC;
    init.cap.max_send_wr = init.cap.max_recv_wr = 16;
    init.cap.max_send_sge = init.cap.max_recv_sge = 1;
    s.qp = s.cq ? ibv_create_qp(s.pd, &init) : nullptr;
    if (!s.qp || !s.mr || ibv_query_gid(s.context, 1, 1, &s.gid)) die("cannot set up a QP");
}

void bring_up(side& s, const side& peer) {
    const char* step = nullptr;
    // The peer never posts a receive: rnr_retry 7 keeps the SEND waiting for ever.
    if (rocefab::test_programs::connect_qp(s.qp, peer.gid, peer.qp->qp_num, {.rnr_retry = 7, .min_rnr_timer = 1},
                                           &step))
        die(std::string("to ") + step + " failed");
}

} // namespace

int main(int argc, char** argv) {
    const char* peer_socket = nullptr;
    std::string wait = "async";
    for (int i = 1; i + 1 < argc; i += 2) {
        if (std::strcmp(argv[i], "--peer-socket") == 0)
            peer_socket = argv[i + 1];
        else if (std::strcmp(argv[i], "--wait") == 0)
            wait = argv[i + 1];
        else
            die(std::string("unknown option ") + argv[i]);
    }
    if (!peer_socket || (wait != "async" && wait != "cq-event" && wait != "poll"))
        die("usage: device-fatal-check --peer-socket S --wait async|cq-event|poll");
    side x, y;
    open_side(x, nullptr);
    open_side(y, peer_socket);
    bring_up(x, y);
    bring_up(y, x);
    constexpr int receives = 8;
    for (int i = 0; i < receives; ++i) {
        ibv_sge sge{reinterpret_cast<std::uint64_t>(x.buffer.data()) + 64 * i, 64, x.mr->lkey};
        ibv_recv_wr wr{}, *bad = nullptr;
        wr.wr_id = 100 + i;
        wr.sg_list = &sge;
        wr.num_sge = 1;
        if (ibv_post_recv(x.qp, &wr, &bad)) die("ibv_post_recv failed");
    }
    ibv_sge sge{reinterpret_cast<std::uint64_t>(x.buffer.data()) + 4096, 64, x.mr->lkey};
    ibv_send_wr send{}, *bad_send = nullptr;
    send.wr_id = 200;
    send.sg_list = &sge;
    send.num_sge = 1;
    send.opcode = IBV_WR_SEND;
    send.send_flags = IBV_SEND_SIGNALED;
    if (ibv_post_send(x.qp, &send, &bad_send)) die("ibv_post_send failed");
    if (ibv_req_notify_cq(x.cq, 0)) die("ibv_req_notify_cq failed");
    check_interrupted("ibv_get_cq_event", [&] {
        ibv_cq* cq = nullptr;
        void* cq_context = nullptr;
        return ibv_get_cq_event(x.channel, &cq, &cq_context);
    });
    check_interrupted("ibv_get_async_event", [&] {
        ibv_async_event event{};
        return ibv_get_async_event(x.context, &event);
    });
    std::printf("ready\n");
    std::fflush(stdout);

    std::vector<ibv_wc> completions;
    ibv_async_event event{};
    bool have_event = false;
    if (wait == "async") {
        have_event = ibv_get_async_event(x.context, &event) == 0;
    } else if (wait == "cq-event") {
        ibv_cq* cq = nullptr;
        void* cq_context = nullptr;
        const int got = ibv_get_cq_event(x.channel, &cq, &cq_context);
        check(got == 0 && cq == x.cq, "ibv_get_cq_event returned an event for the CQ");
        if (got == 0) ibv_ack_cq_events(cq, 1);
    } else {
        for (;;) {
            ibv_wc wc{};
            const int n = ibv_poll_cq(x.cq, 1, &wc);
            if (n < 0) break;
            if (n == 1) {
                completions.push_back(wc);
                break;
            }
        }
    }
    std::printf("noticed at %lld\n", static_cast<long long>(realtime_ns()));
    std::fflush(stdout);

    if (!have_event) have_event = ibv_get_async_event(x.context, &event) == 0;
    check(have_event && event.event_type == IBV_EVENT_DEVICE_FATAL, "IBV_EVENT_DEVICE_FATAL");
    if (have_event) ibv_ack_async_event(&event);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
    while (completions.size() < receives + 1 && std::chrono::steady_clock::now() < deadline) {
        ibv_wc wc{};
        if (ibv_poll_cq(x.cq, 1, &wc) == 1) completions.push_back(wc);
    }
    int flushed = 0, receive_ids = 0;
    bool send_seen = false;
    for (const auto& wc : completions) {
        flushed += wc.status == IBV_WC_WR_FLUSH_ERR;
        receive_ids += wc.wr_id >= 100 && wc.wr_id < 100 + receives;
        send_seen |= wc.wr_id == 200;
    }
    check(completions.size() == receives + 1 && flushed == receives + 1 && receive_ids == receives && send_seen,
          std::to_string(completions.size()) + " completions, " + std::to_string(flushed) +
              " with IBV_WC_WR_FLUSH_ERR (9 expected: 8 receives and the SEND)");
    const int post = ibv_post_send(x.qp, &send, &bad_send);
    check(post != 0, std::string("ibv_post_send afterwards fails: ") + std::strerror(post));
    errno = 0;
    ibv_pd* pd = ibv_alloc_pd(x.context);
    check(pd == nullptr && errno == EIO, std::string("ibv_alloc_pd afterwards fails: ") + std::strerror(errno));
    ibv_port_attr port{};
    check(ibv_query_port(x.context, 1, &port) != 0, "ibv_query_port afterwards fails");
    // What the program held can still be given back, and the device closed.
    for (side* s : {&x, &y}) {
        const bool freed = !ibv_destroy_qp(s->qp) && !ibv_destroy_cq(s->cq) && !ibv_dereg_mr(s->mr) &&
                           !ibv_destroy_comp_channel(s->channel) && !ibv_dealloc_pd(s->pd) &&
                           !ibv_close_device(s->context);
        check(freed, "every object destroyed and the device closed");
    }
    std::printf(all_ok ? "all ok\n" : "some checks FAILED\n");
    return all_ok ? 0 : 1;
}
