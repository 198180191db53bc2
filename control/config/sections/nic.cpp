// `nic:`: the hosts' NICs as nic_emu runs them: the trust mode their RoCE frames carry (DSCP or PCP), DCQCN with
// mlx5's knob names and units (nic_emu/dcqcn.hpp), RC's retransmission mode (go-back-N or selective repeat) and
// adaptive timeouts, and per host a slow receiver's rate and overrides.
#include "control/config/sections/sections.hpp"

#include "control/config/units.hpp"

#include <algorithm>

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
        out.adaptive_retransmission =
            reader.expect_either(e->value, m.child_path("adaptive-retransmission"), "enabled", "disabled");
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
