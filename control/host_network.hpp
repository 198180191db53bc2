// The emulated hosts' own networks: a network namespace per host, with `lo` up and one
// interface per NIC carrying that NIC's address (named as the NIC, with its MAC), all plugged
// into a bridge in a namespace of the fabric's own, and a route from every host to every other
// host's addresses. Programs use it for what a cluster's programs use Ethernet for besides RDMA:
// their out-of-band TCP channel (`ib_write_bw 10.0.0.2`, rdma_cm address resolution, mpirun).
// RDMA frames still go through the emulated NICs and switch.
//
// The namespaces have no names (nothing in `ip netns`): the daemon holds them by descriptor, so
// they vanish with it however it ends, and their veth pairs with them. A daemon not run as root
// makes them inside a user namespace of its own (where the machine allows unprivileged user
// namespaces). `rocefab run` enters a host's namespace through /proc/DAEMON_PID/fd/N, which only
// a process with the rights to read the daemon's descriptors (root, or the daemon's own user)
// can open; others get the machine's network.
#pragma once

#include "control/config/topology.hpp"

#include <nlohmann/json.hpp>

#include <map>
#include <string>

namespace rocefab::control {

// The interface a NIC gets in its host's namespace: the NIC's name when the kernel takes it as an
// interface name (under IFNAMSIZ, no '/', ':' or blanks), else ethN. `rocefab run` names it in
// /sys/class/infiniband/DEV/ports/1/gid_attrs/ndevs/N, so both sides use this one rule.
inline std::string host_interface_name(const std::string& nic, std::size_t index) {
    bool usable = !nic.empty() && nic.size() < 16 && nic != "." && nic != "..";
    for (char c : nic) usable &= c > ' ' && c != '/' && c != ':' && c < 127;
    return usable ? nic : "eth" + std::to_string(index);
}

class host_network {
public:
    // Builds the namespaces (in a user namespace of the daemon's own when not root); when the
    // machine refuses (no user namespaces, no veth or bridge, no iproute2), there are none and
    // `unavailable()` says why.
    explicit host_network(const config::topology& topology);
    ~host_network();
    host_network(const host_network&) = delete;
    host_network& operator=(const host_network&) = delete;

    const std::string& unavailable() const { return _unavailable; }

    // {"pid": daemon pid, "hosts": {"h1": fd, ...}, "user_namespace": fd (without root)} or
    // {"unavailable": "why"}: what `rocefab run` needs to enter a host's namespace.
    nlohmann::json describe() const;

private:
    std::string build(const config::topology& topology);
    void release();

    int _user_fd = -1; // without root: the user namespace that owns the others
    int _bridge_fd = -1;
    std::map<std::string, int> _host_fds;
    std::string _unavailable;
};

} // namespace rocefab::control
