// The one place a topology becomes a fabric: a switch_node for every switch, a nic_node for every
// NIC of every host, a link each way for every cable, with the file's seed and every cable the
// file starts `up: false` down. The daemon (control/fabric.hpp), `rocefab sim`
// (sim/simulation.hpp) and the scenario tests all build through it, so what a file says is
// honoured the same way under both clocks.
//
// What differs between them stays with the caller, after construction: nodes of its own (a
// traffic generator, a recorder) added to wiring(), the packet pool (wiring().attach_all), and
// the driver, which is the clock.
#pragma once

#include "control/config/topology.hpp"
#include "control/node_specs.hpp"
#include "dataplane/link.hpp"
#include "dataplane/wiring.hpp"
#include "nic_emu/nic_node.hpp"
#include "switch_emu/switch_node.hpp"

#include <array>
#include <cstddef>
#include <functional>
#include <memory>
#include <vector>

namespace rocefab::control {

class fabric_builder {
public:
    // A node to put where NIC `nic` of host `host` would be (its port 0 takes the NIC's cable),
    // or nullptr for the NIC itself. Switch scenario tests put traffic hosts there.
    using host_stand_in = std::function<node*(std::size_t host, std::size_t nic)>;

    // Builds every node and cable, nodes in the order switches, then hosts' NICs host by host
    // (the order a driver polls them in). Needs the EAL started (links are DPDK rings).
    // Throws std::invalid_argument for a spec a node refuses, std::runtime_error when a link's
    // ring cannot be created. `topology` must outlive the builder: the NICs' neighbour tables
    // read it.
    fabric_builder(const config::topology& topology, clocking clock, const host_stand_in& stand_in = {});
    fabric_builder(const fabric_builder&) = delete;
    fabric_builder& operator=(const fabric_builder&) = delete;

    const config::topology& topology() const { return _topology; }
    rocefab::wiring& wiring() { return _wiring; }
    const rocefab::wiring& wiring() const { return _wiring; }

    const std::vector<std::unique_ptr<switch_emu::switch_node>>& switches() const { return _switches; }
    // [host][nic]; nullptr where a stand-in took the NIC's place.
    const std::vector<std::vector<std::unique_ptr<nic::nic_node>>>& nics() const { return _nics; }

    // Both directions of topology link `index`, a->b first.
    std::array<link*, 2> cable(std::size_t index) const {
        return {&_wiring.link_at(_cables[index].first), &_wiring.link_at(_cables[index].second)};
    }

private:
    const config::topology& _topology;
    // Declared before the nodes, so it outlives them: their sinks live in it.
    rocefab::wiring _wiring;
    std::vector<std::unique_ptr<switch_emu::switch_node>> _switches;
    std::vector<std::vector<std::unique_ptr<nic::nic_node>>> _nics;
    std::vector<std::pair<link_id, link_id>> _cables; // per topology link: a->b, b->a
};

} // namespace rocefab::control
