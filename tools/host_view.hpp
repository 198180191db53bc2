// What a program started by `rocefab run` sees: its emulated host's network, and the device as
// programs probe a ConnectX host's device (/dev/infiniband, /sys/class/infiniband*), in a mount
// namespace of its own. The machine's /dev and /sys are never changed: the view is tmpfs mounts
// in that private namespace, gone when the program's last process exits.
//
// /dev: a tmpfs over /dev holding a bind mount of every entry of the real /dev (directories
// recursively, so /dev/shm, /dev/pts and /dev/mqueue stay the machine's), symlinks copied, and
// /dev/infiniband/uverbsN and rdma_cm as bind mounts of /dev/null: character devices a program
// can open read-write (what UCX and librdmacm check) that do nothing, since the verbs library
// talks to the daemon over its socket. Why not an overlay over /dev: overlayfs mounted in a user
// namespace is nodev, which would make every device under it unopenable for unprivileged runs;
// and mkdir in the real devtmpfs would change the machine's /dev.
//
// /sys/class: a tmpfs holding recursive bind mounts of every class of the real one, plus
// infiniband/DEV and infiniband_verbs/uverbsN laid out as the kernel's ib_core does, filled
// from what the daemon answers the verbs library's hello (the values ibv_query_device,
// ibv_query_port and ibv_query_gid return), and the NIC's counters as of the program's start
// (a tmpfs file cannot follow them; `rocefab show` does). Inside the host's network namespace a fresh sysfs
// provides /sys/class/net, so the GID's netdev is found there.
//
// /etc/hosts: in the host's network namespace, the fabric's host names resolve to their
// addresses as a cluster's names do (`mpirun -H h1,h2`, `ib_write_bw h2`): a file of the
// fabric's names followed by the machine's own /etc/hosts is bind-mounted over it.
#pragma once

#include "nic_emu/attach_protocol.hpp"

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace rocefab::tools {

struct host_view_request {
    std::string host;
    nlohmann::json host_entry;                // the host's entry of the topology (its NICs)
    nlohmann::json all_hosts;                 // the topology's hosts, for the names in /etc/hosts
    nlohmann::json host_network;              // the daemon's host_network::describe()
    std::vector<attach::device_info> devices; // in the order ibv_get_device_list gives them
    nlohmann::json nic_counters;              // `show`'s "nics" entries (host, nic, counters), when readable
};

// Enters the host's network namespace and a private mount namespace with the device view, in
// the calling (single-threaded) process, before it execs the program. Returns "" when all of it
// is in place, else one line saying what the program will not see and why.
std::string enter_host_view(const host_view_request& request);

} // namespace rocefab::tools
