// rdma-integrity's client side: see client.cpp.
#pragma once

#include "parameters.hpp"

namespace rocefab::tools::integrity {

// Connects to the server at the command line's host and -p, sends it the run's parameters and
// then the whole schedule; 0 when the server verified all of it (a failure exits 1 through fail()).
int connect_and_send(const options& o);

} // namespace rocefab::tools::integrity
