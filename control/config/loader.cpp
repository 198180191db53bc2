// YAML to `topology`, with validation. Every check reports the first problem it finds as a `config_error`
// carrying the position yaml-cpp recorded for the offending node, the key path and the valid choices.
// Internally a failure unwinds as a `load_failure` exception; nothing escapes parse_topology.
#include "control/config/topology.hpp"
#include "dataplane/log.hpp"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <limits>
#include <map>
#include <optional>
#include <grp.h>
#include <sstream>

namespace rocefab::config {
namespace {

struct load_failure {
    config_error error;
};

constexpr std::size_t not_linked = std::numeric_limits<std::size_t>::max();
// Generated MACs carry a 16-bit node number and a 16-bit port number (see topology.hpp).
constexpr std::size_t max_generated_index = 0xfffe;

struct position {
    int line = 0;
    int column = 0;
};

position position_of(const YAML::Node& node) {
    const YAML::Mark mark = node.Mark();
    if (mark.line < 0) return {};
    return {mark.line + 1, mark.column + 1};
}

std::string describe_type(const YAML::Node& node) {
    switch (node.Type()) {
    case YAML::NodeType::Null: return "nothing";
    case YAML::NodeType::Scalar: return "'" + node.Scalar() + "'";
    case YAML::NodeType::Sequence: return "a list";
    case YAML::NodeType::Map: return "a mapping";
    default: return "nothing";
    }
}

std::string join(const std::vector<std::string>& items, std::string_view separator = ", ") {
    std::string text;
    for (std::size_t i = 0; i < items.size(); ++i) {
        if (i == 10 && items.size() > 12) return text + std::string(separator) + "... " +
                                                 std::to_string(items.size() - 10) + " more";
        if (i) text += separator;
        text += items[i];
    }
    return text.empty() ? "none" : text;
}

std::size_t edit_distance(std::string_view a, std::string_view b) {
    std::vector<std::size_t> row(b.size() + 1);
    for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
    for (std::size_t i = 1; i <= a.size(); ++i) {
        std::size_t diagonal = row[0];
        row[0] = i;
        for (std::size_t j = 1; j <= b.size(); ++j) {
            const std::size_t above = row[j];
            row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
            diagonal = above;
        }
    }
    return row[b.size()];
}

bool is_valid_name(std::string_view name) {
    if (name.empty()) return false;
    return std::all_of(name.begin(), name.end(), [](char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '.' ||
               c == '-';
    });
}

// Digit runs compare as numbers so that swp2 sorts before swp10, as `ip link` users expect.
bool natural_less(std::string_view a, std::string_view b) {
    std::size_t i = 0, j = 0;
    while (i < a.size() && j < b.size()) {
        const bool digit_a = a[i] >= '0' && a[i] <= '9', digit_b = b[j] >= '0' && b[j] <= '9';
        if (digit_a && digit_b) {
            std::size_t end_a = i, end_b = j;
            while (end_a < a.size() && a[end_a] >= '0' && a[end_a] <= '9') ++end_a;
            while (end_b < b.size() && b[end_b] >= '0' && b[end_b] <= '9') ++end_b;
            std::string_view run_a = a.substr(i, end_a - i), run_b = b.substr(j, end_b - j);
            while (run_a.size() > 1 && run_a[0] == '0') run_a.remove_prefix(1);
            while (run_b.size() > 1 && run_b[0] == '0') run_b.remove_prefix(1);
            if (run_a.size() != run_b.size()) return run_a.size() < run_b.size();
            if (run_a != run_b) return run_a < run_b;
            i = end_a;
            j = end_b;
        } else {
            if (a[i] != b[j]) return a[i] < b[j];
            ++i;
            ++j;
        }
    }
    if ((a.size() - i) != (b.size() - j)) return (a.size() - i) < (b.size() - j);
    return a < b; // "swp01" vs "swp1": any fixed order will do
}

std::string address_only(const ip_prefix& prefix) {
    const std::string text = prefix.to_string();
    return text.substr(0, text.rfind('/'));
}

wire::mac_address generated_mac(std::uint8_t kind, std::size_t node, std::size_t port) {
    wire::mac_address mac;
    mac.bytes = {0x02, kind, static_cast<std::uint8_t>((node + 1) >> 8), static_cast<std::uint8_t>(node + 1),
                 static_cast<std::uint8_t>((port + 1) >> 8), static_cast<std::uint8_t>(port + 1)};
    return mac;
}
constexpr std::uint8_t nic_mac_kind = 0x01;
constexpr std::uint8_t port_mac_kind = 0x02;

// "aa:bb:cc:dd:ee:ff" exactly; mac_address::parse alone (sscanf) would let "2:0:0:0:0:1" or " 02:..." through.
// One of Spectrum's dynamic-threshold alphas, 2^-7 .. 2^6, written as a number (0.5) or a fraction (1/2).
std::optional<double> parse_alpha(const std::string& text) {
    if (text.find('%') != std::string::npos) return std::nullopt; // parse_probability would take it
    std::optional<double> value;
    if (const auto slash = text.find('/'); slash != std::string::npos) {
        const auto over = parse_probability(text.substr(0, slash)), under = parse_probability(text.substr(slash + 1));
        if (over && under && *under > 0) value = *over / *under;
    } else {
        value = parse_probability(text);
    }
    for (int n = -7; n <= 6 && value; ++n)
        if (*value == std::ldexp(1.0, n)) return value;
    return std::nullopt;
}

bool parse_mac_strictly(const std::string& text, wire::mac_address& out) {
    if (text.size() != 17) return false;
    for (std::size_t i = 0; i < text.size(); ++i) {
        const char c = text[i];
        const bool hex = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
        if (i % 3 == 2 ? c != ':' : !hex) return false;
    }
    return wire::mac_address::parse(text, out);
}

struct entry {
    std::string key;
    YAML::Node key_node;
    YAML::Node value;
};

// A YAML mapping whose keys have been checked: all known, none repeated.
struct mapping {
    YAML::Node node;
    std::string path;
    std::vector<entry> entries;

    const entry* find(std::string_view key) const {
        for (const auto& e : entries)
            if (e.key == key) return &e;
        return nullptr;
    }
    std::string child_path(std::string_view key) const { return path.empty() ? std::string(key) : path + "." + std::string(key); }
};

struct nic_state {
    YAML::Node node;
    std::optional<YAML::Node> mac_node; // set when the MAC came from the file
    std::size_t link = not_linked;
};

struct pending_port {
    std::string name;
    std::size_t link;
    bool on_a; // which end of the link this port is
};

struct pending_switch {
    YAML::Node node; // the switch's entry, for messages about the switch as a whole
    std::optional<std::pair<YAML::Node, std::string>> adaptive_interfaces; // node and key path
    std::optional<std::pair<YAML::Node, std::string>> routes;
};

struct named_node {
    enum endpoint::kind kind;
    std::size_t index;
    int line;
};

class loader {
public:
    loader(std::string file, std::vector<std::string> extra_keys) : _file(std::move(file)), _extra_keys(std::move(extra_keys)) {}

    void load(const YAML::Node& root, topology& out) {
        out = topology{};
        out.source_file = _file;
        if (!root.IsMap()) {
            const position at = position_of(root);
            throw load_failure{{_file, at.line, at.column, "",
                                "expected a mapping with the keys fabric, defaults, switches, hosts, links, seed; got " +
                                    describe_type(root)}};
        }
        std::vector<std::string> top_keys = {"fabric", "defaults", "switches", "hosts", "links", "seed", "nic", "daemon"};
        top_keys.insert(top_keys.end(), _extra_keys.begin(), _extra_keys.end());
        const mapping top = expect_map(root, "", top_keys);

        out.name = default_fabric_name();
        if (const entry* e = top.find("fabric")) out.name = expect_name(e->value, "fabric");
        if (const entry* e = top.find("seed")) out.seed = load_seed(e->value);

        link_params defaults;
        if (const entry* e = top.find("defaults")) load_defaults(e->value, defaults);

        if (const entry* e = top.find("switches")) load_switches(e->value, out);
        const entry* hosts = top.find("hosts");
        if (!hosts) fail(root, "hosts", "missing; a fabric needs at least one host");
        load_hosts(hosts->value, out);
        if (const entry* e = top.find("links")) load_links(e->value, defaults, out);
        if (const entry* e = top.find("nic")) load_nic(e->value, out);
        if (const entry* e = top.find("daemon")) load_daemon(e->value, out.daemon);

        check_every_nic_linked(out);
        check_every_switch_linked(out);
        number_switch_ports(out);
        assign_macs(out);
        resolve_switch_ports(out);
        out.routes = compute_routes(out);
    }

private:
    [[noreturn]] void fail(const YAML::Node& at, const std::string& key, const std::string& message) const {
        const position p = position_of(at);
        throw load_failure{{_file, p.line, p.column, key, message}};
    }

    std::string default_fabric_name() const {
        const std::string stem = std::filesystem::path(_file).stem().string();
        return stem.empty() ? "fabric" : stem;
    }

    mapping expect_map(const YAML::Node& node, const std::string& path,
                       std::initializer_list<std::string_view> valid_keys) const {
        return expect_map(node, path, std::vector<std::string>(valid_keys.begin(), valid_keys.end()));
    }
    mapping expect_map(const YAML::Node& node, const std::string& path, const std::vector<std::string>& valid) const {
        if (!node.IsMap()) fail(node, path, "expected a mapping (key: value pairs), got " + describe_type(node));
        mapping m{node, path, {}};
        for (auto it = node.begin(); it != node.end(); ++it) {
            const YAML::Node key_node = it->first;
            if (!key_node.IsScalar()) fail(key_node, path, "expected a plain key, got " + describe_type(key_node));
            const std::string key = key_node.Scalar();
            if (std::find(valid.begin(), valid.end(), key) == valid.end()) {
                std::string message = "unknown key '" + key + "'";
                for (const auto& candidate : valid)
                    if (edit_distance(key, candidate) <= 2 && key.size() > 2) {
                        message += "; did you mean '" + candidate + "'?";
                        break;
                    }
                fail(key_node, m.child_path(key), message + " (valid keys: " + join(valid) + ")");
            }
            // yaml-cpp keeps both copies of a repeated key and answers lookups with the first; say so instead.
            if (const entry* first = m.find(key))
                fail(key_node, m.child_path(key),
                     "duplicate key (first given at line " + std::to_string(position_of(first->key_node).line) + ")");
            m.entries.push_back({key, key_node, it->second});
        }
        return m;
    }

    const YAML::Node& required(const mapping& m, std::string_view key, const std::string& hint) const {
        const entry* e = m.find(key);
        if (!e) fail(m.node, m.path, "missing required key '" + std::string(key) + "'" + hint);
        return e->value;
    }

    // An absent or empty list (`switches:` with nothing after it) is an empty list.
    std::vector<YAML::Node> expect_list(const YAML::Node& node, const std::string& path) const {
        if (node.IsNull()) return {};
        if (!node.IsSequence()) fail(node, path, "expected a list (lines starting with '- '), got " + describe_type(node));
        return {node.begin(), node.end()};
    }

    std::string expect_scalar(const YAML::Node& node, const std::string& path, const std::string& example) const {
        if (!node.IsScalar()) fail(node, path, "expected a value such as " + example + ", got " + describe_type(node));
        return node.Scalar();
    }

    std::string expect_name(const YAML::Node& node, const std::string& path) const {
        const std::string name = expect_scalar(node, path, "'sw1'");
        if (!is_valid_name(name))
            fail(node, path, "bad name '" + name + "'; names use only letters, digits, '_', '.' and '-'");
        return name;
    }

    // --- defaults and link parameters ---

    void load_defaults(const YAML::Node& node, link_params& defaults) const {
        if (node.IsNull()) return;
        const mapping m = expect_map(node, "defaults", {"link"});
        if (const entry* e = m.find("link")) {
            if (e->value.IsNull()) return;
            const mapping link = expect_map(e->value, "defaults.link", {"speed", "delay", "mtu", "faults"});
            load_link_params(link, defaults);
        }
    }

    std::uint64_t load_seed(const YAML::Node& node) const {
        const std::string text = expect_scalar(node, "seed", "1");
        const bool digits = !text.empty() && text.size() <= 20 &&
                            std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
        std::uint64_t seed = 0;
        bool fits = digits;
        for (char c : text) {
            if (!fits) break;
            const std::uint64_t digit = static_cast<std::uint64_t>(c - '0');
            if (seed > (std::numeric_limits<std::uint64_t>::max() - digit) / 10) fits = false;
            seed = seed * 10 + digit;
        }
        if (!fits)
            fail(node, "seed",
                 "bad seed '" + text + "'; expected a whole number from 0 to 18446744073709551615 (the same seed "
                 "injects the same faults)");
        return seed;
    }

    void load_faults(const YAML::Node& node, const std::string& path, fault_params& faults) const {
        if (node.IsNull()) return;
        const mapping m = expect_map(node, path, {"loss", "corruption", "duplication", "reordering", "reorder_delay"});
        auto probability = [&](std::string_view key, double& into) {
            const entry* e = m.find(key);
            if (!e) return;
            const std::string key_path = m.child_path(key);
            const std::string text = expect_scalar(e->value, key_path, "1%");
            const auto value = parse_probability(text);
            if (!value)
                fail(e->value, key_path,
                     "bad " + std::string(key) + " '" + text + "'; expected a probability from 0 to 1, as a fraction "
                     "(e.g. 0.01) or a percentage (e.g. 1%, 0.1%)");
            if (*value > 1.0)
                fail(e->value, key_path,
                     std::string(key) + " " + text + " is out of range; expected 0 to 1 (0% to 100%)");
            into = *value;
        };
        probability("loss", faults.loss);
        probability("corruption", faults.corruption);
        probability("duplication", faults.duplication);
        probability("reordering", faults.reordering);
        if (const entry* e = m.find("reorder_delay")) {
            const std::string key_path = m.child_path("reorder_delay");
            const std::string text = expect_scalar(e->value, key_path, "10us");
            const auto delay = parse_duration(text);
            if (!delay)
                fail(e->value, key_path,
                     "bad reorder_delay '" + text + "'; expected a whole number of nanoseconds written with a unit "
                     "ns, us or ms (e.g. 500ns, 10us)");
            if (*delay > max_reorder_delay)
                fail(e->value, key_path,
                     "reorder_delay " + text + " is out of range; expected 0ns to " + format_duration(max_reorder_delay));
            faults.reorder_delay = *delay;
        }
    }

    void load_link_params(const mapping& m, link_params& params) const {
        if (const entry* e = m.find("faults")) load_faults(e->value, m.child_path("faults"), params.faults);
        if (const entry* e = m.find("up")) {
            const std::string path = m.child_path("up");
            const std::string text = expect_scalar(e->value, path, "false");
            if (text != "true" && text != "false")
                fail(e->value, path, "bad up '" + text + "'; expected true or false");
            params.up = text == "true";
        }
        if (const entry* e = m.find("speed")) {
            const std::string path = m.child_path("speed");
            const std::string text = expect_scalar(e->value, path, "100G");
            const auto speed = parse_speed(text);
            if (!speed)
                fail(e->value, path,
                     "bad speed '" + text + "'; expected a number and a unit M, G or T, optionally followed by bps "
                     "(e.g. 100M, 25G, 100Gbps, 2.5G)");
            if (*speed < min_link_speed_bps || *speed > max_link_speed_bps)
                fail(e->value, path,
                     "speed " + text + " is out of range; expected " + format_speed(min_link_speed_bps) + " to " +
                         format_speed(max_link_speed_bps));
            params.speed_bps = *speed;
        }
        if (const entry* e = m.find("delay")) {
            const std::string path = m.child_path("delay");
            const std::string text = expect_scalar(e->value, path, "1us");
            const auto delay = parse_duration(text);
            if (!delay)
                fail(e->value, path,
                     "bad delay '" + text + "'; expected a whole number of nanoseconds written with a unit ns, us "
                     "or ms (e.g. 500ns, 1us, 1.5us, 2ms)");
            if (*delay > max_link_delay)
                fail(e->value, path,
                     "delay " + text + " is out of range; expected 0ns to " + format_duration(max_link_delay));
            params.delay = *delay;
        }
        if (const entry* e = m.find("mtu")) {
            const std::string path = m.child_path("mtu");
            const std::string text = expect_scalar(e->value, path, "4200");
            const std::string range = std::to_string(min_link_mtu) + " to " + std::to_string(max_link_mtu);
            const bool digits = !text.empty() && text.size() <= 9 &&
                                std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
            if (!digits)
                fail(e->value, path,
                     "bad MTU '" + text + "'; expected a whole number of bytes from " + range +
                         " (the IP MTU, as in `ip link set mtu`)");
            const auto mtu = static_cast<std::uint32_t>(std::stoul(text));
            if (mtu < min_link_mtu || mtu > max_link_mtu)
                fail(e->value, path,
                     "MTU " + text + " is out of range; expected " + range + " (the IP MTU, as in `ip link set mtu`)");
            params.mtu = mtu;
        }
    }

    // --- the hosts' NICs (topology.hpp documents the keys) ---

    void load_nic(const YAML::Node& node, topology& out) const {
        if (node.IsNull()) return;
        const mapping m = expect_map(node, "nic", {"trust", "dcqcn", "hosts"});
        load_nic_settings(m, out.nic);
        for (host_config& h : out.hosts) h.nic = out.nic;
        if (const entry* e = m.find("hosts")) {
            const std::string at = "nic.hosts";
            if (!e->value.IsMap()) fail(e->value, at, "expected a mapping of host names, e.g. { h3: { host-rx-rate: 10G } }");
            for (auto it = e->value.begin(); it != e->value.end(); ++it) {
                const std::string name = expect_scalar(it->first, at, "h3");
                const auto host = std::find_if(out.hosts.begin(), out.hosts.end(), [&](const host_config& h) { return h.name == name; });
                if (host == out.hosts.end()) fail(it->first, at + "." + name, "unknown host '" + name + "'");
                const mapping settings = expect_map(it->second, at + "." + name, {"host-rx-rate", "trust", "dcqcn"});
                load_nic_settings(settings, host->nic);
                if (const entry* rate = settings.find("host-rx-rate")) {
                    const std::string path = settings.child_path("host-rx-rate");
                    const std::string text = expect_scalar(rate->value, path, "10G");
                    const auto bps = parse_speed(text);
                    if (!bps || *bps < min_link_speed_bps || *bps > max_link_speed_bps)
                        fail(rate->value, path,
                             "bad host-rx-rate '" + text + "'; expected " + format_speed(min_link_speed_bps) + " to " +
                                 format_speed(max_link_speed_bps) + ", a number and a unit M, G or T (e.g. 10G)");
                    host->host_rx_bps = *bps;
                }
            }
        }
    }

    // --- the daemon (topology.hpp documents the keys) ---

    void load_daemon(const YAML::Node& node, daemon_settings& out) const {
        if (node.IsNull()) return;
        const mapping m = expect_map(node, "daemon", {"attach-group", "log", "max-sessions", "max-sessions-per-user"});
        if (const entry* e = m.find("attach-group")) {
            const std::string at = m.child_path("attach-group");
            const std::string group = expect_scalar(e->value, at, "rdma");
            if (!::getgrnam(group.c_str()))
                fail(e->value, at, "no group '" + group + "' on this machine (see /etc/group or `getent group`)");
            out.attach_group = group;
        }
        if (const entry* e = m.find("log")) {
            const std::string at = m.child_path("log");
            const std::string text = expect_scalar(e->value, at, "'warn,nic=debug'");
            log::levels unused;
            if (const std::string problem = log::parse_levels(text, unused); !problem.empty()) fail(e->value, at, problem);
            out.log_levels = text;
        }
        if (const entry* e = m.find("max-sessions"))
            out.max_sessions = static_cast<std::uint32_t>(load_whole(e->value, m.child_path("max-sessions"), 1, 65536,
                                                                     "max-sessions"));
        if (const entry* e = m.find("max-sessions-per-user"))
            out.max_sessions_per_user = static_cast<std::uint32_t>(
                load_whole(e->value, m.child_path("max-sessions-per-user"), 1, 65536, "max-sessions-per-user"));
    }

    // The trust and dcqcn keys of `m`, over what `out` holds already.
    void load_nic_settings(const mapping& m, nic_settings& out) const {
        if (const entry* e = m.find("trust")) {
            const std::string at = m.child_path("trust");
            const std::string trust = expect_scalar(e->value, at, "l3");
            if (trust != "l3" && trust != "l2") fail(e->value, at, "unknown trust '" + trust + "'; expected l3 (DSCP) or l2 (PCP)");
            out.trust_pcp = trust == "l2";
        }
        if (const entry* e = m.find("dcqcn")) load_dcqcn(e->value, m.child_path("dcqcn"), out);
    }

    void load_dcqcn(const YAML::Node& node, const std::string& at, nic_settings& out) const {
        const mapping m = expect_map(node, at,
                                     {"state", "priorities", "rpg_time_reset", "rpg_byte_reset", "rpg_threshold",
                                      "rpg_max_rate", "rpg_ai_rate", "rpg_hai_rate", "rpg_gd", "rpg_min_dec_fac",
                                      "rpg_min_rate", "rate_to_set_on_first_cnp", "dce_tcp_g", "dce_tcp_rtt",
                                      "rate_reduce_monitor_period", "initial_alpha_value", "min_time_between_cnps",
                                      "cnp_dscp", "cnp_802p_prio", "clamp_tgt_rate", "clamp_tgt_rate_after_time_inc"});
        nic::dcqcn_params& p = out.dcqcn;
        auto time = [&](const entry& e, sim_time least, sim_time most) {
            const std::string path = m.child_path(e.key);
            const std::string text = expect_scalar(e.value, path, "300us");
            const auto value = parse_duration(text);
            if (!value || *value < least || *value > most)
                fail(e.value, path,
                     "bad " + e.key + " '" + text + "'; expected " + format_duration(least) + " to " +
                         format_duration(most) + ", with a unit ns, us or ms");
            return *value;
        };
        auto whole = [&](const entry& e, std::uint64_t least, std::uint64_t most) {
            return load_whole(e.value, m.child_path(e.key), least, most, e.key);
        };
        constexpr std::uint64_t mbps_most = 1'600'000; // 1.6T in Mb/s
        bool enabled = out.dcqcn_priorities != 0;
        std::uint8_t priorities = enabled ? out.dcqcn_priorities : 0xff;
        for (const entry& e : m.entries) {
            const std::string& k = e.key;
            if (k == "state") {
                const std::string s = expect_scalar(e.value, m.child_path(k), "enabled");
                if (s != "enabled" && s != "disabled") fail(e.value, m.child_path(k), "expected enabled or disabled, got '" + s + "'");
                enabled = s == "enabled";
            } else if (k == "priorities") {
                priorities = 0;
                for (const YAML::Node& v : expect_list(e.value, m.child_path(k)))
                    priorities |= static_cast<std::uint8_t>(1u << load_whole(v, m.child_path(k), 0, 7, "priority"));
            } else if (k == "rpg_time_reset") p.rpg_time_reset = time(e, 1'000, milliseconds(100));
            else if (k == "rpg_byte_reset") p.rpg_byte_reset = static_cast<std::uint32_t>(whole(e, 0, 1u << 30));
            else if (k == "rpg_threshold") p.rpg_threshold = static_cast<std::uint32_t>(whole(e, 1, 31));
            else if (k == "rpg_max_rate") p.rpg_max_rate_mbps = whole(e, 0, mbps_most);
            else if (k == "rpg_ai_rate") p.rpg_ai_rate_mbps = whole(e, 1, mbps_most);
            else if (k == "rpg_hai_rate") p.rpg_hai_rate_mbps = whole(e, 1, mbps_most);
            else if (k == "rpg_gd") p.rpg_gd = static_cast<std::uint32_t>(whole(e, 1, 15));
            else if (k == "rpg_min_dec_fac") p.rpg_min_dec_fac = static_cast<std::uint32_t>(whole(e, 1, 100));
            else if (k == "rpg_min_rate") p.rpg_min_rate_mbps = whole(e, 1, mbps_most);
            else if (k == "rate_to_set_on_first_cnp") p.rate_to_set_on_first_cnp_mbps = whole(e, 0, mbps_most);
            else if (k == "dce_tcp_g") p.dce_tcp_g = static_cast<std::uint32_t>(whole(e, 0, 1024));
            else if (k == "dce_tcp_rtt") p.dce_tcp_rtt = time(e, 1, milliseconds(100));
            else if (k == "rate_reduce_monitor_period") p.rate_reduce_monitor_period = time(e, 0, milliseconds(100));
            else if (k == "initial_alpha_value") p.initial_alpha_value = static_cast<std::uint32_t>(whole(e, 0, 1024));
            else if (k == "min_time_between_cnps") p.min_time_between_cnps = time(e, 0, milliseconds(100));
            else if (k == "cnp_dscp") p.cnp_dscp = static_cast<std::uint8_t>(whole(e, 0, 63));
            else if (k == "cnp_802p_prio") p.cnp_802p_prio = static_cast<std::uint8_t>(whole(e, 0, 7));
            else if (k == "clamp_tgt_rate") p.clamp_tgt_rate = whole(e, 0, 1) == 1;
            else if (k == "clamp_tgt_rate_after_time_inc") p.clamp_tgt_rate_after_time_inc = whole(e, 0, 1) == 1;
        }
        out.dcqcn_priorities = enabled ? priorities : 0;
    }

    // --- nodes ---

    void claim_name(const std::string& name, const YAML::Node& at, const std::string& path, enum endpoint::kind kind,
                    std::size_t index) {
        const auto [it, fresh] = _names.emplace(name, named_node{kind, index, position_of(at).line});
        if (!fresh)
            fail(at, path,
                 "duplicate name '" + name + "': already used by the " +
                     (it->second.kind == endpoint::host_nic ? "host" : "switch") + " at line " +
                     std::to_string(it->second.line) + " (host and switch names share one namespace)");
    }

    // --- switch QoS (topology.hpp documents the keys) ---

    switch_emu::qos_spec load_qos_preset(const YAML::Node& node, const std::string& path) const {
        const std::string name = expect_scalar(node, path, "roce");
        switch_emu::qos_spec qos; // NVIDIA's `qos roce`: lossless priority 3
        if (name == "roce") return qos;
        if (name == "roce-lossy") {
            qos.lossless_priorities = 0;
            return qos;
        }
        fail(node, path, "unknown QoS preset '" + name + "'; expected roce (lossless) or roce-lossy");
    }

    std::uint64_t load_whole(const YAML::Node& node, const std::string& path, std::uint64_t low, std::uint64_t high,
                             const std::string& what) const {
        const std::string text = expect_scalar(node, path, std::to_string(low));
        const bool digits = !text.empty() && text.size() <= 12 &&
                            std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
        const std::uint64_t value = digits ? std::stoull(text) : 0;
        if (!digits || value < low || value > high)
            fail(node, path,
                 "bad " + what + " '" + text + "'; expected a whole number from " + std::to_string(low) + " to " +
                     std::to_string(high));
        return value;
    }

    // Keys "0".."7" (switch priorities or traffic classes) of a mapping, each with its node.
    mapping expect_class_map(const YAML::Node& node, const std::string& path) const {
        return expect_map(node, path, {"0", "1", "2", "3", "4", "5", "6", "7"});
    }

    switch_emu::qos_spec load_qos(const YAML::Node& node, const std::string& path) const {
        using namespace switch_emu;
        if (node.IsScalar()) return load_qos_preset(node, path);
        const mapping m = expect_map(node, path,
                                     {"preset", "mapping", "egress-queue-mapping", "pfc", "egress-scheduler",
                                      "congestion-control", "pfc-watchdog"});
        qos_spec qos;
        if (const entry* e = m.find("preset")) qos = load_qos_preset(e->value, m.child_path("preset"));
        if (const entry* e = m.find("mapping")) {
            const mapping map = expect_map(e->value, m.child_path("mapping"), {"trust", "dscp"});
            if (const entry* t = map.find("trust")) {
                const std::string at = map.child_path("trust");
                const std::string trust = expect_scalar(t->value, at, "l3");
                if (trust == "l3")
                    qos.trust = trust_mode::dscp;
                else if (trust == "l2")
                    qos.trust = trust_mode::pcp;
                else
                    fail(t->value, at, "unknown trust '" + trust + "'; expected l3 (DSCP) or l2 (PCP)");
            }
            if (const entry* d = map.find("dscp")) {
                const std::string at = map.child_path("dscp");
                if (!d->value.IsMap()) fail(d->value, at, "expected a mapping of DSCP to switch priority, e.g. { 26: 3 }");
                for (auto it = d->value.begin(); it != d->value.end(); ++it) {
                    const std::string key = it->first.IsScalar() ? it->first.Scalar() : "?";
                    const auto dscp = load_whole(it->first, at, 0, 63, "DSCP");
                    qos.dscp_to_priority[dscp] =
                        static_cast<std::uint8_t>(load_whole(it->second, at + "." + key, 0, 7, "switch priority"));
                }
            }
        }
        if (const entry* e = m.find("egress-queue-mapping")) {
            const mapping map = expect_class_map(e->value, m.child_path("egress-queue-mapping"));
            for (const auto& c : map.entries)
                qos.priority_to_tc[std::stoul(c.key)] =
                    static_cast<std::uint8_t>(load_whole(c.value, map.child_path(c.key), 0, 7, "traffic class"));
        }
        if (const entry* e = m.find("pfc")) {
            const mapping pfc = expect_map(e->value, m.child_path("pfc"), {"switch-priority"});
            if (const entry* list = pfc.find("switch-priority")) {
                const std::string at = pfc.child_path("switch-priority");
                qos.lossless_priorities = 0;
                for (const YAML::Node& p : expect_list(list->value, at))
                    qos.lossless_priorities |= static_cast<std::uint8_t>(1u << load_whole(p, at, 0, 7, "switch priority"));
            }
        }
        if (const entry* e = m.find("egress-scheduler")) {
            const mapping map = expect_class_map(e->value, m.child_path("egress-scheduler"));
            for (const auto& c : map.entries) {
                const std::string at = map.child_path(c.key);
                const std::size_t tc = std::stoul(c.key);
                const mapping t = expect_map(c.value, at, {"mode", "bw-percent"});
                const std::string mode = t.find("mode") ? expect_scalar(t.find("mode")->value, at + ".mode", "dwrr") : "dwrr";
                if (mode == "strict")
                    qos.ets.mode[tc] = tc_mode::strict;
                else if (mode == "dwrr")
                    qos.ets.mode[tc] = tc_mode::dwrr;
                else
                    fail(t.find("mode")->value, at + ".mode", "unknown mode '" + mode + "'; expected strict or dwrr");
                if (const entry* bw = t.find("bw-percent")) {
                    if (mode == "strict") fail(bw->value, at + ".bw-percent", "a strict traffic class takes no bw-percent");
                    qos.ets.bandwidth_percent[tc] =
                        static_cast<std::uint8_t>(load_whole(bw->value, at + ".bw-percent", 0, 100, "bw-percent"));
                }
            }
            unsigned shares = 0;
            for (std::size_t tc = 0; tc < 8; ++tc)
                if (qos.ets.mode[tc] == tc_mode::dwrr) shares += qos.ets.bandwidth_percent[tc];
            if (shares > 100)
                fail(e->value, m.child_path("egress-scheduler"),
                     "the DWRR traffic classes' bw-percent add up to " + std::to_string(shares) + "; at most 100");
        }
        if (const entry* e = m.find("pfc-watchdog")) {
            const std::string at = m.child_path("pfc-watchdog");
            const mapping wd = expect_map(e->value, at, {"state", "polling-interval", "robustness", "action"});
            pfc_watchdog_spec& w = qos.pfc_watchdog;
            if (const entry* v = wd.find("state")) {
                const std::string state = expect_scalar(v->value, at + ".state", "enable");
                if (state != "enable" && state != "disable")
                    fail(v->value, at + ".state", "expected enable or disable, got '" + state + "'");
                w.enabled = state == "enable";
            }
            if (const entry* v = wd.find("polling-interval")) {
                const std::string text = expect_scalar(v->value, at + ".polling-interval", "100ms");
                const auto interval = parse_duration(text);
                if (!interval || *interval < 1'000'000 || *interval > 10'000'000'000)
                    fail(v->value, at + ".polling-interval",
                         "bad polling-interval '" + text + "'; expected a duration from 1ms to 10000ms (e.g. 100ms)");
                w.polling_interval = *interval;
            }
            if (const entry* v = wd.find("robustness"))
                w.robustness = static_cast<std::uint8_t>(load_whole(v->value, at + ".robustness", 1, 100, "robustness"));
            if (const entry* v = wd.find("action")) {
                const std::string action = expect_scalar(v->value, at + ".action", "drop");
                if (action == "drop")
                    w.action = pfc_watchdog_action::drop;
                else if (action == "forward")
                    w.action = pfc_watchdog_action::forward;
                else if (action == "alert")
                    w.action = pfc_watchdog_action::alert;
                else
                    fail(v->value, at + ".action", "unknown action '" + action + "'; expected drop, forward or alert");
            }
        }
        if (const entry* e = m.find("congestion-control")) {
            const mapping map = expect_class_map(e->value, m.child_path("congestion-control"));
            for (const auto& c : map.entries) {
                const std::string at = map.child_path(c.key);
                congestion_spec& cc = qos.congestion[std::stoul(c.key)];
                const mapping t = expect_map(c.value, at, {"ecn", "min-threshold", "max-threshold", "probability"});
                if (const entry* on = t.find("ecn")) {
                    const std::string v = expect_scalar(on->value, at + ".ecn", "enable");
                    if (v != "enable" && v != "disable")
                        fail(on->value, at + ".ecn", "expected enable or disable, got '" + v + "'");
                    cc.enabled = v == "enable";
                }
                constexpr std::uint64_t most = 1ull << 32; // bytes; more than any switch buffer
                if (const entry* v = t.find("min-threshold"))
                    cc.min_bytes = load_whole(v->value, at + ".min-threshold", 0, most, "min-threshold (bytes)");
                if (const entry* v = t.find("max-threshold"))
                    cc.max_bytes = load_whole(v->value, at + ".max-threshold", 1, most, "max-threshold (bytes)");
                if (const entry* v = t.find("probability"))
                    cc.probability_percent =
                        static_cast<std::uint8_t>(load_whole(v->value, at + ".probability", 0, 100, "probability (%)"));
                if (cc.min_bytes >= cc.max_bytes)
                    fail(c.value, at,
                         "min-threshold " + std::to_string(cc.min_bytes) + " must be below max-threshold " +
                             std::to_string(cc.max_bytes) + " (bytes)");
            }
        }
        return qos;
    }

    void load_switches(const YAML::Node& node, topology& out) {
        const auto items = expect_list(node, "switches");
        if (items.size() > max_generated_index) fail(node, "switches", "too many switches (at most 65534)");
        for (std::size_t s = 0; s < items.size(); ++s) {
            const std::string path = "switches[" + std::to_string(s) + "]";
            const mapping m = expect_map(items[s], path, {"name", "qos", "buffer", "adaptive-routing", "routes"});
            const YAML::Node& name_node = required(m, "name", " (e.g. name: sw1)");
            switch_config sw;
            sw.name = expect_name(name_node, m.child_path("name"));
            claim_name(sw.name, name_node, m.child_path("name"), endpoint::switch_port, s);
            if (const entry* e = m.find("qos")) sw.qos = load_qos(e->value, m.child_path("qos"));
            if (const entry* e = m.find("buffer")) sw.buffer = load_buffer(e->value, m.child_path("buffer"));
            // Interfaces and routes name ports, which exist only once the links are read.
            pending_switch pending;
            pending.node = items[s];
            if (const entry* e = m.find("adaptive-routing"))
                pending.adaptive_interfaces = load_adaptive_routing(e->value, m.child_path("adaptive-routing"), sw);
            if (const entry* e = m.find("routes")) pending.routes = {e->value, m.child_path("routes")};
            _pending_switches.push_back(std::move(pending));
            out.switches.push_back(std::move(sw));
        }
        _ports.resize(out.switches.size());
    }

    buffer_config load_buffer(const YAML::Node& node, const std::string& path) const {
        const mapping m = expect_map(node, path, {"size", "alpha", "reserved"});
        buffer_config buffer;
        if (const entry* e = m.find("size")) {
            const std::string at = m.child_path("size");
            const std::string text = expect_scalar(e->value, at, "16MiB");
            const auto size = parse_bytes(text);
            constexpr std::uint64_t least = 64 * 1024, most = 1ull << 30;
            if (!size || *size < least || *size > most)
                fail(e->value, at,
                     "bad buffer size '" + text + "'; expected 64KiB to 1024MiB, in bytes or with a unit B, KB, "
                     "MB, KiB or MiB (Spectrum-2 has 42MB, Spectrum-4 160MB)");
            buffer.size_bytes = *size;
        }
        if (const entry* e = m.find("alpha")) {
            const std::string at = m.child_path("alpha");
            const std::string text = expect_scalar(e->value, at, "1");
            const auto alpha = parse_alpha(text);
            if (!alpha)
                fail(e->value, at,
                     "bad alpha '" + text + "'; Spectrum's dynamic threshold takes a power of two: 1/128, 1/64, "
                     "1/32, 1/16, 1/8, 1/4, 1/2, 1, 2, 4, 8, 16, 32 or 64");
            buffer.alpha = *alpha;
        }
        if (const entry* e = m.find("reserved")) {
            const std::string at = m.child_path("reserved");
            const std::string text = expect_scalar(e->value, at, "0");
            const auto reserved = parse_bytes(text);
            if (!reserved || *reserved > 1'000'000)
                fail(e->value, at,
                     "bad reserved '" + text + "'; expected 0 to 1MB a priority group, in bytes or with a unit B, "
                     "KB, MB, KiB or MiB");
            buffer.reserved_bytes = static_cast<std::uint32_t>(*reserved);
        }
        return buffer;
    }

    // Reads state and threshold into `sw`; returns the interfaces list, if given, to check later.
    std::optional<std::pair<YAML::Node, std::string>> load_adaptive_routing(const YAML::Node& node, const std::string& path,
                                                                           switch_config& sw) const {
        const mapping m = expect_map(node, path, {"state", "link-utilization-threshold", "interfaces"});
        sw.adaptive_routing.enabled = true; // a switch that configures it means it, unless it says disabled
        if (const entry* e = m.find("state")) {
            const std::string at = m.child_path("state");
            const std::string state = expect_scalar(e->value, at, "enabled");
            if (state != "enabled" && state != "disabled")
                fail(e->value, at, "expected enabled or disabled, got '" + state + "'");
            sw.adaptive_routing.enabled = state == "enabled";
        }
        if (const entry* e = m.find("link-utilization-threshold"))
            sw.adaptive_routing.link_utilization_threshold_percent = static_cast<std::uint8_t>(
                load_whole(e->value, m.child_path("link-utilization-threshold"), 1, 100, "link-utilization-threshold (%)"));
        if (const entry* e = m.find("interfaces")) return std::pair{e->value, m.child_path("interfaces")};
        return std::nullopt;
    }

    // The port of switch `s` called by the scalar `node`, or an error listing the switch's ports.
    std::size_t expect_port(const YAML::Node& node, const std::string& path, const topology& out, std::size_t s) const {
        const std::string name = expect_scalar(node, path, "swp1");
        const auto& ports = out.switches[s].ports;
        for (std::size_t p = 0; p < ports.size(); ++p)
            if (ports[p].name == name) return p;
        std::vector<std::string> names;
        for (const auto& port : ports) names.push_back(port.name);
        fail(node, path,
             "switch '" + out.switches[s].name + "' has no port '" + name + "' (ports, from links: " + join(names) + ")");
    }

    // Adaptive-routing interfaces and static routes, now that ports are numbered and MACs assigned.
    void resolve_switch_ports(topology& out) const {
        for (std::size_t s = 0; s < out.switches.size(); ++s) {
            switch_config& sw = out.switches[s];
            const pending_switch& pending = _pending_switches[s];
            if (pending.adaptive_interfaces) {
                const auto& [node, at] = *pending.adaptive_interfaces;
                for (const YAML::Node& item : expect_list(node, at)) sw.ports[expect_port(item, at, out, s)].adaptive_routing = true;
            } else {
                for (std::size_t p = 0; p < sw.ports.size(); ++p)
                    sw.ports[p].adaptive_routing = out.peer_of({endpoint::switch_port, s, p}).kind == endpoint::switch_port;
            }
            if (!pending.routes) continue;
            const auto& [node, at] = *pending.routes;
            const auto items = expect_list(node, at);
            for (std::size_t i = 0; i < items.size(); ++i) {
                const std::string path = at + "[" + std::to_string(i) + "]";
                const mapping m = expect_map(items[i], path, {"prefix", "via"});
                const YAML::Node& prefix_node = required(m, "prefix", " (e.g. prefix: 10.0.3.0/24)");
                const std::string text = expect_scalar(prefix_node, m.child_path("prefix"), "10.0.3.0/24");
                const auto prefix = parse_ip_prefix(text);
                if (!prefix)
                    fail(prefix_node, m.child_path("prefix"),
                         "bad prefix '" + text + "'; expected ADDRESS/LENGTH, e.g. 10.0.3.0/24 or fd00:3::/64");
                route r;
                r.destination = *prefix;
                r.destination.address = network_of(*prefix);
                if (r.destination.address != prefix->address)
                    fail(prefix_node, m.child_path("prefix"),
                         "prefix " + text + " has host bits set; did you mean " + r.destination.to_string() + "?");
                for (const route& earlier : sw.static_routes)
                    if (earlier.destination == r.destination)
                        fail(prefix_node, m.child_path("prefix"), "prefix " + text + " has a static route already");
                const YAML::Node& via = required(m, "via", " (e.g. via: [swp2])");
                const auto ports = expect_list(via, m.child_path("via"));
                if (ports.empty()) fail(via, m.child_path("via"), "a route needs at least one port");
                for (const YAML::Node& port_node : ports) {
                    const std::size_t p = expect_port(port_node, m.child_path("via"), out, s);
                    if (std::find(r.egress_ports.begin(), r.egress_ports.end(), p) != r.egress_ports.end())
                        fail(port_node, m.child_path("via"), "port '" + sw.ports[p].name + "' is listed twice");
                    r.egress_ports.push_back(p);
                }
                std::sort(r.egress_ports.begin(), r.egress_ports.end());
                for (std::size_t p : r.egress_ports) r.next_hop_macs.push_back(out.mac_of(out.peer_of({endpoint::switch_port, s, p})));
                sw.static_routes.push_back(std::move(r));
            }
        }
    }

    static wire::ipv6_address network_of(const ip_prefix& prefix) {
        wire::ipv6_address network = prefix.address;
        const unsigned first = prefix.v6 ? 0 : 96, bits = first + prefix.length;
        for (unsigned i = bits; i < 128; ++i) network.bytes[i / 8] &= static_cast<std::uint8_t>(~(0x80u >> (i % 8)));
        return network;
    }

    void load_hosts(const YAML::Node& node, topology& out) {
        const auto items = expect_list(node, "hosts");
        if (items.empty()) fail(node, "hosts", "a fabric needs at least one host");
        if (items.size() > max_generated_index) fail(node, "hosts", "too many hosts (at most 65534)");
        for (std::size_t h = 0; h < items.size(); ++h) {
            const std::string path = "hosts[" + std::to_string(h) + "]";
            const mapping m = expect_map(items[h], path, {"name", "nics"});
            const YAML::Node& name_node = required(m, "name", " (e.g. name: h1)");
            host_config host;
            host.name = expect_name(name_node, m.child_path("name"));
            claim_name(host.name, name_node, m.child_path("name"), endpoint::host_nic, h);

            const YAML::Node& nics_node = required(m, "nics", " (e.g. nics: [ { name: rfab0, address: 10.0.0.1/24 } ])");
            const auto nics = expect_list(nics_node, m.child_path("nics"));
            if (nics.empty()) fail(nics_node, m.child_path("nics"), "a host needs at least one NIC");
            if (nics.size() > max_generated_index) fail(nics_node, m.child_path("nics"), "too many NICs (at most 65534)");
            _nics.emplace_back();
            for (std::size_t n = 0; n < nics.size(); ++n)
                host.nics.push_back(load_nic(nics[n], m.child_path("nics") + "[" + std::to_string(n) + "]", host));
            out.hosts.push_back(std::move(host));
        }
    }

    nic_config load_nic(const YAML::Node& node, const std::string& path, const host_config& host) {
        const mapping m = expect_map(node, path, {"name", "address", "mac"});
        nic_config nic;
        nic_state state{node, std::nullopt, not_linked};

        const YAML::Node& name_node = required(m, "name", " (e.g. name: rfab0)");
        nic.name = expect_name(name_node, m.child_path("name"));
        for (const auto& other : host.nics)
            if (other.name == nic.name)
                fail(name_node, m.child_path("name"), "duplicate NIC name '" + nic.name + "' on host '" + host.name + "'");

        const YAML::Node& address_node = required(m, "address", " (e.g. address: 10.0.0.1/24)");
        const std::string text = expect_scalar(address_node, m.child_path("address"), "10.0.0.1/24");
        const auto prefix = parse_ip_prefix(text);
        if (!prefix)
            fail(address_node, m.child_path("address"),
                 "bad address '" + text + "'; expected ADDRESS/LENGTH in CIDR notation, IPv4 (e.g. 10.0.0.1/24, "
                 "length 0-32) or IPv6 (e.g. fd00::1/64, length 0-128)");
        check_usable(*prefix, address_node, m.child_path("address"));
        const std::string owner = host.name + "/" + nic.name;
        const auto [used, fresh] = _addresses.emplace(prefix->address, std::pair{owner, position_of(address_node).line});
        if (!fresh)
            fail(address_node, m.child_path("address"),
                 "duplicate address " + address_only(*prefix) +
                     ": already used by " + used->second.first + " at line " + std::to_string(used->second.second));
        nic.address = *prefix;

        if (const entry* e = m.find("mac")) {
            const std::string mac_text = expect_scalar(e->value, m.child_path("mac"), "02:00:00:00:00:01");
            if (!parse_mac_strictly(mac_text, nic.mac))
                fail(e->value, m.child_path("mac"),
                     "bad MAC '" + mac_text + "'; expected six two-digit hex bytes separated by ':' "
                     "(e.g. 02:00:00:00:00:01)");
            if (nic.mac.is_multicast() || nic.mac == wire::mac_address{})
                fail(e->value, m.child_path("mac"),
                     "MAC " + mac_text + " cannot be a NIC address: it must be unicast (first byte even) and not "
                     "all zeros");
            state.mac_node = e->value;
        }
        _nics.back().push_back(std::move(state));
        return nic;
    }

    void check_usable(const ip_prefix& prefix, const YAML::Node& at, const std::string& path) const {
        const auto& b = prefix.address.bytes;
        bool bad;
        if (!prefix.v6) {
            const std::uint32_t v4 = prefix.address.v4();
            bad = v4 == 0 || (v4 >> 24) == 127 || (v4 >> 28) == 0xe || v4 == 0xffffffff;
        } else {
            bad = prefix.address == wire::ipv6_address{} || b[0] == 0xff ||
                  prefix.address == wire::ipv6_address{{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1}};
        }
        if (bad)
            fail(at, path,
                 "address " + prefix.to_string() +
                     " cannot be a NIC address (unspecified, loopback, multicast or broadcast)");
    }

    // --- links ---

    endpoint resolve(const YAML::Node& node, const std::string& path, const topology& out, std::size_t link, bool on_a) {
        const std::string text = expect_scalar(node, path, "h1/rfab0");
        const auto slash = text.find('/');
        if (slash == std::string::npos || slash == 0 || slash + 1 == text.size() ||
            text.find('/', slash + 1) != std::string::npos)
            fail(node, path, "bad endpoint '" + text + "'; expected NODE/PORT, e.g. h1/rfab0 or sw1/swp1");
        const std::string node_name = text.substr(0, slash), port_name = text.substr(slash + 1);

        const auto named = _names.find(node_name);
        if (named == _names.end()) {
            std::vector<std::string> hosts, switches;
            for (const auto& h : out.hosts) hosts.push_back(h.name);
            for (const auto& s : out.switches) switches.push_back(s.name);
            fail(node, path,
                 "unknown node '" + node_name + "' (hosts: " + join(hosts) + "; switches: " + join(switches) + ")");
        }

        if (named->second.kind == endpoint::host_nic) {
            const std::size_t h = named->second.index;
            const host_config& host = out.hosts[h];
            for (std::size_t n = 0; n < host.nics.size(); ++n) {
                if (host.nics[n].name != port_name) continue;
                nic_state& state = _nics[h][n];
                if (state.link != not_linked)
                    fail(node, path,
                         "NIC '" + text + "' is already linked by links[" + std::to_string(state.link) + "] (line " +
                             std::to_string(out.links[state.link].line) + "); a NIC takes exactly one link");
                state.link = link;
                return {endpoint::host_nic, h, n};
            }
            std::vector<std::string> names;
            for (const auto& nic : host.nics) names.push_back(nic.name);
            fail(node, path, "host '" + node_name + "' has no NIC '" + port_name + "' (NICs: " + join(names) + ")");
        }

        const std::size_t s = named->second.index;
        if (!is_valid_name(port_name))
            fail(node, path,
                 "bad port name '" + port_name + "'; port names use only letters, digits, '_', '.' and '-'");
        auto& ports = _ports[s];
        for (const auto& port : ports)
            if (port.name == port_name)
                fail(node, path,
                     "port '" + text + "' is already linked by links[" + std::to_string(port.link) + "] (line " +
                         std::to_string(out.links[port.link].line) + "); a port takes exactly one link");
        if (ports.size() >= max_generated_index) fail(node, path, "too many ports on switch '" + node_name + "'");
        ports.push_back({port_name, link, on_a});
        return {endpoint::switch_port, s, ports.size() - 1}; // renumbered by number_switch_ports()
    }

    void load_links(const YAML::Node& node, const link_params& defaults, topology& out) {
        const auto items = expect_list(node, "links");
        for (std::size_t l = 0; l < items.size(); ++l) {
            const std::string path = "links[" + std::to_string(l) + "]";
            const mapping m = expect_map(items[l], path, {"a", "b", "speed", "delay", "mtu", "faults", "up"});
            const YAML::Node& a_node = required(m, "a", " (e.g. a: h1/rfab0)");
            const YAML::Node& b_node = required(m, "b", " (e.g. b: sw1/swp1)");
            link_config link;
            link.line = position_of(items[l]).line;
            link.params = defaults;
            load_link_params(m, link.params);
            out.links.push_back(link); // before resolving, so that "already linked by" can name its line
            const endpoint a = resolve(a_node, m.child_path("a"), out, l, true);
            // Compared by name before b is resolved, so that "sw1/swp1 to sw1/swp2" is reported as a self-link
            // rather than creating a second port on sw1.
            const std::string a_node_name = a_node.Scalar().substr(0, a_node.Scalar().find('/'));
            const std::string b_text = expect_scalar(b_node, m.child_path("b"), "sw1/swp1");
            if (b_text.find('/') != std::string::npos && b_text.substr(0, b_text.find('/')) == a_node_name)
                fail(b_node, m.child_path("b"),
                     "both ends are on '" + a_node_name + "'; a link joins two different nodes");
            out.links.back().a = a;
            out.links.back().b = resolve(b_node, m.child_path("b"), out, l, false);
        }
    }

    void check_every_nic_linked(const topology& out) const {
        for (std::size_t h = 0; h < out.hosts.size(); ++h)
            for (std::size_t n = 0; n < out.hosts[h].nics.size(); ++n)
                if (_nics[h][n].link == not_linked)
                    fail(_nics[h][n].node,
                         "hosts[" + std::to_string(h) + "].nics[" + std::to_string(n) + "]",
                         "NIC '" + out.hosts[h].name + "/" + out.hosts[h].nics[n].name +
                             "' is not linked; add it to links: (e.g. - { a: " + out.hosts[h].name + "/" +
                             out.hosts[h].nics[n].name + ", b: " +
                             (out.switches.empty() ? std::string("sw1") : out.switches[0].name) + "/swp1 })");
    }

    // A switch's ports are the ends of its links: one without links would have no ports, which
    // the switch itself refuses (switch_emu::validate) when the fabric starts, with no place in
    // the file to point at. Say so here.
    void check_every_switch_linked(const topology& out) const {
        for (std::size_t s = 0; s < out.switches.size(); ++s) {
            if (!_ports[s].empty()) continue;
            const std::string& name = out.switches[s].name;
            const std::string peer = out.switches.size() > 1 ? out.switches[s == 0 ? 1 : 0].name + "/swp32" : "h1/rfab1";
            fail(_pending_switches[s].node, "switches[" + std::to_string(s) + "]",
                 "switch '" + name + "' is not linked, so it has no ports; add it to links: (e.g. - { a: " + name +
                     "/swp1, b: " + peer + " }) or remove it");
        }
    }

    void number_switch_ports(topology& out) {
        for (std::size_t s = 0; s < out.switches.size(); ++s) {
            auto pending = _ports[s];
            std::sort(pending.begin(), pending.end(),
                      [](const pending_port& x, const pending_port& y) { return natural_less(x.name, y.name); });
            for (std::size_t p = 0; p < pending.size(); ++p) {
                out.switches[s].ports.push_back({pending[p].name, {}, pending[p].link});
                link_config& link = out.links[pending[p].link];
                (pending[p].on_a ? link.a : link.b).port = p;
            }
        }
        for (std::size_t h = 0; h < out.hosts.size(); ++h)
            for (std::size_t n = 0; n < out.hosts[h].nics.size(); ++n) out.hosts[h].nics[n].link_index = _nics[h][n].link;
    }

    void assign_macs(topology& out) const {
        // Generated MACs cannot collide with each other; a MAC from the file can collide with anything.
        std::map<std::array<std::uint8_t, 6>, std::string> generated;
        for (std::size_t s = 0; s < out.switches.size(); ++s)
            for (std::size_t p = 0; p < out.switches[s].ports.size(); ++p) {
                auto& port = out.switches[s].ports[p];
                port.mac = generated_mac(port_mac_kind, s, p);
                generated.emplace(port.mac.bytes, out.switches[s].name + "/" + port.name);
            }
        for (std::size_t h = 0; h < out.hosts.size(); ++h)
            for (std::size_t n = 0; n < out.hosts[h].nics.size(); ++n) {
                auto& nic = out.hosts[h].nics[n];
                if (_nics[h][n].mac_node) continue;
                nic.mac = generated_mac(nic_mac_kind, h, n);
                generated.emplace(nic.mac.bytes, out.hosts[h].name + "/" + nic.name);
            }

        std::map<std::array<std::uint8_t, 6>, std::pair<std::string, int>> given;
        for (std::size_t h = 0; h < out.hosts.size(); ++h)
            for (std::size_t n = 0; n < out.hosts[h].nics.size(); ++n) {
                if (!_nics[h][n].mac_node) continue;
                const YAML::Node& at = *_nics[h][n].mac_node;
                const auto& nic = out.hosts[h].nics[n];
                const std::string path = "hosts[" + std::to_string(h) + "].nics[" + std::to_string(n) + "].mac";
                if (const auto clash = generated.find(nic.mac.bytes); clash != generated.end())
                    fail(at, path,
                         "duplicate MAC " + nic.mac.to_string() + ": it is the generated MAC of " + clash->second +
                             " (generated MACs are 02:01:... for NICs and 02:02:... for switch ports)");
                const auto [used, fresh] =
                    given.emplace(nic.mac.bytes, std::pair{out.hosts[h].name + "/" + nic.name, position_of(at).line});
                if (!fresh)
                    fail(at, path,
                         "duplicate MAC " + nic.mac.to_string() + ": already used by " + used->second.first +
                             " at line " + std::to_string(used->second.second));
            }
    }

    std::string _file;
    std::vector<std::string> _extra_keys; // top-level sections another reader handles
    std::map<std::string, named_node> _names;
    std::vector<std::vector<nic_state>> _nics;     // per host, per NIC
    std::vector<std::vector<pending_port>> _ports; // per switch, in order of appearance
    std::vector<pending_switch> _pending_switches;  // per switch
    std::map<wire::ipv6_address, std::pair<std::string, int>> _addresses;
};

} // namespace

bool parse_topology(const std::string& yaml_text, const std::string& file_name, topology& out, config_error& error) {
    return parse_topology(yaml_text, file_name, {}, out, error);
}

bool parse_topology(const std::string& yaml_text, const std::string& file_name, const std::vector<std::string>& extra_keys,
                    topology& out, config_error& error) {
    try {
        const YAML::Node root = YAML::Load(yaml_text);
        loader(file_name, extra_keys).load(root, out);
        return true;
    } catch (const load_failure& failure) {
        error = failure.error;
    } catch (const YAML::Exception& e) {
        error = {file_name, e.mark.line < 0 ? 0 : e.mark.line + 1, e.mark.column < 0 ? 0 : e.mark.column + 1, "",
                 "YAML syntax error: " + e.msg};
    } catch (const std::exception& e) {
        error = {file_name, 0, 0, "", std::string("internal error while loading: ") + e.what()};
    }
    return false;
}

bool read_config_file(const std::string& path, std::string& text, config_error& error) {
    std::error_code ec;
    if (std::filesystem::is_directory(path, ec)) {
        error = {path, 0, 0, "", "cannot read: is a directory"};
        return false;
    }
    std::ifstream file(path, std::ios::binary);
    if (!file) {
        error = {path, 0, 0, "", std::string("cannot read: ") + std::strerror(errno)};
        return false;
    }
    std::ostringstream contents;
    contents << file.rdbuf();
    if (file.bad()) {
        error = {path, 0, 0, "", std::string("cannot read: ") + std::strerror(errno)};
        return false;
    }
    text = contents.str();
    return true;
}

bool load_topology(const std::string& path, topology& out, config_error& error) {
    std::string text;
    return read_config_file(path, text, error) && parse_topology(text, path, out, error);
}

} // namespace rocefab::config
