#include "dataplane/virtual_time_driver.hpp"

#include <algorithm>
#include <array>
#include <functional>

namespace rocefab {

virtual_time_driver::virtual_time_driver(wiring& w, sim_time start)
    : _wiring(w), _now(start), _done_through(start - 1) {
    resync();
}

virtual_time_driver::~virtual_time_driver() {
    for (std::size_t k = 0; k < _wiring.link_count(); ++k)
        _wiring.link_at(static_cast<link_id>(k)).set_arrival_listener(nullptr, 0);
}

void virtual_time_driver::resync() {
    const std::size_t nodes = _wiring.node_count(), links = _wiring.link_count();
    if (_node_flags.size() != nodes || _link_queued.size() != links) { // the wiring grew since the last call
        _node_flags.assign(nodes, {});
        _link_queued.assign(links, 0);
    }
    // Every entity is asked again below, so the calendar starts empty, with the groups as they
    // are now (running ahead may have been switched, or the wiring grown or coupled anew).
    find_groups();
    _calendar.reset(_group);
    for (std::size_t k = 0; k < links; ++k) {
        link& l = _wiring.link_at(static_cast<link_id>(k));
        l.set_arrival_listener(this, static_cast<link_id>(k));
        _calendar.set(link_entity(static_cast<link_id>(k)), l.next_arrival());
    }
    for (std::size_t i = 0; i < nodes; ++i) {
        _node_flags[i].stale = 0;
        _calendar.set(static_cast<std::uint32_t>(i), _wiring.node_at(static_cast<node_id>(i)).next_deadline());
    }
}

void virtual_time_driver::set_run_ahead(bool on) {
    _run_ahead = on;
    resync();
}

void virtual_time_driver::find_groups() {
    _lookahead = 0;
    const std::size_t nodes = _wiring.node_count(), links = _wiring.link_count();
    _group.assign(nodes + links, 0); // one group of everything unless running ahead
    if (!_run_ahead) return;
    sim_time shortest = never;
    for (std::size_t k = 0; k < links; ++k)
        shortest = std::min(shortest, _wiring.link_at(static_cast<link_id>(k)).model().propagation_delay);
    if (shortest <= 0) return;
    _lookahead = shortest;
    _observers.clear();
    for (std::size_t i = 0; i < nodes; ++i) {
        _group[i] = static_cast<std::uint32_t>(i);
        if (_wiring.is_observer(static_cast<node_id>(i))) _observers.push_back(static_cast<node_id>(i));
    }
    // Coupling is symmetric: spread the lowest id over each connected set until nothing changes.
    for (bool changed = true; changed;) {
        changed = false;
        for (std::size_t i = 0; i < nodes; ++i)
            for (const node_id other : _wiring.coupled(static_cast<node_id>(i)))
                if (_group[other] < _group[i]) {
                    _group[i] = _group[other];
                    changed = true;
                }
    }
    for (std::size_t k = 0; k < links; ++k)
        _group[link_entity(static_cast<link_id>(k))] = _group[_wiring.link_at(static_cast<link_id>(k)).to().node];
}

void virtual_time_driver::set_event(std::uint32_t entity, sim_time time) { _calendar.set(entity, time); }

void virtual_time_driver::clear_event(std::uint32_t entity) { _calendar.remove(entity); }

sim_time virtual_time_driver::earliest_event() const {
    sim_time earliest = _calendar.earliest();
    if (earliest == never) return never;
    // Arrivals are never in the past (everything due was delivered); only a stale deadline
    // is, or one set from outside between runs. Time never goes back, and an instant already
    // processed is not processed again.
    earliest = std::max(earliest, _now);
    if (earliest <= _done_through) earliest = _done_through + 1;
    return earliest;
}

sim_time virtual_time_driver::next_event_time() {
    resync();
    return earliest_event();
}

void virtual_time_driver::schedule_node(node_id i) {
    node_flags& f = _node_flags[i];
    if (f.queued) return;
    f.queued = 1;
    clear_event(i);
    if (_phase == phase::polling && i > _cursor) {
        _nodes_now.push_back(i);
        std::push_heap(_nodes_now.begin(), _nodes_now.end(), std::greater<>{});
    } else {
        _nodes_next.push_back(i);
    }
}

void virtual_time_driver::schedule_link(link_id k) {
    if (_link_queued[k]) return;
    _link_queued[k] = 1;
    clear_event(link_entity(k));
    if (_phase == phase::delivering && k > _cursor) {
        _links_now.push_back(k);
        std::push_heap(_links_now.begin(), _links_now.end(), std::greater<>{});
    } else {
        _links_next.push_back(k);
    }
}

void virtual_time_driver::requery_node(node_id i) {
    _node_flags[i].stale = 0;
    const sim_time deadline = _wiring.node_at(i).next_deadline();
    if (_phase != phase::between_instants && deadline <= _instant)
        schedule_node(i);
    else
        set_event(i, deadline);
}

void virtual_time_driver::requery_link(link_id k) {
    const sim_time arrival = _wiring.link_at(k).next_arrival();
    if (_phase != phase::between_instants && arrival <= _instant)
        schedule_link(k);
    else
        set_event(link_entity(k), arrival);
}

void virtual_time_driver::touch_coupled(node_id i) {
    for (const node_id other : _wiring.coupled(i)) {
        _node_flags[other].stale = 1;
        schedule_node(other);
    }
}

void virtual_time_driver::frame_queued(link_id k, sim_time arrival) {
    // A link already among what is due, or being emptied now, is asked again once served.
    if (_link_queued[k] || k == _delivering) return;
    if (_phase != phase::between_instants && arrival <= _instant) {
        schedule_link(k); // a zero-time link
        return;
    }
    // Frames are queued in arrival order on each of the link's two rings, so a new frame can
    // only move the link's next arrival earlier when it is the first of its ring. Running
    // ahead, a frame arrives after the window (links take at least its length); a link already
    // due in the window is asked again when it is served.
    const std::uint32_t entity = link_entity(k);
    const sim_time scheduled = _calendar.time_of(entity);
    if (_in_window && scheduled < _window_end) return;
    if (arrival < scheduled) set_event(entity, arrival);
}

bool virtual_time_driver::deliver_due(sim_time t) {
    if (_links_next.empty()) return false;
    _links_now.swap(_links_next);
    std::make_heap(_links_now.begin(), _links_now.end(), std::greater<>{});
    _phase = phase::delivering;
    bool delivered_any = false;
    while (!_links_now.empty()) {
        std::pop_heap(_links_now.begin(), _links_now.end(), std::greater<>{});
        const link_id k = _links_now.back();
        _links_now.pop_back();
        _link_queued[k] = 0;
        _cursor = k;
        _delivering = k;
        link& l = _wiring.link_at(k);
        const link_endpoint to = l.to();
        node& receiver = _wiring.node_at(to.node);
        // What is due is handed over in bursts, as the realtime driver does: the switch takes
        // them a vector at a time, with the same result as one frame at a time.
        std::array<rte_mbuf*, delivery_burst> burst;
        for (;;) {
            const unsigned n = l.take_ready(t, burst);
            if (n == 0) break;
            receiver.receive_burst(to.port, {burst.data(), n}, t);
            _node_flags[to.node].received = 1;
            schedule_node(to.node);
            touch_coupled(to.node);
            _frames_delivered += n;
            delivered_any = true;
        }
        _delivering = nobody;
        requery_link(k);
    }
    _phase = phase::gathering;
    _cursor = nobody;
    return delivered_any;
}

bool virtual_time_driver::poll_due(sim_time t) {
    if (_nodes_next.empty()) return false;
    _nodes_now.swap(_nodes_next);
    std::make_heap(_nodes_now.begin(), _nodes_now.end(), std::greater<>{});
    _phase = phase::polling;
    bool worked = false;
    while (!_nodes_now.empty()) {
        std::pop_heap(_nodes_now.begin(), _nodes_now.end(), std::greater<>{});
        const node_id i = _nodes_now.back();
        _nodes_now.pop_back();
        node_flags& f = _node_flags[i];
        f.queued = 0;
        _cursor = i;
        node& n = _wiring.node_at(i);
        // Queued because a coupled node worked: due only if its deadline says so now, as the
        // loop in the header would find looking at it here.
        if (!f.received && f.stale) {
            f.stale = 0;
            const sim_time deadline = n.next_deadline();
            if (deadline > t) {
                set_event(i, deadline);
                continue;
            }
        }
        f.received = 0;
        worked |= n.poll(t);
        requery_node(i);
        touch_coupled(i);
    }
    _phase = phase::gathering;
    _cursor = nobody;
    return worked;
}

void virtual_time_driver::schedule_entity(std::uint32_t entity) {
    const auto nodes = static_cast<std::uint32_t>(_wiring.node_count());
    if (entity < nodes)
        schedule_node(entity);
    else
        schedule_link(entity - nodes);
}

void virtual_time_driver::serve_instant(sim_time t) {
    for (unsigned round = 0; round < max_rounds_per_instant; ++round) {
        const bool delivered = deliver_due(t);
        const bool polled = poll_due(t);
        if (!delivered && !polled) break;
    }
    // What is still queued (the last round did no work, or the rounds ran out) waits in the
    // calendar, due at once: the next nanosecond (next_event_time() makes it so; in a window,
    // it is put there).
    _phase = phase::between_instants;
    const sim_time soonest = _in_window ? t + 1 : 0;
    for (const node_id i : _nodes_next) {
        _node_flags[i] = {};
        set_event(i, std::max(soonest, _wiring.node_at(i).next_deadline()));
    }
    _nodes_next.clear();
    for (const link_id k : _links_next) {
        _link_queued[k] = 0;
        set_event(link_entity(k), std::max(soonest, _wiring.link_at(k).next_arrival()));
    }
    _links_next.clear();
}

bool virtual_time_driver::process_next_instant(sim_time limit) {
    const sim_time t = earliest_event();
    if (t == never || t > limit) return false;
    _now = t;
    _done_through = t;
    _instant = t;
    ++_instants;
    _phase = phase::gathering;
    while (!_calendar.empty() && _calendar.earliest() <= t) schedule_entity(_calendar.pop());
    serve_instant(t);
    return true;
}

void virtual_time_driver::run_window(sim_time start, sim_time end) {
    _in_window = true;
    _window_end = end;
    sim_time last = start;
    // A group's turn changes only its own entries before the window's end (what it sends to
    // another group arrives after it), so one pass over the groups due serves the window; the
    // loop around it would catch a group made due during another's turn.
    for (_calendar.groups_before(end, _window_groups); !_window_groups.empty();
         _calendar.groups_before(end, _window_groups)) {
        for (const std::uint32_t g : _window_groups) {
            _calendar.hold_group(g);
            for (sim_time due; (due = _calendar.earliest_in(g)) < end;) {
                // A deadline left in the past is served at the window's start.
                const sim_time t = std::max(due, start);
                _instant = t;
                ++_instants;
                _phase = phase::gathering;
                while (_calendar.earliest_in(g) <= t) schedule_entity(_calendar.pop_from(g));
                serve_instant(t);
                last = std::max(last, t);
            }
            _calendar.release_group();
        }
    }
    _in_window = false;
    _now = last;
    _done_through = end - 1;
}

bool virtual_time_driver::process_next(sim_time limit) {
    if (_lookahead == 0) return process_next_instant(limit);
    const sim_time t = earliest_event();
    if (t == never || t > limit) return false;
    sim_time end = limit - t < _lookahead ? limit + 1 : t + _lookahead;
    for (const node_id o : _observers) end = std::min(end, std::max(_calendar.time_of(o), t));
    if (end == t) return process_next_instant(limit); // an observer is due: every node at once
    run_window(t, end);
    return true;
}

bool virtual_time_driver::step(sim_time limit) {
    resync();
    return process_next(limit);
}

void virtual_time_driver::run_until(sim_time end) {
    resync();
    continue_until(end);
}

void virtual_time_driver::continue_until(sim_time end) {
    if (_calendar.capacity() != _wiring.node_count() + _wiring.link_count()) resync(); // the wiring grew
    while (process_next(end)) {}
    if (end > _now) _now = end;
}

bool virtual_time_driver::run_until_idle(sim_time limit) {
    resync();
    while (process_next(limit)) {}
    if (earliest_event() == never) return true;
    if (limit > _now) _now = limit;
    return false;
}

} // namespace rocefab
