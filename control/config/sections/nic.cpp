// `nic:`: the hosts' NICs as nic_emu runs them: the trust mode their RoCE frames carry (DSCP or PCP), DCQCN with
// mlx5's knob names and units (nic_emu/dcqcn.hpp), RC's retransmission mode (go-back-N or selective repeat) and
// adaptive timeouts, and per host a slow receiver's rate and overrides.
#include "control/config/sections/sections.hpp"

#include "control/config/units.hpp"

#include <algorithm>
#include <bit>

namespace rocefab::config::sections {
namespace {

void read_dcqcn(const yaml_reader& reader, const YAML::Node& node, const std::string& at, nic_settings& out) {
    const yaml_mapping m = reader.expect_map(node, at,
                                             {"state",
                                              "priorities",
                                              "rpg_time_reset",
                                              "rpg_byte_reset",
                                              "rpg_threshold",
                                              "rpg_max_rate",
                                              "rpg_ai_rate",
                                              "rpg_hai_rate",
                                              "rpg_gd",
                                              "rpg_min_dec_fac",
                                              "rpg_min_rate",
                                              "rate_to_set_on_first_cnp",
                                              "dce_tcp_g",
                                              "dce_tcp_rtt",
                                              "rate_reduce_monitor_period",
                                              "initial_alpha_value",
                                              "min_time_between_cnps",
                                              "cnp_dscp",
                                              "cnp_802p_prio",
                                              "clamp_tgt_rate",
                                              "clamp_tgt_rate_after_time_inc"});
    nic::dcqcn_params& p = out.dcqcn;
    auto time = [&](const yaml_entry& e, sim_time least, sim_time most) {
        return reader.expect_duration(e.value, m.child_path(e.key), least, most, e.key, "300us");
    };
    auto whole = [&](const yaml_entry& e, std::uint64_t least, std::uint64_t most) {
        return reader.expect_whole(e.value, m.child_path(e.key), least, most, e.key);
    };
    constexpr std::uint64_t mbps_most = 1'600'000; // 1.6T in Mb/s
    bool enabled = out.dcqcn_priorities != 0;
    std::uint8_t priorities = enabled ? out.dcqcn_priorities : 0xff;
    for (const yaml_entry& e : m.entries) {
        const std::string& k = e.key;
        if (k == "state") {
            enabled = reader.expect_either(e.value, m.child_path(k), "enabled", "disabled");
        } else if (k == "priorities") {
            priorities = 0;
            for (const YAML::Node& v : reader.expect_list(e.value, m.child_path(k)))
                priorities |=
                    static_cast<std::uint8_t>(1u << reader.expect_whole(v, m.child_path(k), 0, 7, "priority"));
        } else if (k == "rpg_time_reset")
            p.rpg_time_reset = time(e, 1'000, milliseconds(100));
        else if (k == "rpg_byte_reset")
            p.rpg_byte_reset = static_cast<std::uint32_t>(whole(e, 0, 1u << 30));
        else if (k == "rpg_threshold")
            p.rpg_threshold = static_cast<std::uint32_t>(whole(e, 1, 31));
        else if (k == "rpg_max_rate")
            p.rpg_max_rate_mbps = whole(e, 0, mbps_most);
        else if (k == "rpg_ai_rate")
            p.rpg_ai_rate_mbps = whole(e, 1, mbps_most);
        else if (k == "rpg_hai_rate")
            p.rpg_hai_rate_mbps = whole(e, 1, mbps_most);
        else if (k == "rpg_gd")
            p.rpg_gd = static_cast<std::uint32_t>(whole(e, 1, 15));
        else if (k == "rpg_min_dec_fac")
            p.rpg_min_dec_fac = static_cast<std::uint32_t>(whole(e, 1, 100));
        else if (k == "rpg_min_rate")
            p.rpg_min_rate_mbps = whole(e, 1, mbps_most);
        else if (k == "rate_to_set_on_first_cnp")
            p.rate_to_set_on_first_cnp_mbps = whole(e, 0, mbps_most);
        else if (k == "dce_tcp_g")
            p.dce_tcp_g = static_cast<std::uint32_t>(whole(e, 0, 1024));
        else if (k == "dce_tcp_rtt")
            p.dce_tcp_rtt = time(e, 1, milliseconds(100));
        else if (k == "rate_reduce_monitor_period")
            p.rate_reduce_monitor_period = time(e, 0, milliseconds(100));
        else if (k == "initial_alpha_value")
            p.initial_alpha_value = static_cast<std::uint32_t>(whole(e, 0, 1024));
        else if (k == "min_time_between_cnps")
            p.min_time_between_cnps = time(e, 0, milliseconds(100));
        else if (k == "cnp_dscp")
            p.cnp_dscp = static_cast<std::uint8_t>(whole(e, 0, 63));
        else if (k == "cnp_802p_prio")
            p.cnp_802p_prio = static_cast<std::uint8_t>(whole(e, 0, 7));
        else if (k == "clamp_tgt_rate")
            p.clamp_tgt_rate = whole(e, 0, 1) == 1;
        else if (k == "clamp_tgt_rate_after_time_inc")
            p.clamp_tgt_rate_after_time_inc = whole(e, 0, 1) == 1;
    }
    out.dcqcn_priorities = enabled ? priorities : 0;
}

// `adaptive-retransmission:` enabled or disabled, or a profile as ConnectX's ROCE_ACCL register takes one
// (nic_emu/adaptive_retransmission.hpp), with the firmware's limits.
void read_adaptive(const yaml_reader& reader, const YAML::Node& node, const std::string& at, nic_settings& out) {
    if (!node.IsMap()) {
        out.adaptive_retransmission = reader.expect_either(node, at, "enabled", "disabled");
        return;
    }
    const yaml_mapping m = reader.expect_map(node, at, {"state", "time-base", "initial", "ranges", "start-range"});
    out.adaptive_retransmission = true; // a profile given is a profile used, unless `state: disabled`
    nic::adaptive_profile& p = out.adaptive_timeouts;
    constexpr std::uint64_t top_exponent = 31;
    const YAML::Node* start_node = nullptr;
    for (const yaml_entry& e : m.entries) {
        const std::string path = m.child_path(e.key);
        if (e.key == "state") {
            out.adaptive_retransmission = reader.expect_either(e.value, path, "enabled", "disabled");
        } else if (e.key == "time-base") {
            const sim_time t = reader.expect_duration(e.value, path, 4'000, milliseconds(1), "time-base", "4096ns");
            if (!std::has_single_bit(static_cast<std::uint64_t>(t)))
                reader.fail(
                    e.value, path,
                    "time-base must be a power of two in nanoseconds, at least 4 us (4096ns, 8192ns, ...); got " +
                        std::to_string(t) + "ns");
            p.time_base = t;
        } else if (e.key == "initial") {
            const yaml_mapping i = reader.expect_map(e.value, path, {"low", "size"});
            if (const yaml_entry* low = i.find("low"))
                p.initial_low = static_cast<std::uint8_t>(
                    reader.expect_whole(low->value, i.child_path("low"), 0, top_exponent, "exponent"));
            if (const yaml_entry* size = i.find("size"))
                p.initial_size =
                    static_cast<std::uint8_t>(reader.expect_whole(size->value, i.child_path("size"), 1, 8, "size"));
        } else if (e.key == "ranges") {
            const std::vector<YAML::Node> items = reader.expect_list(e.value, path);
            if (items.empty() || items.size() > nic::max_adaptive_ranges)
                reader.fail(e.value, path,
                            "expected 1 to 4 ranges (ConnectX's firmware takes at most 4), e.g. [ { low: 3, size: 3, "
                            "retries: 2 }, { low: 7, size: 3 } ]");
            for (std::size_t k = 0; k < items.size(); ++k) {
                const std::string item = path + "[" + std::to_string(k) + "]";
                const yaml_mapping r = reader.expect_map(items[k], item, {"low", "size", "retries", "decrease"});
                nic::adaptive_range range{0, 0, 1, 2};
                const YAML::Node& low = reader.required(r, "low", " (the range's first exponent, e.g. low: 3)");
                range.low = static_cast<std::uint8_t>(
                    reader.expect_whole(low, r.child_path("low"), 0, top_exponent, "exponent"));
                if (const yaml_entry* size = r.find("size"))
                    range.size = static_cast<std::uint8_t>(
                        reader.expect_whole(size->value, r.child_path("size"), 0, top_exponent - range.low, "size"));
                if (const yaml_entry* retries = r.find("retries"))
                    range.retries = static_cast<std::uint8_t>(
                        reader.expect_whole(retries->value, r.child_path("retries"), 1, 15, "retries"));
                if (const yaml_entry* decrease = r.find("decrease"))
                    range.decrease = static_cast<std::uint8_t>(
                        reader.expect_whole(decrease->value, r.child_path("decrease"), 0, 8, "decrease"));
                if (k > 0) {
                    const nic::adaptive_range& before = p.ranges[k - 1];
                    if (range.low <= before.low + before.size)
                        reader.fail(low, r.child_path("low"),
                                    "ranges must be sorted and must not overlap: this one starts at " +
                                        std::to_string(range.low) + ", and the one before reaches " +
                                        std::to_string(before.low + before.size));
                }
                p.ranges[k] = range;
            }
            p.range_count = static_cast<std::uint8_t>(items.size());
        } else if (e.key == "start-range") {
            start_node = &e.value;
            p.start_range = static_cast<std::uint8_t>(
                reader.expect_whole(e.value, path, 0, nic::max_adaptive_ranges - 1, "start-range"));
        }
    }
    if (p.start_range >= p.range_count)
        reader.fail(start_node ? *start_node : node, m.child_path("start-range"),
                    "start-range " + std::to_string(p.start_range) + " names no range: the profile has " +
                        std::to_string(p.range_count) + " (numbered from 0)");
}

// The trust and dcqcn keys of `m`, over what `out` holds already.
void read_nic_settings(const yaml_reader& reader, const yaml_mapping& m, nic_settings& out) {
    if (const yaml_entry* e = m.find("trust")) {
        const std::string at = m.child_path("trust");
        const std::string trust = reader.expect_scalar(e->value, at, "l3");
        if (trust != "l3" && trust != "l2")
            reader.fail(e->value, at, "unknown trust '" + trust + "'; expected l3 (DSCP) or l2 (PCP)");
        out.trust_pcp = trust == "l2";
    }
    if (const yaml_entry* e = m.find("dcqcn")) read_dcqcn(reader, e->value, m.child_path("dcqcn"), out);
    if (const yaml_entry* e = m.find("retransmission")) {
        const std::string at = m.child_path("retransmission");
        const std::string mode = reader.expect_scalar(e->value, at, "selective-repeat");
        if (mode != "go-back-n" && mode != "selective-repeat")
            reader.fail(e->value, at,
                        "unknown retransmission '" + mode +
                            "'; expected go-back-n (IBA's, the default) or selective-repeat (resend only what the "
                            "responder reports missing)");
        out.retransmission = mode == "selective-repeat" ? nic::retransmission_mode::selective_repeat
                                                        : nic::retransmission_mode::go_back_n;
    }
    if (const yaml_entry* e = m.find("adaptive-retransmission"))
        read_adaptive(reader, e->value, m.child_path("adaptive-retransmission"), out);
}

} // namespace

void read_nic(const yaml_reader& reader, const YAML::Node& node, topology& out) {
    if (node.IsNull()) return;
    const yaml_mapping m =
        reader.expect_map(node, "nic", {"trust", "dcqcn", "retransmission", "adaptive-retransmission", "hosts"});
    read_nic_settings(reader, m, out.nic);
    for (host_config& h : out.hosts) h.nic = out.nic;
    const yaml_entry* e = m.find("hosts");
    if (!e) return;
    const std::string at = "nic.hosts";
    if (!e->value.IsMap())
        reader.fail(e->value, at, "expected a mapping of host names, e.g. { h3: { host-rx-rate: 10G } }");
    for (const yaml_entry& entry : reader.expect_unique_keys(e->value, at)) {
        const std::string name = reader.expect_scalar(entry.key_node, at, "h3");
        const auto host =
            std::find_if(out.hosts.begin(), out.hosts.end(), [&](const host_config& h) { return h.name == name; });
        if (host == out.hosts.end()) reader.fail(entry.key_node, at + "." + name, "unknown host '" + name + "'");
        const yaml_mapping settings =
            reader.expect_map(entry.value, at + "." + name,
                              {"host-rx-rate", "trust", "dcqcn", "retransmission", "adaptive-retransmission"});
        read_nic_settings(reader, settings, host->nic);
        if (const yaml_entry* rate = settings.find("host-rx-rate")) {
            const std::string path = settings.child_path("host-rx-rate");
            const std::string text = reader.expect_scalar(rate->value, path, "10G");
            const auto bps = parse_speed(text);
            if (!bps || *bps < min_link_speed_bps || *bps > max_link_speed_bps)
                reader.fail(rate->value, path,
                            "bad host-rx-rate '" + text + "'; expected " + format_speed(min_link_speed_bps) + " to " +
                                format_speed(max_link_speed_bps) + ", a number and a unit M, G or T (e.g. 10G)");
            host->host_rx_bps = *bps;
        }
    }
}

} // namespace rocefab::config::sections
