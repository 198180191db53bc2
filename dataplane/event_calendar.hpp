// The virtual-time driver's calendar: for each of a fixed set of entities (the wiring's nodes
// and links, numbered densely), the time it next has something to do, in an indexed binary
// min-heap. An entity is in it at most once, so moving a deadline earlier or later is one
// sift (O(log n)), and the heap never holds stale entries that would have to be skipped.
// Ties go to the lower id, so the heap's own order is deterministic too (the driver does not
// rely on it: it sorts what is due at one instant by index).
#pragma once

#include "dataplane/time.hpp"

#include <cstdint>
#include <limits>
#include <utility>
#include <vector>

namespace rocefab {

class event_calendar {
public:
    static constexpr std::uint32_t absent = std::numeric_limits<std::uint32_t>::max();

    // Ids 0 .. entities - 1, none scheduled.
    void reset(std::size_t entities) {
        _heap.clear();
        _position.assign(entities, absent);
    }
    std::size_t capacity() const { return _position.size(); }

    bool empty() const { return _heap.empty(); }
    sim_time earliest() const { return _heap.empty() ? never : _heap.front().time; }
    std::uint32_t earliest_id() const { return _heap.front().id; }
    bool contains(std::uint32_t id) const { return _position[id] != absent; }
    // When `id` is scheduled; `never` when it is not.
    sim_time time_of(std::uint32_t id) const { return contains(id) ? _heap[_position[id]].time : never; }

    // Schedules `id` at `time`, moving it if it was scheduled; `never` takes it out.
    void set(std::uint32_t id, sim_time time) {
        if (time == never) {
            remove(id);
            return;
        }
        std::uint32_t at = _position[id];
        if (at == absent) {
            at = static_cast<std::uint32_t>(_heap.size());
            _heap.push_back({time, id});
            _position[id] = at;
            sift_up(at);
            return;
        }
        const sim_time before = _heap[at].time;
        _heap[at].time = time;
        if (time < before)
            sift_up(at);
        else if (time > before)
            sift_down(at);
    }

    void remove(std::uint32_t id) {
        const std::uint32_t at = _position[id];
        if (at == absent) return;
        _position[id] = absent;
        const auto last = static_cast<std::uint32_t>(_heap.size() - 1);
        if (at != last) {
            place(at, _heap[last]);
            _heap.pop_back();
            sift_down(at);
            sift_up(at);
        } else {
            _heap.pop_back();
        }
    }

    // Takes out the earliest entry and returns its id. Not on an empty calendar.
    std::uint32_t pop() {
        const std::uint32_t id = _heap.front().id;
        remove(id);
        return id;
    }

private:
    struct entry {
        sim_time time;
        std::uint32_t id;
    };
    static bool before(const entry& a, const entry& b) { return a.time < b.time || (a.time == b.time && a.id < b.id); }

    void place(std::uint32_t at, entry e) {
        _heap[at] = e;
        _position[e.id] = at;
    }
    void sift_up(std::uint32_t at) {
        const entry e = _heap[at];
        while (at > 0) {
            const std::uint32_t parent = (at - 1) / 2;
            if (!before(e, _heap[parent])) break;
            place(at, _heap[parent]);
            at = parent;
        }
        place(at, e);
    }
    void sift_down(std::uint32_t at) {
        const entry e = _heap[at];
        const auto size = static_cast<std::uint32_t>(_heap.size());
        for (;;) {
            std::uint32_t child = 2 * at + 1;
            if (child >= size) break;
            if (child + 1 < size && before(_heap[child + 1], _heap[child])) ++child;
            if (!before(_heap[child], e)) break;
            place(at, _heap[child]);
            at = child;
        }
        place(at, e);
    }

    std::vector<entry> _heap;
    std::vector<std::uint32_t> _position; // per id: its index in _heap, or `absent`
};

} // namespace rocefab
