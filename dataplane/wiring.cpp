#include "dataplane/wiring.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace rocefab {

sim_time wiring::node_sink::transmit(std::uint16_t port, rte_mbuf* frame, sim_time now) {
    link* l = port < out.size() ? out[port] : nullptr;
    if (!l) {
        drops_unconnected.store(drops_unconnected.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
        rte_pktmbuf_free(frame);
        return 0; // as busy_until() says of an unconnected port
    }
    l->transmit(frame, now);
    return l->busy_until();
}

std::size_t wiring::node_sink::transmit_while_free(std::uint16_t port, std::span<rte_mbuf* const> frames, sim_time now,
                                                   sim_time takes_until, sim_time& busy) {
    link* l = port < out.size() ? out[port] : nullptr;
    if (!l) return frame_sink::transmit_while_free(port, frames, now, takes_until, busy);
    std::size_t taken = 0;
    while (taken < frames.size() && busy <= takes_until) {
        l->transmit(frames[taken++], now);
        busy = l->busy_until();
    }
    return taken;
}

sim_time wiring::node_sink::busy_until(std::uint16_t port) const {
    // An unconnected port is never busy: what is sent there is dropped at once.
    link* l = port < out.size() ? out[port] : nullptr;
    return l ? l->busy_until() : 0;
}

node_id wiring::add_node(node& n) {
    _nodes.push_back(node_entry{&n, std::make_unique<node_sink>(n.port_count()), {}});
    return static_cast<node_id>(_nodes.size() - 1);
}

void wiring::check_port(node_id n, std::uint16_t port) const {
    if (n >= _nodes.size()) throw std::invalid_argument("no node with id " + std::to_string(n));
    const node& nd = *_nodes[n].n;
    if (port >= nd.port_count())
        throw std::invalid_argument("node " + nd.name() + " has no port " + std::to_string(port) + " (it has " +
                                    std::to_string(nd.port_count()) + ")");
    if (_nodes[n].sink->out[port])
        throw std::invalid_argument("port " + std::to_string(port) + " of node " + nd.name() + " is already connected");
}

std::pair<link_id, link_id> wiring::connect(node_id a, std::uint16_t pa, node_id b, std::uint16_t pb,
                                            const link_model& model) {
    check_port(a, pa);
    check_port(b, pb);
    if (a == b && pa == pb) throw std::invalid_argument("cannot connect a port to itself");
    auto endpoint_name = [&](node_id n, std::uint16_t p) { return _nodes[n].n->name() + ":" + std::to_string(p); };
    auto ab = std::make_unique<link>(endpoint_name(a, pa) + "->" + endpoint_name(b, pb), link_endpoint{a, pa},
                                     link_endpoint{b, pb}, model);
    auto ba = std::make_unique<link>(endpoint_name(b, pb) + "->" + endpoint_name(a, pa), link_endpoint{b, pb},
                                     link_endpoint{a, pa}, model);
    _links.reserve(_links.size() + 2); // nothing below may fail once the sinks point at the links
    _nodes[a].sink->out[pa] = ab.get();
    _nodes[b].sink->in[pb] = ab.get();
    _nodes[b].sink->out[pb] = ba.get();
    _nodes[a].sink->in[pa] = ba.get();
    const auto first = static_cast<link_id>(_links.size());
    ab->seed_faults(link_fault_seed(_seed, first));
    ba->seed_faults(link_fault_seed(_seed, first + 1));
    _links.push_back(std::move(ab));
    _links.push_back(std::move(ba));
    return {first, first + 1};
}

void wiring::couple(node_id a, node_id b) {
    if (a >= _nodes.size() || b >= _nodes.size())
        throw std::invalid_argument("no node with id " + std::to_string(std::max(a, b)));
    if (a == b) return; // a node's own calls are always followed by a look at its deadline
    if (_nodes[a].observer || _nodes[b].observer)
        throw std::invalid_argument("node " + _nodes[_nodes[a].observer ? a : b].n->name() +
                                    " observes the fabric and cannot be coupled");
    auto add = [&](node_id to, node_id other) {
        auto& list = _nodes[to].coupled;
        if (std::find(list.begin(), list.end(), other) == list.end()) list.push_back(other);
    };
    add(a, b);
    add(b, a);
}

void wiring::set_observer(node_id n) {
    if (n >= _nodes.size()) throw std::invalid_argument("no node with id " + std::to_string(n));
    node_entry& e = _nodes[n];
    if (e.n->port_count() != 0 || !e.coupled.empty())
        throw std::invalid_argument("node " + e.n->name() + " has ports or is coupled: it cannot be an observer");
    e.observer = true;
}

void wiring::set_seed(std::uint64_t seed) {
    _seed = seed;
    for (std::size_t i = 0; i < _links.size(); ++i) _links[i]->seed_faults(link_fault_seed(seed, i));
}

void wiring::attach_all(rte_mempool* pool) {
    for (auto& e : _nodes) e.n->attach(e.sink.get(), pool);
}

link* wiring::outgoing(node_id n, std::uint16_t port) const {
    if (n >= _nodes.size() || port >= _nodes[n].sink->out.size()) return nullptr;
    return _nodes[n].sink->out[port];
}

link* wiring::incoming(node_id n, std::uint16_t port) const {
    if (n >= _nodes.size() || port >= _nodes[n].sink->in.size()) return nullptr;
    return _nodes[n].sink->in[port];
}

std::uint64_t wiring::drops_unconnected(node_id n) const {
    return _nodes.at(n).sink->drops_unconnected.load(std::memory_order_relaxed);
}

} // namespace rocefab
