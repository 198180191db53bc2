#include "control/config/json.hpp"

namespace rocefab::config {

nlohmann::ordered_json to_json_value(const topology& fabric) {
    using json = nlohmann::ordered_json;
    json hosts = json::array();
    for (std::size_t h = 0; h < fabric.hosts.size(); ++h) {
        const host_config& host = fabric.hosts[h];
        json nics = json::array();
        for (std::size_t n = 0; n < host.nics.size(); ++n) {
            const nic_config& nic = host.nics[n];
            nics.push_back({{"name", nic.name},
                            {"address", nic.address.to_string()},
                            {"mac", nic.mac.to_string()},
                            {"link", nic.link_index},
                            {"peer", fabric.endpoint_name(fabric.peer_of({endpoint::host_nic, h, n}))},
                            {"gateway_mac", fabric.gateway_mac(h, n).to_string()}});
        }
        hosts.push_back({{"name", host.name}, {"nics", std::move(nics)}});
    }

    json switches = json::array();
    for (std::size_t s = 0; s < fabric.switches.size(); ++s) {
        const switch_config& sw = fabric.switches[s];
        json ports = json::array();
        for (std::size_t p = 0; p < sw.ports.size(); ++p)
            ports.push_back({{"name", sw.ports[p].name},
                             {"mac", sw.ports[p].mac.to_string()},
                             {"link", sw.ports[p].link_index},
                             {"peer", fabric.endpoint_name(fabric.peer_of({endpoint::switch_port, s, p}))}});
        json routes = json::array();
        if (s < fabric.routes.size()) {
            for (const route& r : fabric.routes[s]) {
                json egress = json::array(), next_hops = json::array();
                for (std::size_t port : r.egress_ports) egress.push_back(sw.ports.at(port).name);
                for (const auto& mac : r.next_hop_macs) next_hops.push_back(mac.to_string());
                routes.push_back({{"destination", r.destination.to_string()},
                                  {"egress_ports", std::move(egress)},
                                  {"next_hop_macs", std::move(next_hops)}});
            }
        }
        json adaptive_interfaces = json::array();
        for (const port_config& port : sw.ports)
            if (port.adaptive_routing) adaptive_interfaces.push_back(port.name);
        switches.push_back({{"name", sw.name},
                            {"ports", std::move(ports)},
                            {"routes", std::move(routes)},
                            {"buffer",
                             {{"size_bytes", sw.buffer.size_bytes},
                              {"alpha", sw.buffer.alpha},
                              {"reserved_bytes", sw.buffer.reserved_bytes}}},
                            {"adaptive_routing",
                             {{"enabled", sw.adaptive_routing.enabled},
                              {"link_utilization_threshold", sw.adaptive_routing.link_utilization_threshold_percent},
                              {"interfaces", std::move(adaptive_interfaces)}}}});
    }

    json links = json::array();
    for (const link_config& link : fabric.links)
        links.push_back({{"a", fabric.endpoint_name(link.a)},
                         {"b", fabric.endpoint_name(link.b)},
                         {"speed", format_speed(link.params.speed_bps)},
                         {"speed_bps", link.params.speed_bps},
                         {"delay", format_duration(link.params.delay)},
                         {"delay_ns", link.params.delay},
                         {"mtu", link.params.mtu},
                         {"up", link.params.up},
                         {"faults",
                          {{"loss", link.params.faults.loss},
                           {"corruption", link.params.faults.corruption},
                           {"duplication", link.params.faults.duplication},
                           {"reordering", link.params.faults.reordering},
                           {"reorder_delay", format_duration(link.params.faults.reorder_delay)},
                           {"reorder_delay_ns", link.params.faults.reorder_delay}}},
                         {"line", link.line}});

    return {{"fabric", fabric.name},     {"source_file", fabric.source_file}, {"seed", fabric.seed},
            {"hosts", std::move(hosts)}, {"switches", std::move(switches)},   {"links", std::move(links)}};
}

std::string to_json(const topology& fabric) { return to_json_value(fabric).dump(2); }

} // namespace rocefab::config
