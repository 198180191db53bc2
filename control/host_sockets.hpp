// The doors of a server that programs reach per emulated host: one listening SOCK_SEQPACKET
// socket a host (DIRECTORY/HOST.sock), as the attach server and the rdma_cm server keep them.
//
// Each socket gets the access policy's owner and mode; each connection is checked against the
// policy with the kernel's credentials of the peer, and handed to the server, or refused with
// a throttled log line. Accepting never spins: a connection that cannot be accepted for want
// of descriptors or memory waits in the backlog while every socket pauses for a moment.
#pragma once

#include "control/access.hpp"
#include "control/throttled_log.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace rocefab::control {

class host_sockets {
public:
    // A connection the policy lets in; the handler owns `fd` from then on.
    using on_connection = std::function<void(int fd, const peer& who, const std::string& host)>;
    // A connection the policy refuses, before the socket closes it: a chance to say why.
    using on_refused = std::function<void(int fd)>;

    // Creates DIRECTORY (mode 0755: who may connect is each socket's own mode) and a listening
    // socket DIRECTORY/HOST.sock for each host. `what` names the door in log lines ("attach",
    // "rdma_cm"). Throws std::runtime_error when a socket cannot be made.
    host_sockets(boost::asio::io_context& io, const std::string& directory, const std::vector<std::string>& hosts,
                 const access_policy& policy, std::string what, spdlog::logger& log, on_connection accepted,
                 on_refused refused = {});
    ~host_sockets(); // unlinks the sockets

    host_sockets(const host_sockets&) = delete;
    host_sockets& operator=(const host_sockets&) = delete;

    // "at DIR/HOST.sock", for the server's start-up line.
    const std::string& directory() const { return _directory; }

private:
    struct door;
    void wait(door& d);
    void accept_ready(door& d);

    const access_policy& _policy;
    std::string _directory, _what;
    spdlog::logger& _log;
    on_connection _accepted;
    on_refused _refused;
    std::vector<std::unique_ptr<door>> _doors;
    boost::asio::steady_timer _pause; // while descriptors are short
    bool _paused = false;
    throttled_log _refusals, _shortage;
};

} // namespace rocefab::control
