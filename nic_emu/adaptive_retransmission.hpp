// Adaptive retransmission: ConnectX's `roce_adp_retrans_en` (ROCE_ACCL register), opt-in with
// the topology's `nic: { adaptive-retransmission: enabled }`. The transport timer of an RC QP
// starts far below the QP's `timeout` and adapts, as NVIDIA documents the algorithm ("Adaptive
// Retransmission: Parameters Control"):
//
// - A timeout is time_base x 2^e, for an exponent e. The first is drawn per QP from the
//   profile's initial range, so that QPs do not all time out together; it is used once.
// - The profile's ranges (sorted, each [low, low + size] in exponents) say how timeouts grow:
//   each value of a range is used `retries` times, then doubled (e + 1) up to the range's top,
//   and then the next range begins at its low bound. After the initial timeout, the QP goes
//   on in the range holding it, else at the start range's low bound.
// - Forward progress (an acknowledgement or response that moves on) lowers e by the range's
//   `decrease` (0: back to the range's low bound), never below the first range.
// - A timeout never exceeds the QP's own (IBA 9.7.6.1.3's 4.096 us x 2^timeout), and the QP
//   fails with IBV_WC_RETRY_EXC_ERR only when nothing moved on for `timeout` x `retry_cnt`,
//   what the same QP without adaptive timeouts would have waited at most.
//
// NVIDIA publishes the algorithm and the firmware's limits (time base a power of two of at
// least 4 us, at most 4 ranges), not the values of its default profile; this NIC's profile
// is below, with a time base of 4.096 us, the unit of IBA's `timeout` field.
#pragma once

#include "dataplane/time.hpp"

#include <algorithm>
#include <array>
#include <cstdint>

namespace rocefab::nic {

struct adaptive_range {
    std::uint8_t low;      // the exponent the range starts at
    std::uint8_t size;     // it reaches low + size
    std::uint8_t retries;  // timeouts at each of its values before the next one
    std::uint8_t decrease; // the exponent's fall on forward progress; 0: back to `low`
};

struct adaptive_profile {
    sim_time time_base = 4096;                      // ns
    std::uint8_t initial_low = 3, initial_size = 2; // the first timeout: 2^3 or 2^4 x 4.096 us (33 or 66 us)
    std::array<adaptive_range, 3> ranges{{
        {3, 3, 2, 2},   // 33 us to 262 us, each twice: a loss the responder could not report
        {7, 3, 2, 2},   // 524 us to 4.2 ms: a peer or path that stalls
        {11, 20, 1, 2}, // 8.4 ms and up to the QP's own timeout
    }};
    std::uint8_t start_range = 0;
};

inline constexpr adaptive_profile default_adaptive_profile{};

// One QP's place in the profile.
struct adaptive_timeout {
    std::uint8_t exponent = 0;
    std::int8_t range = -1; // -1: still the initial timeout
    std::uint8_t uses = 0;  // timeouts at this exponent so far

    // A QP's first timeout: drawn from the initial range by its QP number, so the same QP
    // number gives the same timeouts on every run under virtual time.
    static adaptive_timeout initial(std::uint32_t qpn, const adaptive_profile& p = default_adaptive_profile) {
        std::uint32_t h = qpn * 0x9e3779b1u; // Fibonacci hashing: neighbouring QPNs spread
        h ^= h >> 16;
        return {static_cast<std::uint8_t>(p.initial_low + h % std::max<std::uint8_t>(p.initial_size, 1)), -1, 0};
    }

    // The timeout now, at most `qp_timeout` (the QP's own; 0 would mean none, not asked here).
    sim_time duration(sim_time qp_timeout, const adaptive_profile& p = default_adaptive_profile) const {
        const sim_time t = exponent >= 40 ? qp_timeout : p.time_base << exponent;
        return std::min(t, qp_timeout);
    }

    // The timer expired without progress: the next timeout's exponent.
    void timed_out(const adaptive_profile& p = default_adaptive_profile) {
        if (range < 0) {
            const int holding = range_holding(exponent, p);
            if (holding < 0) {
                range = static_cast<std::int8_t>(p.start_range);
                exponent = p.ranges[p.start_range].low;
                uses = 0;
                return;
            }
            range = static_cast<std::int8_t>(holding);
        }
        const adaptive_range& r = p.ranges[static_cast<std::size_t>(range)];
        if (++uses < r.retries) return;
        uses = 0;
        if (exponent < r.low + r.size)
            ++exponent;
        else if (static_cast<std::size_t>(range) + 1 < p.ranges.size())
            exponent = p.ranges[static_cast<std::size_t>(++range)].low;
    }

    // An acknowledgement or response moved the QP on.
    void progressed(const adaptive_profile& p = default_adaptive_profile) {
        if (range < 0) return; // the initial timeout has not expired: nothing to undo
        const adaptive_range& r = p.ranges[static_cast<std::size_t>(range)];
        const int lowered = r.decrease ? exponent - r.decrease : r.low;
        exponent = static_cast<std::uint8_t>(std::max<int>(lowered, p.ranges[0].low));
        // The range the exponent is in now, or the highest one below it.
        range = 0;
        for (std::size_t i = 0; i < p.ranges.size(); ++i)
            if (p.ranges[i].low <= exponent) range = static_cast<std::int8_t>(i);
        uses = 0;
    }

private:
    static int range_holding(std::uint8_t e, const adaptive_profile& p) {
        for (std::size_t i = 0; i < p.ranges.size(); ++i)
            if (e >= p.ranges[i].low && e <= p.ranges[i].low + p.ranges[i].size) return static_cast<int>(i);
        return -1;
    }
};

} // namespace rocefab::nic
