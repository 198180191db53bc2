// The operator's log, through spdlog: one logger per component, each with its own level. What is
// logged is an event a person acts on (a program attached or was refused, a QP went to the error
// state, a PFC storm, a link went down, a fault of the daemon itself), never a packet: a packet
// is counted.
//
// Until start() runs every logger drops what it is given, so unit tests and `rocefab sim` stay
// quiet. The daemon calls start() once, before its threads run; from then on a message is
// formatted by the thread that logs it and written by a background thread, so the data-plane
// thread never waits for the log file (when the queue is full the oldest message goes).
#pragma once

#include <spdlog/spdlog.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace rocefab::log {

enum class component : std::uint8_t { daemon, attach, control, link, nic, switch_node };
inline constexpr std::size_t component_count = 6;
inline constexpr std::array<std::string_view, component_count> component_names = {"daemon", "attach", "control",
                                                                                  "link",   "nic",    "switch"};

spdlog::logger& of(component c);
inline spdlog::logger& daemon() { return of(component::daemon); }
inline spdlog::logger& attach() { return of(component::attach); }
inline spdlog::logger& control() { return of(component::control); }
inline spdlog::logger& link() { return of(component::link); }
inline spdlog::logger& nic() { return of(component::nic); }
inline spdlog::logger& switch_node() { return of(component::switch_node); }

struct levels {
    spdlog::level::level_enum all = spdlog::level::info;
    std::array<std::optional<spdlog::level::level_enum>, component_count> by_component{};

    spdlog::level::level_enum of(component c) const { return by_component[static_cast<std::size_t>(c)].value_or(all); }
};

// At most one line a second for an event a program can cause at will (a QP sent to the error
// state, a refused request, a connection over the limit), so that nobody fills the operator's
// disk through the daemon. Time is the caller's clock in nanoseconds (sim_time on the data
// plane, which reads no clock of its own).
class event_throttle {
public:
    static constexpr std::int64_t period = 1'000'000'000;
    // Whether to log the event at `now`; if so, `held_back` says how many were not logged since
    // the last line that was.
    bool admit(std::int64_t now, std::uint64_t& held_back) {
        if (now < _next) {
            ++_held_back;
            return false;
        }
        held_back = _held_back;
        _held_back = 0;
        _next = now + period;
        return true;
    }

private:
    std::int64_t _next = 0;
    std::uint64_t _held_back = 0;
};

// Reads "info" or "warn,nic=debug,attach=trace" into `out`, on top of what it holds. Returns ""
// or what is wrong, naming the valid levels and components.
std::string parse_levels(std::string_view text, levels& out);
inline constexpr std::string_view valid_levels = "trace, debug, info, warn, error, critical, off";

// Every component logs to `sink` at its level from now on. Not thread-safe: call it before the
// threads that log start.
void start(const levels& levels, const spdlog::sink_ptr& sink);
// Writes what is queued and goes back to dropping everything.
void stop();

} // namespace rocefab::log
