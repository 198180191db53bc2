// Stage 4, ingress admission: every queued frame occupies the switch's one shared buffer
// until it leaves. For now a single static budget, no per-priority-group thresholds: a frame
// that does not fit is tail-dropped. Dynamic thresholds (Spectrum's alpha), headroom and
// PFC XOFF/XON will sit here, which is why admission knows the ingress side too.
#pragma once

#include "switch_emu/counters.hpp"

#include <cstddef>
#include <cstdint>

namespace rocefab::switch_emu {

class shared_buffer {
public:
    explicit shared_buffer(std::size_t size_bytes) : _size(size_bytes) {}

    // Reserves `bytes` for a frame queued on the port `egress` counts for. Refused (and
    // tail_drops bumped on `egress`) when the buffer would overflow. Keeps egress's
    // buffer_bytes and buffer_peak_bytes gauges current.
    bool admit(port_counters& egress, std::uint32_t bytes);
    // Returns what admit() reserved, when the frame leaves (or is dropped after admission).
    void release(port_counters& egress, std::uint32_t bytes);

    std::size_t size() const { return _size; }
    std::size_t in_use() const { return _in_use; }
    std::size_t peak() const { return _peak; }

private:
    std::size_t _size;
    std::size_t _in_use = 0;
    std::size_t _peak = 0;
};

} // namespace rocefab::switch_emu
