// fuzz_attach_protocol: a program speaking the attach protocol (nic_emu/attach_protocol.hpp) to
// a real daemon in this process: the fabric of configs/two-hosts.yaml with its data plane
// running, and the attach server on its io_context, which this thread runs. Each input connects
// to host h1's socket, says hello and opens rfab0 (with this process's own /proc/self/mem and
// maps, as the verbs library passes them), then sends the input's messages one at a time and
// waits for each answer; between them it may scribble on the rings, CQs and doorbell queue the
// daemon shared, and ring its doorbell (support/attach_records.hpp).
//
// Checked beyond the sanitizers: every request gets exactly one answer, within 5 s; once the
// connection closes, its session is gone and the NIC holds nothing of it (no context, PD, MR,
// CQ, QP or channel left).

#include "control/attach_server.hpp"
#include "control/config/topology.hpp"
#include "control/daemon.hpp"
#include "control/fabric.hpp"
#include "fuzz/support/attach_records.hpp"
#include "nic_emu/attach_protocol.hpp"
#include "nic_emu/descriptor_passing.hpp"

#include <boost/asio/io_context.hpp>

#include <chrono>
#include <filesystem>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>
#include <vector>

using namespace rocefab;

namespace {

[[noreturn]] void fail(const char* what) {
    std::fprintf(stderr, "fuzz_attach_protocol: %s\n", what);
    std::abort();
}

struct daemon_under_test {
    std::string runtime;
    std::unique_ptr<control::fabric> fab;
    boost::asio::io_context io;
    std::unique_ptr<control::attach_server> server;
    nic::nic_node* nic = nullptr;

    daemon_under_test() {
        char dir[] = "/tmp/rocefab-fuzz-attach-XXXXXX";
        if (!::mkdtemp(dir)) fail("mkdtemp failed");
        runtime = dir;
        config::topology topology;
        config::config_error error;
        if (!config::load_topology(ROCEFAB_SOURCE_ROOT "/configs/two-hosts.yaml", topology, error))
            fail("cannot load configs/two-hosts.yaml");
        fab = std::make_unique<control::fabric>(std::move(topology));
        fab->start();
        server = std::make_unique<control::attach_server>(
            io, *fab, runtime, control::access_policy(::geteuid(), std::nullopt), control::session_limits{});
        nic = fab->find_nic("h1", "rfab0");
    }

    ~daemon_under_test() {
        server.reset();
        fab->stop();
        std::error_code ignored;
        std::filesystem::remove_all(runtime, ignored);
    }

    // Runs the io_context until `fd` is readable (an answer came) or `limit` passes.
    bool pump_until_readable(int fd, std::chrono::milliseconds limit) {
        const auto deadline = std::chrono::steady_clock::now() + limit;
        while (std::chrono::steady_clock::now() < deadline) {
            pollfd p{fd, POLLIN, 0};
            if (::poll(&p, 1, 0) == 1) return true;
            io.run_one_for(std::chrono::milliseconds(1));
            io.restart();
        }
        return false;
    }

    void pump_until_idle(std::chrono::milliseconds limit) {
        const auto deadline = std::chrono::steady_clock::now() + limit;
        while (server->sessions() && std::chrono::steady_clock::now() < deadline) {
            io.run_one_for(std::chrono::milliseconds(1));
            io.restart();
        }
    }
};

daemon_under_test& daemon() {
    static daemon_under_test d;
    return d;
}

// A connected client, with what the daemon handed it.
struct client {
    int fd = -1;
    std::vector<std::uint32_t> handles;
    struct region {
        void* base;
        std::size_t length;
    };
    std::vector<region> regions;
    std::vector<int> doorbells;
    std::vector<int> kept; // other descriptors the daemon passed

    ~client() {
        for (const region& r : regions) ::munmap(r.base, r.length);
        for (int d : doorbells) ::close(d);
        for (int d : kept) ::close(d);
        if (fd >= 0) ::close(fd);
    }

    // Maps a shared region the daemon passed, to scribble on later.
    void take(int received) {
        struct stat s {};
        if (::fstat(received, &s) == 0 && S_ISREG(s.st_mode) && s.st_size > 0) {
            const std::size_t length = static_cast<std::size_t>(s.st_size);
            void* base = ::mmap(nullptr, length, PROT_READ | PROT_WRITE, MAP_SHARED, received, 0);
            if (base != MAP_FAILED) regions.push_back({base, length});
            ::close(received);
            return;
        }
        char link[64] = {};
        const std::string self = "/proc/self/fd/" + std::to_string(received);
        if (::readlink(self.c_str(), link, sizeof link - 1) > 0 && std::strstr(link, "eventfd"))
            doorbells.push_back(received);
        else
            kept.push_back(received);
    }

    // Sends one datagram (with the program's memory handles when asked) and takes its answer.
    void exchange(const void* data, std::size_t length, bool with_memory) {
        int memory[2] = {-1, -1};
        if (with_memory) {
            memory[0] = ::open("/proc/self/mem", O_RDWR | O_CLOEXEC);
            memory[1] = ::open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
        }
        const bool sent = send_with_descriptors(fd, data, length,
                                                with_memory ? std::span<const int>(memory, 2) : std::span<const int>(),
                                                MSG_NOSIGNAL | MSG_DONTWAIT);
        for (int m : memory)
            if (m >= 0) ::close(m);
        if (!sent) return; // the daemon hung up on this client: nothing to wait for
        if (!daemon().pump_until_readable(fd, std::chrono::seconds(5))) fail("a request got no answer within 5 s");
        attach::reply reply;
        const received_datagram got = receive_with_descriptors(fd, &reply, sizeof reply, MSG_DONTWAIT);
        for (std::size_t i = 0; i < got.fd_count; ++i) take(got.fds[i]);
        if (got.length == static_cast<ssize_t>(sizeof reply) && reply.status == 0 && reply.handle)
            handles.push_back(reply.handle);
    }

    std::uint32_t handle_named(std::uint32_t value) const {
        if (value < fuzz::handle_refs && !handles.empty()) return handles[value % handles.size()];
        return value;
    }
};

void resolve_handles(client& c, attach::request& r) {
    using attach::op;
    r.handle = c.handle_named(r.handle);
    switch (r.code) {
    case op::reg_mr: r.reg_mr.pd = c.handle_named(r.reg_mr.pd); break;
    case op::create_cq: r.create_cq.channel = c.handle_named(r.create_cq.channel); break;
    case op::create_qp:
        r.create_qp.pd = c.handle_named(r.create_qp.pd);
        r.create_qp.send_cq = c.handle_named(r.create_qp.send_cq);
        r.create_qp.recv_cq = c.handle_named(r.create_qp.recv_cq);
        r.create_qp.srq = c.handle_named(r.create_qp.srq);
        break;
    case op::create_ah: r.create_ah.pd = c.handle_named(r.create_ah.pd); break;
    case op::create_srq: r.create_srq.pd = c.handle_named(r.create_srq.pd); break;
    default: break;
    }
}

void scribble(client& c, std::span<const std::uint8_t> body) {
    if (body.size() < 3 || c.regions.empty()) return;
    const client::region& r = c.regions[body[0] % c.regions.size()];
    const std::size_t offset = (std::size_t(body[1]) << 8 | body[2]) * 8 % r.length;
    const std::size_t n = std::min(body.size() - 3, r.length - offset);
    std::memcpy(static_cast<char*>(r.base) + offset, body.data() + 3, n);
    for (int d : c.doorbells) ::eventfd_write(d, 1);
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    daemon_under_test& d = daemon();
    fuzz::attach_reader input({data, size});
    {
        client c;
        c.fd = ::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
        sockaddr_un address{};
        address.sun_family = AF_UNIX;
        std::snprintf(address.sun_path, sizeof address.sun_path, "%s",
                      control::attach_socket_path(d.runtime, "h1").c_str());
        if (::connect(c.fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) fail("cannot connect");
        if (!(input.flags() & fuzz::attach_no_open)) {
            attach::request hello{};
            hello.code = attach::op::hello;
            hello.hello.version = attach::protocol_version;
            std::strcpy(hello.hello.host, "h1");
            c.exchange(&hello, sizeof hello, false);
            attach::request open{};
            open.code = attach::op::open_device;
            std::strcpy(open.open_device.device, "rfab0");
            c.exchange(&open, sizeof open, true);
        }
        fuzz::attach_message m;
        while (input.next(m)) {
            if (m.kind & fuzz::attach_scribble) {
                scribble(c, m.body);
                continue;
            }
            const bool with_memory = m.kind & fuzz::attach_memory;
            if (m.kind & fuzz::attach_raw) {
                c.exchange(m.body.data(), m.body.size(), with_memory);
                continue;
            }
            attach::request r{};
            r.code = static_cast<attach::op>(m.kind & 0x1f);
            const std::size_t room = sizeof r - offsetof(attach::request, handle);
            std::memcpy(&r.handle, m.body.data(), std::min(room, m.body.size()));
            resolve_handles(c, r);
            c.exchange(&r, sizeof r, with_memory);
        }
    }
    // The connection is closed: its session must go, and everything it held with it.
    d.pump_until_idle(std::chrono::seconds(5));
    if (d.server->sessions()) fail("a closed connection's session lives on");
    const auto held = d.fab->driver().mail().call([&d] { return d.nic->resources(); });
    if (held.contexts || held.pds || held.mrs || held.channels || held.cqs || held.qps)
        fail("the NIC holds objects of a closed session");
    return 0;
}
