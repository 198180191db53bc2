// The fabric daemon: runs one fabric until told to stop. It listens on two sockets in its
// runtime directory: attach.sock for the verbs library of programs on emulated hosts, and
// control.sock for the `rocefab` command (one JSON request a line, one JSON reply a line).
#pragma once

#include "control/config/topology.hpp"

#include <nlohmann/json.hpp>

#include <optional>
#include <string>

namespace rocefab::control {

inline constexpr const char* attach_socket_name = "attach.sock";
inline constexpr const char* control_socket_name = "control.sock";
inline constexpr const char* pid_file_name = "daemon.pid";
inline constexpr const char* log_file_name = "daemon.log";

// Runs in the calling process until "down" or SIGTERM/SIGINT. Writes "ok\n", or one line saying
// why it could not start, to `ready_fd` (then closes it). Returns the process exit status.
int run_daemon(config::topology topology, const std::string& runtime_dir, int ready_fd);

// Client side of control.sock: sends `request`, returns the reply; std::nullopt when no daemon
// answers there.
std::optional<nlohmann::json> control_request(const std::string& runtime_dir, const nlohmann::json& request);

} // namespace rocefab::control
