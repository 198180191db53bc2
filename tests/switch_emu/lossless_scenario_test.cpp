// Lossless-fabric scenarios under virtual time: hosts that send at line rate and honour PFC, an
// incast through one switch, and the counters a network engineer would read afterwards. The same
// scenario gives the same numbers on every run.
#include "dataplane/virtual_time_driver.hpp"
#include "dataplane/wire/ip.hpp"
#include "dataplane/wire/pfc.hpp"
#include "dataplane/wire/udp.hpp"
#include "dataplane/wiring.hpp"
#include "switch_emu/switch_node.hpp"
#include "tests/support/eal_environment.hpp"
#include "tests/support/traffic_host.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <vector>

namespace rocefab::switch_emu {
namespace {

using namespace rocefab::testing;

// N senders on ports 0..N-1 of one switch, all sending to the receiver on port N.
class incast : public ::testing::Test {
protected:
    // The switch sizes headroom for 1 us cables; `cable_delay` is what the links really have.
    void build(
        unsigned senders, std::uint64_t frames_each, const qos_spec& qos,
        const std::function<std::uint8_t(unsigned)>& dscp_of = [](unsigned) { return 26; },
        sim_time cable_delay = 1000) {
        ASSERT_NE(test_pool(), nullptr);
        switch_spec spec;
        spec.name = "leaf1";
        for (unsigned p = 0; p <= senders; ++p)
            spec.ports.push_back({"swp" + std::to_string(p + 1), switch_port_mac(p), hundred_gig, 9000, 1000});
        route_spec to_receiver{wire::ipv6_address::v4_mapped(host_ip(senders) & 0xffffff00u),
                               24,
                               false,
                               {static_cast<std::uint16_t>(senders)},
                               {host_mac(senders)}};
        spec.routes.push_back(to_receiver);
        spec.buffer_bytes = 2'000'000; // small enough that 8 groups fill it with the test pool's mbufs
        spec.qos = qos;
        _switch = std::make_unique<switch_node>(spec);
        const node_id sw = _wiring.add_node(*_switch);
        link_model model{hundred_gig, cable_delay, 9000};
        for (unsigned h = 0; h <= senders; ++h) {
            traffic_host::flow f;
            if (h < senders) {
                f.destination = host_ip(senders);
                f.next_hop = switch_port_mac(h);
                f.dscp = dscp_of(h);
                f.priority = qos.dscp_to_priority[f.dscp];
                f.frames = frames_each;
            }
            _hosts.push_back(std::make_unique<traffic_host>(h, f));
            const node_id n = _wiring.add_node(*_hosts.back());
            _wiring.connect(n, 0, sw, static_cast<std::uint16_t>(h), model);
        }
        _wiring.attach_all(test_pool());
        _driver = std::make_unique<virtual_time_driver>(_wiring);
        _senders = senders;
    }

    void run() { ASSERT_TRUE(_driver->run_until_idle(milliseconds(100))) << "still busy after 100 ms"; }

    traffic_host& receiver() { return *_hosts[_senders]; }
    std::uint64_t received_from(unsigned h) { return receiver().received_from[_hosts[h]->source_port()]; }
    std::uint64_t counter(unsigned port, port_counter c) const {
        return _switch->counter(static_cast<std::uint16_t>(port), c);
    }
    std::uint64_t link_drops() const {
        std::uint64_t drops = 0;
        for (std::size_t i = 0; i < _wiring.link_count(); ++i) {
            const auto c = _wiring.link_at(static_cast<link_id>(i)).counters();
            drops += c.drops_queue_full + c.drops_loss + c.drops_mtu;
        }
        return drops;
    }

    wiring _wiring;
    std::unique_ptr<switch_node> _switch;
    std::vector<std::unique_ptr<traffic_host>> _hosts;
    std::unique_ptr<virtual_time_driver> _driver;
    unsigned _senders = 0;
};

constexpr std::uint64_t frames_each = 600; // 600 kB a sender, 4.8 MB in all: more than the buffer

TEST_F(incast, eight_to_one_on_lossless_priority_3_loses_nothing_and_pauses_every_sender) {
    build(8, frames_each, qos_spec{}); // NVIDIA's roce profile: priority 3 lossless
    run();
    for (unsigned h = 0; h < 8; ++h) {
        SCOPED_TRACE(h);
        EXPECT_EQ(received_from(h), frames_each);                                        // every frame arrived
        EXPECT_GT(_switch->pfc_counters(static_cast<std::uint16_t>(h), 3).tx_pause, 0u); // XOFF and XON
        EXPECT_GT(_hosts[h]->pause_frames_received, 0u);
        EXPECT_EQ(counter(h, port_counter::headroom_drops), 0u);
    }
    EXPECT_EQ(counter(8, port_counter::tail_drops), 0u);
    EXPECT_EQ(link_drops(), 0u);
    EXPECT_EQ(_switch->buffer_in_use(), 0u);
    // The bottleneck ran at line rate: 4.8 MB at 100 Gb/s (with 24 B of wire overhead a frame)
    // takes 393 us; pauses must not leave it idle for long.
    EXPECT_LT(_driver->now(), microseconds(450));
}

TEST_F(incast, the_same_incast_without_pfc_drops) {
    qos_spec lossy;
    lossy.lossless_priorities = 0; // the roce-lossy preset
    build(8, frames_each, lossy);
    run();
    std::uint64_t received = 0;
    for (unsigned h = 0; h < 8; ++h) {
        received += received_from(h);
        EXPECT_EQ(_switch->pfc_counters(static_cast<std::uint16_t>(h), 3).tx_pause, 0u);
        EXPECT_EQ(_hosts[h]->pause_frames_received, 0u);
    }
    EXPECT_LT(received, 8 * frames_each);
    EXPECT_EQ(counter(8, port_counter::tail_drops), 8 * frames_each - received);
}

TEST_F(incast, a_lossy_class_next_to_a_lossless_one_drops_only_in_the_lossy_one) {
    // Senders 0-3 send RoCE on DSCP 26 (priority 3, lossless); 4-7 send on DSCP 0 (lossy).
    build(8, frames_each, qos_spec{}, [](unsigned h) { return h < 4 ? std::uint8_t(26) : std::uint8_t(0); });
    run();
    std::uint64_t lossy_received = 0;
    for (unsigned h = 0; h < 4; ++h) EXPECT_EQ(received_from(h), frames_each) << h;
    for (unsigned h = 4; h < 8; ++h) {
        lossy_received += received_from(h);
        EXPECT_EQ(_hosts[h]->pause_frames_received, 0u) << "a lossy priority is never paused";
    }
    EXPECT_LT(lossy_received, 4 * frames_each);
    EXPECT_EQ(counter(8, port_counter::tail_drops), 4 * frames_each - lossy_received);
    for (unsigned h = 0; h < 8; ++h) EXPECT_EQ(counter(h, port_counter::headroom_drops), 0u);

    // The same story per queue and per priority, as `egress-queue-stats` and `pfc-stats` tell it.
    const queue_counters& lossy = _switch->queue_stats(8, 0);
    const queue_counters& lossless = _switch->queue_stats(8, 3);
    EXPECT_EQ(lossy.tail_drops, 4 * frames_each - lossy_received);
    EXPECT_EQ(lossless.tail_drops, 0u);
    EXPECT_EQ(lossy.tx_packets, lossy_received);
    EXPECT_EQ(lossless.tx_packets, 4 * frames_each);
    EXPECT_EQ(lossy.tx_bytes + lossless.tx_bytes, counter(8, port_counter::tx_bytes));
    EXPECT_EQ(lossy.ecn_marked + lossless.ecn_marked, counter(8, port_counter::ecn_marked));
    EXPECT_GT(lossless.ecn_marked, 0u); // the queue passed the ECN band
    EXPECT_GT(lossless.peak_bytes, 150'000u);
    EXPECT_EQ(_switch->queue_depth_bytes(8, 3), 0u); // drained
    for (unsigned h = 0; h < 8; ++h) {
        SCOPED_TRACE(h);
        const std::uint8_t priority = h < 4 ? 3 : 0;
        EXPECT_EQ(_switch->ingress_stats(static_cast<std::uint16_t>(h), priority).rx_packets, frames_each);
        EXPECT_EQ(_switch->buffer().group_bytes(static_cast<std::uint16_t>(h), priority), 0u);
        EXPECT_GT(_switch->buffer().group_peak(static_cast<std::uint16_t>(h), priority), 0u);
    }
}

TEST_F(incast, too_little_headroom_shows_as_headroom_drops_not_tail_drops) {
    // Cables ten times longer than the switch believes (10 us of delay against 1 us): the
    // headroom sized for 1 us cannot hold what is in flight when the pause goes out.
    build(
        8, frames_each, qos_spec{}, [](unsigned) { return std::uint8_t(26); }, microseconds(10));
    run();
    std::uint64_t headroom_drops = 0, received = 0;
    for (unsigned h = 0; h < 8; ++h) {
        headroom_drops += counter(h, port_counter::headroom_drops);
        received += received_from(h);
    }
    EXPECT_GT(headroom_drops, 0u);
    EXPECT_EQ(received + headroom_drops, 8 * frames_each);
    EXPECT_EQ(counter(8, port_counter::tail_drops), 0u); // a lossless class never tail-drops
}

// A cyclic buffer dependency: four switches in a ring, each host sending to the host two
// switches further clockwise, every route going clockwise. Each ring link carries two flows at
// line rate, so every switch pauses the one before it, whose buffer then holds only frames for
// the paused link: the pauses go round the ring and nothing moves any more, for ever, unless the
// PFC watchdog breaks the storm.
class ring_deadlock : public ::testing::Test {
protected:
    static constexpr unsigned switches = 4;

    void build(bool watchdog) {
        ASSERT_NE(test_pool(), nullptr);
        link_model model{hundred_gig, 1000, 9000};
        for (unsigned i = 0; i < switches; ++i) {
            switch_spec spec;
            spec.name = "sw" + std::to_string(i);
            // port 0: the host; port 1: to the next switch clockwise; port 2: from the previous.
            for (unsigned p = 0; p < 3; ++p)
                spec.ports.push_back({"swp" + std::to_string(p + 1),
                                      mac_of(static_cast<std::uint8_t>(0x10 + i), static_cast<std::uint8_t>(p)),
                                      hundred_gig, 9000, 1000});
            for (unsigned h = 0; h < switches; ++h) {
                const bool local = h == i;
                const wire::mac_address next_hop =
                    local ? host_mac(h) : mac_of(static_cast<std::uint8_t>(0x10 + (i + 1) % switches), 2);
                spec.routes.push_back({wire::ipv6_address::v4_mapped(host_ip(h) & 0xffffff00u),
                                       24,
                                       false,
                                       {static_cast<std::uint16_t>(local ? 0 : 1)},
                                       {next_hop}});
            }
            spec.buffer_bytes = 1'000'000;
            spec.qos.pfc_watchdog.enabled = watchdog;
            // Polling every 1 ms instead of 100 ms keeps the run short; the logic is the same.
            spec.qos.pfc_watchdog.polling_interval = milliseconds(1);
            _switches.push_back(std::make_unique<switch_node>(spec));
        }
        std::vector<node_id> ids;
        for (auto& sw : _switches) ids.push_back(_wiring.add_node(*sw));
        for (unsigned i = 0; i < switches; ++i) _wiring.connect(ids[i], 1, ids[(i + 1) % switches], 2, model);
        for (unsigned h = 0; h < switches; ++h) {
            traffic_host::flow f;
            f.destination = host_ip((h + 2) % switches);
            f.next_hop = mac_of(static_cast<std::uint8_t>(0x10 + h), 0);
            f.frames = 1'000'000; // more than the run can send
            _hosts.push_back(std::make_unique<traffic_host>(h, f));
            _wiring.connect(_wiring.add_node(*_hosts.back()), 0, ids[h], 0, model);
        }
        _wiring.attach_all(test_pool());
        _driver = std::make_unique<virtual_time_driver>(_wiring);
    }

    std::uint64_t delivered() {
        std::uint64_t total = 0;
        for (auto& h : _hosts)
            for (const auto& [port, frames] : h->received_from) total += frames;
        return total;
    }

    wiring _wiring;
    std::vector<std::unique_ptr<switch_node>> _switches;
    std::vector<std::unique_ptr<traffic_host>> _hosts;
    std::unique_ptr<virtual_time_driver> _driver;
};

TEST_F(ring_deadlock, without_the_watchdog_the_ring_deadlocks_and_nothing_moves_again) {
    build(false);
    _driver->run_until(milliseconds(5));
    const std::uint64_t before = delivered();
    _driver->run_until(milliseconds(400));
    EXPECT_EQ(delivered(), before) << "frames still arrive: no deadlock";
    for (auto& sw : _switches) {
        EXPECT_GT(sw->pfc_counters(2, 3).tx_pause, 10u) << sw->name(); // XOFF refreshed all along
        EXPECT_GT(sw->buffer_in_use(), 0u);
    }
}

TEST_F(ring_deadlock, the_watchdog_breaks_the_deadlock_and_traffic_flows_again) {
    build(true);
    _driver->run_until(microseconds(500));
    const std::uint64_t stuck = delivered();
    _driver->run_until(microseconds(1500));
    EXPECT_EQ(delivered(), stuck); // deadlocked, not detected yet
    // The third poll in a row that finds the ring's queues paused storms them: they drop, which
    // frees the buffers that held the pauses; three polls without pauses later they are
    // restored and traffic moves again (until the ring deadlocks anew and is broken again).
    _driver->run_until(microseconds(3500));
    std::uint64_t storms = 0, drops = 0;
    for (auto& sw : _switches) {
        storms += sw->counter(1, port_counter::pfc_wd_storms);
        drops += sw->counter(1, port_counter::watchdog_drops);
    }
    EXPECT_GT(storms, 0u);
    EXPECT_GT(drops, 0u);
    _driver->run_until(milliseconds(10));
    std::uint64_t restores = 0;
    for (auto& sw : _switches) restores += sw->counter(1, port_counter::pfc_wd_restores);
    EXPECT_GT(restores, 0u);
    EXPECT_GT(delivered(), stuck) << "the watchdog freed the ring";
}

} // namespace
} // namespace rocefab::switch_emu
