// What the topology file says, turned into what the data plane is built from: a switch_spec for
// each switch, a nic_spec and neighbour table for each NIC, and a link_model for each cable. Shared by the realtime
// fabric (the daemon) and fabrics built under virtual time (scenario tests, simulations).
#pragma once

#include "control/config/topology.hpp"
#include "dataplane/link.hpp"
#include "nic_emu/nic_node.hpp"
#include "switch_emu/switch_spec.hpp"

#include <cstddef>
#include <vector>

namespace rocefab::control {

// How a fabric is driven changes how a switch must behave at its edges (switch_spec's
// transmit_fifo and pfc_reaction).
enum class clocking { realtime, virtual_time };

link_model model_of(const config::link_params& params);

// The spec of NIC `nic_index` of host `host`: name, addresses, speed and MTU of its link, the
// file's DCQCN settings and the host's receive rate.
nic::nic_spec nic_spec_of(const config::topology& topology, std::size_t host, std::size_t nic_index);

// The neighbour table a host builds with ARP/ND, for NIC `nic_index` of `host`. `link_locals`
// holds every NIC's link-local GID ([host][nic]); `topology` must outlive the resolver.
nic::neighbour_resolver make_resolver(const config::topology& topology, std::size_t host, std::size_t nic_index,
                                      const std::vector<std::vector<wire::ipv6_address>>& link_locals);

// The spec of switch `index`: its ports, routes (computed and static), bridged neighbours, QoS,
// buffer, adaptive routing and seeds, all from `topology`.
switch_emu::switch_spec switch_spec_of(const config::topology& topology, std::size_t index, clocking clock);

} // namespace rocefab::control
