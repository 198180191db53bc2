// The CSVs' numbers: append_fixed3 must write exactly what printf's "%.3f" (std::to_chars with
// precision 3) writes for every double, on its fast path and off it.
#include "sim/decimal_text.hpp"

#include <gtest/gtest.h>

#include <bit>
#include <cstdio>
#include <limits>
#include <random>

namespace rocefab::sim {
namespace {

std::string reference(double value) {
    char text[400];
    const auto [end, error] = std::to_chars(text, text + sizeof text, value, std::chars_format::fixed, 3);
    if (error != std::errc{}) return {};
    return {text, std::min<std::size_t>(static_cast<std::size_t>(end - text), 31)};
}

std::string fixed3(double value) {
    std::string text = "x,"; // appends, leaving what is there
    append_fixed3(text, value);
    return text.substr(2);
}

TEST(decimal_text, fixed3_is_printf_for_values_a_sample_holds) {
    std::mt19937_64 rng(20261203);
    for (int i = 0; i < 2'000'000; ++i) {
        // Every binade from 2^-20 to 2^40, with random mantissas: all of the fast path's range
        // and beyond its end.
        const int exponent = static_cast<int>(rng() % 61) - 20;
        const double value = std::ldexp(1.0 + static_cast<double>(rng() >> 11) * 0x1p-53, exponent);
        ASSERT_EQ(fixed3(value), reference(value)) << std::hexfloat << value;
    }
}

TEST(decimal_text, fixed3_is_printf_next_to_every_rounding_boundary) {
    // Halfway between two thousandths, and the doubles around it: where the double's own
    // rounding decides, the slow path must answer.
    std::mt19937_64 rng(7);
    for (int i = 0; i < 200'000; ++i) {
        const auto thousandths = rng() % 100'000'000'000ull;
        const double tie = (static_cast<double>(thousandths) + 0.5) / 1000.0;
        double value = tie;
        for (int step = 0; step < 8; ++step) value = std::nextafter(value, 0.0);
        for (int step = 0; step < 17; ++step, value = std::nextafter(value, 1e300))
            ASSERT_EQ(fixed3(value), reference(value)) << std::hexfloat << value;
    }
    // Exact ties (dyadic values whose thousandths end in 5): printf rounds them to even.
    for (const double value : {0.0625, 0.1875, 0.3125, 1.0625, 2.5625, 1023.9375, 0.0005, 0.0015})
        EXPECT_EQ(fixed3(value), reference(value)) << value;
    EXPECT_EQ(fixed3(0.0625), "0.062");
    EXPECT_EQ(fixed3(0.1875), "0.188");
}

TEST(decimal_text, fixed3_is_printf_off_the_fast_path) {
    constexpr double inf = std::numeric_limits<double>::infinity();
    for (const double value :
         {0.0, -0.0, -0.0004, -1.5, -123.4567, 0x1p32, 0x1p32 - 0x1p-20, 1e15, 1e300,
          std::numeric_limits<double>::denorm_min(), std::numeric_limits<double>::max(),
          -std::numeric_limits<double>::max(), inf, -inf, std::numeric_limits<double>::quiet_NaN()})
        EXPECT_EQ(fixed3(value), reference(value)) << value;
    EXPECT_EQ(fixed3(-0.0), "-0.000");
    EXPECT_EQ(fixed3(1e300).size(), 31u); // cut as the recorder's first snprintf cut it
    EXPECT_EQ(fixed3(12.3456), "12.346");
    EXPECT_EQ(fixed3(99.9996), "100.000");
}

TEST(decimal_text, decimal_appends_the_integer) {
    std::string text = "a";
    append_decimal(text, 0);
    append_decimal(text, 18446744073709551615ull);
    EXPECT_EQ(text, "a018446744073709551615");
}

} // namespace
} // namespace rocefab::sim
