// Lets other threads (the control plane, the attach server) run closures on the data plane
// thread, which owns the nodes and links and so is the only one allowed to touch them.
// Posting is control path: it allocates and takes a mutex. The data plane checks one atomic
// flag per loop iteration and takes the lock only when something was posted.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <future>
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
        _wakeup.notify_one();
    }

    // Any thread but the data plane's own (it would wait for itself): runs `fn` on the data
    // plane thread and returns its result, or rethrows its exception. Blocks until the data
    // plane runs it, so only while a driver is running.
    template <typename Fn>
    auto call(Fn&& fn) -> std::invoke_result_t<std::decay_t<Fn>&> {
        using result = std::invoke_result_t<std::decay_t<Fn>&>;
        // std::function needs a copyable closure (so `fn` must be copyable too); the promise
        // is shared for that reason.
        auto promise = std::make_shared<std::promise<result>>();
        std::future<result> future = promise->get_future();
        post([promise, fn = std::forward<Fn>(fn)]() mutable {
            try {
                if constexpr (std::is_void_v<result>) {
                    fn();
                    promise->set_value();
                } else {
                    promise->set_value(fn());
                }
            } catch (...) {
                promise->set_exception(std::current_exception());
            }
        });
        return future.get();
    }

    // Any thread: cuts the data plane's idle sleep short (to see a stop flag sooner).
    void wake() {
        {
            std::lock_guard lock(_mutex);
            _woken = true;
        }
        _wakeup.notify_one();
    }

    // Data plane thread, every iteration: lock-free when nothing is pending.
    bool has_pending() const { return _pending.load(std::memory_order_acquire); }

    // Data plane thread: runs what was posted so far, in posting order. Closures posted while
    // they run wait for the next call. Returns whether anything ran.
    bool run_pending() {
        if (!has_pending()) return false;
        std::deque<std::function<void()>> batch;
        {
            std::lock_guard lock(_mutex);
            batch.swap(_queue);
            _pending.store(false, std::memory_order_relaxed);
        }
        for (auto& fn : batch) {
            try {
                fn();
            } catch (...) {
                _failed.fetch_add(1, std::memory_order_relaxed);
            }
        }
        return !batch.empty();
    }

    // Data plane thread, when idle: sleeps up to `max`, less if something is posted or wake()
    // is called (also if that happened since the last wait).
    void wait(std::chrono::nanoseconds max) {
        std::unique_lock lock(_mutex);
        _wakeup.wait_for(lock, max, [&] { return _woken || !_queue.empty(); });
        _woken = false;
    }

    std::uint64_t failed_closures() const { return _failed.load(std::memory_order_relaxed); }

private:
    std::mutex _mutex;
    std::condition_variable _wakeup;
    std::deque<std::function<void()>> _queue;
    bool _woken = false;
    std::atomic<bool> _pending{false};
    std::atomic<std::uint64_t> _failed{0};
};

} // namespace rocefab
