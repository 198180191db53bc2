// The virtual-time driver keeps a calendar of links and nodes instead of looking at each of
// them at every instant. These tests hold it to the loop its header defines, run here as a
// reference (every link and node looked at, every round): on fabrics with ties, zero-time
// links, deadlines a receive moves earlier and nodes coupled through shared state, both must
// produce the same trace of receptions and polls, event for event. Running ahead
// (set_run_ahead) interleaves the nodes differently, so there each node's own trace, and what a
// node observing all of them sees, must be the same.
#include "dataplane/virtual_time_driver.hpp"
#include "tests/dataplane/runtime/test_nodes.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <memory>
#include <tuple>

namespace rocefab::testing {
namespace {

// The header's loop, as the driver ran before it had a calendar: O(links + nodes) an instant.
class reference_driver {
public:
    explicit reference_driver(wiring& w) : _wiring(w) {}

    void run_until_idle(sim_time limit) {
        for (;;) {
            sim_time t = never;
            for (std::size_t i = 0; i < _wiring.link_count(); ++i)
                t = std::min(t, _wiring.link_at(static_cast<link_id>(i)).next_arrival());
            for (std::size_t i = 0; i < _wiring.node_count(); ++i)
                t = std::min(t, _wiring.node_at(static_cast<node_id>(i)).next_deadline());
            if (t == never) return;
            t = std::max(t, _now);
            if (t <= _done_through) t = _done_through + 1;
            if (t > limit) return;
            _now = _done_through = t;
            std::vector<std::uint8_t> received(_wiring.node_count(), 0);
            for (unsigned round = 0; round < virtual_time_driver::max_rounds_per_instant; ++round) {
                bool worked = false;
                for (std::size_t i = 0; i < _wiring.link_count(); ++i) {
                    link& l = _wiring.link_at(static_cast<link_id>(i));
                    std::array<rte_mbuf*, virtual_time_driver::delivery_burst> burst;
                    for (unsigned n; (n = l.take_ready(t, burst)) != 0;) {
                        _wiring.node_at(l.to().node).receive_burst(l.to().port, {burst.data(), n}, t);
                        received[l.to().node] = 1;
                        worked = true;
                    }
                }
                for (std::size_t i = 0; i < _wiring.node_count(); ++i) {
                    node& n = _wiring.node_at(static_cast<node_id>(i));
                    if (!received[i] && n.next_deadline() > t) continue;
                    received[i] = 0;
                    worked |= n.poll(t);
                }
                if (!worked) break;
            }
        }
    }

private:
    wiring& _wiring;
    sim_time _now = 0;
    sim_time _done_through = -1;
};

struct trace_event {
    char kind; // 'r' received, 'p' polled and worked, 'i' polled idle
    sim_time time;
    std::uint32_t node;
    std::uint16_t port;
    std::uint32_t seq;
    bool operator==(const trace_event&) const = default;
};

// Sends numbered frames on its timer, forwards some of what it receives, lets a receive move its
// timer earlier (sometimes to the very instant), and pokes its partner's timer from its poll: the
// shared-state coupling a program and its NIC have. Every decision comes from its own PRNG, so
// two runs that call it the same way make the same decisions.
class chaos_node final : public node {
public:
    chaos_node(std::uint32_t id, std::uint16_t ports, std::vector<trace_event>& trace, std::uint64_t seed)
        : node("chaos" + std::to_string(id), ports), _id(id), _trace(trace), _rng(seed) {
        _deadline = static_cast<sim_time>(_rng.next() % 4) * 500; // ties at the start
    }
    void set_partner(chaos_node* partner) { _partner = partner; }

    void receive(std::uint16_t port, rte_mbuf* frame, sim_time now) override {
        const auto bytes = frame_bytes(frame);
        std::uint32_t seq = 0;
        for (int i = 0; i < 4; ++i) seq = (seq << 8) | bytes[14 + i];
        _trace.push_back({'r', now, _id, port, seq});
        const std::uint64_t dice = _rng.next();
        if (dice % 3 == 0 && _forwarded < 400) {
            ++_forwarded;
            transmit(static_cast<std::uint16_t>((dice >> 8) % port_count()), frame, now);
        } else {
            rte_pktmbuf_free(frame);
        }
        if ((dice >> 16) % 4 == 0) _deadline = std::min(_deadline, now + static_cast<sim_time>((dice >> 24) % 3));
    }

    bool poll(sim_time now) override {
        if (now < _deadline) {
            _trace.push_back({'i', now, _id, 0, 0});
            return false;
        }
        _trace.push_back({'p', now, _id, 0, 0});
        const std::uint64_t dice = _rng.next();
        for (unsigned k = 0; k < dice % 3 && _sent < 150; ++k) {
            rte_mbuf* m = allocate_frame();
            if (!m || !rte_pktmbuf_append(m, 64 + static_cast<std::uint16_t>((dice >> 4) % 3) * 500)) {
                if (m) rte_pktmbuf_free(m);
                continue;
            }
            write_pattern(frame_bytes(m), _id << 16 | _sent++, static_cast<std::uint8_t>(_id), 0);
            transmit(static_cast<std::uint16_t>((dice >> (8 + k)) % port_count()), m, now);
        }
        if (_partner && (dice >> 12) % 3 == 0)
            _partner->_deadline = std::min(_partner->_deadline, now + static_cast<sim_time>((dice >> 20) % 2));
        if (_sent >= 150 && (dice >> 28) % 8 == 0)
            _deadline = never;
        else if ((dice >> 32) % 16 == 0 && _immediate < 20) {
            ++_immediate;
            _deadline = now; // due again at this instant: polled in the next round
        } else {
            _deadline = now + 1 + static_cast<sim_time>((dice >> 36) % 1500);
        }
        return true;
    }

    sim_time next_deadline() const override { return _deadline; }

private:
    std::uint32_t _id;
    std::vector<trace_event>& _trace;
    fault_rng _rng;
    chaos_node* _partner = nullptr;
    sim_time _deadline;
    std::uint32_t _sent = 0, _forwarded = 0, _immediate = 0;
};

// Looks at every chaos node's trace at its own instants, as the simulator's recorder looks at
// the fabric: how many events each node has had so far.
class census_node final : public node {
public:
    census_node(const std::vector<trace_event>& trace, std::uint32_t nodes)
        : node("census", 0), _trace(trace), _counts(nodes, 0) {}
    void receive(std::uint16_t, rte_mbuf* frame, sim_time) override { rte_pktmbuf_free(frame); }
    bool poll(sim_time now) override {
        if (now < _next) return false;
        for (; _counted < _trace.size(); ++_counted) ++_counts[_trace[_counted].node];
        _seen.push_back(_counts);
        _seen.back().push_back(static_cast<std::size_t>(now));
        _next = now + 333;
        return true;
    }
    sim_time next_deadline() const override { return _next; }
    const std::vector<std::vector<std::size_t>>& seen() const { return _seen; }

private:
    const std::vector<trace_event>& _trace;
    std::vector<std::size_t> _counts;
    std::size_t _counted = 0;
    sim_time _next = 100;
    std::vector<std::vector<std::size_t>> _seen;
};

enum class driven_by { reference, calendar, running_ahead };

struct chaos_result {
    std::vector<trace_event> trace;
    std::vector<std::vector<std::size_t>> census; // with a census node
    sim_time lookahead = 0;
};

// A fabric of `nodes` chaos nodes in a ring plus chords, links of a few kinds (zero-time among
// them unless `delayed`), partners coupled in pairs, and with `census` a node observing the rest.
// Returns the trace of one run. Delayed, it runs in pieces, each after the first by
// continue_until when `continuing`.
chaos_result chaos_fabric(std::uint64_t seed, driven_by driver_kind, bool declare_coupling, bool delayed, bool census,
                          bool continuing = false) {
    constexpr std::uint32_t nodes = 9;
    constexpr std::uint16_t ports = 3;
    chaos_result result;
    std::vector<trace_event>& trace = result.trace;
    std::vector<std::unique_ptr<chaos_node>> owned;
    wiring w;
    for (std::uint32_t i = 0; i < nodes; ++i) {
        owned.push_back(std::make_unique<chaos_node>(i, ports, trace, link_fault_seed(seed, i)));
        w.add_node(*owned.back());
    }
    const std::array<link_model, 4> kinds{{
        {.speed_bps = 0, .propagation_delay = 0, .mtu = 1500},                     // zero time
        {.speed_bps = 100'000'000'000ull, .propagation_delay = 1000, .mtu = 1500}, // ties with the next
        {.speed_bps = 100'000'000'000ull, .propagation_delay = 1000, .mtu = 1500},
        {.speed_bps = 10'000'000'000ull, .propagation_delay = 0, .mtu = 1500},
    }};
    // Running ahead needs every link to take time: the shortest here is 700 ns.
    const std::array<link_model, 3> delayed_kinds{{
        {.speed_bps = 0, .propagation_delay = 700, .mtu = 1500},
        {.speed_bps = 100'000'000'000ull, .propagation_delay = 1000, .mtu = 1500},
        {.speed_bps = 10'000'000'000ull, .propagation_delay = 700, .mtu = 1500},
    }};
    auto kind = [&](std::uint64_t k) {
        return delayed ? delayed_kinds[k % delayed_kinds.size()] : kinds[k % kinds.size()];
    };
    for (std::uint32_t i = 0; i < nodes; ++i) w.connect(i, 0, (i + 1) % nodes, 1, kind(i + seed));
    // Chords on port 2; the last node's port 2 has no cable (what it sends there is dropped).
    for (std::uint32_t i = 0; i < 4; ++i) w.connect(i, 2, i + 4, 2, kind(i + 2 * seed));
    for (std::uint32_t i = 0; i + 1 < nodes; i += 2) {
        // Partners far apart in index, each way round: a poke lands both ahead of and behind
        // the poll that makes it.
        owned[i]->set_partner(owned[nodes - 1 - i].get());
        owned[nodes - 1 - i]->set_partner(owned[i].get());
        if (declare_coupling) w.couple(i, nodes - 1 - i);
    }
    census_node observer(trace, nodes);
    if (census) w.set_observer(w.add_node(observer));
    w.attach_all(test_pool());
    if (driver_kind == driven_by::reference) {
        reference_driver(w).run_until_idle(milliseconds(10));
    } else {
        virtual_time_driver driver(w);
        driver.set_run_ahead(driver_kind == driven_by::running_ahead);
        result.lookahead = driver.lookahead();
        if (delayed) // in pieces, as the simulator runs it: a window never reaches past a run's end
            for (sim_time end = 0; end <= milliseconds(10); end += 7'777)
                if (continuing && end > 0)
                    driver.continue_until(end);
                else
                    driver.run_until(end);
        else
            driver.run_until_idle(milliseconds(10));
    }
    result.census = observer.seen();
    return result; // frames still on the wire at the limit are freed with the links
}

std::vector<trace_event> chaos_run(std::uint64_t seed, bool reference, bool declare_coupling = true) {
    return chaos_fabric(seed, reference ? driven_by::reference : driven_by::calendar, declare_coupling, false, false)
        .trace;
}

// One node's events, in the order it had them.
std::vector<trace_event> events_of(const std::vector<trace_event>& trace, std::uint32_t node) {
    std::vector<trace_event> mine;
    std::copy_if(trace.begin(), trace.end(), std::back_inserter(mine),
                 [node](const trace_event& e) { return e.node == node; });
    return mine;
}

class driver_calendar_test : public ::testing::Test {
protected:
    void SetUp() override { ASSERT_NE(test_pool(), nullptr); }
};

TEST_F(driver_calendar_test, calendar_gives_the_reference_loops_trace_event_for_event) {
    for (std::uint64_t seed = 1; seed <= 12; ++seed) {
        const auto expected = chaos_run(seed, true);
        const auto got = chaos_run(seed, false);
        ASSERT_GT(expected.size(), 1000u) << "seed " << seed << ": too little happened to compare";
        ASSERT_EQ(got.size(), expected.size()) << "seed " << seed;
        for (std::size_t k = 0; k < got.size(); ++k)
            ASSERT_EQ(got[k], expected[k])
                << "seed " << seed << ", event " << k << " of " << got.size() << ": " << got[k].kind << " node "
                << got[k].node << " at " << got[k].time << ", expected " << expected[k].kind << " node "
                << expected[k].node << " at " << expected[k].time;
    }
}

TEST_F(driver_calendar_test, an_undeclared_coupling_is_what_breaks_the_order) {
    // The same fabrics without wiring::couple: the driver does not see a partner's poke until
    // the poked node is looked at for another reason, so some trace must differ. (Were none to,
    // the test above would not be testing the coupling.)
    bool any_differs = false;
    for (std::uint64_t seed = 1; seed <= 12 && !any_differs; ++seed)
        any_differs = chaos_run(seed, true) != chaos_run(seed, false, false);
    EXPECT_TRUE(any_differs);
}

TEST_F(driver_calendar_test, running_ahead_gives_each_node_and_the_observer_the_same_events) {
    bool interleaved_differently = false;
    for (std::uint64_t seed = 1; seed <= 12; ++seed) {
        const chaos_result plain = chaos_fabric(seed, driven_by::calendar, true, true, true);
        const chaos_result ahead = chaos_fabric(seed, driven_by::running_ahead, true, true, true);
        EXPECT_EQ(plain.lookahead, 0);
        ASSERT_EQ(ahead.lookahead, 700);
        ASSERT_GT(plain.trace.size(), 1000u) << "seed " << seed << ": too little happened to compare";
        ASSERT_EQ(ahead.trace.size(), plain.trace.size()) << "seed " << seed;
        for (std::uint32_t node = 0; node < 9; ++node) {
            const auto expected = events_of(plain.trace, node), got = events_of(ahead.trace, node);
            ASSERT_EQ(got.size(), expected.size()) << "seed " << seed << ", node " << node;
            for (std::size_t k = 0; k < got.size(); ++k)
                ASSERT_EQ(got[k], expected[k])
                    << "seed " << seed << ", node " << node << ", event " << k << ": " << got[k].kind << " at "
                    << got[k].time << ", expected " << expected[k].kind << " at " << expected[k].time;
        }
        ASSERT_GT(plain.census.size(), 100u);
        EXPECT_EQ(ahead.census, plain.census) << "seed " << seed;
        interleaved_differently |= ahead.trace != plain.trace;
    }
    // Otherwise nothing ran ahead, and the comparison above proves nothing.
    EXPECT_TRUE(interleaved_differently);
}

TEST_F(driver_calendar_test, running_ahead_without_a_declared_coupling_shows) {
    // Without wiring::couple, the partners fall into different groups and a poke can land on a
    // partner that has already run past it: some node's events must differ.
    bool any_differs = false;
    for (std::uint64_t seed = 1; seed <= 12 && !any_differs; ++seed) {
        const auto plain = chaos_fabric(seed, driven_by::calendar, false, true, false).trace;
        const auto ahead = chaos_fabric(seed, driven_by::running_ahead, false, true, false).trace;
        for (std::uint32_t node = 0; node < 9 && !any_differs; ++node)
            any_differs = events_of(plain, node) != events_of(ahead, node);
    }
    EXPECT_TRUE(any_differs);
}

TEST_F(driver_calendar_test, continuing_gives_the_same_trace_as_asking_every_node_again) {
    // The simulator changes no node between its runs, so it carries on from the calendar: the
    // same events in the same order, interleaving included, with and without running ahead.
    for (const driven_by kind : {driven_by::calendar, driven_by::running_ahead})
        for (std::uint64_t seed = 1; seed <= 12; ++seed) {
            const chaos_result asked = chaos_fabric(seed, kind, true, true, true);
            const chaos_result continued = chaos_fabric(seed, kind, true, true, true, true);
            ASSERT_GT(asked.trace.size(), 1000u) << "seed " << seed << ": too little happened to compare";
            ASSERT_EQ(continued.trace.size(), asked.trace.size()) << "seed " << seed;
            for (std::size_t k = 0; k < asked.trace.size(); ++k)
                ASSERT_EQ(continued.trace[k], asked.trace[k])
                    << "seed " << seed << ", event " << k << ": " << continued.trace[k].kind << " node "
                    << continued.trace[k].node << " at " << continued.trace[k].time << ", expected "
                    << asked.trace[k].kind << " node " << asked.trace[k].node << " at " << asked.trace[k].time;
            EXPECT_EQ(continued.census, asked.census) << "seed " << seed;
        }
}

TEST_F(driver_calendar_test, running_ahead_needs_every_link_to_take_time) {
    const chaos_result r = chaos_fabric(1, driven_by::running_ahead, true, false, false);
    EXPECT_EQ(r.lookahead, 0); // a zero-time link: served instant by instant
}

TEST_F(driver_calendar_test, an_observer_has_no_ports_and_no_coupling) {
    probe_node ported("ported", 1, {}), lonely("lonely", 0, {}), other("other", 0, {});
    wiring w;
    const node_id p = w.add_node(ported), l = w.add_node(lonely), o = w.add_node(other);
    EXPECT_THROW(w.set_observer(p), std::invalid_argument);
    w.couple(l, o);
    EXPECT_THROW(w.set_observer(l), std::invalid_argument);
    probe_node watcher("watcher", 0, {});
    const node_id wid = w.add_node(watcher);
    w.set_observer(wid);
    EXPECT_TRUE(w.is_observer(wid));
    EXPECT_THROW(w.couple(wid, l), std::invalid_argument);
    EXPECT_THROW(w.set_observer(99), std::invalid_argument);
}

// Node a is due at 50 us; the driver runs to 10 us, node b (due at 20 us) is added, and
// `run_on` takes the driver to 100 us. Each node must have been polled once, when due.
template <typename RunOn> void a_node_added_between_runs_is_polled_when_due(RunOn run_on) {
    probe_node a("a", 1, {microseconds(50)});
    wiring w;
    w.add_node(a);
    w.attach_all(test_pool());
    virtual_time_driver driver(w);
    driver.run_until(microseconds(10));
    EXPECT_TRUE(a.poll_times().empty());
    probe_node b("b", 1, {microseconds(20)});
    w.add_node(b);
    w.attach_all(test_pool());
    run_on(driver, microseconds(100));
    EXPECT_EQ(b.poll_times(), (std::vector<sim_time>{microseconds(20)}));
    EXPECT_EQ(a.poll_times(), (std::vector<sim_time>{microseconds(50)}));
}

TEST_F(driver_calendar_test, a_deadline_set_from_outside_between_runs_is_seen) {
    // What a test does between runs (post work on a NIC): the calendar asks again.
    a_node_added_between_runs_is_polled_when_due([](virtual_time_driver& d, sim_time end) { d.run_until(end); });
}

TEST_F(driver_calendar_test, continuing_still_sees_a_node_added_between_runs) {
    // The wiring grew: continue_until asks every node after all.
    a_node_added_between_runs_is_polled_when_due([](virtual_time_driver& d, sim_time end) { d.continue_until(end); });
}

} // namespace
} // namespace rocefab::testing
