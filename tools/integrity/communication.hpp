// rdma-integrity's out-of-band link to its peer, as ibv_rc_pingpong and perftest keep one: a TCP
// connection made through tools/tcp_rendezvous.hpp. At set-up it carries the two hellos; during
// the run one byte, 'D' when a side is done, 'E' when it failed, so that the first error on
// either side ends the run on both.
#pragma once

#include "wire.hpp"

#include <chrono>
#include <cstddef>
#include <cstdint>

namespace rocefab::tools::integrity {

class peer_link {
public:
    // `role` ("server" or "client") names this side in its error messages.
    explicit peer_link(const char* role) : _role(role) {}
    peer_link(const peer_link&) = delete;
    peer_link& operator=(const peer_link&) = delete;

    void accept_client(std::uint16_t port);
    void connect_to_server(const char* host, std::uint16_t port);

    // Set-up: the whole buffer, or the run fails.
    void send_all(const void* data, std::size_t n) const;
    void receive_all(void* data, std::size_t n) const;

    // During the run: true when the peer failed or vanished. A 'D' (the peer finished first and
    // waits in the final barrier) is not a failure; peer_done() says it came.
    bool peer_failed();
    bool peer_done() const { return _peer_done; }
    // Tells the peer this side is done and waits for it to say the same.
    void final_barrier() const;

    const char* role() const { return _role; }
    int fd() const { return _fd; } // -1 before the rendezvous
private:
    const char* _role;
    int _fd = -1;
    bool _peer_done = false; // the peer sent 'D' and waits in the final barrier
};

// Failure: the first error ends the run. Prints "rdma-integrity: ROLE: error: ...", tells the peer
// (once connected) so that it stops too, and exits 1.
[[noreturn]] void fail(const peer_link& peer, const char* format, ...) __attribute__((format(printf, 2, 3)));

// The hellos, over the link; a peer that is not rdma-integrity fails the run.
void send_hello(const peer_link& peer, const client_hello& h);
void send_hello(const peer_link& peer, const server_hello& h);
client_hello receive_client_hello(const peer_link& peer);
server_hello receive_server_hello(const peer_link& peer);

// Stall watchdog: a run that stops making progress reports where it stood instead of hanging.
struct watchdog {
    std::chrono::steady_clock::time_point last = std::chrono::steady_clock::now();
    unsigned idle = 0;
    void progress() {
        last = std::chrono::steady_clock::now();
        idle = 0;
    }
    // Call when an iteration did nothing; returns true when it is time to give up. Looks at the
    // peer every 4096 idle polls (every time when sleeping on events): a peer that failed ends
    // this side too.
    bool idle_and_expired(unsigned seconds, bool events, peer_link& peer);
};

} // namespace rocefab::tools::integrity
