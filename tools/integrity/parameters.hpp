// rdma-integrity's command line. The options that shape the run (run_parameters: the schedule's
// inputs) are the client's; the server takes them from the client's hello.
#pragma once

#include "schedule.hpp"

#include <cstdint>
#include <optional>
#include <string>

namespace rocefab::tools::integrity {

struct options {
    bool server = false;
    std::string host;
    std::string device;
    int gid_index = 0;
    std::uint16_t port = 18517;
    bool events = false;
    unsigned stall_seconds = 30;
    std::optional<std::uint64_t> corrupt_from; // test the tester: flip a byte of the first non-empty message from here
    run_parameters run;
};

// The options, or exits: 0 after --help, 2 after printing what was wrong.
options parse(int argc, char** argv);

} // namespace rocefab::tools::integrity
