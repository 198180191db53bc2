// `rocefab sim` honours a cable the file starts `up: false`, as the daemon does: the fabric comes
// from the same builder (control/fabric_builder.hpp). What the NICs send into it is dropped and
// counted, and a flow across it cannot complete.
#include "sim/simulation.hpp"

#include <gtest/gtest.h>

namespace rocefab::sim {
namespace {

// Three hosts on one switch; h2's cable starts down. h1 writes to h2 across it, h3 to h1 beside it.
constexpr const char* one_cable_down = R"(
fabric: one-cable-down
defaults:
  link: { speed: 100G, delay: 1us, mtu: 4200 }
switches:
  - name: sw1
hosts:
  - { name: h1, nics: [ { name: rfab0, address: 10.0.0.1/24 } ] }
  - { name: h2, nics: [ { name: rfab0, address: 10.0.0.2/24 } ] }
  - { name: h3, nics: [ { name: rfab0, address: 10.0.0.3/24 } ] }
links:
  - { a: h1/rfab0, b: sw1/swp1 }
  - { a: h2/rfab0, b: sw1/swp2, up: false }
  - { a: h3/rfab0, b: sw1/swp3 }
traffic:
  - { name: across, from: h1, to: h2, size: 256KiB }
  - { name: beside, from: h3, to: h1, size: 256KiB }
)";
constexpr std::size_t down_cable = 1;

TEST(sim_cable_down, a_flow_across_a_cable_the_file_starts_down_fails_and_its_frames_are_counted_as_dropped) {
    scenario s;
    config::config_error error;
    ASSERT_TRUE(parse_scenario(one_cable_down, "one-cable-down.yaml", s, error)) << error.to_string();
    simulation sim(s);
    // Without a duration the run lasts until both flows are done: `across` only once its
    // requester has used up its retries (7 transport timeouts of about 67 ms).
    sim.run();

    const auto& flows = sim.traffic().flows();
    ASSERT_EQ(flows.size(), 2u);
    EXPECT_TRUE(flows[0].failed) << "a flow across a down cable completed";
    EXPECT_FALSE(flows[1].failed);
    EXPECT_EQ(flows[1].bytes_completed, 256u * 1024) << "a flow beside the down cable did not complete";

    const auto both = sim.fabric().cable(down_cable);
    for (const link* direction : both) EXPECT_FALSE(direction->is_up()) << direction->name();
    // The switch forwards h1's packets, first sends and retransmissions, into the down cable.
    const link_counters to_h2 = both[1]->counters();
    EXPECT_GT(to_h2.drops_link_down, 0u);
    EXPECT_EQ(to_h2.tx_frames, 0u);
    EXPECT_EQ(sim.nics()[1]->counters().port_rcv_packets, 0u);
    EXPECT_GT(sim.nics()[0]->counters().retransmitted_packets, 0u);
    EXPECT_EQ(sim.nics()[0]->counters().local_ack_timeout_err, 8u) << "the first timeout and 7 retries";
}

} // namespace
} // namespace rocefab::sim
