// The traffic of a simulation, played as programs would play it through verbs: for each flow an
// RC QP pair (on the sender's NIC and the receiver's), connected at the start, and the flow's
// bytes posted as RDMA WRITEs, a few outstanding at a time, as ib_write_bw does. The NICs run
// the real transport, DCQCN and PFC; this node only posts work and reads completions.
#pragma once

#include "dataplane/node.hpp"
#include "nic_emu/nic_node.hpp"
#include "sim/scenario.hpp"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace rocefab::sim {

class traffic_generator final : public node {
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
    ~traffic_generator() override;

    void receive(std::uint16_t, rte_mbuf* frame, sim_time) override { rte_pktmbuf_free(frame); }
    bool poll(sim_time now) override;
    sim_time next_deadline() const override;

    const std::vector<flow_state>& flows() const { return _flows; }
    bool all_done() const { return _done == _flows.size(); }

private:
    struct host;
    struct connection;
    void post_writes(std::size_t flow);

    const scenario& _scenario;
    std::vector<std::unique_ptr<host>> _hosts;
    std::vector<std::unique_ptr<connection>> _connections; // per flow
    std::vector<flow_state> _flows;
    std::size_t _done = 0;
    std::size_t _next_to_start = 0; // flows sorted by start time: _order[_next_to_start] starts next
    std::vector<std::size_t> _order;
    std::vector<std::size_t> _running;
};

} // namespace rocefab::sim
