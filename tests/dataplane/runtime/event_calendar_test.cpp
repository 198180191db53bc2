// The driver's calendar against a plain model (each entity's time, or none): after every change
// the earliest time overall and in each group, each entity's time, which groups are due before
// a time, and what a pop takes out are the model's. Groups of one, a few and many entities, as a
// fabric has (a host's group, the switch's with all its links), and a group held while it
// changes, as a window's turn holds it.
#include "dataplane/event_calendar.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <vector>

namespace rocefab {
namespace {

class event_calendar_model : public ::testing::Test {
protected:
    // Entity e in group group_of[e]: group 0 has entities 0-19; group 3 has 20, 23 and 26,
    // group 5 21, 24 and 29, group 9 22, 25 and 28, group 12 only 27. The ids of groups need not
    // be dense, as the driver's (a group's lowest node id) are not.
    void SetUp() override {
        for (int i = 0; i < 20; ++i) group_of.push_back(0);
        for (std::uint32_t g : {3u, 5u, 9u, 3u, 5u, 9u, 3u, 12u, 9u, 5u}) group_of.push_back(g);
        calendar.reset(group_of);
        model.assign(group_of.size(), never);
    }

    sim_time model_earliest_in(std::uint32_t g) const {
        sim_time t = never;
        for (std::size_t e = 0; e < model.size(); ++e)
            if (group_of[e] == g) t = std::min(t, model[e]);
        return t;
    }
    ::testing::AssertionResult agrees() {
        sim_time earliest = never;
        for (std::size_t e = 0; e < model.size(); ++e) {
            earliest = std::min(earliest, model[e]);
            if (calendar.time_of(static_cast<std::uint32_t>(e)) != model[e])
                return ::testing::AssertionFailure()
                       << "entity " << e << " at " << calendar.time_of(e) << ", not " << model[e];
            if (calendar.contains(static_cast<std::uint32_t>(e)) != (model[e] != never))
                return ::testing::AssertionFailure() << "entity " << e << " contained wrongly";
        }
        if (calendar.earliest() != earliest)
            return ::testing::AssertionFailure() << "earliest " << calendar.earliest() << ", not " << earliest;
        if (calendar.empty() != (earliest == never)) return ::testing::AssertionFailure() << "empty wrongly";
        for (std::uint32_t g = 0; g < group_of.size(); ++g)
            if (calendar.earliest_in(g) != model_earliest_in(g))
                return ::testing::AssertionFailure() << "group " << g << "'s earliest " << calendar.earliest_in(g)
                                                     << ", not " << model_earliest_in(g);
        return ::testing::AssertionSuccess();
    }
    std::vector<std::uint32_t> model_groups_before(sim_time end) const {
        std::vector<std::uint32_t> due;
        for (std::size_t e = 0; e < model.size(); ++e)
            if (model[e] < end) due.push_back(group_of[e]);
        std::sort(due.begin(), due.end());
        due.erase(std::unique(due.begin(), due.end()), due.end());
        return due;
    }

    std::vector<std::uint32_t> group_of;
    event_calendar calendar;
    std::vector<sim_time> model;
};

TEST_F(event_calendar_model, agrees_through_random_sets_moves_removals_and_pops) {
    std::mt19937_64 random(7);
    std::vector<std::uint32_t> due;
    for (int step = 0; step < 20000; ++step) {
        const auto e = static_cast<std::uint32_t>(random() % group_of.size());
        const unsigned op = random() % 8;
        if (op < 4) {
            // Few distinct times, so ties within and across groups are common.
            const auto t = static_cast<sim_time>(random() % 40);
            calendar.set(e, t);
            model[e] = t;
        } else if (op == 4) {
            calendar.set(e, never);
            model[e] = never;
        } else if (op == 5) {
            calendar.remove(e);
            model[e] = never;
        } else if (op == 6 && !calendar.empty()) {
            const sim_time earliest = calendar.earliest();
            const std::uint32_t popped = calendar.pop();
            ASSERT_EQ(model[popped], earliest) << "step " << step;
            model[popped] = never;
        } else if (op == 7) {
            const std::uint32_t g = group_of[e];
            if (calendar.earliest_in(g) == never) continue;
            // The group's earliest, and of several at that time the lowest id.
            std::uint32_t expected = ~0u;
            for (std::uint32_t other = 0; other < group_of.size(); ++other)
                if (group_of[other] == g && model[other] == model_earliest_in(g)) expected = std::min(expected, other);
            ASSERT_EQ(calendar.pop_from(g), expected) << "step " << step;
            model[expected] = never;
        }
        ASSERT_TRUE(agrees()) << "step " << step;
        const auto end = static_cast<sim_time>(random() % 45);
        calendar.groups_before(end, due);
        ASSERT_EQ(due, model_groups_before(end)) << "step " << step << ", before " << end;
    }
}

TEST_F(event_calendar_model, a_held_group_takes_its_place_among_the_groups_on_release) {
    calendar.set(21, 10); // group 5
    calendar.set(22, 20); // group 9
    calendar.hold_group(5);
    calendar.set(21, 30); // group 5 now after group 9, but still first among the groups until released
    calendar.set(20, 15); // group 3 is not held
    EXPECT_EQ(calendar.time_of(21), 30);
    EXPECT_EQ(calendar.earliest_in(5), 30);
    EXPECT_EQ(calendar.earliest(), 10);
    calendar.release_group();
    EXPECT_EQ(calendar.earliest(), 15);
    EXPECT_EQ(calendar.pop(), 20u);
    EXPECT_EQ(calendar.pop(), 22u);
    EXPECT_EQ(calendar.pop(), 21u);
    EXPECT_TRUE(calendar.empty());

    // A held group emptied is taken out of the groups on release.
    calendar.set(23, 5);
    calendar.hold_group(3);
    calendar.remove(23);
    calendar.release_group();
    EXPECT_TRUE(calendar.empty());
    EXPECT_EQ(calendar.earliest(), never);
}

TEST_F(event_calendar_model, groups_before_lists_each_due_group_once_in_group_order) {
    for (std::uint32_t e = 0; e < 20; ++e) calendar.set(e, 100 + e); // group 0, many due
    calendar.set(28, 3);                                             // group 9
    calendar.set(20, 50);                                            // group 3
    calendar.set(23, 50);                                            // group 3 again
    calendar.set(21, 7);                                             // group 5
    calendar.set(27, 200);                                           // group 12, not due
    std::vector<std::uint32_t> due;
    calendar.groups_before(101, due);
    EXPECT_EQ(due, (std::vector<std::uint32_t>{0, 3, 5, 9}));
    calendar.groups_before(50, due);
    EXPECT_EQ(due, (std::vector<std::uint32_t>{5, 9}));
    calendar.groups_before(3, due);
    EXPECT_TRUE(due.empty());
}

} // namespace
} // namespace rocefab
