#include "control/attach_server.hpp"

#include "control/daemon.hpp"
#include "dataplane/log.hpp"
#include "nic_emu/attach_protocol.hpp"
#include "nic_emu/process_memory.hpp"

#include <array>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <stdexcept>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

namespace rocefab::control {

namespace asio = boost::asio;

namespace {

// Descriptors a message brought or is to take: closed when this goes, unless taken.
struct descriptors {
    std::array<int, attach::max_fds> fds{};
    std::array<bool, attach::max_fds> owned{};
    std::size_t count = 0;

    descriptors() { fds.fill(-1); }
    ~descriptors() {
        for (std::size_t i = 0; i < count; ++i)
            if (owned[i] && fds[i] >= 0) ::close(fds[i]);
    }
    descriptors(const descriptors&) = delete;
    descriptors& operator=(const descriptors&) = delete;

    // `fd` goes with the reply; it is closed afterwards when `close_after`.
    void add(int fd, bool close_after) {
        fds[count] = fd;
        owned[count] = close_after;
        ++count;
    }
    // The received descriptor `i`, now the caller's, or -1.
    int take(std::size_t i) {
        if (i >= count) return -1;
        owned[i] = false;
        return fds[i];
    }
};

bool send_reply(int fd, const attach::reply& reply, const descriptors& pass) {
    iovec io{const_cast<attach::reply*>(&reply), sizeof reply};
    msghdr message{};
    message.msg_iov = &io;
    message.msg_iovlen = 1;
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * attach::max_fds)];
    if (pass.count) {
        std::memset(control, 0, sizeof control);
        message.msg_control = control;
        message.msg_controllen = CMSG_SPACE(sizeof(int) * pass.count);
        cmsghdr* c = CMSG_FIRSTHDR(&message);
        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN(sizeof(int) * pass.count);
        std::memcpy(CMSG_DATA(c), pass.fds.data(), sizeof(int) * pass.count);
    }
    ssize_t sent;
    do {
        sent = ::sendmsg(fd, &message, MSG_NOSIGNAL | MSG_DONTWAIT);
    } while (sent < 0 && errno == EINTR);
    return sent == static_cast<ssize_t>(sizeof reply);
}

void describe(const nic::nic_node& nic, attach::device_info& out) {
    std::memset(&out, 0, sizeof out);
    std::snprintf(out.name, sizeof out.name, "%s", nic.spec().name.c_str());
    out.node_guid = htobe64(nic.node_guid());
    std::memcpy(out.mac, nic.spec().mac.bytes.data(), 6);
    for (std::uint32_t i = 0; i < attach::gid_table_size; ++i) std::memcpy(out.gids[i], nic.gid(i).bytes.data(), 16);
    out.device = nic.device_attributes();
    out.port = nic.port_attributes();
}

const char* op_name(attach::op code) {
    using attach::op;
    switch (code) {
    case op::hello: return "hello";
    case op::open_device: return "open_device";
    case op::query_device: return "query_device";
    case op::query_port: return "query_port";
    case op::alloc_pd: return "alloc_pd";
    case op::dealloc_pd: return "dealloc_pd";
    case op::reg_mr: return "reg_mr";
    case op::dereg_mr: return "dereg_mr";
    case op::create_comp_channel: return "create_comp_channel";
    case op::destroy_comp_channel: return "destroy_comp_channel";
    case op::create_cq: return "create_cq";
    case op::destroy_cq: return "destroy_cq";
    case op::create_qp: return "create_qp";
    case op::modify_qp: return "modify_qp";
    case op::query_qp: return "query_qp";
    case op::destroy_qp: return "destroy_qp";
    case op::create_ah: return "create_ah";
    case op::destroy_ah: return "destroy_ah";
    case op::create_srq: return "create_srq";
    case op::modify_srq: return "modify_srq";
    case op::query_srq: return "query_srq";
    case op::destroy_srq: return "destroy_srq";
    }
    return "an unknown request";
}

} // namespace

struct attach_server::listener {
    std::string host;
    std::string path;
    asio::posix::stream_descriptor socket;
    bool waiting = false; // an async_wait is outstanding
    listener(asio::io_context& io, std::string h, std::string p) : host(std::move(h)), path(std::move(p)), socket(io) {}
};

class attach_server::session : public std::enable_shared_from_this<session> {
public:
    session(asio::io_context& io, attach_server& server, int fd, peer who, std::string host)
        : _socket(io, fd), _server(server), _fabric(server._fabric), _peer(std::move(who)), _host(std::move(host)) {
        _server.session_opened(_peer.uid);
    }

    ~session() {
        if (_nic) {
            nic::nic_node* nic = _nic;
            const std::uint32_t context = _context;
            _fabric.driver().mail().call([nic, context] { nic->close_context(context); });
            log::attach().info("{} on {}: closed {}/{} (context {})", _peer.describe(), _host, _host, nic->spec().name,
                               context);
        }
        if (_doorbell >= 0) _fabric.driver().mail().waker().remove_doorbell(_doorbell);
        _server.session_closed(_peer.uid);
    }

    void start() { wait(); }

private:
    void wait() {
        _socket.async_wait(asio::posix::stream_descriptor::wait_read,
                           [self = shared_from_this()](const boost::system::error_code& error) {
                               if (!error) self->on_readable();
                           });
    }

    void on_readable() {
        attach::request request;
        descriptors received;
        iovec io{&request, sizeof request};
        msghdr message{};
        message.msg_iov = &io;
        message.msg_iovlen = 1;
        alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * attach::max_fds)];
        message.msg_control = control;
        message.msg_controllen = sizeof control;
        ssize_t got;
        do {
            got = ::recvmsg(_socket.native_handle(), &message, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
        } while (got < 0 && errno == EINTR);
        if (got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return wait();
        if (got <= 0) return; // closed: the last reference goes, and the destructor cleans up
        // Whatever descriptors came are the daemon's now: kept only if the request needs them.
        for (cmsghdr* c = CMSG_FIRSTHDR(&message); c; c = CMSG_NXTHDR(&message, c)) {
            if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
            const std::size_t n = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
            for (std::size_t i = 0; i < n; ++i) {
                int fd;
                std::memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof fd);
                if (received.count < attach::max_fds)
                    received.add(fd, true);
                else
                    ::close(fd);
            }
        }
        attach::reply reply;
        std::memset(&reply, 0, sizeof reply);
        descriptors pass;
        if (got != static_cast<ssize_t>(sizeof request) || (message.msg_flags & MSG_TRUNC)) {
            reply.status = EINVAL; // a client that speaks another protocol version
            refused("a request", "it is not a request of this protocol version");
        } else {
            handle(request, reply, received, pass);
        }
        if (send_reply(_socket.native_handle(), reply, pass)) wait();
    }

    template <typename Fn>
    auto on_nic(Fn&& fn) {
        return _fabric.driver().mail().call(std::forward<Fn>(fn));
    }

    void refused(const char* what, const std::string& why) {
        _refusals.log(log::attach(), spdlog::level::info, "{} on {}: {} refused: {}", _peer.describe(), _host, what, why);
    }

    void handle(const attach::request& request, attach::reply& reply, descriptors& received, descriptors& pass) {
        using attach::op;
        if (request.code == op::hello) return hello(request, reply);
        if (request.code == op::open_device) return open_device(request, reply, received, pass);
        if (!_nic) {
            reply.status = EINVAL;
            refused(op_name(request.code), "no device is open on this connection");
            return;
        }
        run(request, reply, pass);
        if (reply.status) refused(op_name(request.code), std::strerror(reply.status));
    }

    void run(const attach::request& request, attach::reply& reply, descriptors& pass) {
        using attach::op;
        nic::nic_node* nic = _nic;
        const std::uint32_t ctx = _context;
        switch (request.code) {
        case op::query_device:
        case op::query_port:
            on_nic([&] { describe(*nic, reply.open_device.device); });
            return;
        case op::alloc_pd:
            reply.status = on_nic([&] { return nic->alloc_pd(ctx, reply.handle); });
            return;
        case op::dealloc_pd:
            reply.status = on_nic([&] { return nic->dealloc_pd(ctx, request.handle); });
            return;
        case op::reg_mr: {
            const auto& r = request.reg_mr;
            // As pinning the pages would (ib_umem_get): the range must be mapped in the program,
            // writable if the MR may be written. The rest the NIC checks.
            const bool writable = r.access & (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC);
            if (r.length && r.address + r.length >= r.address &&
                (reply.status = _memory->check_range(r.address, r.length, writable)))
                return;
            reply.status = on_nic([&] {
                return nic->reg_mr(ctx, r.pd, r.address, r.length, r.iova, r.access, reply.handle, reply.reg_mr.lkey,
                                   reply.reg_mr.rkey);
            });
            return;
        }
        case op::dereg_mr:
            reply.status = on_nic([&] { return nic->dereg_mr(ctx, request.handle); });
            return;
        case op::create_comp_channel: {
            int fds[2];
            if (::pipe2(fds, O_CLOEXEC) != 0) {
                reply.status = errno;
                return;
            }
            // The NIC's end never blocks the data plane.
            ::fcntl(fds[1], F_SETFL, O_NONBLOCK);
            reply.status = on_nic([&] { return nic->create_channel(ctx, fds[1], reply.handle); });
            if (reply.status) {
                ::close(fds[0]);
                ::close(fds[1]);
            } else {
                pass.add(fds[0], true);
            }
            return;
        }
        case op::destroy_comp_channel:
            reply.status = on_nic([&] { return nic->destroy_channel(ctx, request.handle); });
            return;
        case op::create_cq: {
            const std::uint32_t cqe = request.create_cq.cqe;
            if (cqe == 0 || cqe > hw::max_queue_depth) {
                reply.status = EINVAL;
                return;
            }
            const std::uint32_t slots = hw::ring_slots_for(cqe);
            nic::shared_region region;
            int fd;
            if (!nic::shared_region::create("rocefab-cq", hw::cq_region_size(slots), region, fd)) {
                reply.status = errno;
                return;
            }
            reply.status = on_nic(
                [&] { return nic->create_cq(ctx, slots, request.create_cq.channel, std::move(region), reply.handle); });
            if (reply.status) {
                ::close(fd);
            } else {
                reply.create_cq.slots = slots;
                pass.add(fd, true);
            }
            return;
        }
        case op::destroy_cq:
            reply.status = on_nic([&] { return nic->destroy_cq(ctx, request.handle); });
            return;
        case op::create_qp: {
            const auto& q = request.create_qp;
            ibv_qp_cap cap{};
            std::uint32_t send_slots, recv_slots;
            if ((reply.status = nic::nic_node::qp_geometry(q.cap, cap, send_slots, recv_slots))) return;
            nic::shared_region region;
            int fd;
            if (!nic::shared_region::create("rocefab-qp", hw::qp_region_size(send_slots, recv_slots), region, fd)) {
                reply.status = errno;
                return;
            }
            nic::nic_node::qp_request qr{q.pd, q.send_cq, q.recv_cq, static_cast<ibv_qp_type>(q.qp_type),
                                         q.sq_sig_all != 0, q.cap, q.srq};
            reply.status = on_nic([&] {
                return nic->create_qp(ctx, qr, std::move(region), reply.handle, reply.create_qp.qp_num,
                                      reply.create_qp.cap);
            });
            if (reply.status) {
                ::close(fd);
            } else {
                reply.create_qp.send_slots = send_slots;
                reply.create_qp.recv_slots = recv_slots;
                pass.add(fd, true);
            }
            return;
        }
        case op::modify_qp:
            reply.status = on_nic([&] {
                return nic->modify_qp(ctx, request.handle, request.modify_qp.attr, request.modify_qp.mask,
                                      _fabric.driver().now());
            });
            return;
        case op::query_qp: {
            bool sig_all = false;
            reply.status = on_nic(
                [&] { return nic->query_qp(ctx, request.handle, reply.query_qp.attr, reply.query_qp.cap, sig_all); });
            reply.query_qp.sq_sig_all = sig_all;
            return;
        }
        case op::destroy_qp:
            reply.status = on_nic([&] { return nic->destroy_qp(ctx, request.handle); });
            return;
        case op::create_ah:
            reply.status =
                on_nic([&] { return nic->create_ah(ctx, request.create_ah.pd, request.create_ah.attr, reply.handle); });
            return;
        case op::destroy_ah:
            reply.status = on_nic([&] { return nic->destroy_ah(ctx, request.handle); });
            return;
        case op::create_srq: {
            ibv_srq_attr granted{};
            std::uint32_t slots;
            if ((reply.status = nic::nic_node::srq_geometry(request.create_srq.attr, granted, slots))) return;
            nic::shared_region region;
            int fd;
            if (!nic::shared_region::create("rocefab-srq", hw::srq_region_size(slots), region, fd)) {
                reply.status = errno;
                return;
            }
            reply.status = on_nic([&] {
                return nic->create_srq(ctx, request.create_srq.pd, granted, slots, std::move(region), reply.handle);
            });
            if (reply.status) {
                ::close(fd);
            } else {
                reply.create_srq.slots = slots;
                reply.create_srq.attr = granted;
                pass.add(fd, true);
            }
            return;
        }
        case op::modify_srq:
            reply.status = on_nic([&] {
                return nic->modify_srq(ctx, request.handle, request.modify_srq.attr, request.modify_srq.mask);
            });
            return;
        case op::query_srq:
            reply.status = on_nic([&] { return nic->query_srq(ctx, request.handle, reply.query_srq.attr); });
            return;
        case op::destroy_srq:
            reply.status = on_nic([&] { return nic->destroy_srq(ctx, request.handle); });
            return;
        case op::hello:
        case op::open_device:
            break;
        }
        reply.status = EOPNOTSUPP;
    }

    void hello(const attach::request& request, attach::reply& reply) {
        if (request.hello.version != attach::protocol_version) {
            reply.status = EPROTO;
            refused("hello", "protocol version " + std::to_string(request.hello.version) + ", the daemon speaks " +
                                 std::to_string(attach::protocol_version) + " (a libibverbs of another rocefab build?)");
            return;
        }
        const std::string asked(request.hello.host, strnlen(request.hello.host, sizeof request.hello.host));
        if (!asked.empty() && asked != _host) {
            reply.status = EACCES;
            refused("hello", "it asked for host '" + asked + "' on the socket of host '" + _host + "'");
            return;
        }
        _greeted = true;
        reply.hello.version = attach::protocol_version;
        const auto nics = _fabric.nics_of(_host);
        reply.hello.device_count = static_cast<std::uint32_t>(std::min(nics.size(), attach::max_devices));
        for (std::uint32_t i = 0; i < reply.hello.device_count; ++i) describe(*nics[i], reply.hello.devices[i]);
    }

    void open_device(const attach::request& request, attach::reply& reply, descriptors& received, descriptors& pass) {
        if (!_greeted || _nic) {
            reply.status = EINVAL;
            refused("open_device", _nic ? "a device is open on this connection already" : "no hello came first");
            return;
        }
        const std::string name(request.open_device.device,
                               strnlen(request.open_device.device, sizeof request.open_device.device));
        nic::nic_node* nic = _fabric.find_nic(_host, name);
        if (!nic) {
            reply.status = ENODEV;
            refused("open_device", "host " + _host + " has no NIC '" + name + "'");
            return;
        }
        std::string why;
        std::unique_ptr<nic::process_memory> memory =
            nic::process_memory::adopt(received.take(0), received.take(1), _peer.pid, why);
        if (!memory) {
            reply.status = EPERM;
            refused("open_device", why);
            return;
        }
        int async[2];
        if (::pipe2(async, O_CLOEXEC) != 0) {
            reply.status = errno;
            return;
        }
        ::fcntl(async[1], F_SETFL, O_NONBLOCK); // the NIC's end never blocks the data plane
        nic::shared_region doorbells;
        int doorbells_fd;
        if (!nic::shared_region::create("rocefab-doorbells", hw::doorbell_queue_region_size, doorbells, doorbells_fd)) {
            reply.status = errno;
            ::close(async[0]);
            ::close(async[1]);
            return;
        }
        wakeup& waker = _fabric.driver().mail().waker();
        _doorbell = waker.add_doorbell();
        if (_doorbell < 0) {
            reply.status = errno;
            ::close(async[0]);
            ::close(async[1]);
            ::close(doorbells_fd);
            return;
        }
        _memory = memory.get();
        _context = on_nic([&] { return nic->open_context(std::move(memory), async[1], std::move(doorbells)); });
        _nic = nic;
        describe(*nic, reply.open_device.device);
        pass.add(async[0], true);
        pass.add(_doorbell, false);
        pass.add(waker.flag_page_fd(), false);
        pass.add(doorbells_fd, true);
        log::attach().info("{} on {}: opened {}/{} (context {})", _peer.describe(), _host, _host, name, _context);
    }

    asio::posix::stream_descriptor _socket;
    attach_server& _server;
    fabric& _fabric;
    peer _peer;
    std::string _host;
    bool _greeted = false;
    nic::nic_node* _nic = nullptr;
    std::uint32_t _context = 0;
    nic::process_memory* _memory = nullptr; // owned by the NIC's context, which this session closes
    int _doorbell = -1;
    throttled_log _refusals;
};

attach_server::attach_server(asio::io_context& io, fabric& fab, const std::string& runtime_dir, access_policy policy,
                             session_limits limits)
    : _io(io), _fabric(fab), _policy(std::move(policy)), _limits(limits),
      _directory(runtime_dir + "/" + attach_directory_name), _pause(io) {
    std::error_code error;
    std::filesystem::create_directories(_directory, error);
    if (error) throw std::runtime_error("cannot create " + _directory + ": " + error.message());
    // The directory is only a place: who may connect is each socket's own mode, and the daemon's check.
    ::chmod(_directory.c_str(), 0755);
    for (const auto& host : _fabric.topology().hosts) {
        auto l = std::make_unique<listener>(io, host.name, attach_socket_path(runtime_dir, host.name));
        const int fd = ::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (fd < 0) throw std::runtime_error(std::string("socket: ") + std::strerror(errno));
        sockaddr_un address{};
        address.sun_family = AF_UNIX;
        if (l->path.size() >= sizeof address.sun_path) {
            ::close(fd);
            throw std::runtime_error("socket path too long: " + l->path);
        }
        std::strcpy(address.sun_path, l->path.c_str());
        ::unlink(l->path.c_str());
        if (::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
            const int e = errno;
            ::close(fd);
            throw std::runtime_error("cannot listen on " + l->path + ": " + std::strerror(e));
        }
        l->socket.assign(fd);
        _policy.restrict_socket(l->path);
        if (::listen(fd, 128) != 0) throw std::runtime_error("cannot listen on " + l->path + ": " + std::strerror(errno));
        _listeners.push_back(std::move(l));
    }
    for (auto& l : _listeners) accept_next(*l);
    log::attach().info("programs of {} may attach, at most {} sessions ({} per user), at {}/HOST.sock",
                       _policy.describe(), _limits.total, _limits.per_user, _directory);
}

attach_server::~attach_server() {
    for (auto& l : _listeners) ::unlink(l->path.c_str());
}

void attach_server::accept_next(listener& l) {
    if (l.waiting) return;
    l.waiting = true;
    l.socket.async_wait(asio::posix::stream_descriptor::wait_read, [this, &l](const boost::system::error_code& error) {
        l.waiting = false;
        if (error == asio::error::operation_aborted) return;
        accept_ready(l);
    });
}

void attach_server::accept_ready(listener& l) {
    for (;;) {
        const int fd = ::accept4(l.socket.native_handle(), nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
        if (fd < 0) {
            if (errno == EAGAIN || errno == EWOULDBLOCK) break;
            if (errno == EINTR || errno == ECONNABORTED || errno == EPROTO) continue;
            // Out of descriptors or memory: the connection waits in the backlog. Accepting again
            // at once would spin, so every listener pauses for a moment, then tries again.
            _shortage.log(log::attach(), spdlog::level::warn, "cannot accept a connection on {}: {}; pausing 100 ms",
                          l.path, std::strerror(errno));
            if (!_paused) {
                _paused = true;
                _pause.expires_after(std::chrono::milliseconds(100));
                _pause.async_wait([this](const boost::system::error_code& e) {
                    if (e == asio::error::operation_aborted) return;
                    _paused = false;
                    for (auto& each : _listeners) accept_ready(*each);
                });
            }
            return;
        }
        const std::optional<peer> who = peer_of(fd);
        if (!who || !_policy.may_use(*who)) {
            _refusals.log(log::attach(), spdlog::level::warn, "{} refused on {}: only {} may attach",
                          who ? who->describe() : std::string("a process the kernel does not name"), l.host,
                          _policy.describe());
            refuse(fd, EACCES);
            continue;
        }
        const auto user = _sessions_by_user.find(who->uid);
        const std::uint32_t of_user = user == _sessions_by_user.end() ? 0 : user->second;
        if (_sessions >= _limits.total || of_user >= _limits.per_user) {
            _refusals.log(log::attach(), spdlog::level::warn,
                          "{} refused on {}: {} sessions open ({} of this user); the limits are {} and {} a user",
                          who->describe(), l.host, _sessions, of_user, _limits.total, _limits.per_user);
            refuse(fd, EAGAIN);
            continue;
        }
        std::make_shared<session>(_io, *this, fd, *who, l.host)->start();
    }
    if (!_paused) accept_next(l);
}

void attach_server::refuse(int fd, int status) {
    attach::reply reply;
    std::memset(&reply, 0, sizeof reply);
    reply.status = status;
    send_reply(fd, reply, descriptors{});
    ::close(fd);
}

void attach_server::session_opened(uid_t uid) {
    ++_sessions;
    ++_sessions_by_user[uid];
}

void attach_server::session_closed(uid_t uid) {
    --_sessions;
    if (--_sessions_by_user[uid] == 0) _sessions_by_user.erase(uid);
}

} // namespace rocefab::control
