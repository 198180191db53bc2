// Stage 5a, congestion control on enqueue (Spectrum's ECN and WRED, Cumulus `qos
// congestion-control`): against the depth of the egress queue a frame joins, an ECN-capable
// packet may be marked CE and one that cannot be marked may be dropped (congestion_spec).
// The depth is the queue's instantaneous one, as Spectrum uses. Random choices come from the
// switch's own seeded generator, so a scenario marks the same packets every run.
#pragma once

#include "dataplane/packet.hpp"
#include "switch_emu/parse.hpp"
#include "switch_emu/switch_spec.hpp"

#include <array>
#include <cstdint>

namespace rocefab::switch_emu {

enum class congestion_verdict : std::uint8_t { pass, mark, drop };

class congestion_control {
public:
    congestion_control(const qos_spec& qos, std::uint64_t seed);

    // What to do with a packet of class `tc` (ECN bits `ecn`) joining a queue `depth_bytes` deep.
    // Inline: asked for every frame, and most are below min.
    congestion_verdict decide(std::uint8_t tc, std::uint64_t depth_bytes, std::uint8_t ecn) {
        if (passes(tc, depth_bytes)) return congestion_verdict::pass;
        return decide_above_min(tc, depth_bytes, ecn);
    }
    // Whether decide() passes every packet of class `tc` at this depth, whatever its ECN bits:
    // marking is off, or the queue is below min.
    bool passes(std::uint8_t tc, std::uint64_t depth_bytes) const {
        const congestion_spec& c = _classes[tc & 7];
        return !c.enabled || depth_bytes < c.min_bytes;
    }

private:
    congestion_verdict decide_above_min(std::uint8_t tc, std::uint64_t depth_bytes, std::uint8_t ecn);
    std::uint64_t next_random();

    std::array<congestion_spec, traffic_class_count> _classes;
    std::uint8_t _lossless_tcs = 0; // bit t: TC t carries a lossless priority
    std::uint64_t _state;
};

// Sets the ECN field of the frame's IP header to CE (11), keeping an IPv4 header checksum
// valid. RoCEv2's ICRC masks the ECN bits, so it stays valid too.
void mark_congestion_experienced(rte_mbuf* frame, const parsed_frame& parsed);

} // namespace rocefab::switch_emu
