// The traffic of a simulation, played as programs would play it through verbs: for each flow an
// RC QP pair (on the sender's NIC and the receiver's), connected at the start, and the flow's
// bytes posted as RDMA WRITEs, a few outstanding at a time, as ib_write_bw does. The NICs run
// the real transport, DCQCN and PFC; the generator only posts work and reads completions.
//
// Each sending host plays its part as a node of its own (traffic_host), as each host would run
// its own program: a NIC's completions then concern one node, coupled to it (wiring::couple),
// and the virtual-time driver does not look at every flow of the fabric after every poll of
// every NIC. The hosts' nodes are added one after another, so at an instant they run at the
// same point of a round as one node for all flows would, and each flow's work touches only
// its own queues: the same work in the same rounds.
#pragma once

#include "dataplane/node.hpp"
#include "nic_emu/nic_node.hpp"
#include "sim/scenario.hpp"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace rocefab::sim {

class traffic_generator;

// The flows one host sends: posts their WRITEs when they start and as completions come back.
class traffic_host final : public node {
public:
    traffic_host(traffic_generator& owner, std::size_t host, std::string name);

    void receive(std::uint16_t, rte_mbuf* frame, sim_time) override { rte_pktmbuf_free(frame); }
    bool poll(sim_time now) override;
    sim_time next_deadline() const override;

    std::size_t host() const { return _host; }

private:
    friend class traffic_generator; // fills _order
    traffic_generator& _owner;
    std::size_t _host;
    std::size_t _next_to_start = 0; // this host's flows by start time: _order[_next_to_start] starts next
    std::vector<std::size_t> _order;
    std::vector<std::size_t> _running;
};

class traffic_generator {
public:
    struct flow_state {
        const flow_spec* spec;
        nic::nic_node* sender;
        nic::nic_node* receiver;
        std::uint32_t sender_qpn = 0;
        // Its QPs' path MTU, in payload bytes a packet: the smaller of the two ports' active
        // MTUs, as perftest connects its QPs.
        std::uint32_t payload_per_packet = 4096;
        std::uint64_t bytes_posted = 0, bytes_completed = 0;
        sim_time finished = never; // when the last WRITE completed at the sender
        bool failed = false;       // a completion with an error status
    };

    // `nics[h]`: host h's first NIC. Creates every flow's QPs and connects them.
    traffic_generator(const scenario& s, const std::vector<nic::nic_node*>& nics);
    ~traffic_generator();
    traffic_generator(const traffic_generator&) = delete;
    traffic_generator& operator=(const traffic_generator&) = delete;

    // One node per host that sends a flow, in host order: add them to the wiring in this order,
    // each coupled to its host's NIC.
    const std::vector<std::unique_ptr<traffic_host>>& hosts() const { return _host_nodes; }

    const std::vector<flow_state>& flows() const { return _flows; }
    bool all_done() const { return _done == _flows.size(); }

private:
    friend class traffic_host;
    struct host;
    struct connection;
    void post_writes(std::size_t flow);
    // Takes flow i's completions and posts what they make room for; true when it did anything.
    // Marks the flow finished (and returns true in `finished`) once it is done or failed.
    bool serve(std::size_t flow, sim_time now, bool& finished);
    bool has_completions(std::size_t flow) const;

    const scenario& _scenario;
    // The one message-sized buffer every host registers, each in its own address space (its
    // context's): the range a WRITE reads and where it lands. Its bytes move only with
    // scenario::copy_payloads; then the hosts send zeros and nobody reads what arrives, so one
    // buffer gives the same bytes as a buffer each and the hosts' side of the copies stays in
    // the CPU's cache however many hosts there are.
    std::vector<std::uint8_t> _memory;
    std::vector<std::unique_ptr<host>> _hosts;
    std::vector<std::unique_ptr<connection>> _connections; // per flow
    std::vector<flow_state> _flows;
    std::vector<std::unique_ptr<traffic_host>> _host_nodes;
    std::size_t _done = 0;
};

} // namespace rocefab::sim
