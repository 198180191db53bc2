#include "sim/traffic.hpp"

#include "nic_emu/address_space.hpp"
#include "nic_emu/hw_abi.hpp"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <unistd.h>

namespace rocefab::sim {

namespace {

// WRITEs a flow keeps outstanding: ib_write_bw's default tx depth. The NIC's own window (1024
// unacknowledged packets) is then what limits a flow in flight.
constexpr std::uint32_t outstanding_writes = 128;
constexpr std::uint32_t queue_slots = 256;

void check(int error, const char* what) {
    if (error) throw std::runtime_error(std::string("simulation setup: ") + what + " failed: " + std::strerror(error));
}

// A ring in a shared region, as the verbs library would map it.
nic::shared_region make_region(std::size_t length) {
    nic::shared_region region;
    int fd;
    if (!nic::shared_region::create("rocefab-sim", length, region, fd))
        throw std::runtime_error(std::string("simulation setup: shared memory: ") + std::strerror(errno));
    ::close(fd);
    return region;
}

// The hosts' memory when nothing reads it (scenario::copy_payloads off): the NIC checks keys,
// bounds and access as ever, then moves no byte. A frame's payload is whatever its buffer held,
// and what arrives is dropped. An ICRC is still computed wherever it is observed (a corrupting
// link seals the frame, the receiver verifies it), over those bytes, so loss, corruption,
// duplication and reordering hit the same frames with the same outcomes.
class unobserved_memory final : public nic::address_space {
public:
    bool read(std::span<const iovec> local, std::span<const iovec> remote) override {
        return nic::total_length(local) == nic::total_length(remote);
    }
    bool write(std::span<const iovec> local, std::span<const iovec> remote) override {
        return nic::total_length(local) == nic::total_length(remote);
    }
};

std::unique_ptr<nic::address_space> host_memory(bool copied) {
    if (copied) return std::make_unique<nic::local_address_space>();
    return std::make_unique<unobserved_memory>();
}

} // namespace

// A host's verbs resources: one context, PD and memory region (over the generator's _memory),
// the source of every WRITE it sends and the target of every WRITE it receives (the bytes are
// not checked).
struct traffic_generator::host {
    nic::nic_node* nic;
    std::uint32_t context = 0, pd = 0, mr = 0, lkey = 0, rkey = 0;
    hw::doorbell_queue* doorbells = nullptr; // in the context's region, as the verbs library maps it
};

// One flow's QP pair and the sender's send CQ.
struct traffic_generator::connection {
    std::uint32_t send_cq = 0, recv_cq_sender = 0, recv_cq_receiver = 0, send_cq_receiver = 0;
    std::uint32_t qp_sender = 0, qp_receiver = 0, qpn_sender = 0, qpn_receiver = 0;
    hw::cq_control* cq_control = nullptr;
    hw::cqe* cqes = nullptr;
    // The CQ's consumer index, kept privately as a verbs provider keeps it and published after
    // each batch: looking for completions then reads one shared line, the NIC's producer.
    std::uint32_t cq_consumed = 0;
    hw::qp_control* qp_control = nullptr;
    hw::send_wqe* sq = nullptr;
    std::uint32_t outstanding = 0;
};

traffic_generator::traffic_generator(const scenario& s, const std::vector<nic::nic_node*>& nics)
    : _scenario(s), _memory(s.message_bytes) {
    for (nic::nic_node* n : nics) {
        auto h = std::make_unique<host>();
        h->nic = n;
        // With a doorbell queue, as every program the daemon serves has, the NIC looks only at the
        // QPs rung or due; without one it would look at every QP of the context at every poll.
        nic::shared_region doorbells = make_region(hw::doorbell_queue_region_size);
        h->doorbells = static_cast<hw::doorbell_queue*>(doorbells.base());
        h->context = n->open_context(host_memory(s.copy_payloads), -1, std::move(doorbells));
        check(n->alloc_pd(h->context, h->pd), "alloc_pd");
        const auto address = reinterpret_cast<std::uint64_t>(_memory.data());
        check(n->reg_mr(h->context, h->pd, address, _memory.size(), address,
                        IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE, h->mr, h->lkey, h->rkey),
              "reg_mr");
        _hosts.push_back(std::move(h));
    }
    for (const flow_spec& f : s.flows) {
        host& from = *_hosts[f.source];
        host& to = *_hosts[f.destination];
        auto c = std::make_unique<connection>();
        auto make_cq = [&](host& h, std::uint32_t& handle, hw::cq_control** control, hw::cqe** slots) {
            nic::shared_region region = make_region(hw::cq_region_size(queue_slots));
            if (control) *control = static_cast<hw::cq_control*>(region.base());
            if (slots) *slots = reinterpret_cast<hw::cqe*>(static_cast<char*>(region.base()) + hw::cq_slots_offset);
            check(h.nic->create_cq(h.context, queue_slots, 0, std::move(region), handle), "create_cq");
        };
        make_cq(from, c->send_cq, &c->cq_control, &c->cqes);
        make_cq(from, c->recv_cq_sender, nullptr, nullptr);
        make_cq(to, c->send_cq_receiver, nullptr, nullptr);
        make_cq(to, c->recv_cq_receiver, nullptr, nullptr);
        auto make_qp = [&](host& h, std::uint32_t scq, std::uint32_t rcq, std::uint32_t& handle, std::uint32_t& qpn,
                           connection* mapped) {
            ibv_qp_cap cap{};
            cap.max_send_wr = queue_slots;
            cap.max_recv_wr = 1;
            cap.max_send_sge = 1;
            cap.max_recv_sge = 1;
            ibv_qp_cap granted;
            std::uint32_t send_slots, recv_slots;
            check(nic::nic_node::qp_geometry(cap, granted, send_slots, recv_slots), "qp_geometry");
            nic::shared_region region = make_region(hw::qp_region_size(send_slots, recv_slots));
            if (mapped) {
                mapped->qp_control = static_cast<hw::qp_control*>(region.base());
                mapped->sq =
                    reinterpret_cast<hw::send_wqe*>(static_cast<char*>(region.base()) + hw::qp_send_slots_offset);
            }
            const nic::nic_node::qp_request request{h.pd, scq, rcq, IBV_QPT_RC, false, cap};
            check(h.nic->create_qp(h.context, request, std::move(region), handle, qpn, granted), "create_qp");
        };
        make_qp(from, c->send_cq, c->recv_cq_sender, c->qp_sender, c->qpn_sender, c.get());
        make_qp(to, c->send_cq_receiver, c->recv_cq_receiver, c->qp_receiver, c->qpn_receiver, nullptr);

        // INIT, RTR, RTS on both sides, as ib_write_bw does after exchanging QP numbers.
        auto connect = [&](host& self, std::uint32_t qp, const host& peer, std::uint32_t peer_qpn) {
            ibv_qp_attr attr{};
            attr.qp_state = IBV_QPS_INIT;
            attr.port_num = 1;
            attr.qp_access_flags = IBV_ACCESS_REMOTE_WRITE;
            check(self.nic->modify_qp(self.context, qp, attr,
                                      IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS, 0),
                  "modify_qp INIT");
            attr = {};
            attr.qp_state = IBV_QPS_RTR;
            attr.path_mtu = std::min(self.nic->port_attributes().active_mtu, peer.nic->port_attributes().active_mtu);
            attr.dest_qp_num = peer_qpn;
            attr.rq_psn = 0;
            attr.max_dest_rd_atomic = 1;
            attr.min_rnr_timer = 1;
            attr.ah_attr.is_global = 1;
            attr.ah_attr.port_num = 1;
            attr.ah_attr.grh.hop_limit = 64;
            attr.ah_attr.grh.sgid_index = 1;
            std::memcpy(attr.ah_attr.grh.dgid.raw, peer.nic->gid(1).bytes.data(), 16);
            check(self.nic->modify_qp(self.context, qp, attr,
                                      IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                                          IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER,
                                      0),
                  "modify_qp RTR");
            attr = {};
            attr.qp_state = IBV_QPS_RTS;
            attr.timeout = 14;
            attr.retry_cnt = 7;
            attr.rnr_retry = 7;
            attr.sq_psn = 0;
            attr.max_rd_atomic = 1;
            check(self.nic->modify_qp(self.context, qp, attr,
                                      IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                                          IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC,
                                      0),
                  "modify_qp RTS");
        };
        connect(from, c->qp_sender, to, c->qpn_receiver);
        connect(to, c->qp_receiver, from, c->qpn_sender);
        const ibv_mtu mtu = std::min(from.nic->port_attributes().active_mtu, to.nic->port_attributes().active_mtu);
        _flows.push_back({&f, from.nic, to.nic, c->qpn_sender, 128u << mtu});
        _connections.push_back(std::move(c));
    }
    std::vector<std::size_t> order(_flows.size());
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(),
                     [this](std::size_t a, std::size_t b) { return _flows[a].spec->start < _flows[b].spec->start; });
    std::vector<bool> sends(_hosts.size(), false);
    for (const flow_spec& f : s.flows) sends[f.source] = true;
    std::vector<traffic_host*> by_host(_hosts.size(), nullptr);
    for (std::size_t h = 0; h < sends.size(); ++h) {
        if (!sends[h]) continue;
        _host_nodes.push_back(std::make_unique<traffic_host>(*this, h, "traffic:" + s.topology.hosts[h].name));
        by_host[h] = _host_nodes.back().get();
    }
    for (const std::size_t i : order) by_host[_flows[i].spec->source]->_order.push_back(i);
}

traffic_generator::~traffic_generator() = default;

void traffic_generator::post_writes(std::size_t i) {
    flow_state& f = _flows[i];
    connection& c = *_connections[i];
    const host& from = *_hosts[f.spec->source];
    const host& to = *_hosts[f.spec->destination];
    auto& ring = c.qp_control->send;
    const std::uint32_t posted = ring.producer.load(std::memory_order_relaxed);
    while (c.outstanding < outstanding_writes && f.bytes_posted < f.spec->bytes) {
        const auto length = static_cast<std::uint32_t>(
            std::min<std::uint64_t>(_scenario.message_bytes, f.spec->bytes - f.bytes_posted));
        const std::uint32_t p = ring.producer.load(std::memory_order_relaxed);
        hw::send_wqe& w = c.sq[p & (ring.size - 1)];
        std::memset(&w, 0, sizeof w);
        w.wr_id = length;
        w.opcode = IBV_WR_RDMA_WRITE;
        w.flags = hw::wqe_flag::signaled;
        w.num_sge = 1;
        w.sg_list[0] = {reinterpret_cast<std::uint64_t>(_memory.data()), length, from.lkey};
        w.remote_address = reinterpret_cast<std::uint64_t>(_memory.data());
        w.rkey = to.rkey;
        ring.producer.store(p + 1, std::memory_order_release);
        f.bytes_posted += length;
        ++c.outstanding;
    }
    // hw_abi.hpp's doorbell handshake, as the verbs library does it (one thread: no lock).
    if (ring.producer.load(std::memory_order_relaxed) != posted && hw::claim_doorbell(*c.qp_control))
        hw::push_doorbell(*from.doorbells, c.qp_sender);
}

bool traffic_generator::serve(std::size_t i, sim_time now, bool& finished) {
    bool worked = false;
    flow_state& f = _flows[i];
    connection& c = *_connections[i];
    auto& ring = c.cq_control->ring;
    const std::uint32_t producer = ring.producer.load(std::memory_order_acquire);
    if (c.cq_consumed != producer) {
        for (; c.cq_consumed != producer; ++c.cq_consumed) {
            const hw::cqe& e = c.cqes[c.cq_consumed & (ring.size - 1)];
            if (e.status != IBV_WC_SUCCESS) f.failed = true;
            f.bytes_completed += e.wr_id; // the WRITE's length
            --c.outstanding;
        }
        ring.consumer.store(c.cq_consumed, std::memory_order_release);
        worked = true;
    }
    if (!f.failed) post_writes(i);
    finished = f.failed || f.bytes_completed >= f.spec->bytes;
    if (finished) {
        f.finished = now;
        ++_done;
    }
    return worked;
}

bool traffic_generator::has_completions(std::size_t i) const {
    const connection& c = *_connections[i];
    return c.cq_consumed != c.cq_control->ring.producer.load(std::memory_order_acquire);
}

traffic_host::traffic_host(traffic_generator& owner, std::size_t host, std::string name)
    : node(std::move(name), 0), _owner(owner), _host(host) {}

bool traffic_host::poll(sim_time now) {
    bool worked = false;
    while (_next_to_start < _order.size() && _owner._flows[_order[_next_to_start]].spec->start <= now) {
        const std::size_t i = _order[_next_to_start++];
        _running.push_back(i);
        _owner.post_writes(i);
        worked = true;
    }
    for (std::size_t k = 0; k < _running.size();) {
        bool finished = false;
        worked |= _owner.serve(_running[k], now, finished);
        if (finished) {
            _running[k] = _running.back();
            _running.pop_back();
            continue;
        }
        ++k;
    }
    return worked;
}

sim_time traffic_host::next_deadline() const {
    for (const std::size_t i : _running)
        if (_owner.has_completions(i)) return 0;
    return _next_to_start < _order.size() ? _owner._flows[_order[_next_to_start]].spec->start : never;
}

} // namespace rocefab::sim
