// The ETS scheduler's shortcut for a class sending alone (cut-through) against the general
// pick() and sent() it stands for.
#include "switch_emu/scheduler.hpp"

#include <gtest/gtest.h>

#include <random>

namespace rocefab::switch_emu {
namespace {

// TC 0 and TC 3 share 30/70 by DWRR, TC 6 is strict, TC 1 has no share. Two schedulers see the
// same frames: `shortcut` is told of lone frames by a shortcut for cut-through, `general` by
// pick() of that class alone and sent(). Every later pick among several classes must agree.
class ets_shortcut : public ::testing::Test {
protected:
    static ets_spec shares() {
        ets_spec spec;
        spec.bandwidth_percent = {30, 0, 0, 70, 0, 0, 0, 0};
        return spec;
    }
    std::uint32_t any_length() { return static_cast<std::uint32_t>(64 + random() % 9000); }
    std::uint8_t any_class() { return classes[random() % 4]; }
    std::uint16_t any_port() { return static_cast<std::uint16_t>(random() % 2); }
    // What the shortcut stands for: the general scheduler picks `tc` alone, and it sends.
    ::testing::AssertionResult general_sends_alone(std::uint16_t port, std::uint8_t tc, std::uint32_t bytes) {
        const auto picked = general.pick(port, static_cast<std::uint8_t>(1u << tc));
        if (picked != tc) return ::testing::AssertionFailure() << "a lone TC " << int(tc) << " was not picked";
        general.sent(port, tc, bytes);
        return ::testing::AssertionSuccess();
    }
    // A random backlog of several classes: both pick, and must agree; the picked class sends.
    ::testing::AssertionResult both_pick_among_several(std::uint16_t port) {
        std::uint8_t backlog = 0;
        for (std::uint8_t tc : classes)
            if (random() % 2) backlog = static_cast<std::uint8_t>(backlog | 1u << tc);
        const auto picked = general.pick(port, backlog);
        if (shortcut.pick(port, backlog) != picked)
            return ::testing::AssertionFailure() << "the two disagree on backlog " << int(backlog);
        if (!picked) return ::testing::AssertionSuccess();
        const std::uint32_t bytes = any_length();
        shortcut.sent(port, *picked, bytes);
        general.sent(port, *picked, bytes);
        ++picks_among_several;
        return ::testing::AssertionSuccess();
    }

    static constexpr std::uint8_t classes[] = {0, 1, 3, 6};
    ets_scheduler shortcut{shares(), 2}, general{shares(), 2};
    std::mt19937 random{3};
    int picks_among_several = 0;
};

TEST_F(ets_shortcut, a_class_sending_alone_moves_the_scheduler_as_pick_and_sent_do) {
    int alone = 0;
    for (int i = 0; i < 20'000; ++i) {
        if (random() % 2) {
            const std::uint8_t tc = any_class();
            const std::uint32_t bytes = any_length();
            shortcut.sent_alone(0, tc, bytes);
            ASSERT_TRUE(general_sends_alone(0, tc, bytes)) << "operation " << i;
            ++alone;
        } else {
            ASSERT_TRUE(both_pick_among_several(0)) << "operation " << i;
        }
    }
    EXPECT_GT(alone, 5'000);
    EXPECT_GT(picks_among_several, 5'000);
}

TEST_F(ets_shortcut, a_run_of_lone_frames_moves_the_scheduler_as_pick_and_sent_do) {
    // As above, with the lone frames in runs of one class (lone_run), long enough that a run's
    // class spends its deficit and takes further turns within the run, on two ports.
    int runs = 0, runs_past_a_quantum = 0;
    for (int i = 0; i < 5'000; ++i) {
        const std::uint16_t port = any_port();
        if (random() % 2) {
            const std::uint8_t tc = any_class();
            const std::uint32_t frames = 1 + random() % 40; // a run has a frame
            ets_scheduler::lone_run run(shortcut, port, tc);
            std::uint64_t bytes_in_run = 0;
            for (std::uint32_t f = 0; f < frames; ++f) {
                const std::uint32_t bytes = any_length();
                run.sent(bytes);
                ASSERT_TRUE(general_sends_alone(port, tc, bytes)) << "operation " << i << ", frame " << f;
                bytes_in_run += bytes;
            }
            ++runs;
            if (bytes_in_run > 70 * ets_scheduler::quantum_per_percent) ++runs_past_a_quantum;
        } else {
            ASSERT_TRUE(both_pick_among_several(port)) << "operation " << i;
        }
    }
    EXPECT_GT(runs, 2'000);
    EXPECT_GT(runs_past_a_quantum, 1'000);
    EXPECT_GT(picks_among_several, 1'000);
}

TEST_F(ets_shortcut, a_run_in_debt_by_exactly_a_quantum_takes_two_more_turns) {
    // TC 0's quantum is 7680 B. Its first frame leaves 1 B of credit, the second (7681 B) a debt
    // of exactly one quantum: before the third, one turn only pays the debt off (0 B of credit),
    // so the class takes a second. The two schedulers then share TC 0 and TC 3 alike.
    constexpr std::int64_t quantum = 30 * ets_scheduler::quantum_per_percent;
    ets_scheduler::lone_run run(shortcut, 0, 0);
    for (const std::uint32_t bytes : {std::uint32_t{quantum - 1}, std::uint32_t{quantum + 1}, 1000u}) {
        run.sent(bytes);
        ASSERT_TRUE(general_sends_alone(0, 0, bytes));
    }
    constexpr std::uint8_t both = 1u << 0 | 1u << 3;
    for (int i = 0; i < 40; ++i) {
        const auto picked = general.pick(0, both);
        ASSERT_EQ(shortcut.pick(0, both), picked) << "pick " << i;
        shortcut.sent(0, *picked, 1000);
        general.sent(0, *picked, 1000);
    }
}

} // namespace
} // namespace rocefab::switch_emu
