// rdma-integrity's server side: see server.cpp.
#pragma once

#include "parameters.hpp"

namespace rocefab::tools::integrity {

// Waits for a client on -p, runs the schedule it asks for, checking everything; 0 when all of it
// arrived intact (a failure exits 1 through fail()).
int serve(const options& o);

} // namespace rocefab::tools::integrity
