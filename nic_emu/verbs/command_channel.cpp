#include "nic_emu/verbs/command_channel.hpp"

#include "nic_emu/descriptor_passing.hpp"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

namespace rocefab::verbs {

command_channel::~command_channel() {
    if (_fd >= 0) ::close(_fd);
}

int command_channel::connect_and_hello(attach::reply& hello_reply) {
    const char* path = std::getenv(attach::socket_env);
    const char* host = std::getenv(attach::host_env);
    if (!path || !*path) return ENODEV;
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    if (std::strlen(path) >= sizeof address.sun_path) return ENAMETOOLONG;
    std::strcpy(address.sun_path, path);
    _fd = ::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    if (_fd < 0) return errno;
    if (::connect(_fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
        const int e = errno;
        ::close(_fd);
        _fd = -1;
        // The socket's permissions keep out users the fabric's owner did not let in.
        return e == EACCES || e == EPERM ? EACCES : ENODEV;
    }
    attach::request hello{};
    hello.code = attach::op::hello;
    hello.hello.version = attach::protocol_version;
    if (host) std::strncpy(hello.hello.host, host, sizeof hello.hello.host - 1);
    if (int error = call(hello, hello_reply)) return error;
    return hello_reply.status;
}

int command_channel::receive(attach::reply& reply, std::span<int> received_fds, int flags) {
    for (int& fd : received_fds) fd = -1;
    const received_datagram got = receive_with_descriptors(_fd, &reply, sizeof reply, flags);
    for (std::size_t i = 0; i < got.fd_count; ++i) {
        if (i < received_fds.size())
            received_fds[i] = got.fds[i];
        else
            ::close(got.fds[i]);
    }
    return got.length == static_cast<ssize_t>(sizeof reply) ? 0 : EIO;
}

int command_channel::call(const attach::request& request, attach::reply& reply, std::span<const int> send_fds,
                          std::span<int> received_fds) {
    std::lock_guard guard(_lock);
    for (int& fd : received_fds) fd = -1;
    if (_fd < 0) return ENODEV;
    if (!send_with_descriptors(_fd, &request, sizeof request, send_fds)) {
        // A daemon that refuses a connection (too many sessions) answers at once and hangs up:
        // its answer may be waiting although the request could not go.
        if (receive(reply, received_fds, MSG_DONTWAIT) == 0) return 0;
        return EIO;
    }
    return receive(reply, received_fds, 0);
}

} // namespace rocefab::verbs
