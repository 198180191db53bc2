// Fault injection in the topology file: `faults:` on a link and under defaults.link, `up:` on a link,
// and the top-level `seed:`; what loads, and where each bad value is reported.
#include "control/config/json.hpp"
#include "control/config/topology.hpp"
#include "control/config/units.hpp"

#include <gtest/gtest.h>

namespace rocefab::config {
namespace {

#define EXPECT_CONTAINS(text, part) EXPECT_NE((text).find(part), std::string::npos) << "in: " << (text)

// Line 1 is the first line after the opening newline.
std::string fabric_with(const std::string& top, const std::string& second_link) {
    return top + R"(
switches:
  - name: sw1
hosts:
  - name: h1
    nics:
      - { name: rfab0, address: 10.0.0.1/24 }
  - name: h2
    nics:
      - { name: rfab0, address: 10.0.0.2/24 }
links:
  - { a: h1/rfab0, b: sw1/swp1 }
)" + second_link +
           "\n";
}

topology load(const std::string& yaml) {
    topology fabric;
    config_error error;
    EXPECT_TRUE(parse_topology(yaml, "test.yaml", fabric, error)) << error.to_string();
    return fabric;
}

config_error load_error(const std::string& yaml) {
    topology fabric;
    config_error error;
    EXPECT_FALSE(parse_topology(yaml, "configs/bad.yaml", fabric, error)) << "loaded although it should not";
    return error;
}

TEST(probability_units, fractions_and_percentages_parse_to_the_same_value) {
    EXPECT_DOUBLE_EQ(*parse_probability("0.01"), 0.01);
    EXPECT_DOUBLE_EQ(*parse_probability("1%"), 0.01);
    EXPECT_DOUBLE_EQ(*parse_probability("0.1%"), 0.001);
    EXPECT_DOUBLE_EQ(*parse_probability("100%"), 1.0);
    EXPECT_DOUBLE_EQ(*parse_probability("1"), 1.0);
    EXPECT_DOUBLE_EQ(*parse_probability("0"), 0.0);
    EXPECT_DOUBLE_EQ(*parse_probability("150%"), 1.5) << "returned as written; the loader range-checks";
    for (const char* bad : {"", "%", "-1%", "+0.1", "1e-3", ".5", "1.", "1 %", "1%%", "0.5x", "abc"})
        EXPECT_FALSE(parse_probability(bad)) << bad;
}

TEST(probability_units, format_is_a_percentage) {
    EXPECT_EQ(format_probability(0.01), "1%");
    EXPECT_EQ(format_probability(0.001), "0.1%");
    EXPECT_EQ(format_probability(0), "0%");
    EXPECT_EQ(format_probability(1), "100%");
}

TEST(faults_config, a_file_without_faults_injects_none_and_seeds_with_1) {
    const topology fabric = load(fabric_with("", "  - { a: h2/rfab0, b: sw1/swp2 }"));
    EXPECT_EQ(fabric.seed, 1u);
    for (const auto& l : fabric.links) {
        EXPECT_EQ(l.params.faults, fault_params{});
        EXPECT_TRUE(l.params.up);
    }
    EXPECT_EQ(fabric.links[0].params.faults.reorder_delay, microseconds(10));
}

TEST(faults_config, link_faults_accept_fractions_and_percentages) {
    const topology fabric = load(fabric_with(
        "seed: 12345",
        "  - { a: h2/rfab0, b: sw1/swp2, up: false,\n"
        "      faults: { loss: 1%, corruption: 0.001, duplication: 0.5%, reordering: 1, reorder_delay: 3us } }"));
    EXPECT_EQ(fabric.seed, 12345u);
    const fault_params& f = fabric.links[1].params.faults;
    EXPECT_DOUBLE_EQ(f.loss, 0.01);
    EXPECT_DOUBLE_EQ(f.corruption, 0.001);
    EXPECT_DOUBLE_EQ(f.duplication, 0.005);
    EXPECT_DOUBLE_EQ(f.reordering, 1.0);
    EXPECT_EQ(f.reorder_delay, microseconds(3));
    EXPECT_FALSE(fabric.links[1].params.up);
    EXPECT_EQ(fabric.links[0].params.faults, fault_params{});
    EXPECT_TRUE(fabric.links[0].params.up);
}

TEST(faults_config, a_link_overrides_defaults_key_by_key) {
    const topology fabric = load(fabric_with("defaults:\n  link: { faults: { loss: 2%, reordering: 0.5% } }",
                                             "  - { a: h2/rfab0, b: sw1/swp2, faults: { loss: 0 } }"));
    EXPECT_DOUBLE_EQ(fabric.links[0].params.faults.loss, 0.02);
    EXPECT_DOUBLE_EQ(fabric.links[0].params.faults.reordering, 0.005);
    EXPECT_DOUBLE_EQ(fabric.links[1].params.faults.loss, 0.0);
    EXPECT_DOUBLE_EQ(fabric.links[1].params.faults.reordering, 0.005);
}

TEST(faults_config, json_shows_seed_up_and_faults) {
    const auto doc = nlohmann::json::parse(to_json(load(fabric_with(
        "seed: 9", "  - { a: h2/rfab0, b: sw1/swp2, up: false, faults: { loss: 25%, reorder_delay: 2us } }"))));
    EXPECT_EQ(doc["seed"], 9);
    EXPECT_EQ(doc["links"][1]["up"], false);
    EXPECT_DOUBLE_EQ(doc["links"][1]["faults"]["loss"].get<double>(), 0.25);
    EXPECT_EQ(doc["links"][1]["faults"]["reorder_delay"], "2us");
    EXPECT_EQ(doc["links"][0]["faults"]["corruption"], 0.0);
}

TEST(faults_config, shipped_lossy_example_loads) {
    topology fabric;
    config_error error;
    ASSERT_TRUE(load_topology(std::string(ROCEFAB_SOURCE_ROOT) + "/configs/lossy-two-hosts.yaml", fabric, error))
        << error.to_string();
    EXPECT_EQ(fabric.seed, 1u);
    EXPECT_DOUBLE_EQ(fabric.links[0].params.faults.loss, 0.01);
    EXPECT_DOUBLE_EQ(fabric.links[0].params.faults.corruption, 0.001);
    EXPECT_EQ(fabric.links[1].params.faults, fault_params{});
}

TEST(faults_config, probability_above_one_names_the_key_and_the_range) {
    const auto error = load_error(fabric_with("", "  - { a: h2/rfab0, b: sw1/swp2, faults: { loss: 150% } }"));
    EXPECT_EQ(error.line, 13);
    EXPECT_EQ(error.column, 49);
    EXPECT_EQ(error.key, "links[1].faults.loss");
    EXPECT_CONTAINS(error.message, "loss 150% is out of range; expected 0 to 1 (0% to 100%)");
}

TEST(faults_config, probability_that_is_not_a_number_shows_both_spellings) {
    const auto error = load_error(fabric_with("", "  - { a: h2/rfab0, b: sw1/swp2, faults: { corruption: -1% } }"));
    EXPECT_EQ(error.key, "links[1].faults.corruption");
    EXPECT_EQ(error.line, 13);
    EXPECT_CONTAINS(error.message, "bad corruption '-1%'");
    EXPECT_CONTAINS(error.message, "0.01");
    EXPECT_CONTAINS(error.message, "1%");
}

TEST(faults_config, out_of_range_default_is_reported_under_defaults) {
    const auto error = load_error(
        fabric_with("defaults:\n  link:\n    faults:\n      duplication: 1.5", "  - { a: h2/rfab0, b: sw1/swp2 }"));
    EXPECT_EQ(error.line, 4);
    EXPECT_EQ(error.column, 20);
    EXPECT_EQ(error.key, "defaults.link.faults.duplication");
    EXPECT_CONTAINS(error.message, "expected 0 to 1");
}

TEST(faults_config, misspelt_fault_key_suggests_the_valid_one) {
    const auto error = load_error(fabric_with("", "  - { a: h2/rfab0, b: sw1/swp2, faults: { los: 1% } }"));
    EXPECT_EQ(error.key, "links[1].faults.los");
    EXPECT_CONTAINS(error.message, "did you mean 'loss'?");
    EXPECT_CONTAINS(error.message, "valid keys: loss, corruption, duplication, reordering, reorder_delay");
}

TEST(faults_config, bad_reorder_delay_and_out_of_range_reorder_delay) {
    auto error = load_error(fabric_with("", "  - { a: h2/rfab0, b: sw1/swp2, faults: { reorder_delay: 10 } }"));
    EXPECT_EQ(error.key, "links[1].faults.reorder_delay");
    EXPECT_CONTAINS(error.message, "unit ns, us or ms");
    error = load_error(fabric_with("", "  - { a: h2/rfab0, b: sw1/swp2, faults: { reorder_delay: 1000ms } }"));
    EXPECT_CONTAINS(error.message, "out of range; expected 0ns to 100ms");
}

TEST(faults_config, faults_must_be_a_mapping) {
    const auto error = load_error(fabric_with("", "  - { a: h2/rfab0, b: sw1/swp2, faults: 1% }"));
    EXPECT_EQ(error.key, "links[1].faults");
    EXPECT_CONTAINS(error.message, "expected a mapping");
}

TEST(faults_config, bad_seed_gives_the_valid_range) {
    for (const char* seed : {"-1", "abc", "1.5", "18446744073709551616"}) {
        const auto error = load_error(fabric_with(std::string("seed: ") + seed, "  - { a: h2/rfab0, b: sw1/swp2 }"));
        EXPECT_EQ(error.line, 1) << seed;
        EXPECT_EQ(error.column, 7) << seed;
        EXPECT_EQ(error.key, "seed");
        EXPECT_CONTAINS(error.message, "expected a whole number from 0 to 18446744073709551615");
    }
    EXPECT_EQ(load(fabric_with("seed: 18446744073709551615", "  - { a: h2/rfab0, b: sw1/swp2 }")).seed,
              18446744073709551615u);
}

TEST(faults_config, up_is_true_or_false_and_only_on_a_link) {
    auto error = load_error(fabric_with("", "  - { a: h2/rfab0, b: sw1/swp2, up: maybe }"));
    EXPECT_EQ(error.key, "links[1].up");
    EXPECT_CONTAINS(error.message, "expected true or false");
    error = load_error(fabric_with("defaults:\n  link: { up: false }", "  - { a: h2/rfab0, b: sw1/swp2 }"));
    EXPECT_EQ(error.key, "defaults.link.up");
    EXPECT_CONTAINS(error.message, "valid keys: speed, delay, mtu, faults");
}

} // namespace
} // namespace rocefab::config
