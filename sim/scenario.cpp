#include "sim/scenario.hpp"

#include "control/config/units.hpp"
#include "control/config/yaml_reader.hpp"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <sstream>

namespace rocefab::sim {
namespace {

constexpr sim_time longest_run = milliseconds(1000);

// Reads the scenario's own sections, through the topology loader's yaml_reader: the same positions, key paths,
// did-you-mean hints and refusal of repeated keys as the rest of the file.
class scenario_loader {
public:
    scenario_loader(std::string file, scenario& out) : _reader(std::move(file)), _out(out) {}

    // The top level has been checked by parse_topology (known keys, none repeated, a mapping).
    void load(const YAML::Node& root) {
        if (const YAML::Node sim = root["simulation"]) load_simulation(sim);
        const YAML::Node traffic = root["traffic"];
        if (!traffic) _reader.fail(root, "traffic", "missing; a scenario needs at least one flow or pattern");
        if (!traffic.IsSequence() || traffic.size() == 0)
            _reader.fail(traffic, "traffic", "expected a list of flows and patterns (lines starting with '- ')");
        for (std::size_t i = 0; i < traffic.size(); ++i) load_traffic(traffic[i], "traffic[" + std::to_string(i) + "]");
        if (_out.output.empty()) _out.output = "sim-out/" + _out.topology.name;
    }

private:
    sim_time duration(const YAML::Node& node, const std::string& path, sim_time least, sim_time most) const {
        return _reader.expect_duration(node, path, least, most, "duration", "10us");
    }

    std::uint64_t bytes(const YAML::Node& node, const std::string& path, std::uint64_t least,
                        std::uint64_t most) const {
        return _reader.expect_bytes(node, path, least, most, "size", "1MB");
    }

    std::size_t host(const YAML::Node& node, const std::string& path) const {
        const std::string name = _reader.expect_scalar(node, path, "h1");
        const auto& hosts = _out.topology.hosts;
        for (std::size_t h = 0; h < hosts.size(); ++h)
            if (hosts[h].name == name) return h;
        std::string known; // all of them, however many
        for (const auto& h : hosts) known += (known.empty() ? "" : ", ") + h.name;
        _reader.fail(node, path, "unknown host '" + name + "' (hosts: " + known + ")");
    }

    std::vector<std::size_t> hosts(const YAML::Node& node, const std::string& path, std::size_t least) const {
        if (!node.IsSequence() || node.size() < least)
            _reader.fail(node, path, "expected a list of at least " + std::to_string(least) + " hosts, e.g. [h1, h2]");
        std::vector<std::size_t> out;
        for (std::size_t i = 0; i < node.size(); ++i) {
            const std::size_t h = host(node[i], path);
            if (std::find(out.begin(), out.end(), h) != out.end())
                _reader.fail(node[i], path, "host '" + node[i].Scalar() + "' is listed twice");
            out.push_back(h);
        }
        return out;
    }

    void load_simulation(const YAML::Node& node) {
        const config::yaml_mapping m =
            _reader.expect_map(node, "simulation", {"duration", "sample-interval", "message-size", "output"});
        if (const config::yaml_entry* e = m.find("duration"))
            _out.duration = duration(e->value, m.child_path(e->key), 1'000, longest_run);
        if (const config::yaml_entry* e = m.find("sample-interval"))
            _out.sample_interval = duration(e->value, m.child_path(e->key), 100, milliseconds(10));
        if (const config::yaml_entry* e = m.find("message-size"))
            _out.message_bytes = static_cast<std::uint32_t>(bytes(e->value, m.child_path(e->key), 1, 1u << 30));
        if (const config::yaml_entry* e = m.find("output"))
            _out.output = _reader.expect_scalar(e->value, m.child_path(e->key), "sim-out/incast");
    }

    // The flow sizes of a size-cdf: "bytes cumulative-percent" lines, rising.
    std::vector<std::pair<double, double>> read_cdf(const YAML::Node& node, const std::string& path) const {
        std::filesystem::path file = _reader.expect_scalar(node, path, "flow-size-cdf/websearch.txt");
        if (file.is_relative()) file = std::filesystem::path(_reader.file()).parent_path() / file;
        std::ifstream in(file);
        if (!in) _reader.fail(node, path, "cannot read the size CDF " + file.string());
        std::vector<std::pair<double, double>> points;
        double size, percent;
        while (in >> size >> percent) {
            if (!points.empty() && (size < points.back().first || percent < points.back().second))
                _reader.fail(node, path,
                             file.string() + ": sizes and percentages must not fall from one line to the next");
            points.emplace_back(size, percent);
        }
        if (points.size() < 2 || points.back().second != 100)
            _reader.fail(node, path, file.string() + ": expected lines '<bytes> <cumulative percent>' ending at 100");
        return points;
    }

    static std::uint64_t draw_size(const std::vector<std::pair<double, double>>& cdf, std::mt19937_64& random) {
        const double u = std::uniform_real_distribution<double>(0, 100)(random);
        for (std::size_t i = 1; i < cdf.size(); ++i) {
            if (u > cdf[i].second) continue;
            const auto [s0, p0] = cdf[i - 1];
            const auto [s1, p1] = cdf[i];
            const double fraction = p1 > p0 ? (u - p0) / (p1 - p0) : 1.0;
            return std::max<std::uint64_t>(1, static_cast<std::uint64_t>(std::llround(s0 + fraction * (s1 - s0))));
        }
        return static_cast<std::uint64_t>(cdf.back().first);
    }

    void add(std::size_t from, std::size_t to, std::uint64_t size, sim_time start, std::string name = {}) {
        if (name.empty()) name = "f" + std::to_string(_out.flows.size() + 1);
        _out.flows.push_back({std::move(name), from, to, size, start});
    }

    // Adds the flows of `pairs` (sender, receiver): each of `size` bytes at `start`, or with
    // size-cdf, `flows` each with sizes drawn from the CDF and Poisson arrivals at `load`.
    void add_flows(const config::yaml_mapping& item, const std::vector<std::pair<std::size_t, std::size_t>>& pairs) {
        const config::yaml_entry* start_entry = item.find("start");
        const sim_time start = start_entry ? duration(start_entry->value, item.child_path("start"), 0, longest_run) : 0;
        const config::yaml_entry* size = item.find("size");
        const config::yaml_entry* size_cdf = item.find("size-cdf");
        if (size && size_cdf) _reader.fail(item.node, item.path, "give size or size-cdf, not both");
        if (size) {
            const std::uint64_t bytes_each = bytes(size->value, item.child_path("size"), 1, 1ull << 40);
            for (const auto& [from, to] : pairs) add(from, to, bytes_each, start);
            return;
        }
        if (!size_cdf)
            _reader.fail(item.node, item.path,
                         "missing size (e.g. size: 10MB) or size-cdf (e.g. size-cdf: flow-size-cdf/websearch.txt)");
        const auto cdf = read_cdf(size_cdf->value, item.child_path("size-cdf"));
        const config::yaml_entry* flows = item.find("flows");
        const config::yaml_entry* load_entry = item.find("load");
        if (!flows || !load_entry)
            _reader.fail(item.node, item.path, "size-cdf needs flows (per sender) and load (0 to 1)");
        const std::uint64_t count = _reader.expect_whole(flows->value, item.child_path("flows"), 1, 100'000, "value");
        const std::string load_text = _reader.expect_scalar(load_entry->value, item.child_path("load"), "0.5");
        const auto load = config::parse_probability(load_text);
        if (!load || *load <= 0 || *load > 1)
            _reader.fail(load_entry->value, item.child_path("load"),
                         "expected a load above 0 and at most 1 (e.g. 0.5 or 50%)");
        double mean = 0;
        for (std::size_t i = 1; i < cdf.size(); ++i)
            mean += (cdf[i].second - cdf[i - 1].second) / 100 * (cdf[i].first + cdf[i - 1].first) / 2;
        std::mt19937_64 random(_out.topology.seed * 0x9e3779b97f4a7c15ull + _out.flows.size());
        std::map<std::size_t, sim_time> next_start; // per sender, its arrivals
        for (std::uint64_t n = 0; n < count; ++n) {
            for (const auto& [from, to] : pairs) {
                const config::link_params& link =
                    _out.topology.links[_out.topology.hosts[from].nics[0].link_index].params;
                // Mean gap: the mean flow's time on the sender's link, divided by the load.
                const double gap_ns = mean * 8e9 / static_cast<double>(link.speed_bps) / *load;
                sim_time& at = next_start.try_emplace(from, start).first->second;
                at += static_cast<sim_time>(std::exponential_distribution<double>(1.0 / gap_ns)(random));
                add(from, to, draw_size(cdf, random), at);
            }
        }
    }

    void load_traffic(const YAML::Node& item, const std::string& path) {
        if (!item.IsMap())
            _reader.fail(item, path, "expected a flow { from, to, size } or a pattern { pattern: incast, ... }");
        // The pattern decides which keys are valid; a repeated `pattern:` is refused by expect_map below.
        const YAML::Node pattern_node = item["pattern"];
        const std::string pattern =
            pattern_node ? _reader.expect_scalar(pattern_node, path + ".pattern", "incast") : "";
        if (pattern.empty()) {
            const config::yaml_mapping m =
                _reader.expect_map(item, path, {"name", "from", "to", "size", "size-cdf", "flows", "load", "start"});
            const config::yaml_entry* from_entry = m.find("from");
            const config::yaml_entry* to_entry = m.find("to");
            if (!from_entry || !to_entry)
                _reader.fail(item, path, "a flow needs from and to (e.g. { from: h1, to: h2, size: 1MB })");
            const std::size_t from = host(from_entry->value, m.child_path("from"));
            const std::size_t to = host(to_entry->value, m.child_path("to"));
            if (from == to) _reader.fail(to_entry->value, m.child_path("to"), "a flow goes from one host to another");
            const std::size_t first = _out.flows.size();
            add_flows(m, {{from, to}});
            if (const config::yaml_entry* name = m.find("name"); name && _out.flows.size() == first + 1)
                _out.flows.back().name = _reader.expect_scalar(name->value, m.child_path("name"), "f1");
            return;
        }
        std::vector<std::pair<std::size_t, std::size_t>> pairs;
        config::yaml_mapping m;
        if (pattern == "incast") {
            m = _reader.expect_map(item, path,
                                   {"pattern", "senders", "receiver", "size", "size-cdf", "flows", "load", "start"});
            const config::yaml_entry* senders = m.find("senders");
            const config::yaml_entry* receiver_entry = m.find("receiver");
            if (!senders || !receiver_entry) _reader.fail(item, path, "incast needs senders and receiver");
            const std::size_t receiver = host(receiver_entry->value, m.child_path("receiver"));
            for (std::size_t s : hosts(senders->value, m.child_path("senders"), 1)) {
                if (s == receiver)
                    _reader.fail(senders->value, m.child_path("senders"), "the receiver cannot be one of the senders");
                pairs.emplace_back(s, receiver);
            }
        } else if (pattern == "all-to-all" || pattern == "permutation") {
            m = _reader.expect_map(item, path, {"pattern", "hosts", "size", "size-cdf", "flows", "load", "start"});
            const config::yaml_entry* hosts_entry = m.find("hosts");
            if (!hosts_entry) _reader.fail(item, path, pattern + " needs hosts");
            const auto group = hosts(hosts_entry->value, m.child_path("hosts"), 2);
            if (pattern == "all-to-all") {
                for (std::size_t a : group)
                    for (std::size_t b : group)
                        if (a != b) pairs.emplace_back(a, b);
            } else {
                // A random derangement (no host sends to itself), from the fabric's seed.
                std::mt19937_64 random(_out.topology.seed);
                std::vector<std::size_t> to = group;
                do std::shuffle(to.begin(), to.end(), random);
                while ([&] {
                    for (std::size_t i = 0; i < group.size(); ++i)
                        if (group[i] == to[i]) return true;
                    return false;
                }());
                for (std::size_t i = 0; i < group.size(); ++i) pairs.emplace_back(group[i], to[i]);
            }
        } else {
            _reader.fail(pattern_node, path + ".pattern",
                         "unknown pattern '" + pattern + "'; expected incast, all-to-all or permutation");
        }
        add_flows(m, pairs);
    }

    config::yaml_reader _reader;
    scenario& _out;
};

} // namespace

bool load_scenario(const std::string& path, scenario& out, config::config_error& error) {
    out = scenario{};
    std::string text;
    if (!config::read_config_file(path, text, error)) return false;
    return parse_scenario(text, path, out, error);
}

bool parse_scenario(const std::string& yaml_text, const std::string& file_name, scenario& out,
                    config::config_error& error) {
    out = scenario{};
    if (!config::parse_topology(yaml_text, file_name, {"traffic", "simulation"}, out.topology, error)) return false;
    try {
        scenario_loader(file_name, out).load(YAML::Load(yaml_text));
        return true;
    } catch (const config::yaml_failure& f) {
        error = f.error;
    } catch (const std::exception& e) {
        error = {file_name, 0, 0, "", std::string("internal error while loading: ") + e.what()};
    }
    return false;
}

} // namespace rocefab::sim
