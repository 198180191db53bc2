// Stage 2, classify: the switch priority of a frame (from DSCP, or from PCP when the port
// trusts L2) and the egress traffic class it queues in. Later stages (PFC, ECN, ETS) read
// only packet_meta::priority / traffic_class, never the headers again.
#pragma once

#include "dataplane/packet.hpp"
#include "switch_emu/parse.hpp"
#include "switch_emu/switch_spec.hpp"

namespace rocefab::switch_emu {

// `qos` must have passed validate(): every map entry is below traffic_class_count.
void classify_frame(const qos_spec& qos, const parsed_frame& parsed, packet_meta& meta);

} // namespace rocefab::switch_emu
