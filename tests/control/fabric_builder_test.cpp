// The one fabric builder (control/fabric_builder.hpp): what it builds from a topology, and that a
// cable the file starts `up: false` behaves the same under both clocks, built as `rocefab sim`
// and the scenario tests build (virtual time) and as the daemon builds (realtime).
#include "control/config/topology.hpp"
#include "control/fabric.hpp"
#include "control/fabric_builder.hpp"
#include "dataplane/eal.hpp"
#include "dataplane/realtime_driver.hpp"
#include "dataplane/virtual_time_driver.hpp"
#include "tests/support/traffic_host.hpp"

#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <unistd.h>
#include <vector>

namespace rocefab::control {
namespace {

using rocefab::testing::traffic_host;

// The EAL sized as the daemon sizes it (control::fabric starts it the same way when it comes
// first), so that a control::fabric's own pool fits beside this small one.
rte_mempool* small_pool() {
    static rte_mempool* pool = [] {
        std::string error;
        eal_options options;
        options.file_prefix = "rocefab-test-" + std::to_string(::getpid());
        if (!start_eal(options, error)) {
            ADD_FAILURE() << error;
            return static_cast<rte_mempool*>(nullptr);
        }
        rte_mempool* p = create_packet_pool("builder_test_pool", 2047, error);
        if (!p) ADD_FAILURE() << error;
        return p;
    }();
    return pool;
}

// Three hosts on one switch; h2's cable starts down.
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
)";
constexpr std::size_t down_cable = 1; // h2/rfab0 - sw1/swp2

config::topology load(const char* yaml) {
    config::topology topology;
    config::config_error error;
    EXPECT_TRUE(config::parse_topology(yaml, "test.yaml", topology, error)) << error.to_string();
    return topology;
}

TEST(fabric_builder, builds_a_node_for_every_switch_and_nic_and_a_link_each_way_for_every_cable) {
    ASSERT_NE(small_pool(), nullptr);
    const config::topology topology = load(one_cable_down);
    const fabric_builder built(topology, clocking::virtual_time);
    ASSERT_EQ(built.switches().size(), 1u);
    EXPECT_EQ(built.switches()[0]->name(), "sw1");
    ASSERT_EQ(built.nics().size(), 3u);
    for (std::size_t h = 0; h < 3; ++h) {
        ASSERT_EQ(built.nics()[h].size(), 1u);
        ASSERT_NE(built.nics()[h][0], nullptr);
        EXPECT_EQ(built.nics()[h][0]->spec().host, topology.hosts[h].name);
    }
    EXPECT_EQ(built.wiring().node_count(), 4u); // the switch first, then the NICs: the poll order
    EXPECT_EQ(&built.wiring().node_at(0), built.switches()[0].get());
    EXPECT_EQ(&built.wiring().node_at(2), built.nics()[1][0].get());
    ASSERT_EQ(built.wiring().link_count(), 6u);
    for (std::size_t c = 0; c < topology.links.size(); ++c) {
        SCOPED_TRACE(c);
        const std::array<link*, 2> both = built.cable(c);
        // a is the host's NIC (node 1 + host), b the switch's port swp(c + 1).
        EXPECT_EQ(both[0]->from().node, 1 + c);
        EXPECT_EQ(both[0]->to().node, 0u);
        EXPECT_EQ(both[0]->to().port, c);
        EXPECT_EQ(both[1]->from().node, both[0]->to().node);
        EXPECT_EQ(both[1]->from().port, both[0]->to().port);
        EXPECT_EQ(both[1]->to().node, both[0]->from().node);
        EXPECT_EQ(both[0]->model().speed_bps, 100'000'000'000u);
        EXPECT_EQ(both[0]->model().propagation_delay, microseconds(1));
    }
}

TEST(fabric_builder, starts_both_directions_of_a_cable_the_file_says_is_down_down_and_no_other) {
    ASSERT_NE(small_pool(), nullptr);
    const config::topology topology = load(one_cable_down);
    for (clocking clock : {clocking::virtual_time, clocking::realtime}) {
        const fabric_builder built(topology, clock);
        for (std::size_t c = 0; c < topology.links.size(); ++c)
            for (const link* direction : built.cable(c))
                EXPECT_EQ(direction->is_up(), c != down_cable) << direction->name();
    }
}

TEST(fabric_builder, puts_the_callers_stand_in_where_it_asks_and_a_nic_everywhere_else) {
    ASSERT_NE(small_pool(), nullptr);
    const config::topology topology = load(one_cable_down);
    traffic_host h2(1, {});
    const fabric_builder built(topology, clocking::virtual_time,
                               [&](std::size_t host, std::size_t) -> node* { return host == 1 ? &h2 : nullptr; });
    EXPECT_EQ(built.nics()[1][0], nullptr);
    EXPECT_EQ(&built.wiring().node_at(2), &h2);
    EXPECT_NE(built.nics()[0][0], nullptr);
    EXPECT_NE(built.nics()[2][0], nullptr);
    EXPECT_EQ(built.cable(down_cable)[0]->from().node, 2u);
}

// The fabric of one_cable_down with a traffic host for each NIC: h1 sends to h2 (across the down
// cable), h2 to h3 (out on the down cable), h3 to h1 (all cables up).
struct one_cable_down_fabric {
    static constexpr std::uint64_t frames = 32; // 32 kB: far below any pause threshold

    config::topology topology = load(one_cable_down);
    std::vector<std::unique_ptr<traffic_host>> hosts;
    std::unique_ptr<fabric_builder> built;

    explicit one_cable_down_fabric(clocking clock) {
        built = std::make_unique<fabric_builder>(topology, clock, [this](std::size_t h, std::size_t) -> node* {
            const std::size_t to = (h + 1) % 3;
            traffic_host::flow f;
            f.destination = topology.hosts[to].nics[0].address.address.v4();
            f.next_hop = topology.gateway_mac(h, 0);
            f.frames = frames;
            hosts.push_back(std::make_unique<traffic_host>(static_cast<unsigned>(h), f));
            return hosts.back().get();
        });
        built->wiring().attach_all(small_pool());
    }

    // Every host has sent all it had and nothing is left on a cable or in the switch.
    bool settled() const {
        for (const auto& h : hosts)
            if (h->sent_frames < frames) return false;
        for (std::size_t l = 0; l < built->wiring().link_count(); ++l)
            if (built->wiring().link_at(l).in_flight() != 0) return false;
        return built->switches()[0]->buffer_in_use() == 0;
    }

    struct outcome {
        std::vector<link_counters> links;    // in wiring order: per cable a->b, b->a
        std::vector<std::uint64_t> received; // per host
    };
    outcome result() const {
        outcome o;
        for (std::size_t l = 0; l < built->wiring().link_count(); ++l)
            o.links.push_back(built->wiring().link_at(l).counters());
        for (const auto& h : hosts) {
            std::uint64_t total = 0;
            for (const auto& [port, count] : h->received_from) total += count;
            o.received.push_back(total);
        }
        return o;
    }
};

TEST(cable_down_in_the_file, drops_and_counts_the_same_under_both_clocks) {
    ASSERT_NE(small_pool(), nullptr);
    constexpr std::uint64_t frames = one_cable_down_fabric::frames;

    // As `rocefab sim` and the scenario tests build and run it.
    one_cable_down_fabric::outcome in_virtual_time;
    {
        one_cable_down_fabric f(clocking::virtual_time);
        virtual_time_driver driver(f.built->wiring());
        driver.run_until(milliseconds(5));
        EXPECT_TRUE(f.settled());
        in_virtual_time = f.result();
    }

    // As the daemon builds and runs it (control::fabric): realtime switch specs, the realtime driver.
    one_cable_down_fabric::outcome in_real_time;
    {
        one_cable_down_fabric f(clocking::realtime);
        realtime_driver driver(f.built->wiring());
        std::atomic<bool> stop{false};
        std::thread data_plane([&] { driver.run(stop); });
        // The nodes belong to the data-plane thread: asked through its mailbox. Bounded by a
        // generous deadline, with no assertion on how fast it went.
        const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(30);
        bool settled = false;
        while (!settled && std::chrono::steady_clock::now() < give_up) {
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
            settled = driver.mail().call([&] { return f.settled(); });
        }
        stop = true;
        driver.mail().wake();
        data_plane.join();
        EXPECT_TRUE(settled) << "the realtime fabric did not settle within 30 s";
        in_real_time = f.result();
    }

    for (const auto* o : {&in_virtual_time, &in_real_time}) {
        SCOPED_TRACE(o == &in_virtual_time ? "virtual time" : "realtime");
        ASSERT_EQ(o->links.size(), 6u);
        const link_counters& h2_out = o->links[2 * down_cable];
        const link_counters& h2_in = o->links[2 * down_cable + 1];
        // h2 sends into its down cable; the switch forwards h1's frames into it: each side
        // drops what it sends and counts it, and nothing goes on the wire.
        EXPECT_EQ(h2_out.drops_link_down, frames);
        EXPECT_EQ(h2_out.tx_frames, 0u);
        EXPECT_EQ(h2_in.drops_link_down, frames);
        EXPECT_EQ(h2_in.tx_frames, 0u);
        // Only h3's frames, across cables that are up, arrive.
        EXPECT_EQ(o->received, (std::vector<std::uint64_t>{frames, 0, 0}));
        for (std::size_t c : {0u, 2u})
            for (std::size_t direction : {0u, 1u}) EXPECT_EQ(o->links[2 * c + direction].drops_link_down, 0u);
    }
    EXPECT_EQ(in_virtual_time.links, in_real_time.links);
    EXPECT_EQ(in_virtual_time.received, in_real_time.received);
}

// The daemon's own fabric, as `rocefab up` builds it (not started: no data-plane thread), shows
// the cable down and lets `rocefab link --up` bring it up. Its pool is one a process: the only
// control::fabric of this binary.
TEST(daemon_fabric, shows_a_cable_the_file_says_is_down_down_both_ways_until_it_is_set_up) {
    ASSERT_NE(small_pool(), nullptr);
    fabric daemon(load(one_cable_down));
    const nlohmann::json links = daemon.counters()["links"];
    ASSERT_EQ(links.size(), 6u);
    for (std::size_t l = 0; l < links.size(); ++l) EXPECT_EQ(links[l]["up"], l / 2 != down_cable) << links[l]["link"];

    nlohmann::json state;
    EXPECT_EQ(daemon.set_link("h2/rfab0", std::nullopt, true, &state), "");
    EXPECT_EQ(state["up"], true);
    const nlohmann::json after = daemon.counters()["links"];
    for (const auto& l : after) EXPECT_EQ(l["up"], true) << l["link"];
    // The data-plane loop has not run: show says so rather than leaving its counters out.
    const nlohmann::json loop = daemon.counters()["dataplane"];
    EXPECT_EQ(loop["iterations"], 0u);
    EXPECT_EQ(loop["catch_up_steps"], 0u);
}

} // namespace
} // namespace rocefab::control
