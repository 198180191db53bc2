// Adaptive retransmission: ConnectX's `roce_adp_retrans_en` (ROCE_ACCL register), opt-in with
// the topology's `nic: { adaptive-retransmission: enabled }`. The transport timer of an RC QP
// starts far below the QP's `timeout` and adapts, as NVIDIA documents the algorithm ("Adaptive
// Retransmission: Parameters Control"):
//
// - A timeout is time_base x 2^e, for an exponent e. The first is drawn per QP from the
//   profile's initial range, so that QPs do not all time out together.
// - The profile's ranges (sorted, each [low, low + size] in exponents) say how timeouts grow:
//   each value of a range is used `retries` times, then doubled (e + 1) up to the range's top,
//   and then the next range begins at its low bound. When the initial timeout expires, the QP
//   goes on in the range holding it (the expiry counting as one use of that value), else at
//   the start range's low bound.
// - Forward progress (an acknowledgement or response that moves on) lowers e by the range's
//   `decrease` (0: back to the range's low bound), never below the first range.
// - A timeout never exceeds the QP's own (IBA 9.7.6.1.3's 4.096 us x 2^timeout), and the QP
//   fails with IBV_WC_RETRY_EXC_ERR only when nothing moved on for `timeout` x `retry_cnt`,
//   what the same QP without adaptive timeouts would have waited at most.
//
// NVIDIA publishes the algorithm and the firmware's limits (time base a power of two of at
// least 4 us, at most 4 ranges), not the values of its default profile; this NIC's default
// is below, with a time base of 4.096 us, the unit of IBA's `timeout` field. A topology may
// give its own, as `mlxreg` sets one on a ConnectX.
#pragma once

#include "dataplane/time.hpp"

#include <algorithm>
#include <array>
#include <cstdint>
#include <span>

namespace rocefab::nic {

struct adaptive_range {
    std::uint8_t low;      // the exponent the range starts at
    std::uint8_t size;     // it reaches low + size
    std::uint8_t retries;  // timeouts at each of its values before the next one
    std::uint8_t decrease; // the exponent's fall on forward progress; 0: back to `low`
};

// ConnectX's firmware takes at most 4 ranges a profile (adp_retx_profile_max_range_num).
inline constexpr std::size_t max_adaptive_ranges = 4;

// A profile (ROCE_ACCL's adp_retx_profile), the topology's `adaptive-retransmission:` mapping;
// control/config/sections/nic.cpp checks what the firmware checks.
struct adaptive_profile {
    sim_time time_base = 4096;                      // ns: a power of two, at least 4 us
    std::uint8_t initial_low = 3, initial_size = 2; // the first timeout: 2^3 or 2^4 x 4.096 us (33 or 66 us)
    std::array<adaptive_range, max_adaptive_ranges> ranges{{
        {3, 3, 2, 2},   // 33 us to 262 us, each twice: a loss the responder could not report
        {7, 3, 2, 2},   // 524 us to 4.2 ms: a peer or path that stalls
        {11, 20, 1, 2}, // 8.4 ms and up to the QP's own timeout
    }};
    std::uint8_t range_count = 3;
    std::uint8_t start_range = 0;

    std::span<const adaptive_range> used_ranges() const { return {ranges.data(), range_count}; }
};

// One QP's place in its NIC's profile.
struct adaptive_timeout {
    std::uint8_t exponent = 0;
    std::int8_t range = -1; // -1: still the initial timeout
    std::uint8_t uses = 0;  // timeouts at this exponent so far

    // A QP's first timeout: drawn from the initial range by its QP number, so the same QP
    // number gives the same timeouts on every run under virtual time.
    static adaptive_timeout initial(std::uint32_t qpn, const adaptive_profile& p) {
        std::uint32_t h = qpn * 0x9e3779b1u; // Fibonacci hashing: neighbouring QPNs spread
        h ^= h >> 16;
        return {static_cast<std::uint8_t>(p.initial_low + h % std::max<std::uint8_t>(p.initial_size, 1)), -1, 0};
    }

    // The timeout now, at most `qp_timeout` (the QP's own; 0 would mean none, not asked here).
    sim_time duration(sim_time qp_timeout, const adaptive_profile& p) const {
        const sim_time t = exponent >= 40 ? qp_timeout : p.time_base << exponent;
        return std::min(t, qp_timeout);
    }

    // The timer expired without progress: the next timeout's exponent.
    void timed_out(const adaptive_profile& p) {
        const std::span<const adaptive_range> ranges = p.used_ranges();
        if (range < 0) {
            const int holding = range_holding(exponent, ranges);
            if (holding < 0) {
                range = static_cast<std::int8_t>(p.start_range);
                exponent = ranges[p.start_range].low;
                uses = 0;
                return;
            }
            range = static_cast<std::int8_t>(holding);
        }
        const adaptive_range& r = ranges[static_cast<std::size_t>(range)];
        if (++uses < r.retries) return;
        uses = 0;
        if (exponent < r.low + r.size)
            ++exponent;
        else if (static_cast<std::size_t>(range) + 1 < ranges.size())
            exponent = ranges[static_cast<std::size_t>(++range)].low;
    }

    // An acknowledgement or response moved the QP on.
    void progressed(const adaptive_profile& p) {
        if (range < 0) return; // the initial timeout has not expired: nothing to undo
        const std::span<const adaptive_range> ranges = p.used_ranges();
        const adaptive_range& r = ranges[static_cast<std::size_t>(range)];
        const int lowered = r.decrease ? exponent - r.decrease : r.low;
        exponent = static_cast<std::uint8_t>(std::max<int>(lowered, ranges[0].low));
        // The range the exponent is in now, or the highest one below it.
        range = 0;
        for (std::size_t i = 0; i < ranges.size(); ++i)
            if (ranges[i].low <= exponent) range = static_cast<std::int8_t>(i);
        uses = 0;
    }

private:
    static int range_holding(std::uint8_t e, std::span<const adaptive_range> ranges) {
        for (std::size_t i = 0; i < ranges.size(); ++i)
            if (e >= ranges[i].low && e <= ranges[i].low + ranges[i].size) return static_cast<int>(i);
        return -1;
    }
};

} // namespace rocefab::nic
