// The library's end of the attach protocol: a SOCK_SEQPACKET connection to the daemon that
// carries one request and one reply at a time (serialised by a mutex, so verbs may be called
// from several threads), with a file descriptor riding on replies that create shared memory.
#pragma once

#include "nic_emu/attach_protocol.hpp"

#include <mutex>
#include <sys/types.h>

namespace rocefab::verbs {

class command_channel {
public:
    command_channel() = default;
    ~command_channel();
    command_channel(const command_channel&) = delete;
    command_channel& operator=(const command_channel&) = delete;

    // Connects to the socket named by ROCEFAB_SOCKET and says hello for ROCEFAB_HOST.
    // Returns 0 or an errno value (ENODEV when no fabric is named or reachable).
    int connect_and_hello(attach::reply& hello_reply);

    // Sends `request`, waits for its reply. Returns 0 when the exchange worked (the verb's own
    // result is in reply.status) or an errno value when the daemon is gone. `received_fd`,
    // when given, gets the descriptor the reply carried, or -1.
    int call(const attach::request& request, attach::reply& reply, int* received_fd = nullptr);

    int fd() const { return _fd; }
    pid_t daemon_pid() const { return _daemon_pid; }

private:
    int _fd = -1;
    pid_t _daemon_pid = 0;
    std::mutex _lock;
};

} // namespace rocefab::verbs
