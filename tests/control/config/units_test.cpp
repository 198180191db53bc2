#include "control/config/units.hpp"

#include <gtest/gtest.h>

namespace rocefab::config {
namespace {

TEST(parse_speed, accepts_the_units_engineers_write) {
    EXPECT_EQ(parse_speed("100G"), 100'000'000'000u);
    EXPECT_EQ(parse_speed("25G"), 25'000'000'000u);
    EXPECT_EQ(parse_speed("100Gbps"), 100'000'000'000u);
    EXPECT_EQ(parse_speed("100M"), 100'000'000u);
    EXPECT_EQ(parse_speed("1G"), 1'000'000'000u);
    EXPECT_EQ(parse_speed("400G"), 400'000'000'000u);
    EXPECT_EQ(parse_speed("1.6T"), 1'600'000'000'000u);
    EXPECT_EQ(parse_speed("10Gb/s"), 10'000'000'000u);
}

TEST(parse_speed, keeps_fractions_exact) {
    EXPECT_EQ(parse_speed("2.5G"), 2'500'000'000u);
    EXPECT_EQ(parse_speed("0.1G"), 100'000'000u);
}

TEST(parse_speed, rejects_a_number_without_unit_and_garbage) {
    for (const char* text : {"100", "", "G", "100g", "100 G", "-1G", "1.G", ".5G", "100GB", "1e9", "100Kbps",
                             "99999999999999999999999999999999T"})
        EXPECT_FALSE(parse_speed(text)) << text;
}

TEST(parse_duration, accepts_ns_us_and_ms) {
    EXPECT_EQ(parse_duration("500ns"), 500);
    EXPECT_EQ(parse_duration("1us"), 1'000);
    EXPECT_EQ(parse_duration("1.5us"), 1'500);
    EXPECT_EQ(parse_duration("2ms"), 2'000'000);
    EXPECT_EQ(parse_duration("0ns"), 0);
    EXPECT_EQ(parse_duration("3\u00b5s"), 3'000);
}

TEST(parse_duration, rejects_fractional_nanoseconds_missing_units_and_seconds) {
    for (const char* text : {"1", "0.5ns", "1s", "1 us", "us", "-1us", "1.0.0us"})
        EXPECT_FALSE(parse_duration(text)) << text;
}

TEST(format_units, gives_the_shortest_exact_spelling_that_parses_back) {
    EXPECT_EQ(format_speed(100'000'000'000), "100G");
    EXPECT_EQ(format_speed(2'500'000'000), "2500M");
    EXPECT_EQ(format_speed(1'600'000'000'000), "1600G");
    EXPECT_EQ(format_duration(1'000), "1us");
    EXPECT_EQ(format_duration(1'500), "1500ns");
    EXPECT_EQ(format_duration(0), "0ns");
    EXPECT_EQ(format_duration(100'000'000), "100ms");
    for (std::uint64_t speed : {1'000'000ull, 25'000'000'000ull, 2'500'000'000ull})
        EXPECT_EQ(parse_speed(format_speed(speed)), speed);
}

} // namespace
} // namespace rocefab::config
