// DCQCN's reaction point and notification point against values worked out by hand from the
// equations in nic_emu/dcqcn.hpp (G = 1019/1024, alpha0 = 1023/1024, rpg_gd 11: RC (1 - a/2)).
#include "nic_emu/dcqcn.hpp"

#include <gtest/gtest.h>

namespace rocefab::nic {
namespace {

constexpr double G = 1019.0 / 1024.0;
constexpr double alpha0 = 1023.0 / 1024.0;

TEST(dcqcn_rate, a_scripted_cnp_sequence_follows_the_equations_step_by_step) {
    dcqcn_params p;       // ConnectX defaults
    p.rpg_byte_reset = 0; // the timer alone, to follow one counter
    dcqcn_rate r(p, 100'000'000'000);
    EXPECT_FALSE(r.limited());
    EXPECT_EQ(r.next_event(), never);

    // t = 0, the first CNP: a = alpha0, RT = RC = line, then RC (1 - a/2) = 100G x 1025/2048.
    r.on_cnp(0);
    EXPECT_TRUE(r.limited());
    EXPECT_DOUBLE_EQ(r.alpha(), alpha0);
    EXPECT_DOUBLE_EQ(r.target_rate_bps(), 100e9);
    EXPECT_DOUBLE_EQ(r.current_rate_bps(), 50'048'828'125.0);

    // t = 2 us: a CNP within rate_reduce_monitor_period (4 us) of the last decrease waits.
    // Alpha has decayed for two periods without a CNP: a = G^2 alpha0.
    r.on_cnp(2'000);
    EXPECT_NEAR(r.alpha(), G * G * alpha0, 1e-12);
    EXPECT_DOUBLE_EQ(r.current_rate_bps(), 50'048'828'125.0);
    EXPECT_EQ(r.next_event(), 4'000);

    // t = 4 us: the pending decrease. Alpha: the period [2, 3) us saw the CNP, [3, 4) did not:
    // a4 = G (G a2 + (1 - G)) = 0.984512678439. RT stays 100G (no increase since the last
    // decrease); RC = 50.048828125G (1 - a4/2) = 25.411975209966G.
    r.advance(4'000);
    EXPECT_NEAR(r.alpha(), 0.984512678439, 1e-12);
    EXPECT_DOUBLE_EQ(r.target_rate_bps(), 100e9);
    EXPECT_NEAR(r.current_rate_bps(), 25'411'975'209.966, 0.01);
    EXPECT_EQ(r.next_event(), 304'000); // rpg_time_reset from the decrease

    // t = 304 us, timer increase T = 1 <= F = 1: fast recovery, RC = (RT + RC) / 2.
    r.advance(304'000);
    EXPECT_EQ(r.timer_stage(), 1u);
    EXPECT_NEAR(r.current_rate_bps(), 62'705'987'604.983, 0.01);
    // t = 604 us, T = 2 > F: additive increase, RT + 5 Mb/s capped at the line rate.
    r.advance(604'000);
    EXPECT_DOUBLE_EQ(r.target_rate_bps(), 100e9);
    EXPECT_NEAR(r.current_rate_bps(), 81'352'993'802.491, 0.01);
    // Halving the gap every 300 us, RC comes within 1 Mb/s of the line rate and stops there:
    // no more pacing, no more timers.
    r.advance(10'000'000);
    EXPECT_FALSE(r.limited());
    EXPECT_DOUBLE_EQ(r.current_rate_bps(), 100e9);
    EXPECT_EQ(r.next_event(), never);
}

TEST(dcqcn_rate, the_byte_counter_and_the_timer_lead_to_additive_then_hyper_increase) {
    dcqcn_params p;
    p.rpg_byte_reset = 10'000;
    p.rpg_time_reset = 100'000; // 100 us
    p.rate_to_set_on_first_cnp_mbps = 1000;
    dcqcn_rate r(p, 10'000'000'000);

    r.on_cnp(0); // RC = RT = 1G, then 1G x 1025/2048
    EXPECT_DOUBLE_EQ(r.target_rate_bps(), 1e9);
    EXPECT_DOUBLE_EQ(r.current_rate_bps(), 500'488'281.25);
    r.on_sent(10'000, 1'000); // BC = 1, T = 0: fast recovery
    EXPECT_DOUBLE_EQ(r.current_rate_bps(), 750'244'140.625);
    r.advance(100'000); // T = 1, BC = 1: fast recovery
    EXPECT_DOUBLE_EQ(r.current_rate_bps(), 875'122'070.3125);
    r.on_sent(10'000, 150'000); // BC = 2 > F, T = 1: additive, RT + 5 Mb/s
    EXPECT_DOUBLE_EQ(r.target_rate_bps(), 1'005'000'000.0);
    EXPECT_DOUBLE_EQ(r.current_rate_bps(), 940'061'035.15625);
    r.advance(200'000); // T = 2, BC = 2, both > F: hyper, RT + (2 - 1) x 50 Mb/s
    EXPECT_DOUBLE_EQ(r.target_rate_bps(), 1'055'000'000.0);
    EXPECT_DOUBLE_EQ(r.current_rate_bps(), 997'530'517.578125);
    r.on_sent(10'000, 250'000); // BC = 3, T = 2: hyper, i = min(2, 3) - 1 = 1
    EXPECT_DOUBLE_EQ(r.target_rate_bps(), 1'105'000'000.0);
    EXPECT_DOUBLE_EQ(r.current_rate_bps(), 1'051'265'258.7890625);
    r.advance(300'000); // T = 3, BC = 3: i = 2
    EXPECT_DOUBLE_EQ(r.target_rate_bps(), 1'205'000'000.0);
    EXPECT_DOUBLE_EQ(r.current_rate_bps(), 1'128'132'629.39453125);
}

TEST(dcqcn_rate, a_cnp_after_an_increase_clamps_the_target_to_the_current_rate) {
    dcqcn_params p;
    p.rpg_byte_reset = 0;
    dcqcn_rate r(p, 100'000'000'000);
    r.on_cnp(0);
    r.advance(300'000); // a fast-recovery step: RT stays 100G, RC moves up
    const double raised = r.current_rate_bps();
    r.on_cnp(300'000); // over 4 us since the last decrease: at once, and RT = RC first
    EXPECT_DOUBLE_EQ(r.target_rate_bps(), raised);
    EXPECT_LT(r.current_rate_bps(), raised);
    EXPECT_GE(r.current_rate_bps(), raised / 2); // rpg_min_dec_fac 50 %
    EXPECT_EQ(r.timer_stage(), 0u);              // the stages start again
}

TEST(dcqcn_rate, the_rate_never_falls_below_rpg_min_rate) {
    dcqcn_params p;
    p.rpg_min_rate_mbps = 2000;
    dcqcn_rate r(p, 10'000'000'000);
    for (sim_time t = 0; t < 1'000'000; t += 5'000) r.on_cnp(t);
    EXPECT_DOUBLE_EQ(r.current_rate_bps(), 2e9);
}

TEST(dcqcn_rate, the_pacer_spaces_frames_at_the_current_rate) {
    dcqcn_params p;
    p.rpg_byte_reset = 0;
    dcqcn_rate r(p, 10'000'000'000);
    r.on_cnp(1'000); // 10G x 1025/2048 = 5.0048828125 Gb/s
    EXPECT_EQ(r.next_send_time(), 1'000);
    r.on_sent(1'024, 1'000); // 8192 bits at 5.0048828125 Gb/s: 1636.8 ns, rounded up
    EXPECT_EQ(r.next_send_time(), 1'000 + 1'637);
    r.on_sent(1'024, 1'500); // sent early (the caller's choice): queued behind the first
    EXPECT_EQ(r.next_send_time(), 1'000 + 2 * 1'637);
}

TEST(dcqcn_notifier, sends_at_most_one_cnp_per_min_time_between_cnps) {
    dcqcn_params p; // 4 us
    dcqcn_notifier np(p);
    EXPECT_TRUE(np.should_notify(10'000));
    EXPECT_FALSE(np.should_notify(10'001));
    EXPECT_FALSE(np.should_notify(13'999));
    EXPECT_TRUE(np.should_notify(14'000));
}

} // namespace
} // namespace rocefab::nic
