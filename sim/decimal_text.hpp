// Numbers as the simulator's CSVs write them, appended to a row without a format string or a
// temporary string: integers in decimal, and doubles as printf's "%.3f" writes them in the "C"
// locale. The recorder writes dozens of numbers a sample, every sample interval; through
// std::to_chars with a precision (a correctly rounded conversion of the double's exact value)
// they were 3 % of the simulation loop's instructions on the 16:1 incast.
#pragma once

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <string>

namespace rocefab::sim {

inline void append_decimal(std::string& out, std::uint64_t value) {
    char text[20];
    const auto result = std::to_chars(text, text + sizeof text, value);
    out.append(text, result.ptr);
}

// printf("%.3f", value): the double's exact value rounded to three decimals, ties to even.
// Text longer than 31 characters is cut there, as the 32-byte snprintf of the first recorder
// did (no value a sample holds is that long).
inline void append_fixed3(std::string& out, double value) {
    // The fast path, for what samples hold (times in microseconds, rates in Gb/s: non-negative,
    // below 2^32). scaled = value × 1000 is the exact product rounded to the nearest double, and
    // every halfway point k + 0.5 below 2^52 is a double, so rounding cannot carry the product
    // across one: the product rounds to the integer scaled rounds to, unless scaled landed on the
    // halfway point itself (the product may be on either side, or a tie to even). That case, and
    // the rest (negative, -0, huge, NaN, infinite), is left to std::to_chars.
    if (!std::signbit(value) && value < 0x1p32) {
        if (value == 0) { // most of a sample once flows have finished
            out.append("0.000");
            return;
        }
        const double scaled = value * 1000.0;
        const double whole = std::floor(scaled);
        const double fraction = scaled - whole; // exact below 2^52
        if (fraction != 0.5) {
            const auto thousandths = static_cast<std::uint64_t>(whole) + (fraction > 0.5 ? 1 : 0);
            char text[24]; // up to 4294967296.000
            char* end = std::to_chars(text, text + 20, thousandths / 1000).ptr;
            const auto decimals = static_cast<unsigned>(thousandths % 1000);
            end[0] = '.';
            end[1] = static_cast<char>('0' + decimals / 100);
            end[2] = static_cast<char>('0' + decimals / 10 % 10);
            end[3] = static_cast<char>('0' + decimals % 10);
            out.append(text, end + 4);
            return;
        }
    }
    char text[400]; // room for any double in fixed notation
    const auto [end, error] = std::to_chars(text, text + sizeof text, value, std::chars_format::fixed, 3);
    if (error != std::errc{}) return;
    out.append(text, std::min<std::size_t>(static_cast<std::size_t>(end - text), 31));
}

} // namespace rocefab::sim
