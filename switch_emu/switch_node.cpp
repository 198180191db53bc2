#include "switch_emu/switch_node.hpp"

#include "dataplane/wire/pfc.hpp"

#include <algorithm>
#include <stdexcept>

namespace rocefab::switch_emu {
namespace {

switch_spec checked(switch_spec spec) {
    if (std::string error = validate(spec); !error.empty()) throw std::invalid_argument(error);
    return spec;
}

} // namespace

switch_node::switch_node(switch_spec spec)
    : node(spec.name, static_cast<std::uint16_t>(spec.ports.size())), _spec(checked(std::move(spec))),
      _counters(_spec.ports.size()), _queue_counters(_spec.ports.size()), _ingress_counters(_spec.ports.size()),
      _classify(_spec.qos), _router(_spec), _buffer(_spec),
      _queues(static_cast<std::uint16_t>(_spec.ports.size()), _spec.queue_frames),
      _scheduler(_spec.qos.ets, static_cast<std::uint16_t>(_spec.ports.size())),
      _congestion(_spec.qos, _spec.random_seed), _pfc(_spec), _watchdog(_spec) {}

void switch_node::drop(rte_mbuf* frame, std::uint16_t port, port_counter reason) {
    _counters[port].bump(reason);
    rte_pktmbuf_free(frame);
}

void switch_node::receive(std::uint16_t port, rte_mbuf* frame, sim_time now) {
    if (frame) receive_burst(port, {&frame, 1}, now);
}

// Inline in receive_burst's loop, which every frame takes; the drops are out of line.
[[gnu::always_inline]] inline bool switch_node::route_frame(std::uint16_t port, rte_mbuf* frame,
                                                            const parsed_frame& parsed, std::uint16_t& egress) {
    if (parsed.bridged) [[unlikely]]
        return bridge_frame(port, frame, parsed, egress);
    const route_verdict verdict = _router.route(frame, parsed, egress);
    if (verdict == route_verdict::forward) [[likely]]
        return true;
    drop_unrouted(port, frame, verdict, egress);
    return false;
}

void switch_node::drop_unrouted(std::uint16_t port, rte_mbuf* frame, route_verdict verdict, std::uint16_t egress) {
    switch (verdict) {
    case route_verdict::forward: return;
    case route_verdict::no_route: return drop(frame, port, port_counter::drops_no_route);
    case route_verdict::ttl_expired: return drop(frame, port, port_counter::drops_ttl_expired);
    case route_verdict::mtu_exceeded: return drop(frame, egress, port_counter::drops_mtu_exceeded);
    }
}

void switch_node::receive_burst(std::uint16_t port, std::span<rte_mbuf* const> frames, sim_time now) {
    // The driver wires ports; a port we do not have has no counters to blame, so just free.
    if (port >= port_count()) {
        for (rte_mbuf* frame : frames) rte_pktmbuf_free(frame);
        return;
    }
    _latest = std::max(_latest, now);
    port_counters& ingress = _counters[port];
    std::array<ingress_counters, traffic_class_count>& by_priority = _ingress_counters[port];
    const std::uint64_t port_mac = _spec.ports[port].mac.as_word();
    std::array<parsed_frame, vector_size> parsed;
    std::array<in_flight, vector_size> vector;
    std::array<rte_mbuf*, vector_size> vector_frames;
    while (!frames.empty()) {
        const std::span<rte_mbuf* const> batch = frames.first(std::min(frames.size(), vector_size));
        frames = frames.subspan(batch.size());
        if (_router.adaptive().enabled())
            _router.adaptive().regrade_if_due(now, [this](std::uint16_t p) {
                return adaptive_routing::port_load{_counters[p][port_counter::tx_bytes], _queues.port_bytes(p)};
            });
        // Stages 1 to 3, one frame at a time: parse, classify, route. None of them reads what
        // admission, queueing or transmit change (the adaptive grades move only at regrade,
        // above), so running them per frame here leaves every frame as running each stage over
        // the whole vector did, without handing the vector from stage to stage.
        std::size_t kept = 0;
        std::uint64_t bytes = 0;
        for (std::size_t i = 0; i < batch.size(); ++i) {
            rte_mbuf* frame = batch[i];
            const std::uint32_t length = rte_pktmbuf_pkt_len(frame);
            bytes += length;
            packet_meta& m = meta(frame);
            m.ingress_port = port;
            parsed_frame& headers = parsed[i];
            const parse_verdict verdict = parse_frame(frame, port_mac, headers);
            if (verdict != parse_verdict::ip) [[unlikely]] {
                switch (verdict) {
                case parse_verdict::ip: break;
                case parse_verdict::mac_control:
                    // Acted on after the frames that came before it.
                    forward_vector(port, {vector.data(), kept}, vector_frames.data(), now);
                    kept = 0;
                    on_mac_control(port, frame, now);
                    break;
                case parse_verdict::not_for_us: drop(frame, port, port_counter::rx_drops_not_for_us); break;
                case parse_verdict::malformed: drop(frame, port, port_counter::rx_drops_malformed); break;
                case parse_verdict::non_ip: drop(frame, port, port_counter::rx_drops_non_ip); break;
                }
                continue;
            }
            const classification c = _classify(headers);
            m.priority = c.priority;
            m.traffic_class = c.traffic_class;
            ++by_priority[c.priority].rx_packets;
            by_priority[c.priority].rx_bytes += length;
            std::uint16_t egress = 0;
            if (!route_frame(port, frame, headers, egress)) continue; // dropped and counted
            vector_frames[kept] = frame;
            vector[kept++] = {&headers, length, egress, c.priority, c.traffic_class};
        }
        ingress.bump(port_counter::rx_packets, batch.size());
        ingress.bump(port_counter::rx_bytes, bytes);
        forward_vector(port, {vector.data(), kept}, vector_frames.data(), now);
    }
}

void switch_node::forward_vector(std::uint16_t port, std::span<const in_flight> vector, rte_mbuf* const* frames,
                                 sim_time now) {
    const std::size_t kept = vector.size();
    // Stages 4 to 7, per frame in arrival order: each frame meets the queues, the buffer and
    // the link as the frames before it left them. Consecutive frames for the same queue (one
    // flow, usually) form a run, which cut_through() sends straight on while it can.
    auto same_queue = [](const in_flight& a, const in_flight& b) {
        return a.egress == b.egress && a.traffic_class == b.traffic_class && a.priority == b.priority;
    };
    for (std::size_t i = 0; i < kept;) {
        std::size_t end = i + 1;
        std::uint32_t longest = vector[i].length;
        for (; end < kept && same_queue(vector[end], vector[i]); ++end) longest = std::max(longest, vector[end].length);
        while (i < end) {
            i += cut_through(port, vector.subspan(i, end - i), frames + i, longest, now);
            if (i == end) break;
            const in_flight& f = vector[i];
            enqueue(frames[i++], *f.parsed, f.egress, f.length, now);
            // What is left of the run may cut through again (the frame was dropped, or sent at
            // once); its longest frame is found only then, not after every frame queued.
            longest = longest_unknown;
        }
    }
}

std::size_t switch_node::cut_through(std::uint16_t ingress, std::span<const in_flight> run, rte_mbuf* const* frames,
                                     std::uint32_t longest_in_run, sim_time now) {
    const std::uint16_t egress = run.front().egress;
    const std::uint8_t tc = run.front().traffic_class;
    const std::uint8_t priority = run.front().priority;
    // What enqueue() would check for each frame: none of it changes while frames pass straight
    // through, since they leave the queues, the buffer, PFC and the watchdog as they were.
    // Nothing queued on the port and the class free to send: drain_port() would pick the frame
    // at once. No watchdog drop, no ECN/WRED decision at an empty queue, and a priority group
    // neither pausing its neighbour (an XON may be due when the frame leaves) nor about to.
    if (_queues.backlog(egress) != 0 || !(sendable_classes(egress, now) & (1u << tc))) return 0;
    if (watchdog_drops(egress, tc)) return 0;
    if (!_congestion.passes(tc, 0) || _pfc.pausing(ingress, priority)) return 0;
    if (longest_in_run == longest_unknown) longest_in_run = longest_of(run);
    const std::uint64_t longest_allowed =
        std::min<std::uint64_t>(_buffer.egress_limit(priority, 0), _buffer.pass_through_limit(ingress, priority));
    // Per frame: its length, and whether the link takes it now (link_free()). The frames the
    // buffer would pass (all of them, unless one is longer than it passes) go to the link in one
    // call, which takes them while it is free.
    std::size_t passing = run.size();
    if (longest_in_run > longest_allowed) [[unlikely]] {
        passing = 0;
        while (passing < run.size() && run[passing].length <= longest_allowed) ++passing;
    }
    sim_time busy = busy_until(egress);
    const std::size_t sent = transmit_while_free(egress, {frames, passing}, now, link_takes_until(now), busy);
    if (sent == 0) return 0;
    // The scheduler takes its turn for each frame, so DWRR's state is what queueing would have left.
    ets_scheduler::lone_run turns(_scheduler, egress, tc);
    std::uint64_t bytes = 0;
    for (const in_flight& f : run.first(sent)) {
        turns.sent(f.length);
        bytes += f.length;
    }
    // The longest frame that went: the run's, unless the link took only part of it.
    std::uint32_t longest = longest_in_run;
    if (sent != run.size()) [[unlikely]]
        longest = longest_of(run.first(sent));
    _buffer.passed_through(ingress, priority, longest, _counters[egress]);
    count_sent(egress, tc, sent, bytes);
    std::uint64_t& queue_peak = _queue_counters[egress][tc].peak_bytes;
    queue_peak = std::max<std::uint64_t>(queue_peak, longest);
    return sent;
}

bool switch_node::bridge_frame(std::uint16_t port, rte_mbuf* frame, const parsed_frame& parsed, std::uint16_t& egress) {
    const neighbour_spec* n = find_neighbour(rte_pktmbuf_mtod(frame, const wire::ethernet_header*)->destination);
    if (!n || n->port == port) {
        drop(frame, port, port_counter::rx_drops_not_for_us);
        return false;
    }
    egress = n->port;
    if (parsed.l3_length > _spec.ports[egress].mtu) {
        drop(frame, egress, port_counter::drops_mtu_exceeded);
        return false;
    }
    return true;
}

void switch_node::on_mac_control(std::uint16_t port, rte_mbuf* frame, sim_time now) {
    std::uint8_t enable = 0;
    std::array<std::uint16_t, 8> quanta{};
    if (wire::parse_pfc_frame(frame_bytes(frame), enable, quanta)) {
        _pfc.on_pause(port, enable, quanta, now);
        _watchdog.arm(now);
        drain_port(port, now); // an XON may let queued frames go at once
    }
    drop(frame, port, port_counter::rx_pause_frames); // consumed by the MAC either way
}

const neighbour_spec* switch_node::find_neighbour(const wire::mac_address& mac) const {
    for (const auto& n : _spec.neighbours)
        if (n.mac == mac) return &n;
    return nullptr;
}

void switch_node::enqueue(rte_mbuf* frame, const parsed_frame& parsed, std::uint16_t egress, std::uint32_t length,
                          sim_time now) {
    port_counters& out = _counters[egress];
    const packet_meta& m = meta(frame);
    const std::uint8_t tc = m.traffic_class;
    const std::uint8_t priority = m.priority;
    const std::uint16_t ingress = m.ingress_port;
    queue_counters& queue = _queue_counters[egress][tc];
    // A drop at the egress queue counts on the port and on the queue.
    auto queue_drop = [&](std::uint64_t queue_counters::*queue_reason, port_counter port_reason) {
        ++(queue.*queue_reason);
        drop(frame, egress, port_reason);
    };
    if (watchdog_drops(egress, tc)) return queue_drop(&queue_counters::watchdog_drops, port_counter::watchdog_drops);
    const std::uint64_t depth = _queues.depth_bytes(egress, tc); // what the frame joins
    switch (_congestion.decide(tc, depth, parsed.ecn())) {
    case congestion_verdict::pass: break;
    case congestion_verdict::mark:
        if (parsed.ecn() != wire::ecn::ce) { // one already marked upstream stays as it is
            mark_congestion_experienced(frame, parsed);
            out.bump(port_counter::ecn_marked);
            ++queue.ecn_marked;
        }
        break;
    case congestion_verdict::drop: return queue_drop(&queue_counters::wred_drops, port_counter::wred_drops);
    }
    if (!_buffer.egress_allows(priority, depth, length))
        return queue_drop(&queue_counters::tail_drops, port_counter::tail_drops);
    buffer_pool pool;
    switch (_buffer.admit(ingress, priority, length, out, pool)) {
    case shared_buffer::verdict::admitted: break;
    case shared_buffer::verdict::tail_drop: return queue_drop(&queue_counters::tail_drops, port_counter::tail_drops);
    case shared_buffer::verdict::headroom_drop:
        ++_ingress_counters[ingress][priority].headroom_drops;
        return drop(frame, ingress, port_counter::headroom_drops);
    }
    meta(frame).buffer_pool = static_cast<std::uint8_t>(pool);
    if (_buffer.wants_pause(ingress, priority) && _pfc.start_pausing(ingress, priority, now))
        send_pfc(ingress, priority, pfc_state::xoff_quanta, now);
    if (!_queues.enqueue(egress, tc, frame)) {
        // The ring is the buffer's frame-count limit: to the user it is the same tail drop.
        _buffer.release(ingress, priority, pool, length, out);
        return queue_drop(&queue_counters::tail_drops, port_counter::tail_drops);
    }
    queue.peak_bytes = std::max(queue.peak_bytes, _queues.depth_bytes(egress, tc));
    // An idle link starts sending at once, as a real port would; a busy one waits for poll().
    drain_port(egress, now);
}

void switch_node::send_pfc(std::uint16_t port, std::uint8_t priority, std::uint16_t quanta, sim_time now) {
    rte_mbuf* frame = allocate_frame();
    if (!frame) return; // the pool is empty; a refresh or the next XON/XOFF decision tries again
    auto* data = reinterpret_cast<std::uint8_t*>(rte_pktmbuf_append(frame, wire::pfc_frame_length));
    std::array<std::uint16_t, 8> quanta_of{};
    quanta_of[priority] = quanta;
    wire::write_pfc_frame(data, _spec.ports[port].mac, static_cast<std::uint8_t>(1u << priority), quanta_of);
    meta(frame) = packet_meta{};
    transmit(port, frame, now);
}

void switch_node::snapshot(snapshot_data& out) const {
    out.buffer_size_bytes = _buffer.size();
    out.buffer_in_use_bytes = _buffer.in_use();
    out.buffer_peak_bytes = _buffer.peak();
    out.adaptive_reroutes = _router.rerouted();
    out.ports.resize(port_count());
    for (std::uint16_t port = 0; port < port_count(); ++port) {
        port_snapshot& p = out.ports[port];
        p.counters = _counters[port];
        for (std::uint8_t i = 0; i < traffic_class_count; ++i) {
            p.queues[i] = _queue_counters[port][i];
            p.queue_depth_bytes[i] = _queues.depth_bytes(port, i);
            p.ingress[i] = _ingress_counters[port][i];
            p.group_bytes[i] = _buffer.group_bytes(port, i);
            p.group_peak_bytes[i] = _buffer.group_peak(port, i);
            p.pfc[i] = _pfc.counters(port, i);
        }
    }
}

} // namespace rocefab::switch_emu
