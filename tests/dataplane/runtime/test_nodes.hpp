// Small nodes for driver tests: a pinger that sends numbered frames on a timer and checks
// what comes back, an echo that returns every frame, and a probe that records what a driver
// does to it.
#pragma once

// <cstring> first: tests/support/eal_environment.hpp uses std::memcpy without including it.
#include <cstring>

#include "dataplane/node.hpp"
#include "tests/support/eal_environment.hpp"

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

namespace rocefab::testing {

inline constexpr std::uint16_t test_ethertype = 0x88B5; // IEEE local experimental

inline std::array<std::uint8_t, 6> test_mac(std::uint8_t id) { return {0x02, 0, 0, 0, 0, id}; }

// FNV-1a, to compare the exact bytes two runs received.
inline std::uint64_t fnv1a(std::uint64_t h, std::span<const std::uint8_t> bytes) {
    for (std::uint8_t b : bytes) h = (h ^ b) * 0x100000001b3ull;
    return h;
}
inline constexpr std::uint64_t fnv_basis = 0xcbf29ce484222325ull;

// Fills `frame` (length bytes) as frame number `seq` from `src` to `dst`.
inline void write_pattern(std::span<std::uint8_t> frame, std::uint32_t seq, std::uint8_t src, std::uint8_t dst) {
    const auto d = test_mac(dst), s = test_mac(src);
    std::memcpy(frame.data(), d.data(), 6);
    std::memcpy(frame.data() + 6, s.data(), 6);
    frame[12] = test_ethertype >> 8;
    frame[13] = test_ethertype & 0xff;
    for (int i = 0; i < 4; ++i) frame[14 + i] = static_cast<std::uint8_t>(seq >> (24 - 8 * i));
    for (std::size_t i = 18; i < frame.size(); ++i) frame[i] = static_cast<std::uint8_t>(seq * 7 + i);
}

inline rte_mbuf* make_pattern_frame(std::uint16_t length, std::uint32_t seq = 0) {
    std::vector<std::uint8_t> bytes(length);
    write_pattern(bytes, seq, 1, 2);
    return make_frame(bytes);
}

struct ping_plan {
    std::uint32_t count = 64;
    std::uint32_t burst = 8;
    sim_time first_send = microseconds(10);
    sim_time interval = microseconds(20);
    std::uint16_t frame_length = 1476;
};

struct receive_record {
    sim_time time;
    std::uint32_t seq;
    bool operator==(const receive_record&) const = default;
};

// Sends plan.count frames on port 0, plan.burst at a time every plan.interval (its timer is
// next_deadline()), and checks that each comes back once, intact, addressed to it.
class ping_node final : public node {
public:
    ping_node(std::string name, std::uint8_t mac_id, std::uint8_t peer_mac_id, ping_plan plan)
        : node(std::move(name), 1), _mac_id(mac_id), _peer(peer_mac_id), _plan(plan), _next_send(plan.first_send),
          _seen(plan.count, false), _scratch(plan.frame_length) {
        _trace.reserve(plan.count);
    }

    void receive(std::uint16_t, rte_mbuf* frame, sim_time now) override {
        if (check(frame_bytes(frame), now)) {
            ++_received;
            _digest = fnv1a(_digest, frame_bytes(frame));
            _last_receive = now;
        } else {
            ++_bad;
        }
        rte_pktmbuf_free(frame);
    }

    bool poll(sim_time now) override {
        if (_sent >= _plan.count || now < _next_send) return false;
        const std::uint32_t n = std::min(_plan.burst, _plan.count - _sent);
        for (std::uint32_t i = 0; i < n; ++i) {
            rte_mbuf* m = allocate_frame();
            if (!m || !rte_pktmbuf_append(m, _plan.frame_length)) {
                if (m) rte_pktmbuf_free(m);
                ++_allocation_failures;
                continue;
            }
            write_pattern(frame_bytes(m), _sent + i, _mac_id, _peer);
            transmit(0, m, now);
        }
        _sent += n;
        _next_send += _plan.interval;
        return true;
    }

    sim_time next_deadline() const override { return _sent < _plan.count ? _next_send : never; }

    bool done() const { return _received == _plan.count; }
    std::uint32_t sent() const { return _sent; }
    std::uint32_t received() const { return _received; }
    std::uint32_t bad() const { return _bad; }
    std::uint32_t allocation_failures() const { return _allocation_failures; }
    std::uint64_t digest() const { return _digest; }
    sim_time last_receive() const { return _last_receive; }
    const std::vector<receive_record>& trace() const { return _trace; }

private:
    bool check(std::span<const std::uint8_t> bytes, sim_time now) {
        if (bytes.size() != _plan.frame_length) return false;
        std::uint32_t seq = 0;
        for (int i = 0; i < 4; ++i) seq = (seq << 8) | bytes[14 + i];
        if (seq >= _plan.count || _seen[seq]) return false;
        write_pattern(_scratch, seq, _peer, _mac_id); // the echo swapped the addresses
        if (!std::equal(bytes.begin(), bytes.end(), _scratch.begin())) return false;
        _seen[seq] = true;
        _trace.push_back({now, seq});
        return true;
    }

    std::uint8_t _mac_id;
    std::uint8_t _peer;
    ping_plan _plan;
    sim_time _next_send;
    std::vector<bool> _seen;
    std::vector<std::uint8_t> _scratch;
    std::vector<receive_record> _trace;
    std::uint32_t _sent = 0;
    std::uint32_t _received = 0;
    std::uint32_t _bad = 0;
    std::uint32_t _allocation_failures = 0;
    std::uint64_t _digest = fnv_basis;
    sim_time _last_receive = -1;
};

// Returns every frame on the port it came in, source and destination swapped.
class echo_node final : public node {
public:
    echo_node(std::string name, std::uint16_t ports) : node(std::move(name), ports) {}

    void receive(std::uint16_t port, rte_mbuf* frame, sim_time now) override {
        auto bytes = frame_bytes(frame);
        if (bytes.size() >= 12) {
            std::array<std::uint8_t, 6> tmp;
            std::memcpy(tmp.data(), bytes.data(), 6);
            std::memcpy(bytes.data(), bytes.data() + 6, 6);
            std::memcpy(bytes.data() + 6, tmp.data(), 6);
        }
        ++_echoed;
        transmit(port, frame, now);
    }
    bool poll(sim_time) override { return false; }

    std::uint64_t echoed() const { return _echoed; }

private:
    std::uint64_t _echoed = 0;
};

// Records what the driver does to it; sends on request; has scripted timer deadlines.
class probe_node final : public node {
public:
    struct event {
        enum kind_t { received, polled } kind;
        sim_time time;
        std::uint16_t port;
        std::uint32_t seq;
        bool operator==(const event&) const = default;
    };

    probe_node(std::string name, std::uint16_t ports, std::vector<sim_time> deadlines = {})
        : node(std::move(name), ports), _deadlines(std::move(deadlines)) {}

    void receive(std::uint16_t port, rte_mbuf* frame, sim_time now) override {
        std::uint32_t seq = 0;
        auto bytes = frame_bytes(frame);
        if (bytes.size() >= 18)
            for (int i = 0; i < 4; ++i) seq = (seq << 8) | bytes[14 + i];
        _events.push_back({event::received, now, port, seq});
        rte_pktmbuf_free(frame);
    }

    bool poll(sim_time now) override {
        _events.push_back({event::polled, now, 0, 0});
        bool worked = false;
        while (_next < _deadlines.size() && _deadlines[_next] <= now) {
            ++_next;
            worked = true;
            if (on_timer) on_timer(*this, now);
        }
        return worked;
    }

    sim_time next_deadline() const override { return _next < _deadlines.size() ? _deadlines[_next] : never; }

    // Tests drive transmission from outside, as a node would from receive() or poll().
    void send(std::uint16_t port, rte_mbuf* frame, sim_time now) { transmit(port, frame, now); }
    std::size_t send_while_free(std::uint16_t port, std::span<rte_mbuf* const> frames, sim_time now,
                                sim_time takes_until, sim_time& busy) {
        return transmit_while_free(port, frames, now, takes_until, busy);
    }
    sim_time port_busy_until(std::uint16_t port) const { return busy_until(port); }
    rte_mempool* attached_pool() const { return pool(); }

    const std::vector<event>& events() const { return _events; }
    std::vector<sim_time> poll_times() const {
        std::vector<sim_time> t;
        for (const auto& e : _events)
            if (e.kind == event::polled) t.push_back(e.time);
        return t;
    }
    std::vector<event> receptions() const {
        std::vector<event> r;
        for (const auto& e : _events)
            if (e.kind == event::received) r.push_back(e);
        return r;
    }

    std::function<void(probe_node&, sim_time)> on_timer;

private:
    std::vector<sim_time> _deadlines;
    std::size_t _next = 0;
    std::vector<event> _events;
};

} // namespace rocefab::testing
