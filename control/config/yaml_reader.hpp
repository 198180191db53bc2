// The one YAML reader of rocefab's configuration: the topology loader (loader.cpp and the section parsers in
// sections/) and the simulation scenario reader (sim/scenario.cpp) walk their nodes through it, so that every
// file the project reads reports a problem the same way: file, line and column, the key path, and what would be
// valid (the valid keys, with a did-you-mean for a near miss), and refuses a repeated key instead of letting
// yaml-cpp answer with the first copy.
//
// A reader fails by throwing `yaml_failure`; the edge of each loader (parse_topology, parse_scenario) catches it
// and hands the `config_error` back, so nothing escapes to the caller.
#pragma once

#include "control/config/topology.hpp"
#include "dataplane/time.hpp"

#include <yaml-cpp/yaml.h>

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

namespace rocefab::config {

struct yaml_failure {
    config_error error;
};

struct yaml_position {
    int line = 0;   // 1-based; 0 when yaml-cpp recorded no mark
    int column = 0; // 1-based
};

yaml_position position_of(const YAML::Node& node);
// How a node that is not what was expected reads in a message: "'text'", "a list", "a mapping", "nothing".
std::string describe_type(const YAML::Node& node);
// "a, b, c"; past a dozen items, the first ten and "... N more"; "none" for no items.
std::string join(const std::vector<std::string>& items, std::string_view separator = ", ");
// Levenshtein distance, for did-you-mean hints.
std::size_t edit_distance(std::string_view a, std::string_view b);

struct yaml_entry {
    std::string key;
    YAML::Node key_node;
    YAML::Node value;
};

// A YAML mapping whose keys have been checked: all known, none repeated. Entries keep the file's order.
struct yaml_mapping {
    YAML::Node node;
    std::string path;
    std::vector<yaml_entry> entries;

    const yaml_entry* find(std::string_view key) const;
    // "path.key", or "key" at the top level.
    std::string child_path(std::string_view key) const;
};

class yaml_reader {
public:
    // `file` names the file in every error.
    explicit yaml_reader(std::string file) : _file(std::move(file)) {}

    const std::string& file() const { return _file; }

    // Throws yaml_failure with the position of `at`, the key path and the message.
    [[noreturn]] void fail(const YAML::Node& at, const std::string& key, const std::string& message) const;

    // A mapping with keys from `valid_keys` only, each at most once; an unknown key names the closest valid key
    // when there is one within an edit distance of two, and lists them all.
    yaml_mapping expect_map(const YAML::Node& node, const std::string& path,
                            std::initializer_list<std::string_view> valid_keys) const;
    yaml_mapping expect_map(const YAML::Node& node, const std::string& path,
                            const std::vector<std::string>& valid_keys) const;
    // The entries of a mapping whose keys are data rather than a fixed set (host names, DSCP values), in the file's
    // order: a plain key given twice is refused as expect_map refuses it; a key that is not a plain value is kept
    // (its `key` empty) for the caller to refuse in its own words. The caller checks first that `node` is a mapping.
    std::vector<yaml_entry> expect_unique_keys(const YAML::Node& node, const std::string& path) const;
    // The value of `key` in `m`, or an error at the mapping: "missing required key 'KEY'" followed by `hint`.
    const YAML::Node& required(const yaml_mapping& m, std::string_view key, const std::string& hint) const;
    // An absent or empty list (`switches:` with nothing after it) is an empty list.
    std::vector<YAML::Node> expect_list(const YAML::Node& node, const std::string& path) const;
    // A single value; `example` is shown when the node is a list, a mapping or nothing.
    std::string expect_scalar(const YAML::Node& node, const std::string& path, const std::string& example) const;

    // A whole number from `low` to `high`, written in decimal digits only; `what` names it in the message
    // ("bad WHAT 'TEXT'; expected a whole number from LOW to HIGH").
    std::uint64_t expect_whole(const YAML::Node& node, const std::string& path, std::uint64_t low, std::uint64_t high,
                               const std::string& what) const;
    // One of two words ("enabled"/"disabled", "enable"/"disable"): true for `yes`.
    bool expect_either(const YAML::Node& node, const std::string& path, std::string_view yes,
                       std::string_view no) const;
    // A probability from 0 to 1, as a fraction or a percentage (units.hpp's parse_probability).
    double expect_probability(const YAML::Node& node, const std::string& path, const std::string& what) const;
    // A duration with a unit (units.hpp's parse_duration) from `least` to `most`; `example` as expect_scalar's.
    sim_time expect_duration(const YAML::Node& node, const std::string& path, sim_time least, sim_time most,
                             const std::string& what, const std::string& example) const;
    // A size in bytes, bare or with a unit (units.hpp's parse_bytes), from `least` to `most`.
    std::uint64_t expect_bytes(const YAML::Node& node, const std::string& path, std::uint64_t least, std::uint64_t most,
                               const std::string& what, const std::string& example) const;

private:
    // Refuses `key_node` if a plain key among `earlier` has its text.
    void refuse_repeated(const YAML::Node& key_node, const std::string& key_path,
                         const std::vector<yaml_entry>& earlier) const;

    std::string _file;
};

} // namespace rocefab::config
