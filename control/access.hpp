// Who may use a running fabric, and who may change it (docs/security.md).
//
// The fabric's owner is the user who started it (with sudo, the user who ran sudo). The owner
// and root may do anything; members of the topology's `daemon.attach-group` may run programs on
// it and read its counters (`rocefab run`, `show`); nobody else may connect at all. Changing the
// fabric (`down`, `link`, `capture`) is the owner's and root's.
//
// Two locks on each door: the sockets' file permissions keep others from connecting, and the
// daemon checks every connection's credentials (SO_PEERCRED, SO_PEERGROUPS) again itself.
#pragma once

#include "control/config/topology.hpp"

#include <optional>
#include <string>
#include <sys/types.h>
#include <vector>

namespace rocefab::control {

// The process at the other end of a Unix socket, as the kernel saw it when it connected.
struct peer {
    uid_t uid = static_cast<uid_t>(-1);
    gid_t gid = static_cast<gid_t>(-1);
    pid_t pid = 0;
    std::vector<gid_t> groups; // supplementary groups

    // "uid 1000 (alice), pid 4242", for the log.
    std::string describe() const;
};

// The credentials of whoever connected to `socket_fd`; nullopt if the kernel would not say.
std::optional<peer> peer_of(int socket_fd);

class access_policy {
public:
    access_policy(uid_t owner, std::optional<gid_t> group) : _owner(owner), _group(group) {}
    // The owner is this process's user or, for a daemon root started through sudo, SUDO_UID's.
    // Throws std::runtime_error when the group is gone since the topology was loaded.
    static access_policy for_daemon(const config::daemon_settings& settings);

    bool may_use(const peer& p) const;    // attach, run, show, topology
    bool may_change(const peer& p) const; // down, link, capture

    uid_t owner() const { return _owner; }
    // "the owner (uid 1000, alice) and root, and members of group rdma", for messages.
    std::string describe() const;

    // Gives the socket file at `path` to the owner (and the group), readable and writable by
    // them alone. Throws std::runtime_error.
    void restrict_socket(const std::string& path) const;

private:
    uid_t _owner;
    std::optional<gid_t> _group;
};

// The name of a user for messages: "alice", or the number when it has none.
std::string user_name(uid_t uid);

// Creates (or truncates) `path` for writing with the rights of `who`, not the daemon's: a file
// the daemon writes for a client (a capture) is one the client could have written itself. When
// `who` is the daemon's own user it opens the file itself; otherwise a child process takes on
// their uid, gid and groups, opens it and hands the descriptor back. Returns the descriptor, or
// -1 with `error` saying why.
int create_file_as(const peer& who, const std::string& path, std::string& error);

} // namespace rocefab::control
