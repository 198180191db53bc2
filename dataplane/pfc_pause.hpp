// What a port does with the PFC frames it receives (IEEE 802.1Qbb): one pause timer per priority,
// each set to the frame's quanta at the link's speed (a quantum is 512 bit times) and replaced by
// the next frame for that priority; quanta 0 (XON) ends the pause at once. Switch ports and NICs
// both keep these timers, and count the frames and the time paused under `ethtool -S`'s
// rx_prioN_pause and rx_prioN_pause_duration (microseconds, up to the latest frame).
#pragma once

#include "dataplane/time.hpp"
#include "dataplane/wire/pfc.hpp"

#include <algorithm>
#include <array>
#include <cstdint>

namespace rocefab {

class pause_timers {
public:
    using per_priority = std::array<std::uint64_t, wire::pfc_priority_count>;

    void on_frame(std::uint8_t enable_vector, const std::array<std::uint16_t, 8>& quanta, std::uint64_t bits_per_second,
                  sim_time now, per_priority& frames, per_priority& duration_us) {
        for (unsigned p = 0; p < wire::pfc_priority_count; ++p) {
            if (!(enable_vector & (1u << p))) continue;
            ++frames[p];
            // Account the pause so far (to its end, or now if it still runs); this frame restarts it.
            const sim_time end = std::min(_until[p], now);
            if (end > _since[p]) duration_us[p] += static_cast<std::uint64_t>(end - _since[p]) / 1000;
            _since[p] = now;
            _until[p] = now + wire::pause_quanta_to_time(quanta[p], bits_per_second);
        }
    }
    // When priority p may send again; <= now when it is not paused.
    sim_time until(unsigned p) const { return _until[p]; }

private:
    std::array<sim_time, wire::pfc_priority_count> _since{}, _until{};
};

// The PFC a port sends for its own receive side: per priority, whether it is pausing its
// neighbour (XOFF with the most quanta), since when, and when the XOFF must go again, at half
// its quanta so the neighbour never resumes on its own while the pause is wanted. Switch ports
// and NICs both keep one, counting tx_prioN_pause (XOFF, refresh and XON frames) and
// tx_prioN_pause_duration (microseconds, of pauses that have ended).
class pause_sender {
public:
    using per_priority = pause_timers::per_priority;
    static constexpr std::uint16_t xoff_quanta = 0xffff;

    explicit pause_sender(std::uint64_t bits_per_second)
        : _refresh_interval(std::max<sim_time>(1, wire::pause_quanta_to_time(xoff_quanta, bits_per_second) / 2)) {
        _since.fill(never);
        _refresh_at.fill(never);
    }

    bool pausing(unsigned p) const { return _since[p] != never; }
    // True when an XOFF for p must be sent now: p was not paused yet.
    bool start(unsigned p, sim_time now, per_priority& frames) {
        if (pausing(p)) return false;
        _since[p] = now;
        _refresh_at[p] = now + _refresh_interval;
        ++frames[p];
        return true;
    }
    // True when an XON for p must be sent now: p was paused.
    bool stop(unsigned p, sim_time now, per_priority& frames, per_priority& duration_us) {
        if (!pausing(p)) return false;
        duration_us[p] += static_cast<std::uint64_t>(now - _since[p]) / 1000;
        _since[p] = _refresh_at[p] = never;
        ++frames[p];
        return true;
    }
    // The priorities whose XOFF must be sent again at `now` (bit p); they count as sent.
    std::uint8_t refresh_due(sim_time now, per_priority& frames) {
        std::uint8_t due = 0;
        for (unsigned p = 0; p < wire::pfc_priority_count; ++p) {
            if (_refresh_at[p] > now) continue;
            due = static_cast<std::uint8_t>(due | 1u << p);
            _refresh_at[p] = now + _refresh_interval;
            ++frames[p];
        }
        return due;
    }
    sim_time next_refresh() const { return *std::min_element(_refresh_at.begin(), _refresh_at.end()); }

private:
    sim_time _refresh_interval;
    std::array<sim_time, wire::pfc_priority_count> _since, _refresh_at; // never: not pausing
};

} // namespace rocefab
