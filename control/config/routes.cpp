// Host routes for every switch: the fabric is routed (every NIC is a /32 or /128 behind the switch port it is
// cabled to), as in a BGP-unnumbered leaf-spine with host routes redistributed, so no L2 flooding or ARP
// proxying between switches is needed.
#include "control/config/topology.hpp"

#include <deque>
#include <limits>
#include <map>

namespace rocefab::config {
namespace {

constexpr std::size_t unreachable = std::numeric_limits<std::size_t>::max();

// Hop counts from `origin` to every switch, over switch-to-switch links only: hosts never forward.
std::vector<std::size_t> switch_distances(const topology& fabric, std::size_t origin) {
    std::vector<std::size_t> distance(fabric.switches.size(), unreachable);
    std::deque<std::size_t> frontier{origin};
    distance[origin] = 0;
    while (!frontier.empty()) {
        const std::size_t current = frontier.front();
        frontier.pop_front();
        const auto& ports = fabric.switches[current].ports;
        for (std::size_t p = 0; p < ports.size(); ++p) {
            const endpoint& peer = fabric.peer_of({endpoint::switch_port, current, p});
            if (peer.kind != endpoint::switch_port || distance[peer.node] != unreachable) continue;
            distance[peer.node] = distance[current] + 1;
            frontier.push_back(peer.node);
        }
    }
    return distance;
}

} // namespace

std::vector<std::vector<route>> compute_routes(const topology& fabric) {
    std::vector<std::vector<route>> tables(fabric.switches.size());
    std::map<std::size_t, std::vector<std::size_t>> distances_from; // by the switch a NIC is cabled to

    for (std::size_t h = 0; h < fabric.hosts.size(); ++h) {
        for (std::size_t n = 0; n < fabric.hosts[h].nics.size(); ++n) {
            const nic_config& nic = fabric.hosts[h].nics[n];
            const endpoint& attachment = fabric.peer_of({endpoint::host_nic, h, n});
            if (attachment.kind != endpoint::switch_port) continue; // back-to-back: no switch can reach it

            auto cached = distances_from.find(attachment.node);
            if (cached == distances_from.end())
                cached = distances_from.emplace(attachment.node, switch_distances(fabric, attachment.node)).first;
            const std::vector<std::size_t>& distance = cached->second;

            for (std::size_t s = 0; s < fabric.switches.size(); ++s) {
                if (distance[s] == unreachable) continue;
                route r;
                r.destination = nic.address.host_prefix();
                if (s == attachment.node) {
                    r.egress_ports.push_back(attachment.port);
                    r.next_hop_macs.push_back(nic.mac);
                } else {
                    const auto& ports = fabric.switches[s].ports;
                    for (std::size_t p = 0; p < ports.size(); ++p) {
                        const endpoint& peer = fabric.peer_of({endpoint::switch_port, s, p});
                        if (peer.kind == endpoint::switch_port && distance[peer.node] + 1 == distance[s]) {
                            r.egress_ports.push_back(p);
                            r.next_hop_macs.push_back(fabric.mac_of(peer));
                        }
                    }
                }
                tables[s].push_back(std::move(r));
            }
        }
    }
    for (std::size_t s = 0; s < fabric.switches.size(); ++s) {
        for (const route& fixed : fabric.switches[s].static_routes) {
            std::erase_if(tables[s], [&](const route& r) { return r.destination == fixed.destination; });
            tables[s].push_back(fixed);
        }
    }
    return tables;
}

} // namespace rocefab::config
