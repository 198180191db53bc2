// The switch: a node whose receive() runs a frame through parse → classify → route →
// admission → egress queue, and whose transmit stage (poll) hands queued frames to the links
// one at a time, only when a link is idle, so queues build here, where ECN and PFC look.
#pragma once

#include "dataplane/node.hpp"
#include "switch_emu/admission.hpp"
#include "switch_emu/classify.hpp"
#include "switch_emu/congestion.hpp"
#include "switch_emu/counters.hpp"
#include "switch_emu/egress_queue.hpp"
#include "switch_emu/parse.hpp"
#include "switch_emu/pfc.hpp"
#include "switch_emu/pfc_watchdog.hpp"
#include "switch_emu/route.hpp"
#include "switch_emu/scheduler.hpp"
#include "switch_emu/switch_spec.hpp"

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace rocefab::switch_emu {

class switch_node final : public node {
public:
    // Throws std::invalid_argument with validate()'s message when `spec` is unusable:
    // construction is control plane; nothing after it throws.
    explicit switch_node(switch_spec spec);

    // attach() must have been called before the first receive()/poll().
    void receive(std::uint16_t port, rte_mbuf* frame, sim_time now) override;
    // Frames go through the pipeline in vectors of up to vector_size: each frame of the vector
    // is parsed, classified and routed in one pass, then, per frame in arrival order, admitted,
    // queued and sent, consecutive frames for one queue cut through as a run. Per-frame work
    // that only depends on the port or the time is done once a vector. The stages before
    // admission depend on nothing the later ones change, so the result is the same as
    // receive() on each frame in turn; a MAC control frame (PFC) is acted on only after the
    // frames received before it are queued.
    void receive_burst(std::uint16_t port, std::span<rte_mbuf* const> frames, sim_time now) override;
    static constexpr std::size_t vector_size = 32;
    bool poll(sim_time now) override;
    // The earliest time the link of a port with queued frames is free again; `never` when
    // nothing is queued.
    sim_time next_deadline() const override;

    const switch_spec& spec() const { return _spec; }
    std::uint64_t counter(std::uint16_t port, port_counter c) const { return _counters[port][c]; }
    // Calls `f(std::string_view name, std::uint64_t value)` for each counter of `port`, then for
    // the per-priority PFC counters under their `ethtool -S` names (rx_prio3_pause, ...).
    template <typename Callback> void for_each_counter(std::uint16_t port, Callback&& f) const {
        _counters[port].for_each(f);
        for (std::uint8_t p = 0; p < traffic_class_count; ++p) {
            const priority_counters c = _pfc.counters(port, p);
            const std::string prio = "prio" + std::to_string(p);
            f("rx_" + prio + "_pause", c.rx_pause);
            f("rx_" + prio + "_pause_duration", c.rx_pause_duration_us);
            f("tx_" + prio + "_pause", c.tx_pause);
            f("tx_" + prio + "_pause_duration", c.tx_pause_duration_us);
        }
    }
    // Per traffic class of `port`: its egress queue's counters, and what it holds now.
    const queue_counters& queue_stats(std::uint16_t port, std::uint8_t tc) const { return _queue_counters[port][tc]; }
    std::uint64_t queue_depth_bytes(std::uint16_t port, std::uint8_t tc) const { return _queues.depth_bytes(port, tc); }
    // Per switch priority of `port`: what arrived in it.
    const ingress_counters& ingress_stats(std::uint16_t port, std::uint8_t priority) const {
        return _ingress_counters[port][priority];
    }
    // What `rocefab show` reports of one port, as plain data.
    struct port_snapshot {
        port_counters counters;
        std::array<queue_counters, traffic_class_count> queues{};
        std::array<std::uint64_t, traffic_class_count> queue_depth_bytes{};
        std::array<ingress_counters, traffic_class_count> ingress{};
        std::array<std::uint64_t, traffic_class_count> group_bytes{}, group_peak_bytes{};
        std::array<priority_counters, traffic_class_count> pfc{};
    };
    struct snapshot_data {
        std::uint64_t buffer_size_bytes = 0, buffer_in_use_bytes = 0, buffer_peak_bytes = 0;
        std::uint64_t adaptive_reroutes = 0;
        std::vector<port_snapshot> ports; // in spec order
    };
    // Copies every counter and gauge into `out`: plain data, cheap enough for the data-plane
    // thread to hand over; formatting them is the reader's business (switch_emu/show.hpp).
    // `out.ports` is sized on the first call and reused after.
    void snapshot(snapshot_data& out) const;

    priority_counters pfc_counters(std::uint16_t port, std::uint8_t priority) const {
        return _pfc.counters(port, priority);
    }
    std::uint32_t queue_depth_frames(std::uint16_t port, std::uint8_t tc) const {
        return _queues.depth_frames(port, tc);
    }
    std::size_t buffer_in_use() const { return _buffer.in_use(); }
    // RoCE packets adaptive routing sent to another port than their ECMP hash chose.
    std::uint64_t adaptive_reroutes() const { return _router.rerouted(); }
    const shared_buffer& buffer() const { return _buffer; }

private:
    // A frame of a vector, parsed, classified and routed: built once a frame, read by every
    // stage after. The frame itself is kept beside it (forward_vector's `frames`), as the link
    // takes a run of them. 16 bytes.
    struct in_flight {
        const parsed_frame* parsed;
        std::uint32_t length;
        std::uint16_t egress;
        std::uint8_t priority; // packet_meta's, from classification
        std::uint8_t traffic_class;
    };
    static_assert(sizeof(in_flight) == 16);
    static std::uint32_t longest_of(std::span<const in_flight> run) {
        return std::ranges::max(run, {}, &in_flight::length).length;
    }
    // Stages 4 to 7 over a vector of parsed, classified and routed frames from `port`: each
    // admitted, queued and sent in turn, runs for one queue cut through.
    // `frames[i]` is vector[i]'s frame.
    void forward_vector(std::uint16_t port, std::span<const in_flight> vector, rte_mbuf* const* frames, sim_time now);
    // Stage 3 for one frame: sets its egress and rewrites it (routed), or finds the neighbour
    // it is for (bridged). A frame that cannot go is dropped and counted: false.
    bool route_frame(std::uint16_t port, rte_mbuf* frame, const parsed_frame& parsed, std::uint16_t& egress);
    [[gnu::noinline]] bool bridge_frame(std::uint16_t port, rte_mbuf* frame, const parsed_frame& parsed,
                                        std::uint16_t& egress);
    // A frame route() would not forward: dropped and counted by `verdict`.
    [[gnu::noinline]] void drop_unrouted(std::uint16_t port, rte_mbuf* frame, route_verdict verdict,
                                         std::uint16_t egress);
    // Stages 4 to 7 for a run of frames from `ingress` to one egress queue, with one priority:
    // cut-through. Frames go straight to the link, neither buffered nor queued, for as long as
    // drain_port() would send each the moment it is queued and admission would not pause for
    // it. Returns how many went; the next frame, if any, needs enqueue(). `frames[i]` is
    // run[i]'s frame; `longest_in_run` is the length of the run's longest frame, or
    // longest_unknown for cut_through() to find it once the run may go.
    static constexpr std::uint32_t longest_unknown = 0; // no frame is that short
    std::size_t cut_through(std::uint16_t ingress, std::span<const in_flight> run, rte_mbuf* const* frames,
                            std::uint32_t longest_in_run, sim_time now);
    // A PAUSE or PFC frame received on `port`: the MAC acts on it and consumes it.
    void on_mac_control(std::uint16_t port, rte_mbuf* frame, sim_time now);
    // The transmit stage (transmit.cpp): sends from `port` while its link is idle.
    bool drain_port(std::uint16_t port, sim_time now);
    // Sends `frame`, of class `tc`, the scheduler's choice, out of `port`: its buffer is
    // released and the port's and queue's tx counters count it. Returns the link's busy_until.
    sim_time send_frame(std::uint16_t port, std::uint8_t tc, rte_mbuf* frame, sim_time now);
    // The classes of `port` that may send at `now`: not paused by PFC, unless the watchdog
    // forwards a stormed queue regardless (bit t: TC t).
    std::uint8_t sendable_classes(std::uint16_t port, sim_time now) const {
        std::uint8_t paused = _pfc.paused_classes(port, now);
        if (_watchdog.action() == pfc_watchdog_action::forward)
            paused &= static_cast<std::uint8_t>(~_watchdog.stormed(port));
        return static_cast<std::uint8_t>(~paused);
    }
    // A link busy until no later than this takes another frame at `now` (switch_spec::transmit_fifo).
    sim_time link_takes_until(sim_time now) const { return now + _spec.transmit_fifo; }
    // Whether the link of `port` takes another frame at `now`.
    bool link_free(std::uint16_t port, sim_time now) const { return busy_until(port) <= link_takes_until(now); }
    // Whether the watchdog drops what joins class `tc` of `port`: it is stormed, action drop.
    bool watchdog_drops(std::uint16_t port, std::uint8_t tc) const {
        return (_watchdog.stormed(port) & (1u << tc)) && _watchdog.action() == pfc_watchdog_action::drop;
    }
    // `frames` frames of `bytes` in all, of class `tc`, left `port`: its and the queue's tx counters.
    void count_sent(std::uint16_t port, std::uint8_t tc, std::uint64_t frames, std::uint64_t bytes) {
        _counters[port].bump(port_counter::tx_packets, frames);
        _counters[port].bump(port_counter::tx_bytes, bytes);
        queue_counters& queue = _queue_counters[port][tc];
        queue.tx_packets += frames;
        queue.tx_bytes += bytes;
    }
    void drop(rte_mbuf* frame, std::uint16_t port, port_counter reason);
    // A frame leaves the buffer (sent or discarded): its group's bytes are returned, and its
    // ingress neighbour resumed if the group has drained.
    void release_frame(rte_mbuf* frame, std::uint16_t egress, sim_time now);
    // The PFC watchdog's poll (pfc_watchdog.hpp).
    void poll_watchdog(sim_time now);
    // Sends a PFC frame out of `port` for `priority` (0xffff quanta: XOFF, 0: XON).
    void send_pfc(std::uint16_t port, std::uint8_t priority, std::uint16_t quanta, sim_time now);
    // Ingress admission and egress queueing of a frame whose port is chosen, and transmit if
    // its link is idle.
    void enqueue(rte_mbuf* frame, const parsed_frame& parsed, std::uint16_t egress, std::uint32_t length, sim_time now);
    const neighbour_spec* find_neighbour(const wire::mac_address& mac) const;

    switch_spec _spec;
    std::vector<port_counters> _counters;
    std::vector<std::array<queue_counters, traffic_class_count>> _queue_counters;
    std::vector<std::array<ingress_counters, traffic_class_count>> _ingress_counters;
    classifier _classify;
    router _router;
    shared_buffer _buffer;
    egress_queues _queues;
    ets_scheduler _scheduler;
    congestion_control _congestion;
    pfc_state _pfc;
    pfc_watchdog _watchdog;
    sim_time _latest = 0; // the latest time receive() or poll() ran at, for next_deadline()
};

} // namespace rocefab::switch_emu
