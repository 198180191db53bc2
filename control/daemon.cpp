#include "control/daemon.hpp"

#include "control/access.hpp"
#include "control/attach_server.hpp"
#include "control/cm/cm_server.hpp"
#include "control/throttled_log.hpp"
#include "control/config/units.hpp"
#include "control/fabric.hpp"
#include "control/host_network.hpp"
#include "dataplane/log.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/asio/read_until.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/streambuf.hpp>
#include <boost/asio/write.hpp>

#include <spdlog/sinks/stdout_sinks.h>

#include <csignal>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

namespace rocefab::control {

namespace asio = boost::asio;
using stream = asio::local::stream_protocol;
using nlohmann::json;

namespace {

void tell(int fd, const std::string& line) {
    if (fd < 0) return;
    const std::string text = line + "\n";
    [[maybe_unused]] auto n = ::write(fd, text.data(), text.size());
    ::close(fd);
}

// {"op":"link","endpoint":"h1/rfab0","faults":{"loss":0.01 or "1%", ..., "reorder_delay":"10us" or ns},
// "up":true|false}: both optional; with neither, the reply only reports the cable's state.
json link_request(fabric& fab, const json& request) {
    const std::string endpoint = request.value("endpoint", "");
    std::optional<fabric::fault_update> faults;
    if (const auto f = request.find("faults"); f != request.end() && !f->is_null()) {
        if (!f->is_object()) return {{"ok", false}, {"error", "faults: expected an object"}};
        faults.emplace();
        const std::pair<const char*, std::optional<double>*> probabilities[] = {{"loss", &faults->loss},
                                                                                {"corruption", &faults->corruption},
                                                                                {"duplication", &faults->duplication},
                                                                                {"reordering", &faults->reordering}};
        for (const auto& [key, value] : f->items()) {
            std::optional<double>* into = nullptr;
            for (const auto& [name, slot] : probabilities)
                if (key == name) into = slot;
            if (into) {
                std::optional<double> p;
                if (value.is_number()) p = value.get<double>();
                if (value.is_string()) p = config::parse_probability(value.get<std::string>());
                if (!p || *p < 0.0 || *p > 1.0)
                    return {{"ok", false},
                            {"error", "faults." + key +
                                          ": expected a probability from 0 to 1, as a fraction (0.01) "
                                          "or a percentage (\"1%\"); got " +
                                          value.dump()}};
                *into = *p;
            } else if (key == "reorder_delay") {
                std::optional<sim_time> d;
                if (value.is_number_unsigned()) d = value.get<sim_time>();
                if (value.is_string()) d = config::parse_duration(value.get<std::string>());
                if (!d || *d > config::max_reorder_delay)
                    return {{"ok", false},
                            {"error", "faults.reorder_delay: expected 0ns to 100ms (\"10us\", or nanoseconds); got " +
                                          value.dump()}};
                faults->reorder_delay = *d;
            } else {
                return {{"ok", false},
                        {"error", "faults: unknown key '" + key +
                                      "' (loss, corruption, duplication, reordering, reorder_delay)"}};
            }
        }
    }
    std::optional<bool> up;
    if (const auto u = request.find("up"); u != request.end() && !u->is_null()) {
        if (!u->is_boolean()) return {{"ok", false}, {"error", "up: expected true or false"}};
        up = u->get<bool>();
    }
    json state;
    const std::string error = fab.set_link(endpoint, faults, up, &state);
    if (!error.empty()) return {{"ok", false}, {"error", error}};
    state["ok"] = true;
    return state;
}

class control_server {
public:
    control_server(asio::io_context& io, fabric& fab, const host_network& network, const std::string& path,
                   const access_policy& policy, const cm_server* rdma_cm = nullptr)
        : _io(io), _fabric(fab), _network(network), _policy(policy), _rdma_cm(rdma_cm), _acceptor(io), _pause(io) {
        ::unlink(path.c_str());
        _acceptor.open(stream());
        _acceptor.bind(stream::endpoint(path));
        _policy.restrict_socket(path);
        _acceptor.listen();
        accept_next();
    }

private:
    // Requests are one line; a client gets this long to send its line, and this much room.
    static constexpr auto request_deadline = std::chrono::seconds(10);
    static constexpr std::size_t max_request_bytes = 64 * 1024;
    static constexpr std::size_t max_connections = 64;

    struct connection : std::enable_shared_from_this<connection> {
        connection(stream::socket s, peer p, control_server& server)
            : socket(std::move(s)), who(std::move(p)), input(max_request_bytes), deadline(socket.get_executor()),
              server(server) {
            ++server._connections;
        }
        ~connection() { --server._connections; }
        stream::socket socket;
        peer who;
        asio::streambuf input;
        std::string output;
        asio::steady_timer deadline;
        control_server& server;
    };

    void accept_next() {
        _acceptor.async_accept([this](const boost::system::error_code& error, stream::socket socket) {
            if (error == asio::error::operation_aborted) return;
            if (error) {
                // Out of descriptors, most likely: the connection waits in the backlog, and
                // accepting again at once would spin. Pause, then accept again: never stop.
                _shortage.log(log::control(), spdlog::level::warn,
                              "cannot accept a control connection: {}; pausing 100 ms", error.message());
                _pause.expires_after(std::chrono::milliseconds(100));
                _pause.async_wait([this](const boost::system::error_code& e) {
                    if (e != asio::error::operation_aborted) accept_next();
                });
                return;
            }
            serve(std::move(socket));
            accept_next();
        });
    }

    void serve(stream::socket socket) {
        const std::optional<peer> who = peer_of(socket.native_handle());
        if (!who || !_policy.may_use(*who)) {
            _refusals.log(log::control(), spdlog::level::warn, "control connection of {} refused: only {} may use it",
                          who ? who->describe() : std::string("a process the kernel does not name"),
                          _policy.describe());
            return; // the socket closes
        }
        if (_connections >= max_connections) {
            _refusals.log(log::control(), spdlog::level::warn, "control connection of {} refused: {} are open already",
                          who->describe(), _connections);
            return;
        }
        auto c = std::make_shared<connection>(std::move(socket), *who, *this);
        c->deadline.expires_after(request_deadline);
        c->deadline.async_wait([c](const boost::system::error_code& e) {
            if (e != asio::error::operation_aborted) c->socket.close();
        });
        asio::async_read_until(c->socket, c->input, '\n', [this, c](const boost::system::error_code& e, std::size_t) {
            c->deadline.cancel();
            if (!e) answer(c);
        });
    }

    // Reading the fabric is for everyone who may use it; changing it is the owner's and root's.
    static bool changes_the_fabric(const std::string& op) { return op == "capture" || op == "link" || op == "down"; }

    void answer(const std::shared_ptr<connection>& c) {
        std::istream in(&c->input);
        std::string line;
        std::getline(in, line);
        nlohmann::json reply;
        bool shut_down = false;
        try {
            const auto request = nlohmann::json::parse(line);
            const std::string op = request.value("op", "");
            if (changes_the_fabric(op) && !_policy.may_change(c->who)) {
                log::control().warn("{} may not {}: only {} may change the fabric", c->who.describe(), op,
                                    access_policy(_policy.owner(), std::nullopt).describe());
                reply = {{"ok", false},
                         {"error", op + " is for the fabric's owner (" + user_name(_policy.owner()) + ") and root"}};
            } else if (op == "ping") {
                reply = {{"ok", true}, {"fabric", _fabric.topology().name}, {"pid", ::getpid()}};
            } else if (op == "topology") {
                reply = {{"ok", true},
                         {"topology", nlohmann::json::parse(config::to_json(_fabric.topology()))},
                         {"host_network", _network.describe()},
                         {"dataplane_cpu", _fabric.dataplane_cpu()}};
            } else if (op == "show") {
                reply = {{"ok", true}, {"counters", _fabric.counters()}};
                if (_rdma_cm) reply["counters"]["cm"] = _rdma_cm->counters();
            } else if (op == "capture") {
                const std::string endpoint = request.value("endpoint", "");
                if (request.value("stop", false)) {
                    const auto frames = _fabric.stop_capture(endpoint);
                    reply = frames < 0 ? json{{"ok", false}, {"error", "no capture running on '" + endpoint + "'"}}
                                       : json{{"ok", true}, {"frames", frames}};
                } else {
                    // The file is created with the rights of whoever asked, never the daemon's.
                    const std::string file = request.value("file", "");
                    std::string error;
                    const int fd = create_file_as(c->who, file, error);
                    if (fd >= 0) error = _fabric.start_capture(endpoint, fd, file);
                    reply = error.empty() ? json{{"ok", true}} : json{{"ok", false}, {"error", error}};
                    if (error.empty()) log::control().info("{} captures {} to {}", c->who.describe(), endpoint, file);
                }
            } else if (op == "link") {
                reply = link_request(_fabric, request);
            } else if (op == "down") {
                log::control().info("{} takes the fabric down", c->who.describe());
                reply = {{"ok", true}};
                shut_down = true;
            } else {
                reply = {{"ok", false},
                         {"error", "unknown op '" + op + "' (ping, topology, show, capture, link, down)"}};
            }
        } catch (const std::exception& e) {
            reply = {{"ok", false}, {"error", std::string("bad request: ") + e.what()}};
        }
        c->output = reply.dump() + "\n";
        asio::async_write(c->socket, asio::buffer(c->output),
                          [this, c, shut_down](const boost::system::error_code&, std::size_t) {
                              if (shut_down) _io.stop();
                          });
    }

    asio::io_context& _io;
    fabric& _fabric;
    const host_network& _network;
    const access_policy& _policy;
    const cm_server* _rdma_cm; // its counters join the fabric's in `show`
    stream::acceptor _acceptor;
    asio::steady_timer _pause;
    std::size_t _connections = 0;
    throttled_log _refusals, _shortage;
};

} // namespace

namespace {

// The levels of the topology's `daemon.log`, then ROCEFAB_LOG's on top; "" or what is wrong.
std::string start_logging(const config::topology& topology) {
    log::levels levels;
    if (std::string problem = log::parse_levels(topology.daemon.log_levels, levels); !problem.empty())
        return "daemon.log: " + problem;
    if (const char* env = std::getenv("ROCEFAB_LOG"); env && *env)
        if (std::string problem = log::parse_levels(env, levels); !problem.empty()) return "ROCEFAB_LOG: " + problem;
    // The daemon's standard output is its log file (`rocefab up` points it at daemon.log).
    auto sink = std::make_shared<spdlog::sinks::stdout_sink_mt>();
    sink->set_pattern("%Y-%m-%d %H:%M:%S.%e %-5l %-7n %v");
    log::start(levels, sink);
    return {};
}

} // namespace

int run_daemon(config::topology topology, const std::string& runtime_dir, int ready_fd) {
    // The NIC writes completion and async events into pipes whose reader is a program that
    // may have died: that must cost the write, not the daemon.
    std::signal(SIGPIPE, SIG_IGN);
    // Every session holds a few descriptors (its socket, its event pipe, its doorbell, the
    // program's memory): the daemon takes all the kernel lets it have.
    rlimit files{};
    if (::getrlimit(RLIMIT_NOFILE, &files) == 0 && files.rlim_cur < files.rlim_max) {
        files.rlim_cur = files.rlim_max;
        ::setrlimit(RLIMIT_NOFILE, &files);
    }
    if (std::string problem = start_logging(topology); !problem.empty()) {
        tell(ready_fd, problem);
        return 1;
    }
    struct stop_logging {
        ~stop_logging() { log::stop(); }
    } logging_stops_last;
    std::unique_ptr<fabric> fab;
    try {
        fab = std::make_unique<fabric>(std::move(topology));
        fab->start();
    } catch (const std::exception& e) {
        log::daemon().critical("cannot start the fabric: {}", e.what());
        tell(ready_fd, std::string("cannot start the fabric: ") + e.what());
        return 1;
    }
    {
        // Everything that talks to the fabric lives in this scope and is gone, sessions and
        // their pending handlers included, before the data plane stops: a session's last act
        // is to free its context on the data plane.
        asio::io_context io;
        std::optional<access_policy> policy; // outlives the servers, which refer to it
        std::unique_ptr<attach_server> attach;
        std::unique_ptr<cm_server> rdma_cm;
        std::unique_ptr<control_server> control;
        // Held here, the hosts' namespaces end with this scope, or with the process.
        const host_network network(fab->topology());
        try {
            policy.emplace(access_policy::for_daemon(fab->topology().daemon));
            const session_limits limits{fab->topology().daemon.max_sessions,
                                        fab->topology().daemon.max_sessions_per_user};
            attach = std::make_unique<attach_server>(io, *fab, runtime_dir, *policy, limits);
            rdma_cm = std::make_unique<cm_server>(io, *fab, runtime_dir, *policy);
            control = std::make_unique<control_server>(io, *fab, network, runtime_dir + "/" + control_socket_name,
                                                       *policy, rdma_cm.get());
        } catch (const std::exception& e) {
            log::daemon().critical("cannot open the fabric's sockets: {}", e.what());
            tell(ready_fd, std::string("cannot open the fabric's sockets: ") + e.what());
            return 1;
        }
        asio::signal_set signals(io, SIGINT, SIGTERM);
        signals.async_wait([&](const boost::system::error_code&, int) { io.stop(); });
        {
            std::ofstream pid(runtime_dir + "/" + pid_file_name);
            pid << ::getpid() << "\n";
        }
        const config::topology& t = fab->topology();
        log::daemon().info("fabric {} up from {}: {} hosts, {} switches, {} links; pid {}", t.name, t.source_file,
                           t.hosts.size(), t.switches.size(), t.links.size(), ::getpid());
        tell(ready_fd, "ok");
        // A handler that throws is a fault of the daemon: it is logged, and the daemon serves on.
        for (;;) {
            try {
                io.run();
                break;
            } catch (const std::exception& e) {
                log::daemon().error("a request handler failed: {}; serving on", e.what());
            }
        }
        log::daemon().info("fabric {} going down", t.name);
        // Requests of programs may still be on the data plane; their answers are posted to this
        // io_context, which must outlive them: wait until the data plane has run them all.
        fab->driver().mail().call([] {});
    }
    fab->stop();
    fab.reset();
    ::unlink((runtime_dir + "/" + control_socket_name).c_str());
    ::unlink((runtime_dir + "/" + pid_file_name).c_str());
    return 0;
}

std::optional<nlohmann::json> control_request(const std::string& runtime_dir, const nlohmann::json& request,
                                              std::string* problem, std::chrono::milliseconds timeout) {
    auto fail = [&](std::string what) -> std::optional<nlohmann::json> {
        if (problem) *problem = std::move(what);
        return std::nullopt;
    };
    const std::string path = runtime_dir + "/" + control_socket_name;
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    if (path.size() >= sizeof address.sun_path) return fail("its socket path is too long: " + path);
    std::strcpy(address.sun_path, path.c_str());
    const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return fail(std::string("socket: ") + std::strerror(errno));
    struct closer {
        int fd;
        ~closer() { ::close(fd); }
    } closes{fd};
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    const std::string waited = std::to_string((timeout.count() + 999) / 1000) + " s";
    // A daemon whose backlog is full makes connect() wait: SO_SNDTIMEO bounds that, and the writes.
    const timeval tv{static_cast<time_t>(timeout.count() / 1000),
                     static_cast<suseconds_t>(timeout.count() % 1000 * 1000)};
    ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    if (::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
        if (errno == EAGAIN || errno == EINPROGRESS) return fail("it did not take the connection within " + waited);
        if (errno == EACCES || errno == EPERM) return fail("this user may not use it (" + path + ")");
        return fail("no daemon listens at " + path);
    }
    const std::string text = request.dump() + "\n";
    if (::send(fd, text.data(), text.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(text.size()))
        return fail("the request could not be sent: " + std::string(std::strerror(errno)));
    std::string reply;
    char buffer[65536];
    for (;;) {
        const auto left =
            std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
        pollfd p{fd, POLLIN, 0};
        if (left.count() <= 0 || ::poll(&p, 1, static_cast<int>(left.count())) == 0)
            return fail("no answer within " + waited + "; its log may say why: " + runtime_dir + "/" + log_file_name);
        const ssize_t n = ::read(fd, buffer, sizeof buffer);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        reply.append(buffer, static_cast<std::size_t>(n));
        if (!reply.empty() && reply.back() == '\n') break;
    }
    try {
        return nlohmann::json::parse(reply);
    } catch (const std::exception&) {
        return fail(reply.empty() ? "it closed the connection without an answer (this user may not use it?)"
                                  : "its answer is not JSON");
    }
}

} // namespace rocefab::control
