// rdma-error-paths: the RC error paths end to end, written against plain libibverbs so it runs on
// real RDMA hardware too. Each case brings up a fresh QP pair (and an MR with just the access the
// case needs), provokes one error, and checks what hardware gives: the completion's status,
// opcode, wr_id and qp_num, the QP state on both sides (ibv_query_qp), and that work behind the
// failed WR is flushed. After every case a healthy QP pair, created at start-up alongside, must
// still move data correctly: one failing QP never takes the device down with it.
//
//   rdma-error-paths --server [-d DEV] [-g GID] [-p PORT]
//   rdma-error-paths HOST     [-d DEV] [-g GID] [-p PORT] [--case NAME|all]
//
// Cases (the client is the requester; the server the responder):
//   wrong_rkey           RDMA WRITE with an rkey no MR has: IBV_WC_REM_ACCESS_ERR, both QPs to ERR
//   out_of_bounds_write  RDMA WRITE that runs past the end of the remote MR: the same
//   read_without_access  RDMA READ of an MR registered without IBV_ACCESS_REMOTE_READ: the same
//   rnr_exhausted        SEND with no receive posted, rnr_retry 2: IBV_WC_RNR_RETRY_EXC_ERR; the
//                        requester goes to ERR, the responder stays in RTS (IBA 9.7.5.2.8)
//   flush_on_error       SENDs held by RNR NAKs (rnr_retry 7) and posted receives, then the QP is
//                        moved to ERR: every WR, and one posted afterwards, ends IBV_WC_WR_FLUSH_ERR
//                        (IBA 10.3.1)
//   retry_exhausted      RDMA WRITE with the cable down: IBV_WC_RETRY_EXC_ERR after retry_cnt
//                        retries (IBA 9.7.6.1.3). Not in "all": the client prints
//                        "ready-for-link-down" and waits for a line on stdin before posting, then
//                        "ready-for-link-up" and waits for another before the healthy check.
//   registration_refused ibv_reg_mr of memory that is not mapped, or read-only with write access,
//                        fails with EFAULT (pinning refuses it); read-only with read access works
//   write_to_unmapped    RDMA WRITE into an MR whose pages the server unmapped after registering
//   write_to_read_only   RDMA WRITE into an MR (shared memory) the server made read-only after
//                        registering: both IBV_WC_REM_ACCESS_ERR and both QPs to ERR, as an
//                        on-demand-paging MR (IBV_ACCESS_ON_DEMAND) answers when its page fault
//                        fails. rocefab's MRs follow the program's mappings as ODP MRs do; a
//                        pinned MR on hardware would take the write. Not in "all".
//
// The transport timeout is 10 (4.096 us * 2^10 = 4.2 ms) with retry_cnt 3: four tries, about
// 17 ms, so retry exhaustion is well under a second.
//
// The client prints "case NAME: ok (STATUS)" per case and exits 0, or "case NAME: FAILED: what
// differed" and exits 1. The server prints the same lines for its side.

#include "tools/tcp_rendezvous.hpp"

#include <infiniband/verbs.h>

#include <arpa/inet.h>
#include <netdb.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

namespace {

[[noreturn]] void die(const std::string& what) {
    std::fprintf(stderr, "rdma-error-paths: %s\n", what.c_str());
    std::exit(2);
}

void require(bool ok, const std::string& what) {
    if (!ok) die(what);
}

constexpr std::uint8_t transport_timeout = 10; // 4.096 us * 2^10 = 4.2 ms
constexpr std::uint8_t retry_count = 3;        // four tries: about 17 ms to retry exhaustion
constexpr std::uint8_t rnr_retry_finite = 2;
constexpr std::uint8_t rnr_retry_forever = 7;
constexpr std::uint8_t min_rnr_timer_short = 1; // 0.01 ms
constexpr std::size_t case_mr_size = 4096;
constexpr std::size_t healthy_mr_size = 1 << 16;
constexpr std::size_t healthy_write_length = 8192; // eight packets at path MTU 1024
constexpr auto completion_deadline = std::chrono::seconds(5);

const char* const all_cases[] = {"wrong_rkey", "out_of_bounds_write", "read_without_access", "rnr_exhausted",
                                 "flush_on_error"};
const char* const known_cases[] = {"wrong_rkey",           "out_of_bounds_write", "read_without_access",
                                   "rnr_exhausted",        "flush_on_error",      "retry_exhausted",
                                   "registration_refused", "write_to_unmapped",   "write_to_read_only"};

// ---- the out-of-band TCP channel ---------------------------------------------------------------

struct endpoint {
    std::uint32_t qpn;
    std::uint32_t psn;
    std::uint32_t rkey;
    std::uint32_t length;
    std::uint64_t address;
    ibv_gid gid;
};

struct case_header {
    char name[32];
};

struct verdict {
    char text[240]; // empty: the server's side of the case was as expected
};

int connect_tcp(const char* host, int port, bool server) {
    std::string error;
    const int fd = rocefab::tools::tcp_rendezvous(host, port, server, 200, error);
    if (fd < 0) die(error);
    return fd;
}

template <typename T> void send_message(int fd, const T& message) {
    require(write(fd, &message, sizeof message) == static_cast<ssize_t>(sizeof message), "control write failed");
}

template <typename T> T receive_message(int fd) {
    T message{};
    std::size_t got = 0;
    while (got < sizeof message) {
        const ssize_t n = read(fd, reinterpret_cast<char*>(&message) + got, sizeof message - got);
        require(n > 0, "the peer closed the control connection");
        got += static_cast<std::size_t>(n);
    }
    return message;
}

void sync(int fd) {
    send_message(fd, 's');
    receive_message<char>(fd);
}

// ---- verbs helpers -----------------------------------------------------------------------------

struct device {
    ibv_context* context = nullptr;
    ibv_pd* pd = nullptr;
    ibv_gid gid{};
    int gid_index = 1;
};

// Transport parameters of one side of a connection.
struct qp_params {
    std::uint8_t rnr_retry = 3;
    std::uint8_t min_rnr_timer = min_rnr_timer_short;
    unsigned access = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
};

ibv_qp* create_rc_qp(const device& dev, ibv_cq* cq) {
    ibv_qp_init_attr attr{};
    attr.send_cq = cq;
    attr.recv_cq = cq;
    attr.cap.max_send_wr = 16;
    attr.cap.max_recv_wr = 16;
    attr.cap.max_send_sge = 1;
    attr.cap.max_recv_sge = 1;
    attr.qp_type = IBV_QPT_RC;
    ibv_qp* qp = ibv_create_qp(dev.pd, &attr);
    require(qp, std::string("ibv_create_qp failed: ") + std::strerror(errno));
    return qp;
}

void bring_up(const device& dev, ibv_qp* qp, std::uint32_t my_psn, const endpoint& theirs, const qp_params& p) {
    ibv_qp_attr attr{};
    attr.qp_state = IBV_QPS_INIT;
    attr.port_num = 1;
    attr.qp_access_flags = p.access;
    require(ibv_modify_qp(qp, &attr, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS) == 0,
            "to INIT failed");
    attr = {};
    attr.qp_state = IBV_QPS_RTR;
    attr.path_mtu = IBV_MTU_1024;
    attr.dest_qp_num = theirs.qpn;
    attr.rq_psn = theirs.psn;
    attr.max_dest_rd_atomic = 4;
    attr.min_rnr_timer = p.min_rnr_timer;
    attr.ah_attr.is_global = 1;
    attr.ah_attr.port_num = 1;
    attr.ah_attr.grh.dgid = theirs.gid;
    attr.ah_attr.grh.sgid_index = static_cast<std::uint8_t>(dev.gid_index);
    attr.ah_attr.grh.hop_limit = 64;
    require(ibv_modify_qp(qp, &attr,
                          IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                              IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER) == 0,
            "to RTR failed");
    attr = {};
    attr.qp_state = IBV_QPS_RTS;
    attr.timeout = transport_timeout;
    attr.retry_cnt = retry_count;
    attr.rnr_retry = p.rnr_retry;
    attr.sq_psn = my_psn;
    attr.max_rd_atomic = 4;
    require(ibv_modify_qp(qp, &attr,
                          IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
                              IBV_QP_MAX_QP_RD_ATOMIC) == 0,
            "to RTS failed");
}

const char* state_name(ibv_qp_state s) {
    switch (s) {
    case IBV_QPS_RESET: return "RESET";
    case IBV_QPS_INIT: return "INIT";
    case IBV_QPS_RTR: return "RTR";
    case IBV_QPS_RTS: return "RTS";
    case IBV_QPS_SQD: return "SQD";
    case IBV_QPS_SQE: return "SQE";
    case IBV_QPS_ERR: return "ERR";
    default: return "UNKNOWN";
    }
}

ibv_qp_state query_state(ibv_qp* qp) {
    ibv_qp_attr attr{};
    ibv_qp_init_attr init{};
    require(ibv_query_qp(qp, &attr, IBV_QP_STATE, &init) == 0, "ibv_query_qp failed");
    return attr.qp_state;
}

std::optional<ibv_wc> poll_one(ibv_cq* cq) {
    const auto deadline = std::chrono::steady_clock::now() + completion_deadline;
    ibv_wc wc{};
    for (;;) {
        const int n = ibv_poll_cq(cq, 1, &wc);
        require(n >= 0, "ibv_poll_cq failed");
        if (n == 1) return wc;
        if (std::chrono::steady_clock::now() > deadline) return std::nullopt;
    }
}

int post_one(ibv_qp* qp, ibv_wr_opcode opcode, std::uint64_t wr_id, ibv_mr* mr, std::size_t offset,
             std::uint32_t length, std::uint64_t remote_address = 0, std::uint32_t rkey = 0, std::uint32_t imm = 0) {
    ibv_sge sge{reinterpret_cast<std::uint64_t>(mr->addr) + offset, length, mr->lkey};
    ibv_send_wr wr{}, *bad = nullptr;
    wr.wr_id = wr_id;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.opcode = opcode;
    wr.send_flags = IBV_SEND_SIGNALED;
    wr.imm_data = htonl(imm);
    wr.wr.rdma.remote_addr = remote_address;
    wr.wr.rdma.rkey = rkey;
    return ibv_post_send(qp, &wr, &bad);
}

int post_receive(ibv_qp* qp, std::uint64_t wr_id, ibv_mr* mr, std::size_t offset, std::uint32_t length) {
    ibv_sge sge{reinterpret_cast<std::uint64_t>(mr->addr) + offset, length, mr->lkey};
    ibv_recv_wr wr{}, *bad = nullptr;
    wr.wr_id = wr_id;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    return ibv_post_recv(qp, &wr, &bad);
}

// The first thing that differed in a case; later checks do not overwrite it.
class findings {
public:
    void expect(bool ok, const std::string& what) {
        if (!ok && _first.empty()) _first = what;
    }
    bool ok() const { return _first.empty(); }
    const std::string& first() const { return _first; }

private:
    std::string _first;
};

std::string hex(std::uint64_t v) {
    char text[24];
    std::snprintf(text, sizeof text, "0x%llx", static_cast<unsigned long long>(v));
    return text;
}

// Checks one completion against what the case expects. An error completion's opcode is checked
// too: IBA 11.4.2.1 leaves it undefined, but ConnectX and rxe report the WR's opcode.
void expect_completion(findings& f, const std::optional<ibv_wc>& wc, const std::string& what, ibv_wc_status status,
                       std::optional<ibv_wc_opcode> opcode, std::uint64_t wr_id, std::uint32_t qp_num) {
    if (!wc) {
        f.expect(false, what + ": no completion within 5 s (expected " + ibv_wc_status_str(status) + ")");
        return;
    }
    f.expect(wc->status == status,
             what + ": status " + ibv_wc_status_str(wc->status) + ", expected " + ibv_wc_status_str(status));
    f.expect(wc->wr_id == wr_id, what + ": wr_id " + hex(wc->wr_id) + ", expected " + hex(wr_id));
    f.expect(wc->qp_num == qp_num, what + ": qp_num " + hex(wc->qp_num) + ", expected " + hex(qp_num));
    if (opcode)
        f.expect(wc->opcode == *opcode,
                 what + ": opcode " + std::to_string(wc->opcode) + ", expected " + std::to_string(*opcode));
}

void expect_state(findings& f, ibv_qp* qp, ibv_qp_state expected, const std::string& which) {
    const ibv_qp_state s = query_state(qp);
    f.expect(s == expected, which + " QP is in " + state_name(s) + " (ibv_query_qp), expected " + state_name(expected));
}

void expect_cq_empty(findings& f, ibv_cq* cq, const std::string& which) {
    ibv_wc wc{};
    const int n = ibv_poll_cq(cq, 1, &wc);
    f.expect(n == 0, which + ": an unexpected completion (status " +
                         std::string(n == 1 ? ibv_wc_status_str(wc.status) : "?") + ", wr_id " + hex(wc.wr_id) + ")");
}

std::uint8_t pattern_byte(std::size_t i, unsigned case_number) {
    return static_cast<std::uint8_t>(i * 31 + case_number * 7 + 3);
}

// ---- the healthy pair --------------------------------------------------------------------------

struct healthy_pair {
    ibv_cq* cq = nullptr;
    ibv_qp* qp = nullptr;
    ibv_mr* mr = nullptr;
    std::vector<std::uint8_t> buffer = std::vector<std::uint8_t>(healthy_mr_size);
    endpoint theirs{};
};

// ---- one case, both sides ----------------------------------------------------------------------

struct case_resources {
    ibv_cq* cq = nullptr;
    ibv_qp* qp = nullptr;
    ibv_mr* mr = nullptr;
    std::vector<std::uint8_t> buffer = std::vector<std::uint8_t>(case_mr_size);
    void* mapping = nullptr; // the MR's pages instead of `buffer`, for the unmapping cases

    void destroy() {
        if (qp) require(ibv_destroy_qp(qp) == 0, "ibv_destroy_qp failed");
        if (cq) require(ibv_destroy_cq(cq) == 0, "ibv_destroy_cq failed");
        if (mr) require(ibv_dereg_mr(mr) == 0, "ibv_dereg_mr failed");
        if (mapping) ::munmap(mapping, case_mr_size);
    }
};

// The cases whose server MR loses its pages (or their write access) once registered.
bool is_unpinned_case(const std::string& name) { return name == "write_to_unmapped" || name == "write_to_read_only"; }

bool is_access_case(const std::string& name) {
    return name == "wrong_rkey" || name == "out_of_bounds_write" || name == "read_without_access" ||
           is_unpinned_case(name);
}

// The server's MR has just the access the case needs (or must lack).
unsigned server_mr_access(const std::string& name) {
    if (name == "wrong_rkey" || name == "out_of_bounds_write" || name == "retry_exhausted" || is_unpinned_case(name))
        return IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;
    if (name == "read_without_access") return IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE; // no REMOTE_READ
    return IBV_ACCESS_LOCAL_WRITE;
}

qp_params client_params(const std::string& name) {
    qp_params p;
    if (name == "rnr_exhausted") p.rnr_retry = rnr_retry_finite;
    if (name == "flush_on_error") p.rnr_retry = rnr_retry_forever;
    p.access = 0; // the requester grants nothing remotely
    return p;
}

qp_params server_params(const std::string& name) {
    qp_params p;
    // Long RNR waits while the flush case holds the client's SENDs: fewer NAKs to no purpose.
    if (name == "flush_on_error") p.min_rnr_timer = 14; // 1.92 ms
    return p;
}

void wait_for_stdin_line(const char* prompt) {
    std::printf("%s\n", prompt);
    std::fflush(stdout);
    char line[64];
    require(std::fgets(line, sizeof line, stdin) != nullptr, std::string("stdin closed while waiting after ") + prompt);
}

// The requester's half. Returns the status the case ended with, for the summary line.
std::string run_client_case(const std::string& name, case_resources& c, const endpoint& theirs, findings& f) {
    const std::uint32_t qpn = c.qp->qp_num;
    if (is_access_case(name)) {
        const bool read = name == "read_without_access";
        std::uint64_t address = theirs.address;
        std::uint32_t rkey = theirs.rkey;
        std::uint32_t length = 64;
        if (name == "wrong_rkey") rkey ^= 0x80000000u; // no MR has this key
        if (name == "out_of_bounds_write") {
            address = theirs.address + theirs.length - 128; // 256 bytes: half of it past the end
            length = 256;
        }
        const ibv_wr_opcode opcode = read ? IBV_WR_RDMA_READ : IBV_WR_RDMA_WRITE;
        f.expect(post_one(c.qp, opcode, 0xA1, c.mr, 0, length, address, rkey) == 0, "ibv_post_send failed");
        // Work behind the failing WR must be flushed, not executed (IBA 10.3.1).
        f.expect(post_one(c.qp, IBV_WR_SEND, 0xA2, c.mr, 1024, 32) == 0, "second ibv_post_send failed");
        expect_completion(f, poll_one(c.cq), "the failing WR", IBV_WC_REM_ACCESS_ERR,
                          read ? IBV_WC_RDMA_READ : IBV_WC_RDMA_WRITE, 0xA1, qpn);
        expect_completion(f, poll_one(c.cq), "the WR behind it", IBV_WC_WR_FLUSH_ERR, std::nullopt, 0xA2, qpn);
        expect_state(f, c.qp, IBV_QPS_ERR, "the requester's");
        return "IBV_WC_REM_ACCESS_ERR";
    }
    if (name == "rnr_exhausted") {
        f.expect(post_one(c.qp, IBV_WR_SEND, 0xB1, c.mr, 0, 64) == 0, "ibv_post_send failed");
        expect_completion(f, poll_one(c.cq), "the SEND", IBV_WC_RNR_RETRY_EXC_ERR, IBV_WC_SEND, 0xB1, qpn);
        expect_state(f, c.qp, IBV_QPS_ERR, "the requester's");
        return "IBV_WC_RNR_RETRY_EXC_ERR";
    }
    if (name == "flush_on_error") {
        // The peer posts no receive and retries RNR for ever: the SENDs stay outstanding.
        constexpr int sends = 4, receives = 2;
        for (int i = 0; i < receives; ++i)
            f.expect(post_receive(c.qp, 0xC10 + i, c.mr, 2048 + 256 * i, 256) == 0, "ibv_post_recv failed");
        for (int i = 0; i < sends; ++i)
            f.expect(post_one(c.qp, IBV_WR_SEND, 0xC00 + i, c.mr, 64 * i, 64) == 0, "ibv_post_send failed");
        usleep(50'000); // long enough for several RNR NAKs
        expect_cq_empty(f, c.cq, "before the move to ERR");
        ibv_qp_attr attr{};
        attr.qp_state = IBV_QPS_ERR;
        f.expect(ibv_modify_qp(c.qp, &attr, IBV_QP_STATE) == 0, "ibv_modify_qp to ERR failed");
        expect_state(f, c.qp, IBV_QPS_ERR, "the requester's");
        // Posted in ERR: completes with a flush error too (IBA 10.3.1, o10-2.2).
        f.expect(post_one(c.qp, IBV_WR_SEND, 0xC00 + sends, c.mr, 0, 64) == 0,
                 "ibv_post_send in ERR failed (it must succeed and be flushed)");
        // The send and receive queues each complete in order; between them order is not defined.
        int next_send = 0, next_receive = 0;
        for (int i = 0; i < sends + 1 + receives; ++i) {
            const std::optional<ibv_wc> wc = poll_one(c.cq);
            if (!wc) {
                f.expect(false, "flushed completion " + std::to_string(i + 1) + " of " +
                                    std::to_string(sends + 1 + receives) + " did not arrive within 5 s");
                break;
            }
            if (wc->wr_id >= 0xC10) {
                expect_completion(f, wc, "receive " + std::to_string(next_receive), IBV_WC_WR_FLUSH_ERR, std::nullopt,
                                  0xC10 + next_receive, qpn);
                ++next_receive;
            } else {
                expect_completion(f, wc, "SEND " + std::to_string(next_send), IBV_WC_WR_FLUSH_ERR, IBV_WC_SEND,
                                  0xC00 + next_send, qpn);
                ++next_send;
            }
        }
        expect_cq_empty(f, c.cq, "after the flush");
        return "IBV_WC_WR_FLUSH_ERR";
    }
    if (name == "registration_refused") {
        // Registration pins the pages: memory that is not there, or read-only memory registered
        // for writing, fails with EFAULT (ib_umem_get); read-only memory registered for reading
        // works.
        void* page = ::mmap(nullptr, case_mr_size, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        require(page != MAP_FAILED, "mmap failed");
        errno = 0;
        ibv_mr* mr = ibv_reg_mr(c.mr->pd, page, case_mr_size, IBV_ACCESS_LOCAL_WRITE);
        f.expect(!mr && errno == EFAULT, std::string("registering read-only memory for writing: ") +
                                             (mr ? "succeeded" : std::strerror(errno)) + ", expected EFAULT");
        if (mr) ibv_dereg_mr(mr);
        mr = ibv_reg_mr(c.mr->pd, page, case_mr_size, IBV_ACCESS_REMOTE_READ);
        f.expect(mr != nullptr,
                 std::string("registering read-only memory for reading failed: ") + std::strerror(errno));
        if (mr) ibv_dereg_mr(mr);
        ::munmap(page, case_mr_size);
        errno = 0;
        mr = ibv_reg_mr(c.mr->pd, page, case_mr_size, IBV_ACCESS_LOCAL_WRITE);
        f.expect(!mr && errno == EFAULT, std::string("registering unmapped memory: ") +
                                             (mr ? "succeeded" : std::strerror(errno)) + ", expected EFAULT");
        if (mr) ibv_dereg_mr(mr);
        return "EFAULT";
    }
    if (name == "retry_exhausted") {
        wait_for_stdin_line("ready-for-link-down");
        const auto started = std::chrono::steady_clock::now();
        f.expect(post_one(c.qp, IBV_WR_RDMA_WRITE, 0xD1, c.mr, 0, 2048, theirs.address, theirs.rkey) == 0,
                 "ibv_post_send failed");
        const std::optional<ibv_wc> wc = poll_one(c.cq);
        const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
        expect_completion(f, wc, "the RDMA WRITE", IBV_WC_RETRY_EXC_ERR, IBV_WC_RDMA_WRITE, 0xD1, qpn);
        f.expect(seconds < 1.0, "retry exhaustion took " + std::to_string(seconds) + " s, expected about 17 ms");
        expect_state(f, c.qp, IBV_QPS_ERR, "the requester's");
        wait_for_stdin_line("ready-for-link-up");
        return "IBV_WC_RETRY_EXC_ERR";
    }
    die("unknown case " + name);
}

// The responder's half, checked once the client is done with the failing QP.
void check_server_case(const std::string& name, case_resources& c, findings& f) {
    if (is_access_case(name)) {
        // A remote access error is a responder class C error: the responder's QP goes to ERR
        // too (IBA 9.9.3.1.2), and its posted receive is flushed.
        expect_state(f, c.qp, IBV_QPS_ERR, "the responder's");
        expect_completion(f, poll_one(c.cq), "the responder's posted receive", IBV_WC_WR_FLUSH_ERR, std::nullopt, 0xE1,
                          c.qp->qp_num);
    } else {
        // An RNR NAK, a flush at the requester or a lost cable leave the responder as it was.
        expect_state(f, c.qp, IBV_QPS_RTS, "the responder's");
    }
    expect_cq_empty(f, c.cq, "the responder's CQ");
}

// After each case: the client writes a pattern into the server's healthy MR and sends an
// immediate; the server checks both.
void healthy_client(healthy_pair& h, unsigned case_number, findings& f) {
    for (std::size_t i = 0; i < healthy_write_length; ++i) h.buffer[i] = pattern_byte(i, case_number);
    f.expect(post_one(h.qp, IBV_WR_RDMA_WRITE, 0xF1, h.mr, 0, healthy_write_length, h.theirs.address, h.theirs.rkey) ==
                 0,
             "healthy pair: ibv_post_send (WRITE) failed");
    f.expect(post_one(h.qp, IBV_WR_SEND_WITH_IMM, 0xF2, h.mr, 0, 16, 0, 0, 0xC0DE0000 + case_number) == 0,
             "healthy pair: ibv_post_send (SEND) failed");
    expect_completion(f, poll_one(h.cq), "healthy pair WRITE", IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE, 0xF1, h.qp->qp_num);
    expect_completion(f, poll_one(h.cq), "healthy pair SEND", IBV_WC_SUCCESS, IBV_WC_SEND, 0xF2, h.qp->qp_num);
}

void healthy_server(healthy_pair& h, unsigned case_number, findings& f) {
    const std::optional<ibv_wc> wc = poll_one(h.cq);
    expect_completion(f, wc, "healthy pair receive", IBV_WC_SUCCESS, IBV_WC_RECV, 0xF0 + case_number, h.qp->qp_num);
    if (!wc || wc->status != IBV_WC_SUCCESS) return;
    f.expect((wc->wc_flags & IBV_WC_WITH_IMM) && ntohl(wc->imm_data) == 0xC0DE0000 + case_number,
             "healthy pair: immediate data missing or wrong");
    f.expect(wc->byte_len == 16, "healthy pair: receive byte_len " + std::to_string(wc->byte_len));
    for (std::size_t i = 0; i < healthy_write_length; ++i)
        if (h.buffer[i] != pattern_byte(i, case_number)) {
            f.expect(false, "healthy pair: WRITE byte " + std::to_string(i) + " differs");
            break;
        }
}

case_resources create_case(const device& dev, const std::string& name, bool server) {
    case_resources c;
    c.cq = ibv_create_cq(dev.context, 32, nullptr, nullptr, 0);
    require(c.cq, "ibv_create_cq failed");
    c.qp = create_rc_qp(dev, c.cq);
    const unsigned access = server ? server_mr_access(name) : static_cast<unsigned>(IBV_ACCESS_LOCAL_WRITE);
    void* pages = c.buffer.data();
    if (server && is_unpinned_case(name)) {
        // Shared memory: a page of it made read-only stays read-only for every writer.
        c.mapping = ::mmap(nullptr, case_mr_size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
        require(c.mapping != MAP_FAILED, "mmap failed");
        pages = c.mapping;
    }
    c.mr = ibv_reg_mr(dev.pd, pages, case_mr_size, access);
    require(c.mr, std::string("ibv_reg_mr failed: ") + std::strerror(errno));
    return c;
}

endpoint local_endpoint(const device& dev, ibv_qp* qp, ibv_mr* mr, std::uint32_t psn) {
    return endpoint{
        qp->qp_num, psn, mr->rkey, static_cast<std::uint32_t>(mr->length), reinterpret_cast<std::uint64_t>(mr->addr),
        dev.gid};
}

void report(const std::string& name, const findings& f, const std::string& status) {
    if (f.ok())
        std::printf("case %s: ok (%s)\n", name.c_str(), status.c_str());
    else
        std::printf("case %s: FAILED: %s\n", name.c_str(), f.first().c_str());
    std::fflush(stdout);
}

} // namespace

int main(int argc, char** argv) {
    bool server = false;
    const char* host = nullptr;
    const char* device_name = nullptr;
    std::string case_name = "all";
    device dev;
    int port = 18700;
    const char* usage = "usage: rdma-error-paths --server|HOST [-d DEV] [-g GID] [-p PORT] [--case NAME|all]";
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        if (a == "--server")
            server = true;
        else if (a == "-d" && i + 1 < argc)
            device_name = argv[++i];
        else if (a == "-g" && i + 1 < argc)
            dev.gid_index = std::atoi(argv[++i]);
        else if (a == "-p" && i + 1 < argc)
            port = std::atoi(argv[++i]);
        else if (a == "--case" && i + 1 < argc)
            case_name = argv[++i];
        else if (a[0] != '-')
            host = argv[i];
        else
            die(usage);
    }
    require(server || host, usage);
    std::vector<std::string> cases;
    if (case_name == "all")
        cases.assign(std::begin(all_cases), std::end(all_cases));
    else {
        bool known = false;
        for (const char* k : known_cases) known |= case_name == k;
        if (!known) {
            std::string valid;
            for (const char* k : known_cases) valid += std::string(k) + ", ";
            die("--case: unknown case '" + case_name + "' (valid: " + valid + "all)");
        }
        cases.push_back(case_name);
    }

    int count = 0;
    ibv_device** list = ibv_get_device_list(&count);
    require(list && count > 0, "no RDMA device");
    ibv_device* ib_device = list[0];
    for (int i = 0; device_name && i < count; ++i)
        if (std::strcmp(ibv_get_device_name(list[i]), device_name) == 0) ib_device = list[i];
    dev.context = ibv_open_device(ib_device);
    require(dev.context, "ibv_open_device failed");
    require(ibv_query_gid(dev.context, 1, dev.gid_index, &dev.gid) == 0, "ibv_query_gid failed");
    dev.pd = ibv_alloc_pd(dev.context);
    require(dev.pd, "ibv_alloc_pd failed");

    // The healthy pair, created before any case and used after each.
    healthy_pair h;
    h.cq = ibv_create_cq(dev.context, 32, nullptr, nullptr, 0);
    require(h.cq, "ibv_create_cq failed");
    h.qp = create_rc_qp(dev, h.cq);
    h.mr = ibv_reg_mr(dev.pd, h.buffer.data(), h.buffer.size(), IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
    require(h.mr, "ibv_reg_mr failed");

    const int fd = connect_tcp(host, port, server);
    send_message(fd, local_endpoint(dev, h.qp, h.mr, 1000));
    h.theirs = receive_message<endpoint>(fd);
    bring_up(dev, h.qp, 1000, h.theirs, qp_params{});
    sync(fd);

    bool all_ok = true;
    unsigned case_number = 0;
    for (;;) {
        std::string name;
        if (server) {
            name = receive_message<case_header>(fd).name;
            if (name.empty()) break;
        } else {
            if (case_number == cases.size()) {
                send_message(fd, case_header{});
                break;
            }
            name = cases[case_number];
            case_header header{};
            std::snprintf(header.name, sizeof header.name, "%s", name.c_str());
            send_message(fd, header);
        }
        ++case_number;

        case_resources c = create_case(dev, name, server);
        const std::uint32_t psn = 0x10000 * case_number + (server ? 7 : 3);
        send_message(fd, local_endpoint(dev, c.qp, c.mr, psn));
        const endpoint theirs = receive_message<endpoint>(fd);
        bring_up(dev, c.qp, psn, theirs, server ? server_params(name) : client_params(name));
        findings f, healthy;
        if (server) {
            if (is_access_case(name)) f.expect(post_receive(c.qp, 0xE1, c.mr, 0, 64) == 0, "ibv_post_recv failed");
            f.expect(post_receive(h.qp, 0xF0 + case_number, h.mr, healthy_write_length, 64) == 0,
                     "healthy pair: ibv_post_recv failed");
            if (name == "write_to_unmapped") {
                f.expect(::munmap(c.mapping, case_mr_size) == 0, "munmap failed");
                c.mapping = nullptr;
            }
            if (name == "write_to_read_only")
                f.expect(::mprotect(c.mapping, case_mr_size, PROT_READ) == 0, "mprotect failed");
            sync(fd);                  // ready
            receive_message<char>(fd); // the client is done with the failing QP
            check_server_case(name, c, f);
            healthy_server(h, case_number, healthy);
            std::string text = f.ok() ? healthy.first() : f.first();
            verdict v{};
            std::snprintf(v.text, sizeof v.text, "%s", text.c_str());
            send_message(fd, v);
            report(name, f.ok() ? healthy : f, "responder side");
            all_ok &= f.ok() && healthy.ok();
        } else {
            sync(fd); // the server is ready
            const std::string status = run_client_case(name, c, theirs, f);
            send_message(fd, 'd');
            healthy_client(h, case_number, healthy);
            const verdict v = receive_message<verdict>(fd);
            findings all;
            all.expect(f.ok(), f.first());
            all.expect(v.text[0] == 0, std::string("server: ") + v.text);
            all.expect(healthy.ok(), healthy.first());
            report(name, all, status);
            all_ok &= all.ok();
        }
        sync(fd);
        c.destroy();
    }

    close(fd);
    require(ibv_destroy_qp(h.qp) == 0, "ibv_destroy_qp failed");
    require(ibv_destroy_cq(h.cq) == 0, "ibv_destroy_cq failed");
    require(ibv_dereg_mr(h.mr) == 0, "ibv_dereg_mr failed");
    require(ibv_dealloc_pd(dev.pd) == 0, "ibv_dealloc_pd failed");
    require(ibv_close_device(dev.context) == 0, "ibv_close_device failed");
    ibv_free_device_list(list);
    return all_ok ? 0 : 1;
}
