// Stage 7, transmit: a port hands the link one frame at a time and only when the link has
// finished the previous one (busy_until <= now), or is about to (switch_spec::transmit_fifo).
// The link's serialisation thus shapes the port to its rate, and the backlog stays in the
// switch's queues, where ECN marking and PFC thresholds can see it, rather than in the link.
#include "switch_emu/switch_node.hpp"

#include "dataplane/log.hpp"

#include <algorithm>

namespace rocefab::switch_emu {

bool switch_node::drain_port(std::uint16_t port, sim_time now) {
    const std::uint8_t sendable = sendable_classes(port, now);
    std::uint8_t ready = _queues.backlog(port) & sendable;
    if (ready == 0) return false; // what may go is asked before the link (a call to the driver), usually nothing
    // Bounded by the queue contents: even a link that never reports busy cannot loop us forever.
    // After the first frame the link's busy time is the one transmit() returned, not asked again.
    const sim_time takes_until = link_takes_until(now);
    bool sent_any = false;
    for (sim_time busy = busy_until(port); ready != 0 && busy <= takes_until;
         ready = _queues.backlog(port) & sendable) {
        const std::uint8_t tc = *_scheduler.pick(port, ready);
        busy = send_frame(port, tc, _queues.dequeue(port, tc), now);
        sent_any = true;
    }
    return sent_any;
}

// Inline into send_frame(): every frame sent takes it.
[[gnu::always_inline]] inline void switch_node::release_frame(rte_mbuf* frame, std::uint16_t egress, sim_time now) {
    const packet_meta& m = meta(frame);
    _buffer.release(m.ingress_port, m.priority, static_cast<buffer_pool>(m.buffer_pool), rte_pktmbuf_pkt_len(frame),
                    _counters[egress]);
    if (_pfc.pausing(m.ingress_port, m.priority) && _buffer.allows_resume(m.ingress_port, m.priority) &&
        _pfc.stop_pausing(m.ingress_port, m.priority, now))
        send_pfc(m.ingress_port, m.priority, 0, now);
}

sim_time switch_node::send_frame(std::uint16_t port, std::uint8_t tc, rte_mbuf* frame, sim_time now) {
    const std::uint32_t length = rte_pktmbuf_pkt_len(frame);
    release_frame(frame, port, now);
    _scheduler.sent(port, tc, length);
    count_sent(port, tc, 1, length);
    return transmit(port, frame, now);
}

void switch_node::poll_watchdog(sim_time now) {
    for (std::uint16_t port = 0; port < port_count(); ++port) {
        const auto e = _watchdog.poll_port(port, _pfc.paused_classes(port, now), _queues.backlog(port));
        port_counters& c = _counters[port];
        for (unsigned tc = 0; tc < traffic_class_count; ++tc) {
            if (e.restored & (1u << tc)) {
                c.bump(port_counter::pfc_wd_restores);
                log::switch_node().info("{} {}: PFC watchdog restored traffic class {}", name(), _spec.ports[port].name,
                                        tc);
            }
            if (!(e.stormed & (1u << tc))) continue;
            c.bump(port_counter::pfc_wd_storms);
            log::switch_node().warn("{} {}: PFC storm on traffic class {}: paused with frames waiting for {} polls; "
                                    "action {}",
                                    name(), _spec.ports[port].name, tc, unsigned(_spec.qos.pfc_watchdog.robustness),
                                    to_string(_watchdog.action()));
            if (_watchdog.action() != pfc_watchdog_action::drop) continue;
            // The stormed queue lets go of what it holds, and with it the buffer its ingress
            // groups were pausing their own neighbours for.
            while (rte_mbuf* frame = _queues.dequeue(port, static_cast<std::uint8_t>(tc))) {
                release_frame(frame, port, now);
                c.bump(port_counter::watchdog_drops);
                ++_queue_counters[port][tc].watchdog_drops;
                rte_pktmbuf_free(frame);
            }
        }
    }
    _watchdog.polled(now);
}

bool switch_node::poll(sim_time now) {
    _latest = std::max(_latest, now);
    bool did_work = false;
    if (_watchdog.next_poll() <= now) {
        poll_watchdog(now);
        did_work = true;
    }
    // XOFFs about to expire while their group is still full are sent again.
    if (_pfc.next_refresh() <= now) {
        for (std::uint16_t port = 0; port < port_count(); ++port)
            for (std::uint8_t due = _pfc.refresh_due(port, now), p = 0; due; due >>= 1, ++p)
                if (due & 1) send_pfc(port, p, pfc_state::xoff_quanta, now);
        _pfc.refreshes_taken();
        did_work = true;
    }
    for (std::uint16_t port = 0; port < port_count(); ++port)
        if (_queues.backlog(port) != 0) did_work |= drain_port(port, now);
    return did_work;
}

sim_time switch_node::next_deadline() const {
    sim_time earliest = std::min(_pfc.next_refresh(), _watchdog.next_poll());
    for (std::uint16_t port = 0; port < port_count(); ++port) {
        const std::uint8_t backlog = _queues.backlog(port);
        if (backlog == 0) continue;
        // A port whose every backlogged class is paused by PFC waits for the first to resume.
        const sim_time free = busy_until(port) - _spec.transmit_fifo;
        const sim_time unpaused = backlog & ~_pfc.paused_classes(port, _latest)
                                      ? free
                                      : std::max(free, _pfc.resume_time(port, backlog, _latest));
        earliest = std::min(earliest, unpaused);
    }
    return earliest;
}

} // namespace rocefab::switch_emu
