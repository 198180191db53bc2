// At most one log line a second for an event a client can cause at will (a refused connection,
// a refused request), so that nobody can fill the operator's disk through the daemon. The lines
// held back are counted in the next one that goes out.
#pragma once

#include <spdlog/spdlog.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <utility>

namespace rocefab::control {

class throttled_log {
public:
    template <typename... Args>
    void log(spdlog::logger& logger, spdlog::level::level_enum level, spdlog::format_string_t<Args...> format,
             Args&&... args) {
        if (!logger.should_log(level)) return;
        const auto now = std::chrono::steady_clock::now();
        if (now - _last < std::chrono::seconds(1)) {
            ++_held_back;
            return;
        }
        std::string line = fmt::format(format, std::forward<Args>(args)...);
        if (_held_back) line += fmt::format(" ({} more like it in the last second not logged)", _held_back);
        logger.log(level, line);
        _last = now;
        _held_back = 0;
    }

private:
    std::chrono::steady_clock::time_point _last{};
    std::uint64_t _held_back = 0;
};

} // namespace rocefab::control
