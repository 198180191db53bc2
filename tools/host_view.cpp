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

// The daemon holds the host's namespace as descriptor N; /proc/PID/fd/N opens it for whoever
// may read the daemon's descriptors. The type check keeps a reused pid from sending us
// elsewhere than into a network namespace.
std::string enter_network(const host_view_request& request) {
    const auto& net = request.host_network;
    if (!net.is_object()) return "the daemon does not give hosts network namespaces";
    if (net.contains("unavailable")) return "the daemon gives hosts no network namespaces (" +
                                            net.value("unavailable", std::string()) + ")";
    const auto hosts = net.find("hosts");
    if (hosts == net.end() || !hosts->contains(request.host) || !(*hosts)[request.host].is_number_integer())
        return "the daemon has no network namespace for " + request.host;
    const std::string path = "/proc/" + std::to_string(net.value("pid", 0)) + "/fd/" +
                             std::to_string((*hosts)[request.host].get<int>());
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return error_text("cannot open " + request.host + "'s network namespace");
    struct closer {
        int fd;
        ~closer() { ::close(fd); }
    } closes{fd};
    if (::ioctl(fd, NS_GET_NSTYPE) != CLONE_NEWNET) return path + " is not a network namespace";
    if (::setns(fd, CLONE_NEWNET) != 0) return error_text("cannot enter " + request.host + "'s network namespace");
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
// network namespace of whoever mounted it, and the machine's sysfs was mounted outside.
std::string host_net_sysfs() {
    const std::string staging = "/sys/class/.rocefab-host-sysfs";
    if (::mkdir(staging.c_str(), 0700) != 0) return error_text("cannot create " + staging);
    std::string problem;
    if (::mount("sysfs", staging.c_str(), "sysfs", MS_NOSUID | MS_NODEV | MS_NOEXEC | MS_RDONLY, nullptr) != 0)
        problem = error_text("cannot mount the host's sysfs");
    if (problem.empty()) {
        ::umount2("/sys/class/net", MNT_DETACH);
        if (::mount((staging + "/class/net").c_str(), "/sys/class/net", nullptr, MS_BIND, nullptr) != 0 ||
            ::mount((staging + "/devices/virtual/net").c_str(), "/sys/devices/virtual/net", nullptr, MS_BIND,
                    nullptr) != 0)
            problem = error_text("cannot bind the host's /sys/class/net");
        ::umount2(staging.c_str(), MNT_DETACH);
    }
    ::rmdir(staging.c_str());
    return problem;
}

const char* port_state_name(int state) {
    static const char* const names[] = {"NOP", "DOWN", "INIT", "ARMED", "ACTIVE", "ACTIVE_DEFER"};
    return state >= 0 && state < 6 ? names[state] : "UNKNOWN";
}

const char* phys_state_name(int state) {
    static const char* const names[] = {"<unknown>", "Sleep", "Polling", "Disabled", "PortConfigurationTraining",
                                        "LinkUp", "LinkErrorRecovery", "Phy Test"};
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

std::string build_device_tree(const host_view_request& request, bool in_host_network) {
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
             write_file(dev + "/fw_ver", std::string(d.device.fw_ver, strnlen(d.device.fw_ver, sizeof d.device.fw_ver)) + "\n") &&
             write_file(dev + "/hca_type", format("MT%u\n", d.device.vendor_part_id)) &&
             write_file(dev + "/hw_rev", format("0x%x\n", d.device.hw_ver)) &&
             write_file(dev + "/board_id", format("ROCEFAB_%010u\n", d.device.vendor_part_id)) &&
             write_file(dev + "/node_type", "1: CA\n") &&
             // rdma-ndd's default description: host name and device name.
             write_file(dev + "/node_desc", request.host + " " + name + "\n");
        const ibv_port_attr& p = d.port;
        ok = ok && write_file(port + "/state", format("%d: %s\n", p.state, port_state_name(p.state))) &&
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
        for (std::uint32_t g = 0; ok && g < static_cast<std::uint32_t>(p.gid_tbl_len) && g < attach::gid_table_size; ++g) {
            ok = write_file(port + "/gids/" + std::to_string(g), gid_text(d.gids[g])) &&
                 write_file(port + "/gid_attrs/types/" + std::to_string(g), "RoCE v2\n") &&
                 (netdev.empty() || write_file(port + "/gid_attrs/ndevs/" + std::to_string(g), netdev + "\n"));
        }
        const std::string uverbs = "/sys/class/infiniband_verbs/uverbs" + std::to_string(i);
        ok = ok && make_directories(uverbs) && write_file(uverbs + "/ibdev", name + "\n") &&
             write_file(uverbs + "/abi_version", "1\n") &&
             // The kernel's uverbs character devices: major 231, minors from 192.
             write_file(uverbs + "/dev", format("231:%zu\n", 192 + i));
    }
    if (!ok) return error_text("cannot write the device's files under /sys/class");
    // Read-only from here, as sysfs is; the binds under it keep their own flags.
    ::mount(nullptr, "/sys/class", nullptr, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr);
    return {};
}

// A mount namespace of our own; without root, inside a user namespace where we keep our uid
// and gid (the program runs with no capabilities, as before).
std::string private_mount_namespace() {
    if (::geteuid() == 0) {
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
    const std::string network_problem = enter_network(request);
    bool host_net = network_problem.empty();

    std::string device_problem = private_mount_namespace();
    if (device_problem.empty()) device_problem = build_dev(request);
    bool class_view = false;
    if (device_problem.empty()) {
        device_problem = shadow_directory("/sys/class", {"infiniband", "infiniband_verbs"},
                                          MS_NOSUID | MS_NODEV | MS_NOEXEC);
        class_view = device_problem.empty();
    }
    // The host's /sys/class/net first: without it the GIDs' netdev would name an interface
    // /sys/class/net does not show, so the ndevs files go with it.
    if (class_view && host_net)
        if (std::string problem = host_net_sysfs(); !problem.empty()) {
            host_net = false;
            device_problem = problem;
        }
    if (class_view)
        if (std::string problem = build_device_tree(request, host_net); !problem.empty()) device_problem = problem;

    std::string line;
    if (!network_problem.empty())
        line = request.host + " runs on the machine's network (programs on every host share 127.0.0.1), not its own: " +
               network_problem;
    if (!device_problem.empty())
        line += (line.empty() ? "" : "; ") + std::string("no /dev/infiniband and /sys/class/infiniband view: ") +
                device_problem;
    return line;
}

} // namespace rocefab::tools
