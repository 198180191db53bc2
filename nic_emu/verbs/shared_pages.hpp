// Registered memory the daemon can reach with a plain memory copy. A ConnectX reaches a
// registered page by DMA; the daemon otherwise reaches it through the program's /proc/self/mem
// (nic_emu/process_memory.hpp), which costs two kernel copies, a page walk and a system call per
// run of bytes: most of the data plane's time when the fabric moves bulk data. So, as
// ibv_reg_mr registers a range, the pages wholly inside it move onto a memfd: their contents are
// copied there and the memfd is mapped over them, at the same address with the same protection,
// and the memfd goes to the daemon with the registration, which maps it too.
//
// Only what the program owns privately and alone qualifies: anonymous, private, readable and
// writable pages (heap, mmap'd buffers), up to a size cap. Anything else (a file mapping, a
// stack, pages already on a memfd of an earlier registration, a range below one page) stays
// reached through /proc/self/mem, as does the partial page at each end of a range that does not
// start or end on a page boundary, which other objects may share.
//
// What changes for the program: after fork() the child shares these pages with the parent
// instead of getting copies (rdma-core's ibv_fork_init() would have hidden them from the child
// instead); and a write another thread makes to the range while ibv_reg_mr runs may be lost.
// ROCEFAB_SHARED_MR=0 in the environment turns the whole mechanism off.
#pragma once

#include <cstddef>
#include <cstdint>

namespace rocefab::verbs {

struct shared_pages {
    int fd = -1; // the memfd, mapped over [address, address + length); -1: nothing was moved
    std::uint64_t address = 0;
    std::uint64_t length = 0;
};

// Moves the whole pages of [address, address + length) onto a memfd when they qualify. Never
// fails the registration: when anything goes wrong before the pages moved, it returns fd -1 and
// the pages are as they were.
shared_pages share_pages(void* address, std::size_t length);

} // namespace rocefab::verbs
