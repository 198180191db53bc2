// YAML to `topology`, with validation: the file's top level, the names of hosts and switches, the hosts' NICs and
// addresses, the links and the ports they make, the MACs and the routes. The sections that configure one feature
// (a link's parameters, the NICs' DCQCN, a switch's QoS, buffer and routes, the daemon) have their parsers in
// sections/. Every check reports the first problem it finds as a `config_error` carrying the position yaml-cpp
// recorded for the offending node, the key path and the valid choices (yaml_reader.hpp); internally a failure
// unwinds as a `yaml_failure` exception; nothing escapes parse_topology.
#include "control/config/topology.hpp"
#include "control/config/sections/sections.hpp"
#include "control/config/yaml_reader.hpp"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <optional>
#include <sstream>

namespace rocefab::config {
namespace {

constexpr std::size_t not_linked = std::numeric_limits<std::size_t>::max();
// Generated MACs carry a 16-bit node number and a 16-bit port number (see topology.hpp).
constexpr std::size_t max_generated_index = 0xfffe;

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
    mac.bytes = {0x02,
                 kind,
                 static_cast<std::uint8_t>((node + 1) >> 8),
                 static_cast<std::uint8_t>(node + 1),
                 static_cast<std::uint8_t>((port + 1) >> 8),
                 static_cast<std::uint8_t>(port + 1)};
    return mac;
}
constexpr std::uint8_t nic_mac_kind = 0x01;
constexpr std::uint8_t port_mac_kind = 0x02;

// "aa:bb:cc:dd:ee:ff" exactly; mac_address::parse alone (sscanf) would let "2:0:0:0:0:1" or " 02:..." through.
bool parse_mac_strictly(const std::string& text, wire::mac_address& out) {
    if (text.size() != 17) return false;
    for (std::size_t i = 0; i < text.size(); ++i) {
        const char c = text[i];
        const bool hex = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
        if (i % 3 == 2 ? c != ':' : !hex) return false;
    }
    return wire::mac_address::parse(text, out);
}

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
    loader(std::string file, std::vector<std::string> extra_keys)
        : _reader(std::move(file)), _extra_keys(std::move(extra_keys)) {}

    void load(const YAML::Node& root, topology& out) {
        out = topology{};
        out.source_file = _reader.file();
        if (!root.IsMap())
            _reader.fail(root, "",
                         "expected a mapping with the keys fabric, defaults, switches, hosts, links, seed; got " +
                             describe_type(root));
        std::vector<std::string> top_keys = {"fabric", "defaults", "switches", "hosts",
                                             "links",  "seed",     "nic",      "daemon"};
        top_keys.insert(top_keys.end(), _extra_keys.begin(), _extra_keys.end());
        const yaml_mapping top = _reader.expect_map(root, "", top_keys);

        out.name = default_fabric_name();
        if (const yaml_entry* e = top.find("fabric")) out.name = expect_name(e->value, "fabric");
        if (const yaml_entry* e = top.find("seed")) out.seed = load_seed(e->value);

        link_params defaults;
        if (const yaml_entry* e = top.find("defaults")) sections::read_defaults(_reader, e->value, defaults);

        if (const yaml_entry* e = top.find("switches")) load_switches(e->value, out);
        const yaml_entry* hosts = top.find("hosts");
        if (!hosts) _reader.fail(root, "hosts", "missing; a fabric needs at least one host");
        load_hosts(hosts->value, out);
        if (const yaml_entry* e = top.find("links")) load_links(e->value, defaults, out);
        if (const yaml_entry* e = top.find("nic")) sections::read_nic(_reader, e->value, out);
        if (const yaml_entry* e = top.find("daemon")) sections::read_daemon(_reader, e->value, out.daemon);

        check_every_nic_linked(out);
        check_every_switch_linked(out);
        number_switch_ports(out);
        assign_macs(out);
        resolve_switch_ports(out);
        out.routes = compute_routes(out);
    }

private:
    std::string default_fabric_name() const {
        const std::string stem = std::filesystem::path(_reader.file()).stem().string();
        return stem.empty() ? "fabric" : stem;
    }

    std::string expect_name(const YAML::Node& node, const std::string& path) const {
        const std::string name = _reader.expect_scalar(node, path, "'sw1'");
        if (!is_valid_name(name))
            _reader.fail(node, path, "bad name '" + name + "'; names use only letters, digits, '_', '.' and '-'");
        return name;
    }

    std::uint64_t load_seed(const YAML::Node& node) const {
        const std::string text = _reader.expect_scalar(node, "seed", "1");
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
            _reader.fail(node, "seed",
                         "bad seed '" + text +
                             "'; expected a whole number from 0 to 18446744073709551615 (the same "
                             "seed injects the same faults)");
        return seed;
    }

    // --- nodes ---

    void claim_name(const std::string& name, const YAML::Node& at, const std::string& path, enum endpoint::kind kind,
                    std::size_t index) {
        const auto [it, fresh] = _names.emplace(name, named_node{kind, index, position_of(at).line});
        if (!fresh)
            _reader.fail(at, path,
                         "duplicate name '" + name + "': already used by the " +
                             (it->second.kind == endpoint::host_nic ? "host" : "switch") + " at line " +
                             std::to_string(it->second.line) + " (host and switch names share one namespace)");
    }

    void load_switches(const YAML::Node& node, topology& out) {
        const auto items = _reader.expect_list(node, "switches");
        if (items.size() > max_generated_index) _reader.fail(node, "switches", "too many switches (at most 65534)");
        for (std::size_t s = 0; s < items.size(); ++s) {
            const std::string path = "switches[" + std::to_string(s) + "]";
            const yaml_mapping m =
                _reader.expect_map(items[s], path, {"name", "qos", "buffer", "adaptive-routing", "routes"});
            const YAML::Node& name_node = _reader.required(m, "name", " (e.g. name: sw1)");
            switch_config sw;
            sw.name = expect_name(name_node, m.child_path("name"));
            claim_name(sw.name, name_node, m.child_path("name"), endpoint::switch_port, s);
            if (const yaml_entry* e = m.find("qos"))
                sw.qos = sections::read_qos(_reader, e->value, m.child_path("qos"));
            if (const yaml_entry* e = m.find("buffer"))
                sw.buffer = sections::read_buffer(_reader, e->value, m.child_path("buffer"));
            // Interfaces and routes name ports, which exist only once the links are read.
            pending_switch pending;
            pending.node = items[s];
            if (const yaml_entry* e = m.find("adaptive-routing")) {
                const std::string at = m.child_path("adaptive-routing");
                if (const auto interfaces = sections::read_adaptive_routing(_reader, e->value, at, sw))
                    pending.adaptive_interfaces = {*interfaces, at + ".interfaces"};
            }
            if (const yaml_entry* e = m.find("routes")) pending.routes = {e->value, m.child_path("routes")};
            _pending_switches.push_back(std::move(pending));
            out.switches.push_back(std::move(sw));
        }
        _ports.resize(out.switches.size());
    }

    // Adaptive-routing interfaces and static routes, now that ports are numbered and MACs assigned.
    void resolve_switch_ports(topology& out) const {
        for (std::size_t s = 0; s < out.switches.size(); ++s) {
            switch_config& sw = out.switches[s];
            const pending_switch& pending = _pending_switches[s];
            if (pending.adaptive_interfaces) {
                sections::read_adaptive_interfaces(_reader, pending.adaptive_interfaces->first,
                                                   pending.adaptive_interfaces->second, out, s);
            } else {
                for (std::size_t p = 0; p < sw.ports.size(); ++p)
                    sw.ports[p].adaptive_routing =
                        out.peer_of({endpoint::switch_port, s, p}).kind == endpoint::switch_port;
            }
            if (pending.routes)
                sw.static_routes =
                    sections::read_static_routes(_reader, pending.routes->first, pending.routes->second, out, s);
        }
    }

    void load_hosts(const YAML::Node& node, topology& out) {
        const auto items = _reader.expect_list(node, "hosts");
        if (items.empty()) _reader.fail(node, "hosts", "a fabric needs at least one host");
        if (items.size() > max_generated_index) _reader.fail(node, "hosts", "too many hosts (at most 65534)");
        for (std::size_t h = 0; h < items.size(); ++h) {
            const std::string path = "hosts[" + std::to_string(h) + "]";
            const yaml_mapping m = _reader.expect_map(items[h], path, {"name", "nics"});
            const YAML::Node& name_node = _reader.required(m, "name", " (e.g. name: h1)");
            host_config host;
            host.name = expect_name(name_node, m.child_path("name"));
            claim_name(host.name, name_node, m.child_path("name"), endpoint::host_nic, h);

            const YAML::Node& nics_node =
                _reader.required(m, "nics", " (e.g. nics: [ { name: rfab0, address: 10.0.0.1/24 } ])");
            const auto nics = _reader.expect_list(nics_node, m.child_path("nics"));
            if (nics.empty()) _reader.fail(nics_node, m.child_path("nics"), "a host needs at least one NIC");
            if (nics.size() > max_generated_index)
                _reader.fail(nics_node, m.child_path("nics"), "too many NICs (at most 65534)");
            _nics.emplace_back();
            for (std::size_t n = 0; n < nics.size(); ++n)
                host.nics.push_back(load_nic(nics[n], m.child_path("nics") + "[" + std::to_string(n) + "]", host));
            out.hosts.push_back(std::move(host));
        }
    }

    nic_config load_nic(const YAML::Node& node, const std::string& path, const host_config& host) {
        const yaml_mapping m = _reader.expect_map(node, path, {"name", "address", "mac"});
        nic_config nic;
        nic_state state{node, std::nullopt, not_linked};

        const YAML::Node& name_node = _reader.required(m, "name", " (e.g. name: rfab0)");
        nic.name = expect_name(name_node, m.child_path("name"));
        for (const auto& other : host.nics)
            if (other.name == nic.name)
                _reader.fail(name_node, m.child_path("name"),
                             "duplicate NIC name '" + nic.name + "' on host '" + host.name + "'");

        const YAML::Node& address_node = _reader.required(m, "address", " (e.g. address: 10.0.0.1/24)");
        const std::string text = _reader.expect_scalar(address_node, m.child_path("address"), "10.0.0.1/24");
        const auto prefix = parse_ip_prefix(text);
        if (!prefix)
            _reader.fail(address_node, m.child_path("address"),
                         "bad address '" + text +
                             "'; expected ADDRESS/LENGTH in CIDR notation, IPv4 (e.g. "
                             "10.0.0.1/24, length 0-32) or IPv6 (e.g. fd00::1/64, length 0-128)");
        check_usable(*prefix, address_node, m.child_path("address"));
        const std::string owner = host.name + "/" + nic.name;
        const auto [used, fresh] =
            _addresses.emplace(prefix->address, std::pair{owner, position_of(address_node).line});
        if (!fresh)
            _reader.fail(address_node, m.child_path("address"),
                         "duplicate address " + address_only(*prefix) + ": already used by " + used->second.first +
                             " at line " + std::to_string(used->second.second));
        nic.address = *prefix;

        if (const yaml_entry* e = m.find("mac")) {
            const std::string mac_text = _reader.expect_scalar(e->value, m.child_path("mac"), "02:00:00:00:00:01");
            if (!parse_mac_strictly(mac_text, nic.mac))
                _reader.fail(e->value, m.child_path("mac"),
                             "bad MAC '" + mac_text +
                                 "'; expected six two-digit hex bytes separated by ':' "
                                 "(e.g. 02:00:00:00:00:01)");
            if (nic.mac.is_multicast() || nic.mac == wire::mac_address{})
                _reader.fail(e->value, m.child_path("mac"),
                             "MAC " + mac_text +
                                 " cannot be a NIC address: it must be unicast (first byte even) "
                                 "and not all zeros");
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
            _reader.fail(at, path,
                         "address " + prefix.to_string() +
                             " cannot be a NIC address (unspecified, loopback, multicast or broadcast)");
    }

    // --- links ---

    endpoint resolve(const YAML::Node& node, const std::string& path, const topology& out, std::size_t link,
                     bool on_a) {
        const std::string text = _reader.expect_scalar(node, path, "h1/rfab0");
        const auto slash = text.find('/');
        if (slash == std::string::npos || slash == 0 || slash + 1 == text.size() ||
            text.find('/', slash + 1) != std::string::npos)
            _reader.fail(node, path, "bad endpoint '" + text + "'; expected NODE/PORT, e.g. h1/rfab0 or sw1/swp1");
        const std::string node_name = text.substr(0, slash), port_name = text.substr(slash + 1);

        const auto named = _names.find(node_name);
        if (named == _names.end()) {
            std::vector<std::string> hosts, switches;
            for (const auto& h : out.hosts) hosts.push_back(h.name);
            for (const auto& s : out.switches) switches.push_back(s.name);
            _reader.fail(node, path,
                         "unknown node '" + node_name + "' (hosts: " + join(hosts) + "; switches: " + join(switches) +
                             ")");
        }

        if (named->second.kind == endpoint::host_nic) {
            const std::size_t h = named->second.index;
            const host_config& host = out.hosts[h];
            for (std::size_t n = 0; n < host.nics.size(); ++n) {
                if (host.nics[n].name != port_name) continue;
                nic_state& state = _nics[h][n];
                if (state.link != not_linked)
                    _reader.fail(node, path,
                                 "NIC '" + text + "' is already linked by links[" + std::to_string(state.link) +
                                     "] (line " + std::to_string(out.links[state.link].line) +
                                     "); a NIC takes exactly one link");
                state.link = link;
                return {endpoint::host_nic, h, n};
            }
            std::vector<std::string> names;
            for (const auto& nic : host.nics) names.push_back(nic.name);
            _reader.fail(node, path,
                         "host '" + node_name + "' has no NIC '" + port_name + "' (NICs: " + join(names) + ")");
        }

        const std::size_t s = named->second.index;
        if (!is_valid_name(port_name))
            _reader.fail(node, path,
                         "bad port name '" + port_name + "'; port names use only letters, digits, '_', '.' and '-'");
        auto& ports = _ports[s];
        for (const auto& port : ports)
            if (port.name == port_name)
                _reader.fail(node, path,
                             "port '" + text + "' is already linked by links[" + std::to_string(port.link) +
                                 "] (line " + std::to_string(out.links[port.link].line) +
                                 "); a port takes exactly one link");
        if (ports.size() >= max_generated_index)
            _reader.fail(node, path, "too many ports on switch '" + node_name + "'");
        ports.push_back({port_name, link, on_a});
        return {endpoint::switch_port, s, ports.size() - 1}; // renumbered by number_switch_ports()
    }

    void load_links(const YAML::Node& node, const link_params& defaults, topology& out) {
        const auto items = _reader.expect_list(node, "links");
        for (std::size_t l = 0; l < items.size(); ++l) {
            const std::string path = "links[" + std::to_string(l) + "]";
            const yaml_mapping m =
                _reader.expect_map(items[l], path, {"a", "b", "speed", "delay", "mtu", "faults", "up"});
            const YAML::Node& a_node = _reader.required(m, "a", " (e.g. a: h1/rfab0)");
            const YAML::Node& b_node = _reader.required(m, "b", " (e.g. b: sw1/swp1)");
            link_config link;
            link.line = position_of(items[l]).line;
            link.params = defaults;
            sections::read_link_params(_reader, m, link.params);
            out.links.push_back(link); // before resolving, so that "already linked by" can name its line
            const endpoint a = resolve(a_node, m.child_path("a"), out, l, true);
            // Compared by name before b is resolved, so that "sw1/swp1 to sw1/swp2" is reported as a self-link
            // rather than creating a second port on sw1.
            const std::string a_node_name = a_node.Scalar().substr(0, a_node.Scalar().find('/'));
            const std::string b_text = _reader.expect_scalar(b_node, m.child_path("b"), "sw1/swp1");
            if (b_text.find('/') != std::string::npos && b_text.substr(0, b_text.find('/')) == a_node_name)
                _reader.fail(b_node, m.child_path("b"),
                             "both ends are on '" + a_node_name + "'; a link joins two different nodes");
            out.links.back().a = a;
            out.links.back().b = resolve(b_node, m.child_path("b"), out, l, false);
        }
    }

    void check_every_nic_linked(const topology& out) const {
        for (std::size_t h = 0; h < out.hosts.size(); ++h)
            for (std::size_t n = 0; n < out.hosts[h].nics.size(); ++n)
                if (_nics[h][n].link == not_linked)
                    _reader.fail(_nics[h][n].node, "hosts[" + std::to_string(h) + "].nics[" + std::to_string(n) + "]",
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
            const std::string peer =
                out.switches.size() > 1 ? out.switches[s == 0 ? 1 : 0].name + "/swp32" : "h1/rfab1";
            _reader.fail(_pending_switches[s].node, "switches[" + std::to_string(s) + "]",
                         "switch '" + name + "' is not linked, so it has no ports; add it to links: (e.g. - { a: " +
                             name + "/swp1, b: " + peer + " }) or remove it");
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
            for (std::size_t n = 0; n < out.hosts[h].nics.size(); ++n)
                out.hosts[h].nics[n].link_index = _nics[h][n].link;
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
                    _reader.fail(at, path,
                                 "duplicate MAC " + nic.mac.to_string() + ": it is the generated MAC of " +
                                     clash->second +
                                     " (generated MACs are 02:01:... for NICs and 02:02:... for switch ports)");
                const auto [used, fresh] =
                    given.emplace(nic.mac.bytes, std::pair{out.hosts[h].name + "/" + nic.name, position_of(at).line});
                if (!fresh)
                    _reader.fail(at, path,
                                 "duplicate MAC " + nic.mac.to_string() + ": already used by " + used->second.first +
                                     " at line " + std::to_string(used->second.second));
            }
    }

    yaml_reader _reader;
    std::vector<std::string> _extra_keys; // top-level sections another reader handles
    std::map<std::string, named_node> _names;
    std::vector<std::vector<nic_state>> _nics;     // per host, per NIC
    std::vector<std::vector<pending_port>> _ports; // per switch, in order of appearance
    std::vector<pending_switch> _pending_switches; // per switch
    std::map<wire::ipv6_address, std::pair<std::string, int>> _addresses;
};

} // namespace

bool parse_topology(const std::string& yaml_text, const std::string& file_name, topology& out, config_error& error) {
    return parse_topology(yaml_text, file_name, {}, out, error);
}

bool parse_topology(const std::string& yaml_text, const std::string& file_name,
                    const std::vector<std::string>& extra_keys, topology& out, config_error& error) {
    try {
        const YAML::Node root = YAML::Load(yaml_text);
        loader(file_name, extra_keys).load(root, out);
        return true;
    } catch (const yaml_failure& failure) {
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