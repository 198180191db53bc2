#include "nic_emu/verbs/shared_pages.hpp"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

namespace rocefab::verbs {
namespace {

// Copying a range this large at registration would take long, and its untouched pages would
// become real ones; such a range stays on /proc/self/mem.
constexpr std::uint64_t max_shared_bytes = std::uint64_t{1} << 30;

bool enabled() {
    const char* v = std::getenv("ROCEFAB_SHARED_MR");
    return !v || std::strcmp(v, "0") != 0;
}

// Whether [start, end) is covered, without a gap, by private anonymous mappings the program can
// read and write: what /proc/self/maps shows as "rw-p 00000000 00:00 0" with no name, or [heap].
bool private_anonymous(std::uint64_t start, std::uint64_t end) {
    FILE* maps = std::fopen("/proc/self/maps", "re");
    if (!maps) return false;
    char line[512];
    std::uint64_t covered = start;
    while (covered < end && std::fgets(line, sizeof line, maps)) {
        unsigned long long from = 0, to = 0, offset = 0, inode = 0;
        char permissions[5] = {}, device[16] = {};
        int name_at = 0;
        if (std::sscanf(line, "%llx-%llx %4s %llx %15s %llu %n", &from, &to, permissions, &offset, device, &inode,
                        &name_at) < 6)
            break;
        if (to <= covered) continue;
        if (from > covered) break; // a gap
        const char* name = line + name_at;
        const bool anonymous =
            inode == 0 && (name[0] == '\n' || name[0] == '\0' || std::strncmp(name, "[heap]", 6) == 0);
        if (!anonymous || std::strcmp(permissions, "rw-p") != 0) break;
        covered = to;
    }
    std::fclose(maps);
    return covered >= end;
}

bool all_zero(const unsigned char* page, std::size_t size) {
    return page[0] == 0 && std::memcmp(page, page + 1, size - 1) == 0;
}

} // namespace

shared_pages share_pages(void* address, std::size_t length) {
    const auto page = static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
    const auto begin = reinterpret_cast<std::uint64_t>(address);
    if (!enabled() || length == 0 || begin + length < begin) return {};
    const std::uint64_t first = (begin + page - 1) / page * page;
    const std::uint64_t last = (begin + length) / page * page;
    if (last <= first || last - first > max_shared_bytes || !private_anonymous(first, last)) return {};
    const std::uint64_t size = last - first;

    const int fd = ::memfd_create("rocefab-mr", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    if (fd < 0) return {};
    // The daemon maps it too: sealed so that it can never shrink under the daemon's mapping,
    // where a read past its end would be a SIGBUS in the daemon (the daemon checks the seals).
    if (::ftruncate(fd, static_cast<off_t>(size)) != 0 ||
        ::fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0) {
        ::close(fd);
        return {};
    }
    void* view = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (view == MAP_FAILED) {
        ::close(fd);
        return {};
    }
    // Pages never written read as zeros and stay unallocated in the memfd: a large buffer the
    // program has touched only in part does not grow.
    auto* from = reinterpret_cast<const unsigned char*>(first);
    auto* to = static_cast<unsigned char*>(view);
    for (std::uint64_t at = 0; at < size; at += page)
        if (!all_zero(from + at, page)) std::memcpy(to + at, from + at, page);
    ::munmap(view, size);
    // Replaces the pages in one step; the range is never unmapped in between.
    void* placed = ::mmap(reinterpret_cast<void*>(first), size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd, 0);
    if (placed == MAP_FAILED) {
        ::close(fd);
        return {};
    }
    return {fd, first, size};
}

} // namespace rocefab::verbs
