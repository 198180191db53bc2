// `daemon:`: not the fabric but the daemon that runs it: who may attach programs (docs/security.md), its log
// levels, and how many verbs sessions it holds open.
#include "control/config/sections/sections.hpp"

#include "dataplane/log.hpp"

#include <algorithm>
#include <cctype>
#include <grp.h>
#include <sched.h>

namespace rocefab::config::sections {

void read_daemon(const yaml_reader& reader, const YAML::Node& node, daemon_settings& out) {
    if (node.IsNull()) return;
    const yaml_mapping m = reader.expect_map(
        node, "daemon", {"attach-group", "log", "max-sessions", "max-sessions-per-user", "dataplane-cpu"});
    if (const yaml_entry* e = m.find("attach-group")) {
        const std::string at = m.child_path("attach-group");
        const std::string group = reader.expect_scalar(e->value, at, "rdma");
        if (!::getgrnam(group.c_str()))
            reader.fail(e->value, at, "no group '" + group + "' on this machine (see /etc/group or `getent group`)");
        out.attach_group = group;
    }
    if (const yaml_entry* e = m.find("log")) {
        const std::string at = m.child_path("log");
        const std::string text = reader.expect_scalar(e->value, at, "'warn,nic=debug'");
        log::levels unused;
        if (const std::string problem = log::parse_levels(text, unused); !problem.empty())
            reader.fail(e->value, at, problem);
        out.log_levels = text;
    }
    if (const yaml_entry* e = m.find("max-sessions"))
        out.max_sessions = static_cast<std::uint32_t>(
            reader.expect_whole(e->value, m.child_path("max-sessions"), 1, 65536, "max-sessions"));
    if (const yaml_entry* e = m.find("dataplane-cpu")) {
        const std::string at = m.child_path("dataplane-cpu");
        const std::string text = reader.expect_scalar(e->value, at, "auto");
        if (text == "auto")
            out.dataplane_cpu = daemon_settings::dataplane_cpu_auto;
        else if (text == "none")
            out.dataplane_cpu = daemon_settings::dataplane_cpu_none;
        else if (!text.empty() && text.size() <= 4 && std::all_of(text.begin(), text.end(), ::isdigit) &&
                 std::stoi(text) < CPU_SETSIZE)
            out.dataplane_cpu = std::stoi(text);
        else
            reader.fail(e->value, at,
                        "bad dataplane-cpu '" + text + "'; expected auto, none or a CPU number from 0 to " +
                            std::to_string(CPU_SETSIZE - 1));
    }
    if (const yaml_entry* e = m.find("max-sessions-per-user"))
        out.max_sessions_per_user = static_cast<std::uint32_t>(
            reader.expect_whole(e->value, m.child_path("max-sessions-per-user"), 1, 65536, "max-sessions-per-user"));
}

} // namespace rocefab::config::sections
