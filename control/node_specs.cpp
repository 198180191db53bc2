#include "control/node_specs.hpp"

namespace rocefab::control {

link_model model_of(const config::link_params& p) {
    link_model m{};
    m.speed_bps = p.speed_bps;
    m.propagation_delay = p.delay;
    m.mtu = p.mtu;
    m.faults.loss = p.faults.loss;
    m.faults.corruption = p.faults.corruption;
    m.faults.duplication = p.faults.duplication;
    m.faults.reordering = p.faults.reordering;
    m.faults.reorder_delay = p.faults.reorder_delay;
    return m;
}

switch_emu::switch_spec switch_spec_of(const config::topology& topo, std::size_t index, clocking clock) {
    const config::switch_config& sw = topo.switches[index];
    switch_emu::switch_spec spec;
    spec.name = sw.name;
    for (const auto& port : sw.ports) {
        const config::link_params& p = topo.links[port.link_index].params;
        spec.ports.push_back({port.name, port.mac, p.speed_bps, p.mtu, p.delay, port.adaptive_routing});
    }
    for (const auto& r : topo.routes[index]) {
        switch_emu::route_spec route;
        route.prefix = r.destination.address;
        route.length = r.destination.length;
        route.v6 = r.destination.v6;
        for (auto p : r.egress_ports) route.ports.push_back(static_cast<std::uint16_t>(p));
        route.next_hop_macs = r.next_hop_macs;
        spec.routes.push_back(std::move(route));
    }
    // Hosts on a switch port are also reached by bridging (same subnet, no TTL change), as a
    // Cumulus switch with the hosts' VLAN on an SVI does.
    for (std::size_t p = 0; p < sw.ports.size(); ++p) {
        const config::endpoint& peer = topo.peer_of({config::endpoint::switch_port, index, p});
        if (peer.kind == config::endpoint::host_nic)
            spec.neighbours.push_back({topo.hosts[peer.node].nics[peer.port].mac, static_cast<std::uint16_t>(p)});
    }
    spec.ecmp_seed = static_cast<std::uint32_t>(index * 0x9e3779b1u);
    spec.qos = sw.qos;
    spec.buffer_bytes = sw.buffer.size_bytes;
    spec.buffer_alpha = sw.buffer.alpha;
    spec.reserved_bytes_per_group = sw.buffer.reserved_bytes;
    spec.adaptive_routing = sw.adaptive_routing;
    // The fabric's seed decides ECN marks too; each switch draws its own sequence from it.
    spec.random_seed = topo.seed * 0x9e3779b97f4a7c15ull + index + 1;
    if (clock == clocking::realtime) {
        // See switch_spec::transmit_fifo. 2 us, as the NIC's.
        spec.transmit_fifo = microseconds(2);
        // Its NICs act on a pause at their next poll, up to a loop iteration late: headroom for 100 us.
        spec.pfc_reaction = microseconds(100);
    }
    return spec;
}

} // namespace rocefab::control
