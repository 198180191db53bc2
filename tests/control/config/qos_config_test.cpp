// A switch's `qos:` in the topology file: the presets, overrides in NVUE's words, and where each bad
// value is reported.
#include "control/config/topology.hpp"

#include <gtest/gtest.h>

namespace rocefab::config {
namespace {

#define EXPECT_CONTAINS(text, part) EXPECT_NE((text).find(part), std::string::npos) << "in: " << (text)

using switch_emu::tc_mode;

// The switch's entry is line 2 onwards; `qos`, on line 4, is indented under it (none if empty).
std::string fabric_with_qos(const std::string& qos) {
    return R"(
switches:
  - name: sw1
)" + (qos.empty() ? std::string() : "    qos: " + qos + "\n") +
           R"(hosts:
  - name: h1
    nics:
      - { name: rfab0, address: 10.0.0.1/24 }
links:
  - { a: h1/rfab0, b: sw1/swp1 }
)";
}

switch_emu::qos_spec qos_of(const std::string& qos) {
    topology fabric;
    config_error error;
    EXPECT_TRUE(parse_topology(fabric_with_qos(qos), "test.yaml", fabric, error)) << error.to_string();
    return fabric.switches.empty() ? switch_emu::qos_spec{} : fabric.switches[0].qos;
}

config_error qos_error(const std::string& qos) {
    topology fabric;
    config_error error;
    EXPECT_FALSE(parse_topology(fabric_with_qos(qos), "configs/bad.yaml", fabric, error)) << "loaded";
    return error;
}

TEST(qos_config, a_switch_without_qos_has_nvidias_roce_profile) {
    const auto q = qos_of("");
    EXPECT_EQ(q.trust, switch_emu::trust_mode::dscp);
    EXPECT_EQ(q.dscp_to_priority[26], 3);
    EXPECT_EQ(q.dscp_to_priority[48], 6);
    EXPECT_EQ(q.dscp_to_priority[0], 0);
    EXPECT_EQ(q.lossless_priorities, 1u << 3);
    EXPECT_EQ(q.ets.mode[6], tc_mode::strict);
    EXPECT_EQ(q.ets.bandwidth_percent[0], 50);
    EXPECT_EQ(q.ets.bandwidth_percent[3], 50);
    EXPECT_TRUE(q.congestion[0].enabled);
    EXPECT_TRUE(q.congestion[3].enabled);
    EXPECT_FALSE(q.congestion[1].enabled);
    EXPECT_EQ(q.congestion[3].min_bytes, 150'000u);
    EXPECT_EQ(q.congestion[3].max_bytes, 1'500'000u);
    EXPECT_EQ(q.congestion[3].probability_percent, 100);
}

TEST(qos_config, the_lossy_preset_has_no_lossless_priority) {
    EXPECT_EQ(qos_of("roce-lossy").lossless_priorities, 0u);
    EXPECT_EQ(qos_of("roce").lossless_priorities, 1u << 3);
    EXPECT_EQ(qos_of("{ preset: roce-lossy }").lossless_priorities, 0u);
}

TEST(qos_config, overrides_in_nvue_words_change_only_what_they_name) {
    const auto q = qos_of(R"({ mapping: { trust: l2, dscp: { 10: 3 } }, egress-queue-mapping: { 5: 3 },
           pfc: { switch-priority: [3, 4] },
           egress-scheduler: { 0: { mode: dwrr, bw-percent: 30 }, 3: { bw-percent: 70 }, 5: { mode: strict } },
           congestion-control: { 3: { min-threshold: 20000, max-threshold: 90000, probability: 50 },
                                 0: { ecn: disable } } })");
    EXPECT_EQ(q.trust, switch_emu::trust_mode::pcp);
    EXPECT_EQ(q.dscp_to_priority[10], 3);
    EXPECT_EQ(q.dscp_to_priority[26], 3); // the preset's entries stay
    EXPECT_EQ(q.priority_to_tc[5], 3);
    EXPECT_EQ(q.lossless_priorities, (1u << 3) | (1u << 4));
    EXPECT_EQ(q.ets.bandwidth_percent[0], 30);
    EXPECT_EQ(q.ets.bandwidth_percent[3], 70);
    EXPECT_EQ(q.ets.mode[5], tc_mode::strict);
    EXPECT_EQ(q.ets.mode[6], tc_mode::strict);
    EXPECT_EQ(q.congestion[3].min_bytes, 20'000u);
    EXPECT_EQ(q.congestion[3].max_bytes, 90'000u);
    EXPECT_EQ(q.congestion[3].probability_percent, 50);
    EXPECT_TRUE(q.congestion[3].enabled);
    EXPECT_FALSE(q.congestion[0].enabled);
}

TEST(qos_config, the_pfc_watchdog_defaults_to_nvidias_and_takes_its_nvue_keys) {
    const auto defaults = qos_of("roce").pfc_watchdog;
    EXPECT_TRUE(defaults.enabled);
    EXPECT_EQ(defaults.polling_interval, milliseconds(100));
    EXPECT_EQ(defaults.robustness, 3);
    EXPECT_EQ(defaults.action, switch_emu::pfc_watchdog_action::drop);
    const auto w = qos_of("{ pfc-watchdog: { polling-interval: 50ms, robustness: 5, action: forward } }").pfc_watchdog;
    EXPECT_EQ(w.polling_interval, milliseconds(50));
    EXPECT_EQ(w.robustness, 5);
    EXPECT_EQ(w.action, switch_emu::pfc_watchdog_action::forward);
    EXPECT_FALSE(qos_of("{ pfc-watchdog: { state: disable } }").pfc_watchdog.enabled);
}

TEST(qos_config, bad_values_name_their_line_key_and_the_valid_range) {
    auto e = qos_error("rocee");
    EXPECT_EQ(e.line, 4);
    EXPECT_EQ(e.key, "switches[0].qos");
    EXPECT_CONTAINS(e.message, "unknown QoS preset 'rocee'; expected roce (lossless) or roce-lossy");

    // Each bad value: the key path it is reported under, and what the message says is valid.
    struct bad {
        const char* qos;
        const char* key;
        const char* message;
    };
    const bad cases[] = {
        {"{ mapping: { dscp: { 64: 3 } } }", "mapping.dscp", "bad DSCP '64'; expected a whole number from 0 to 63"},
        {"{ mapping: { trust: dscp } }", "mapping.trust", "expected l3 (DSCP) or l2 (PCP)"},
        {"{ mapping: { dscp: { 26: 3, 26: 5 } } }", "mapping.dscp.26", "duplicate key (first given at line 4)"},
        {"{ egress-scheduler: { 8: { mode: strict } } }", "egress-scheduler.8", "valid keys: 0, 1, 2, 3, 4, 5, 6, 7"},
        {"{ egress-scheduler: { 1: { bw-percent: 10 } } }", "egress-scheduler", "add up to 110; at most 100"},
        {"{ egress-scheduler: { 6: { mode: fair } } }", "egress-scheduler.6.mode", "expected strict or dwrr"},
        {"{ congestion-control: { 3: { probability: 101 } } }", "congestion-control.3.probability", "from 0 to 100"},
        {"{ congestion-control: { 3: { min-threshold: 2000000 } } }", "congestion-control.3",
         "min-threshold 2000000 must be below max-threshold 1500000"},
        {"{ pfc: { switch-priority: [9] } }", "pfc.switch-priority", "from 0 to 7"},
        {"{ ecn: on }", "ecn", "unknown key 'ecn'"},
        {"{ pfc-watchdog: { action: reboot } }", "pfc-watchdog.action", "expected drop, forward or alert"},
        {"{ pfc-watchdog: { polling-interval: 100 } }", "pfc-watchdog.polling-interval",
         "expected a duration from 1ms to 10000ms"},
    };
    for (const bad& c : cases) {
        SCOPED_TRACE(c.qos);
        e = qos_error(c.qos);
        EXPECT_EQ(e.line, 4);
        EXPECT_EQ(e.key, std::string("switches[0].qos.") + c.key);
        EXPECT_CONTAINS(e.message, c.message);
    }
}

} // namespace
} // namespace rocefab::config
