// The fabric's graph: nodes, and the links between their ports. It gives every node a
// frame_sink that maps the node's ports to their outgoing links. Built on the control path
// (it allocates and throws on bad input); drivers then read it without changing it.
#pragma once

#include "dataplane/link.hpp"
#include "dataplane/node.hpp"

#include <atomic>
#include <cstdint>
#include <memory>
#include <span>
#include <utility>
#include <vector>

namespace rocefab {

class wiring {
public:
    wiring() = default;
    wiring(const wiring&) = delete;
    wiring& operator=(const wiring&) = delete;

    // The node must outlive the wiring. Ids are dense, in order of addition.
    node_id add_node(node& n);

    // Connects (a, pa) and (b, pb) with one link each way, both built from `model`.
    // Returns {a→b, b→a}. Throws std::invalid_argument for an unknown node, a port beyond the
    // node's port_count(), or a port already connected; std::runtime_error if a ring cannot be
    // created.
    std::pair<link_id, link_id> connect(node_id a, std::uint16_t pa, node_id b, std::uint16_t pb,
                                        const link_model& model);

    // Declares that a and b share memory through which each one's receive() or poll() can change
    // what the other's next_deadline() says (a program's queues and its NIC: posting work, writing
    // completions). The virtual-time driver asks a node's deadline again only after something
    // that can change it: its own receive() and poll(), and those of the nodes coupled to it.
    // Throws std::invalid_argument for an unknown node.
    void couple(node_id a, node_id b);
    std::span<const node_id> coupled(node_id n) const { return _nodes[n].coupled; }
    // Declares that n's poll() reads the state of other nodes (a recorder sampling the fabric).
    // A driver that lets nodes run ahead of one another (virtual_time_driver::set_run_ahead)
    // brings every node to n's instant first. Such a node has no ports and is coupled to
    // nothing: nothing but time reaches it. Throws std::invalid_argument otherwise, or for an
    // unknown node.
    void set_observer(node_id n);
    bool is_observer(node_id n) const { return _nodes[n].observer; }

    // The fabric's fault-injection seed: link i draws its fault decisions from
    // link_fault_seed(seed, i). Reseeds the links already connected and those connected later.
    // Default 1.
    void set_seed(std::uint64_t seed);
    std::uint64_t seed() const { return _seed; }

    // Hands every node its frame_sink and the pool it allocates frames from.
    void attach_all(rte_mempool* pool);

    std::size_t node_count() const { return _nodes.size(); }
    std::size_t link_count() const { return _links.size(); }
    node& node_at(node_id id) const { return *_nodes[id].n; }
    link& link_at(link_id id) const { return *_links[id]; }

    // The link leaving (n, port); nullptr when the port is not connected.
    link* outgoing(node_id n, std::uint16_t port) const;
    // The link arriving at (n, port); nullptr when the port is not connected.
    link* incoming(node_id n, std::uint16_t port) const;

    // Frames a node transmitted on a port with no cable (freed).
    std::uint64_t drops_unconnected(node_id n) const;

private:
    class node_sink final : public frame_sink {
    public:
        explicit node_sink(std::uint16_t ports) : out(ports, nullptr), in(ports, nullptr) {}
        sim_time transmit(std::uint16_t port, rte_mbuf* frame, sim_time now) override;
        sim_time busy_until(std::uint16_t port) const override;
        std::size_t transmit_while_free(std::uint16_t port, std::span<rte_mbuf* const> frames, sim_time now,
                                        sim_time takes_until, sim_time& busy) override;

        std::vector<link*> out;
        std::vector<link*> in;
        std::atomic<std::uint64_t> drops_unconnected{0};
    };
    struct node_entry {
        node* n;
        std::unique_ptr<node_sink> sink;
        std::vector<node_id> coupled;
        bool observer = false;
    };

    void check_port(node_id n, std::uint16_t port) const;

    std::vector<node_entry> _nodes;
    std::vector<std::unique_ptr<link>> _links; // links are pinned: nodes' sinks point at them
    std::uint64_t _seed = 1;
};

} // namespace rocefab
