// A switch's `qos:` in the words of Cumulus NVUE's `qos` tree, into switch_emu's qos_spec: classification
// (trust, DSCP to switch priority), priority to traffic class, PFC's lossless priorities, ETS, ECN/WRED and the
// PFC watchdog, each over a preset (NVIDIA's `qos roce` or its lossy variant).
#include "control/config/sections/sections.hpp"

#include "control/config/units.hpp"

namespace rocefab::config::sections {
namespace {

using namespace switch_emu;

qos_spec read_preset(const yaml_reader& reader, const YAML::Node& node, const std::string& path) {
    const std::string name = reader.expect_scalar(node, path, "roce");
    qos_spec qos; // NVIDIA's `qos roce`: lossless priority 3
    if (name == "roce") return qos;
    if (name == "roce-lossy") {
        qos.lossless_priorities = 0;
        return qos;
    }
    reader.fail(node, path, "unknown QoS preset '" + name + "'; expected roce (lossless) or roce-lossy");
}

// Keys "0".."7" (switch priorities or traffic classes) of a mapping, each with its node.
yaml_mapping expect_class_map(const yaml_reader& reader, const YAML::Node& node, const std::string& path) {
    return reader.expect_map(node, path, {"0", "1", "2", "3", "4", "5", "6", "7"});
}

void read_mapping(const yaml_reader& reader, const YAML::Node& node, const std::string& path, qos_spec& qos) {
    const yaml_mapping map = reader.expect_map(node, path, {"trust", "dscp"});
    if (const yaml_entry* t = map.find("trust")) {
        const std::string at = map.child_path("trust");
        const std::string trust = reader.expect_scalar(t->value, at, "l3");
        if (trust == "l3")
            qos.trust = trust_mode::dscp;
        else if (trust == "l2")
            qos.trust = trust_mode::pcp;
        else
            reader.fail(t->value, at, "unknown trust '" + trust + "'; expected l3 (DSCP) or l2 (PCP)");
    }
    if (const yaml_entry* d = map.find("dscp")) {
        const std::string at = map.child_path("dscp");
        if (!d->value.IsMap())
            reader.fail(d->value, at, "expected a mapping of DSCP to switch priority, e.g. { 26: 3 }");
        for (const yaml_entry& entry : reader.expect_unique_keys(d->value, at)) {
            const std::string key = entry.key_node.IsScalar() ? entry.key : "?";
            const auto dscp = reader.expect_whole(entry.key_node, at, 0, 63, "DSCP");
            qos.dscp_to_priority[dscp] =
                static_cast<std::uint8_t>(reader.expect_whole(entry.value, at + "." + key, 0, 7, "switch priority"));
        }
    }
}

void read_egress_scheduler(const yaml_reader& reader, const YAML::Node& node, const std::string& path, qos_spec& qos) {
    const yaml_mapping map = expect_class_map(reader, node, path);
    for (const auto& c : map.entries) {
        const std::string at = map.child_path(c.key);
        const std::size_t tc = std::stoul(c.key);
        const yaml_mapping t = reader.expect_map(c.value, at, {"mode", "bw-percent"});
        const yaml_entry* mode_entry = t.find("mode");
        const std::string mode = mode_entry ? reader.expect_scalar(mode_entry->value, at + ".mode", "dwrr") : "dwrr";
        if (mode == "strict")
            qos.ets.mode[tc] = tc_mode::strict;
        else if (mode == "dwrr")
            qos.ets.mode[tc] = tc_mode::dwrr;
        else
            reader.fail(mode_entry->value, at + ".mode", "unknown mode '" + mode + "'; expected strict or dwrr");
        if (const yaml_entry* bw = t.find("bw-percent")) {
            if (mode == "strict")
                reader.fail(bw->value, at + ".bw-percent", "a strict traffic class takes no bw-percent");
            qos.ets.bandwidth_percent[tc] =
                static_cast<std::uint8_t>(reader.expect_whole(bw->value, at + ".bw-percent", 0, 100, "bw-percent"));
        }
    }
    unsigned shares = 0;
    for (std::size_t tc = 0; tc < 8; ++tc)
        if (qos.ets.mode[tc] == tc_mode::dwrr) shares += qos.ets.bandwidth_percent[tc];
    if (shares > 100)
        reader.fail(node, path,
                    "the DWRR traffic classes' bw-percent add up to " + std::to_string(shares) + "; at most 100");
}

void read_pfc_watchdog(const yaml_reader& reader, const YAML::Node& node, const std::string& at, pfc_watchdog_spec& w) {
    const yaml_mapping wd = reader.expect_map(node, at, {"state", "polling-interval", "robustness", "action"});
    if (const yaml_entry* v = wd.find("state"))
        w.enabled = reader.expect_either(v->value, at + ".state", "enable", "disable");
    if (const yaml_entry* v = wd.find("polling-interval")) {
        const std::string text = reader.expect_scalar(v->value, at + ".polling-interval", "100ms");
        const auto interval = parse_duration(text);
        if (!interval || *interval < 1'000'000 || *interval > 10'000'000'000)
            reader.fail(v->value, at + ".polling-interval",
                        "bad polling-interval '" + text + "'; expected a duration from 1ms to 10000ms (e.g. 100ms)");
        w.polling_interval = *interval;
    }
    if (const yaml_entry* v = wd.find("robustness"))
        w.robustness =
            static_cast<std::uint8_t>(reader.expect_whole(v->value, at + ".robustness", 1, 100, "robustness"));
    if (const yaml_entry* v = wd.find("action")) {
        const std::string action = reader.expect_scalar(v->value, at + ".action", "drop");
        if (action == "drop")
            w.action = pfc_watchdog_action::drop;
        else if (action == "forward")
            w.action = pfc_watchdog_action::forward;
        else if (action == "alert")
            w.action = pfc_watchdog_action::alert;
        else
            reader.fail(v->value, at + ".action", "unknown action '" + action + "'; expected drop, forward or alert");
    }
}

void read_congestion_control(const yaml_reader& reader, const YAML::Node& node, const std::string& path,
                             qos_spec& qos) {
    const yaml_mapping map = expect_class_map(reader, node, path);
    for (const auto& c : map.entries) {
        const std::string at = map.child_path(c.key);
        congestion_spec& cc = qos.congestion[std::stoul(c.key)];
        const yaml_mapping t = reader.expect_map(c.value, at, {"ecn", "min-threshold", "max-threshold", "probability"});
        if (const yaml_entry* on = t.find("ecn"))
            cc.enabled = reader.expect_either(on->value, at + ".ecn", "enable", "disable");
        constexpr std::uint64_t most = 1ull << 32; // bytes; more than any switch buffer
        if (const yaml_entry* v = t.find("min-threshold"))
            cc.min_bytes = reader.expect_whole(v->value, at + ".min-threshold", 0, most, "min-threshold (bytes)");
        if (const yaml_entry* v = t.find("max-threshold"))
            cc.max_bytes = reader.expect_whole(v->value, at + ".max-threshold", 1, most, "max-threshold (bytes)");
        if (const yaml_entry* v = t.find("probability"))
            cc.probability_percent = static_cast<std::uint8_t>(
                reader.expect_whole(v->value, at + ".probability", 0, 100, "probability (%)"));
        if (cc.min_bytes >= cc.max_bytes)
            reader.fail(c.value, at,
                        "min-threshold " + std::to_string(cc.min_bytes) + " must be below max-threshold " +
                            std::to_string(cc.max_bytes) + " (bytes)");
    }
}

} // namespace

qos_spec read_qos(const yaml_reader& reader, const YAML::Node& node, const std::string& path) {
    if (node.IsScalar()) return read_preset(reader, node, path);
    const yaml_mapping m = reader.expect_map(
        node, path,
        {"preset", "mapping", "egress-queue-mapping", "pfc", "egress-scheduler", "congestion-control", "pfc-watchdog"});
    qos_spec qos;
    if (const yaml_entry* e = m.find("preset")) qos = read_preset(reader, e->value, m.child_path("preset"));
    if (const yaml_entry* e = m.find("mapping")) read_mapping(reader, e->value, m.child_path("mapping"), qos);
    if (const yaml_entry* e = m.find("egress-queue-mapping")) {
        const yaml_mapping map = expect_class_map(reader, e->value, m.child_path("egress-queue-mapping"));
        for (const auto& c : map.entries)
            qos.priority_to_tc[std::stoul(c.key)] =
                static_cast<std::uint8_t>(reader.expect_whole(c.value, map.child_path(c.key), 0, 7, "traffic class"));
    }
    if (const yaml_entry* e = m.find("pfc")) {
        const yaml_mapping pfc = reader.expect_map(e->value, m.child_path("pfc"), {"switch-priority"});
        if (const yaml_entry* list = pfc.find("switch-priority")) {
            const std::string at = pfc.child_path("switch-priority");
            qos.lossless_priorities = 0;
            for (const YAML::Node& p : reader.expect_list(list->value, at))
                qos.lossless_priorities |=
                    static_cast<std::uint8_t>(1u << reader.expect_whole(p, at, 0, 7, "switch priority"));
        }
    }
    if (const yaml_entry* e = m.find("egress-scheduler"))
        read_egress_scheduler(reader, e->value, m.child_path("egress-scheduler"), qos);
    if (const yaml_entry* e = m.find("pfc-watchdog"))
        read_pfc_watchdog(reader, e->value, m.child_path("pfc-watchdog"), qos.pfc_watchdog);
    if (const yaml_entry* e = m.find("congestion-control"))
        read_congestion_control(reader, e->value, m.child_path("congestion-control"), qos);
    return qos;
}

} // namespace rocefab::config::sections
