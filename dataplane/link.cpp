#include "dataplane/link.hpp"

#include <atomic>
#include <stdexcept>
#include <string>

namespace rocefab {

namespace {
// rte_ring names are process-wide and at most RTE_RING_NAMESIZE - 3 characters, so rings are
// numbered rather than named after the link.
std::string next_ring_name() {
    static std::atomic<unsigned> counter{0};
    return "rfl" + std::to_string(counter.fetch_add(1, std::memory_order_relaxed));
}
} // namespace

link::link(std::string name, link_endpoint from, link_endpoint to, const link_model& model)
    : _name(std::move(name)), _from(from), _to(to), _model(model),
      _max_frame_bytes(model.mtu + l2_header_allowance) {
    if (model.queue_frames == 0) throw std::invalid_argument("link " + _name + ": queue_frames must be > 0");
    const std::string ring_name = next_ring_name();
    _ring = rte_ring_create(ring_name.c_str(), model.queue_frames, SOCKET_ID_ANY,
                            RING_F_SP_ENQ | RING_F_SC_DEQ | RING_F_EXACT_SZ);
    if (!_ring)
        throw std::runtime_error("link " + _name + ": cannot create ring: " + rte_strerror(rte_errno));
}

link::~link() {
    if (_head) rte_pktmbuf_free(_head);
    if (_ring) {
        void* m = nullptr;
        while (rte_ring_sc_dequeue(_ring, &m) == 0) rte_pktmbuf_free(static_cast<rte_mbuf*>(m));
        rte_ring_free(_ring);
    }
}

bool link::transmit(rte_mbuf* frame, sim_time now) {
    if (!is_up()) {
        bump(_drops_link_down);
        rte_pktmbuf_free(frame);
        return false;
    }
    const std::uint32_t length = rte_pktmbuf_pkt_len(frame);
    if (length > _max_frame_bytes) {
        bump(_drops_mtu);
        rte_pktmbuf_free(frame);
        return false;
    }
    // Checked before the frame is timed, so a dropped frame takes no wire time. With one
    // producer the free space can only grow until our enqueue, so the enqueue below succeeds.
    if (rte_ring_free_count(_ring) == 0) {
        bump(_drops_queue_full);
        rte_pktmbuf_free(frame);
        return false;
    }
    const sim_time start = now > _busy_until ? now : _busy_until;
    const sim_time departure = start + serialization_time(length + wire_overhead_bytes, _model.speed_bps);
    _busy_until = departure;
    // Only bytes cross a cable: the sender's metadata (priority, class) does not.
    packet_meta& m = meta(frame);
    m = packet_meta{};
    m.arrival = departure + _model.propagation_delay;
    m.ingress_port = _to.port;
    if (_tap) _tap->on_frame(departure, frame_bytes(frame));
    bump(_tx_frames);
    bump(_tx_bytes, length);
    rte_ring_sp_enqueue(_ring, frame);
    return true;
}

link_counters link::counters() const {
    link_counters c;
    c.tx_frames = _tx_frames.load(std::memory_order_relaxed);
    c.tx_bytes = _tx_bytes.load(std::memory_order_relaxed);
    c.drops_link_down = _drops_link_down.load(std::memory_order_relaxed);
    c.drops_mtu = _drops_mtu.load(std::memory_order_relaxed);
    c.drops_queue_full = _drops_queue_full.load(std::memory_order_relaxed);
    return c;
}

bool link::fill_head() {
    if (_head) return true;
    void* m = nullptr;
    if (rte_ring_sc_dequeue(_ring, &m) != 0) return false;
    _head = static_cast<rte_mbuf*>(m);
    return true;
}

rte_mbuf* link::peek_ready(sim_time now) {
    if (!fill_head()) return nullptr;
    return meta(_head).arrival <= now ? _head : nullptr;
}

rte_mbuf* link::pop() {
    rte_mbuf* m = _head;
    _head = nullptr;
    return m;
}

sim_time link::next_arrival() { return fill_head() ? meta(_head).arrival : never; }

unsigned link::in_flight() const { return rte_ring_count(_ring) + (_head ? 1u : 0u); }

} // namespace rocefab
