// RC requests that arrived ahead of a PSN gap, held until the gap fills.
//
// ConnectX NICs place RC packets that a sprayed fabric (adaptive routing) delivers out of order
// instead of dropping them and NAKing. This NIC keeps the same promise by holding such packets,
// at most `window` PSNs ahead of the expected one, and processing them in PSN order once the
// missing ones arrive: what the application sees (data, completions, their order) is the same,
// and a reordered packet costs no retransmission. Slots are fixed at QP creation; holding a
// packet never allocates.
#pragma once

#include "dataplane/wire/roce_frame.hpp"

#include <rte_mbuf.h>

#include <cstdint>
#include <vector>

namespace rocefab::nic {

class reorder_buffer {
public:
    static constexpr std::uint32_t window = 64; // PSNs ahead of the expected one; a power of two

    struct entry {
        rte_mbuf* frame = nullptr;
        wire::parsed_roce packet; // points into frame
        std::uint32_t psn = 0;
    };

    reorder_buffer() = default;
    reorder_buffer(const reorder_buffer&) = delete;
    reorder_buffer& operator=(const reorder_buffer&) = delete;
    ~reorder_buffer() { release_all(); }

    // Made usable (the slots allocated) when the QP is created, not on the data path.
    void reserve() { _slots.resize(window); }
    bool usable() const { return !_slots.empty(); }
    std::uint32_t held() const { return _held; }

    bool contains(std::uint32_t psn) const {
        const entry& e = _slots[psn & (window - 1)];
        return e.frame && e.psn == psn;
    }
    // The caller checked that psn lies within the window and is not held yet.
    void hold(std::uint32_t psn, rte_mbuf* frame, const wire::parsed_roce& packet) {
        entry& e = _slots[psn & (window - 1)];
        e.frame = frame;
        e.packet = packet;
        e.psn = psn;
        ++_held;
    }
    // Takes the packet with this PSN out, if held; the caller then owns the frame.
    bool take(std::uint32_t psn, entry& out) {
        if (!usable() || !contains(psn)) return false;
        entry& e = _slots[psn & (window - 1)];
        out = e;
        e.frame = nullptr;
        --_held;
        return true;
    }
    // Frees every held frame: the QP left the states that take requests, or is destroyed.
    std::uint32_t release_all() {
        const std::uint32_t released = _held;
        for (entry& e : _slots) {
            if (e.frame) rte_pktmbuf_free(e.frame);
            e.frame = nullptr;
        }
        _held = 0;
        return released;
    }

private:
    std::vector<entry> _slots;
    std::uint32_t _held = 0;
};

} // namespace rocefab::nic
