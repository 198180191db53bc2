// RC packets that arrived ahead of a PSN gap, held until the gap fills.
//
// ConnectX NICs place RC packets that a sprayed fabric (adaptive routing) delivers out of order
// instead of dropping them and asking again. This NIC keeps the same promise by holding such
// packets and taking them in PSN order once the missing ones arrive: what the application sees
// (data, completions, their order) is the same, and a reordered packet costs no retransmission.
// The responder holds requests, the completer READ responses and atomic ACKs.
//
// The entries live in one store per NIC, allocated with the NIC: holding a packet never
// allocates, and reordering cannot take more of the packet pool than the store's capacity.
#pragma once

#include "dataplane/dpdk.hpp"
#include "dataplane/time.hpp"
#include "dataplane/wire/roce_frame.hpp"

#include <algorithm>
#include <array>
#include <cstdint>
#include <vector>

namespace rocefab::nic {

struct held_packet {
    rte_mbuf* frame = nullptr;
    wire::parsed_roce packet; // points into frame
    std::uint32_t psn = 0;
    sim_time arrived = 0; // when it was held: how long the gap before it has been open
};

// The NIC's entries for held packets, and which are free.
class held_packet_store {
public:
    static constexpr std::uint16_t capacity = 512;

    held_packet_store() : _entries(capacity) {
        _free.reserve(capacity);
        for (std::uint16_t i = capacity; i > 0; --i) _free.push_back(static_cast<std::uint16_t>(i - 1));
    }
    held_packet_store(const held_packet_store&) = delete;
    held_packet_store& operator=(const held_packet_store&) = delete;

    bool full() const { return _free.empty(); }
    std::uint16_t in_use() const { return static_cast<std::uint16_t>(capacity - _free.size()); }
    held_packet& at(std::uint16_t index) { return _entries[index]; }
    const held_packet& at(std::uint16_t index) const { return _entries[index]; }
    std::uint16_t take_free() {
        const std::uint16_t index = _free.back();
        _free.pop_back();
        return index;
    }
    void give_back(std::uint16_t index) {
        _entries[index].frame = nullptr;
        _free.push_back(index); // never beyond capacity: each index is handed out once
    }

private:
    std::vector<held_packet> _entries;
    std::vector<std::uint16_t> _free;
};

// One QP's held packets (requests, or responses), by PSN.
class reorder_buffer {
public:
    static constexpr std::uint32_t max_held = 128;
    // How far past the gap a PSN may lie and still be held: a READ's responses take a PSN per
    // MTU, so a few READs in flight span hundreds of PSNs.
    static constexpr std::int32_t max_distance = 8192;

    std::uint32_t held() const { return _count; }

    bool contains(const held_packet_store& store, std::uint32_t psn) const {
        for (std::uint32_t i = 0; i < _count; ++i)
            if (store.at(_index[i]).psn == psn) return true;
        return false;
    }
    // False when this QP or the NIC holds all it may: the caller falls back to asking again.
    bool hold(held_packet_store& store, std::uint32_t psn, rte_mbuf* frame, const wire::parsed_roce& packet,
              sim_time arrived = 0) {
        if (_count == max_held || store.full()) return false;
        const std::uint16_t index = store.take_free();
        store.at(index) = {frame, packet, psn, arrived};
        _index[_count++] = index;
        return true;
    }
    // The held PSN that comes first after `from`; false when nothing is held.
    bool earliest(const held_packet_store& store, std::uint32_t from, std::uint32_t& psn) const {
        std::uint32_t best = 0;
        bool found = false;
        for (std::uint32_t i = 0; i < _count; ++i) {
            const std::uint32_t p = store.at(_index[i]).psn;
            if (!found || wire::psn_diff(p, from) < wire::psn_diff(best, from)) best = p, found = true;
        }
        psn = best;
        return found;
    }
    // When the packet held longest arrived (`never` when nothing is held): every held packet lies
    // past the gap, so this is how long the gap has been known.
    sim_time oldest_arrival(const held_packet_store& store) const {
        sim_time oldest = never;
        for (std::uint32_t i = 0; i < _count; ++i) oldest = std::min(oldest, store.at(_index[i]).arrived);
        return oldest;
    }
    // Takes the packet with this PSN out, if held; the caller then owns its frame.
    bool take(held_packet_store& store, std::uint32_t psn, held_packet& out) {
        for (std::uint32_t i = 0; i < _count; ++i) {
            if (store.at(_index[i]).psn != psn) continue;
            out = store.at(_index[i]);
            store.give_back(_index[i]);
            _index[i] = _index[--_count];
            return true;
        }
        return false;
    }
    // Frees every held frame: the QP stopped taking packets, or is destroyed.
    void release_all(held_packet_store& store) {
        for (std::uint32_t i = 0; i < _count; ++i) {
            rte_pktmbuf_free(store.at(_index[i]).frame);
            store.give_back(_index[i]);
        }
        _count = 0;
    }

private:
    std::uint32_t _count = 0; // first: held() is asked at every look at a QP, _index rarely
    std::array<std::uint16_t, max_held> _index{};
};

} // namespace rocefab::nic
