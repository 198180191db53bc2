// Fabrics from configs/ run under virtual time: the switches built from the file by the fabric
// builder the daemon uses (control/fabric_builder.hpp), with a traffic host in place of each NIC,
// so what a file promises in its comments is checked against what its switches do.
#include "control/config/topology.hpp"
#include "control/fabric_builder.hpp"
#include "control/node_specs.hpp"
#include "dataplane/virtual_time_driver.hpp"
#include "switch_emu/switch_node.hpp"
#include "tests/support/eal_environment.hpp"
#include "tests/support/traffic_host.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace rocefab::control {
namespace {

using namespace rocefab::testing;
using switch_emu::port_counter;

// `text` as a topology file named test.yaml, into `out`; on failure the test says why.
::testing::AssertionResult loads(const std::string& text, config::topology& out) {
    config::config_error error;
    if (config::parse_topology(text, "test.yaml", out, error)) return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure() << error.to_string();
}

// The fabric of `file` with traffic hosts: host h sends `frames` to the host `destination_of(h)`
// (itself: sends nothing).
class config_fabric {
    // First, so that it goes last: the driver below listens to its links.
    config::topology _topology;
    std::unique_ptr<fabric_builder> _fabric;

public:
    config_fabric(const std::string& file, std::function<std::size_t(std::size_t)> destination_of,
                  std::uint64_t frames) {
        config::config_error error;
        if (!config::load_topology(std::string(ROCEFAB_SOURCE_ROOT) + "/" + file, _topology, error)) {
            ADD_FAILURE() << error.to_string();
            return;
        }
        // Each host's first NIC is a traffic host; any further NIC stays a NIC.
        auto traffic_host_for = [&](std::size_t h, std::size_t n) -> node* {
            if (n != 0) return nullptr;
            traffic_host::flow f;
            const std::size_t to = destination_of(h);
            if (to != h) {
                f.destination = _topology.hosts[to].nics.at(0).address.address.v4();
                f.next_hop = _topology.gateway_mac(h, 0);
                f.frames = frames;
                f.payload = 4000; // RoCE frames at a 4096-byte path MTU
            }
            const config::nic_config& nic = _topology.hosts[h].nics[0];
            hosts.push_back(std::make_unique<traffic_host>(static_cast<unsigned>(h), f,
                                                           _topology.links[nic.link_index].params.speed_bps));
            return hosts.back().get();
        };
        _fabric = std::make_unique<fabric_builder>(_topology, clocking::virtual_time, traffic_host_for);
        _fabric->wiring().attach_all(test_pool());
        driver = std::make_unique<virtual_time_driver>(_fabric->wiring());
    }

    std::uint64_t delivered() const {
        std::uint64_t total = 0;
        for (const auto& h : hosts)
            for (const auto& [port, frames] : h->received_from) total += frames;
        return total;
    }
    // The sum of counter `c` over the ports of every switch.
    std::uint64_t total(port_counter c) const {
        std::uint64_t sum = 0;
        for (const auto& sw : _fabric->switches())
            for (std::uint16_t p = 0; p < sw->port_count(); ++p) sum += sw->counter(p, c);
        return sum;
    }
    std::uint16_t port(std::size_t sw, const std::string& name) const {
        const auto& ports = _topology.switches[sw].ports;
        for (std::size_t p = 0; p < ports.size(); ++p)
            if (ports[p].name == name) return static_cast<std::uint16_t>(p);
        ADD_FAILURE() << "no port " << name;
        return 0;
    }

    const std::vector<std::unique_ptr<switch_emu::switch_node>>& switches() const { return _fabric->switches(); }

    std::vector<std::unique_ptr<traffic_host>> hosts;
    std::unique_ptr<virtual_time_driver> driver;
};

TEST(pfc_deadlock_yaml, the_ring_deadlocks_and_the_watchdog_with_nvidias_defaults_breaks_it) {
    ASSERT_NE(test_pool(), nullptr);
    // Each host sends to the host two switches further clockwise, for longer than the run.
    config_fabric fabric(
        "configs/pfc-deadlock.yaml", [](std::size_t h) { return (h + 2) % 4; }, 100'000'000);
    ASSERT_TRUE(fabric.driver);

    fabric.driver->run_until(milliseconds(5));
    const std::uint64_t stuck = fabric.delivered();
    fabric.driver->run_until(milliseconds(250));
    EXPECT_EQ(fabric.delivered(), stuck) << "frames still arrive: no deadlock";
    for (std::size_t s = 0; s < fabric.switches().size(); ++s) {
        const auto& sw = *fabric.switches()[s];
        SCOPED_TRACE(sw.name());
        // Every switch keeps pausing the one before it (XOFF refreshed) and holds frames.
        EXPECT_GT(sw.pfc_counters(fabric.port(s, "swp3"), 3).tx_pause, 100u);
        EXPECT_GT(sw.buffer_in_use(), 0u);
        EXPECT_EQ(sw.counter(fabric.port(s, "swp2"), port_counter::pfc_wd_storms), 0u); // not yet: 3 polls
    }
    EXPECT_EQ(fabric.total(port_counter::tail_drops), 0u);

    // Polls at 100 ms intervals from the first pause; the third in a row that finds the ring
    // paused declares its queues stormed. Action drop: they let go of what they hold and drop
    // what reaches them, so nothing crosses the ring, but nothing pauses it either.
    fabric.driver->run_until(milliseconds(420));
    EXPECT_EQ(fabric.total(port_counter::pfc_wd_storms), 4u); // the four ring ports
    EXPECT_GT(fabric.total(port_counter::watchdog_drops), 0u);
    EXPECT_EQ(fabric.total(port_counter::pfc_wd_restores), 0u);
    // Three quiet polls later the queues are restored, traffic crosses the ring again (until
    // the ring locks up anew).
    fabric.driver->run_until(milliseconds(650));
    EXPECT_EQ(fabric.total(port_counter::pfc_wd_restores), 4u);
    EXPECT_GT(fabric.delivered(), stuck) << "the watchdog freed the ring";
    EXPECT_EQ(fabric.total(port_counter::tail_drops), 0u);
}

TEST(switch_spec_of, carries_the_files_buffer_adaptive_routing_and_static_routes_to_the_switch) {
    config::topology topology;
    ASSERT_TRUE(loads(R"(
switches:
  - name: leaf1
    buffer: { size: 4MiB, alpha: 1/2, reserved: 3000 }
    adaptive-routing: { link-utilization-threshold: 60 }
    routes: [ { prefix: 10.9.0.0/16, via: [swp32] } ]
  - name: leaf2
hosts:
  - { name: h1, nics: [ { name: rfab0, address: 10.0.1.1/24 } ] }
links:
  - { a: h1/rfab0, b: leaf1/swp1 }
  - { a: leaf1/swp31, b: leaf2/swp31 }
  - { a: leaf1/swp32, b: leaf2/swp32 }
)",
                      topology));
    const switch_emu::switch_spec spec = switch_spec_of(topology, 0, clocking::virtual_time);
    EXPECT_EQ(spec.buffer_bytes, 4u << 20);
    EXPECT_EQ(spec.buffer_alpha, 0.5);
    EXPECT_EQ(spec.reserved_bytes_per_group, 3000u);
    EXPECT_TRUE(spec.adaptive_routing.enabled);
    EXPECT_EQ(spec.adaptive_routing.link_utilization_threshold_percent, 60);
    ASSERT_EQ(spec.ports.size(), 3u);
    EXPECT_FALSE(spec.ports[0].adaptive_routing);
    EXPECT_TRUE(spec.ports[1].adaptive_routing);
    EXPECT_TRUE(spec.ports[2].adaptive_routing);
    EXPECT_EQ(spec.transmit_fifo, 0); // virtual time: the backlog stays in the queues
    const auto is_static = [](const switch_emu::route_spec& r) { return r.length == 16; };
    const auto route = std::find_if(spec.routes.begin(), spec.routes.end(), is_static);
    ASSERT_NE(route, spec.routes.end());
    EXPECT_EQ(route->ports, std::vector<std::uint16_t>{2});
    EXPECT_EQ(switch_spec_of(topology, 0, clocking::realtime).transmit_fifo, microseconds(2));
}

TEST(nic_spec_of, carries_the_files_nic_settings_and_a_hosts_own_to_the_nic) {
    config::topology topology;
    ASSERT_TRUE(loads(R"(
hosts:
  - { name: h1, nics: [ { name: rfab0, address: 10.0.0.1/24 } ] }
  - { name: h2, nics: [ { name: rfab0, address: 10.0.0.2/24 } ] }
links: [ { a: h1/rfab0, b: h2/rfab0, speed: 25G } ]
nic:
  dcqcn: { priorities: [3, 4], rpg_ai_rate: 40, min_time_between_cnps: 50us }
  retransmission: selective-repeat
  adaptive-retransmission: enabled
  hosts: { h2: { host-rx-rate: 5G, trust: l2, dcqcn: { rpg_ai_rate: 10 }, retransmission: go-back-n,
                 adaptive-retransmission: disabled } }
)",
                      topology));
    const nic::nic_spec h1 = nic_spec_of(topology, 0, 0), h2 = nic_spec_of(topology, 1, 0);
    EXPECT_EQ(h1.speed_bps, 25'000'000'000u);
    EXPECT_EQ(h1.dcqcn.rpg_ai_rate_mbps, 40u);
    EXPECT_EQ(h1.dcqcn.min_time_between_cnps, microseconds(50));
    EXPECT_EQ(h1.dcqcn_rp_priorities, (1u << 3) | (1u << 4));
    EXPECT_EQ(h1.dcqcn_np_priorities, (1u << 3) | (1u << 4));
    EXPECT_EQ(h1.host_rx_bps, 0u);
    EXPECT_FALSE(h1.trust_pcp);
    EXPECT_EQ(h1.retransmission, nic::retransmission_mode::selective_repeat);
    EXPECT_TRUE(h1.adaptive_retransmission);
    // h2's own keys over the section's: the rest of its DCQCN is the section's.
    EXPECT_EQ(h2.host_rx_bps, 5'000'000'000u);
    EXPECT_TRUE(h2.trust_pcp);
    EXPECT_EQ(h2.dcqcn.rpg_ai_rate_mbps, 10u);
    EXPECT_EQ(h2.dcqcn.min_time_between_cnps, microseconds(50));
    EXPECT_EQ(h2.dcqcn_rp_priorities, (1u << 3) | (1u << 4));
    EXPECT_EQ(h2.retransmission, nic::retransmission_mode::go_back_n);
    EXPECT_FALSE(h2.adaptive_retransmission);
    // Without the key, IBA's timeouts: the QP's own.
    EXPECT_FALSE(nic::nic_spec{}.adaptive_retransmission);
}

TEST(nic_spec_of, carries_an_adaptive_retransmission_profile_to_the_nic) {
    config::topology topology;
    ASSERT_TRUE(loads(R"(
hosts:
  - { name: h1, nics: [ { name: rfab0, address: 10.0.0.1/24 } ] }
  - { name: h2, nics: [ { name: rfab0, address: 10.0.0.2/24 } ] }
links: [ { a: h1/rfab0, b: h2/rfab0 } ]
nic:
  adaptive-retransmission:
    time-base: 8192ns
    initial: { low: 2, size: 1 }
    ranges: [ { low: 2, size: 1, retries: 1 }, { low: 5, size: 1, retries: 2, decrease: 0 } ]
    start-range: 1
  hosts: { h2: { adaptive-retransmission: { state: disabled } } }
)",
                      topology));
    const nic::nic_spec h1 = nic_spec_of(topology, 0, 0), h2 = nic_spec_of(topology, 1, 0);
    EXPECT_TRUE(h1.adaptive_retransmission); // a profile given is a profile used
    const nic::adaptive_profile& p = h1.adaptive_timeouts;
    EXPECT_EQ(p.time_base, 8192);
    EXPECT_EQ(p.initial_low, 2);
    EXPECT_EQ(p.initial_size, 1);
    ASSERT_EQ(p.range_count, 2);
    EXPECT_EQ(p.ranges[0].low, 2);
    EXPECT_EQ(p.ranges[0].size, 1);
    EXPECT_EQ(p.ranges[0].retries, 1);
    EXPECT_EQ(p.ranges[0].decrease, 2); // the default
    EXPECT_EQ(p.ranges[1].low, 5);
    EXPECT_EQ(p.ranges[1].retries, 2);
    EXPECT_EQ(p.ranges[1].decrease, 0);
    EXPECT_EQ(p.start_range, 1);
    EXPECT_FALSE(h2.adaptive_retransmission);
    EXPECT_EQ(h2.adaptive_timeouts.time_base, 8192); // the section's profile, switched off
}

} // namespace
} // namespace rocefab::control
