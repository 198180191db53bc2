#include "control/fabric_builder.hpp"

#include <utility>

namespace rocefab::control {

fabric_builder::fabric_builder(const config::topology& topology, clocking clock, const host_stand_in& stand_in)
    : _topology(topology) {
    std::vector<node_id> switch_ids;
    for (std::size_t s = 0; s < _topology.switches.size(); ++s) {
        _switches.push_back(std::make_unique<switch_emu::switch_node>(switch_spec_of(_topology, s, clock)));
        switch_ids.push_back(_wiring.add_node(*_switches.back()));
    }

    // Every NIC's resolver needs every NIC's link-local GID, known once the NIC exists: the
    // NICs are built first and given their resolvers after. A stand-in has none (all zeros).
    std::vector<std::vector<wire::ipv6_address>> link_locals(_topology.hosts.size());
    std::vector<std::vector<node_id>> nic_ids(_topology.hosts.size());
    _nics.resize(_topology.hosts.size());
    for (std::size_t h = 0; h < _topology.hosts.size(); ++h) {
        for (std::size_t n = 0; n < _topology.hosts[h].nics.size(); ++n) {
            node* in_place = stand_in ? stand_in(h, n) : nullptr;
            if (in_place) {
                _nics[h].emplace_back();
                link_locals[h].emplace_back();
                nic_ids[h].push_back(_wiring.add_node(*in_place));
                continue;
            }
            _nics[h].push_back(
                std::make_unique<nic::nic_node>(nic_spec_of(_topology, h, n), nic::neighbour_resolver{}));
            link_locals[h].push_back(_nics[h].back()->gid(0));
            nic_ids[h].push_back(_wiring.add_node(*_nics[h].back()));
        }
    }
    for (std::size_t h = 0; h < _nics.size(); ++h)
        for (std::size_t n = 0; n < _nics[h].size(); ++n)
            if (_nics[h][n]) _nics[h][n]->set_resolver(make_resolver(_topology, h, n, link_locals));

    auto id_of = [&](const config::endpoint& e) {
        return e.kind == config::endpoint::host_nic ? std::pair{nic_ids[e.node][e.port], std::uint16_t(0)}
                                                    : std::pair{switch_ids[e.node], static_cast<std::uint16_t>(e.port)};
    };
    _wiring.set_seed(_topology.seed);
    for (const config::link_config& l : _topology.links) {
        const auto [a, pa] = id_of(l.a);
        const auto [b, pb] = id_of(l.b);
        _cables.push_back(_wiring.connect(a, pa, b, pb, model_of(l.params)));
        // The administrative state the file starts the cable in; a down link drops what is
        // sent on it and counts it (drops_link_down), under either clock.
        for (link* direction : cable(_cables.size() - 1)) direction->set_up(l.params.up);
    }
}

} // namespace rocefab::control
