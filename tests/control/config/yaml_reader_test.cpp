// The shared YAML reader on its own: what the topology loader and the scenario reader both rely on when they
// report a bad key or value (position, key path, did-you-mean, repeated keys, ranges).
#include "control/config/yaml_reader.hpp"

#include <gtest/gtest.h>

namespace rocefab::config {
namespace {

#define EXPECT_CONTAINS(text, part) EXPECT_NE((text).find(part), std::string::npos) << "in: " << (text)

// The error the reader throws while `read` runs, or a failed expectation if it throws none.
template <typename Read> config_error error_of(Read read) {
    try {
        read();
    } catch (const yaml_failure& failure) {
        return failure.error;
    }
    ADD_FAILURE() << "no error";
    return {};
}

TEST(yaml_reader, unknown_key_names_the_close_valid_key_and_lists_them_all) {
    const yaml_reader reader("f.yaml");
    const YAML::Node node = YAML::Load("a: 1\ntraffic:\n  sise: 1MB\n");
    const config_error e = error_of([&] { reader.expect_map(node["traffic"], "traffic", {"size", "start"}); });
    EXPECT_EQ(e.file, "f.yaml");
    EXPECT_EQ(e.line, 3);
    EXPECT_EQ(e.column, 3);
    EXPECT_EQ(e.key, "traffic.sise");
    EXPECT_EQ(e.message, "unknown key 'sise'; did you mean 'size'? (valid keys: size, start)");
}

TEST(yaml_reader, a_far_or_short_unknown_key_gets_no_guess) {
    const yaml_reader reader("f.yaml");
    EXPECT_EQ(error_of([&] { reader.expect_map(YAML::Load("{ colour: red }"), "x", {"size"}); }).message,
              "unknown key 'colour' (valid keys: size)");
    EXPECT_EQ(error_of([&] { reader.expect_map(YAML::Load("{ sz: 1 }"), "x", {"size"}); }).message,
              "unknown key 'sz' (valid keys: size)");
}

TEST(yaml_reader, a_repeated_key_is_refused_at_its_second_copy_naming_the_first) {
    const yaml_reader reader("f.yaml");
    const YAML::Node node = YAML::Load("size: 1MB\nstart: 0us\nsize: 2MB\n");
    const config_error e = error_of([&] { reader.expect_map(node, "", {"size", "start"}); });
    EXPECT_EQ(e.line, 3);
    EXPECT_EQ(e.key, "size");
    EXPECT_EQ(e.message, "duplicate key (first given at line 1)");
}

TEST(yaml_reader, a_mapping_keyed_by_data_refuses_a_repeated_key_and_leaves_odd_keys_to_its_caller) {
    const yaml_reader reader("f.yaml");
    const std::vector<yaml_entry> entries = reader.expect_unique_keys(YAML::Load("{ 26: 3, [1]: 2, 48: 6 }"), "dscp");
    ASSERT_EQ(entries.size(), 3u);
    EXPECT_EQ(entries[0].key, "26");
    EXPECT_EQ(entries[1].key, "");
    EXPECT_TRUE(entries[1].key_node.IsSequence());
    EXPECT_EQ(entries[2].value.Scalar(), "6");
    const YAML::Node hosts = YAML::Load("h2: a\nh3: b\nh2: c\n");
    const config_error e = error_of([&] { reader.expect_unique_keys(hosts, "hosts"); });
    EXPECT_EQ(e.line, 3);
    EXPECT_EQ(e.key, "hosts.h2");
    EXPECT_EQ(e.message, "duplicate key (first given at line 1)");
}

TEST(yaml_reader, a_mapping_keeps_the_files_order_and_paths_nest) {
    const yaml_reader reader("f.yaml");
    const yaml_mapping m = reader.expect_map(YAML::Load("{ b: 2, a: 1 }"), "top.inner", {"a", "b"});
    ASSERT_EQ(m.entries.size(), 2u);
    EXPECT_EQ(m.entries[0].key, "b");
    EXPECT_EQ(m.child_path("a"), "top.inner.a");
    EXPECT_EQ(m.find("c"), nullptr);
    EXPECT_EQ(error_of([&] { reader.required(m, "c", " (e.g. c: 3)"); }).message,
              "missing required key 'c' (e.g. c: 3)");
}

TEST(yaml_reader, wrong_shapes_say_what_was_found) {
    const yaml_reader reader("f.yaml");
    EXPECT_EQ(error_of([&] { reader.expect_map(YAML::Load("[1, 2]"), "x", {"a"}); }).message,
              "expected a mapping (key: value pairs), got a list");
    EXPECT_EQ(error_of([&] { reader.expect_list(YAML::Load("seven"), "x"); }).message,
              "expected a list (lines starting with '- '), got 'seven'");
    EXPECT_EQ(error_of([&] { reader.expect_scalar(YAML::Load("{ a: 1 }"), "x", "10G"); }).message,
              "expected a value such as 10G, got a mapping");
    EXPECT_TRUE(reader.expect_list(YAML::Load("~"), "x").empty());
}

TEST(yaml_reader, numbers_words_and_units_are_range_checked) {
    const yaml_reader reader("f.yaml");
    EXPECT_EQ(reader.expect_whole(YAML::Load("7"), "p", 0, 7, "priority"), 7u);
    EXPECT_EQ(error_of([&] { reader.expect_whole(YAML::Load("8"), "p", 0, 7, "priority"); }).message,
              "bad priority '8'; expected a whole number from 0 to 7");
    EXPECT_EQ(error_of([&] { reader.expect_whole(YAML::Load("-1"), "p", 0, 7, "priority"); }).message,
              "bad priority '-1'; expected a whole number from 0 to 7");
    EXPECT_TRUE(reader.expect_either(YAML::Load("enable"), "s", "enable", "disable"));
    EXPECT_FALSE(reader.expect_either(YAML::Load("disable"), "s", "enable", "disable"));
    EXPECT_EQ(error_of([&] { reader.expect_either(YAML::Load("on"), "s", "enable", "disable"); }).message,
              "expected enable or disable, got 'on'");
    EXPECT_DOUBLE_EQ(reader.expect_probability(YAML::Load("1%"), "loss", "loss"), 0.01);
    EXPECT_EQ(error_of([&] { reader.expect_probability(YAML::Load("150%"), "loss", "loss"); }).message,
              "loss 150% is out of range; expected 0 to 1 (0% to 100%)");
    EXPECT_EQ(reader.expect_duration(YAML::Load("1.5us"), "d", 0, milliseconds(1), "delay", "1us"), 1'500);
    EXPECT_EQ(error_of([&] {
                  reader.expect_duration(YAML::Load("2ms"), "d", 1'000, milliseconds(1), "delay", "1us");
              }).message,
              "bad delay '2ms'; expected 1us to 1ms, with a unit ns, us or ms");
    EXPECT_EQ(reader.expect_bytes(YAML::Load("64KiB"), "s", 1, 1u << 20, "size", "1MB"), 65'536u);
    EXPECT_EQ(error_of([&] { reader.expect_bytes(YAML::Load("0"), "s", 1, 100, "size", "1MB"); }).message,
              "bad size '0'; expected 1 to 100 bytes, as a number or with a unit B, KB, MB, KiB or MiB");
}

TEST(yaml_reader, long_lists_are_cut_after_ten) {
    std::vector<std::string> items;
    for (int i = 1; i <= 13; ++i) items.push_back("h" + std::to_string(i));
    EXPECT_EQ(join(items), "h1, h2, h3, h4, h5, h6, h7, h8, h9, h10, ... 3 more");
    EXPECT_EQ(join({}), "none");
    EXPECT_EQ(edit_distance("sped", "speed"), 1u);
}

} // namespace
} // namespace rocefab::config
