#include "control/cm/cm_server.hpp"

#include "dataplane/log.hpp"
#include "nic_emu/descriptor_passing.hpp"

#include <boost/asio/post.hpp>

#include <arpa/inet.h>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <rdma/rdma_cma.h>
#include <stdexcept>
#include <sys/socket.h>
#include <unistd.h>

namespace rocefab::control {

namespace asio = boost::asio;

struct cm_server::gsi_watch {
    std::size_t port;
    nic::nic_node* nic;
    asio::posix::stream_descriptor fd;
    gsi_watch(asio::io_context& io, std::size_t p, nic::nic_node* n)
        : port(p), nic(n), fd(io, ::dup(n->gsi().notify_fd())) {}
};

// One event channel: requests and replies on `_socket`; events written to `_events`, the write
// end of the program's channel socket, queued here while the program does not read them.
class cm_server::session : public std::enable_shared_from_this<session> {
public:
    session(cm_server& server, int fd, std::uint64_t id, peer who, std::string host)
        : _server(server), _socket(server._io, fd), _events(server._io), _id(id), _peer(std::move(who)),
          _host(std::move(host)) {}

    ~session() = default;

    void start() { wait(); }
    uid_t uid() const { return _peer.uid; }

    void deliver(const cm_protocol::event& e) {
        if (!_events.is_open() || _closed) return;
        if (_backlog.size() >= 4096) return; // a program that never reads loses events, not the daemon's memory
        _backlog.push_back(e);
        flush();
    }

    void close(sim_time now) {
        if (_closed) return;
        _closed = true;
        _server._cm->close_session(_id, now);
        _server._sessions.erase(_id);
        boost::system::error_code ignored;
        _socket.close(ignored);
        _backlog.clear();
        // The program may still have a thread blocked reading the channel (rping's does, while
        // its main thread destroys the channel and exits): as with the kernel's ucma file, that
        // read must not end with an error. The write end stays open until the program's end of
        // the channel is gone (it then reads as end of file here).
        if (!_events.is_open()) return;
        _events.async_wait(asio::posix::stream_descriptor::wait_read,
                           [self = shared_from_this()](const boost::system::error_code&) {
                               boost::system::error_code ignored;
                               self->_events.close(ignored);
                           });
    }

private:
    void wait() {
        _socket.async_wait(asio::posix::stream_descriptor::wait_read,
                           [self = shared_from_this()](const boost::system::error_code& error) {
                               if (error) return;
                               self->on_readable();
                           });
    }

    void flush() {
        while (!_backlog.empty()) {
            const ssize_t sent = ::send(_events.native_handle(), &_backlog.front(), sizeof(cm_protocol::event),
                                        MSG_DONTWAIT | MSG_NOSIGNAL);
            if (sent == static_cast<ssize_t>(sizeof(cm_protocol::event))) {
                _backlog.pop_front();
                continue;
            }
            if (sent < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
                if (!_writing) {
                    _writing = true;
                    _events.async_wait(asio::posix::stream_descriptor::wait_write,
                                       [self = shared_from_this()](const boost::system::error_code& error) {
                                           self->_writing = false;
                                           if (!error) self->flush();
                                       });
                }
                return;
            }
            _backlog.clear(); // the program closed its channel
            return;
        }
    }

    void on_readable() {
        cm_protocol::request request{};
        const received_datagram got =
            receive_with_descriptors(_socket.native_handle(), &request, sizeof request, MSG_DONTWAIT);
        if (got.length < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return wait();
        int passed = got.fd_count > 0 ? got.fds[0] : -1;
        for (std::size_t i = 1; i < got.fd_count; ++i) ::close(got.fds[i]);
        const sim_time now = _server.now();
        if (got.length <= 0) {
            if (passed >= 0) ::close(passed);
            close(now);
            return;
        }
        cm_protocol::reply reply;
        std::memset(&reply, 0, sizeof reply);
        reply.magic_number = cm_protocol::magic;
        if (got.length != static_cast<ssize_t>(sizeof request) || got.truncated ||
            request.magic_number != cm_protocol::magic) {
            reply.status = EINVAL;
            if (passed >= 0) ::close(passed);
        } else if (request.code == cm_protocol::op::hello) {
            if (_greeted || passed < 0) {
                reply.status = EINVAL;
                if (passed >= 0) ::close(passed);
            } else {
                int type = 0;
                socklen_t length = sizeof type;
                if (::getsockopt(passed, SOL_SOCKET, SO_TYPE, &type, &length) != 0 || type != SOCK_SEQPACKET) {
                    reply.status = EINVAL;
                    ::close(passed);
                } else {
                    _events.assign(passed);
                    _greeted = true;
                    reply.channel_token =
                        _server._cm->open_session(_id, {_host, static_cast<std::uint32_t>(_peer.uid), _peer.pid});
                }
            }
        } else {
            if (passed >= 0) ::close(passed);
            if (!_greeted)
                reply.status = EINVAL;
            else
                reply = _server._cm->handle(_id, request, now);
        }
        // A program that does not wait for its reply loses it; the daemon never blocks on it.
        [[maybe_unused]] const ssize_t sent =
            ::send(_socket.native_handle(), &reply, sizeof reply, MSG_DONTWAIT | MSG_NOSIGNAL);
        // What the request set going (an address resolved now, a MAD to send) runs at once.
        _server._cm->advance(now);
        _server.rearm_timer();
        wait();
    }

    cm_server& _server;
    asio::posix::stream_descriptor _socket, _events;
    std::uint64_t _id;
    peer _peer;
    std::string _host;
    bool _greeted = false, _writing = false, _closed = false;
    std::deque<cm_protocol::event> _backlog;
};

sim_time cm_server::now() const { return _fabric.driver().now(); }

namespace {
// Tests shorten the CM's timeouts through the daemon's environment; the defaults are the kernel's.
cm::cm_timing timing_from_environment() {
    cm::cm_timing t;
    if (const char* v = std::getenv("ROCEFAB_CM_RESPONSE_TIMEOUT"))
        t.cm_response_timeout = static_cast<std::uint8_t>(std::atoi(v));
    if (const char* v = std::getenv("ROCEFAB_CM_PACKET_LIFE_TIME"))
        t.packet_life_time = static_cast<std::uint8_t>(std::atoi(v));
    if (const char* v = std::getenv("ROCEFAB_CM_MAX_RETRIES"))
        t.max_cm_retries = static_cast<std::uint8_t>(std::atoi(v));
    return t;
}
} // namespace

cm_server::cm_server(asio::io_context& io, fabric& fab, const std::string& runtime_dir, const access_policy& policy)
    : _io(io), _fabric(fab), _policy(policy), _directory(runtime_dir + "/" + cm_directory_name), _timer(io) {
    std::vector<cm::local_port> ports;
    for (const auto& host : _fabric.topology().hosts) {
        for (nic::nic_node* nic : _fabric.nics_of(host.name)) {
            cm::local_port p;
            p.host = host.name;
            p.device = nic->spec().name;
            p.gid = nic->gid(1);
            p.ipv4 = p.gid.is_v4_mapped() ? p.gid.v4() : 0;
            for (const auto& n : host.nics)
                if (n.name == p.device) p.prefix_length = static_cast<std::uint8_t>(n.address.length);
            p.node_guid = nic->node_guid();
            const ibv_port_attr port = nic->port_attributes();
            p.active_mtu = static_cast<std::uint8_t>(port.active_mtu);
            p.max_rd_atomic = static_cast<std::uint8_t>(std::min(255, nic->device_attributes().max_qp_rd_atom));
            ports.push_back(p);
            _nics.push_back(nic);
        }
    }
    cm::connection_manager::sinks out;
    out.send_mad = [this](std::size_t port, const wire::ipv6_address& destination, std::uint32_t qpn,
                          const std::array<std::uint8_t, cm::mad_size>& mad) {
        nic::nic_node* nic = _nics[port];
        realtime_driver* driver = &_fabric.driver();
        driver->mail().post([nic, driver, destination, qpn, mad] {
            nic->send_mad(destination, qpn, nic::gsi_qkey, mad, driver->now());
        });
    };
    out.deliver = [this](std::uint64_t s, const cm_protocol::event& e) {
        auto it = _sessions.find(s);
        if (it == _sessions.end()) return;
        if (auto sp = it->second.lock()) sp->deliver(e);
    };
    _cm = std::make_unique<cm::connection_manager>(std::move(ports), std::move(out), timing_from_environment(),
                                                   static_cast<std::uint64_t>(::getpid()) ^
                                                       static_cast<std::uint64_t>(now()));

    std::vector<std::string> hosts;
    for (const auto& host : _fabric.topology().hosts) hosts.push_back(host.name);
    _sockets = std::make_unique<host_sockets>(
        io, _directory, hosts, _policy, "rdma_cm", log::control(),
        [this](int fd, const peer& who, const std::string& host) { accepted(fd, who, host); });
    for (std::size_t i = 0; i < _nics.size(); ++i) {
        _gsi.push_back(std::make_unique<gsi_watch>(io, i, _nics[i]));
        watch_gsi(*_gsi.back());
    }
    log::control().info("rdma_cm: {} NICs, programs connect at {}/HOST.sock", _nics.size(), _directory);
}

namespace {
// As iproute2's rdma tool names them.
const char* port_space_name(std::uint16_t ps) {
    switch (ps) {
    case RDMA_PS_TCP: return "TCP";
    case RDMA_PS_UDP: return "UDP";
    case RDMA_PS_IPOIB: return "IPOIB";
    case RDMA_PS_IB: return "IB";
    }
    return "?";
}

std::string ipv4_text(std::uint32_t host_order) {
    const in_addr a{htonl(host_order)};
    char text[INET_ADDRSTRLEN] = {};
    ::inet_ntop(AF_INET, &a, text, sizeof text);
    return text;
}
} // namespace

nlohmann::json cm_server::counters() const {
    nlohmann::json out;
    const cm::cm_counters& c = _cm->counters();
#define ROCEFAB_CM_COUNTER_JSON(name) out[#name] = c.name;
    ROCEFAB_CM_COUNTERS(ROCEFAB_CM_COUNTER_JSON)
#undef ROCEFAB_CM_COUNTER_JSON
    out["ids"] = _cm->ids();
    out["channels"] = _sessions.size();
    out["cm_ids"] = nlohmann::json::array();
    for (const auto& id : _cm->list_ids())
        out["cm_ids"].push_back({{"host", id.host},
                                 {"device", id.device},
                                 {"uid", id.uid},
                                 {"pid", id.pid},
                                 {"state", cm::state_name(id.state)},
                                 {"ps", port_space_name(id.port_space)},
                                 {"src_addr", ipv4_text(id.source_ip)},
                                 {"src_port", id.source_port},
                                 {"dst_addr", ipv4_text(id.destination_ip)},
                                 {"dst_port", id.destination_port},
                                 {"qpn", id.qpn}});
    return out;
}

cm_server::~cm_server() = default;

void cm_server::accepted(int fd, const peer& who, const std::string& host) {
    // Bounds as the attach server's: in all, and per user so that one cannot starve the others.
    std::size_t of_user = 0;
    for (const auto& [n, w] : _sessions)
        if (auto sp = w.lock(); sp && sp->uid() == who.uid) ++of_user;
    if (_sessions.size() >= max_channels || of_user >= max_channels_per_user) {
        _refusals.log(log::control(), spdlog::level::warn,
                      "rdma_cm: {} refused on {}: {} channels open ({} of this user); the limits are {} and {}",
                      who.describe(), host, _sessions.size(), of_user, max_channels, max_channels_per_user);
        ::close(fd);
        return;
    }
    const std::uint64_t id = _next_session++;
    auto s = std::make_shared<session>(*this, fd, id, who, host);
    _sessions[id] = s;
    s->start();
}

void cm_server::watch_gsi(gsi_watch& w) {
    w.fd.async_wait(asio::posix::stream_descriptor::wait_read, [this, &w](const boost::system::error_code& error) {
        if (error) return;
        w.nic->gsi().clear_notification();
        nic::gsi_datagram d;
        const sim_time t = now();
        while (w.nic->gsi().pop(d)) _cm->receive(w.port, d, t);
        _cm->advance(t);
        rearm_timer();
        watch_gsi(w);
    });
}

void cm_server::rearm_timer() {
    const sim_time next = _cm->next_deadline();
    if (next == never) {
        _timer.cancel();
        return;
    }
    const sim_time wait = std::max<sim_time>(0, next - now());
    _timer.expires_after(std::chrono::nanoseconds(wait));
    _timer.async_wait([this](const boost::system::error_code& error) {
        if (error) return;
        _cm->advance(now());
        rearm_timer();
    });
}

} // namespace rocefab::control
