// rdma-integrity's out-of-band link: see communication.hpp.
#include "communication.hpp"

#include "tools/tcp_rendezvous.hpp"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace rocefab::tools::integrity {

void fail(const peer_link& peer, const char* format, ...) {
    std::fflush(stdout);
    std::fprintf(stderr, "rdma-integrity: %s: error: ", peer.role());
    va_list args;
    va_start(args, format);
    std::vfprintf(stderr, format, args);
    va_end(args);
    std::fputc('\n', stderr);
    if (peer.fd() >= 0) {
        const char e = 'E';
        [[maybe_unused]] auto ignored = ::send(peer.fd(), &e, 1, MSG_NOSIGNAL);
    }
    std::exit(1);
}

namespace {

// The client retries for about 20 s, 100 ms apart: the server may still be setting up, as a user
// starting both by hand would expect.
constexpr int connect_attempts = 200;

// One byte at a time each way after the hellos: nothing to gain from Nagle's delay.
void no_delay(int fd) {
    int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

} // namespace

void peer_link::accept_client(std::uint16_t port) {
    std::string error;
    const int fd = tcp_rendezvous(nullptr, port, true, 0, error, tcp_family::any);
    if (fd < 0) fail(*this, "TCP port %u: %s: %s", port, error.c_str(), std::strerror(errno));
    no_delay(fd);
    _fd = fd;
}

void peer_link::connect_to_server(const char* host, std::uint16_t port) {
    std::string error;
    const int fd = tcp_rendezvous(host, port, false, connect_attempts, error, tcp_family::any);
    if (fd < 0) fail(*this, "%s port %u: %s", host, port, error.c_str());
    no_delay(fd);
    _fd = fd;
}

void peer_link::send_all(const void* data, std::size_t n) const {
    auto p = static_cast<const char*>(data);
    while (n) {
        const ssize_t k = ::send(_fd, p, n, MSG_NOSIGNAL);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) fail(*this, "TCP send: %s", std::strerror(errno));
        p += k;
        n -= static_cast<std::size_t>(k);
    }
}

void peer_link::receive_all(void* data, std::size_t n) const {
    auto p = static_cast<char*>(data);
    while (n) {
        const ssize_t k = ::recv(_fd, p, n, 0);
        if (k < 0 && errno == EINTR) continue;
        if (k == 0) fail(*this, "TCP: the peer closed the connection during set-up");
        if (k < 0) fail(*this, "TCP receive: %s", std::strerror(errno));
        p += k;
        n -= static_cast<std::size_t>(k);
    }
}

bool peer_link::peer_failed() {
    if (_peer_done) return false;
    pollfd p{_fd, POLLIN, 0};
    if (::poll(&p, 1, 0) <= 0) return false;
    char c;
    const ssize_t k = ::recv(_fd, &c, 1, MSG_PEEK);
    if (k == 1 && c == 'D') { // done first; the byte is read by the final barrier
        _peer_done = true;
        return false;
    }
    return true;
}

void peer_link::final_barrier() const {
    const char d = 'D';
    send_all(&d, 1);
    char c = 0;
    const ssize_t k = ::recv(_fd, &c, 1, MSG_WAITALL);
    if (k != 1 || c != 'D') fail(*this, "the peer did not finish cleanly");
}

void send_hello(const peer_link& peer, const client_hello& h) {
    std::uint8_t out[client_hello::wire_size];
    encode(h, out);
    peer.send_all(out, sizeof out);
}

void send_hello(const peer_link& peer, const server_hello& h) {
    std::uint8_t out[server_hello::wire_size];
    encode(h, out);
    peer.send_all(out, sizeof out);
}

client_hello receive_client_hello(const peer_link& peer) {
    std::uint8_t in[client_hello::wire_size];
    peer.receive_all(in, sizeof in);
    const auto hello = decode_client_hello(in);
    if (!hello) fail(peer, "the peer is not an rdma-integrity client");
    return *hello;
}

server_hello receive_server_hello(const peer_link& peer) {
    std::uint8_t in[server_hello::wire_size];
    peer.receive_all(in, sizeof in);
    const auto hello = decode_server_hello(in);
    if (!hello) fail(peer, "the peer is not an rdma-integrity server");
    return *hello;
}

bool watchdog::idle_and_expired(unsigned seconds, bool events, peer_link& peer) {
    if (!events && (++idle & 4095)) return false;
    if (peer.peer_failed()) fail(peer, "the peer reported an error or closed the connection");
    return std::chrono::steady_clock::now() - last > std::chrono::seconds(seconds);
}

} // namespace rocefab::tools::integrity
