#include "control/config/units.hpp"

#include <array>
#include <cstdio>
#include <utility>

namespace rocefab::config {
namespace {

// Splits "2.5G" into the exact rational 25/10 and the rest ("G"). Done by hand rather than with strtod so
// that "0.1G" is exactly 100M and not 99999999.99.
struct decimal {
    unsigned __int128 mantissa = 0;
    unsigned __int128 scale = 1;
};

std::optional<std::pair<decimal, std::string_view>> split_number(std::string_view text) {
    decimal value;
    std::size_t i = 0;
    bool digits = false, point = false;
    for (; i < text.size(); ++i) {
        const char c = text[i];
        if (c >= '0' && c <= '9') {
            digits = true;
            value.mantissa = value.mantissa * 10 + static_cast<unsigned>(c - '0');
            if (point) value.scale *= 10;
            // 30 significant digits are far beyond any real value; stop before the 128-bit product can wrap.
            if (value.mantissa > static_cast<unsigned __int128>(1) << 100 ||
                value.scale > static_cast<unsigned __int128>(1) << 100)
                return std::nullopt;
        } else if (c == '.' && !point && digits) { // ".5G" is refused: a leading digit is required
            point = true;
        } else {
            break;
        }
    }
    if (!digits || (point && text[i - 1] == '.')) return std::nullopt;
    return std::pair{value, text.substr(i)};
}

std::optional<std::uint64_t> scaled(const decimal& value, std::uint64_t multiplier) {
    const unsigned __int128 product = value.mantissa * multiplier;
    if (product % value.scale != 0) return std::nullopt;
    const unsigned __int128 result = product / value.scale;
    if (result > static_cast<unsigned __int128>(INT64_MAX)) return std::nullopt;
    return static_cast<std::uint64_t>(result);
}

template <std::size_t N>
std::optional<std::uint64_t> with_unit(std::string_view text,
                                       const std::array<std::pair<std::string_view, std::uint64_t>, N>& units) {
    const auto split = split_number(text);
    if (!split) return std::nullopt;
    for (const auto& [unit, multiplier] : units)
        if (split->second == unit) return scaled(split->first, multiplier);
    return std::nullopt;
}

} // namespace

std::optional<std::uint64_t> parse_speed(std::string_view text) {
    static constexpr std::array<std::pair<std::string_view, std::uint64_t>, 9> units{{
        {"M", 1'000'000},
        {"G", 1'000'000'000},
        {"T", 1'000'000'000'000},
        {"Mbps", 1'000'000},
        {"Gbps", 1'000'000'000},
        {"Tbps", 1'000'000'000'000},
        {"Mb/s", 1'000'000},
        {"Gb/s", 1'000'000'000},
        {"Tb/s", 1'000'000'000'000},
    }};
    return with_unit(text, units);
}

std::optional<std::uint64_t> parse_bytes(std::string_view text) {
    static constexpr std::array<std::pair<std::string_view, std::uint64_t>, 6> units{{
        {"", 1},
        {"B", 1},
        {"KB", 1'000},
        {"MB", 1'000'000},
        {"KiB", 1u << 10},
        {"MiB", 1u << 20},
    }};
    return with_unit(text, units);
}

std::optional<sim_time> parse_duration(std::string_view text) {
    static constexpr std::array<std::pair<std::string_view, std::uint64_t>, 4> units{{
        {"ns", 1},
        {"us", 1'000},
        {"\u00b5s", 1'000},
        {"ms", 1'000'000},
    }};
    const auto value = with_unit(text, units);
    if (!value) return std::nullopt;
    return static_cast<sim_time>(*value);
}

std::optional<double> parse_probability(std::string_view text) {
    const auto split = split_number(text);
    if (!split || (!split->second.empty() && split->second != "%")) return std::nullopt;
    const double value = static_cast<double>(split->first.mantissa) / static_cast<double>(split->first.scale);
    return split->second == "%" ? value / 100.0 : value;
}

std::string format_probability(double probability) {
    char text[64];
    std::snprintf(text, sizeof text, "%.6g%%", probability * 100.0);
    return text;
}

std::string format_speed(std::uint64_t bits_per_second) {
    if (bits_per_second != 0) {
        if (bits_per_second % 1'000'000'000'000 == 0) return std::to_string(bits_per_second / 1'000'000'000'000) + "T";
        if (bits_per_second % 1'000'000'000 == 0) return std::to_string(bits_per_second / 1'000'000'000) + "G";
        if (bits_per_second % 1'000'000 == 0) return std::to_string(bits_per_second / 1'000'000) + "M";
    }
    return std::to_string(bits_per_second) + "bps";
}

std::string format_duration(sim_time duration) {
    if (duration != 0) {
        if (duration % 1'000'000 == 0) return std::to_string(duration / 1'000'000) + "ms";
        if (duration % 1'000 == 0) return std::to_string(duration / 1'000) + "us";
    }
    return std::to_string(duration) + "ns";
}

} // namespace rocefab::config
