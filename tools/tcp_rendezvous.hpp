// How the project's test programs meet their peer before RDMA starts, as ibv_rc_pingpong does:
// the server listens on TCP `port` on all of its host's addresses and takes one connection; the
// client connects to `host` (the server host's fabric address, inside `rocefab run`), retrying
// while the server is not listening yet. Plain sockets, no verbs: the programs
// run on real hardware too.
#pragma once

#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <string>

namespace rocefab::tools {

// Which addresses the rendezvous uses. ipv4: the fabric's, and what the programs have always
// used. any: IPv6 as well, for a program that also meets its peer on hardware whose hosts talk
// IPv6: the server listens on IPv6 with IPv4-mapped addresses when the kernel has IPv6 (IPv4
// alone otherwise), and the client tries every address `host` resolves to.
enum class tcp_family { ipv4, any };

// The connected socket, or -1 with `error` saying what failed; when the server's bind, listen or
// accept failed, errno still says why.
inline int tcp_rendezvous(const char* host, int port, bool server, int attempts, std::string& error,
                          tcp_family family = tcp_family::ipv4) {
    if (server) {
        int one = 1;
        int listener = -1;
        int bound = -1;
        if (family == tcp_family::any) {
            listener = socket(AF_INET6, SOCK_STREAM, 0);
            if (listener >= 0) {
                int zero = 0;
                setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
                setsockopt(listener, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof zero);
                sockaddr_in6 a{};
                a.sin6_family = AF_INET6;
                a.sin6_port = htons(static_cast<std::uint16_t>(port));
                a.sin6_addr = in6addr_any;
                bound = bind(listener, reinterpret_cast<sockaddr*>(&a), sizeof a);
                if (bound != 0 && errno == EAFNOSUPPORT) { // a kernel without IPv6: IPv4 below
                    close(listener);
                    listener = -1;
                }
            }
        }
        if (listener < 0) {
            listener = socket(AF_INET, SOCK_STREAM, 0);
            setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
            sockaddr_in a{};
            a.sin_family = AF_INET;
            a.sin_port = htons(static_cast<std::uint16_t>(port));
            // Any address, as ibv_rc_pingpong: clients on other hosts come in on the host's own.
            a.sin_addr.s_addr = htonl(INADDR_ANY);
            bound = bind(listener, reinterpret_cast<sockaddr*>(&a), sizeof a);
        }
        const char* failed = bound != 0 ? "bind failed" : listen(listener, 1) != 0 ? "listen failed" : nullptr;
        const int fd = failed ? -1 : accept(listener, nullptr, nullptr);
        const int cause = errno; // close() may overwrite it
        close(listener);
        errno = cause;
        if (fd < 0) error = failed ? failed : "accept failed";
        return fd;
    }
    addrinfo hints{}, *result = nullptr;
    hints.ai_family = family == tcp_family::any ? AF_UNSPEC : AF_INET;
    hints.ai_socktype = SOCK_STREAM;
    if (getaddrinfo(host, std::to_string(port).c_str(), &hints, &result) != 0) {
        error = "cannot resolve host";
        return -1;
    }
    for (int attempt = 0; attempt < attempts; ++attempt) {
        // IPv4 tries the first address only, as it always has; any tries each in turn.
        for (const addrinfo* a = result; a; a = family == tcp_family::any ? a->ai_next : nullptr) {
            const int fd = socket(a->ai_family, SOCK_STREAM, 0);
            if (connect(fd, a->ai_addr, a->ai_addrlen) == 0) {
                freeaddrinfo(result);
                return fd;
            }
            close(fd);
        }
        usleep(100'000);
    }
    freeaddrinfo(result);
    error = "cannot connect to the server";
    return -1;
}

} // namespace rocefab::tools
