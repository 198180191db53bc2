// The attach server: where the verbs library of a program started with `rocefab run` reaches
// the NICs of its emulated host. Each host has a socket of its own (`attach/HOST.sock` in the
// fabric's runtime directory), so a program sees its host's NICs and no other. One
// SOCK_SEQPACKET connection is one device context; when it closes (the program called
// ibv_close_device, exited or died) everything the context held is freed, as the kernel does
// when a uverbs file is released.
//
// Who may connect is access_policy's to say; how many may at once is bounded in all and per
// user, and a connection over the bound is answered EAGAIN and closed, never queued. Running out
// of descriptors never stops the server: it pauses accepting and tries again.
#pragma once

#include "control/access.hpp"
#include "control/host_sockets.hpp"
#include "control/fabric.hpp"
#include "control/throttled_log.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/steady_timer.hpp>

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace rocefab::control {

struct session_limits {
    std::uint32_t total = 2048;
    std::uint32_t per_user = 512;
};

class attach_server {
public:
    // Listens on one socket per host under `runtime_dir` (replacing stale ones); throws
    // std::runtime_error on failure.
    attach_server(boost::asio::io_context& io, fabric& fab, const std::string& runtime_dir, access_policy policy,
                  session_limits limits);
    ~attach_server();

    std::size_t sessions() const { return _tally->total; }

private:
    class session;
    // Sessions open, in all and per user; shared with the sessions, which may outlive the
    // server by a moment while the daemon shuts down.
    struct tally {
        std::size_t total = 0;
        std::map<uid_t, std::uint32_t> by_user;
        // Shared by every session: a program may open, close and be refused thousands of times a second.
        throttled_log log, refusals;
        void opened(uid_t uid) {
            ++total;
            ++by_user[uid];
        }
        void closed(uid_t uid) {
            --total;
            if (--by_user[uid] == 0) by_user.erase(uid);
        }
        std::uint32_t of(uid_t uid) const {
            const auto it = by_user.find(uid);
            return it == by_user.end() ? 0 : it->second;
        }
    };
    // A connection the access policy let in: a session, unless the limits say no.
    void accepted(int fd, const peer& who, const std::string& host);
    // Refuses a connection the kernel accepted: a reply with `status`, then the close.
    static void refuse(int fd, int status);

    boost::asio::io_context& _io;
    fabric& _fabric;
    access_policy _policy;
    session_limits _limits;
    std::shared_ptr<tally> _tally = std::make_shared<tally>();
    throttled_log _refusals;
    std::unique_ptr<host_sockets> _sockets; // last: its handlers use the members above
};

} // namespace rocefab::control
