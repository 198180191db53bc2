// libFuzzer target: arbitrary text into control/config's topology loader (parse_topology, what
// load_topology runs on a file's contents). The loader promises to report every bad input as a
// config_error and never to throw; an exception escaping it is a crash here.
//
// What it accepts must be usable: the JSON view (`rocefab show`'s) is built from it, and every
// switch's spec, as the daemon and the simulator build it (control/node_specs), must pass the
// switch's own validate(): a file the loader accepts must not fail later, at start-up, with a
// message that names no line of it.
#include "control/config/topology.hpp"
#include "control/node_specs.hpp"
#include "switch_emu/switch_spec.hpp"

#include <cstdio>
#include <cstdlib>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace rocefab;
    const std::string text(reinterpret_cast<const char*>(data), size);
    config::topology topology;
    config::config_error error;
    if (!config::parse_topology(text, "fuzz.yaml", topology, error)) {
        (void)error.to_string();
        return 0;
    }
    (void)config::to_json(topology);
    for (std::size_t s = 0; s < topology.switches.size(); ++s)
        for (const control::clocking clock : {control::clocking::realtime, control::clocking::virtual_time}) {
            const std::string problem = switch_emu::validate(control::switch_spec_of(topology, s, clock));
            if (!problem.empty()) {
                std::fprintf(stderr, "fuzz: the loader accepted a switch its spec rejects: %s\n", problem.c_str());
                std::abort();
            }
        }
    for (std::size_t h = 0; h < topology.hosts.size(); ++h)
        for (std::size_t n = 0; n < topology.hosts[h].nics.size(); ++n) (void)control::nic_spec_of(topology, h, n);
    return 0;
}
