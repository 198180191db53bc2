// The virtual-time driver's calendar: for each of a fixed set of entities (the wiring's nodes
// and links, numbered densely), the time it next has something to do. An entity is in it at
// most once, so moving a deadline earlier or later is one sift, and the calendar never holds
// stale entries that would have to be skipped.
//
// Entities belong to groups (the driver's groups of coupled nodes, each with the links that
// deliver to it; one group of everything when it does not run ahead). Each group keeps its
// entities in an indexed binary min-heap of its own, laid out one after another in one array,
// and the groups are in an indexed min-heap by their earliest entry. A change sifts its own
// group's heap, a host's a few entries deep, and the heap of groups only when the group's
// earliest entry moves; a single heap of a 256-host fabric's busy entities was about nine
// levels deep at every change. Running ahead, the driver serves one group's instants of a
// window after another and holds the group meanwhile (hold_group), so that its turn touches
// nothing but its own heap.
//
// Ties go to the lower id within a group and to the lower group among groups, so the order is
// deterministic; the driver relies on neither: it gathers everything due at an instant and
// orders it by index itself.
#pragma once

#include "dataplane/time.hpp"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <span>
#include <vector>

namespace rocefab {

class event_calendar {
public:
    static constexpr std::uint32_t absent = std::numeric_limits<std::uint32_t>::max();

    // Entities 0 .. group_of.size() - 1, entity e in group group_of[e] (ids below
    // group_of.size(); groups are ordered by id), none scheduled.
    void reset(std::span<const std::uint32_t> group_of) {
        const std::size_t entities = group_of.size();
        _group_of.assign(group_of.begin(), group_of.end());
        _position.assign(entities, absent);
        _entries.assign(entities, {});
        _base.assign(entities + 1, 0);
        _count.assign(entities, 0);
        for (const std::uint32_t g : _group_of) ++_base[g + 1];
        for (std::size_t g = 0; g < entities; ++g) _base[g + 1] += _base[g];
        _groups.clear();
        _group_position.assign(entities, absent);
        _held = absent;
    }
    std::size_t capacity() const { return _position.size(); }

    bool empty() const { return _groups.empty(); }
    sim_time earliest() const { return _groups.empty() ? never : _groups.front().time; }
    bool contains(std::uint32_t id) const { return _position[id] != absent; }
    // When `id` is scheduled; `never` when it is not.
    sim_time time_of(std::uint32_t id) const { return contains(id) ? _entries[_position[id]].time : never; }

    // Schedules `id` at `time`, moving it if it was scheduled; `never` takes it out.
    void set(std::uint32_t id, sim_time time) {
        if (time == never) {
            remove(id);
            return;
        }
        const std::uint32_t g = _group_of[id];
        std::uint32_t at = _position[id];
        if (at == absent) {
            at = _base[g] + _count[g]++;
            _entries[at] = {time, id};
            _position[id] = at;
            sift_up(g, at);
        } else {
            const sim_time before = _entries[at].time;
            _entries[at].time = time;
            if (time < before)
                sift_up(g, at);
            else if (time > before)
                sift_down(g, at);
        }
        if (g != _held) place_group(g);
    }

    void remove(std::uint32_t id) {
        const std::uint32_t at = _position[id];
        if (at == absent) return;
        const std::uint32_t g = _group_of[id];
        _position[id] = absent;
        const std::uint32_t last = _base[g] + --_count[g];
        if (at != last) {
            place(at, _entries[last]);
            sift_down(g, at);
            sift_up(g, at);
        }
        if (g != _held) place_group(g);
    }

    // Takes out an entry whose time is earliest() and returns its id. Not on an empty calendar.
    std::uint32_t pop() { return pop_from(_groups.front().group); }

    // The earliest entry of group g, `never` when it has none.
    sim_time earliest_in(std::uint32_t g) const { return _count[g] ? _entries[_base[g]].time : never; }
    // Takes out group g's earliest entry and returns its id. Not on an empty group.
    std::uint32_t pop_from(std::uint32_t g) {
        const std::uint32_t id = _entries[_base[g]].id;
        remove(id);
        return id;
    }

    // Sets `out` to the groups whose earliest entry is before `end`, in increasing group order.
    void groups_before(sim_time end, std::vector<std::uint32_t>& out) {
        out.clear();
        _walk.clear();
        if (!_groups.empty() && _groups.front().time < end) _walk.push_back(0);
        while (!_walk.empty()) {
            const std::uint32_t at = _walk.back();
            _walk.pop_back();
            out.push_back(_groups[at].group);
            for (std::uint32_t child = 2 * at + 1; child <= 2 * at + 2 && child < _groups.size(); ++child)
                if (_groups[child].time < end) _walk.push_back(child);
        }
        std::sort(out.begin(), out.end());
    }

    // While group g is held, changes to its entries leave the heap of groups as it is; release
    // puts g where its earliest entry now says. For a run of changes to one group, such as its
    // turn in a window, during which the driver asks for no other group's order.
    void hold_group(std::uint32_t g) { _held = g; }
    void release_group() {
        const std::uint32_t g = _held;
        _held = absent;
        if (g != absent) place_group(g);
    }

private:
    struct entry {
        sim_time time;
        std::uint32_t id;
    };
    struct group_entry {
        sim_time time; // the group's earliest entry
        std::uint32_t group;
    };
    static bool before(const entry& a, const entry& b) { return a.time < b.time || (a.time == b.time && a.id < b.id); }
    static bool before(const group_entry& a, const group_entry& b) {
        return a.time < b.time || (a.time == b.time && a.group < b.group);
    }

    void place(std::uint32_t at, entry e) {
        _entries[at] = e;
        _position[e.id] = at;
    }
    // Group g's heap starts at _base[g].
    void sift_up(std::uint32_t g, std::uint32_t at) {
        heap_sift_up(_entries.data(), _base[g], at, [this](std::uint32_t i, entry e) { place(i, e); });
    }
    void sift_down(std::uint32_t g, std::uint32_t at) {
        heap_sift_down(_entries.data(), _base[g], _base[g] + _count[g], at,
                       [this](std::uint32_t i, entry e) { place(i, e); });
    }

    // Brings group g's place in the heap of groups up to date with its earliest entry.
    void place_group(std::uint32_t g) {
        const sim_time time = earliest_in(g);
        std::uint32_t at = _group_position[g];
        if (time == never) {
            if (at != absent) remove_group(at);
            return;
        }
        if (at == absent) {
            at = static_cast<std::uint32_t>(_groups.size());
            _groups.push_back({time, g});
            _group_position[g] = at;
            group_sift_up(at);
            return;
        }
        const sim_time before = _groups[at].time;
        _groups[at].time = time;
        if (time < before)
            group_sift_up(at);
        else if (time > before)
            group_sift_down(at);
    }
    void remove_group(std::uint32_t at) {
        _group_position[_groups[at].group] = absent;
        const auto last = static_cast<std::uint32_t>(_groups.size() - 1);
        if (at != last) {
            place_group_entry(at, _groups[last]);
            _groups.pop_back();
            group_sift_down(at);
            group_sift_up(at);
        } else {
            _groups.pop_back();
        }
    }
    void place_group_entry(std::uint32_t at, group_entry e) {
        _groups[at] = e;
        _group_position[e.group] = at;
    }
    void group_sift_up(std::uint32_t at) {
        heap_sift_up(_groups.data(), 0, at, [this](std::uint32_t i, group_entry e) { place_group_entry(i, e); });
    }
    void group_sift_down(std::uint32_t at) {
        heap_sift_down(_groups.data(), 0, static_cast<std::uint32_t>(_groups.size()), at,
                       [this](std::uint32_t i, group_entry e) { place_group_entry(i, e); });
    }

    // A binary min-heap laid out in entries[base, end), by before(): the children of the slot i
    // places after base are 2i + 1 and 2i + 2 places after it. `place(i, e)` puts e at i and
    // notes where it is.
    template <typename Entry, typename Place>
    static void heap_sift_up(Entry* entries, std::uint32_t base, std::uint32_t at, Place place) {
        const Entry e = entries[at];
        while (at > base) {
            const std::uint32_t parent = base + (at - base - 1) / 2;
            if (!before(e, entries[parent])) break;
            place(at, entries[parent]);
            at = parent;
        }
        place(at, e);
    }
    template <typename Entry, typename Place>
    static void heap_sift_down(Entry* entries, std::uint32_t base, std::uint32_t end, std::uint32_t at, Place place) {
        const Entry e = entries[at];
        for (;;) {
            std::uint32_t child = base + 2 * (at - base) + 1;
            if (child >= end) break;
            if (child + 1 < end && before(entries[child + 1], entries[child])) ++child;
            if (!before(entries[child], e)) break;
            place(at, entries[child]);
            at = child;
        }
        place(at, e);
    }

    std::vector<std::uint32_t> _group_of;       // per entity
    std::vector<std::uint32_t> _position;       // per entity: its index in _entries, or `absent`
    std::vector<entry> _entries;                // the groups' heaps, group g's from _base[g], _count[g] long
    std::vector<std::uint32_t> _base;           // per group, and one past the last
    std::vector<std::uint32_t> _count;          // per group
    std::vector<group_entry> _groups;           // the groups with entries, by their earliest
    std::vector<std::uint32_t> _group_position; // per group: its index in _groups, or `absent`
    std::vector<std::uint32_t> _walk;           // groups_before()'s stack
    std::uint32_t _held = absent;
};

} // namespace rocefab
