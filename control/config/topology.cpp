#include "control/config/topology.hpp"

namespace rocefab::config {

wire::mac_address topology::gateway_mac(std::size_t host, std::size_t nic) const {
    const endpoint self{endpoint::host_nic, host, nic};
    return mac_of(peer_of(self));
}

const host_config* topology::find_host(std::string_view wanted) const {
    for (const auto& host : hosts)
        if (host.name == wanted) return &host;
    return nullptr;
}

const switch_config* topology::find_switch(std::string_view wanted) const {
    for (const auto& sw : switches)
        if (sw.name == wanted) return &sw;
    return nullptr;
}

wire::mac_address topology::mac_of(const endpoint& end) const {
    return end.kind == endpoint::host_nic ? hosts.at(end.node).nics.at(end.port).mac
                                          : switches.at(end.node).ports.at(end.port).mac;
}

std::string topology::endpoint_name(const endpoint& end) const {
    return end.kind == endpoint::host_nic
               ? hosts.at(end.node).name + "/" + hosts.at(end.node).nics.at(end.port).name
               : switches.at(end.node).name + "/" + switches.at(end.node).ports.at(end.port).name;
}

const endpoint& topology::peer_of(const endpoint& end) const {
    const std::size_t link = end.kind == endpoint::host_nic ? hosts.at(end.node).nics.at(end.port).link_index
                                                            : switches.at(end.node).ports.at(end.port).link_index;
    const link_config& l = links.at(link);
    return l.a == end ? l.b : l.a;
}

std::string config_error::to_string() const {
    std::string text = file;
    if (line > 0) text += ":" + std::to_string(line) + ":" + std::to_string(column);
    text += ": ";
    if (!key.empty()) text += key + ": ";
    return text + message;
}

} // namespace rocefab::config
