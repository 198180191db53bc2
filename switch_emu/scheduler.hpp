// Stage 6, scheduler: which traffic class of a port sends next. Strict priority for now
// (TC 7 first), behind the interface DWRR/ETS will implement: pick() chooses from the set of
// backlogged classes, sent() tells it what left so a deficit-based scheduler can charge it.
// Received PFC will mask paused classes out of `backlog` before pick() sees it.
#pragma once

#include <cstdint>
#include <optional>

namespace rocefab::switch_emu {

class strict_priority_scheduler {
public:
    // The class to serve among `backlog` (bit t: TC t has a frame); nullopt when none.
    std::optional<std::uint8_t> pick(std::uint16_t port, std::uint8_t backlog) const;
    // Strict priority keeps no state; DWRR subtracts `bytes` from the class's deficit here.
    void sent(std::uint16_t /*port*/, std::uint8_t /*tc*/, std::uint32_t /*bytes*/) {}
};

} // namespace rocefab::switch_emu
