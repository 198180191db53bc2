// The fabric daemon: runs one fabric until told to stop. It listens in its runtime directory:
// attach/HOST.sock for the verbs library of programs on each emulated host, and control.sock
// for the `rocefab` command (one JSON request a line, one JSON reply a line). Who may use
// either is control/access.hpp's to say.
#pragma once

#include "control/config/topology.hpp"

#include <nlohmann/json.hpp>

#include <chrono>
#include <optional>
#include <string>

namespace rocefab::control {

inline constexpr const char* control_socket_name = "control.sock";
inline constexpr const char* attach_directory_name = "attach";

// Where the programs of host `host` attach, under the fabric's runtime directory.
inline std::string attach_socket_path(const std::string& runtime_dir, const std::string& host) {
    return runtime_dir + "/" + attach_directory_name + "/" + host + ".sock";
}
inline constexpr const char* pid_file_name = "daemon.pid";
inline constexpr const char* log_file_name = "daemon.log";

// Runs in the calling process until "down" or SIGTERM/SIGINT. Writes "ok\n", or one line saying
// why it could not start, to `ready_fd` (then closes it). Returns the process exit status.
int run_daemon(config::topology topology, const std::string& runtime_dir, int ready_fd);

// Client side of control.sock: sends `request`, returns the reply; std::nullopt when no daemon
// answers there within `timeout`, with `problem` (if given) saying what went wrong in a few words
// ("no daemon listens there", "no answer within 20 s", ...).
std::optional<nlohmann::json> control_request(const std::string& runtime_dir, const nlohmann::json& request,
                                              std::string* problem = nullptr,
                                              std::chrono::milliseconds timeout = std::chrono::seconds(20));

} // namespace rocefab::control
