#include "control/config/yaml_reader.hpp"

#include "control/config/units.hpp"

#include <algorithm>

namespace rocefab::config {

yaml_position position_of(const YAML::Node& node) {
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

std::string join(const std::vector<std::string>& items, std::string_view separator) {
    std::string text;
    for (std::size_t i = 0; i < items.size(); ++i) {
        if (i == 10 && items.size() > 12)
            return text + std::string(separator) + "... " + std::to_string(items.size() - 10) + " more";
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

const yaml_entry* yaml_mapping::find(std::string_view key) const {
    for (const auto& e : entries)
        if (e.key == key) return &e;
    return nullptr;
}

std::string yaml_mapping::child_path(std::string_view key) const {
    return path.empty() ? std::string(key) : path + "." + std::string(key);
}

void yaml_reader::fail(const YAML::Node& at, const std::string& key, const std::string& message) const {
    const yaml_position p = position_of(at);
    throw yaml_failure{{_file, p.line, p.column, key, message}};
}

yaml_mapping yaml_reader::expect_map(const YAML::Node& node, const std::string& path,
                                     std::initializer_list<std::string_view> valid_keys) const {
    return expect_map(node, path, std::vector<std::string>(valid_keys.begin(), valid_keys.end()));
}

yaml_mapping yaml_reader::expect_map(const YAML::Node& node, const std::string& path,
                                     const std::vector<std::string>& valid) const {
    if (!node.IsMap()) fail(node, path, "expected a mapping (key: value pairs), got " + describe_type(node));
    yaml_mapping m{node, path, {}};
    for (auto it = node.begin(); it != node.end(); ++it) {
        const YAML::Node key_node = it->first;
        if (!key_node.IsScalar()) fail(key_node, path, "expected a plain key, got " + describe_type(key_node));
        const std::string& key = key_node.Scalar();
        if (std::find(valid.begin(), valid.end(), key) == valid.end()) {
            std::string message = "unknown key '" + key + "'";
            for (const auto& candidate : valid)
                if (edit_distance(key, candidate) <= 2 && key.size() > 2) {
                    message += "; did you mean '" + candidate + "'?";
                    break;
                }
            fail(key_node, m.child_path(key), message + " (valid keys: " + join(valid) + ")");
        }
        refuse_repeated(key_node, m.child_path(key), m.entries);
        m.entries.push_back({key, key_node, it->second});
    }
    return m;
}

std::vector<yaml_entry> yaml_reader::expect_unique_keys(const YAML::Node& node, const std::string& path) const {
    std::vector<yaml_entry> entries;
    for (auto it = node.begin(); it != node.end(); ++it) {
        if (!it->first.IsScalar()) {
            entries.push_back({"", it->first, it->second});
            continue;
        }
        const std::string key = it->first.Scalar();
        refuse_repeated(it->first, path + "." + key, entries);
        entries.push_back({key, it->first, it->second});
    }
    return entries;
}

// yaml-cpp keeps both copies of a repeated key and answers lookups with the first (iteration sees both, so a loop
// over the entries would let the last win); say so instead.
void yaml_reader::refuse_repeated(const YAML::Node& key_node, const std::string& key_path,
                                  const std::vector<yaml_entry>& earlier) const {
    for (const yaml_entry& first : earlier)
        if (first.key_node.IsScalar() && first.key == key_node.Scalar())
            fail(key_node, key_path,
                 "duplicate key (first given at line " + std::to_string(position_of(first.key_node).line) + ")");
}

const YAML::Node& yaml_reader::required(const yaml_mapping& m, std::string_view key, const std::string& hint) const {
    const yaml_entry* e = m.find(key);
    if (!e) fail(m.node, m.path, "missing required key '" + std::string(key) + "'" + hint);
    return e->value;
}

std::vector<YAML::Node> yaml_reader::expect_list(const YAML::Node& node, const std::string& path) const {
    if (node.IsNull()) return {};
    if (!node.IsSequence()) fail(node, path, "expected a list (lines starting with '- '), got " + describe_type(node));
    return {node.begin(), node.end()};
}

std::string yaml_reader::expect_scalar(const YAML::Node& node, const std::string& path,
                                       const std::string& example) const {
    if (!node.IsScalar()) fail(node, path, "expected a value such as " + example + ", got " + describe_type(node));
    return node.Scalar();
}

std::uint64_t yaml_reader::expect_whole(const YAML::Node& node, const std::string& path, std::uint64_t low,
                                        std::uint64_t high, const std::string& what) const {
    const std::string text = expect_scalar(node, path, std::to_string(low));
    // Twelve digits at most: more than any value the files take, and never past what stoull holds.
    const bool digits = !text.empty() && text.size() <= 12 &&
                        std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
    const std::uint64_t value = digits ? std::stoull(text) : 0;
    if (!digits || value < low || value > high)
        fail(node, path,
             "bad " + what + " '" + text + "'; expected a whole number from " + std::to_string(low) + " to " +
                 std::to_string(high));
    return value;
}

bool yaml_reader::expect_either(const YAML::Node& node, const std::string& path, std::string_view yes,
                                std::string_view no) const {
    const std::string text = expect_scalar(node, path, std::string(yes));
    if (text != yes && text != no)
        fail(node, path, "expected " + std::string(yes) + " or " + std::string(no) + ", got '" + text + "'");
    return text == yes;
}

double yaml_reader::expect_probability(const YAML::Node& node, const std::string& path, const std::string& what) const {
    const std::string text = expect_scalar(node, path, "1%");
    const auto value = parse_probability(text);
    if (!value)
        fail(node, path,
             "bad " + what + " '" + text +
                 "'; expected a probability from 0 to 1, as a fraction (e.g. 0.01) or a "
                 "percentage (e.g. 1%, 0.1%)");
    if (*value > 1.0) fail(node, path, what + " " + text + " is out of range; expected 0 to 1 (0% to 100%)");
    return *value;
}

sim_time yaml_reader::expect_duration(const YAML::Node& node, const std::string& path, sim_time least, sim_time most,
                                      const std::string& what, const std::string& example) const {
    const std::string text = expect_scalar(node, path, example);
    const auto value = parse_duration(text);
    if (!value || *value < least || *value > most)
        fail(node, path,
             "bad " + what + " '" + text + "'; expected " + format_duration(least) + " to " + format_duration(most) +
                 ", with a unit ns, us or ms");
    return *value;
}

std::uint64_t yaml_reader::expect_bytes(const YAML::Node& node, const std::string& path, std::uint64_t least,
                                        std::uint64_t most, const std::string& what, const std::string& example) const {
    const std::string text = expect_scalar(node, path, example);
    const auto value = parse_bytes(text);
    if (!value || *value < least || *value > most)
        fail(node, path,
             "bad " + what + " '" + text + "'; expected " + std::to_string(least) + " to " + std::to_string(most) +
                 " bytes, as a number or with a unit B, KB, MB, KiB or MiB");
    return *value;
}

} // namespace rocefab::config
