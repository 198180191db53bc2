// Stage 2, classify: the switch priority of a frame (from DSCP, or from PCP when the port
// trusts L2) and the egress traffic class it queues in. Later stages (PFC, ECN, ETS) read
// only packet_meta::priority / traffic_class, never the headers again.
#pragma once

#include "dataplane/packet.hpp"
#include "switch_emu/parse.hpp"
#include "switch_emu/switch_spec.hpp"

#include <array>

namespace rocefab::switch_emu {

struct classification {
    std::uint8_t priority;      // for packet_meta::priority
    std::uint8_t traffic_class; // for packet_meta::traffic_class
};

// The QoS maps folded into one table per trust mode, so that a frame's priority and its
// traffic class are one load: by DSCP, or by PCP with the port's default for an untagged frame.
class classifier {
public:
    // `qos` must have passed validate(): every map entry is below traffic_class_count.
    explicit classifier(const qos_spec& qos) : _trust_pcp(qos.trust == trust_mode::pcp) {
        auto of = [&](std::uint8_t priority) { return classification{priority, qos.priority_to_tc[priority & 7]}; };
        for (std::size_t dscp = 0; dscp < _by_dscp.size(); ++dscp) _by_dscp[dscp] = of(qos.dscp_to_priority[dscp]);
        for (std::uint8_t pcp = 0; pcp < _by_pcp.size(); ++pcp) _by_pcp[pcp] = of(pcp);
        _untagged = of(qos.default_priority);
    }

    classification operator()(const parsed_frame& parsed) const {
        if (_trust_pcp) [[unlikely]]
            return parsed.vlan_tagged ? _by_pcp[parsed.pcp & 7] : _untagged;
        return _by_dscp[parsed.traffic_class >> 2]; // the DSCP, as an index
    }

private:
    std::array<classification, 64> _by_dscp{};
    std::array<classification, 8> _by_pcp{};
    classification _untagged{};
    bool _trust_pcp;
};

} // namespace rocefab::switch_emu
