#include "nic_emu/process_memory.hpp"

#include "nic_emu/counters.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <cstring>
#include <vector>
#include <cerrno>
#include <charconv>
#include <climits>
#include <fcntl.h>
#include <linux/magic.h>
#include <string_view>
#include <sys/mman.h>
#include <sys/stat.h>
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
    for (const shared_segment& s : _shared) unmap_shared(s.mapping);
    ::close(_mem);
    ::close(_maps);
}

bool process_memory::map_shared(int fd, std::uint64_t address, std::uint64_t length, std::uint64_t within,
                                std::uint64_t within_length, shared_mapping& out, std::string& why) {
    const auto page = static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
    struct stat st {};
    const int seals = fd >= 0 ? ::fcntl(fd, F_GET_SEALS) : -1;
    if (fd < 0)
        why = "no memfd came with the shared pages";
    else if (length == 0 || address % page || length % page || address + length < address || address < within ||
             address + length > within + within_length)
        why = "the shared pages are not whole pages within the region";
    else if (seals < 0 || !(seals & F_SEAL_SHRINK))
        why = "the shared pages' descriptor is not a memfd sealed against shrinking";
    else if (::fstat(fd, &st) != 0 || static_cast<std::uint64_t>(st.st_size) < length)
        why = "the shared pages' memfd is shorter than the pages";
    else if (void* view = ::mmap(nullptr, length, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0); view == MAP_FAILED)
        why = std::string("the shared pages' memfd cannot be mapped: ") + std::strerror(errno);
    else
        out = {address, length, static_cast<std::uint8_t*>(view)};
    if (fd >= 0) ::close(fd);
    return out.view != nullptr;
}

void process_memory::unmap_shared(const shared_mapping& m) { ::munmap(m.view, m.length); }

std::vector<process_memory::shared_segment>::const_iterator process_memory::first_after(std::uint64_t address) const {
    return std::upper_bound(_shared.begin(), _shared.end(), address,
                            [](std::uint64_t a, const shared_segment& s) { return a < s.mapping.address; });
}

void process_memory::add_shared(const shared_mapping& m, std::uint32_t owner) {
    _shared.insert(first_after(m.address), {m, owner});
}

void process_memory::remove_shared(std::uint32_t owner) {
    const auto it = std::find_if(_shared.begin(), _shared.end(), [&](const auto& s) { return s.owner == owner; });
    if (it == _shared.end()) return;
    unmap_shared(it->mapping);
    _shared.erase(it);
}

std::uint8_t* process_memory::shared_view(std::uint64_t address, std::size_t length) const {
    // The last segment starting at or below `address`; segments may overlap only if a program
    // lied about its pages, and then whichever is found is still memory it gave.
    auto it = first_after(address);
    if (it == _shared.begin()) return nullptr;
    const shared_mapping& m = (--it)->mapping;
    const std::uint64_t offset = address - m.address;
    if (offset >= m.length || length > m.length - offset) return nullptr;
    return m.view + offset;
}

bool process_memory::transfer_shared(bool write, std::span<const iovec> local, std::span<const iovec> remote) {
    constexpr std::size_t max_pieces = 64;
    if (remote.size() > max_pieces) return false;
    std::array<std::uint8_t*, max_pieces> views;
    for (std::size_t i = 0; i < remote.size(); ++i)
        if (!(views[i] = shared_view(reinterpret_cast<std::uint64_t>(remote[i].iov_base), remote[i].iov_len)))
            return false;
    // Copied piece by piece in address order. Within one memcpy the stores of a fast string
    // copy may become visible out of order; a program that polls the last byte of a message for
    // its arrival (ib_write_lat does, as it may on a ConnectX) must see it last, so each piece
    // written ends with its last bytes stored after a fence.
    constexpr std::size_t tail = 64;
    std::size_t li = 0, local_offset = 0;
    for (std::size_t ri = 0; ri < remote.size(); ++ri) {
        std::uint8_t* view = views[ri];
        std::size_t left = remote[ri].iov_len;
        while (left > 0) {
            while (local_offset == local[li].iov_len) ++li, local_offset = 0;
            auto* here = static_cast<std::uint8_t*>(local[li].iov_base) + local_offset;
            const std::size_t take = std::min(left, local[li].iov_len - local_offset);
            if (!write) {
                std::memcpy(here, view, take);
            } else if (take <= tail) {
                std::memcpy(view, here, take);
            } else {
                std::memcpy(view, here, take - tail);
                std::atomic_thread_fence(std::memory_order_seq_cst);
                std::memcpy(view + take - tail, here + take - tail, tail);
            }
            view += take;
            left -= take;
            local_offset += take;
        }
    }
    if (_counters) _counters->dma_shared_bytes += total_length(remote);
    return true;
}

bool process_memory::read(std::span<const iovec> local, std::span<const iovec> remote) {
    return transfer(false, local, remote);
}

bool process_memory::write(std::span<const iovec> local, std::span<const iovec> remote) {
    return transfer(true, local, remote);
}

bool process_memory::transfer(bool write, std::span<const iovec> local, std::span<const iovec> remote) {
    if (total_length(local) != total_length(remote)) return false;
    if (!_shared.empty() && transfer_shared(write, local, remote)) return true;
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
        if (_counters) _counters->dma_proc_mem_bytes += run;
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
