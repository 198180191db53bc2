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
#pragma once

#include "nic_emu/address_space.hpp"

#include <memory>
#include <mutex>
#include <string>
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

private:
    process_memory(int mem_fd, int maps_fd) : _mem(mem_fd), _maps(maps_fd) {}
    bool transfer(bool write, std::span<const iovec> local, std::span<const iovec> remote);
    // One contiguous run of `run` bytes at address `start`, from or into `pieces`.
    ssize_t move_run(bool write, std::span<const iovec> pieces, std::size_t run, off_t start);
    static constexpr std::size_t staging_limit = 256 * 1024;

    int _mem;
    int _maps;
    mutable std::mutex _maps_lock; // reading maps moves the descriptor's offset
};

} // namespace rocefab::nic
