// deputy-probe: can a program make the fabric daemon reach the memory of a process that is not
// that program (the confused deputy of docs/security.md)? Written against plain libibverbs.
//
//   deputy-probe exec  --address A --peer-socket S --holder PATH --secret F --ready FIFO --done FIFO
//   deputy-probe reuse --address A --peer-socket S --ready FIFO --done FIFO
//   deputy-probe holder --address A --secret F --ready FIFO --done FIFO [--start stdin]
//
// exec and reuse run on host h1 (`rocefab run --host h1`); S is host h2's attach socket. Both
// map a page of their own at the fixed address A, register it (remote read and write) on h1's
// NIC, connect a QP on h1 to one on h2 and read the page through the other QP once, which must
// work: the probe proves its path before it is used against someone else. Then the process
// forks. The child keeps every descriptor, so the daemon keeps the device context open; the
// parent then either execs PATH (exec: a copy of this program made setuid root, the holder) in
// the same process, or exits so that the test can start a root holder under the same pid
// (reuse). The holder maps its own page at A, copies the first bytes of the root-only file F
// into it and says "ready" into the FIFO (with `--start stdin`, only after a line on its standard
// input: the test starts holders until one gets the pid it wants). The child then tries what a confused deputy would
// let it do to the holder:
//   - register A again on the context its parent opened,
//   - RDMA READ A with the rkey its parent registered, into memory of its own (on a context it
//     opens itself, and over a QP on the parent's context made after the fork),
//   - RDMA WRITE over A with that rkey.
// It prints one line for each ("reg_mr: ...", "read: STATUS HEXBYTES", "write: STATUS") and
// says "done" into the other FIFO; the holder then checks its page and prints "holder: intact"
// or "holder: overwritten". The test compares the bytes read with the secret.

#include "tests/e2e/programs/connect_qp.hpp"

#include <infiniband/verbs.h>

#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <map>
#include <string>
#include <vector>

namespace {

constexpr std::size_t page = 4096;
constexpr int access_all = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE;

[[noreturn]] void die(const std::string& what) {
    std::fprintf(stderr, "deputy-probe: %s\n", what.c_str());
    std::fflush(stderr);
    std::_Exit(2);
}

void say(const std::string& line) {
    std::printf("%s\n", line.c_str());
    std::fflush(stdout);
}

std::map<std::string, std::string> options(int argc, char** argv) {
    std::map<std::string, std::string> out;
    for (int i = 2; i + 1 < argc; i += 2) {
        if (std::strncmp(argv[i], "--", 2) != 0) die(std::string("unexpected argument ") + argv[i]);
        out[argv[i] + 2] = argv[i + 1];
    }
    return out;
}

std::string need(const std::map<std::string, std::string>& o, const char* key) {
    const auto it = o.find(key);
    if (it == o.end()) die(std::string("missing --") + key);
    return it->second;
}

void* map_fixed_page(std::uintptr_t address) {
    void* p = ::mmap(reinterpret_cast<void*>(address), page, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
    if (p == MAP_FAILED || reinterpret_cast<std::uintptr_t>(p) != address)
        die("cannot map a page at the fixed address: " + std::string(std::strerror(errno)));
    return p;
}

// One device context with what a QP needs.
struct side {
    ibv_context* context = nullptr;
    ibv_pd* pd = nullptr;
    ibv_cq* cq = nullptr;
    ibv_gid gid{};
};

// Opens the first device the verbs library lists for host h2's attach socket `socket` (or for
// the host `rocefab run` named, when empty).
side open_side(const std::string& socket) {
    std::string saved_socket, saved_host;
    if (!socket.empty()) {
        if (const char* s = std::getenv("ROCEFAB_SOCKET")) saved_socket = s;
        if (const char* h = std::getenv("ROCEFAB_HOST")) saved_host = h;
        ::setenv("ROCEFAB_SOCKET", socket.c_str(), 1);
        ::setenv("ROCEFAB_HOST", "h2", 1);
    }
    int count = 0;
    ibv_device** list = ibv_get_device_list(&count);
    if (!list || count < 1) die("no RDMA device for socket '" + socket + "'");
    side s;
    s.context = ibv_open_device(list[0]);
    ibv_free_device_list(list);
    if (!socket.empty()) {
        ::setenv("ROCEFAB_SOCKET", saved_socket.c_str(), 1);
        ::setenv("ROCEFAB_HOST", saved_host.c_str(), 1);
    }
    if (!s.context) die(std::string("ibv_open_device: ") + std::strerror(errno));
    s.pd = ibv_alloc_pd(s.context);
    s.cq = ibv_create_cq(s.context, 16, nullptr, nullptr, 0);
    if (!s.pd || !s.cq) die("cannot allocate a PD and a CQ");
    if (ibv_query_gid(s.context, 1, 1, &s.gid) != 0) die("ibv_query_gid failed");
    return s;
}

ibv_qp* make_qp(side& s) {
    ibv_qp_init_attr init{};
    init.send_cq = init.recv_cq = s.cq;
    init.qp_type = IBV_QPT_RC;
    init.cap.max_send_wr = init.cap.max_recv_wr = 4;
    init.cap.max_send_sge = init.cap.max_recv_sge = 1;
    ibv_qp* qp = ibv_create_qp(s.pd, &init);
    if (!qp) die(std::string("ibv_create_qp: ") + std::strerror(errno));
    return qp;
}

void bring_up(ibv_qp* qp, const ibv_gid& remote_gid, std::uint32_t remote_qpn) {
    const char* step = nullptr;
    if (rocefab::test_programs::connect_qp(
            qp, remote_gid, remote_qpn,
            {.timeout = 12, .retry_cnt = 2, .rnr_retry = 2, .min_rnr_timer = 1, .access = access_all}, &step))
        die(std::string("to ") + step + " failed");
}

// A QP on `target` (the side whose memory the rkey names) connected to one on `requester`.
ibv_qp* connect_pair(side& target, side& requester) {
    ibv_qp* responder = make_qp(target);
    ibv_qp* qp = make_qp(requester);
    bring_up(responder, requester.gid, qp->qp_num);
    bring_up(qp, target.gid, responder->qp_num);
    return qp;
}

// One RDMA READ or WRITE of a page; the completion's status, or a description of no completion.
std::string rdma(side& requester, ibv_qp* qp, ibv_wr_opcode opcode, ibv_mr* local, std::uint64_t remote,
                 std::uint32_t rkey) {
    ibv_sge sge{reinterpret_cast<std::uint64_t>(local->addr), static_cast<std::uint32_t>(page), local->lkey};
    ibv_send_wr wr{}, *bad = nullptr;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.opcode = opcode;
    wr.send_flags = IBV_SEND_SIGNALED;
    wr.wr.rdma.remote_addr = remote;
    wr.wr.rdma.rkey = rkey;
    if (const int e = ibv_post_send(qp, &wr, &bad)) return std::string("post failed: ") + std::strerror(e);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    ibv_wc wc{};
    while (ibv_poll_cq(requester.cq, 1, &wc) == 0)
        if (std::chrono::steady_clock::now() > deadline) return "no completion within 10 s";
    return ibv_wc_status_str(wc.status);
}

std::string hex(const std::uint8_t* bytes, std::size_t n) {
    std::string out;
    char two[3];
    for (std::size_t i = 0; i < n; ++i) {
        std::snprintf(two, sizeof two, "%02x", bytes[i]);
        out += two;
    }
    return out;
}

std::string read_line(const std::string& fifo) {
    const int fd = ::open(fifo.c_str(), O_RDONLY);
    if (fd < 0) die("cannot open " + fifo + ": " + std::strerror(errno));
    std::string line;
    char c;
    while (::read(fd, &c, 1) == 1 && c != '\n') line += c;
    ::close(fd);
    return line;
}

void write_line(const std::string& fifo, const std::string& line) {
    const int fd = ::open(fifo.c_str(), O_WRONLY);
    if (fd < 0) die("cannot open " + fifo + ": " + std::strerror(errno));
    const std::string text = line + "\n";
    if (::write(fd, text.data(), text.size()) != static_cast<ssize_t>(text.size())) die("cannot write " + fifo);
    ::close(fd);
}

// The attacker: after the parent is gone from the picture (exec'd or exited), everything the
// daemon might still do for it, aimed at the holder's page.
void attack(side& parent_side, ibv_mr* parent_mr, std::uintptr_t address, const std::string& peer_socket,
            const std::map<std::string, std::string>& o) {
    if (read_line(need(o, "ready")) != "ready") die("the holder did not say ready");
    ibv_mr* again = ibv_reg_mr(parent_side.pd, reinterpret_cast<void*>(address), page, access_all);
    say(again ? "reg_mr: succeeded" : std::string("reg_mr: failed: ") + std::strerror(errno));
    side own = open_side(peer_socket);
    void* buffer = ::mmap(nullptr, page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    std::memset(buffer, 0, page);
    ibv_mr* local = ibv_reg_mr(own.pd, buffer, page, access_all);
    if (!local) die("cannot register the child's own buffer");
    const std::string read_status =
        rdma(own, connect_pair(parent_side, own), IBV_WR_RDMA_READ, local, address, parent_mr->rkey);
    say("read: " + read_status + " " + hex(static_cast<std::uint8_t*>(buffer), 64));
    std::memset(buffer, 0xbb, page);
    say("write: " + rdma(own, connect_pair(parent_side, own), IBV_WR_RDMA_WRITE, local, address, parent_mr->rkey));
    write_line(need(o, "done"), "done");
}

int holder(const std::map<std::string, std::string>& o) {
    if (const auto start = o.find("start"); start != o.end()) {
        if (start->second != "stdin") die("--start takes only 'stdin'");
        char c;
        while (::read(0, &c, 1) == 1 && c != '\n') {}
    }
    const std::uintptr_t address = std::strtoull(need(o, "address").c_str(), nullptr, 0);
    auto* bytes = static_cast<std::uint8_t*>(map_fixed_page(address));
    const int fd = ::open(need(o, "secret").c_str(), O_RDONLY);
    if (fd < 0) die("holder cannot read the secret: " + std::string(std::strerror(errno)));
    std::vector<std::uint8_t> secret(page);
    const ssize_t n = ::read(fd, secret.data(), page);
    ::close(fd);
    if (n <= 0) die("the secret is empty");
    std::memcpy(bytes, secret.data(), static_cast<std::size_t>(n));
    say("holder: pid " + std::to_string(::getpid()) + " uid " + std::to_string(::geteuid()));
    write_line(need(o, "ready"), "ready");
    read_line(need(o, "done"));
    say(std::memcmp(bytes, secret.data(), static_cast<std::size_t>(n)) == 0 ? "holder: intact" : "holder: overwritten");
    return 0;
}

} // namespace

int main(int argc, char** argv) {
    if (argc < 2) die("usage: deputy-probe exec|reuse|holder --option value ...");
    const std::string mode = argv[1];
    const auto o = options(argc, argv);
    if (mode == "holder") return holder(o);
    if (mode != "exec" && mode != "reuse") die("unknown mode " + mode);

    const std::uintptr_t address = std::strtoull(need(o, "address").c_str(), nullptr, 0);
    const std::string peer_socket = need(o, "peer-socket");
    auto* own_page = static_cast<std::uint8_t*>(map_fixed_page(address));
    std::memset(own_page, 0xaa, page);
    side mine = open_side("");
    side peer = open_side(peer_socket);
    ibv_mr* mr = ibv_reg_mr(mine.pd, own_page, page, access_all);
    if (!mr) die(std::string("cannot register the probe's own page: ") + std::strerror(errno));
    void* buffer = ::mmap(nullptr, page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    std::memset(buffer, 0, page);
    ibv_mr* local = ibv_reg_mr(peer.pd, buffer, page, access_all);
    if (!local) die("cannot register the read buffer");
    const std::string sanity = rdma(peer, connect_pair(mine, peer), IBV_WR_RDMA_READ, local, address, mr->rkey);
    if (sanity != ibv_wc_status_str(IBV_WC_SUCCESS) || static_cast<std::uint8_t*>(buffer)[page - 1] != 0xaa)
        die("reading the probe's own page failed: " + sanity);
    say("sanity: read own page: " + sanity);

    const pid_t child = ::fork();
    if (child < 0) die("fork failed");
    if (child == 0) {
        attack(mine, mr, address, peer_socket, o);
        std::_Exit(0);
    }
    ::munmap(own_page, page); // the holder maps its own page there
    if (mode == "reuse") {
        say("victim pid " + std::to_string(::getpid()));
        std::_Exit(0); // the child keeps the contexts; this pid is free once the test reaps it
    }
    const std::string holder_path = need(o, "holder");
    ::execl(holder_path.c_str(), "deputy-probe", "holder", "--address", need(o, "address").c_str(), "--secret",
            need(o, "secret").c_str(), "--ready", need(o, "ready").c_str(), "--done", need(o, "done").c_str(),
            static_cast<char*>(nullptr));
    die("cannot exec the holder: " + std::string(std::strerror(errno)));
}
