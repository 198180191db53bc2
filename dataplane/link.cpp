#include "dataplane/link.hpp"

#include "dataplane/wire/bth.hpp"
#include "dataplane/wire/ethernet.hpp"
#include "dataplane/wire/ip.hpp"
#include "dataplane/wire/udp.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstddef>
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

double clamp_probability(double p) { return std::isnan(p) ? 0.0 : std::clamp(p, 0.0, 1.0); }

link_faults sanitized(const link_faults& f) {
    link_faults out = f;
    out.loss = clamp_probability(f.loss);
    out.corruption = clamp_probability(f.corruption);
    out.duplication = clamp_probability(f.duplication);
    out.reordering = clamp_probability(f.reordering);
    out.reorder_delay = std::max<sim_time>(f.reorder_delay, 0);
    return out;
}

// The bytes of a RoCEv2 frame that only the ICRC protects: from the end of the BTH to the end of
// the UDP datagram (extension headers, payload, pad, ICRC). {0, 0} when `frame` is not a
// well-formed RoCEv2 frame. Only headers a RoCE parser reads before the ICRC are skipped, so a
// flipped bit in the range always shows up as parse_error::bad_icrc.
std::pair<std::size_t, std::size_t> icrc_protected_range(std::span<const std::uint8_t> frame) {
    using namespace wire;
    auto load16 = [&](std::size_t at) { return static_cast<std::uint16_t>(frame[at] << 8 | frame[at + 1]); };
    std::size_t l3 = sizeof(ethernet_header);
    if (frame.size() < l3) return {0, 0};
    std::uint16_t type = load16(12);
    if (type == ethertype::vlan) {
        if (frame.size() < l3 + sizeof(vlan_header)) return {0, 0};
        type = load16(16);
        l3 += sizeof(vlan_header);
    }
    std::size_t l4 = 0;
    if (type == ethertype::ipv4) {
        if (frame.size() < l3 + sizeof(ipv4_header) || frame[l3 + 9] != ip_protocol::udp) return {0, 0};
        l4 = l3 + std::size_t(frame[l3] & 0x0f) * 4;
    } else if (type == ethertype::ipv6) {
        if (frame.size() < l3 + sizeof(ipv6_header) || frame[l3 + 6] != ip_protocol::udp) return {0, 0};
        l4 = l3 + sizeof(ipv6_header);
    } else {
        return {0, 0};
    }
    if (frame.size() < l4 + sizeof(udp_header) + sizeof(bth)) return {0, 0};
    if (load16(l4 + 2) != roce_v2_udp_port) return {0, 0};
    const std::size_t udp_end = l4 + load16(l4 + 4);
    const std::size_t first = l4 + sizeof(udp_header) + sizeof(bth);
    if (udp_end > frame.size() || udp_end <= first) return {0, 0};
    return {first, udp_end};
}
} // namespace

link::link(std::string name, link_endpoint from, link_endpoint to, const link_model& model)
    : _name(std::move(name)), _from(from), _to(to), _model(model), _max_frame_bytes(model.mtu + l2_header_allowance) {
    static_assert(offsetof(link, _faults_active) < offsetof(link, _busy_until) + 64,
                  "transmit()'s fields no longer fit one cache line");
    if (model.queue_frames == 0) throw std::invalid_argument("link " + _name + ": queue_frames must be > 0");
    const std::string ring_name = next_ring_name();
    _ring = rte_ring_create(ring_name.c_str(), model.queue_frames, SOCKET_ID_ANY,
                            RING_F_SP_ENQ | RING_F_SC_DEQ | RING_F_EXACT_SZ);
    if (!_ring) throw std::runtime_error("link " + _name + ": cannot create ring: " + rte_strerror(rte_errno));
    const std::string held_name = next_ring_name();
    _held = rte_ring_create(held_name.c_str(), reorder_queue_frames, SOCKET_ID_ANY,
                            RING_F_SP_ENQ | RING_F_SC_DEQ | RING_F_EXACT_SZ);
    if (!_held) {
        rte_ring_free(_ring);
        throw std::runtime_error("link " + _name + ": cannot create ring: " + rte_strerror(rte_errno));
    }
    _arrivals = _ring;
    _held_arrivals = _held;
    set_faults(model.faults);
}

link::~link() {
    if (_head) rte_pktmbuf_free(_head);
    if (_held_head) rte_pktmbuf_free(_held_head);
    for (rte_ring* ring : {_ring, _held}) {
        if (!ring) continue;
        void* m = nullptr;
        while (rte_ring_sc_dequeue(ring, &m) == 0) rte_pktmbuf_free(static_cast<rte_mbuf*>(m));
        rte_ring_free(ring);
    }
}

void link::set_faults(const link_faults& faults) {
    _faults = sanitized(faults);
    _faults_active = _faults.any();
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
    if (_tap) {
        seal_deferred_icrc(frame);
        _tap->on_frame(departure, frame_bytes(frame));
    }
    bump(_tx_frames);
    bump(_tx_bytes, length);
    if (_faults_active) {
        transmit_with_faults(frame, length);
        return true;
    }
    enqueue(_ring, frame);
    return true;
}

void link::transmit_with_faults(rte_mbuf* frame, std::uint32_t length) {
    // Always four draws, in this order, so each fault's decisions depend only on the seed and
    // the frame count, not on the other probabilities.
    const bool lose = _rng.uniform() < _faults.loss;
    const bool corrupt = _rng.uniform() < _faults.corruption;
    const bool duplicate = _rng.uniform() < _faults.duplication;
    const bool reorder = _rng.uniform() < _faults.reordering;
    if (lose) {
        bump(_drops_loss);
        rte_pktmbuf_free(frame);
        return;
    }
    // The copy is taken before corruption: the two are independent faults of two frames.
    rte_mbuf* copy = nullptr;
    if (duplicate) {
        copy = rte_pktmbuf_copy(frame, frame->pool, 0, UINT32_MAX);
        if (!copy) bump(_duplicate_alloc_failures);
    }
    if (corrupt) corrupt_or_drop(frame);
    if (frame) {
        packet_meta& m = meta(frame);
        if (reorder && rte_ring_free_count(_held) > 0) {
            m.arrival = std::max(m.arrival + _faults.reorder_delay, _last_held_arrival);
            _last_held_arrival = m.arrival;
            if (!_held_any.load(std::memory_order_relaxed)) _held_any.store(true, std::memory_order_release);
            bump(_frames_reordered);
            enqueue(_held, frame);
        } else {
            enqueue(_ring, frame); // room was checked by transmit()
        }
    }
    if (!copy) return;
    if (rte_ring_free_count(_ring) == 0) {
        bump(_drops_queue_full);
        rte_pktmbuf_free(copy);
        return;
    }
    // The duplicate is a frame of its own on the wire: serialised right after the original.
    const sim_time departure = _busy_until + serialization_time(length + wire_overhead_bytes, _model.speed_bps);
    _busy_until = departure;
    packet_meta& m = meta(copy);
    m = packet_meta{};
    m.arrival = departure + _model.propagation_delay;
    m.ingress_port = _to.port;
    if (_tap) _tap->on_frame(departure, frame_bytes(copy)); // copied from the original, sealed for its tap
    bump(_frames_duplicated);
    enqueue(_ring, copy);
}

void link::corrupt_or_drop(rte_mbuf*& frame) {
    bump(_frames_corrupted);
    seal_deferred_icrc(frame); // the receiver must find the damage by its ICRC
    const std::span<std::uint8_t> bytes = frame_bytes(frame);
    const auto [first, end] = icrc_protected_range(bytes);
    if (first == end) {
        rte_pktmbuf_free(frame);
        frame = nullptr;
        return;
    }
    const std::uint64_t bit = _rng.next() % ((end - first) * 8);
    bytes[first + bit / 8] ^= static_cast<std::uint8_t>(1u << (bit % 8));
}

link_counters link::counters() const {
    link_counters c;
    c.tx_frames = _tx_frames.load(std::memory_order_relaxed);
    c.tx_bytes = _tx_bytes.load(std::memory_order_relaxed);
    c.drops_link_down = _drops_link_down.load(std::memory_order_relaxed);
    c.drops_mtu = _drops_mtu.load(std::memory_order_relaxed);
    c.drops_queue_full = _drops_queue_full.load(std::memory_order_relaxed);
    c.drops_loss = _drops_loss.load(std::memory_order_relaxed);
    c.frames_corrupted = _frames_corrupted.load(std::memory_order_relaxed);
    c.frames_duplicated = _frames_duplicated.load(std::memory_order_relaxed);
    c.frames_reordered = _frames_reordered.load(std::memory_order_relaxed);
    c.duplicate_alloc_failures = _duplicate_alloc_failures.load(std::memory_order_relaxed);
    return c;
}

bool link::fill_head() {
    if (_head) return true;
    void* m = nullptr;
    if (rte_ring_sc_dequeue(_arrivals, &m) != 0) return false;
    _head = static_cast<rte_mbuf*>(m);
    return true;
}

bool link::fill_held_head() {
    if (_held_head) return true;
    if (!_held_any.load(std::memory_order_acquire)) return false;
    void* m = nullptr;
    if (rte_ring_sc_dequeue(_held_arrivals, &m) != 0) return false;
    _held_head = static_cast<rte_mbuf*>(m);
    return true;
}

rte_mbuf** link::earliest_head() {
    const bool main = fill_head();
    const bool held = fill_held_head();
    if (!held) return main ? &_head : nullptr;
    if (!main) return &_held_head;
    return meta(_held_head).arrival < meta(_head).arrival ? &_held_head : &_head;
}

rte_mbuf* link::peek_ready(sim_time now) {
    rte_mbuf** head = earliest_head();
    if (!head) return nullptr;
    return meta(*head).arrival <= now ? *head : nullptr;
}

rte_mbuf* link::pop() {
    rte_mbuf** head = earliest_head();
    if (!head) return nullptr;
    rte_mbuf* m = *head;
    *head = nullptr;
    return m;
}

sim_time link::next_arrival() {
    rte_mbuf** head = earliest_head();
    return head ? meta(*head).arrival : never;
}

unsigned link::in_flight() const {
    return rte_ring_count(_ring) + rte_ring_count(_held) + (_head ? 1u : 0u) + (_held_head ? 1u : 0u);
}

} // namespace rocefab
