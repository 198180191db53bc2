// Connects to ADDRESS:PORT with the real <rdma/rdma_cma.h> API, as any rdma_cm program does,
// and prints every event it gets with its status, then exits 0 when the last one is EXPECTED:
//   cm-connect-check ADDRESS PORT EXPECTED_EVENT [timeout_ms [udp]]
// e.g. "cm-connect-check 10.0.0.2 4999 RDMA_CM_EVENT_REJECTED" for a port nobody listens on;
// with "udp", a UD id in RDMA_PS_UDP, whose connect is a SIDR_REQ.
// Also checks that the event channel's descriptor works with poll(), as rping's does, and first,
// with no event to come yet, that a signal interrupts a blocked rdma_get_cm_event as librdmacm's
// single write() to the ucma device lets it: -1 with EINTR (a handler without SA_RESTART); it
// prints "interrupted: -1 EINTR", or exits 1 if the call went on waiting.
#include "tests/e2e/programs/interrupted_wait.hpp"

#include <rdma/rdma_cma.h>

#include <arpa/inet.h>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <poll.h>
#include <string>

namespace {
// rdma_get_cm_event on a channel with nothing to come, interrupted by a signal.
void check_interrupted(rdma_event_channel* channel) {
    rdma_cm_event* event = nullptr;
    int error = 0;
    const int got = rocefab::test_programs::call_interrupted([&] { return rdma_get_cm_event(channel, &event); }, error);
    if (got == -1 && error == EINTR) {
        std::printf("interrupted: -1 EINTR\n");
        return;
    }
    std::printf("interrupted: %d %s\n", got, std::strerror(error));
    std::exit(1);
}

rdma_cm_event* next_event(rdma_event_channel* channel) {
    pollfd p{channel->fd, POLLIN, 0};
    if (poll(&p, 1, 120000) != 1) {
        std::printf("no event within 120 s\n");
        std::exit(2);
    }
    rdma_cm_event* event = nullptr;
    if (rdma_get_cm_event(channel, &event)) {
        std::printf("rdma_get_cm_event: %s\n", std::strerror(errno));
        std::exit(2);
    }
    std::printf("event %s status %d\n", rdma_event_str(event->event), event->status);
    return event;
}
} // namespace

int main(int argc, char** argv) {
    if (argc < 4) {
        std::fprintf(stderr, "usage: %s ADDRESS PORT EXPECTED_EVENT [timeout_ms]\n", argv[0]);
        return 2;
    }
    const int timeout = argc > 4 ? std::atoi(argv[4]) : 2000;
    const bool udp = argc > 5 && std::string(argv[5]) == "udp";
    sockaddr_in dst{};
    dst.sin_family = AF_INET;
    dst.sin_port = htons(static_cast<std::uint16_t>(std::atoi(argv[2])));
    if (inet_pton(AF_INET, argv[1], &dst.sin_addr) != 1) return 2;
    rdma_event_channel* channel = rdma_create_event_channel();
    if (!channel) {
        std::printf("rdma_create_event_channel: %s\n", std::strerror(errno));
        return 2;
    }
    check_interrupted(channel);
    rdma_cm_id* id = nullptr;
    if (rdma_create_id(channel, &id, nullptr, udp ? RDMA_PS_UDP : RDMA_PS_TCP)) return 2;
    if (rdma_resolve_addr(id, nullptr, reinterpret_cast<sockaddr*>(&dst), timeout)) {
        std::printf("rdma_resolve_addr: %s\n", std::strerror(errno));
        return 2;
    }
    rdma_cm_event* event = next_event(channel);
    std::string last = rdma_event_str(event->event);
    bool go_on = event->event == RDMA_CM_EVENT_ADDR_RESOLVED;
    rdma_ack_cm_event(event);
    if (go_on) {
        if (rdma_resolve_route(id, timeout)) return 2;
        event = next_event(channel);
        last = rdma_event_str(event->event);
        go_on = event->event == RDMA_CM_EVENT_ROUTE_RESOLVED;
        rdma_ack_cm_event(event);
    }
    if (go_on) {
        ibv_qp_init_attr attr{};
        attr.cap.max_send_wr = attr.cap.max_recv_wr = 4;
        attr.cap.max_send_sge = attr.cap.max_recv_sge = 1;
        attr.qp_type = udp ? IBV_QPT_UD : IBV_QPT_RC;
        if (rdma_create_qp(id, nullptr, &attr)) {
            std::printf("rdma_create_qp: %s\n", std::strerror(errno));
            return 2;
        }
        rdma_conn_param param{};
        param.retry_count = 7;
        param.rnr_retry_count = 7;
        const char hello[] = "hello from cm-connect-check";
        param.private_data = hello;
        param.private_data_len = sizeof hello;
        if (rdma_connect(id, &param)) {
            std::printf("rdma_connect: %s\n", std::strerror(errno));
            return 2;
        }
        event = next_event(channel);
        last = rdma_event_str(event->event);
        rdma_ack_cm_event(event);
        rdma_destroy_qp(id);
    }
    rdma_destroy_id(id);
    rdma_destroy_event_channel(channel);
    return last == argv[3] ? 0 : 1;
}
