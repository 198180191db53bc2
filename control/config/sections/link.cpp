// `defaults.link` and a link's own keys: what dataplane/link models (rate, propagation delay, MTU, faults) and
// whether the cable starts up.
#include "control/config/sections/sections.hpp"

#include "control/config/units.hpp"

#include <algorithm>

namespace rocefab::config::sections {
namespace {

void read_faults(const yaml_reader& reader, const YAML::Node& node, const std::string& path, fault_params& faults) {
    if (node.IsNull()) return;
    const yaml_mapping m =
        reader.expect_map(node, path, {"loss", "corruption", "duplication", "reordering", "reorder_delay"});
    auto probability = [&](std::string_view key, double& into) {
        if (const yaml_entry* e = m.find(key)) into = reader.expect_probability(e->value, m.child_path(key), e->key);
    };
    probability("loss", faults.loss);
    probability("corruption", faults.corruption);
    probability("duplication", faults.duplication);
    probability("reordering", faults.reordering);
    if (const yaml_entry* e = m.find("reorder_delay")) {
        const std::string key_path = m.child_path("reorder_delay");
        const std::string text = reader.expect_scalar(e->value, key_path, "10us");
        const auto delay = parse_duration(text);
        if (!delay)
            reader.fail(e->value, key_path,
                        "bad reorder_delay '" + text +
                            "'; expected a whole number of nanoseconds written with a unit "
                            "ns, us or ms (e.g. 500ns, 10us)");
        if (*delay > max_reorder_delay)
            reader.fail(e->value, key_path,
                        "reorder_delay " + text + " is out of range; expected 0ns to " +
                            format_duration(max_reorder_delay));
        faults.reorder_delay = *delay;
    }
}

} // namespace

void read_defaults(const yaml_reader& reader, const YAML::Node& node, link_params& defaults) {
    if (node.IsNull()) return;
    const yaml_mapping m = reader.expect_map(node, "defaults", {"link"});
    if (const yaml_entry* e = m.find("link")) {
        if (e->value.IsNull()) return;
        const yaml_mapping link = reader.expect_map(e->value, "defaults.link", {"speed", "delay", "mtu", "faults"});
        read_link_params(reader, link, defaults);
    }
}

void read_link_params(const yaml_reader& reader, const yaml_mapping& m, link_params& params) {
    if (const yaml_entry* e = m.find("faults")) read_faults(reader, e->value, m.child_path("faults"), params.faults);
    if (const yaml_entry* e = m.find("up")) {
        const std::string path = m.child_path("up");
        const std::string text = reader.expect_scalar(e->value, path, "false");
        if (text != "true" && text != "false")
            reader.fail(e->value, path, "bad up '" + text + "'; expected true or false");
        params.up = text == "true";
    }
    if (const yaml_entry* e = m.find("speed")) {
        const std::string path = m.child_path("speed");
        const std::string text = reader.expect_scalar(e->value, path, "100G");
        const auto speed = parse_speed(text);
        if (!speed)
            reader.fail(e->value, path,
                        "bad speed '" + text +
                            "'; expected a number and a unit M, G or T, optionally followed by bps "
                            "(e.g. 100M, 25G, 100Gbps, 2.5G)");
        if (*speed < min_link_speed_bps || *speed > max_link_speed_bps)
            reader.fail(e->value, path,
                        "speed " + text + " is out of range; expected " + format_speed(min_link_speed_bps) + " to " +
                            format_speed(max_link_speed_bps));
        params.speed_bps = *speed;
    }
    if (const yaml_entry* e = m.find("delay")) {
        const std::string path = m.child_path("delay");
        const std::string text = reader.expect_scalar(e->value, path, "1us");
        const auto delay = parse_duration(text);
        if (!delay)
            reader.fail(e->value, path,
                        "bad delay '" + text +
                            "'; expected a whole number of nanoseconds written with a unit ns, us "
                            "or ms (e.g. 500ns, 1us, 1.5us, 2ms)");
        if (*delay > max_link_delay)
            reader.fail(e->value, path,
                        "delay " + text + " is out of range; expected 0ns to " + format_duration(max_link_delay));
        params.delay = *delay;
    }
    if (const yaml_entry* e = m.find("mtu")) {
        const std::string path = m.child_path("mtu");
        const std::string text = reader.expect_scalar(e->value, path, "4200");
        const std::string range = std::to_string(min_link_mtu) + " to " + std::to_string(max_link_mtu);
        const bool digits = !text.empty() && text.size() <= 9 &&
                            std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
        if (!digits)
            reader.fail(e->value, path,
                        "bad MTU '" + text + "'; expected a whole number of bytes from " + range +
                            " (the IP MTU, as in `ip link set mtu`)");
        const auto mtu = static_cast<std::uint32_t>(std::stoul(text));
        if (mtu < min_link_mtu || mtu > max_link_mtu)
            reader.fail(e->value, path,
                        "MTU " + text + " is out of range; expected " + range +
                            " (the IP MTU, as in `ip link set mtu`)");
        params.mtu = mtu;
    }
}

} // namespace rocefab::config::sections
