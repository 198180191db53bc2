// One datagram over a Unix socket with file descriptors riding along (SCM_RIGHTS): how the
// verbs library and the daemon pass rings, doorbells and the program's memory handles
// (attach_protocol.hpp), and how the daemon gets back a file a helper opened with a client's
// rights. Header-only: the verbs library links none of the daemon's code.
#pragma once

#include <cerrno>
#include <cstddef>
#include <cstring>
#include <span>
#include <sys/socket.h>
#include <unistd.h>

namespace rocefab {

inline constexpr std::size_t max_passed_descriptors = 4;

// Sends `length` bytes and `fds` (at most max_passed_descriptors) as one datagram. True when
// all of it went.
inline bool send_with_descriptors(int socket, const void* data, std::size_t length, std::span<const int> fds,
                                  int flags = MSG_NOSIGNAL) {
    iovec io{const_cast<void*>(data), length};
    msghdr message{};
    message.msg_iov = &io;
    message.msg_iovlen = 1;
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * max_passed_descriptors)];
    if (!fds.empty()) {
        if (fds.size() > max_passed_descriptors) return false;
        std::memset(control, 0, sizeof control);
        message.msg_control = control;
        message.msg_controllen = CMSG_SPACE(sizeof(int) * fds.size());
        cmsghdr* c = CMSG_FIRSTHDR(&message);
        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN(sizeof(int) * fds.size());
        std::memcpy(CMSG_DATA(c), fds.data(), sizeof(int) * fds.size());
    }
    ssize_t sent;
    do {
        sent = ::sendmsg(socket, &message, flags);
    } while (sent < 0 && errno == EINTR);
    return sent == static_cast<ssize_t>(length);
}

// What receive_with_descriptors got: the datagram's length (or -1 with errno, 0 at end of
// file), whether it was cut short, and the descriptors, which are the caller's to keep or close.
struct received_datagram {
    ssize_t length = 0;
    bool truncated = false;
    int fds[max_passed_descriptors] = {-1, -1, -1, -1};
    std::size_t fd_count = 0;
};

// Receives one datagram into `data` (at most `length` bytes). Descriptors beyond
// max_passed_descriptors are closed at once: a peer cannot make this process hold more.
inline received_datagram receive_with_descriptors(int socket, void* data, std::size_t length, int flags = 0) {
    received_datagram out;
    iovec io{data, length};
    msghdr message{};
    message.msg_iov = &io;
    message.msg_iovlen = 1;
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * max_passed_descriptors)];
    message.msg_control = control;
    message.msg_controllen = sizeof control;
    do {
        out.length = ::recvmsg(socket, &message, flags | MSG_CMSG_CLOEXEC);
    } while (out.length < 0 && errno == EINTR);
    if (out.length < 0) return out;
    out.truncated = (message.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) != 0;
    for (cmsghdr* c = CMSG_FIRSTHDR(&message); c; c = CMSG_NXTHDR(&message, c)) {
        if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
        const std::size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        for (std::size_t i = 0; i < count; ++i) {
            int fd;
            std::memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof fd);
            if (out.fd_count < max_passed_descriptors)
                out.fds[out.fd_count++] = fd;
            else
                ::close(fd);
        }
    }
    return out;
}

} // namespace rocefab
