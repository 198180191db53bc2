#include "control/attach_server.hpp"

#include "nic_emu/attach_protocol.hpp"

#include <boost/asio/post.hpp>

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <stdexcept>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

namespace rocefab::control {

namespace asio = boost::asio;

namespace {

bool send_reply(int fd, const attach::reply& reply, int pass_fd) {
    iovec io{const_cast<attach::reply*>(&reply), sizeof reply};
    msghdr message{};
    message.msg_iov = &io;
    message.msg_iovlen = 1;
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))];
    if (pass_fd >= 0) {
        std::memset(control, 0, sizeof control);
        message.msg_control = control;
        message.msg_controllen = sizeof control;
        cmsghdr* c = CMSG_FIRSTHDR(&message);
        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN(sizeof(int));
        std::memcpy(CMSG_DATA(c), &pass_fd, sizeof pass_fd);
    }
    ssize_t sent;
    do {
        sent = ::sendmsg(fd, &message, MSG_NOSIGNAL);
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

} // namespace

class attach_server::session : public std::enable_shared_from_this<session> {
public:
    session(asio::io_context& io, fabric& fab, int fd, attach_server& server)
        : _socket(io, fd), _fabric(fab), _server(server) {
        ucred credentials{};
        socklen_t length = sizeof credentials;
        if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &credentials, &length) == 0) _pid = credentials.pid;
        ++_server._sessions;
    }

    ~session() {
        if (_nic) {
            nic::nic_node* nic = _nic;
            const std::uint32_t context = _context;
            _fabric.driver().mail().call([nic, context] { nic->close_context(context); });
        }
        --_server._sessions;
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
        ssize_t got;
        do {
            got = ::recv(_socket.native_handle(), &request, sizeof request, MSG_DONTWAIT);
        } while (got < 0 && errno == EINTR);
        if (got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return wait();
        if (got <= 0) return; // closed: the last reference goes, and the destructor cleans up
        attach::reply reply;
        std::memset(&reply, 0, sizeof reply);
        int pass_fd = -1;
        if (got != static_cast<ssize_t>(sizeof request))
            reply.status = EINVAL; // a client that speaks another protocol version
        else
            handle(request, reply, pass_fd);
        const bool sent = send_reply(_socket.native_handle(), reply, pass_fd);
        if (pass_fd >= 0) ::close(pass_fd);
        if (sent) wait();
    }

    template <typename Fn>
    auto on_nic(Fn&& fn) {
        return _fabric.driver().mail().call(std::forward<Fn>(fn));
    }

    void handle(const attach::request& request, attach::reply& reply, int& pass_fd) {
        using attach::op;
        if (request.code == op::hello) return hello(request, reply);
        if (request.code == op::open_device) return open_device(request, reply, pass_fd);
        if (!_nic) {
            reply.status = EINVAL;
            return;
        }
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
        case op::reg_mr:
            reply.status = on_nic([&] {
                return nic->reg_mr(ctx, request.reg_mr.pd, request.reg_mr.address, request.reg_mr.length,
                                   request.reg_mr.iova, request.reg_mr.access, reply.handle, reply.reg_mr.lkey,
                                   reply.reg_mr.rkey);
            });
            return;
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
                pass_fd = fds[0];
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
            auto region = std::make_shared<nic::shared_region>();
            int fd;
            if (!nic::shared_region::create("rocefab-cq", hw::cq_region_size(slots), *region, fd)) {
                reply.status = errno;
                return;
            }
            reply.status = on_nic([&] {
                return nic->create_cq(ctx, slots, request.create_cq.channel, std::move(*region), reply.handle);
            });
            if (reply.status)
                ::close(fd);
            else {
                reply.create_cq.slots = slots;
                pass_fd = fd;
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
            auto region = std::make_shared<nic::shared_region>();
            int fd;
            if (!nic::shared_region::create("rocefab-qp", hw::qp_region_size(send_slots, recv_slots), *region, fd)) {
                reply.status = errno;
                return;
            }
            nic::nic_node::qp_request qr{q.pd, q.send_cq, q.recv_cq, static_cast<ibv_qp_type>(q.qp_type),
                                         q.sq_sig_all != 0, q.cap, q.srq};
            reply.status = on_nic([&] {
                return nic->create_qp(ctx, qr, std::move(*region), reply.handle, reply.create_qp.qp_num,
                                      reply.create_qp.cap);
            });
            if (reply.status)
                ::close(fd);
            else {
                reply.create_qp.send_slots = send_slots;
                reply.create_qp.recv_slots = recv_slots;
                pass_fd = fd;
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
            reply.status = on_nic([&] { return nic->create_ah(ctx, request.create_ah.pd, request.create_ah.attr, reply.handle); });
            return;
        case op::destroy_ah:
            reply.status = on_nic([&] { return nic->destroy_ah(ctx, request.handle); });
            return;
        case op::create_srq: {
            ibv_srq_attr granted{};
            std::uint32_t slots;
            if ((reply.status = nic::nic_node::srq_geometry(request.create_srq.attr, granted, slots))) return;
            auto region = std::make_shared<nic::shared_region>();
            int fd;
            if (!nic::shared_region::create("rocefab-srq", hw::srq_region_size(slots), *region, fd)) {
                reply.status = errno;
                return;
            }
            reply.status = on_nic([&] {
                return nic->create_srq(ctx, request.create_srq.pd, granted, slots, std::move(*region), reply.handle);
            });
            if (reply.status)
                ::close(fd);
            else {
                reply.create_srq.slots = slots;
                reply.create_srq.attr = granted;
                pass_fd = fd;
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
        case op::map_doorbell:
            pass_fd = ::dup(_fabric.doorbell_fd());
            if (pass_fd < 0) reply.status = errno;
            return;
        default:
            reply.status = EOPNOTSUPP;
            return;
        }
    }

    void hello(const attach::request& request, attach::reply& reply) {
        if (request.hello.version != attach::protocol_version) {
            reply.status = EPROTO;
            return;
        }
        const std::string host(request.hello.host, strnlen(request.hello.host, sizeof request.hello.host));
        if (!_fabric.topology().find_host(host)) {
            reply.status = ENODEV;
            return;
        }
        _host = host;
        reply.hello.version = attach::protocol_version;
        const auto nics = _fabric.nics_of(host);
        reply.hello.device_count = static_cast<std::uint32_t>(std::min(nics.size(), attach::max_devices));
        for (std::uint32_t i = 0; i < reply.hello.device_count; ++i) describe(*nics[i], reply.hello.devices[i]);
    }

    void open_device(const attach::request& request, attach::reply& reply, int& pass_fd) {
        if (_host.empty() || _nic || _pid <= 0) {
            reply.status = EINVAL;
            return;
        }
        const std::string name(request.open_device.device,
                               strnlen(request.open_device.device, sizeof request.open_device.device));
        nic::nic_node* nic = _fabric.find_nic(_host, name);
        if (!nic) {
            reply.status = ENODEV;
            return;
        }
        int fds[2];
        if (::pipe2(fds, O_CLOEXEC) != 0) {
            reply.status = errno;
            return;
        }
        ::fcntl(fds[1], F_SETFL, O_NONBLOCK);
        const pid_t pid = _pid;
        _context = on_nic(
            [&] { return nic->open_context(std::make_unique<nic::process_address_space>(pid), fds[1]); });
        _nic = nic;
        describe(*nic, reply.open_device.device);
        pass_fd = fds[0];
    }

    asio::posix::stream_descriptor _socket;
    fabric& _fabric;
    attach_server& _server;
    pid_t _pid = 0;
    std::string _host;
    nic::nic_node* _nic = nullptr;
    std::uint32_t _context = 0;
};

attach_server::attach_server(asio::io_context& io, fabric& fab, std::string socket_path)
    : _io(io), _fabric(fab), _path(std::move(socket_path)), _listener(io) {
    const int fd = ::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) throw std::runtime_error(std::string("socket: ") + std::strerror(errno));
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    if (_path.size() >= sizeof address.sun_path) {
        ::close(fd);
        throw std::runtime_error("socket path too long: " + _path);
    }
    std::strcpy(address.sun_path, _path.c_str());
    ::unlink(_path.c_str());
    if (::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 || ::listen(fd, 64) != 0) {
        const int e = errno;
        ::close(fd);
        throw std::runtime_error("cannot listen on " + _path + ": " + std::strerror(e));
    }
    // Programs of any user on the machine may attach, as any user may open /dev/infiniband.
    ::chmod(_path.c_str(), 0666);
    _listener.assign(fd);
    accept_next();
}

attach_server::~attach_server() { ::unlink(_path.c_str()); }

void attach_server::accept_next() {
    _listener.async_wait(asio::posix::stream_descriptor::wait_read, [this](const boost::system::error_code& error) {
        if (error) return;
        for (;;) {
            const int fd = ::accept4(_listener.native_handle(), nullptr, nullptr, SOCK_CLOEXEC);
            if (fd < 0) break;
            std::make_shared<session>(_io, _fabric, fd, *this)->start();
        }
        accept_next();
    });
}

} // namespace rocefab::control
