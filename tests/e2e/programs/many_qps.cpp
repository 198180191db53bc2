// many-qps: connects N RC QP pairs between two programs and sends one message on each, the way
// an MPI job or a storage client brings up a connection per peer. Written against plain
// libibverbs. Prints how long the QPs took to create and to connect (the time per
// ibv_modify_qp), and how long one message on every QP took; exits 1 if any work request failed.
//
//   many-qps --server [-n N] [-p PORT] [-d DEV] [-g GID]
//   many-qps HOST     [-n N] [-p PORT] [-d DEV] [-g GID]
//
// The QPs use ConnectX's default transport timers as perftest sets them (timeout 14, about
// 67 ms; retry_cnt 7): with a NIC that keeps up, none of them expires.

#include "tests/e2e/programs/connect_qp.hpp"
#include "tools/tcp_rendezvous.hpp"

#include <infiniband/verbs.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

[[noreturn]] void die(const std::string& what) {
    std::fprintf(stderr, "many-qps: %s\n", what.c_str());
    std::exit(2);
}

constexpr std::uint32_t message_size = 64;

struct peer_qp {
    std::uint32_t qpn;
    std::uint32_t psn;
};

void send_all(int fd, const void* data, std::size_t length) {
    auto* p = static_cast<const char*>(data);
    while (length) {
        const ssize_t n = ::write(fd, p, length);
        if (n <= 0) die("the TCP connection to the peer broke");
        p += n;
        length -= static_cast<std::size_t>(n);
    }
}

void receive_all(int fd, void* data, std::size_t length) {
    auto* p = static_cast<char*>(data);
    while (length) {
        const ssize_t n = ::read(fd, p, length);
        if (n <= 0) die("the TCP connection to the peer broke");
        p += n;
        length -= static_cast<std::size_t>(n);
    }
}

double seconds_since(std::chrono::steady_clock::time_point start) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// Waits for `count` completions on `cq`; returns how many were not successful.
std::uint32_t drain(ibv_cq* cq, std::uint32_t count) {
    std::vector<ibv_wc> wc(256);
    std::uint32_t seen = 0, failed = 0;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
    while (seen < count) {
        const int n = ibv_poll_cq(cq, static_cast<int>(wc.size()), wc.data());
        if (n < 0) die("ibv_poll_cq failed");
        for (int i = 0; i < n; ++i) {
            if (wc[i].status != IBV_WC_SUCCESS) {
                if (failed == 0)
                    std::fprintf(stderr, "many-qps: work request %llu: %s\n",
                                 static_cast<unsigned long long>(wc[i].wr_id), ibv_wc_status_str(wc[i].status));
                ++failed;
            }
        }
        seen += static_cast<std::uint32_t>(n);
        if (std::chrono::steady_clock::now() > deadline) die("completions did not arrive within 120 s");
    }
    return failed;
}

} // namespace

int main(int argc, char** argv) {
    bool server = false;
    const char* host = nullptr;
    const char* device_name = nullptr;
    std::uint32_t count = 2000;
    int port = 18800, gid_index = 1;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        if (a == "--server")
            server = true;
        else if (a == "-n" && i + 1 < argc)
            count = static_cast<std::uint32_t>(std::atoi(argv[++i]));
        else if (a == "-p" && i + 1 < argc)
            port = std::atoi(argv[++i]);
        else if (a == "-d" && i + 1 < argc)
            device_name = argv[++i];
        else if (a == "-g" && i + 1 < argc)
            gid_index = std::atoi(argv[++i]);
        else if (a[0] != '-')
            host = argv[i];
        else
            die("usage: many-qps --server|HOST [-n N] [-p PORT] [-d DEV] [-g GID]");
    }
    if (!server && !host) die("usage: many-qps --server|HOST [-n N] [-p PORT] [-d DEV] [-g GID]");
    if (count == 0 || count > 16384) die("-n takes 1 to 16384");

    int devices = 0;
    ibv_device** list = ibv_get_device_list(&devices);
    if (!list || devices == 0) die("no RDMA device");
    ibv_device* chosen = list[0];
    for (int i = 0; device_name && i < devices; ++i)
        if (std::strcmp(ibv_get_device_name(list[i]), device_name) == 0) chosen = list[i];
    ibv_context* context = ibv_open_device(chosen);
    if (!context) die("ibv_open_device failed");
    ibv_pd* pd = ibv_alloc_pd(context);
    ibv_gid gid{};
    if (!pd || ibv_query_gid(context, 1, gid_index, &gid)) die("cannot allocate a PD or read the GID");
    ibv_cq* cq = ibv_create_cq(context, static_cast<int>(count), nullptr, nullptr, 0);
    if (!cq) die("ibv_create_cq failed");
    std::vector<std::uint8_t> buffer(std::size_t(count) * message_size);
    ibv_mr* mr = ibv_reg_mr(pd, buffer.data(), buffer.size(), IBV_ACCESS_LOCAL_WRITE);
    if (!mr) die("ibv_reg_mr failed");

    const auto created = std::chrono::steady_clock::now();
    std::vector<ibv_qp*> qps(count);
    for (auto& qp : qps) {
        ibv_qp_init_attr init{};
        init.send_cq = init.recv_cq = cq;
        init.qp_type = IBV_QPT_RC;
        init.cap.max_send_wr = init.cap.max_recv_wr = 2;
        init.cap.max_send_sge = init.cap.max_recv_sge = 1;
        qp = ibv_create_qp(pd, &init);
        if (!qp) die(std::string("ibv_create_qp failed: ") + std::strerror(errno));
    }
    const double create_seconds = seconds_since(created);

    std::string error;
    const int fd = rocefab::tools::tcp_rendezvous(host, port, server, 600, error);
    if (fd < 0) die(error);
    std::vector<peer_qp> mine(count), theirs(count);
    for (std::uint32_t i = 0; i < count; ++i) mine[i] = {qps[i]->qp_num, (i * 7919u) & 0xffffff};
    ibv_gid their_gid{};
    send_all(fd, &gid, sizeof gid);
    send_all(fd, mine.data(), mine.size() * sizeof(peer_qp));
    receive_all(fd, &their_gid, sizeof their_gid);
    receive_all(fd, theirs.data(), theirs.size() * sizeof(peer_qp));

    const auto connecting = std::chrono::steady_clock::now();
    for (std::uint32_t i = 0; i < count; ++i) {
        const char* step = nullptr;
        if (rocefab::test_programs::connect_qp(qps[i], their_gid, theirs[i].qpn,
                                               {.sq_psn = mine[i].psn,
                                                .rq_psn = theirs[i].psn,
                                                .access = IBV_ACCESS_REMOTE_WRITE,
                                                .gid_index = static_cast<std::uint8_t>(gid_index)},
                                               &step))
            die(std::string("to ") + step + " failed");
    }
    const double connect_seconds = seconds_since(connecting);

    // Receives are posted before the peer hears "ready": no SEND meets an empty queue.
    if (server) {
        for (std::uint32_t i = 0; i < count; ++i) {
            ibv_sge sge{reinterpret_cast<std::uint64_t>(buffer.data()) + i * message_size, message_size, mr->lkey};
            ibv_recv_wr wr{}, *bad = nullptr;
            wr.wr_id = i;
            wr.sg_list = &sge;
            wr.num_sge = 1;
            if (ibv_post_recv(qps[i], &wr, &bad)) die("ibv_post_recv failed");
        }
    }
    char ready = 'r';
    send_all(fd, &ready, 1);
    receive_all(fd, &ready, 1);

    const auto sending = std::chrono::steady_clock::now();
    std::uint32_t failed = 0;
    if (!server) {
        for (std::uint32_t i = 0; i < count; ++i) {
            std::memset(buffer.data() + i * message_size, static_cast<int>(i & 0xff), message_size);
            ibv_sge sge{reinterpret_cast<std::uint64_t>(buffer.data()) + i * message_size, message_size, mr->lkey};
            ibv_send_wr wr{}, *bad = nullptr;
            wr.wr_id = i;
            wr.sg_list = &sge;
            wr.num_sge = 1;
            wr.opcode = IBV_WR_SEND;
            wr.send_flags = IBV_SEND_SIGNALED;
            if (ibv_post_send(qps[i], &wr, &bad)) die("ibv_post_send failed");
        }
    }
    failed += drain(cq, count);
    const double traffic_seconds = seconds_since(sending);
    if (server)
        for (std::uint32_t i = 0; i < count; ++i)
            for (std::uint32_t b = 0; b < message_size; ++b)
                if (buffer[i * message_size + b] != (i & 0xff)) {
                    if (!failed) std::fprintf(stderr, "many-qps: QP %u's message arrived changed\n", i);
                    ++failed;
                    break;
                }
    send_all(fd, &ready, 1); // done: neither side destroys a QP the other still uses
    receive_all(fd, &ready, 1);

    std::printf("qps %u: created in %.3f s, connected in %.3f s (%u ibv_modify_qp, %.1f us each); "
                "one %u-byte SEND on every QP in %.3f s; %u failed\n",
                count, create_seconds, connect_seconds, 3 * count, connect_seconds * 1e6 / (3.0 * count), message_size,
                traffic_seconds, failed);
    for (auto* qp : qps) ibv_destroy_qp(qp);
    ibv_destroy_cq(cq);
    ibv_dereg_mr(mr);
    ibv_dealloc_pd(pd);
    ibv_close_device(context);
    ibv_free_device_list(list);
    return failed ? 1 : 0;
}
