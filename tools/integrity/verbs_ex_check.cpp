// verbs-ex-check: exercises the extended verbs API between two hosts, written against plain
// libibverbs so it runs on real RDMA hardware too: ibv_query_device_ex, ibv_query_gid_ex,
// ibv_create_cq_ex (start_poll/next_poll/end_poll and the readers), ibv_create_qp_ex with send
// ops and the ibv_wr_* builders, ibv_reg_mr_iova2.
//
//   verbs-ex-check --server [-d DEV] [-g GID] [-p PORT]
//   verbs-ex-check HOST     [-d DEV] [-g GID] [-p PORT]
//
// The client RDMA-writes a pattern with ibv_wr_rdma_write, then sends an inline message with
// immediate data (ibv_wr_send_imm + ibv_wr_set_inline_data); the server checks both through its
// ibv_cq_ex. Prints "verbs-ex-check: ok" and exits 0, or names the first thing that differed.

#include "tools/tcp_rendezvous.hpp"

#include <infiniband/verbs.h>

#include <arpa/inet.h>
#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

[[noreturn]] void die(const std::string& what) {
    std::fprintf(stderr, "verbs-ex-check: %s\n", what.c_str());
    std::exit(1);
}

void check(bool ok, const std::string& what) {
    if (!ok) die(what);
}

struct endpoint {
    std::uint32_t qpn;
    std::uint32_t psn;
    std::uint32_t rkey;
    std::uint64_t address;
    ibv_gid gid;
};

int connect_tcp(const char* host, int port, bool server) {
    std::string error;
    const int fd = rocefab::tools::tcp_rendezvous(host, port, server, 100, error);
    if (fd < 0) die(error);
    return fd;
}

void exchange(int fd, const endpoint& mine, endpoint& theirs) {
    check(write(fd, &mine, sizeof mine) == sizeof mine, "exchange write failed");
    std::size_t got = 0;
    while (got < sizeof theirs) {
        const ssize_t n = read(fd, reinterpret_cast<char*>(&theirs) + got, sizeof theirs - got);
        check(n > 0, "exchange read failed");
        got += static_cast<std::size_t>(n);
    }
}

void sync(int fd) {
    char c = 's';
    check(write(fd, &c, 1) == 1 && read(fd, &c, 1) == 1, "sync failed");
}

// Polls one completion through the extended CQ API.
void poll_one(ibv_cq_ex* cq, ibv_wc_status& status, ibv_wc_opcode& opcode, std::uint32_t& byte_len, std::uint32_t& imm,
              unsigned& flags, std::uint64_t& wr_id) {
    ibv_poll_cq_attr attr{};
    for (int spin = 0;; ++spin) {
        const int rc = ibv_start_poll(cq, &attr);
        if (rc == 0) break;
        check(rc == ENOENT, "ibv_start_poll failed: " + std::to_string(rc));
        check(spin < 50'000'000, "no completion arrived");
    }
    status = cq->status;
    wr_id = cq->wr_id;
    opcode = ibv_wc_read_opcode(cq);
    byte_len = ibv_wc_read_byte_len(cq);
    flags = ibv_wc_read_wc_flags(cq);
    imm = (flags & IBV_WC_WITH_IMM) ? ntohl(ibv_wc_read_imm_data(cq)) : 0;
    check(ibv_next_poll(cq) == ENOENT, "more completions than expected");
    ibv_end_poll(cq);
}

} // namespace

int main(int argc, char** argv) {
    bool server = false;
    const char* host = nullptr;
    const char* device_name = nullptr;
    int gid_index = 1, port = 18600;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        if (a == "--server")
            server = true;
        else if (a == "-d" && i + 1 < argc)
            device_name = argv[++i];
        else if (a == "-g" && i + 1 < argc)
            gid_index = std::atoi(argv[++i]);
        else if (a == "-p" && i + 1 < argc)
            port = std::atoi(argv[++i]);
        else if (a[0] != '-')
            host = argv[i];
        else
            die("usage: verbs-ex-check --server|HOST [-d DEV] [-g GID] [-p PORT]");
    }
    check(server || host, "usage: verbs-ex-check --server|HOST [-d DEV] [-g GID] [-p PORT]");

    int count = 0;
    ibv_device** list = ibv_get_device_list(&count);
    check(list && count > 0, "no RDMA device");
    ibv_device* device = list[0];
    for (int i = 0; device_name && i < count; ++i)
        if (std::strcmp(ibv_get_device_name(list[i]), device_name) == 0) device = list[i];
    ibv_context* context = ibv_open_device(device);
    check(context, "ibv_open_device failed");
    // A context keeps its device: UCX frees the list right after opening and names the device
    // from context->device afterwards; rdma-core hands out the same device in every list.
    const std::string opened = ibv_get_device_name(device);
    ibv_free_device_list(list);
    check(opened == ibv_get_device_name(context->device), "the context's device died with the list");
    list = ibv_get_device_list(&count);
    check(list && std::find(list, list + count, context->device) != list + count,
          "a new device list names a different device for the same NIC");

    ibv_device_attr_ex device_attr{};
    check(ibv_query_device_ex(context, nullptr, &device_attr) == 0, "ibv_query_device_ex failed");
    check(device_attr.orig_attr.max_qp_wr > 0 && device_attr.orig_attr.phys_port_cnt >= 1,
          "ibv_query_device_ex returned no limits");
    check(device_attr.phys_port_cnt_ex == device_attr.orig_attr.phys_port_cnt,
          "phys_port_cnt_ex differs from phys_port_cnt");
    ibv_gid_entry gid_entry{};
    check(ibv_query_gid_ex(context, 1, static_cast<std::uint32_t>(gid_index), &gid_entry, 0) == 0,
          "ibv_query_gid_ex failed");
    check(gid_entry.gid_type == IBV_GID_TYPE_ROCE_V2, "GID is not RoCE v2");

    ibv_pd* pd = ibv_alloc_pd(context);
    check(pd, "ibv_alloc_pd failed");
    std::vector<std::uint8_t> buffer(1 << 16);
    const std::uint64_t iova = 0x100000000ull; // the peer addresses the buffer by this IOVA
    ibv_mr* mr =
        ibv_reg_mr_iova2(pd, buffer.data(), buffer.size(), iova, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
    check(mr, "ibv_reg_mr_iova2 failed");

    ibv_cq_init_attr_ex cq_attr{};
    cq_attr.cqe = 16;
    cq_attr.wc_flags = IBV_WC_EX_WITH_BYTE_LEN | IBV_WC_EX_WITH_IMM | IBV_WC_EX_WITH_QP_NUM;
    ibv_cq_ex* cq = ibv_create_cq_ex(context, &cq_attr);
    check(cq, std::string("ibv_create_cq_ex failed: ") + std::strerror(errno));

    ibv_qp_init_attr_ex qp_attr{};
    qp_attr.send_cq = ibv_cq_ex_to_cq(cq);
    qp_attr.recv_cq = ibv_cq_ex_to_cq(cq);
    qp_attr.cap.max_send_wr = 8;
    qp_attr.cap.max_recv_wr = 8;
    qp_attr.cap.max_send_sge = 1;
    qp_attr.cap.max_recv_sge = 1;
    qp_attr.cap.max_inline_data = 64;
    qp_attr.qp_type = IBV_QPT_RC;
    qp_attr.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
    qp_attr.pd = pd;
    qp_attr.send_ops_flags = IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_SEND_WITH_IMM;
    ibv_qp* qp = ibv_create_qp_ex(context, &qp_attr);
    check(qp, std::string("ibv_create_qp_ex failed: ") + std::strerror(errno));
    ibv_qp_ex* qpx = ibv_qp_to_qp_ex(qp);
    check(qpx, "ibv_qp_to_qp_ex returned NULL for a QP created with send ops");

    endpoint mine{qp->qp_num, 4242, mr->rkey, iova, gid_entry.gid}, theirs{};
    const int fd = connect_tcp(host, port, server);
    exchange(fd, mine, theirs);

    ibv_qp_attr attr{};
    attr.qp_state = IBV_QPS_INIT;
    attr.port_num = 1;
    attr.qp_access_flags = IBV_ACCESS_REMOTE_WRITE;
    check(ibv_modify_qp(qp, &attr, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS) == 0,
          "to INIT failed");
    attr = {};
    attr.qp_state = IBV_QPS_RTR;
    attr.path_mtu = IBV_MTU_1024;
    attr.dest_qp_num = theirs.qpn;
    attr.rq_psn = theirs.psn;
    attr.max_dest_rd_atomic = 1;
    attr.min_rnr_timer = 12;
    attr.ah_attr.is_global = 1;
    attr.ah_attr.port_num = 1;
    attr.ah_attr.grh.dgid = theirs.gid;
    attr.ah_attr.grh.sgid_index = static_cast<std::uint8_t>(gid_index);
    attr.ah_attr.grh.hop_limit = 64;
    check(ibv_modify_qp(qp, &attr,
                        IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                            IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER) == 0,
          "to RTR failed");
    attr = {};
    attr.qp_state = IBV_QPS_RTS;
    attr.timeout = 14;
    attr.retry_cnt = 7;
    attr.rnr_retry = 7;
    attr.sq_psn = mine.psn;
    attr.max_rd_atomic = 1;
    check(ibv_modify_qp(qp, &attr,
                        IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
                            IBV_QP_MAX_QP_RD_ATOMIC) == 0,
          "to RTS failed");

    const char message[] = "extended verbs";
    const std::size_t write_length = 5000;
    ibv_wc_status status;
    ibv_wc_opcode opcode;
    std::uint32_t byte_len, imm;
    unsigned flags;
    std::uint64_t wr_id;
    if (server) {
        ibv_sge sge{reinterpret_cast<std::uint64_t>(buffer.data()) + 8192, 64, mr->lkey};
        ibv_recv_wr wr{}, *bad = nullptr;
        wr.wr_id = 7;
        wr.sg_list = &sge;
        wr.num_sge = 1;
        check(ibv_post_recv(qp, &wr, &bad) == 0, "ibv_post_recv failed");
        sync(fd);
        poll_one(cq, status, opcode, byte_len, imm, flags, wr_id);
        check(status == IBV_WC_SUCCESS, std::string("receive completed with ") + ibv_wc_status_str(status));
        check(opcode == IBV_WC_RECV, "receive opcode is not IBV_WC_RECV");
        check(wr_id == 7, "receive wr_id differs");
        check(byte_len == sizeof message, "receive byte_len is " + std::to_string(byte_len));
        check((flags & IBV_WC_WITH_IMM) && imm == 0xfeedbeef, "immediate data missing or wrong");
        check(std::memcmp(buffer.data() + 8192, message, sizeof message) == 0, "inline payload differs");
        for (std::size_t i = 0; i < write_length; ++i)
            check(buffer[i] == static_cast<std::uint8_t>(i * 13 + 1),
                  "RDMA WRITE byte " + std::to_string(i) + " differs");
    } else {
        for (std::size_t i = 0; i < write_length; ++i) buffer[i] = static_cast<std::uint8_t>(i * 13 + 1);
        sync(fd);
        ibv_wr_start(qpx);
        qpx->wr_id = 1;
        qpx->wr_flags = 0; // unsignalled
        ibv_wr_rdma_write(qpx, theirs.rkey, theirs.address);
        ibv_wr_set_sge(qpx, mr->lkey, reinterpret_cast<std::uint64_t>(buffer.data()), write_length);
        qpx->wr_id = 2;
        qpx->wr_flags = IBV_SEND_SIGNALED;
        ibv_wr_send_imm(qpx, htonl(0xfeedbeef));
        ibv_wr_set_inline_data(qpx, const_cast<char*>(message), sizeof message);
        check(ibv_wr_complete(qpx) == 0, "ibv_wr_complete failed");
        poll_one(cq, status, opcode, byte_len, imm, flags, wr_id);
        check(status == IBV_WC_SUCCESS, std::string("send completed with ") + ibv_wc_status_str(status));
        check(opcode == IBV_WC_SEND && wr_id == 2, "send completion differs");
    }
    sync(fd);
    close(fd);
    ibv_destroy_qp(qp);
    ibv_destroy_cq(ibv_cq_ex_to_cq(cq));
    ibv_dereg_mr(mr);
    ibv_dealloc_pd(pd);
    ibv_close_device(context);
    ibv_free_device_list(list);
    std::printf("verbs-ex-check: ok\n");
    return 0;
}
