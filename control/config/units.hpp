// Link speeds and durations as network engineers write them ("25G", "100Gbps", "500ns", "1.5us").
// Shared by the topology loader and, later, the QoS configuration (PFC watchdog intervals and the like).
#pragma once

#include "dataplane/time.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace rocefab::config {

// "<number><unit>[bps]" with unit M, G or T (decimal, as on a transceiver: 1G = 10^9 bit/s); the number may
// have a fraction ("2.5G") as long as the result is a whole number of bits per second. No unit, no value:
// a bare "100" is ambiguous (Mb/s on Cumulus `link-speed`, Gb/s in casual speech), so it is rejected.
std::optional<std::uint64_t> parse_speed(std::string_view text);

// A size in bytes: a whole number ("150000"), or a number with a unit B, KB or MB (10^3, 10^6) or
// KiB or MiB (2^10, 2^20), as switch buffer sizes are quoted ("16MiB", "1.5MB").
std::optional<std::uint64_t> parse_bytes(std::string_view text);
// "<number><unit>" with unit ns, us (or µs) or ms; the result must be a whole number of nanoseconds.
std::optional<sim_time> parse_duration(std::string_view text);

// A probability as a fraction ("0.01", "1", "0") or a percentage ("1%", "0.5%"): digits with an optional
// fraction, no sign, no exponent. The value is returned as written, so the caller can range-check it against
// [0, 1] and say so; nullopt when the text is not such a number.
std::optional<double> parse_probability(std::string_view text);
// "1%", "0.5%", "0%", "100%": a percentage with up to 6 significant decimals, trailing zeros dropped.
std::string format_probability(double probability);

// The shortest exact spelling: 100000000000 -> "100G", 2500000000 -> "2500M", 1500 ns -> "1500ns", 1000 -> "1us".
std::string format_speed(std::uint64_t bits_per_second);
std::string format_duration(sim_time duration);

} // namespace rocefab::config
