// The files shipped under configs/: the good ones load, the misconfiguration examples fail as their comments say.
#include "control/config/topology.hpp"

#include <gtest/gtest.h>

namespace rocefab::config {
namespace {

const std::string source_root = ROCEFAB_SOURCE_ROOT;

TEST(config_files, two_hosts_loads_with_both_hosts_on_sw1) {
    topology fabric;
    config_error error;
    ASSERT_TRUE(load_topology(source_root + "/configs/two-hosts.yaml", fabric, error)) << error.to_string();
    EXPECT_EQ(fabric.name, "two-hosts");
    ASSERT_EQ(fabric.hosts.size(), 2u);
    EXPECT_EQ(fabric.hosts[0].nics[0].address.to_string(), "10.0.0.1/24");
    EXPECT_EQ(fabric.hosts[1].nics[0].address.to_string(), "10.0.0.2/24");
    EXPECT_EQ(fabric.hosts[0].nics[0].name, "rfab0");
    ASSERT_EQ(fabric.switches.size(), 1u);
    EXPECT_EQ(fabric.switches[0].ports.size(), 2u);
    EXPECT_EQ(fabric.routes[0].size(), 2u);
}

TEST(config_files, leaf_spine_has_two_spines_four_leaves_eight_hosts_and_ecmp_between_leaves) {
    topology fabric;
    config_error error;
    ASSERT_TRUE(load_topology(source_root + "/configs/leaf-spine.yaml", fabric, error)) << error.to_string();
    ASSERT_EQ(fabric.switches.size(), 6u);
    EXPECT_EQ(fabric.hosts.size(), 8u);
    EXPECT_EQ(fabric.switches[2].name, "leaf1");
    EXPECT_EQ(fabric.switches[2].ports.size(), 4u); // two hosts, two spines
    // leaf1 reaches another leaf's subnet over both spines.
    bool ecmp = false;
    for (const auto& r : fabric.routes[2])
        if (r.destination.to_string() == "10.0.4.2/32") ecmp = r.egress_ports.size() == 2; // h8
    EXPECT_TRUE(ecmp);
    EXPECT_EQ(fabric.switches[0].qos.lossless_priorities, 1u << 3);
}

TEST(config_files, incast_has_nine_hosts_on_10g_links_and_the_lossless_profile) {
    topology fabric;
    config_error error;
    ASSERT_TRUE(load_topology(source_root + "/configs/incast.yaml", fabric, error)) << error.to_string();
    EXPECT_EQ(fabric.hosts.size(), 9u);
    EXPECT_EQ(fabric.links[0].params.speed_bps, 10'000'000'000u);
    EXPECT_EQ(fabric.switches[0].qos.lossless_priorities, 1u << 3);
}

struct bad_file {
    const char* name;
    int line;
    int column;
    const char* key;
    const char* message_start;
};

class bad_config_files : public testing::TestWithParam<bad_file> {};

TEST_P(bad_config_files, fail_with_the_position_key_and_message_they_document) {
    const bad_file& expected = GetParam();
    const std::string path = source_root + "/configs/bad/" + expected.name;
    topology fabric;
    config_error error;
    ASSERT_FALSE(load_topology(path, fabric, error));
    EXPECT_EQ(error.file, path);
    EXPECT_EQ(error.line, expected.line);
    EXPECT_EQ(error.column, expected.column);
    EXPECT_EQ(error.key, expected.key);
    EXPECT_EQ(error.message.rfind(expected.message_start, 0), 0u) << error.to_string();
}

INSTANTIATE_TEST_SUITE_P(shipped, bad_config_files,
                         testing::Values(bad_file{"unknown-key.yaml", 16, 33, "links[1].sped",
                                                  "unknown key 'sped'; did you mean 'speed'?"},
                                         bad_file{"duplicate-address.yaml", 12, 33, "hosts[1].nics[0].address",
                                                  "duplicate address 10.0.0.1: already used by h1/rfab0 at line 9"},
                                         bad_file{"dangling-link.yaml", 16, 10, "links[1].a",
                                                  "unknown node 'h3' (hosts: h1, h2; switches: sw1)"}));

TEST(config_files, missing_file_is_reported_without_a_position) {
    topology fabric;
    config_error error;
    ASSERT_FALSE(load_topology(source_root + "/configs/no-such-file.yaml", fabric, error));
    EXPECT_EQ(error.line, 0);
    EXPECT_EQ(error.to_string(), source_root + "/configs/no-such-file.yaml: cannot read: No such file or directory");
}

TEST(config_files, directory_is_not_a_config_file) {
    topology fabric;
    config_error error;
    ASSERT_FALSE(load_topology(source_root + "/configs", fabric, error));
    EXPECT_EQ(error.message, "cannot read: is a directory");
}

} // namespace
} // namespace rocefab::config
