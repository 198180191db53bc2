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
    } else {
        // A NIC stops at once, but what its transmit FIFO already holds (2 us) still comes.
        spec.pfc_reaction = microseconds(3);
    }
    return spec;
}

nic::nic_spec nic_spec_of(const config::topology& topo, std::size_t host, std::size_t nic_index) {
    const config::nic_config& nic = topo.hosts[host].nics[nic_index];
    nic::nic_spec spec;
    spec.host = topo.hosts[host].name;
    spec.name = nic.name;
    spec.mac = nic.mac;
    spec.address = nic.address.address;
    const config::link_params& p = topo.links[nic.link_index].params;
    spec.speed_bps = p.speed_bps;
    spec.ip_mtu = p.mtu;
    const config::nic_settings& settings = topo.hosts[host].nic;
    spec.trust_pcp = settings.trust_pcp;
    spec.dcqcn = settings.dcqcn;
    spec.dcqcn_rp_priorities = spec.dcqcn_np_priorities = settings.dcqcn_priorities;
    spec.host_rx_bps = topo.hosts[host].host_rx_bps;
    spec.retransmission = settings.retransmission;
    spec.adaptive_retransmission = settings.adaptive_retransmission;
    spec.adaptive_timeouts = settings.adaptive_timeouts;
    return spec;
}

// The neighbour table a host would build with ARP/ND: a destination on the NIC's own subnet is
// reached at its own MAC (the switch bridges it); anything else goes to the gateway, the switch
// port at the other end of the NIC's link, which routes it.
nic::neighbour_resolver make_resolver(const config::topology& topo, std::size_t host, std::size_t nic_index,
                                      const std::vector<std::vector<wire::ipv6_address>>& link_locals) {
    return [&topo, host, nic_index, link_locals](const wire::ipv6_address& dgid, wire::mac_address& mac) {
        const config::nic_config& self = topo.hosts[host].nics[nic_index];
        for (std::size_t h = 0; h < topo.hosts.size(); ++h) {
            for (std::size_t n = 0; n < topo.hosts[h].nics.size(); ++n) {
                const config::nic_config& other = topo.hosts[h].nics[n];
                const bool same_subnet = self.address.contains(other.address.address);
                if (link_locals[h][n] == dgid) {
                    // Link-local GIDs are not routable: only a neighbour on the same link segment.
                    if (!same_subnet) return false;
                    mac = other.mac;
                    return true;
                }
                if (other.address.address == dgid) {
                    mac = same_subnet ? other.mac : topo.gateway_mac(host, nic_index);
                    return true;
                }
            }
        }
        // Unknown address: it may be outside the emulated fabric; hand it to the gateway,
        // which drops what it cannot route and counts it.
        if (self.address.contains(dgid)) return false;
        mac = topo.gateway_mac(host, nic_index);
        return true;
    };
}

} // namespace rocefab::control
