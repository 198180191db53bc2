// Stage 6, scheduler: which traffic class of a port sends next, as Spectrum's ETS (802.1Qaz)
// does it. Strict classes go first, the highest first; the DWRR classes then share what is
// left in proportion to their bandwidth percentages, by deficit round robin over bytes; classes
// with no share (0 %) send only when no other class has a frame. pick() chooses among the
// backlogged classes, sent() charges what left. Received PFC will mask paused classes out of
// `backlog` before pick() sees it.
#pragma once

#include "switch_emu/switch_spec.hpp"

#include <array>
#include <bit>
#include <cstdint>
#include <optional>
#include <vector>

namespace rocefab::switch_emu {

class ets_scheduler {
public:
    ets_scheduler(const ets_spec& spec, std::uint16_t port_count);

    // The class to serve among `backlog` (bit t: TC t has a frame); nullopt when none. Inline
    // up to the common case, a class whose turn it is and whose deficit lasts.
    std::optional<std::uint8_t> pick(std::uint16_t port, std::uint8_t backlog) {
        if (backlog == 0) return std::nullopt;
        if (const std::uint8_t strict = backlog & _strict) return highest(strict);
        const std::uint8_t weighted = backlog & _weighted;
        if (weighted == 0) return highest(backlog); // only classes without a share have frames
        if (keeps_turn(_ports[port], weighted)) return _ports[port].current;
        return pick_weighted(_ports[port], weighted);
    }
    // `bytes` of class `tc` left `port`: a DWRR class's deficit pays for them.
    void sent(std::uint16_t port, std::uint8_t tc, std::uint32_t bytes) {
        if (_weighted & (1u << tc)) _ports[port].deficit[tc] -= bytes;
    }
    // pick() with only `tc` backlogged, which picks `tc`, then sent(): what a frame of the only
    // class with frames does to the scheduler (cut-through). Only a DWRR class has state to move.
    void sent_alone(std::uint16_t port, std::uint8_t tc, std::uint32_t bytes) { lone_run(*this, port, tc).sent(bytes); }

private:
    struct port_state {
        std::array<std::int64_t, traffic_class_count> deficit{};
        std::uint8_t current = 0;       // the DWRR class whose turn it is
        std::uint8_t last_weighted = 0; // the backlogged DWRR classes at the last pick
    };

public:
    // sent_alone() for each frame of a run of frames of one class, in order (cut-through; a run
    // of one is sent_alone() itself). Made for a run of at least one frame, it takes the turn
    // the run's first frame takes, which only it can move (whose turn it is, the backlog DWRR
    // last saw); after that, while frames of one class pass alone, only its deficit moves.
    class lone_run {
    public:
        lone_run(ets_scheduler& scheduler, std::uint16_t port, std::uint8_t tc) {
            if (!(scheduler._weighted & (1u << tc))) return; // strict, or without a share: no state
            port_state& state = scheduler._ports[port];
            const auto only = static_cast<std::uint8_t>(1u << tc);
            if (!keeps_turn(state, only)) scheduler.pick_weighted(state, only);
            _deficit = &state.deficit[tc];
            _quantum = scheduler._quantum[tc];
        }
        void sent(std::uint32_t bytes) {
            if (!_deficit) return;
            // What pick_weighted() does once the deficit is spent: the turn goes round the
            // classes, of which only this one is backlogged, and comes back to it with one more
            // quantum, as many times as its debt takes.
            if (*_deficit <= 0) [[unlikely]] {
                do *_deficit += _quantum;
                while (*_deficit <= 0);
            }
            *_deficit -= bytes;
        }

    private:
        std::int64_t* _deficit = nullptr;
        std::int64_t _quantum = 0;
    };

    // Bytes a DWRR class may send per round for each percent of share: 50 % sends 12 800 B a
    // round, more than one 9 KiB jumbo frame, so every round moves every class.
    static constexpr std::int64_t quantum_per_percent = 256;

private:
    static std::uint8_t highest(std::uint8_t classes) {
        return static_cast<std::uint8_t>(7 - std::countl_zero(classes));
    }
    // Whether DWRR among `weighted` stays with the class whose turn it is, changing nothing:
    // the same classes are backlogged as at the last pick, and its deficit lasts.
    static bool keeps_turn(const port_state& s, std::uint8_t weighted) {
        return weighted == s.last_weighted && (weighted & (1u << s.current)) && s.deficit[s.current] > 0;
    }
    // DWRR among `weighted`, the backlogged classes with a share.
    std::uint8_t pick_weighted(port_state& s, std::uint8_t weighted);
    std::uint8_t _strict = 0;   // bit t: TC t is strict
    std::uint8_t _weighted = 0; // bit t: TC t is DWRR with a share
    std::array<std::int64_t, traffic_class_count> _quantum{};
    std::vector<port_state> _ports;
};

} // namespace rocefab::switch_emu
