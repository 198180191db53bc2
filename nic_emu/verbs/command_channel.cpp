#include "nic_emu/verbs/command_channel.hpp"

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
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * attach::max_fds)];
    iovec io{&reply, sizeof reply};
    msghdr message{};
    message.msg_iov = &io;
    message.msg_iovlen = 1;
    message.msg_control = control;
    message.msg_controllen = sizeof control;
    ssize_t got;
    do {
        got = ::recvmsg(_fd, &message, MSG_CMSG_CLOEXEC | flags);
    } while (got < 0 && errno == EINTR);
    std::size_t next = 0;
    for (cmsghdr* c = CMSG_FIRSTHDR(&message); c; c = CMSG_NXTHDR(&message, c)) {
        if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
        const std::size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        for (std::size_t i = 0; i < count; ++i) {
            int fd;
            std::memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof fd);
            if (next < received_fds.size())
                received_fds[next++] = fd;
            else
                ::close(fd);
        }
    }
    return got == static_cast<ssize_t>(sizeof reply) ? 0 : EIO;
}

int command_channel::call(const attach::request& request, attach::reply& reply, std::span<const int> send_fds,
                          std::span<int> received_fds) {
    std::lock_guard guard(_lock);
    for (int& fd : received_fds) fd = -1;
    if (_fd < 0) return ENODEV;
    iovec io{const_cast<attach::request*>(&request), sizeof request};
    msghdr message{};
    message.msg_iov = &io;
    message.msg_iovlen = 1;
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * attach::max_fds)];
    if (!send_fds.empty() && send_fds.size() <= attach::max_fds) {
        std::memset(control, 0, sizeof control);
        message.msg_control = control;
        message.msg_controllen = CMSG_SPACE(sizeof(int) * send_fds.size());
        cmsghdr* c = CMSG_FIRSTHDR(&message);
        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN(sizeof(int) * send_fds.size());
        std::memcpy(CMSG_DATA(c), send_fds.data(), sizeof(int) * send_fds.size());
    }
    ssize_t sent;
    do {
        sent = ::sendmsg(_fd, &message, MSG_NOSIGNAL);
    } while (sent < 0 && errno == EINTR);
    if (sent != static_cast<ssize_t>(sizeof request)) {
        // A daemon that refuses a connection (too many sessions) answers at once and hangs up:
        // its answer may be waiting although the request could not go.
        if (receive(reply, received_fds, MSG_DONTWAIT) == 0) return 0;
        return EIO;
    }
    return receive(reply, received_fds, 0);
}

} // namespace rocefab::verbs
