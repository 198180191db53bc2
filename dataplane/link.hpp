// One direction of a cable, from (node A, port a) to (node B, port b): a rate, a propagation
// delay and an MTU. The sender's side serialises frames one after another; each frame gets
// the time its last bit reaches the receiver (packet_meta::arrival) and waits in a
// single-producer/single-consumer rte_ring until the receiving side's driver delivers it.
// Arrival times are monotonic per link (FIFO + serialisation), so a FIFO is all it takes.
//
// Fault injection (link_faults) happens at transmit, after the frame is timed: it took its wire
// time whatever happens to it next. Each decision is drawn from the link's own PRNG, so a
// virtual-time run with the same seed and the same frames injects the same faults, bit for bit.
// A frame held back for reordering goes into a second, small SPSC ring whose arrivals are also
// monotonic (one constant delay, never earlier than the previous held frame); the receiving
// side merges the two heads by arrival time, so a held frame is overtaken by later ones.
#pragma once

#include "dataplane/dpdk.hpp"
#include "dataplane/packet.hpp"
#include "dataplane/time.hpp"

#include <atomic>
#include <cstdint>
#include <limits>
#include <span>
#include <string>

namespace rocefab {

using node_id = std::uint32_t;
using link_id = std::uint32_t;

// Per-frame fault probabilities, each in [0, 1], decided independently for every frame the
// link puts on the wire (four draws per frame as soon as one is non-zero, so changing one
// probability does not change which frames another one hits).
struct link_faults {
    double loss = 0; // the frame is lost on the wire (drops_loss)
    // A RoCEv2 frame gets one bit flipped after its BTH (extension headers, payload, pad or
    // ICRC): the receiver's ICRC check catches it and the length never changes. A frame with
    // no ICRC (PFC, anything not RoCE) has only the FCS, which a receiving MAC checks and
    // drops on: such a frame is dropped. Both count frames_corrupted.
    double corruption = 0;
    double duplication = 0; // a copy follows the frame, taking its own wire time
    double reordering = 0;  // the frame arrives `reorder_delay` late; later frames overtake it
    sim_time reorder_delay = microseconds(10);

    bool any() const { return loss > 0 || corruption > 0 || duplication > 0 || reordering > 0; }
    friend bool operator==(const link_faults&, const link_faults&) = default;
};

struct link_model {
    std::uint64_t speed_bps;
    sim_time propagation_delay;
    std::uint32_t mtu; // IP MTU: frames longer than mtu + 18 (Ethernet + VLAN) are dropped
    // Frames on the wire or waiting for delivery; beyond it the link drops (drops_queue_full).
    // The receiving side may hold one more, the head it has peeked at.
    unsigned queue_frames = 4096;
    link_faults faults{};
};

// Frames held back for reordering at once; a frame that would be held when it is full is sent
// in order instead (and not counted as reordered).
inline constexpr unsigned reorder_queue_frames = 256;

// Bytes a frame occupies on the wire beyond what DPDK shows: FCS (4), preamble + SFD (8),
// inter-frame gap (12). Serialisation is charged on all of them.
inline constexpr std::uint32_t wire_overhead_bytes = 4 + 8 + 12;
// Ethernet header (14) + one VLAN tag (4) on top of the IP MTU.
inline constexpr std::uint32_t l2_header_allowance = 18;

struct link_endpoint {
    node_id node = 0;
    std::uint16_t port = 0;
};

// What a link counts; a snapshot, readable from any thread.
struct link_counters {
    std::uint64_t tx_frames = 0;
    std::uint64_t tx_bytes = 0; // frame bytes as DPDK counts them: FCS, preamble and IFG excluded
    std::uint64_t drops_link_down = 0;
    std::uint64_t drops_mtu = 0;
    std::uint64_t drops_queue_full = 0;
    // Fault injection.
    std::uint64_t drops_loss = 0;
    std::uint64_t frames_corrupted = 0;
    std::uint64_t frames_duplicated = 0;
    std::uint64_t frames_reordered = 0;
    std::uint64_t duplicate_alloc_failures = 0; // duplications skipped: the pool had no mbuf
    friend bool operator==(const link_counters&, const link_counters&) = default;
};

// The per-link PRNG: xoshiro256** seeded through splitmix64. Small, fast, and the same
// sequence on every platform.
class fault_rng {
public:
    explicit fault_rng(std::uint64_t seed = 1) { reseed(seed); }
    void reseed(std::uint64_t seed) {
        for (auto& word : _s) {
            seed += 0x9e3779b97f4a7c15ull;
            std::uint64_t z = seed;
            z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
            z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
            word = z ^ (z >> 31);
        }
    }
    std::uint64_t next() {
        const std::uint64_t result = rotl(_s[1] * 5, 7) * 9;
        const std::uint64_t t = _s[1] << 17;
        _s[2] ^= _s[0];
        _s[3] ^= _s[1];
        _s[1] ^= _s[2];
        _s[0] ^= _s[3];
        _s[2] ^= t;
        _s[3] = rotl(_s[3], 45);
        return result;
    }
    // Uniform in [0, 1) with 53 bits.
    double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }

private:
    static std::uint64_t rotl(std::uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
    std::uint64_t _s[4];
};

// The seed of link `index` of a fabric seeded with `fabric_seed`: distinct per link, so two
// links of one fabric do not drop the same frame numbers.
inline std::uint64_t link_fault_seed(std::uint64_t fabric_seed, std::uint64_t index) {
    return fabric_seed * 0x9e3779b97f4a7c15ull ^ (index + 1) * 0xd1b54a32d192ed03ull;
}

// Sees every frame a link puts on the wire (for pcap). Runs on the transmitting thread, before
// the frame can be delivered, so the bytes are stable; must not keep the span.
class frame_tap {
public:
    virtual ~frame_tap() = default;
    virtual void on_frame(sim_time departure, std::span<const std::uint8_t> frame) = 0;
};

// Told of every frame a link queues for delivery, with the time it arrives: the virtual-time
// driver keeps its calendar from these instead of asking every link at every instant. Runs on
// the sending side's thread, inside transmit().
class arrival_listener {
public:
    virtual void frame_queued(link_id id, sim_time arrival) = 0;

protected:
    ~arrival_listener() = default;
};

class link {
public:
    // Control path: throws std::runtime_error when the ring cannot be created (EAL not
    // started, out of memory). `name` is for people ("h1:0->sw1:3").
    link(std::string name, link_endpoint from, link_endpoint to, const link_model& model);
    ~link();
    link(const link&) = delete;
    link& operator=(const link&) = delete;

    const std::string& name() const { return _name; }
    link_endpoint from() const { return _from; }
    link_endpoint to() const { return _to; }
    const link_model& model() const { return _model; }

    // --- sending side (the transmitting node's thread) ---

    // Takes ownership of `frame`: queues it for delivery, or frees it and counts why.
    // Returns whether the frame went on the wire (a frame lost or corrupted by fault
    // injection did: it took its wire time and the tap saw it).
    bool transmit(rte_mbuf* frame, sim_time now);
    // When the last frame handed over finishes serialising; <= now when the line is idle.
    sim_time busy_until() const { return _busy_until; }

    // Fault injection and administrative state: a down link drops what is transmitted;
    // frames already on the wire still arrive.
    void set_up(bool up) { _up.store(up, std::memory_order_relaxed); }
    bool is_up() const { return _up.load(std::memory_order_relaxed); }

    // Sending side's thread (the data plane; the daemon goes through the driver's mailbox).
    // Probabilities outside [0, 1] (or NaN) are clamped; a negative reorder_delay counts as 0.
    void set_faults(const link_faults& faults);
    const link_faults& faults() const { return _faults; }
    // Restarts the fault decisions from `seed` (sending side's thread).
    void seed_faults(std::uint64_t seed) { _rng.reseed(seed); }

    // nullptr removes the tap. Set it from the data plane thread (through its mailbox).
    void set_tap(frame_tap* tap) { _tap = tap; }

    // nullptr removes the listener; `id` is what it is told. Only the virtual-time driver sets one.
    void set_arrival_listener(arrival_listener* listener, link_id id) {
        _listener = listener;
        _listener_id = id;
    }

    link_counters counters() const;

    // --- receiving side (the delivering driver's thread) ---

    // The frame with the earliest arrival, if that arrival <= now, still owned by the link;
    // nullptr when none. Ties go to the frame that was not held back.
    rte_mbuf* peek_ready(sim_time now);
    // Removes and returns the frame peek_ready() returned; the caller owns it.
    rte_mbuf* pop();
    // Arrival time of the oldest frame on the wire; `never` when the link is empty.
    // Not const: it may pull the head frame out of the ring.
    sim_time next_arrival();
    // Frames on the wire or waiting for delivery.
    unsigned in_flight() const;

    // Hands every frame whose arrival <= now, in arrival order, to `deliver(rte_mbuf*)`, which
    // owns it from there; stops after `max_frames`. Returns how many were delivered.
    template <typename Deliver>
    unsigned deliver_ready(sim_time now, Deliver&& deliver,
                           unsigned max_frames = std::numeric_limits<unsigned>::max()) {
        unsigned delivered = 0;
        while (delivered < max_frames && peek_ready(now)) {
            deliver(pop());
            ++delivered;
        }
        return delivered;
    }
    // The same into `burst`, at most burst.size() frames: what the drivers hand a receiver's
    // receive_burst(). Returns how many it holds.
    unsigned take_ready(sim_time now, std::span<rte_mbuf*> burst) {
        return deliver_ready(
            now, [burst, held = 0u](rte_mbuf* frame) mutable { burst[held++] = frame; },
            static_cast<unsigned>(burst.size()));
    }

private:
    static void bump(std::atomic<std::uint64_t>& counter, std::uint64_t by = 1) {
        // One writer (the sending thread): a relaxed load + store is a plain add, and readers
        // on other threads never see a torn value.
        counter.store(counter.load(std::memory_order_relaxed) + by, std::memory_order_relaxed);
    }
    bool fill_head();
    bool fill_held_head();
    // The head to deliver next: &_head or &_held_head, or nullptr when both are empty.
    rte_mbuf** earliest_head();
    // Puts a timed frame on the wire (`ring`: _ring, or _held for a frame held back).
    void enqueue(rte_ring* ring, rte_mbuf* frame) {
        rte_ring_sp_enqueue(ring, frame);
        if (_listener) _listener->frame_queued(_listener_id, meta(frame).arrival);
    }
    // Fault injection on a frame already timed and counted; takes ownership.
    void transmit_with_faults(rte_mbuf* frame, std::uint32_t length);
    void corrupt_or_drop(rte_mbuf*& frame);

    // Set once at construction, read by both sides.
    std::string _name;
    link_endpoint _from;
    link_endpoint _to;
    link_model _model;
    rte_ring* _held = nullptr; // frames held back for reordering

    // Sending side: what every transmit() reads and writes, in one cache line.
    alignas(64) sim_time _busy_until = 0;
    rte_ring* _ring = nullptr;
    frame_tap* _tap = nullptr;
    arrival_listener* _listener = nullptr;
    std::atomic<std::uint64_t> _tx_frames{0};
    std::atomic<std::uint64_t> _tx_bytes{0};
    link_id _listener_id = 0;
    std::uint32_t _max_frame_bytes;
    std::atomic<bool> _up{true};
    bool _faults_active = false;
    // ... and what only drops and faults touch.
    std::atomic<std::uint64_t> _drops_link_down{0};
    std::atomic<std::uint64_t> _drops_mtu{0};
    std::atomic<std::uint64_t> _drops_queue_full{0};
    link_faults _faults;
    fault_rng _rng;
    sim_time _last_held_arrival = 0;
    std::atomic<std::uint64_t> _drops_loss{0};
    std::atomic<std::uint64_t> _frames_corrupted{0};
    std::atomic<std::uint64_t> _frames_duplicated{0};
    std::atomic<std::uint64_t> _frames_reordered{0};
    std::atomic<std::uint64_t> _duplicate_alloc_failures{0};

    // Receiving side: the rings' heads, taken out so they can be peeked without DPDK's
    // experimental peek API, and its own copy of the ring pointers (the same rings), so that
    // neither side reads a line the other writes.
    alignas(64) rte_mbuf* _head = nullptr;
    rte_mbuf* _held_head = nullptr;
    rte_ring* _arrivals = nullptr;      // _ring
    rte_ring* _held_arrivals = nullptr; // _held
    // Set by the sending side before the first frame it holds back, never cleared: until then
    // the held ring is empty, and asking it would read two lines of the ring for nothing (on a
    // fabric of hundreds of links, two lines no cache holds).
    std::atomic<bool> _held_any{false};
};

} // namespace rocefab
