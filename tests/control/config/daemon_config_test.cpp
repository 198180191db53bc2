// The `daemon:` section: who besides the owner may attach, the log levels, the session limits;
// what loads, and where each bad value is reported.
#include "control/config/topology.hpp"
#include "dataplane/log.hpp"

#include <gtest/gtest.h>

#include <grp.h>

namespace rocefab::config {
namespace {

#define EXPECT_CONTAINS(text, part) EXPECT_NE((text).find(part), std::string::npos) << "in: " << (text)

std::string fabric_with(const std::string& daemon_section) {
    return daemon_section + R"(
hosts:
  - name: h1
    nics:
      - { name: rfab0, address: 10.0.0.1/24 }
  - name: h2
    nics:
      - { name: rfab0, address: 10.0.0.2/24 }
links:
  - { a: h1/rfab0, b: h2/rfab0 }
)";
}

TEST(daemon_config, without_the_section_only_the_owner_attaches_and_the_log_is_at_info) {
    topology fabric;
    config_error error;
    ASSERT_TRUE(parse_topology(fabric_with(""), "test.yaml", fabric, error)) << error.to_string();
    EXPECT_EQ(fabric.daemon.attach_group, "");
    EXPECT_EQ(fabric.daemon.log_levels, "info");
    EXPECT_EQ(fabric.daemon.max_sessions, 2048u);
    EXPECT_EQ(fabric.daemon.max_sessions_per_user, 512u);
    EXPECT_EQ(fabric.daemon.dataplane_cpu, daemon_settings::dataplane_cpu_auto);
}

TEST(daemon_config, the_data_planes_cpu_is_auto_none_or_a_number) {
    topology fabric;
    config_error error;
    ASSERT_TRUE(parse_topology(fabric_with("daemon: { dataplane-cpu: none }"), "test.yaml", fabric, error));
    EXPECT_EQ(fabric.daemon.dataplane_cpu, daemon_settings::dataplane_cpu_none);
    ASSERT_TRUE(parse_topology(fabric_with("daemon: { dataplane-cpu: 3 }"), "test.yaml", fabric, error));
    EXPECT_EQ(fabric.daemon.dataplane_cpu, 3);
    ASSERT_TRUE(parse_topology(fabric_with("daemon: { dataplane-cpu: auto }"), "test.yaml", fabric, error));
    EXPECT_EQ(fabric.daemon.dataplane_cpu, daemon_settings::dataplane_cpu_auto);
    ASSERT_FALSE(parse_topology(fabric_with("daemon:\n  dataplane-cpu: last"), "test.yaml", fabric, error));
    EXPECT_EQ(error.line, 2);
    EXPECT_EQ(error.key, "daemon.dataplane-cpu");
    EXPECT_CONTAINS(error.message, "bad dataplane-cpu 'last'; expected auto, none or a CPU number from 0 to");
}

TEST(daemon_config, every_key_loads) {
    const group* any = ::getgrgid(0);
    ASSERT_NE(any, nullptr);
    const std::string name = any->gr_name;
    topology fabric;
    config_error error;
    ASSERT_TRUE(parse_topology(fabric_with("daemon: { attach-group: " + name +
                                           ", log: 'warn,nic=debug', max-sessions: 100, max-sessions-per-user: 10 }"),
                               "test.yaml", fabric, error))
        << error.to_string();
    EXPECT_EQ(fabric.daemon.attach_group, name);
    EXPECT_EQ(fabric.daemon.log_levels, "warn,nic=debug");
    EXPECT_EQ(fabric.daemon.max_sessions, 100u);
    EXPECT_EQ(fabric.daemon.max_sessions_per_user, 10u);
}

TEST(daemon_config, a_group_the_machine_lacks_is_reported_where_it_is_named) {
    topology fabric;
    config_error error;
    ASSERT_FALSE(
        parse_topology(fabric_with("daemon:\n  attach-group: no-such-group-here"), "test.yaml", fabric, error));
    EXPECT_EQ(error.line, 2);
    EXPECT_EQ(error.key, "daemon.attach-group");
    EXPECT_CONTAINS(error.message, "no group 'no-such-group-here'");
}

TEST(daemon_config, a_bad_log_level_names_the_valid_levels_and_components) {
    topology fabric;
    config_error error;
    ASSERT_FALSE(parse_topology(fabric_with("daemon:\n  log: 'info,nic=loud'"), "test.yaml", fabric, error));
    EXPECT_EQ(error.key, "daemon.log");
    EXPECT_CONTAINS(error.message, "unknown log level 'loud'");
    EXPECT_CONTAINS(error.message, "trace, debug, info, warn, error");
    ASSERT_FALSE(parse_topology(fabric_with("daemon:\n  log: 'nick=debug'"), "test.yaml", fabric, error));
    EXPECT_CONTAINS(error.message, "unknown log component 'nick'");
    EXPECT_CONTAINS(error.message, "daemon, attach, control, link, nic, switch");
}

TEST(daemon_config, a_misspelt_key_suggests_the_right_one) {
    topology fabric;
    config_error error;
    ASSERT_FALSE(parse_topology(fabric_with("daemon: { max-session: 5 }"), "test.yaml", fabric, error));
    EXPECT_EQ(error.key, "daemon.max-session");
    EXPECT_CONTAINS(error.message, "did you mean 'max-sessions'?");
}

TEST(log_levels, a_component_level_overrides_the_general_one) {
    log::levels levels;
    ASSERT_EQ(log::parse_levels("warn, nic=debug ,attach=off", levels), "");
    EXPECT_EQ(levels.of(log::component::daemon), spdlog::level::warn);
    EXPECT_EQ(levels.of(log::component::nic), spdlog::level::debug);
    EXPECT_EQ(levels.of(log::component::attach), spdlog::level::off);
}

TEST(log_levels, a_bad_item_leaves_the_levels_as_they_were) {
    log::levels levels;
    EXPECT_NE(log::parse_levels("debug,switch=nope", levels), "");
    EXPECT_EQ(levels.of(log::component::daemon), spdlog::level::info);
    EXPECT_EQ(levels.of(log::component::switch_node), spdlog::level::info);
}

} // namespace
} // namespace rocefab::config
