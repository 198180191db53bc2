#include "control/host_network.hpp"

#include "dataplane/log.hpp"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <linux/capability.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>
#include <vector>

namespace rocefab::control {

namespace {

// The iproute2 binary: rtnetlink by hand (veth peers in other namespaces, bridges, routes) would
// be several hundred lines that `ip -batch` already gets right.
std::string find_ip_command() {
    for (const char* candidate : {"/usr/sbin/ip", "/sbin/ip", "/usr/bin/ip", "/bin/ip"})
        if (::access(candidate, X_OK) == 0) return candidate;
    return {};
}

// `count` fresh network namespaces, as descriptors. unshare(CLONE_NEWNET) moves only the
// calling thread, so a thread that ends right after does it: the daemon's own threads stay in
// the machine's namespace.
std::string new_namespaces(std::size_t count, std::vector<int>& fds) {
    std::string problem;
    std::thread worker([&] {
        for (std::size_t i = 0; i < count; ++i) {
            if (::unshare(CLONE_NEWNET) != 0) {
                problem = std::string("cannot create a network namespace: ") + std::strerror(errno);
                return;
            }
            const int fd = ::open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
            if (fd < 0) {
                problem = std::string("cannot open a new network namespace: ") + std::strerror(errno);
                return;
            }
            fds.push_back(fd);
        }
    });
    worker.join();
    return problem;
}

// Without root: a user namespace of the daemon's own (its uid and gid mapped to themselves, so
// programs keep their identity inside) owning `count` network namespaces. unshare(CLONE_NEWUSER)
// refuses a multithreaded process, so a forked child makes them all and sends them back over a
// socket pair; the child only calls async-signal-safe functions. `fds` gets the user namespace,
// then the network namespaces.
std::string new_namespaces_in_user_namespace(std::size_t count, std::vector<int>& fds) {
    int pair[2];
    if (::socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, pair) != 0)
        return std::string("socketpair: ") + std::strerror(errno);
    const std::string uid_map = std::to_string(::geteuid()) + " " + std::to_string(::geteuid()) + " 1\n";
    const std::string gid_map = std::to_string(::getegid()) + " " + std::to_string(::getegid()) + " 1\n";
    const std::size_t total = count + 1;
    std::vector<int> made(total, -1);
    std::vector<char> control(CMSG_SPACE(sizeof(int) * total), 0);
    char status = 0;
    const pid_t child = ::fork();
    if (child == 0) {
        auto put = [](const char* path, const std::string& text) {
            const int fd = ::open(path, O_WRONLY | O_CLOEXEC);
            const bool ok = fd >= 0 && ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
            if (fd >= 0) ::close(fd);
            return ok;
        };
        char failed = 1;
        if (::unshare(CLONE_NEWUSER) == 0 && put("/proc/self/setgroups", "deny") &&
            put("/proc/self/uid_map", uid_map) && put("/proc/self/gid_map", gid_map)) {
            made[0] = ::open("/proc/self/ns/user", O_RDONLY | O_CLOEXEC);
            failed = made[0] < 0;
            for (std::size_t i = 1; !failed && i < total; ++i) {
                failed = ::unshare(CLONE_NEWNET) != 0;
                if (!failed) made[i] = ::open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
                failed |= made[i] < 0;
            }
        }
        iovec io{&failed, 1};
        msghdr message{};
        message.msg_iov = &io;
        message.msg_iovlen = 1;
        if (!failed) {
            message.msg_control = control.data();
            message.msg_controllen = control.size();
            cmsghdr* c = CMSG_FIRSTHDR(&message);
            c->cmsg_level = SOL_SOCKET;
            c->cmsg_type = SCM_RIGHTS;
            c->cmsg_len = CMSG_LEN(sizeof(int) * total);
            std::memcpy(CMSG_DATA(c), made.data(), sizeof(int) * total);
        }
        ::sendmsg(pair[1], &message, 0);
        ::_exit(0);
    }
    ::close(pair[1]);
    if (child < 0) {
        ::close(pair[0]);
        return std::string("fork: ") + std::strerror(errno);
    }
    iovec io{&status, 1};
    msghdr message{};
    message.msg_iov = &io;
    message.msg_iovlen = 1;
    message.msg_control = control.data();
    message.msg_controllen = control.size();
    const ssize_t n = ::recvmsg(pair[0], &message, MSG_CMSG_CLOEXEC);
    const int error = errno;
    ::close(pair[0]);
    while (::waitpid(child, nullptr, 0) < 0 && errno == EINTR) {}
    if (n != 1) return std::string("the namespace helper did not answer: ") + std::strerror(error);
    if (status) return "cannot create a user namespace with network namespaces (unprivileged user namespaces off?)";
    const cmsghdr* c = CMSG_FIRSTHDR(&message);
    if (!c || c->cmsg_type != SCM_RIGHTS || c->cmsg_len != CMSG_LEN(sizeof(int) * total))
        return "the namespace helper sent no namespaces";
    fds.resize(total);
    std::memcpy(fds.data(), CMSG_DATA(c), sizeof(int) * total);
    return {};
}

// Runs `ip -batch -` in the namespace `ns_fd`, `commands` on its standard input; the
// descriptors in `pass` are its 3, 4, ... (so a command can name a namespace /proc/self/fd/3).
// "" or what ip said. The child only calls async-signal-safe functions: the daemon has threads.
std::string run_ip(const std::string& ip, int user_fd, int ns_fd, const std::string& commands,
                   const std::vector<int>& pass) {
    int input[2], output[2];
    if (::pipe2(input, O_CLOEXEC) != 0) return std::string("pipe: ") + std::strerror(errno);
    if (::pipe2(output, O_CLOEXEC) != 0) {
        ::close(input[0]);
        ::close(input[1]);
        return std::string("pipe: ") + std::strerror(errno);
    }
    const char* argv[] = {ip.c_str(), "-batch", "-", nullptr};
    const char* envp[] = {"PATH=/usr/sbin:/usr/bin:/sbin:/bin", "LC_ALL=C", nullptr};
    const pid_t child = ::fork();
    if (child == 0) {
        if (user_fd >= 0) {
            // Entering the user namespace gives every capability in it, but exec of a program
            // that is not uid 0 there drops them: ip keeps CAP_NET_ADMIN as an ambient one.
            if (::setns(user_fd, CLONE_NEWUSER) != 0) ::_exit(126);
            __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
            __user_cap_data_struct caps[2]{};
            if (::syscall(SYS_capget, &header, caps) != 0) ::_exit(126);
            caps[0].inheritable |= (1u << CAP_NET_ADMIN) | (1u << CAP_SYS_ADMIN);
            if (::syscall(SYS_capset, &header, caps) != 0 ||
                ::prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, CAP_NET_ADMIN, 0, 0) != 0 ||
                ::prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, CAP_SYS_ADMIN, 0, 0) != 0)
                ::_exit(126);
        }
        if (::setns(ns_fd, CLONE_NEWNET) != 0) ::_exit(126);
        // Out of the way of 0-2 and of the numbers they land on, then into place.
        std::vector<int>::size_type i = 0;
        int high[16] = {};
        for (i = 0; i < pass.size() && i < 16; ++i) high[i] = ::fcntl(pass[i], F_DUPFD_CLOEXEC, 64);
        ::dup2(input[0], 0);
        ::dup2(output[1], 1);
        ::dup2(output[1], 2);
        for (i = 0; i < pass.size() && i < 16; ++i) ::dup2(high[i], static_cast<int>(3 + i));
        ::execve(argv[0], const_cast<char* const*>(argv), const_cast<char* const*>(envp));
        ::_exit(127);
    }
    ::close(input[0]);
    ::close(output[1]);
    if (child < 0) {
        ::close(input[1]);
        ::close(output[0]);
        return std::string("fork: ") + std::strerror(errno);
    }
    // A few hundred bytes a host: well within the pipe's buffer, so writing all first cannot block.
    [[maybe_unused]] auto written = ::write(input[1], commands.data(), commands.size());
    ::close(input[1]);
    std::string said;
    char buffer[4096];
    for (;;) {
        const ssize_t n = ::read(output[0], buffer, sizeof buffer);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        said.append(buffer, static_cast<std::size_t>(n));
    }
    ::close(output[0]);
    int status = 0;
    while (::waitpid(child, &status, 0) < 0 && errno == EINTR) {}
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return {};
    if (WIFEXITED(status) && WEXITSTATUS(status) == 126) return "cannot enter the namespace to configure it";
    while (!said.empty() && (said.back() == '\n' || said.back() == ' ')) said.pop_back();
    return said.empty() ? "ip failed" : said;
}

} // namespace

host_network::host_network(const config::topology& topology) {
    _unavailable = build(topology);
    if (!_unavailable.empty()) release();
    if (_unavailable.empty())
        log::daemon().info("hosts have network namespaces{}: {} hosts on a bridge of their own",
                           _user_fd >= 0 ? " (in a user namespace of the daemon's)" : "", _host_fds.size());
    else
        log::daemon().warn("hosts share the machine's network (programs reach each other on 127.0.0.1): {}",
                           _unavailable);
}

host_network::~host_network() { release(); }

void host_network::release() {
    // The last reference to each namespace: the kernel takes the namespaces down, and their
    // veth pairs and the bridge with them.
    for (auto& [host, fd] : _host_fds) ::close(fd);
    _host_fds.clear();
    if (_bridge_fd >= 0) ::close(_bridge_fd);
    _bridge_fd = -1;
    if (_user_fd >= 0) ::close(_user_fd);
    _user_fd = -1;
}

std::string host_network::build(const config::topology& topology) {
    const std::string ip = find_ip_command();
    if (ip.empty()) return "the ip command (iproute2) is not installed";
    std::vector<int> fds;
    std::string problem = ::geteuid() == 0 ? new_namespaces(topology.hosts.size() + 1, fds)
                                           : new_namespaces_in_user_namespace(topology.hosts.size() + 1, fds);
    if (!problem.empty()) {
        for (int fd : fds) ::close(fd);
        return problem;
    }
    if (::geteuid() != 0) {
        _user_fd = fds.front();
        fds.erase(fds.begin());
    }
    _bridge_fd = fds.front();
    for (std::size_t h = 0; h < topology.hosts.size(); ++h) _host_fds[topology.hosts[h].name] = fds[h + 1];

    if (problem = run_ip(ip, _user_fd, _bridge_fd, "link set lo up\nlink add br0 type bridge\nlink set br0 up\n", {});
        !problem.empty())
        return "bridge namespace: " + problem;

    std::string bridge_ports;
    for (std::size_t h = 0; h < topology.hosts.size(); ++h) {
        const config::host_config& host = topology.hosts[h];
        std::string commands = "link set lo up\n";
        for (std::size_t n = 0; n < host.nics.size(); ++n) {
            const config::nic_config& nic = host.nics[n];
            const std::string name = host_interface_name(nic.name, n);
            const std::string peer = "v" + std::to_string(h) + "." + std::to_string(n);
            // The NIC's MAC on its interface: the link-local GID (index 0) is then the
            // interface's own IPv6 link-local address, as on a ConnectX. Its MTU is the NIC's
            // link's, from which a ConnectX host's active_mtu follows (iboe_get_mtu).
            const std::string mtu = std::to_string(topology.links[nic.link_index].params.mtu);
            commands += "link add " + name + " mtu " + mtu + " address " + nic.mac.to_string() +
                        " type veth peer name " + peer + " mtu " + mtu + " netns /proc/self/fd/3\n";
            commands +=
                "addr add " + nic.address.to_string() + " dev " + name + (nic.address.v6 ? " nodad" : "") + "\n";
            commands += "link set " + name + " up\n";
            bridge_ports += "link set " + peer + " master br0\nlink set " + peer + " up\n";
        }
        // Every other host's addresses: on-link through the first interface of the family when
        // no interface's subnet holds them (leaf-spine hosts sit in different subnets; one
        // bridge joins them all, so ARP finds them directly).
        for (const auto& other : topology.hosts) {
            if (&other == &host) continue;
            for (const auto& target : other.nics) {
                bool connected = false;
                const config::nic_config* via = nullptr;
                std::size_t via_index = 0;
                for (std::size_t n = 0; n < host.nics.size(); ++n) {
                    if (host.nics[n].address.v6 != target.address.v6) continue;
                    connected |= host.nics[n].address.contains(target.address.address);
                    if (!via) {
                        via = &host.nics[n];
                        via_index = n;
                    }
                }
                if (connected || !via) continue;
                commands += "route replace " + target.address.host_prefix().to_string() + " dev " +
                            host_interface_name(via->name, via_index) + "\n";
            }
        }
        if (problem = run_ip(ip, _user_fd, _host_fds[host.name], commands, {_bridge_fd}); !problem.empty())
            return "host " + host.name + ": " + problem;
    }
    if (!bridge_ports.empty())
        if (problem = run_ip(ip, _user_fd, _bridge_fd, bridge_ports, {}); !problem.empty())
            return "bridge namespace: " + problem;
    return {};
}

nlohmann::json host_network::describe() const {
    if (!_unavailable.empty()) return {{"unavailable", _unavailable}};
    nlohmann::json hosts = nlohmann::json::object();
    for (const auto& [host, fd] : _host_fds) hosts[host] = fd;
    nlohmann::json out = {{"pid", ::getpid()}, {"hosts", std::move(hosts)}};
    if (_user_fd >= 0) out["user_namespace"] = _user_fd;
    return out;
}

} // namespace rocefab::control
