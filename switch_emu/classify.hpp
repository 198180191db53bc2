// Stage 2, classify: the switch priority of a frame (from DSCP, or from PCP when the port
// trusts L2) and the egress traffic class it queues in. Later stages (PFC, ECN, ETS) read
// only packet_meta::priority / traffic_class, never the headers again.
#pragma once

#include "dataplane/packet.hpp"
#include "switch_emu/parse.hpp"
#include "switch_emu/switch_spec.hpp"

namespace rocefab::switch_emu {

struct classification {
    std::uint8_t priority;      // for packet_meta::priority
    std::uint8_t traffic_class; // for packet_meta::traffic_class
};

// `qos` must have passed validate(): every map entry is below traffic_class_count.
inline classification classify_frame(const qos_spec& qos, const parsed_frame& parsed) {
    std::uint8_t priority;
    if (qos.trust == trust_mode::pcp)
        priority = parsed.vlan_tagged ? parsed.pcp : qos.default_priority;
    else
        priority = qos.dscp_to_priority[parsed.traffic_class >> 2]; // the DSCP, as an index
    return {priority, qos.priority_to_tc[priority & 7]};
}

} // namespace rocefab::switch_emu
