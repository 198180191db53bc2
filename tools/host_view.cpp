#include "tools/host_view.hpp"

#include "control/host_network.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <linux/nsfs.h>
#include <sched.h>
#include <string_view>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

namespace rocefab::tools {

namespace {

std::string error_text(const std::string& what) { return what + ": " + std::strerror(errno); }

// ---- network ---------------------------------------------------------------------------

bool same_namespace(int a, int b) {
    struct stat sa {
    }, sb{};
    return a >= 0 && b >= 0 && ::fstat(a, &sa) == 0 && ::fstat(b, &sb) == 0 && sa.st_ino == sb.st_ino &&
           sa.st_dev == sb.st_dev;
}

struct fd_closer {
    int fd;
    ~fd_closer() {
        if (fd >= 0) ::close(fd);
    }
};

// The daemon holds the host's namespace as descriptor N (and, without root, the user namespace
// that owns it as M); /proc/PID/fd/N opens it for whoever may read the daemon's descriptors.
// Only a namespace owned by our own user namespace is entered, or by a child of it that our
// own user made (a daemon of another user's could otherwise hand us a network it controls);
// the type checks keep a reused pid from sending us anywhere else. `entered_user_namespace`
// says whether we joined the daemon's user namespace (we then hold every capability in it).
std::string enter_network(const host_view_request& request, bool& entered_user_namespace) {
    entered_user_namespace = false;
    const auto& net = request.host_network;
    if (!net.is_object()) return "the daemon does not give hosts network namespaces";
    if (net.contains("unavailable"))
        return "the daemon gives hosts no network namespaces (" + net.value("unavailable", std::string()) + ")";
    const auto hosts = net.find("hosts");
    if (hosts == net.end() || !hosts->contains(request.host) || !(*hosts)[request.host].is_number_integer())
        return "the daemon has no network namespace for " + request.host;
    if (!net.contains("pid") || !net["pid"].is_number_integer()) return "the daemon did not say which process it is";
    const std::string proc = "/proc/" + std::to_string(net["pid"].get<long long>()) + "/fd/";
    const std::string path = proc + std::to_string((*hosts)[request.host].get<int>());
    const fd_closer net_fd{::open(path.c_str(), O_RDONLY | O_CLOEXEC)};
    if (net_fd.fd < 0) return error_text("cannot open " + request.host + "'s network namespace");
    if (::ioctl(net_fd.fd, NS_GET_NSTYPE) != CLONE_NEWNET) return path + " is not a network namespace";
    const fd_closer own_user{::open("/proc/self/ns/user", O_RDONLY | O_CLOEXEC)};
    const fd_closer net_owner{::ioctl(net_fd.fd, NS_GET_USERNS)};

    fd_closer daemon_user{-1};
    if (net.contains("user_namespace") && net["user_namespace"].is_number_integer()) {
        const std::string user_path = proc + std::to_string(net["user_namespace"].get<int>());
        daemon_user.fd = ::open(user_path.c_str(), O_RDONLY | O_CLOEXEC);
        if (daemon_user.fd < 0) return error_text("cannot open the fabric's user namespace");
        uid_t owner = static_cast<uid_t>(-1);
        const fd_closer parent{::ioctl(daemon_user.fd, NS_GET_PARENT)};
        if (::ioctl(daemon_user.fd, NS_GET_NSTYPE) != CLONE_NEWUSER || !same_namespace(parent.fd, own_user.fd) ||
            ::ioctl(daemon_user.fd, NS_GET_OWNER_UID, &owner) != 0 || owner != ::geteuid())
            return "the fabric's user namespace is not one this user made";
        if (!same_namespace(net_owner.fd, daemon_user.fd))
            return request.host + "'s network namespace belongs to another user namespace";
        if (::setns(daemon_user.fd, CLONE_NEWUSER) != 0) return error_text("cannot enter the fabric's user namespace");
        entered_user_namespace = true;
    } else if (!same_namespace(net_owner.fd, own_user.fd)) {
        return request.host + "'s network namespace belongs to another user namespace";
    }
    if (::setns(net_fd.fd, CLONE_NEWNET) != 0)
        return error_text("cannot enter " + request.host + "'s network namespace");
    return {};
}

// ---- files -----------------------------------------------------------------------------

bool write_file(const std::string& path, std::string_view text, mode_t mode = 0444) {
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
    if (fd < 0) return false;
    const bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
    ::close(fd);
    return ok;
}

bool make_directories(const std::string& path) {
    for (std::size_t slash = 1; slash != std::string::npos;) {
        slash = path.find('/', slash + 1);
        const std::string prefix = path.substr(0, slash);
        if (::mkdir(prefix.c_str(), 0755) != 0 && errno != EEXIST) return false;
    }
    return true;
}

std::string format(const char* pattern, auto... values) {
    char buffer[256];
    std::snprintf(buffer, sizeof buffer, pattern, values...);
    return buffer;
}

// A 64-bit GUID in network order, as the kernel prints it: four groups of four hex digits.
std::string guid_text(std::uint64_t network_order) {
    unsigned char b[8];
    std::memcpy(b, &network_order, 8);
    return format("%02x%02x:%02x%02x:%02x%02x:%02x%02x\n", b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]);
}

// %pI6: eight groups of four hex digits, not compressed (drivers/infiniband/core/sysfs.c).
std::string gid_text(const std::uint8_t* g) {
    std::string out;
    for (int i = 0; i < 16; i += 2) out += format("%s%02x%02x", i ? ":" : "", g[i], g[i + 1]);
    return out + "\n";
}

// ---- mounts ----------------------------------------------------------------------------

// Rebuilds `directory` as a tmpfs holding bind mounts of what it held (directories
// recursively: mounts under them come along), symlinks copied, except the names in `skip`.
std::string shadow_directory(const std::string& directory, std::initializer_list<std::string_view> skip,
                             unsigned long flags) {
    const int old = ::open(directory.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (old < 0) return error_text("cannot open " + directory);
    struct closer {
        int fd;
        ~closer() { ::close(fd); }
    } closes{old};
    if (::mount("tmpfs", directory.c_str(), "tmpfs", flags, "mode=755") != 0)
        return error_text("cannot mount a tmpfs over " + directory);
    const std::string source_root = "/proc/self/fd/" + std::to_string(old) + "/";
    const int listing = ::dup(old);
    DIR* dir = listing >= 0 ? ::fdopendir(listing) : nullptr;
    if (!dir) return error_text("cannot list " + directory);
    std::string problem;
    while (const dirent* entry = ::readdir(dir)) {
        const std::string_view name = entry->d_name;
        if (name == "." || name == "..") continue;
        bool skipped = false;
        for (auto s : skip) skipped |= name == s;
        if (skipped) continue;
        struct stat st {};
        if (::fstatat(old, entry->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) continue; // gone meanwhile
        const std::string target = directory + "/" + entry->d_name;
        const std::string source = source_root + entry->d_name;
        if (S_ISLNK(st.st_mode)) {
            char link[4096];
            const ssize_t n = ::readlinkat(old, entry->d_name, link, sizeof link - 1);
            if (n < 0) continue;
            link[n] = '\0';
            if (::symlink(link, target.c_str()) != 0) problem = error_text("cannot copy the symlink " + target);
        } else if (S_ISDIR(st.st_mode)) {
            if (::mkdir(target.c_str(), st.st_mode & 07777) != 0 ||
                ::mount(source.c_str(), target.c_str(), nullptr, MS_BIND | MS_REC, nullptr) != 0)
                problem = error_text("cannot bind " + target);
        } else {
            const int fd = ::open(target.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
            if (fd >= 0) ::close(fd);
            if (fd < 0 || ::mount(source.c_str(), target.c_str(), nullptr, MS_BIND, nullptr) != 0)
                problem = error_text("cannot bind " + target);
        }
        if (!problem.empty()) break;
    }
    ::closedir(dir);
    if (!problem.empty()) ::umount2(directory.c_str(), MNT_DETACH); // the real one shows again
    return problem;
}

// A file that opens as /dev/null does: stat says character device, open and access succeed.
std::string null_device(const std::string& path) {
    if (!write_file(path, "", 0666) || ::mount("/dev/null", path.c_str(), nullptr, MS_BIND, nullptr) != 0)
        return error_text("cannot make " + path);
    return {};
}

std::string build_dev(const host_view_request& request) {
    if (std::string problem = shadow_directory("/dev", {"infiniband"}, MS_NOSUID); !problem.empty()) return problem;
    if (::mkdir("/dev/infiniband", 0755) != 0) return error_text("cannot create /dev/infiniband");
    for (std::size_t i = 0; i < request.devices.size(); ++i)
        if (std::string problem = null_device("/dev/infiniband/uverbs" + std::to_string(i)); !problem.empty())
            return problem;
    return null_device("/dev/infiniband/rdma_cm");
}

// /sys/class/net and /sys/devices/virtual/net as the host's namespace has them: sysfs shows the
// network namespace of whoever mounted it, and the machine's sysfs was mounted outside. A fresh
// sysfs is mounted while /sys is still as the machine has it (inside a user namespace the
// kernel mounts sysfs only where a complete one is visible), then its two net directories are
// put in place once /sys/class is ours.
constexpr const char* sysfs_staging = "/dev/.rocefab-host-sysfs";

std::string stage_host_sysfs() {
    if (::mkdir(sysfs_staging, 0700) != 0) return error_text(std::string("cannot create ") + sysfs_staging);
    if (::mount("sysfs", sysfs_staging, "sysfs", MS_NOSUID | MS_NODEV | MS_NOEXEC | MS_RDONLY, nullptr) != 0) {
        const std::string problem = error_text("cannot mount the host's sysfs");
        ::rmdir(sysfs_staging);
        return problem;
    }
    return {};
}

std::string place_host_sysfs() {
    const std::string staging = sysfs_staging;
    std::string problem;
    if (::mkdir("/sys/class/net", 0755) != 0 ||
        ::mount((staging + "/class/net").c_str(), "/sys/class/net", nullptr, MS_BIND, nullptr) != 0 ||
        ::mount((staging + "/devices/virtual/net").c_str(), "/sys/devices/virtual/net", nullptr, MS_BIND, nullptr) != 0)
        problem = error_text("cannot bind the host's /sys/class/net");
    ::umount2(sysfs_staging, MNT_DETACH);
    ::rmdir(sysfs_staging);
    return problem;
}

const char* port_state_name(int state) {
    static const char* const names[] = {"NOP", "DOWN", "INIT", "ARMED", "ACTIVE", "ACTIVE_DEFER"};
    return state >= 0 && state < 6 ? names[state] : "UNKNOWN";
}

const char* phys_state_name(int state) {
    static const char* const names[] = {
        "<unknown>",         "Sleep",   "Polling", "Disabled", "PortConfigurationTraining", "LinkUp",
        "LinkErrorRecovery", "Phy Test"};
    return state >= 0 && state < 8 ? names[state] : "<unknown>";
}

// drivers/infiniband/core/sysfs.c rate_show: lane speed in 0.1 Gb/s times the lane count.
std::string rate_text(const ibv_port_attr& port) {
    int speed = 25;
    const char* name = "";
    switch (port.active_speed) {
    case 2: speed = 50; break;
    case 4: speed = 100; break;
    case 8: speed = 100, name = " FDR10"; break;
    case 16: speed = 140, name = " FDR"; break;
    case 32: speed = 250, name = " EDR"; break;
    case 64: speed = 500, name = " HDR"; break;
    case 128: speed = 1000, name = " NDR"; break;
    default: break;
    }
    int lanes = 0;
    switch (port.active_width) {
    case 1: lanes = 1; break;
    case 2: lanes = 4; break;
    case 4: lanes = 8; break;
    case 8: lanes = 12; break;
    case 16: lanes = 2; break;
    default: break;
    }
    const int rate = speed * lanes;
    return format("%d%s Gb/sec (%dX%s)\n", rate / 10, rate % 10 ? ".5" : "", lanes, name);
}

// The interface that carries the NIC's addresses in the host's namespace, "" outside it.
std::string netdev_of(const host_view_request& request, const std::string& nic) {
    const auto nics = request.host_entry.find("nics");
    if (nics == request.host_entry.end() || !nics->is_array()) return {};
    for (std::size_t i = 0; i < nics->size(); ++i)
        if ((*nics)[i].value("name", std::string()) == nic) return control::host_interface_name(nic, i);
    return {};
}

// ports/1/counters holds the IBA PortCounters the kernel shows (data in 4-byte words, IBA
// 16.1.3.5); hw_counters the rest, under the mlx5 names the NIC counts them by.
bool write_counters(const host_view_request& request, const std::string& nic, const std::string& port) {
    if (!request.nic_counters.is_array()) return true;
    for (const auto& entry : request.nic_counters) {
        if (!entry.is_object() || entry.value("host", std::string()) != request.host ||
            entry.value("nic", std::string()) != nic || !entry.contains("counters") || !entry["counters"].is_object())
            continue;
        if (!make_directories(port + "/counters") || !make_directories(port + "/hw_counters")) return false;
        for (const auto& [key, value] : entry["counters"].items()) {
            if (!value.is_number_unsigned()) continue;
            std::uint64_t n = value.get<std::uint64_t>();
            const bool pma = key == "port_xmit_packets" || key == "port_rcv_packets" || key == "port_xmit_data" ||
                             key == "port_rcv_data" || key == "port_rcv_errors";
            if (key == "port_xmit_data" || key == "port_rcv_data") n /= 4;
            if (!write_file(port + (pma ? "/counters/" : "/hw_counters/") + key, std::to_string(n) + "\n"))
                return false;
        }
    }
    return true;
}

std::string build_device_tree(const host_view_request& request, bool in_host_network) {
    // A device's name becomes a path: one that could leave /sys/class/infiniband is refused.
    for (const attach::device_info& d : request.devices) {
        const std::string name(d.name, strnlen(d.name, sizeof d.name));
        if (name.empty() || name == "." || name == ".." || name.find('/') != std::string::npos)
            return "the daemon names a device '" + name + "', which is not a file name";
    }
    bool ok = make_directories("/sys/class/infiniband") && make_directories("/sys/class/infiniband_verbs") &&
              write_file("/sys/class/infiniband_verbs/abi_version", "6\n"); // IB_USER_VERBS_ABI_VERSION
    for (std::size_t i = 0; ok && i < request.devices.size(); ++i) {
        const attach::device_info& d = request.devices[i];
        const std::string name(d.name, strnlen(d.name, sizeof d.name));
        const std::string dev = "/sys/class/infiniband/" + name;
        const std::string port = dev + "/ports/1";
        ok &= make_directories(port + "/gids") && make_directories(port + "/gid_attrs/types") &&
              make_directories(port + "/gid_attrs/ndevs") && make_directories(port + "/pkeys");
        ok = ok && write_file(dev + "/node_guid", guid_text(d.node_guid)) &&
             write_file(dev + "/sys_image_guid", guid_text(d.device.sys_image_guid)) &&
             write_file(dev + "/fw_ver",
                        std::string(d.device.fw_ver, strnlen(d.device.fw_ver, sizeof d.device.fw_ver)) + "\n") &&
             write_file(dev + "/hca_type", format("MT%u\n", d.device.vendor_part_id)) &&
             write_file(dev + "/hw_rev", format("0x%x\n", d.device.hw_ver)) &&
             write_file(dev + "/board_id", format("ROCEFAB_%010u\n", d.device.vendor_part_id)) &&
             write_file(dev + "/node_type", "1: CA\n") &&
             // rdma-ndd's default description: host name and device name.
             write_file(dev + "/node_desc", request.host + " " + name + "\n");
        const ibv_port_attr& p = d.port;
        ok =
            ok && write_file(port + "/state", format("%d: %s\n", p.state, port_state_name(p.state))) &&
            write_file(port + "/phys_state", format("%d: %s\n", p.phys_state, phys_state_name(p.phys_state))) &&
            write_file(port + "/link_layer", p.link_layer == IBV_LINK_LAYER_ETHERNET ? "Ethernet\n" : "InfiniBand\n") &&
            write_file(port + "/rate", rate_text(p)) && write_file(port + "/lid", format("0x%x\n", p.lid)) &&
            write_file(port + "/sm_lid", format("0x%x\n", p.sm_lid)) &&
            write_file(port + "/sm_sl", format("%u\n", p.sm_sl)) &&
            write_file(port + "/lid_mask_count", format("%u\n", p.lmc)) &&
            write_file(port + "/cap_mask", format("0x%08x\n", p.port_cap_flags)) &&
            write_file(port + "/pkeys/0", "0xffff\n");
        // The GID table as ibv_query_gid gives it; every entry is a RoCE v2 GID, which the
        // kernel names "RoCE v2" (ib_cache.c gid_type_str).
        const std::string netdev = in_host_network ? netdev_of(request, name) : std::string();
        for (std::uint32_t g = 0; ok && g < static_cast<std::uint32_t>(p.gid_tbl_len) && g < attach::gid_table_size;
             ++g) {
            ok = write_file(port + "/gids/" + std::to_string(g), gid_text(d.gids[g])) &&
                 write_file(port + "/gid_attrs/types/" + std::to_string(g), "RoCE v2\n") &&
                 (netdev.empty() || write_file(port + "/gid_attrs/ndevs/" + std::to_string(g), netdev + "\n"));
        }
        // The device's network interface, where the kernel has it under the PCI function
        // (`device/net/IFNAME`): rdma-core's tests and other tools find a RoCE device's netdev
        // and its address there.
        if (ok && !netdev.empty())
            ok = make_directories(dev + "/device/net") &&
                 ::symlink(("/sys/class/net/" + netdev).c_str(), (dev + "/device/net/" + netdev).c_str()) == 0;
        ok = ok && write_counters(request, name, port);
        const std::string uverbs = "/sys/class/infiniband_verbs/uverbs" + std::to_string(i);
        ok = ok && make_directories(uverbs) && write_file(uverbs + "/ibdev", name + "\n") &&
             write_file(uverbs + "/abi_version", "1\n") &&
             // The kernel's uverbs character devices: major 231, minors from 192.
             write_file(uverbs + "/dev", format("231:%zu\n", 192 + i));
    }
    if (!ok) return error_text("cannot write the device's files under /sys/class");
    // Read-only from here, as sysfs is; the binds under it keep their own flags.
    ::mount(nullptr, "/sys/class", nullptr, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC,
            nullptr);
    return {};
}

// A mount namespace of our own; without root, inside a user namespace where we keep our uid
// and gid (the program runs with no capabilities, as before): the fabric's, when we joined it.
// The fabric's names, then the machine's /etc/hosts (the first line naming a host wins): each
// host's first NIC address under the host's name, and every NIC's as HOST-NIC (h1-rfab1).
std::string hosts_file_text(const nlohmann::json& hosts) {
    std::string text = "# the fabric's hosts (rocefab run)\n";
    for (const auto& h : hosts) {
        const std::string name = h.value("name", "");
        bool first = true;
        for (const auto& nic : h.value("nics", nlohmann::json::array())) {
            std::string address = nic.value("address", "");
            address = address.substr(0, address.find('/'));
            if (address.empty() || name.empty()) continue;
            text += address + "\t" + (first ? name + " " : "") + name + "-" + nic.value("name", "") + "\n";
            first = false;
        }
    }
    text += "\n# the machine's /etc/hosts\n";
    if (std::FILE* f = std::fopen("/etc/hosts", "r")) {
        char buffer[4096];
        for (std::size_t n; (n = std::fread(buffer, 1, sizeof buffer, f)) > 0;) text.append(buffer, n);
        std::fclose(f);
    }
    return text;
}

// Written into our /dev tmpfs, bound over /etc/hosts, and unlinked there: the mount keeps it.
std::string place_hosts_file(const host_view_request& request) {
    constexpr const char* staged = "/dev/.rocefab-hosts";
    if (!write_file(staged, hosts_file_text(request.all_hosts), 0644)) return error_text("cannot write the hosts file");
    std::string problem;
    if (::mount(staged, "/etc/hosts", nullptr, MS_BIND, nullptr) != 0)
        problem = error_text("cannot bind the fabric's names over /etc/hosts");
    ::unlink(staged);
    return problem;
}

std::string private_mount_namespace(bool in_user_namespace) {
    if (::geteuid() == 0 || in_user_namespace) {
        if (::unshare(CLONE_NEWNS) != 0) return error_text("no private mount namespace");
    } else {
        const uid_t uid = ::geteuid();
        const gid_t gid = ::getegid();
        if (::unshare(CLONE_NEWUSER | CLONE_NEWNS) != 0) return error_text("no user namespace");
        if (!write_file("/proc/self/setgroups", "deny", 0) ||
            !write_file("/proc/self/uid_map", format("%u %u 1\n", uid, uid), 0) ||
            !write_file("/proc/self/gid_map", format("%u %u 1\n", gid, gid), 0))
            return error_text("cannot map this user into a user namespace");
    }
    // Nothing we mount may propagate back to the machine's namespace.
    if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) return error_text("cannot make / private");
    return {};
}

} // namespace

std::string enter_host_view(const host_view_request& request) {
    bool in_user_namespace = false;
    const std::string network_problem = enter_network(request, in_user_namespace);
    bool host_net = network_problem.empty();

    std::string device_problem = private_mount_namespace(in_user_namespace);
    if (device_problem.empty()) device_problem = build_dev(request);
    // Without the host's /sys/class/net the GIDs' netdev would name an interface /sys/class/net
    // does not show, so the ndevs files go with it.
    if (device_problem.empty() && host_net)
        if (std::string problem = stage_host_sysfs(); !problem.empty()) {
            host_net = false;
            device_problem = problem;
        }
    bool class_view = false;
    if (device_problem.empty()) {
        device_problem = host_net ? shadow_directory("/sys/class", {"infiniband", "infiniband_verbs", "net"},
                                                     MS_NOSUID | MS_NODEV | MS_NOEXEC)
                                  : shadow_directory("/sys/class", {"infiniband", "infiniband_verbs"},
                                                     MS_NOSUID | MS_NODEV | MS_NOEXEC);
        class_view = device_problem.empty();
    }
    if (host_net && !class_view) { // staged, but no /sys/class of ours to put it in
        ::umount2(sysfs_staging, MNT_DETACH);
        ::rmdir(sysfs_staging);
    }
    if (class_view && host_net)
        if (std::string problem = place_host_sysfs(); !problem.empty()) {
            host_net = false;
            device_problem = problem;
        }
    if (class_view)
        if (std::string problem = build_device_tree(request, host_net); !problem.empty()) device_problem = problem;
    // The names only where their addresses are this host's neighbours.
    std::string names_problem;
    if (host_net && class_view && !request.all_hosts.is_null()) names_problem = place_hosts_file(request);

    std::string line;
    if (!network_problem.empty())
        line = request.host + " runs on the machine's network (programs on every host share 127.0.0.1), not its own: " +
               network_problem;
    if (!device_problem.empty())
        line += (line.empty() ? "" : "; ") + std::string("no /dev/infiniband and /sys/class/infiniband view: ") +
                device_problem;
    if (!names_problem.empty())
        line += (line.empty() ? "" : "; ") + std::string("the fabric's host names do not resolve: ") + names_problem;
    return line;
}

} // namespace rocefab::tools
