// The realtime driver's clock: TSC cycles since start, converted to sim_time nanoseconds.
// Only drivers read it; nodes get the time as an argument.
#pragma once

#include "dataplane/dpdk.hpp"
#include "dataplane/time.hpp"

#include <cstdint>

namespace rocefab {

class tsc_clock {
public:
    // Fixed point: a 128-bit multiply and a shift instead of a 128-bit division per reading
    // (a division costs tens of cycles on every loop iteration). 48 fractional bits keep the
    // relative error under 2^-46, i.e. well under a nanosecond per hour.
    static constexpr unsigned fraction_bits = 48;

    static constexpr std::uint64_t multiplier_for(std::uint64_t tsc_hz) {
        if (tsc_hz == 0) return 0;
        const unsigned __int128 scaled = static_cast<unsigned __int128>(1'000'000'000u) << fraction_bits;
        return static_cast<std::uint64_t>((scaled + tsc_hz / 2) / tsc_hz);
    }

    static constexpr sim_time cycles_to_ns(std::uint64_t cycles, std::uint64_t multiplier) {
        return static_cast<sim_time>((static_cast<unsigned __int128>(cycles) * multiplier) >> fraction_bits);
    }

    // Needs the EAL started (rte_get_tsc_hz() is calibrated by rte_eal_init).
    tsc_clock() : _multiplier(multiplier_for(rte_get_tsc_hz())) { restart(); }

    void restart() { _start = rte_rdtsc(); }

    // Nanoseconds since construction or the last restart(); monotonic on an invariant TSC.
    sim_time now() const { return cycles_to_ns(rte_rdtsc() - _start, _multiplier); }

private:
    std::uint64_t _multiplier;
    std::uint64_t _start = 0;
};

} // namespace rocefab
