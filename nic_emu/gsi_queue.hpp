// The NIC's GSI (QP1, IBA 13.5.2): MADs that arrive for QP1 wait here for the daemon's
// connection manager, which runs on the control plane. One producer (the data plane, in
// nic_node::receive) and one consumer (the CM's io thread): a fixed ring of fixed slots with
// acquire/release indices, so the data plane never blocks, allocates or logs for a MAD. A full
// ring drops the MAD and counts it (gsi_rx_dropped), as a GSI QP with no receive WQE would.
#pragma once

#include "dataplane/wire/ip.hpp"

#include <array>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <sys/eventfd.h>
#include <unistd.h>
#include <vector>

namespace rocefab::nic {

// A MAD is 256 bytes (IBA 13.4.2): the UD payload of a GSI packet.
inline constexpr std::size_t mad_size = 256;
// IBA 13.5.2 / RoCE: the GSI's well-known Q_Key.
inline constexpr std::uint32_t gsi_qkey = 0x80010000;
inline constexpr std::uint32_t gsi_qpn = 1;

struct gsi_datagram {
    wire::ipv6_address source_gid, destination_gid;
    std::uint32_t source_qpn = 0;
    std::uint32_t qkey = 0;
    std::uint16_t pkey = 0xffff;
    std::array<std::uint8_t, mad_size> mad{};
};

class gsi_queue {
public:
    static constexpr std::uint32_t slots = 256; // a power of two

    gsi_queue() : _notify(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) {}
    ~gsi_queue() {
        if (_notify >= 0) ::close(_notify);
    }
    gsi_queue(const gsi_queue&) = delete;
    gsi_queue& operator=(const gsi_queue&) = delete;

    // Data plane. False when the ring is full (the caller counts the drop). The eventfd write
    // never blocks (EFD_NONBLOCK; a counter at its maximum just stays readable).
    bool push(const gsi_datagram& d) {
        const std::uint32_t head = _head.load(std::memory_order_relaxed);
        if (head - _tail.load(std::memory_order_acquire) >= slots) return false;
        _ring[head & (slots - 1)] = d;
        _head.store(head + 1, std::memory_order_release);
        if (_notify >= 0) {
            const std::uint64_t one = 1;
            [[maybe_unused]] const auto written = ::write(_notify, &one, sizeof one);
        }
        return true;
    }

    // Consumer (one thread). False when empty.
    bool pop(gsi_datagram& out) {
        const std::uint32_t tail = _tail.load(std::memory_order_relaxed);
        if (tail == _head.load(std::memory_order_acquire)) return false;
        out = _ring[tail & (slots - 1)];
        _tail.store(tail + 1, std::memory_order_release);
        return true;
    }

    // Readable while MADs may wait; the consumer reads it to clear, then pops until empty.
    int notify_fd() const { return _notify; }
    void clear_notification() {
        std::uint64_t value;
        [[maybe_unused]] const auto got = ::read(_notify, &value, sizeof value);
    }

private:
    // The indices on cache lines of their own (padding, not alignas: the queue is heap-allocated
    // with the NIC and needs no over-aligned allocation).
    std::atomic<std::uint32_t> _head{0};
    char _pad_head[60];
    std::atomic<std::uint32_t> _tail{0};
    char _pad_tail[60];
    int _notify;
    std::vector<gsi_datagram> _ring = std::vector<gsi_datagram>(slots);
};

} // namespace rocefab::nic
