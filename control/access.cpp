#include "control/access.hpp"

#include "nic_emu/descriptor_passing.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <grp.h>
#include <pwd.h>
#include <stdexcept>
#include <sys/socket.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

namespace rocefab::control {

std::string user_name(uid_t uid) {
    if (const passwd* p = ::getpwuid(uid)) return p->pw_name;
    return std::to_string(uid);
}

std::string peer::describe() const {
    return "uid " + std::to_string(uid) + " (" + user_name(uid) + "), pid " + std::to_string(pid);
}

std::optional<peer> peer_of(int socket_fd) {
    ucred credentials{};
    socklen_t length = sizeof credentials;
    if (::getsockopt(socket_fd, SOL_SOCKET, SO_PEERCRED, &credentials, &length) != 0) return std::nullopt;
    peer p;
    p.uid = credentials.uid;
    p.gid = credentials.gid;
    p.pid = credentials.pid;
    p.groups.resize(64);
    length = static_cast<socklen_t>(p.groups.size() * sizeof(gid_t));
    if (::getsockopt(socket_fd, SOL_SOCKET, SO_PEERGROUPS, p.groups.data(), &length) != 0 && errno == ERANGE) {
        p.groups.resize(length / sizeof(gid_t));
        if (::getsockopt(socket_fd, SOL_SOCKET, SO_PEERGROUPS, p.groups.data(), &length) != 0) length = 0;
    }
    p.groups.resize(length / sizeof(gid_t));
    return p;
}

access_policy access_policy::for_daemon(const config::daemon_settings& settings) {
    uid_t owner = ::geteuid();
    if (owner == 0) {
        // `sudo rocefab up`: the fabric is the invoking user's. Only root can have set this.
        if (const char* sudo = std::getenv("SUDO_UID"); sudo && *sudo) {
            char* end = nullptr;
            const unsigned long uid = std::strtoul(sudo, &end, 10);
            if (end && *end == '\0' && uid < static_cast<unsigned long>(static_cast<uid_t>(-1)))
                owner = static_cast<uid_t>(uid);
        }
    }
    std::optional<gid_t> group;
    if (!settings.attach_group.empty()) {
        const struct group* g = ::getgrnam(settings.attach_group.c_str());
        if (!g) throw std::runtime_error("daemon.attach-group: no group '" + settings.attach_group + "'");
        group = g->gr_gid;
    }
    return access_policy(owner, group);
}

bool access_policy::may_change(const peer& p) const { return p.uid == 0 || p.uid == _owner; }

bool access_policy::may_use(const peer& p) const {
    if (may_change(p)) return true;
    if (!_group) return false;
    return p.gid == *_group || std::find(p.groups.begin(), p.groups.end(), *_group) != p.groups.end();
}

std::string access_policy::describe() const {
    std::string text = "the owner (uid " + std::to_string(_owner) + ", " + user_name(_owner) + ") and root";
    if (_group) {
        const struct group* g = ::getgrgid(*_group);
        text += ", and members of group " + (g ? std::string(g->gr_name) : std::to_string(*_group));
    }
    return text;
}

void access_policy::restrict_socket(const std::string& path) const {
    const gid_t group = _group ? *_group : static_cast<gid_t>(-1);
    if (::geteuid() == 0 && ::chown(path.c_str(), _owner, group) != 0)
        throw std::runtime_error("cannot give " + path + " to its owner: " + std::strerror(errno));
    if (::geteuid() != 0 && _group && ::chown(path.c_str(), static_cast<uid_t>(-1), group) != 0)
        throw std::runtime_error("cannot give " + path +
                                 " to the attach group (is the owner a member?): " + std::strerror(errno));
    if (::chmod(path.c_str(), _group ? 0660 : 0600) != 0)
        throw std::runtime_error("cannot restrict " + path + ": " + std::strerror(errno));
}

int create_file_as(const peer& who, const std::string& path, std::string& error) {
    // O_NONBLOCK: a FIFO without a reader fails at once instead of hanging the daemon.
    const int flags = O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOCTTY | O_NONBLOCK;
    int fd = -1;
    if (who.uid == ::geteuid() && who.gid == ::getegid()) {
        fd = ::open(path.c_str(), flags, 0644);
        if (fd < 0) error = "cannot create " + path + ": " + std::strerror(errno);
    } else {
        int channel[2];
        if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, channel) != 0) {
            error = std::string("socketpair: ") + std::strerror(errno);
            return -1;
        }
        const pid_t child = ::fork();
        if (child == 0) {
            // Only async-signal-safe calls from here: the daemon has other threads. The raw
            // system calls change this process's credentials and nothing else.
            ::close(channel[0]);
            int result = 0, opened = -1;
            if (::syscall(SYS_setgroups, who.groups.size(), who.groups.data()) != 0 ||
                ::syscall(SYS_setresgid, who.gid, who.gid, who.gid) != 0 ||
                ::syscall(SYS_setresuid, who.uid, who.uid, who.uid) != 0)
                result = errno;
            else if ((opened = ::open(path.c_str(), flags, 0644)) < 0)
                result = errno;
            send_with_descriptors(channel[1], &result, sizeof result,
                                  opened >= 0 ? std::span<const int>(&opened, 1) : std::span<const int>());
            ::_exit(0);
        }
        ::close(channel[1]);
        int result = child < 0 ? errno : EIO;
        if (child > 0) {
            const received_datagram got = receive_with_descriptors(channel[0], &result, sizeof result);
            if (got.length != sizeof result) result = EIO;
            if (got.fd_count) fd = got.fds[0];
            for (std::size_t i = 1; i < got.fd_count; ++i) ::close(got.fds[i]);
            ::waitpid(child, nullptr, 0);
        }
        ::close(channel[0]);
        if (fd < 0) error = "cannot create " + path + " as " + user_name(who.uid) + ": " + std::strerror(result);
    }
    if (fd >= 0) ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
    return fd;
}

} // namespace rocefab::control
