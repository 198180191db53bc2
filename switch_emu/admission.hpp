// Stage 4, ingress admission: every queued frame is held in the switch's buffer until it leaves,
// accounted to the priority group (PG) of the port it came in on. A PG holds its reserved bytes
// first, then shared bytes up to a dynamic threshold (Spectrum's: alpha times the shared pool's
// free bytes, so the more the pool fills the less each PG may take), then:
//   - a lossy PG drops (tail drop);
//   - a lossless PG (a PFC priority) asks its neighbour to pause (XOFF) and takes what is still
//     in flight into its headroom. Headroom that overflows means the headroom is too small for
//     the cable and speed: a configuration error, counted as its own drop reason.
// A lossless PG resumes its neighbour (XON) once its headroom is empty and its shared bytes are
// two frames below the threshold. Lossy frames also meet the same dynamic threshold at their
// egress queue (egress_allows).
//
// Headroom per lossless PG of a port: the bytes that can still arrive after the switch decides to
// pause, an equivalent of NVIDIA's buffer formula:
//   2 x max frame (the frame the pause waits behind here, and the one the peer is sending)
//   + port speed x (2 x cable delay + the port's transmit FIFO + the peer's reaction time).
#pragma once

#include "switch_emu/counters.hpp"
#include "switch_emu/switch_spec.hpp"

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <vector>

namespace rocefab::switch_emu {

enum class buffer_pool : std::uint8_t { reserved, shared, headroom };

class shared_buffer {
public:
    explicit shared_buffer(const switch_spec& spec);

    enum class verdict : std::uint8_t { admitted, tail_drop, headroom_drop };
    // Admits `bytes` from `ingress` at switch priority `priority`, saying which pool holds them.
    // Keeps egress's buffer_bytes and buffer_peak_bytes gauges current. This and release() are
    // inline: every frame forwarded takes both.
    verdict admit(std::uint16_t ingress, std::uint8_t priority, std::uint32_t bytes, port_counters& egress,
                  buffer_pool& pool) {
        priority_group& g = group(ingress, priority);
        if (g.reserved + bytes <= _reserved_per_group) {
            g.reserved += bytes;
            _reserved_used += bytes;
            pool = buffer_pool::reserved;
        } else if (g.headroom == 0 && g.shared + bytes <= threshold() && _shared_used + bytes <= _shared_size) {
            g.shared += bytes;
            _shared_used += bytes;
            pool = buffer_pool::shared;
        } else if (lossless(priority)) {
            // Paused (or about to be): what still arrives goes to the headroom, in order behind
            // the rest, until the PG drains.
            if (g.headroom + bytes > _headroom[ingress]) return verdict::headroom_drop;
            g.headroom += bytes;
            _headroom_used += bytes;
            pool = buffer_pool::headroom;
        } else {
            return verdict::tail_drop;
        }
        const std::uint64_t held = egress[port_counter::buffer_bytes] + bytes;
        egress.set(port_counter::buffer_bytes, held);
        raise_watermarks(g, 0, held, egress);
        return verdict::admitted;
    }
    // Cut-through: a frame sent the moment it is admitted changes the buffer only to change it
    // back, so a run of such frames needs only these two calls, not admit() and release() each.
    // pass_through_limit(): the longest frame admit() would take now into the reserved or the
    // shared pool of a group with nothing in its headroom, and so without wanting a pause
    // (wants_pause()); 0 when the group has headroom in use.
    std::uint32_t pass_through_limit(std::uint16_t ingress, std::uint8_t priority) const {
        const priority_group& g = group(ingress, priority);
        if (g.headroom != 0) return 0;
        const std::uint64_t reserved = _reserved_per_group - std::min(_reserved_per_group, g.reserved);
        const std::uint64_t limit = threshold();
        const std::uint64_t shared = std::min(limit - std::min<std::uint64_t>(limit, g.shared),
                                              _shared_size - std::min(_shared_size, _shared_used));
        constexpr std::uint64_t most = std::numeric_limits<std::uint32_t>::max();
        return static_cast<std::uint32_t>(std::min(std::max(reserved, shared), most));
    }
    // What stays of admitting and releasing frames within that limit, `longest` the longest of
    // them: the watermarks they raised.
    void passed_through(std::uint16_t ingress, std::uint8_t priority, std::uint32_t longest, port_counters& egress) {
        raise_watermarks(group(ingress, priority), longest, egress[port_counter::buffer_bytes] + longest, egress);
    }
    // The longest frame of `priority` egress_allows() into a queue `queue_bytes` deep.
    std::uint64_t egress_limit(std::uint8_t priority, std::uint64_t queue_bytes) const {
        if (lossless(priority)) return std::numeric_limits<std::uint64_t>::max();
        const std::uint64_t limit = threshold();
        return limit - std::min(limit, queue_bytes);
    }
    // Returns what admit() took, when the frame leaves (or is dropped after admission).
    void release(std::uint16_t ingress, std::uint8_t priority, buffer_pool pool, std::uint32_t bytes,
                 port_counters& egress) {
        // Never below zero, even if a caller releases twice: a wrong gauge is a bug, a wrapped
        // one would also lock the buffer for good.
        priority_group& g = group(ingress, priority);
        auto take = [bytes](std::uint32_t& from, std::size_t& total) {
            const std::uint32_t n = std::min(from, bytes);
            from -= n;
            total -= std::min<std::size_t>(total, n);
        };
        switch (pool) {
        case buffer_pool::reserved: take(g.reserved, _reserved_used); break;
        case buffer_pool::shared: take(g.shared, _shared_used); break;
        case buffer_pool::headroom: take(g.headroom, _headroom_used); break;
        }
        const std::uint64_t held = egress[port_counter::buffer_bytes];
        egress.set(port_counter::buffer_bytes, held - std::min<std::uint64_t>(held, bytes));
    }

    // Egress admission: a lossy frame is also refused when its egress queue already holds its
    // dynamic threshold (alpha x free shared bytes), as Spectrum bounds each egress queue, so
    // one congested port cannot take the whole pool from the others. A lossless frame is never
    // refused at egress: its ingress PG pauses the sender instead.
    bool egress_allows(std::uint8_t priority, std::uint64_t queue_bytes, std::uint32_t bytes) const {
        return lossless(priority) || queue_bytes + bytes <= threshold();
    }

    // PFC: whether the lossless PG has reached its threshold (pause the neighbour), and whether
    // it has drained enough to let the neighbour resume.
    bool wants_pause(std::uint16_t ingress, std::uint8_t priority) const {
        return lossless(priority) && group(ingress, priority).headroom > 0;
    }
    bool allows_resume(std::uint16_t ingress, std::uint8_t priority) const {
        const priority_group& g = group(ingress, priority);
        return g.headroom == 0 && g.shared + _xon_margin <= threshold();
    }
    bool lossless(std::uint8_t priority) const { return _lossless & (1u << priority); }

    std::size_t size() const { return _shared_size; }
    std::size_t in_use() const { return _shared_used + _reserved_used + _headroom_used; }
    std::size_t peak() const { return _peak; }
    std::uint32_t headroom_of(std::uint16_t port) const { return _headroom[port]; }
    std::uint32_t headroom_used(std::uint16_t port, std::uint8_t priority) const {
        return group(port, priority).headroom;
    }
    // What a priority group holds now in all three pools, and the most it has held.
    std::uint32_t group_bytes(std::uint16_t port, std::uint8_t priority) const {
        const priority_group& g = group(port, priority);
        return g.reserved + g.shared + g.headroom;
    }
    std::uint32_t group_peak(std::uint16_t port, std::uint8_t priority) const { return group(port, priority).peak; }

private:
    struct priority_group {
        std::uint32_t reserved = 0, shared = 0, headroom = 0; // bytes held in each pool
        std::uint32_t peak = 0;                               // the most held at once
    };
    priority_group& group(std::uint16_t port, std::uint8_t priority) { return _groups[port * 8u + priority]; }
    const priority_group& group(std::uint16_t port, std::uint8_t priority) const {
        return _groups[port * 8u + priority];
    }
    // The watermarks (buffer, `g`, egress port) with `extra` bytes held beyond what the pools
    // count and `held` bytes on the egress port.
    void raise_watermarks(priority_group& g, std::uint32_t extra, std::uint64_t held, port_counters& egress) {
        _peak = std::max(_peak, in_use() + extra);
        g.peak = std::max(g.peak, g.reserved + g.shared + g.headroom + extra);
        if (held > egress[port_counter::buffer_peak_bytes]) egress.set(port_counter::buffer_peak_bytes, held);
    }
    // The most shared bytes a PG may hold now.
    std::uint64_t threshold() const {
        const std::size_t free = _shared_size - std::min(_shared_size, _shared_used);
        return static_cast<std::uint64_t>(_alpha * static_cast<double>(free));
    }

    std::size_t _shared_size;
    double _alpha;
    std::uint8_t _lossless;
    std::uint32_t _reserved_per_group;
    std::uint32_t _xon_margin;            // two frames
    std::vector<std::uint32_t> _headroom; // per port, for each lossless PG
    std::vector<priority_group> _groups;
    std::size_t _shared_used = 0, _reserved_used = 0, _headroom_used = 0, _peak = 0;
};

// The headroom a lossless PG of this port needs (see above).
std::uint32_t headroom_bytes(const port_spec& port, sim_time transmit_fifo, sim_time reaction);

} // namespace rocefab::switch_emu
