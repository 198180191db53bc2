#include "control/host_sockets.hpp"

#include <boost/asio/posix/stream_descriptor.hpp>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

namespace rocefab::control {

namespace asio = boost::asio;

struct host_sockets::door {
    std::string host, path;
    asio::posix::stream_descriptor socket;
    bool waiting = false; // an async_wait is outstanding
    door(asio::io_context& io, std::string h, std::string p) : host(std::move(h)), path(std::move(p)), socket(io) {}
};

namespace {
int listening_socket(const std::string& path) {
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    if (path.size() >= sizeof address.sun_path) throw std::runtime_error("socket path too long: " + path);
    std::strcpy(address.sun_path, path.c_str());
    const int fd = ::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) throw std::runtime_error(std::string("socket: ") + std::strerror(errno));
    ::unlink(path.c_str());
    if (::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
        const int e = errno;
        ::close(fd);
        throw std::runtime_error("cannot listen on " + path + ": " + std::strerror(e));
    }
    return fd;
}
} // namespace

host_sockets::host_sockets(asio::io_context& io, const std::string& directory, const std::vector<std::string>& hosts,
                           const access_policy& policy, std::string what, spdlog::logger& log, on_connection accepted,
                           on_refused refused)
    : _policy(policy), _directory(directory), _what(std::move(what)), _log(log), _accepted(std::move(accepted)),
      _refused(std::move(refused)), _pause(io) {
    std::error_code error;
    std::filesystem::create_directories(_directory, error);
    if (error) throw std::runtime_error("cannot create " + _directory + ": " + error.message());
    ::chmod(_directory.c_str(), 0755);
    for (const auto& host : hosts) {
        auto d = std::make_unique<door>(io, host, _directory + "/" + host + ".sock");
        d->socket.assign(listening_socket(d->path));
        _doors.push_back(std::move(d)); // from here on the destructor unlinks it
        _policy.restrict_socket(_doors.back()->path);
        if (::listen(_doors.back()->socket.native_handle(), 128) != 0)
            throw std::runtime_error("cannot listen on " + _doors.back()->path + ": " + std::strerror(errno));
    }
    for (auto& d : _doors) wait(*d);
}

host_sockets::~host_sockets() {
    for (auto& d : _doors) ::unlink(d->path.c_str());
}

void host_sockets::wait(door& d) {
    if (d.waiting) return;
    d.waiting = true;
    d.socket.async_wait(asio::posix::stream_descriptor::wait_read, [this, &d](const boost::system::error_code& error) {
        d.waiting = false;
        if (error == asio::error::operation_aborted) return;
        accept_ready(d);
    });
}

void host_sockets::accept_ready(door& d) {
    for (;;) {
        const int fd = ::accept4(d.socket.native_handle(), nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
        if (fd < 0) {
            if (errno == EAGAIN || errno == EWOULDBLOCK) break;
            if (errno == EINTR || errno == ECONNABORTED || errno == EPROTO) continue;
            // Out of descriptors or memory: the connection waits in the backlog. Accepting again
            // at once would spin, so every door pauses for a moment, then tries again.
            _shortage.log(_log, spdlog::level::warn, "{}: cannot accept a connection on {}: {}; pausing 100 ms", _what,
                          d.path, std::strerror(errno));
            if (!_paused) {
                _paused = true;
                _pause.expires_after(std::chrono::milliseconds(100));
                _pause.async_wait([this](const boost::system::error_code& e) {
                    if (e == asio::error::operation_aborted) return;
                    _paused = false;
                    for (auto& each : _doors) accept_ready(*each);
                });
            }
            return;
        }
        const std::optional<peer> who = peer_of(fd);
        if (!who || !_policy.may_use(*who)) {
            _refusals.log(_log, spdlog::level::warn, "{}: {} refused on {}: only {} may connect", _what,
                          who ? who->describe() : std::string("a process the kernel does not name"), d.host,
                          _policy.describe());
            if (_refused) _refused(fd);
            ::close(fd);
            continue;
        }
        _accepted(fd, *who, d.host);
    }
    if (!_paused) wait(d);
}

} // namespace rocefab::control
