// Lets other threads (the control plane, the attach server) run closures on the data plane
// thread, which owns the nodes and links and so is the only one allowed to touch them.
// Posting is control path: it allocates and takes a mutex. The data plane checks one atomic
// flag per loop iteration and takes the lock only when something was posted.
#pragma once

#include "dataplane/log.hpp"
#include "dataplane/wakeup.hpp"

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <optional>
#include <thread>
#include <memory>
#include <mutex>
#include <type_traits>
#include <utility>

namespace rocefab {

class mailbox {
public:
    // Any thread. `fn` runs later on the data plane thread; it must not throw (an exception
    // is swallowed and counted in failed_closures(), so the data plane keeps running).
    void post(std::function<void()> fn) {
        {
            std::lock_guard lock(_mutex);
            _queue.push_back(std::move(fn));
            _pending.store(true, std::memory_order_release);
        }
        _wakeup.ring(); // a system call only when the data plane sleeps
    }

    // Any thread: runs `fn` on the data plane thread and returns its result, or rethrows its
    // exception. Blocks until the data plane runs it, so only while a driver is running. On
    // the data plane thread itself (a destructor that ends up there) `fn` runs at once: waiting
    // would wait for itself.
    template <typename Fn> auto call(Fn&& fn) -> std::invoke_result_t<std::decay_t<Fn>&> {
        using result = std::invoke_result_t<std::decay_t<Fn>&>;
        if (_drainer.load(std::memory_order_relaxed) == std::this_thread::get_id()) return fn();
        // std::function needs a copyable closure (so `fn` must be copyable too); the outcome
        // is shared for that reason.
        struct outcome {
            std::atomic<bool> done{false};
            std::conditional_t<std::is_void_v<result>, bool, std::optional<result>> value;
            std::exception_ptr error;
        };
        auto out = std::make_shared<outcome>();
        post([out, fn = std::forward<Fn>(fn)]() mutable {
            try {
                if constexpr (std::is_void_v<result>)
                    fn();
                else
                    out->value.emplace(fn());
            } catch (...) {
                out->error = std::current_exception();
            }
            out->done.store(true, std::memory_order_release);
            out->done.notify_one();
        });
        // An awake data plane runs the closure within an iteration, a microsecond or two: that
        // long is waited for without a system call (a futex sleep and wake-up cost tens of
        // microseconds on a VM, and a program bringing up thousands of QPs waits for each).
        const auto spin_until = std::chrono::steady_clock::now() + std::chrono::microseconds(30);
        while (!out->done.load(std::memory_order_acquire) && std::chrono::steady_clock::now() < spin_until) {}
        out->done.wait(false, std::memory_order_acquire);
        if (out->error) std::rethrow_exception(out->error);
        if constexpr (!std::is_void_v<result>) return std::move(*out->value);
    }

    // Any thread: cuts the data plane's idle sleep short (to see a stop flag sooner).
    void wake() { _wakeup.wake(); }

    // What the data plane sleeps on: programs' doorbells are added to it too (wakeup.hpp).
    wakeup& waker() { return _wakeup; }

    // Data plane thread, every iteration: lock-free when nothing is pending.
    bool has_pending() const { return _pending.load(std::memory_order_acquire); }

    // Data plane thread: runs what was posted so far, in posting order. Closures posted while
    // they run wait for the next call. Returns whether anything ran.
    bool run_pending() {
        if (!has_pending()) return false;
        _drainer.store(std::this_thread::get_id(), std::memory_order_relaxed);
        std::deque<std::function<void()>> batch;
        {
            std::lock_guard lock(_mutex);
            batch.swap(_queue);
            _pending.store(false, std::memory_order_relaxed);
        }
        for (auto& fn : batch) {
            try {
                fn();
            } catch (const std::exception& e) {
                _failed.fetch_add(1, std::memory_order_relaxed);
                log::daemon().error("a closure posted to the data plane failed: {}", e.what());
            } catch (...) {
                _failed.fetch_add(1, std::memory_order_relaxed);
                log::daemon().error("a closure posted to the data plane failed");
            }
        }
        return !batch.empty();
    }

    // Data plane thread, when idle: sleeps up to `max`, less if something is posted, wake() is
    // called or the doorbell rings (also if that happened since the last wait).
    void wait(std::chrono::nanoseconds max) {
        prepare_to_sleep();
        sleep(max);
    }

    // The same in two steps, so the caller can look for work between announcing the sleep and
    // sleeping (see wake_flag.hpp).
    void prepare_to_sleep() { _wakeup.prepare_to_sleep(); }
    void cancel_sleep() { _wakeup.cancel_sleep(); }
    void sleep(std::chrono::nanoseconds max) {
        if (has_pending()) {
            _wakeup.cancel_sleep();
            return;
        }
        _wakeup.sleep(max.count());
    }

    std::uint64_t failed_closures() const { return _failed.load(std::memory_order_relaxed); }

private:
    std::mutex _mutex;
    std::deque<std::function<void()>> _queue;
    wakeup _wakeup;
    std::atomic<bool> _pending{false};
    std::atomic<std::thread::id> _drainer{}; // the thread that runs the closures
    std::atomic<std::uint64_t> _failed{0};
};

} // namespace rocefab
