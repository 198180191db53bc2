// Scenario files: what each traffic pattern expands to, the NIC knobs, and where each bad value
// is reported.
#include "sim/scenario.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <unistd.h>

namespace rocefab::sim {
namespace {

#define EXPECT_CONTAINS(text, part) EXPECT_NE((text).find(part), std::string::npos) << "in: " << (text)

// Four hosts on one switch; `rest` (the nic, traffic and simulation sections) starts at line 11.
std::string scenario_text(const std::string& rest, int seed = 1) {
    return "fabric: test\nseed: " + std::to_string(seed) + R"(
switches: [ { name: sw1 } ]
hosts:
  - { name: h1, nics: [ { name: rfab0, address: 10.0.0.1/24 } ] }
  - { name: h2, nics: [ { name: rfab0, address: 10.0.0.2/24 } ] }
  - { name: h3, nics: [ { name: rfab0, address: 10.0.0.3/24 } ] }
  - { name: h4, nics: [ { name: rfab0, address: 10.0.0.4/24 } ] }
links: [ { a: h1/rfab0, b: sw1/swp1 }, { a: h2/rfab0, b: sw1/swp2 }, { a: h3/rfab0, b: sw1/swp3 },
         { a: h4/rfab0, b: sw1/swp4 } ]
)" + rest;
}

// Writes the text into a file in configs/ style (so that size-cdf paths resolve from it).
std::string write(const std::string& text) {
    const std::string path =
        std::string(ROCEFAB_SOURCE_ROOT) + "/configs/.scenario-test-" + std::to_string(::getpid()) + ".yaml";
    std::ofstream(path) << text;
    return path;
}

scenario loaded(const std::string& rest, int seed = 1) {
    const std::string path = write(scenario_text(rest, seed));
    scenario s;
    config::config_error error;
    EXPECT_TRUE(load_scenario(path, s, error)) << error.to_string();
    std::filesystem::remove(path);
    return s;
}

config::config_error error_of(const std::string& rest) {
    const std::string path = write(scenario_text(rest));
    scenario s;
    config::config_error error;
    EXPECT_FALSE(load_scenario(path, s, error)) << "loaded";
    std::filesystem::remove(path);
    return error;
}

TEST(scenario, patterns_expand_to_flows_between_hosts) {
    const scenario s = loaded(R"(traffic:
  - { pattern: incast, senders: [h1, h2, h3], receiver: h4, size: 1MB, start: 10us }
  - { pattern: all-to-all, hosts: [h1, h2, h3], size: 64KiB }
  - { pattern: permutation, hosts: [h1, h2, h3, h4], size: 1000 }
  - { name: solo, from: h4, to: h1, size: 1.5MB }
)");
    ASSERT_EQ(s.flows.size(), 3u + 6u + 4u + 1u);
    for (std::size_t i = 0; i < 3; ++i) {
        EXPECT_EQ(s.flows[i].destination, 3u);
        EXPECT_EQ(s.flows[i].bytes, 1'000'000u);
        EXPECT_EQ(s.flows[i].start, 10'000);
    }
    for (std::size_t i = 3; i < 9; ++i) EXPECT_NE(s.flows[i].source, s.flows[i].destination);
    std::vector<int> received(4, 0);
    for (std::size_t i = 9; i < 13; ++i) {
        EXPECT_NE(s.flows[i].source, s.flows[i].destination); // a derangement
        ++received[s.flows[i].destination];
    }
    EXPECT_EQ(received, std::vector<int>(4, 1)); // every host receives exactly once
    EXPECT_EQ(s.flows.back().name, "solo");
    EXPECT_EQ(s.flows.back().bytes, 1'500'000u);
    EXPECT_EQ(s.output, "sim-out/test");
}

TEST(scenario, sizes_from_a_cdf_arrive_poisson_at_the_load_and_follow_the_seed) {
    const std::string traffic = R"(traffic:
  - { pattern: incast, senders: [h1, h2], receiver: h3, size-cdf: flow-size-cdf/websearch.txt, flows: 200, load: 0.5 }
)";
    const scenario a = loaded(traffic), b = loaded(traffic), c = loaded(traffic, 2);
    ASSERT_EQ(a.flows.size(), 400u);
    double bytes = 0;
    sim_time last_start = 0;
    for (const flow_spec& f : a.flows) {
        EXPECT_GE(f.bytes, 1u);
        EXPECT_LE(f.bytes, 30'000'000u); // the web-search CDF's largest flow
        bytes += static_cast<double>(f.bytes);
        if (f.source == 0) {
            EXPECT_GE(f.start, last_start); // one sender's flows in order of arrival
            last_start = f.start;
        }
    }
    // Offered load of h1 over its arrivals: about half its 100G link.
    const double offered = bytes / 2 * 8 / (static_cast<double>(last_start) / 1e9) / 100e9;
    EXPECT_GT(offered, 0.3);
    EXPECT_LT(offered, 0.8);
    ASSERT_EQ(b.flows.size(), a.flows.size());
    bool all_same = true, any_differs = false;
    for (std::size_t i = 0; i < a.flows.size(); ++i) {
        all_same &= a.flows[i].bytes == b.flows[i].bytes && a.flows[i].start == b.flows[i].start;
        any_differs |= a.flows[i].bytes != c.flows[i].bytes;
    }
    EXPECT_TRUE(all_same) << "the same seed must give the same flows";
    EXPECT_TRUE(any_differs) << "another seed, other sizes";
}

TEST(scenario, nic_knobs_take_mlx5_names_and_units) {
    const scenario s = loaded(R"(nic:
  dcqcn: { priorities: [3], rpg_time_reset: 55us, rpg_ai_rate: 40, dce_tcp_g: 1020, clamp_tgt_rate: 1 }
  hosts: { h2: { host-rx-rate: 10G } }
traffic: [ { from: h1, to: h2, size: 1MB } ]
simulation: { duration: 2ms, sample-interval: 5us, output: out/x }
)");
    const config::nic_settings& nic = s.topology.nic;
    EXPECT_EQ(nic.dcqcn_priorities, 1u << 3);
    EXPECT_EQ(nic.dcqcn.rpg_time_reset, 55'000);
    EXPECT_EQ(nic.dcqcn.rpg_ai_rate_mbps, 40u);
    EXPECT_EQ(nic.dcqcn.dce_tcp_g, 1020u);
    EXPECT_TRUE(nic.dcqcn.clamp_tgt_rate);
    EXPECT_EQ(s.topology.hosts[1].host_rx_bps, 10'000'000'000u);
    EXPECT_EQ(s.topology.hosts[0].host_rx_bps, 0u);
    EXPECT_EQ(s.duration, milliseconds(2));
    EXPECT_EQ(s.sample_interval, microseconds(5));
    EXPECT_EQ(s.output, "out/x");
    EXPECT_EQ(loaded("nic: { dcqcn: { state: disabled } }\ntraffic: [ { from: h1, to: h2, size: 1MB } ]\n")
                  .topology.nic.dcqcn_priorities,
              0u);
}

TEST(scenario, bad_values_name_their_line_key_and_what_is_valid) {
    struct bad {
        const char* rest;
        int line;
        const char* key;
        const char* message;
    };
    const bad cases[] = {
        {"simulation: { duration: 1ms }\n", 0, "traffic", "missing; a scenario needs at least one flow"},
        {"traffic: [ { from: h1, to: h9, size: 1MB } ]\n", 11, "traffic[0].to",
         "unknown host 'h9' (hosts: h1, h2, h3, h4)"},
        {"traffic: [ { from: h1, to: h1, size: 1MB } ]\n", 11, "traffic[0].to", "from one host to another"},
        {"traffic: [ { from: h1, to: h2, size: lots } ]\n", 11, "traffic[0].size",
         "as a number or with a unit B, KB, MB"},
        {"traffic: [ { pattern: broadcast, hosts: [h1, h2], size: 1MB } ]\n", 11, "traffic[0].pattern",
         "expected incast, all-to-all or permutation"},
        {"traffic: [ { pattern: incast, senders: [h1, h4], receiver: h4, size: 1MB } ]\n", 11, "traffic[0].senders",
         "the receiver cannot be one of the senders"},
        {"nic: { dcqcn: { rpg_ai: 5 } }\ntraffic: [ { from: h1, to: h2, size: 1MB } ]\n", 11, "nic.dcqcn.rpg_ai",
         "unknown key 'rpg_ai'"},
        {"nic: { dcqcn: { rpg_gd: 20 } }\ntraffic: [ { from: h1, to: h2, size: 1MB } ]\n", 11, "nic.dcqcn.rpg_gd",
         "from 1 to 15"},
        {"nic: { hosts: { h2: { host-rx-rate: fast } } }\ntraffic: [ { from: h1, to: h2, size: 1MB } ]\n", 11,
         "nic.hosts.h2.host-rx-rate", "a number and a unit M, G or T"},
        {"nic: { hosts: { h2: { host-rx-rate: 10G }, h2: { trust: l2 } } }\n"
         "traffic: [ { from: h1, to: h2, size: 1MB } ]\n",
         11, "nic.hosts.h2", "duplicate key (first given at line 11)"},
        {"traffic: [ { from: h1, to: h2, size-cdf: nowhere.txt, flows: 1, load: 1 } ]\n", 11, "traffic[0].size-cdf",
         "cannot read the size CDF"},
        {"traffic: [ { from: h1, to: h2, size: 1MB } ]\nsimulation: { duration: 2s }\n", 12, "simulation.duration",
         "expected 1us to 1000ms"},
        {"traffic: [ { from: h1, to: h2, sise: 1MB } ]\n", 11, "traffic[0].sise",
         "unknown key 'sise'; did you mean 'size'? (valid keys: name, from, to, size, size-cdf, flows, load, start)"},
        {"traffic: [ { pattern: incast, senders: [h1], reciever: h2, size: 1MB } ]\n", 11, "traffic[0].reciever",
         "did you mean 'receiver'?"},
        {"traffic: [ { from: h1, to: h2, size: 1MB } ]\nsimulation: { sample-intervl: 5us }\n", 12,
         "simulation.sample-intervl", "did you mean 'sample-interval'?"},
    };
    for (const bad& c : cases) {
        SCOPED_TRACE(c.rest);
        const config::config_error e = error_of(c.rest);
        if (c.line) {
            EXPECT_EQ(e.line, c.line);
        }
        EXPECT_EQ(e.key, c.key);
        EXPECT_CONTAINS(e.message, c.message);
    }
}

TEST(scenario, a_repeated_key_is_refused_with_its_file_and_line_not_read_as_its_first_copy) {
    const std::string path = write(scenario_text(R"(traffic:
  - from: h1
    to: h2
    size: 1MB
    size: 2MB
simulation:
  duration: 1ms
)"));
    scenario s;
    config::config_error error;
    EXPECT_FALSE(load_scenario(path, s, error)) << "loaded";
    std::filesystem::remove(path);
    EXPECT_EQ(error.file, path);
    EXPECT_EQ(error.line, 15);
    EXPECT_EQ(error.column, 5);
    EXPECT_EQ(error.key, "traffic[0].size");
    EXPECT_EQ(error.message, "duplicate key (first given at line 14)");
    EXPECT_EQ(error.to_string(), path + ":15:5: traffic[0].size: duplicate key (first given at line 14)");

    const config::config_error twice = error_of("traffic: [ { from: h1, to: h2, size: 1MB } ]\n"
                                                "simulation: { duration: 1ms, duration: 2ms }\n");
    EXPECT_EQ(twice.line, 12);
    EXPECT_EQ(twice.key, "simulation.duration");
    EXPECT_EQ(twice.message, "duplicate key (first given at line 12)");
}

} // namespace
} // namespace rocefab::sim
