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
    if (!path || !*path || !host || !*host) return ENODEV;
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    if (std::strlen(path) >= sizeof address.sun_path) return ENAMETOOLONG;
    std::strcpy(address.sun_path, path);
    _fd = ::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    if (_fd < 0) return errno;
    if (::connect(_fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
        ::close(_fd);
        _fd = -1;
        return ENODEV;
    }
    ucred credentials{};
    socklen_t length = sizeof credentials;
    if (::getsockopt(_fd, SOL_SOCKET, SO_PEERCRED, &credentials, &length) == 0) _daemon_pid = credentials.pid;

    attach::request hello{};
    hello.code = attach::op::hello;
    hello.hello.version = attach::protocol_version;
    std::strncpy(hello.hello.host, host, sizeof hello.hello.host - 1);
    if (int error = call(hello, hello_reply)) return error;
    return hello_reply.status;
}

int command_channel::call(const attach::request& request, attach::reply& reply, int* received_fd) {
    std::lock_guard guard(_lock);
    if (received_fd) *received_fd = -1;
    if (_fd < 0) return ENODEV;
    ssize_t sent;
    do {
        sent = ::send(_fd, &request, sizeof request, MSG_NOSIGNAL);
    } while (sent < 0 && errno == EINTR);
    if (sent != static_cast<ssize_t>(sizeof request)) return EIO;

    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))];
    iovec io{&reply, sizeof reply};
    msghdr message{};
    message.msg_iov = &io;
    message.msg_iovlen = 1;
    message.msg_control = control;
    message.msg_controllen = sizeof control;
    ssize_t got;
    do {
        got = ::recvmsg(_fd, &message, MSG_CMSG_CLOEXEC);
    } while (got < 0 && errno == EINTR);
    if (got != static_cast<ssize_t>(sizeof reply)) return EIO;
    for (cmsghdr* c = CMSG_FIRSTHDR(&message); c; c = CMSG_NXTHDR(&message, c)) {
        if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
            int fd;
            std::memcpy(&fd, CMSG_DATA(c), sizeof fd);
            if (received_fd)
                *received_fd = fd;
            else
                ::close(fd);
        }
    }
    return 0;
}

} // namespace rocefab::verbs
