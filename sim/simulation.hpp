// A scenario under virtual time: the fabric built from the file by the daemon's builder
// (control/fabric_builder.hpp), a traffic generator in place of programs, and a recorder that
// samples queues, rates and counters every sample interval. Same scenario and seed, same bytes out.
#pragma once

#include "control/fabric_builder.hpp"
#include "dataplane/virtual_time_driver.hpp"
#include "nic_emu/nic_node.hpp"
#include "sim/scenario.hpp"
#include "sim/traffic.hpp"
#include "switch_emu/switch_node.hpp"

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

namespace rocefab::sim {

class recorder;

class simulation {
public:
    // Builds every node and link; throws std::runtime_error with a reason (EAL, mempool, a spec
    // a node refuses).
    explicit simulation(const scenario& s);
    ~simulation();

    // Runs until the duration, or until every flow has completed. With `progress`, writes a
    // line there as it goes: simulated time against wall time.
    void run(std::FILE* progress = nullptr);

    // Writes queues.csv, flows.csv, counters.csv and fct.csv into the scenario's output
    // directory; "" or what went wrong.
    std::string write_csv() const;
    // Writes plots.gp there and runs gnuplot on it: PNG and SVG of queues, rates, sending rates and
    // counters; "" or what went wrong.
    std::string write_plots() const;

    const traffic_generator& traffic() const { return *_traffic; }
    // The nodes and cables built from the scenario's topology, where link state and counters live.
    const control::fabric_builder& fabric() const { return *_fabric; }
    const std::vector<std::unique_ptr<switch_emu::switch_node>>& switches() const { return _fabric->switches(); }
    const std::vector<nic::nic_node*>& nics() const { return _nics; } // per host, first NIC
    sim_time now() const { return _driver->now(); }
    std::uint64_t frames_delivered() const { return _driver->frames_delivered(); }
    // Ideal completion time of a flow: its packets (payloads of the path MTU, 82 bytes of
    // headers and framing each) back to back at the sender's line rate.
    sim_time ideal_completion(const flow_spec& f) const;

private:
    const scenario& _scenario;
    std::unique_ptr<control::fabric_builder> _fabric; // after the EAL: links are DPDK rings
    std::vector<nic::nic_node*> _nics;
    std::unique_ptr<traffic_generator> _traffic;
    std::unique_ptr<recorder> _recorder;
    std::unique_ptr<virtual_time_driver> _driver;
};

} // namespace rocefab::sim
