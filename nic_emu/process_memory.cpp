#include "nic_emu/process_memory.hpp"

#include <array>
#include <cstring>
#include <vector>
#include <cerrno>
#include <charconv>
#include <climits>
#include <fcntl.h>
#include <linux/magic.h>
#include <string_view>
#include <sys/statfs.h>
#include <unistd.h>

namespace rocefab::nic {

namespace {

// Whether `fd` is procfs's file `/proc/PID/name`, open with `access` (O_RDONLY or O_RDWR).
bool is_proc_file(int fd, pid_t pid, std::string_view name, int access, std::string& why) {
    struct statfs fs {};
    if (::fstatfs(fd, &fs) != 0 || fs.f_type != PROC_SUPER_MAGIC) {
        why = "the descriptor for " + std::string(name) + " is not on procfs";
        return false;
    }
    const int flags = ::fcntl(fd, F_GETFL);
    if (flags < 0 || (flags & O_ACCMODE) != access) {
        why = "/proc/self/" + std::string(name) + " is not open " +
              (access == O_RDWR ? "for reading and writing" : "for reading");
        return false;
    }
    std::array<char, 64> link{};
    const std::string self = "/proc/self/fd/" + std::to_string(fd);
    const ssize_t n = ::readlink(self.c_str(), link.data(), link.size() - 1);
    const std::string expected = "/proc/" + std::to_string(pid) + "/" + std::string(name);
    if (n <= 0 || std::string_view(link.data(), static_cast<std::size_t>(n)) != expected) {
        why = "the descriptor passed as /proc/self/" + std::string(name) + " names " +
              (n > 0 ? std::string(link.data(), static_cast<std::size_t>(n)) : std::string("nothing")) +
              ", not the connecting process's " + expected;
        return false;
    }
    return true;
}

std::uint64_t hex(std::string_view text) {
    std::uint64_t value = 0;
    std::from_chars(text.data(), text.data() + text.size(), value, 16);
    return value;
}

} // namespace

std::unique_ptr<process_memory> process_memory::adopt(int mem_fd, int maps_fd, pid_t pid, std::string& why) {
    if (mem_fd < 0 || maps_fd < 0) {
        why = "no descriptors of /proc/self/mem and /proc/self/maps came with the request";
    } else if (is_proc_file(mem_fd, pid, "mem", O_RDWR, why) && is_proc_file(maps_fd, pid, "maps", O_RDONLY, why)) {
        return std::unique_ptr<process_memory>(new process_memory(mem_fd, maps_fd));
    }
    if (mem_fd >= 0) ::close(mem_fd);
    if (maps_fd >= 0) ::close(maps_fd);
    return nullptr;
}

process_memory::~process_memory() {
    ::close(_mem);
    ::close(_maps);
}

bool process_memory::read(std::span<const iovec> local, std::span<const iovec> remote) {
    return transfer(false, local, remote);
}

bool process_memory::write(std::span<const iovec> local, std::span<const iovec> remote) {
    return transfer(true, local, remote);
}

bool process_memory::transfer(bool write, std::span<const iovec> local, std::span<const iovec> remote) {
    if (total_length(local) != total_length(remote)) return false;
    // One system call for each run of contiguous remote ranges (consecutive packets of a message
    // land next to each other), gathering the local pieces that fill it. The file's offset is
    // the address in the program.
    constexpr std::size_t max_pieces = 64;
    std::array<iovec, max_pieces> pieces;
    std::size_t li = 0, local_offset = 0, ri = 0, remote_offset = 0;
    for (;;) {
        while (ri < remote.size() && remote_offset == remote[ri].iov_len) ++ri, remote_offset = 0;
        if (ri == remote.size()) return true;
        const std::uint64_t start = reinterpret_cast<std::uint64_t>(remote[ri].iov_base) + remote_offset;
        if (start > static_cast<std::uint64_t>(LLONG_MAX)) return false;
        std::uint64_t next = start;
        std::size_t n = 0, run = 0;
        while (n < max_pieces) {
            while (ri < remote.size() && remote_offset == remote[ri].iov_len) ++ri, remote_offset = 0;
            while (li < local.size() && local_offset == local[li].iov_len) ++li, local_offset = 0;
            if (ri == remote.size() || li == local.size()) break;
            if (reinterpret_cast<std::uint64_t>(remote[ri].iov_base) + remote_offset != next) break;
            const std::size_t take = std::min(remote[ri].iov_len - remote_offset, local[li].iov_len - local_offset);
            pieces[n++] = {static_cast<char*>(local[li].iov_base) + local_offset, take};
            run += take;
            next += take;
            remote_offset += take;
            local_offset += take;
        }
        // 0: the address space is gone (the program exited or exec'd); short or -1: a page
        // that is not mapped (or not writable, for a write).
        if (move_run(write, {pieces.data(), n}, run, static_cast<off_t>(start)) != static_cast<ssize_t>(run))
            return false;
    }
}

ssize_t process_memory::move_run(bool write, std::span<const iovec> pieces, std::size_t run, off_t start) {
    // The kernel serves each piece of a vector as a call of its own to the mem file, and each call
    // costs a page allocated for bouncing and a hold on the address space: most of a packet's
    // copy (perf: a 64 KiB RDMA WRITE gathered from 16 packet buffers ran at 0.7x of
    // process_vm_readv). Several pieces go through one buffer here instead, in one call.
    if (pieces.size() == 1 || run > staging_limit)
        return write ? ::pwritev(_mem, pieces.data(), static_cast<int>(pieces.size()), start)
                     : ::preadv(_mem, pieces.data(), static_cast<int>(pieces.size()), start);
    thread_local std::vector<std::uint8_t> staging;
    if (staging.size() < run) staging.resize(staging_limit);
    if (write) {
        std::size_t at = 0;
        for (const iovec& p : pieces) std::memcpy(staging.data() + at, p.iov_base, p.iov_len), at += p.iov_len;
        return ::pwrite(_mem, staging.data(), run, start);
    }
    const ssize_t done = ::pread(_mem, staging.data(), run, start);
    if (done != static_cast<ssize_t>(run)) return done;
    std::size_t at = 0;
    for (const iovec& p : pieces) std::memcpy(p.iov_base, staging.data() + at, p.iov_len), at += p.iov_len;
    return done;
}

int process_memory::check_range(std::uint64_t address, std::uint64_t length, bool writable) const {
    if (length == 0 || address + length < address) return EFAULT;
    std::string text;
    {
        std::lock_guard guard(_maps_lock);
        if (::lseek(_maps, 0, SEEK_SET) != 0) return EFAULT;
        std::array<char, 16384> buffer;
        for (;;) {
            const ssize_t n = ::read(_maps, buffer.data(), buffer.size());
            if (n < 0 && errno == EINTR) continue;
            if (n <= 0) break; // an address space that is gone reads as empty
            text.append(buffer.data(), static_cast<std::size_t>(n));
        }
    }
    // Lines "start-end perms offset dev inode path", ascending and not overlapping.
    const std::uint64_t end = address + length;
    std::uint64_t covered = address;
    std::string_view rest = text;
    while (!rest.empty()) {
        const std::size_t eol = rest.find('\n');
        const std::string_view line = rest.substr(0, eol);
        rest = eol == std::string_view::npos ? std::string_view{} : rest.substr(eol + 1);
        const std::size_t dash = line.find('-'), space = line.find(' ');
        if (dash == std::string_view::npos || space == std::string_view::npos || space < dash ||
            line.size() < space + 3)
            continue;
        const std::uint64_t first = hex(line.substr(0, dash)), last = hex(line.substr(dash + 1, space - dash - 1));
        if (last <= covered) continue;
        if (first > covered) return EFAULT; // a hole
        const bool readable = line[space + 1] == 'r', can_write = line[space + 2] == 'w';
        if (!readable || (writable && !can_write)) return EFAULT;
        covered = last;
        if (covered >= end) return 0;
    }
    return EFAULT;
}

} // namespace rocefab::nic
