#include "switch_emu/scheduler.hpp"

#include <bit>

namespace rocefab::switch_emu {

std::optional<std::uint8_t> strict_priority_scheduler::pick(std::uint16_t /*port*/, std::uint8_t backlog) const {
    if (backlog == 0) return std::nullopt;
    // Highest set bit = highest traffic class with a frame.
    return static_cast<std::uint8_t>(7 - std::countl_zero(backlog));
}

} // namespace rocefab::switch_emu
