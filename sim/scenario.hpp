// A simulation scenario: a fabric (the topology file's sections), the hosts' NIC settings, the
// traffic, and how long to run and sample. `rocefab sim FILE` runs it under virtual time.
//
// File format: a topology file (control/config/topology.hpp, whose `nic:` section sets the NICs'
// DCQCN and slow receivers) with two more sections:
//   traffic:                               a list; each item is a flow or a pattern
//     - { from: h1, to: h9, size: 10MB, start: 0us }            one flow (`name:` optional)
//     - { pattern: incast, senders: [h1, h2], receiver: h9, size: 10MB, start: 0us }
//     - { pattern: permutation, hosts: [h1, h2, h3, h4], size: 1MB }  each sends to another (seeded)
//     - { pattern: all-to-all, hosts: [h1, h2, h3], size: 1MB }       every ordered pair
//     `size` may instead be `size-cdf: FILE` with `flows: N` and `load: 0.5`: N flows per sender
//     with sizes drawn from the CDF (lines "bytes cumulative-fraction") and Poisson arrivals
//     at that fraction of the sender's link rate
//   simulation: { duration: 10ms, sample-interval: 10us, message-size: 64KiB, output: DIR }
//     all optional; without a duration the run ends when every flow has completed (at most 1 s)
// As in the topology sections, an unknown key is an error that names the valid keys (and the closest one), and a
// key given twice is refused: both sections are read through control/config/yaml_reader.hpp.
#pragma once

#include "control/config/topology.hpp"
#include "dataplane/time.hpp"
#include "nic_emu/dcqcn.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace rocefab::sim {

struct flow_spec {
    std::string name;
    std::size_t source = 0, destination = 0; // host indices; each host's first NIC
    std::uint64_t bytes = 0;
    sim_time start = 0;
};

struct scenario {
    config::topology topology;
    std::vector<flow_spec> flows; // patterns expanded, in file order
    sim_time duration = 0;        // 0: until every flow has completed
    sim_time sample_interval = microseconds(10);
    std::uint32_t message_bytes = 64 * 1024; // a flow is a sequence of RDMA WRITEs this large
    std::string output;                      // directory for CSVs and plots
    // Whether the NICs copy payload bytes between the hosts' memory and the frames. Nothing in a
    // simulation reads them: the traffic only WRITEs, no frame leaves the process or is captured,
    // and every output depends on lengths and times alone. So a simulation leaves them out:
    // at 256 hosts the frames in flight (about 16 MB) no longer pass through the CPU's cache
    // twice each. Not in the file; a test turns it on to show the outputs are the same bytes.
    bool copy_payloads = false;
};

// Loads and checks a scenario; on error fills `error` (file, line, key, what is valid).
bool load_scenario(const std::string& path, scenario& out, config::config_error& error);
// The same from text (load_scenario reads the file and calls this). `file_name` is used in
// messages, for the default fabric name and to find a size-cdf given relative to the file.
bool parse_scenario(const std::string& yaml_text, const std::string& file_name, scenario& out,
                    config::config_error& error);

} // namespace rocefab::sim
