// shared-memory-abuse: a program that does its worst to the memory it shares with the device.
// Written against plain libibverbs; needs root (it reaches its own mappings' files through
// /proc/self/map_files).
//
//   shared-memory-abuse [--seconds S]
//
// It opens the device, creates CQs and QPs (so that rings, the doorbell queue and the wake page
// are mapped), then for every shared mapping (memfds named rocefab-*):
//   - tries to shrink it to nothing and to grow it, and to punch a hole in it;
//   - for the read-only wake page, tries to make the mapping writable, to map it writable again
//     and to write(2) into it;
//   - then for S seconds (2 by default) fills every writable mapping with random bytes, rings
//     its doorbell and posts work through the verbs, over and over, on QPs in RTS (addressed to
//     the NIC itself) that it brings back to RTS whenever the garbage took them to an error
//     state: the NIC reads every ring it can.
// It prints one line per mapping with what the kernel answered ("resize: refused (EPERM)"), and
// exits 0 if every resize was refused and the wake page stayed read-only. The test runs a
// healthy program beside it and checks that the daemon and that program never noticed.

#include "tests/e2e/programs/connect_qp.hpp"

#include <infiniband/verbs.h>

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>
#include <string>
#include <vector>

namespace {

struct mapping {
    std::uintptr_t start, end;
    bool writable;
    std::string name;
};

std::vector<mapping> shared_mappings() {
    std::vector<mapping> out;
    std::ifstream maps("/proc/self/maps");
    std::string line;
    while (std::getline(maps, line)) {
        const auto at = line.find("/memfd:rocefab-");
        if (at == std::string::npos) continue;
        mapping m{};
        std::sscanf(line.c_str(), "%lx-%lx", &m.start, &m.end);
        m.writable = line[line.find(' ') + 2] == 'w';
        m.name = line.substr(at + 7);
        out.push_back(m);
    }
    return out;
}

std::string outcome(int result) {
    if (result == 0) return "ALLOWED";
    return std::string("refused (") +
           (errno == EPERM    ? "EPERM"
            : errno == EACCES ? "EACCES"
                              : std::strerror(errno)) +
           ")";
}

} // namespace

int main(int argc, char** argv) {
    double seconds = 2;
    for (int i = 1; i + 1 < argc; i += 2)
        if (std::strcmp(argv[i], "--seconds") == 0) seconds = std::atof(argv[i + 1]);
    int count = 0;
    ibv_device** list = ibv_get_device_list(&count);
    if (!list || count < 1) {
        std::fprintf(stderr, "shared-memory-abuse: no RDMA device\n");
        return 2;
    }
    ibv_context* context = ibv_open_device(list[0]);
    ibv_pd* pd = context ? ibv_alloc_pd(context) : nullptr;
    ibv_cq* cq = pd ? ibv_create_cq(context, 64, nullptr, nullptr, 0) : nullptr;
    std::vector<ibv_qp*> qps;
    for (ibv_qp_type type : {IBV_QPT_RC, IBV_QPT_UC, IBV_QPT_UD}) {
        ibv_qp_init_attr init{};
        init.send_cq = init.recv_cq = cq;
        init.qp_type = type;
        init.cap.max_send_wr = init.cap.max_recv_wr = 16;
        init.cap.max_send_sge = init.cap.max_recv_sge = 1;
        if (ibv_qp* qp = cq ? ibv_create_qp(pd, &init) : nullptr) qps.push_back(qp);
    }
    if (qps.size() != 3) {
        std::fprintf(stderr, "shared-memory-abuse: cannot create the QPs\n");
        return 2;
    }
    ibv_gid gid{};
    ibv_query_gid(context, 1, 1, &gid);
    // RESET -> INIT -> RTR -> RTS, addressed to this NIC (connected QPs to themselves).
    auto bring_up = [&](ibv_qp* qp) {
        ibv_qp_attr a{};
        a.qp_state = IBV_QPS_RESET;
        ibv_modify_qp(qp, &a, IBV_QP_STATE);
        if (qp->qp_type != IBV_QPT_UD) {
            rocefab::test_programs::connect_qp(qp, gid, qp->qp_num,
                                               {.timeout = 10,
                                                .retry_cnt = 1,
                                                .rnr_retry = 1,
                                                .access = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ});
            return;
        }
        a = {};
        a.qp_state = IBV_QPS_INIT;
        a.port_num = 1;
        a.qkey = 0x11111111;
        ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY);
        for (ibv_qp_state next : {IBV_QPS_RTR, IBV_QPS_RTS}) {
            a = {};
            a.qp_state = next;
            ibv_modify_qp(qp, &a, next == IBV_QPS_RTS ? IBV_QP_STATE | IBV_QP_SQ_PSN : IBV_QP_STATE);
        }
    };
    for (ibv_qp* qp : qps) bring_up(qp);

    bool ok = true;
    const std::vector<mapping> mappings = shared_mappings();
    if (mappings.empty()) {
        std::printf("no shared mapping found\n");
        return 1;
    }
    for (const mapping& m : mappings) {
        char path[64];
        std::snprintf(path, sizeof path, "/proc/self/map_files/%lx-%lx", m.start, m.end);
        const int fd = ::open(path, O_RDWR);
        const int ro = fd < 0 ? ::open(path, O_RDONLY) : -1;
        const int file = fd >= 0 ? fd : ro;
        if (file < 0) {
            std::printf("%s: cannot open %s: %s\n", m.name.c_str(), path, std::strerror(errno));
            ok = false;
            continue;
        }
        const off_t size = static_cast<off_t>(m.end - m.start);
        const std::string shrink = outcome(::ftruncate(file, 0));
        const std::string grow = outcome(::ftruncate(file, size * 2));
        const std::string hole = outcome(::fallocate(file, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0, 4096));
        ok &= shrink != "ALLOWED" && grow != "ALLOWED";
        std::printf("%s (%s): shrink %s, grow %s, punch a hole %s", m.name.c_str(), m.writable ? "rw" : "ro",
                    shrink.c_str(), grow.c_str(), hole.c_str());
        if (!m.writable) {
            const std::string protect = outcome(
                ::mprotect(reinterpret_cast<void*>(m.start), static_cast<std::size_t>(size), PROT_READ | PROT_WRITE));
            void* again = ::mmap(nullptr, static_cast<std::size_t>(size), PROT_READ | PROT_WRITE, MAP_SHARED, file, 0);
            const std::string remap = outcome(again == MAP_FAILED ? -1 : 0);
            if (again != MAP_FAILED) ::munmap(again, static_cast<std::size_t>(size));
            const char byte = 1;
            const std::string written = outcome(::pwrite(file, &byte, 1, 0) == 1 ? 0 : -1);
            ok &= protect != "ALLOWED" && remap != "ALLOWED" && written != "ALLOWED";
            std::printf(", made writable %s, mapped writable %s, written %s", protect.c_str(), remap.c_str(),
                        written.c_str());
        }
        std::printf("\n");
        ::close(file);
    }
    std::fflush(stdout);

    // The doorbell: every eventfd this process holds.
    std::vector<int> doorbells;
    for (int fd = 3; fd < 1024; ++fd) {
        char link[64] = {}, path[32];
        std::snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
        if (::readlink(path, link, sizeof link - 1) > 0 && std::strstr(link, "eventfd")) doorbells.push_back(fd);
    }
    std::mt19937_64 random(12345);
    const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    std::uint64_t rounds = 0, restarts = 0;
    while (std::chrono::steady_clock::now() < until) {
        for (const mapping& m : mappings) {
            if (!m.writable) continue;
            auto* words = reinterpret_cast<std::uint64_t*>(m.start);
            for (std::size_t i = 0; i < (m.end - m.start) / 8; i += 1 + random() % 7) words[i] = random();
        }
        for (int fd : doorbells) {
            const std::uint64_t value = 1 + random() % 1000;
            [[maybe_unused]] auto n = ::write(fd, &value, sizeof value);
        }
        for (ibv_qp* qp : qps) {
            ibv_sge sge{random(), static_cast<std::uint32_t>(random()), static_cast<std::uint32_t>(random())};
            ibv_recv_wr r{}, *bad_r = nullptr;
            r.sg_list = &sge;
            r.num_sge = 1;
            ibv_post_recv(qp, &r, &bad_r);
            ibv_send_wr s{}, *bad_s = nullptr;
            s.sg_list = &sge;
            s.num_sge = 1;
            s.opcode = static_cast<ibv_wr_opcode>(random() % 12);
            ibv_post_send(qp, &s, &bad_s);
        }
        ibv_wc wc[8];
        ibv_poll_cq(cq, 8, wc);
        if (rounds % 64 == 0)
            for (ibv_qp* qp : qps) {
                ibv_qp_attr a{};
                ibv_qp_init_attr init{};
                if (ibv_query_qp(qp, &a, IBV_QP_STATE, &init) == 0 && a.qp_state != IBV_QPS_RTS) {
                    bring_up(qp);
                    ++restarts;
                }
            }
        ++rounds;
    }
    std::printf("scribbled for %.1f s (%llu rounds over %zu mappings, %zu doorbells; QPs brought back to RTS %llu "
                "times)\n",
                seconds, static_cast<unsigned long long>(rounds), mappings.size(), doorbells.size(),
                static_cast<unsigned long long>(restarts));
    std::printf(ok ? "all refused\n" : "something was ALLOWED\n");
    return ok ? 0 : 1;
}
