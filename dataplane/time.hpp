// Time on the data plane. Pure logic takes `sim_time` as an argument and never reads a clock:
// the realtime driver passes TSC-derived nanoseconds, the virtual-time driver its event time.
#pragma once

#include <cstdint>
#include <limits>

namespace rocefab {

using sim_time = std::int64_t; // nanoseconds since the driver started
inline constexpr sim_time never = std::numeric_limits<sim_time>::max();

inline constexpr sim_time nanoseconds(std::int64_t n) { return n; }
inline constexpr sim_time microseconds(std::int64_t n) { return n * 1'000; }
inline constexpr sim_time milliseconds(std::int64_t n) { return n * 1'000'000; }
inline constexpr sim_time seconds(std::int64_t n) { return n * 1'000'000'000; }

// Serialisation time of `bytes` at `bits_per_second`, rounded up to whole nanoseconds. Every
// frame a link or a shaped port sends asks it. Below 2^31 bytes the bit count times 10^9 fits 64
// bits, and a 64-bit division (its remainder comes with it) is one instruction where a 128-bit
// one is a call to __udivti3; above, the 128-bit form gives the same exact quotient.
inline constexpr sim_time serialization_time(std::uint64_t bytes, std::uint64_t bits_per_second) {
    if (bits_per_second == 0) return 0;
    constexpr std::uint64_t bit_nanoseconds = std::uint64_t{8} * 1'000'000'000; // a byte's, in bit-nanoseconds
    if (bytes < (std::uint64_t{1} << 31)) [[likely]] {
        const std::uint64_t product = bytes * bit_nanoseconds;
        return static_cast<sim_time>(product / bits_per_second + (product % bits_per_second != 0));
    }
    const unsigned __int128 bits = static_cast<unsigned __int128>(bytes) * bit_nanoseconds;
    return static_cast<sim_time>((bits + bits_per_second - 1) / bits_per_second);
}

} // namespace rocefab
