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

} // namespace
} // namespace rocefab::switch_emu
