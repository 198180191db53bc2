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

#include <cstdint>
#include <string>

namespace rocefab::tools {

// The connected socket, or -1 with `error` saying what failed.
inline int tcp_rendezvous(const char* host, int port, bool server, int attempts, std::string& error) {
    if (server) {
        const int listener = socket(AF_INET, SOCK_STREAM, 0);
        int one = 1;
        setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_port = htons(static_cast<std::uint16_t>(port));
        // Any address, as ibv_rc_pingpong: clients on other hosts come in on the host's own.
        a.sin_addr.s_addr = htonl(INADDR_ANY);
        const char* failed = bind(listener, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ? "bind failed"
                             : listen(listener, 1) != 0                                     ? "listen failed"
                                                                                            : nullptr;
        const int fd = failed ? -1 : accept(listener, nullptr, nullptr);
        close(listener);
        if (fd < 0) error = failed ? failed : "accept failed";
        return fd;
    }
    addrinfo hints{}, *result = nullptr;
    hints.ai_family = AF_INET;
    hints.ai_socktype = SOCK_STREAM;
    if (getaddrinfo(host, std::to_string(port).c_str(), &hints, &result) != 0) {
        error = "cannot resolve host";
        return -1;
    }
    for (int attempt = 0; attempt < attempts; ++attempt) {
        const int fd = socket(AF_INET, SOCK_STREAM, 0);
        if (connect(fd, result->ai_addr, result->ai_addrlen) == 0) {
            freeaddrinfo(result);
            return fd;
        }
        close(fd);
        usleep(100'000);
    }
    freeaddrinfo(result);
    error = "cannot connect to the server";
    return -1;
}

} // namespace rocefab::tools
