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

} // namespace rocefab
