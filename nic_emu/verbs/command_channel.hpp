// The library's end of the attach protocol: a SOCK_SEQPACKET connection to the daemon that
// carries one request and one reply at a time (serialised by a mutex, so verbs may be called
// from several threads), with file descriptors riding along (attach_protocol.hpp says which).
#pragma once

#include "nic_emu/attach_protocol.hpp"

#include <mutex>
#include <span>

namespace rocefab::verbs {

class command_channel {
public:
    command_channel() = default;
    ~command_channel();
    command_channel(const command_channel&) = delete;
    command_channel& operator=(const command_channel&) = delete;

    // Connects to the socket named by ROCEFAB_SOCKET (the host's) and says hello.
    // Returns 0 or an errno value: ENODEV when no fabric is named or reachable, EACCES when the
    // fabric's owner does not let this user attach, EAGAIN when the daemon has as many
    // sessions as it takes.
    int connect_and_hello(attach::reply& hello_reply);

    // Sends `request` with `send_fds`, waits for its reply. Returns 0 when the exchange worked
    // (the verb's own result is in reply.status) or an errno value when the daemon is gone.
    // `received_fds` gets the descriptors the reply carried, in order, the rest set to -1; any
    // beyond its size are closed.
    int call(const attach::request& request, attach::reply& reply, std::span<const int> send_fds = {},
             std::span<int> received_fds = {});
    int call(const attach::request& request, attach::reply& reply, int* received_fd) {
        return call(request, reply, {}, received_fd ? std::span<int>(received_fd, 1) : std::span<int>());
    }

    int fd() const { return _fd; }

private:
    int receive(attach::reply& reply, std::span<int> received_fds, int flags);

    int _fd = -1;
    std::mutex _lock;
};

} // namespace rocefab::verbs
