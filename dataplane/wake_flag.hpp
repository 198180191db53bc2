// The word a sleeping data plane raises, and how a program that gave it work wakes it. The word
// lives in a page every program maps read-only (dataplane/wakeup.hpp owns it); each program
// wakes the data plane through a doorbell of its own, an eventfd, which it writes only when the
// word says the data plane sleeps: a busy fabric costs its programs no system call.
//
// The handshake is Dekker's: the program "publishes work; fence; reads `sleeping`", the data
// plane "sets `sleeping`; fence; looks for work". Either the program sees the sleeper, or the
// sleeper sees the work. Both fences are sequentially consistent.
#pragma once

#include <atomic>
#include <cstdint>
#include <unistd.h>

namespace rocefab {

struct wake_flag {
    std::atomic<std::uint32_t> sleeping{0};
};
static_assert(std::atomic<std::uint32_t>::is_always_lock_free);

// A program, after publishing work: wakes the data plane if it sleeps. `doorbell_fd` is the
// program's own eventfd.
inline void ring(const wake_flag& flag, int doorbell_fd) {
    std::atomic_thread_fence(std::memory_order_seq_cst);
    if (!flag.sleeping.load(std::memory_order_relaxed)) return;
    const std::uint64_t one = 1;
    [[maybe_unused]] const auto written = ::write(doorbell_fd, &one, sizeof one);
}

} // namespace rocefab
