// Another program's memory, reached through two descriptors that program opened on itself and
// passed to the daemon when it opened the device: /proc/self/mem (read and write) and
// /proc/self/maps. The kernel ties both to the program's address space as it was when they were
// opened, not to its pid: once the program execs or exits they reach nothing, and whatever
// process later gets the same pid, or runs in the same process after an exec (a setuid binary,
// say), is out of their reach. The program opened them with its own rights, so the daemon can
// never reach more than the program itself could. docs/security.md tells the whole model.
//
// Reads and writes go through the kernel's access to a foreign address space (the pages are
// faulted in as a debugger's would be): a page that is not mapped fails the access, which the
// NIC reports as the error completions and NAKs an unpinned (on-demand paging) MR gives.
//
// Registered pages the program moved onto a memfd of its own (verbs/shared_pages.hpp) are
// mapped here as well and copied with memcpy: no system call, no page walk, one copy instead of
// two. The program gave that memory away itself, so this reaches nothing it does not own either.
#pragma once

#include "nic_emu/address_space.hpp"

#include <memory>
#include <mutex>
#include <string>
#include <vector>
#include <sys/types.h>

namespace rocefab::nic {

class process_memory final : public address_space {
public:
    // Takes both descriptors (closing them on failure). Refuses, saying why in `why`, unless
    // they are procfs's mem file opened for reading and writing and maps file of process `pid`
    // (the peer the socket names).
    static std::unique_ptr<process_memory> adopt(int mem_fd, int maps_fd, pid_t pid, std::string& why);
    ~process_memory() override;

    bool read(std::span<const iovec> local, std::span<const iovec> remote) override;
    bool write(std::span<const iovec> local, std::span<const iovec> remote) override;

    // Registration's check, as pinning the pages would make it (ib_umem_get): every byte of
    // [address, address + length) mapped readable, and writable too when `writable`. 0 or
    // EFAULT. Any thread; it reads the program's maps, so it belongs on the control path.
    int check_range(std::uint64_t address, std::uint64_t length, bool writable) const;

    // A memfd mapped into the daemon: [address, address + length) of the program is `view`.
    struct shared_mapping {
        std::uint64_t address = 0;
        std::uint64_t length = 0;
        std::uint8_t* view = nullptr;
    };
    // Maps `fd` (taken, closed in any case) for [address, address + length) of the program, on
    // the control path. Refuses, saying why, unless it is a memfd sealed against shrinking and
    // at least `length` bytes long, `address` and `length` are page-aligned and the range lies
    // within [within, within + within_length) (the MR's): a file that could shrink would turn
    // the daemon's next access past its end into a SIGBUS.
    static bool map_shared(int fd, std::uint64_t address, std::uint64_t length, std::uint64_t within,
                           std::uint64_t within_length, shared_mapping& out, std::string& why);
    static void unmap_shared(const shared_mapping& m);
    // On the data-plane thread, where read() and write() run: from now on, until
    // remove_shared(`owner`), accesses within the range use the mapping, which this object then
    // owns (and unmaps on removal or destruction).
    void add_shared(const shared_mapping& m, std::uint32_t owner);
    void remove_shared(std::uint32_t owner);

private:
    process_memory(int mem_fd, int maps_fd) : _mem(mem_fd), _maps(maps_fd) {}
    bool transfer(bool write, std::span<const iovec> local, std::span<const iovec> remote);
    // One contiguous run of `run` bytes at address `start`, from or into `pieces`.
    ssize_t move_run(bool write, std::span<const iovec> pieces, std::size_t run, off_t start);
    static constexpr std::size_t staging_limit = 256 * 1024;
    // When every piece of `remote` lies in one shared mapping: copies with memcpy and returns
    // true. Otherwise copies nothing and returns false (the mem file then moves it all).
    bool transfer_shared(bool write, std::span<const iovec> local, std::span<const iovec> remote);
    std::uint8_t* shared_view(std::uint64_t address, std::size_t length) const;

    struct shared_segment {
        shared_mapping mapping;
        std::uint32_t owner;
    };
    std::vector<shared_segment> _shared; // by address
    // The first segment that starts above `address` (end() if none).
    std::vector<shared_segment>::const_iterator first_after(std::uint64_t address) const;

    int _mem;
    int _maps;
    mutable std::mutex _maps_lock; // reading maps moves the descriptor's offset
};

} // namespace rocefab::nic
