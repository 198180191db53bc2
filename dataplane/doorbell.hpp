// How an idle data plane is woken: a futex word that may live in memory shared with other
// processes. The data plane announces that it is going to sleep (`sleeping`), checks once more
// for work, then waits on `sequence`; whoever gives it work (a mailbox post, or a program that
// rings a queue's doorbell through the verbs library) bumps `sequence` and wakes it, but only
// when it is asleep, so the fast path of a busy fabric makes no system call.
//
// The handshake is Dekker's: producer "publish work; fence; read sleeping", sleeper "set
// sleeping; fence; look for work". Either the producer sees the sleeper, or the sleeper sees
// the work. Both fences are sequentially consistent.
#pragma once

#include <atomic>
#include <cerrno>
#include <climits>
#include <cstdint>
#include <ctime>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace rocefab {

struct doorbell {
    std::atomic<std::uint32_t> sequence{0};
    std::atomic<std::uint32_t> sleeping{0};

    // Any thread or process, after publishing work.
    void ring() {
        std::atomic_thread_fence(std::memory_order_seq_cst);
        if (sleeping.load(std::memory_order_relaxed)) wake();
    }

    // Unconditional: control paths.
    void wake() {
        sequence.fetch_add(1, std::memory_order_seq_cst);
        // Not FUTEX_PRIVATE: the word may be in a MAP_SHARED page another process rings.
        syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(&sequence), FUTEX_WAKE, INT_MAX, nullptr, nullptr, 0);
    }

    // The sleeper: announce, then (after checking for work) wait.
    std::uint32_t prepare_to_sleep() {
        const std::uint32_t ticket = sequence.load(std::memory_order_acquire);
        sleeping.store(1, std::memory_order_seq_cst);
        std::atomic_thread_fence(std::memory_order_seq_cst);
        return ticket;
    }
    void cancel_sleep() { sleeping.store(0, std::memory_order_relaxed); }
    // Returns early when rung since prepare_to_sleep() returned `ticket`.
    void sleep(std::uint32_t ticket, std::int64_t nanoseconds) {
        timespec timeout{static_cast<time_t>(nanoseconds / 1'000'000'000), static_cast<long>(nanoseconds % 1'000'000'000)};
        syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(&sequence), FUTEX_WAIT, ticket, &timeout, nullptr, 0);
        sleeping.store(0, std::memory_order_relaxed);
    }
};
static_assert(std::atomic<std::uint32_t>::is_always_lock_free && sizeof(doorbell) == 8);

} // namespace rocefab
