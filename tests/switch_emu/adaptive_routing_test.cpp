// Adaptive routing under virtual time: four large RoCE flows cross from one leaf to another over
// four parallel uplinks. ECMP hashes them onto fewer uplinks than there are (the ECMP seed is
// chosen so that it does); adaptive routing spreads them over all four.
#include "dataplane/virtual_time_driver.hpp"
#include "dataplane/wiring.hpp"
#include "switch_emu/parse.hpp"
#include "switch_emu/route.hpp"
#include "switch_emu/switch_node.hpp"
#include "tests/support/eal_environment.hpp"
#include "tests/support/traffic_host.hpp"

#include <gtest/gtest.h>

#include <memory>
#include <set>
#include <vector>

namespace rocefab::switch_emu {
namespace {

using namespace rocefab::testing;

constexpr unsigned flows = 4;
constexpr unsigned uplinks = 4;
constexpr std::uint64_t frames_each = 600; // 1000-byte frames: 49 us at 100 Gb/s

wire::mac_address port_mac(unsigned sw, unsigned port) {
    return mac_of(static_cast<std::uint8_t>(0x20 + sw), static_cast<std::uint8_t>(port));
}

// Sender h (0..3) on leaf A's port h sends to receiver 4 + h on leaf B's port h. A's ports 4..7
// are cabled to B's ports 4..7.
traffic_host::flow flow_of(unsigned h, std::uint16_t destination_port) {
    traffic_host::flow f;
    f.destination = host_ip(flows + h);
    f.next_hop = port_mac(0, h);
    f.frames = frames_each;
    f.destination_port = destination_port;
    return f;
}

// The uplink (0..3) leaf A's ECMP hash with `seed` gives sender h's flow.
unsigned hashed_uplink(unsigned h, std::uint32_t seed) {
    rte_mbuf* m = rte_pktmbuf_alloc(test_pool());
    traffic_host::write_frame(m, h, flow_of(h, wire::roce_v2_udp_port));
    parsed_frame parsed;
    EXPECT_EQ(parse_frame(m, port_mac(0, h), parsed), parse_verdict::ip);
    const std::uint32_t hash = flow_hash(m, parsed, seed);
    rte_pktmbuf_free(m);
    return static_cast<unsigned>((std::uint64_t(hash) * uplinks) >> 32); // as router::route picks
}

// An ECMP seed under which the four flows hash onto only two of the four uplinks.
std::uint32_t colliding_seed() {
    for (std::uint32_t seed = 0;; ++seed) {
        std::set<unsigned> used;
        for (unsigned h = 0; h < flows; ++h) used.insert(hashed_uplink(h, seed));
        if (used.size() == 2) return seed;
    }
}

class adaptive_routing_scenario : public ::testing::Test {
protected:
    void build(bool adaptive, std::uint16_t destination_port = wire::roce_v2_udp_port) {
        ASSERT_NE(test_pool(), nullptr);
        _seed = colliding_seed();
        for (unsigned sw = 0; sw < 2; ++sw) {
            switch_spec spec;
            spec.name = sw == 0 ? "leafA" : "leafB";
            for (unsigned p = 0; p < flows + uplinks; ++p) {
                port_spec port{"swp" + std::to_string(p + 1), port_mac(sw, p), hundred_gig, 9000, 1000};
                port.adaptive_routing = p >= flows; // the uplinks, as NVUE enables it per interface
                spec.ports.push_back(port);
            }
            for (unsigned h = 0; h < flows; ++h) {
                const auto prefix = wire::ipv6_address::v4_mapped(host_ip(flows + h) & 0xffffff00u);
                if (sw == 0)
                    spec.routes.push_back({prefix,
                                           24,
                                           false,
                                           {4, 5, 6, 7},
                                           {port_mac(1, 4), port_mac(1, 5), port_mac(1, 6), port_mac(1, 7)}});
                else
                    spec.routes.push_back({prefix, 24, false, {static_cast<std::uint16_t>(h)}, {host_mac(flows + h)}});
            }
            spec.ecmp_seed = _seed;
            spec.buffer_bytes = 2'000'000;
            spec.adaptive_routing.enabled = adaptive;
            _switches.push_back(std::make_unique<switch_node>(spec));
        }
        const node_id a = _wiring.add_node(*_switches[0]);
        const node_id b = _wiring.add_node(*_switches[1]);
        const link_model model{hundred_gig, 1000, 9000};
        for (unsigned u = 0; u < uplinks; ++u)
            _wiring.connect(a, static_cast<std::uint16_t>(flows + u), b, static_cast<std::uint16_t>(flows + u), model);
        for (unsigned h = 0; h < 2 * flows; ++h) {
            const bool sender = h < flows;
            _hosts.push_back(
                std::make_unique<traffic_host>(h, sender ? flow_of(h, destination_port) : traffic_host::flow{}));
            _wiring.connect(_wiring.add_node(*_hosts.back()), 0, sender ? a : b,
                            static_cast<std::uint16_t>(sender ? h : h - flows), model);
        }
        _wiring.attach_all(test_pool());
        _driver = std::make_unique<virtual_time_driver>(_wiring);
    }

    void run() { ASSERT_TRUE(_driver->run_until_idle(milliseconds(10))) << "still busy after 10 ms"; }

    std::uint64_t uplink_bytes(unsigned u) const {
        return _switches[0]->counter(static_cast<std::uint16_t>(flows + u), port_counter::tx_bytes);
    }
    std::uint64_t delivered(unsigned h) { return _hosts[flows + h]->received_from[_hosts[h]->source_port()]; }

    std::uint32_t _seed = 0;
    wiring _wiring;
    std::vector<std::unique_ptr<switch_node>> _switches;
    std::vector<std::unique_ptr<traffic_host>> _hosts;
    std::unique_ptr<virtual_time_driver> _driver;
};

// One flow at line rate over one uplink: 600 frames of 1024 bytes on the wire.
constexpr sim_time one_flow_alone = frames_each * 1024 * 8 * 1'000'000'000 / hundred_gig;

TEST_F(adaptive_routing_scenario, ecmp_leaves_uplinks_idle_and_doubles_the_transfer_time) {
    build(false);
    run();
    unsigned idle = 0;
    for (unsigned u = 0; u < uplinks; ++u) idle += uplink_bytes(u) == 0;
    EXPECT_EQ(idle, 2u); // the seed makes the four flows share two uplinks
    for (unsigned h = 0; h < flows; ++h) EXPECT_EQ(delivered(h), frames_each) << h;
    EXPECT_GT(_driver->now(), 19 * one_flow_alone / 10); // two flows to an uplink: half rate each
    EXPECT_EQ(_switches[0]->adaptive_reroutes(), 0u);
}

TEST_F(adaptive_routing_scenario, adaptive_routing_keeps_all_uplinks_busy) {
    build(true);
    run();
    std::uint64_t total = 0;
    for (unsigned u = 0; u < uplinks; ++u) total += uplink_bytes(u);
    for (unsigned u = 0; u < uplinks; ++u) {
        SCOPED_TRACE(u);
        EXPECT_GT(uplink_bytes(u), total / 5); // each near a quarter, none idle
    }
    for (unsigned h = 0; h < flows; ++h) EXPECT_EQ(delivered(h), frames_each) << h; // lossless, reordered
    EXPECT_GT(_switches[0]->adaptive_reroutes(), 0u);
    EXPECT_LT(_driver->now(), 13 * one_flow_alone / 10); // close to every flow at line rate
    for (unsigned p = 0; p < flows + uplinks; ++p)
        EXPECT_EQ(_switches[0]->counter(static_cast<std::uint16_t>(p), port_counter::tail_drops), 0u);
}

TEST_F(adaptive_routing_scenario, traffic_that_is_not_roce_keeps_its_hashed_path) {
    build(true, 4000); // UDP, but not to RoCEv2's port 4791
    run();
    unsigned idle = 0;
    for (unsigned u = 0; u < uplinks; ++u) idle += uplink_bytes(u) == 0;
    EXPECT_EQ(idle, 2u);
    EXPECT_EQ(_switches[0]->adaptive_reroutes(), 0u);
}

TEST(adaptive_routing_choice, an_idle_group_follows_the_hash_and_a_loaded_member_is_avoided) {
    switch_spec spec;
    spec.name = "leaf";
    for (unsigned p = 0; p < 3; ++p) {
        port_spec port{"swp" + std::to_string(p + 1), port_mac(0, p), hundred_gig, 9000, 1000};
        port.adaptive_routing = true;
        spec.ports.push_back(port);
    }
    spec.adaptive_routing.enabled = true;
    adaptive_routing ar(spec);
    const std::uint16_t ports[] = {0, 1, 2};
    auto loads = std::vector<adaptive_routing::port_load>(3, {0, 0});
    ar.regrade_if_due(0, [&](std::uint16_t p) { return loads[p]; });
    EXPECT_EQ(ar.choose(ports, 1, 1000), 1u); // nothing loaded: the hashed member
    // Within the interval, what was sent counts: the next packet avoids member 1.
    EXPECT_EQ(ar.choose(ports, 1, 1000), 2u);
    // After 1 us: port 0 sent at 100 % of its rate (over the 70 % threshold) and has nothing
    // queued; port 2 is under the threshold with 5000 bytes queued, port 1 with 6000.
    loads = {{12'500, 0}, {0, 6000}, {0, 5000}};
    ar.regrade_if_due(999, [&](std::uint16_t p) { return loads[p]; }); // not due yet: no change
    ar.regrade_if_due(1000, [&](std::uint16_t p) { return loads[p]; });
    EXPECT_EQ(ar.choose(ports, 0, 1000), 2u); // port 0 is over the threshold; 2 holds the least
    EXPECT_EQ(ar.choose(ports, 0, 1000), 1u); // 6000 against 6000: the first after the hashed one
    EXPECT_EQ(ar.choose(ports, 0, 1000), 2u); // 7000 against 6000
    // Every member over the threshold: all compete on load alone.
    loads = {{37'500, 0}, {12'500, 9000}, {25'000, 4000}};
    ar.regrade_if_due(2000, [&](std::uint16_t p) { return loads[p]; });
    EXPECT_EQ(ar.choose(ports, 1, 1000), 0u);
}

TEST(adaptive_routing_choice, a_group_with_a_port_not_enabled_is_not_adaptive) {
    switch_spec spec;
    spec.name = "leaf";
    for (unsigned p = 0; p < 3; ++p) {
        port_spec port{"swp" + std::to_string(p + 1), port_mac(0, p), hundred_gig, 9000, 1000};
        port.adaptive_routing = p != 2;
        spec.ports.push_back(port);
    }
    spec.adaptive_routing.enabled = true;
    const adaptive_routing ar(spec);
    const std::uint16_t enabled[] = {0, 1}, mixed[] = {0, 1, 2}, single[] = {0};
    EXPECT_TRUE(ar.eligible_group(enabled));
    EXPECT_FALSE(ar.eligible_group(mixed));
    EXPECT_FALSE(ar.eligible_group(single));
    spec.adaptive_routing.enabled = false;
    EXPECT_FALSE(adaptive_routing(spec).eligible_group(enabled));
}

} // namespace
} // namespace rocefab::switch_emu
