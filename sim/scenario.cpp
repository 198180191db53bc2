#include "sim/scenario.hpp"

#include "control/config/units.hpp"

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

// Thrown inside the loader, caught at its edge: the first problem ends the load.
struct failure {
    config::config_error error;
};

constexpr sim_time longest_run = milliseconds(1000);

class scenario_loader {
public:
    scenario_loader(std::string file, scenario& out) : _file(std::move(file)), _out(out) {}

    void load(const YAML::Node& root) {
        if (const YAML::Node sim = root["simulation"]) load_simulation(sim);
        const YAML::Node traffic = root["traffic"];
        if (!traffic) fail(root, "traffic", "missing; a scenario needs at least one flow or pattern");
        if (!traffic.IsSequence() || traffic.size() == 0)
            fail(traffic, "traffic", "expected a list of flows and patterns (lines starting with '- ')");
        for (std::size_t i = 0; i < traffic.size(); ++i) load_traffic(traffic[i], "traffic[" + std::to_string(i) + "]");
        if (_out.output.empty()) _out.output = "sim-out/" + _out.topology.name;
    }

private:
    [[noreturn]] void fail(const YAML::Node& at, const std::string& key, const std::string& message) const {
        const YAML::Mark mark = at.Mark();
        throw failure{{_file, mark.line < 0 ? 0 : mark.line + 1, mark.column < 0 ? 0 : mark.column + 1, key, message}};
    }

    void expect_keys(const YAML::Node& node, const std::string& path, std::initializer_list<const char*> keys) const {
        if (!node.IsMap()) fail(node, path, "expected a mapping (key: value pairs)");
        for (auto it = node.begin(); it != node.end(); ++it) {
            const std::string key = it->first.Scalar();
            if (std::none_of(keys.begin(), keys.end(), [&](const char* k) { return key == k; })) {
                std::string valid;
                for (const char* k : keys) valid += (valid.empty() ? "" : ", ") + std::string(k);
                fail(it->first, path + "." + key, "unknown key '" + key + "' (valid keys: " + valid + ")");
            }
        }
    }

    std::string scalar(const YAML::Node& node, const std::string& path) const {
        if (!node.IsScalar()) fail(node, path, "expected a single value");
        return node.Scalar();
    }

    sim_time duration(const YAML::Node& node, const std::string& path, sim_time least, sim_time most) const {
        const std::string text = scalar(node, path);
        const auto value = config::parse_duration(text);
        if (!value || *value < least || *value > most)
            fail(node, path,
                 "bad duration '" + text + "'; expected " + config::format_duration(least) + " to " +
                     config::format_duration(most) + ", with a unit ns, us or ms");
        return *value;
    }

    std::uint64_t bytes(const YAML::Node& node, const std::string& path, std::uint64_t least, std::uint64_t most) const {
        const std::string text = scalar(node, path);
        const auto value = config::parse_bytes(text);
        if (!value || *value < least || *value > most)
            fail(node, path,
                 "bad size '" + text + "'; expected " + std::to_string(least) + " to " + std::to_string(most) +
                     " bytes, as a number or with a unit B, KB, MB, KiB or MiB");
        return *value;
    }

    std::uint64_t whole(const YAML::Node& node, const std::string& path, std::uint64_t least, std::uint64_t most) const {
        const std::string text = scalar(node, path);
        const bool digits = !text.empty() && text.size() <= 12 && std::all_of(text.begin(), text.end(), ::isdigit);
        if (!digits || std::stoull(text) < least || std::stoull(text) > most)
            fail(node, path,
                 "bad value '" + text + "'; expected a whole number from " + std::to_string(least) + " to " +
                     std::to_string(most));
        return std::stoull(text);
    }

    std::size_t host(const YAML::Node& node, const std::string& path) const {
        const std::string name = scalar(node, path);
        const auto& hosts = _out.topology.hosts;
        for (std::size_t h = 0; h < hosts.size(); ++h)
            if (hosts[h].name == name) return h;
        std::string known;
        for (const auto& h : hosts) known += (known.empty() ? "" : ", ") + h.name;
        fail(node, path, "unknown host '" + name + "' (hosts: " + known + ")");
    }

    std::vector<std::size_t> hosts(const YAML::Node& node, const std::string& path, std::size_t least) const {
        if (!node.IsSequence() || node.size() < least)
            fail(node, path, "expected a list of at least " + std::to_string(least) + " hosts, e.g. [h1, h2]");
        std::vector<std::size_t> out;
        for (std::size_t i = 0; i < node.size(); ++i) {
            const std::size_t h = host(node[i], path);
            if (std::find(out.begin(), out.end(), h) != out.end())
                fail(node[i], path, "host '" + node[i].Scalar() + "' is listed twice");
            out.push_back(h);
        }
        return out;
    }

    void load_simulation(const YAML::Node& node) {
        expect_keys(node, "simulation", {"duration", "sample-interval", "message-size", "output"});
        if (const YAML::Node v = node["duration"]) _out.duration = duration(v, "simulation.duration", 1'000, longest_run);
        if (const YAML::Node v = node["sample-interval"])
            _out.sample_interval = duration(v, "simulation.sample-interval", 100, milliseconds(10));
        if (const YAML::Node v = node["message-size"])
            _out.message_bytes = static_cast<std::uint32_t>(bytes(v, "simulation.message-size", 1, 1u << 30));
        if (const YAML::Node v = node["output"]) _out.output = scalar(v, "simulation.output");
    }

    // The flow sizes of a size-cdf: "bytes cumulative-percent" lines, rising.
    std::vector<std::pair<double, double>> read_cdf(const YAML::Node& node, const std::string& path) const {
        std::filesystem::path file = scalar(node, path);
        if (file.is_relative()) file = std::filesystem::path(_file).parent_path() / file;
        std::ifstream in(file);
        if (!in) fail(node, path, "cannot read the size CDF " + file.string());
        std::vector<std::pair<double, double>> points;
        double size, percent;
        while (in >> size >> percent) {
            if (!points.empty() && (size < points.back().first || percent < points.back().second))
                fail(node, path, file.string() + ": sizes and percentages must not fall from one line to the next");
            points.emplace_back(size, percent);
        }
        if (points.size() < 2 || points.back().second != 100)
            fail(node, path, file.string() + ": expected lines '<bytes> <cumulative percent>' ending at 100");
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
    void add_flows(const YAML::Node& item, const std::string& path, const std::vector<std::pair<std::size_t, std::size_t>>& pairs) {
        const sim_time start = item["start"] ? duration(item["start"], path + ".start", 0, longest_run) : 0;
        if (item["size"] && item["size-cdf"]) fail(item, path, "give size or size-cdf, not both");
        if (item["size"]) {
            const std::uint64_t size = bytes(item["size"], path + ".size", 1, 1ull << 40);
            for (const auto& [from, to] : pairs) add(from, to, size, start);
            return;
        }
        if (!item["size-cdf"]) fail(item, path, "missing size (e.g. size: 10MB) or size-cdf (e.g. size-cdf: flow-size-cdf/websearch.txt)");
        const auto cdf = read_cdf(item["size-cdf"], path + ".size-cdf");
        if (!item["flows"] || !item["load"]) fail(item, path, "size-cdf needs flows (per sender) and load (0 to 1)");
        const std::uint64_t count = whole(item["flows"], path + ".flows", 1, 100'000);
        const std::string load_text = scalar(item["load"], path + ".load");
        const auto load = config::parse_probability(load_text);
        if (!load || *load <= 0 || *load > 1) fail(item["load"], path + ".load", "expected a load above 0 and at most 1 (e.g. 0.5 or 50%)");
        double mean = 0;
        for (std::size_t i = 1; i < cdf.size(); ++i)
            mean += (cdf[i].second - cdf[i - 1].second) / 100 * (cdf[i].first + cdf[i - 1].first) / 2;
        std::mt19937_64 random(_out.topology.seed * 0x9e3779b97f4a7c15ull + _out.flows.size());
        std::map<std::size_t, sim_time> next_start; // per sender, its arrivals
        for (std::uint64_t n = 0; n < count; ++n) {
            for (const auto& [from, to] : pairs) {
                const config::link_params& link = _out.topology.links[_out.topology.hosts[from].nics[0].link_index].params;
                // Mean gap: the mean flow's time on the sender's link, divided by the load.
                const double gap_ns = mean * 8e9 / static_cast<double>(link.speed_bps) / *load;
                sim_time& at = next_start.try_emplace(from, start).first->second;
                at += static_cast<sim_time>(std::exponential_distribution<double>(1.0 / gap_ns)(random));
                add(from, to, draw_size(cdf, random), at);
            }
        }
    }

    void load_traffic(const YAML::Node& item, const std::string& path) {
        if (!item.IsMap()) fail(item, path, "expected a flow { from, to, size } or a pattern { pattern: incast, ... }");
        const std::string pattern = item["pattern"] ? scalar(item["pattern"], path + ".pattern") : "";
        if (pattern.empty()) {
            expect_keys(item, path, {"name", "from", "to", "size", "size-cdf", "flows", "load", "start"});
            if (!item["from"] || !item["to"]) fail(item, path, "a flow needs from and to (e.g. { from: h1, to: h2, size: 1MB })");
            const std::size_t from = host(item["from"], path + ".from"), to = host(item["to"], path + ".to");
            if (from == to) fail(item["to"], path + ".to", "a flow goes from one host to another");
            const std::size_t first = _out.flows.size();
            add_flows(item, path, {{from, to}});
            if (item["name"] && _out.flows.size() == first + 1) _out.flows.back().name = scalar(item["name"], path + ".name");
            return;
        }
        std::vector<std::pair<std::size_t, std::size_t>> pairs;
        if (pattern == "incast") {
            expect_keys(item, path, {"pattern", "senders", "receiver", "size", "size-cdf", "flows", "load", "start"});
            if (!item["senders"] || !item["receiver"]) fail(item, path, "incast needs senders and receiver");
            const std::size_t receiver = host(item["receiver"], path + ".receiver");
            for (std::size_t s : hosts(item["senders"], path + ".senders", 1)) {
                if (s == receiver) fail(item["senders"], path + ".senders", "the receiver cannot be one of the senders");
                pairs.emplace_back(s, receiver);
            }
        } else if (pattern == "all-to-all" || pattern == "permutation") {
            expect_keys(item, path, {"pattern", "hosts", "size", "size-cdf", "flows", "load", "start"});
            if (!item["hosts"]) fail(item, path, pattern + " needs hosts");
            const auto group = hosts(item["hosts"], path + ".hosts", 2);
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
            fail(item["pattern"], path + ".pattern", "unknown pattern '" + pattern + "'; expected incast, all-to-all or permutation");
        }
        add_flows(item, path, pairs);
    }

    std::string _file;
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
    } catch (const failure& f) {
        error = f.error;
    } catch (const std::exception& e) {
        error = {file_name, 0, 0, "", std::string("internal error while loading: ") + e.what()};
    }
    return false;
}

} // namespace rocefab::sim
