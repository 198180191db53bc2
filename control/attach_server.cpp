#include "control/attach_server.hpp"

#include "control/daemon.hpp"
#include "dataplane/log.hpp"
#include "nic_emu/attach_protocol.hpp"
#include "nic_emu/descriptor_passing.hpp"
#include "nic_emu/process_memory.hpp"

#include <boost/asio/post.hpp>

#include <array>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <functional>
#include <stdexcept>
#include <sys/socket.h>
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
    ~descriptors() { drop(); }
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
    // Nothing goes with the reply after all: what was to be closed afterwards is closed now.
    void drop() {
        for (std::size_t i = 0; i < count; ++i)
            if (owned[i] && fds[i] >= 0) ::close(fds[i]);
        count = 0;
    }
};

bool send_reply(int fd, const attach::reply& reply, const descriptors& pass) {
    return send_with_descriptors(fd, &reply, sizeof reply, {pass.fds.data(), pass.count}, MSG_NOSIGNAL | MSG_DONTWAIT);
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

class attach_server::session : public std::enable_shared_from_this<session> {
public:
    session(asio::io_context& io, fabric& fab, std::shared_ptr<tally> sessions, int fd, peer who, std::string host)
        : _socket(io, fd), _fabric(fab), _tally(std::move(sessions)), _peer(std::move(who)), _host(std::move(host)) {
        _tally->opened(_peer.uid);
    }

    ~session() {
        if (_nic) {
            nic::nic_node* nic = _nic;
            const std::uint32_t context = _context;
            _fabric.driver().mail().call([nic, context] { nic->close_context(context); });
            _tally->log.log(log::attach(), spdlog::level::info, "{} on {}: closed {}/{} (context {})", _peer.describe(),
                            _host, _host, nic->spec().name, context);
        }
        if (_doorbell >= 0) _fabric.driver().mail().waker().remove_doorbell(_doorbell);
        _tally->closed(_peer.uid);
    }

    void start() { wait(); }

private:
    void wait() {
        _socket.async_wait(asio::posix::stream_descriptor::wait_read,
                           [self = shared_from_this()](const boost::system::error_code& error) {
                               if (!error) self->on_readable();
                           });
    }

    // A request's answer on its way: filled in on the data plane for what the NIC decides,
    // sent from the io thread. The io thread never waits for the data plane, so the requests of
    // many programs (thousands of QPs being connected) are in flight at once.
    struct answer {
        attach::op code{};
        attach::reply reply;
        descriptors pass;
        // On the io thread once the NIC answered: keeps or closes what goes with the reply.
        std::function<void(answer&)> settle;
        answer() { std::memset(&reply, 0, sizeof reply); }
    };
    using answer_ptr = std::shared_ptr<answer>;

    void on_readable() {
        attach::request request{}; // a short datagram leaves the rest zero
        const received_datagram got =
            receive_with_descriptors(_socket.native_handle(), &request, sizeof request, MSG_DONTWAIT);
        if (got.length < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return wait();
        // Whatever descriptors came are the daemon's now: kept only if the request needs them.
        descriptors received;
        for (std::size_t i = 0; i < got.fd_count; ++i) received.add(got.fds[i], true);
        if (got.length <= 0) return; // closed: the last reference goes, and the destructor cleans up
        auto a = std::make_shared<answer>();
        a->code = request.code;
        if (got.length != static_cast<ssize_t>(sizeof request) || got.truncated) {
            a->reply.status = EINVAL;
            refused("a request", "it is not a request of this protocol version");
            return respond(a, false);
        }
        handle(request, received, a);
    }

    // Sends the answer (on the io thread) and waits for the next request.
    void respond(const answer_ptr& a, bool log_refusal = true) {
        if (a->settle) a->settle(*a);
        if (a->reply.status && log_refusal) refused(op_name(a->code), std::strerror(a->reply.status));
        if (send_reply(_socket.native_handle(), a->reply, a->pass)) wait();
    }

    // Runs `work` on the data plane with the reply to fill, then responds from the io thread.
    // `work` must be copyable (the mailbox keeps closures in std::function).
    template <typename Work> void on_nic(answer_ptr a, Work work) {
        _fabric.driver().mail().post([self = shared_from_this(), a = std::move(a), work = std::move(work)]() mutable {
            try {
                work(a->reply);
            } catch (const std::exception&) {
                a->reply.status = ENOMEM; // the NIC's bookkeeping could not grow
            }
            // The references go to the io thread: the session must never be destroyed here, on
            // the data plane, whose close_context it would wait for.
            auto executor = self->_socket.get_executor();
            asio::post(executor, [self = std::move(self), a = std::move(a)] { self->respond(a); });
        });
    }

    void refused(const char* what, const std::string& why) {
        _tally->refusals.log(log::attach(), spdlog::level::info, "{} on {}: {} refused: {}", _peer.describe(), _host,
                             what, why);
    }

    void handle(const attach::request& request, descriptors& received, const answer_ptr& a) {
        using attach::op;
        if (request.code == op::hello) {
            hello(request, a->reply);
            return respond(a, false);
        }
        if (request.code == op::open_device) {
            open_device(request, a->reply, received, a->pass);
            return respond(a, false);
        }
        if (!_nic) {
            a->reply.status = EINVAL;
            refused(op_name(request.code), "no device is open on this connection");
            return respond(a, false);
        }
        run(request, received, a);
    }

    // A memfd of `length` bytes for a ring, to share with the program once the NIC took it.
    static bool ring_region(const char* name, std::size_t length, const answer_ptr& a,
                            std::shared_ptr<nic::shared_region>& region) {
        region = std::make_shared<nic::shared_region>();
        int fd;
        if (!nic::shared_region::create(name, length, *region, fd)) {
            a->reply.status = errno;
            return false;
        }
        a->pass.add(fd, true);
        a->settle = [](answer& done) {
            if (done.reply.status) done.pass.drop();
        };
        return true;
    }

    void run(const attach::request& request, descriptors& received, const answer_ptr& a) {
        using attach::op;
        nic::nic_node* nic = _nic;
        const std::uint32_t ctx = _context;
        const std::uint32_t handle = request.handle;
        switch (request.code) {
        case op::query_device:
        case op::query_port: return on_nic(a, [nic](attach::reply& r) { describe(*nic, r.open_device.device); });
        case op::alloc_pd: return on_nic(a, [nic, ctx](attach::reply& r) { r.status = nic->alloc_pd(ctx, r.handle); });
        case op::dealloc_pd:
            return on_nic(a, [nic, ctx, handle](attach::reply& r) { r.status = nic->dealloc_pd(ctx, handle); });
        case op::reg_mr: {
            const auto m = request.reg_mr;
            // As pinning the pages would (ib_umem_get): the range must be mapped in the program,
            // writable if the MR may be written. The rest the NIC checks.
            const bool writable =
                m.access & (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC);
            if (m.length && m.address + m.length >= m.address &&
                (a->reply.status = _memory->check_range(m.address, m.length, writable)))
                return respond(a);
            // Pages the library moved onto a memfd (verbs/shared_pages.hpp): mapped here, handed
            // to the program's memory on the data plane once the MR exists.
            nic::process_memory::shared_mapping shared;
            if (m.shared_length) {
                std::string why;
                if (!nic::process_memory::map_shared(received.take(0), m.shared_address, m.shared_length, m.address,
                                                     m.length, shared, why)) {
                    a->reply.status = EINVAL;
                    refused("reg_mr", why);
                    return respond(a, false);
                }
            }
            nic::process_memory* memory = _memory;
            return on_nic(a, [nic, ctx, m, memory, shared](attach::reply& r) {
                r.status = nic->reg_mr(ctx, m.pd, m.address, m.length, m.iova, m.access, r.handle, r.reg_mr.lkey,
                                       r.reg_mr.rkey);
                if (!shared.view) return;
                if (r.status)
                    nic::process_memory::unmap_shared(shared);
                else
                    memory->add_shared(shared, r.handle);
            });
        }
        case op::dereg_mr: {
            nic::process_memory* memory = _memory;
            return on_nic(a, [nic, ctx, handle, memory](attach::reply& r) {
                if (!(r.status = nic->dereg_mr(ctx, handle))) memory->remove_shared(handle);
            });
        }
        case op::create_comp_channel: {
            int fds[2];
            if (::pipe2(fds, O_CLOEXEC) != 0) {
                a->reply.status = errno;
                return respond(a);
            }
            // The NIC's end never blocks the data plane; the NIC owns it once the channel exists.
            ::fcntl(fds[1], F_SETFL, O_NONBLOCK);
            a->pass.add(fds[0], true);
            a->settle = [](answer& done) {
                if (done.reply.status) done.pass.drop();
            };
            const int nic_end = fds[1];
            return on_nic(a, [nic, ctx, nic_end](attach::reply& r) {
                r.status = nic->create_channel(ctx, nic_end, r.handle);
                if (r.status) ::close(nic_end);
            });
        }
        case op::destroy_comp_channel:
            return on_nic(a, [nic, ctx, handle](attach::reply& r) { r.status = nic->destroy_channel(ctx, handle); });
        case op::create_cq: {
            const std::uint32_t cqe = request.create_cq.cqe, channel = request.create_cq.channel;
            if (cqe == 0 || cqe > hw::max_cqe) {
                a->reply.status = EINVAL;
                return respond(a);
            }
            const std::uint32_t slots = hw::ring_slots_for(cqe);
            std::shared_ptr<nic::shared_region> region;
            if (!ring_region("rocefab-cq", hw::cq_region_size(slots), a, region)) return respond(a);
            return on_nic(a, [nic, ctx, slots, channel, region](attach::reply& r) {
                r.status = nic->create_cq(ctx, slots, channel, std::move(*region), r.handle);
                if (!r.status) r.create_cq.slots = slots;
            });
        }
        case op::destroy_cq:
            return on_nic(a, [nic, ctx, handle](attach::reply& r) { r.status = nic->destroy_cq(ctx, handle); });
        case op::create_qp: {
            const auto q = request.create_qp;
            // Only a valid ibv_qp_type may become one; the others are answered as create_qp does.
            if (q.qp_type != IBV_QPT_RC && q.qp_type != IBV_QPT_UC && q.qp_type != IBV_QPT_UD) {
                a->reply.status = EOPNOTSUPP;
                return respond(a);
            }
            ibv_qp_cap cap{};
            std::uint32_t send_slots, recv_slots;
            if ((a->reply.status = nic::nic_node::qp_geometry(q.cap, cap, send_slots, recv_slots))) return respond(a);
            std::shared_ptr<nic::shared_region> region;
            if (!ring_region("rocefab-qp", hw::qp_region_size(send_slots, recv_slots), a, region)) return respond(a);
            const nic::nic_node::qp_request qr{
                q.pd, q.send_cq, q.recv_cq, static_cast<ibv_qp_type>(q.qp_type), q.sq_sig_all != 0, q.cap, q.srq};
            return on_nic(a, [nic, ctx, qr, region, send_slots, recv_slots](attach::reply& r) {
                r.status = nic->create_qp(ctx, qr, std::move(*region), r.handle, r.create_qp.qp_num, r.create_qp.cap);
                r.create_qp.send_slots = send_slots;
                r.create_qp.recv_slots = recv_slots;
            });
        }
        case op::modify_qp: {
            const auto m = request.modify_qp;
            fabric* fab = &_fabric;
            return on_nic(a, [nic, ctx, handle, m, fab](attach::reply& r) {
                r.status = nic->modify_qp(ctx, handle, m.attr, m.mask, fab->driver().now());
            });
        }
        case op::query_qp:
            return on_nic(a, [nic, ctx, handle](attach::reply& r) {
                bool sig_all = false;
                r.status = nic->query_qp(ctx, handle, r.query_qp.attr, r.query_qp.cap, sig_all);
                r.query_qp.sq_sig_all = sig_all;
            });
        case op::destroy_qp:
            return on_nic(a, [nic, ctx, handle](attach::reply& r) { r.status = nic->destroy_qp(ctx, handle); });
        case op::create_ah: {
            const auto c = request.create_ah;
            return on_nic(a,
                          [nic, ctx, c](attach::reply& r) { r.status = nic->create_ah(ctx, c.pd, c.attr, r.handle); });
        }
        case op::destroy_ah:
            return on_nic(a, [nic, ctx, handle](attach::reply& r) { r.status = nic->destroy_ah(ctx, handle); });
        case op::create_srq: {
            const auto c = request.create_srq;
            ibv_srq_attr granted{};
            std::uint32_t slots;
            if ((a->reply.status = nic::nic_node::srq_geometry(c.attr, granted, slots))) return respond(a);
            std::shared_ptr<nic::shared_region> region;
            if (!ring_region("rocefab-srq", hw::srq_region_size(slots), a, region)) return respond(a);
            return on_nic(a, [nic, ctx, c, granted, slots, region](attach::reply& r) {
                r.status = nic->create_srq(ctx, c.pd, granted, slots, std::move(*region), r.handle);
                r.create_srq.slots = slots;
                r.create_srq.attr = granted;
            });
        }
        case op::modify_srq: {
            const auto m = request.modify_srq;
            return on_nic(a, [nic, ctx, handle, m](attach::reply& r) {
                r.status = nic->modify_srq(ctx, handle, m.attr, m.mask);
            });
        }
        case op::query_srq:
            return on_nic(
                a, [nic, ctx, handle](attach::reply& r) { r.status = nic->query_srq(ctx, handle, r.query_srq.attr); });
        case op::destroy_srq:
            return on_nic(a, [nic, ctx, handle](attach::reply& r) { r.status = nic->destroy_srq(ctx, handle); });
        case op::hello:
        case op::open_device: break;
        }
        a->reply.status = EOPNOTSUPP;
        respond(a);
    }

    void hello(const attach::request& request, attach::reply& reply) {
        if (request.hello.version != attach::protocol_version) {
            reply.status = EPROTO;
            refused("hello", "protocol version " + std::to_string(request.hello.version) + ", the daemon speaks " +
                                 std::to_string(attach::protocol_version) +
                                 " (a libibverbs of another rocefab build?)");
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
        _context = _fabric.driver().mail().call(
            [&] { return nic->open_context(std::move(memory), async[1], std::move(doorbells)); });
        _nic = nic;
        describe(*nic, reply.open_device.device);
        pass.add(async[0], true);
        pass.add(_doorbell, false);
        pass.add(waker.flag_page_fd(), false);
        pass.add(doorbells_fd, true);
        _tally->log.log(log::attach(), spdlog::level::info, "{} on {}: opened {}/{} (context {})", _peer.describe(),
                        _host, _host, name, _context);
    }

    asio::posix::stream_descriptor _socket;
    fabric& _fabric;
    std::shared_ptr<tally> _tally;
    peer _peer;
    std::string _host;
    bool _greeted = false;
    nic::nic_node* _nic = nullptr;
    std::uint32_t _context = 0;
    nic::process_memory* _memory = nullptr; // owned by the NIC's context, which this session closes
    int _doorbell = -1;
};

attach_server::attach_server(asio::io_context& io, fabric& fab, const std::string& runtime_dir, access_policy policy,
                             session_limits limits)
    : _io(io), _fabric(fab), _policy(policy), _limits(limits) {
    std::vector<std::string> hosts;
    for (const auto& host : _fabric.topology().hosts) hosts.push_back(host.name);
    _sockets = std::make_unique<host_sockets>(
        io, runtime_dir + "/" + attach_directory_name, hosts, _policy, "attach", log::attach(),
        [this](int fd, const peer& who, const std::string& host) { accepted(fd, who, host); },
        [](int fd) { refuse(fd, EACCES); });
    log::attach().info("programs of {} may attach, at most {} sessions ({} per user), at {}/HOST.sock",
                       _policy.describe(), _limits.total, _limits.per_user, _sockets->directory());
}

attach_server::~attach_server() = default;

void attach_server::accepted(int fd, const peer& who, const std::string& host) {
    const std::uint32_t of_user = _tally->of(who.uid);
    if (_tally->total >= _limits.total || of_user >= _limits.per_user) {
        _refusals.log(log::attach(), spdlog::level::warn,
                      "{} refused on {}: {} sessions open ({} of this user); the limits are {} and {} a user",
                      who.describe(), host, _tally->total, of_user, _limits.total, _limits.per_user);
        refuse(fd, EAGAIN);
        return;
    }
    std::make_shared<session>(_io, _fabric, _tally, fd, who, host)->start();
}

void attach_server::refuse(int fd, int status) {
    attach::reply reply;
    std::memset(&reply, 0, sizeof reply);
    reply.status = status;
    send_reply(fd, reply, descriptors{});
    ::close(fd);
}

} // namespace rocefab::control
