// The ETS scheduler's shortcut for a class sending alone (cut-through) against the general
// pick() and sent() it stands for.
#include "switch_emu/scheduler.hpp"

#include <gtest/gtest.h>

#include <random>

namespace rocefab::switch_emu {
namespace {

TEST(ets_scheduler, a_class_sending_alone_moves_the_scheduler_as_pick_and_sent_do) {
    // TC 0 and TC 3 share 30/70 by DWRR, TC 6 is strict, TC 1 has no share. Two schedulers see
    // the same frames; one is told of lone frames by sent_alone(), the other by pick() of that
    // class alone and sent(). Every later pick among several classes must agree.
    ets_spec spec;
    spec.bandwidth_percent = {30, 0, 0, 70, 0, 0, 0, 0};
    ets_scheduler shortcut(spec, 1), general(spec, 1);
    std::mt19937 random(3);
    const std::uint8_t classes[] = {0, 1, 3, 6};
    int alone = 0, together = 0;
    for (int i = 0; i < 20'000; ++i) {
        const auto bytes = static_cast<std::uint32_t>(64 + random() % 9000);
        if (random() % 2) {
            const std::uint8_t tc = classes[random() % 4];
            shortcut.sent_alone(0, tc, bytes);
            ASSERT_EQ(general.pick(0, static_cast<std::uint8_t>(1u << tc)), tc);
            general.sent(0, tc, bytes);
            ++alone;
        } else {
            std::uint8_t backlog = 0;
            for (std::uint8_t tc : classes)
                if (random() % 2) backlog = static_cast<std::uint8_t>(backlog | 1u << tc);
            const auto picked = general.pick(0, backlog);
            ASSERT_EQ(shortcut.pick(0, backlog), picked) << "operation " << i;
            if (!picked) continue;
            shortcut.sent(0, *picked, bytes);
            general.sent(0, *picked, bytes);
            ++together;
        }
    }
    EXPECT_GT(alone, 5'000);
    EXPECT_GT(together, 5'000);
}

TEST(ets_scheduler, a_run_of_lone_frames_moves_the_scheduler_as_pick_and_sent_do) {
    // As above, with the lone frames in runs of one class (lone_run), long enough that a run's
    // class spends its deficit and takes further turns within the run, on two ports.
    ets_spec spec;
    spec.bandwidth_percent = {30, 0, 0, 70, 0, 0, 0, 0};
    ets_scheduler shortcut(spec, 2), general(spec, 2);
    std::mt19937 random(5);
    const std::uint8_t classes[] = {0, 1, 3, 6};
    int runs = 0, runs_past_a_quantum = 0;
    for (int i = 0; i < 5'000; ++i) {
        const auto port = static_cast<std::uint16_t>(random() % 2);
        if (random() % 2) {
            const std::uint8_t tc = classes[random() % 4];
            ets_scheduler::lone_run run(shortcut, port, tc);
            const std::uint32_t frames = random() % 40;
            std::uint64_t bytes_in_run = 0;
            for (std::uint32_t f = 0; f < frames; ++f) {
                const auto bytes = static_cast<std::uint32_t>(64 + random() % 9000);
                run.sent(bytes);
                ASSERT_EQ(general.pick(port, static_cast<std::uint8_t>(1u << tc)), tc);
                general.sent(port, tc, bytes);
                bytes_in_run += bytes;
            }
            ++runs;
            if (bytes_in_run > 70 * ets_scheduler::quantum_per_percent) ++runs_past_a_quantum;
        } else {
            std::uint8_t backlog = 0;
            for (std::uint8_t tc : classes)
                if (random() % 2) backlog = static_cast<std::uint8_t>(backlog | 1u << tc);
            const auto picked = general.pick(port, backlog);
            ASSERT_EQ(shortcut.pick(port, backlog), picked) << "operation " << i;
            if (!picked) continue;
            const auto bytes = static_cast<std::uint32_t>(64 + random() % 9000);
            shortcut.sent(port, *picked, bytes);
            general.sent(port, *picked, bytes);
        }
    }
    EXPECT_GT(runs, 2'000);
    EXPECT_GT(runs_past_a_quantum, 1'000);
}

} // namespace
} // namespace rocefab::switch_emu
