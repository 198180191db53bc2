// Two NICs connected back to back under virtual time: the layers of a fabric (two NICs and a
// cable), then hosts (context, PD, MR, CQs), then a connected RC QP pair. The test plays the
// verbs library: it writes WQEs into the shared rings and reads CQEs.
#pragma once

#include "dataplane/virtual_time_driver.hpp"
#include "dataplane/wiring.hpp"
#include "nic_emu/attach_protocol.hpp"
#include "nic_emu/nic_node.hpp"
#include "tests/support/eal_environment.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <numeric>
#include <unistd.h>
#include <vector>

namespace rocefab::nic::testing {

using rocefab::testing::test_pool;

inline std::uint32_t v4(std::uint8_t a, std::uint8_t b, std::uint8_t c, std::uint8_t d) {
    return std::uint32_t(a) << 24 | std::uint32_t(b) << 16 | std::uint32_t(c) << 8 | d;
}

inline nic_spec spec_for(const char* host, std::uint8_t index) {
    nic_spec s;
    s.host = host;
    s.name = "rfab0";
    s.mac.bytes = {0x02, 0x01, 0x00, index, 0x00, 0x01};
    s.address = wire::ipv6_address::v4_mapped(v4(10, 0, 0, index));
    s.ip_mtu = 4200;
    return s;
}

// The test's side of one host: what a verbs library would hold.
struct host_side {
    nic_node* nic = nullptr;
    std::uint32_t context = 0, pd = 0, send_cq = 0, recv_cq = 0, qp = 0, qpn = 0;
    hw::cq_control* send_cq_control = nullptr;
    hw::cqe* send_cqes = nullptr;
    hw::cq_control* recv_cq_control = nullptr;
    hw::cqe* recv_cqes = nullptr;
    hw::qp_control* qp_control = nullptr;
    hw::send_wqe* sq = nullptr;
    hw::recv_wqe* rq = nullptr;
    std::vector<std::uint8_t> memory = std::vector<std::uint8_t>(4 << 20);
    std::uint32_t mr_handle = 0, lkey = 0, rkey = 0;
    int async_read_fd = -1;                  // the context's async events (attach::async_event_record)
    hw::doorbell_queue* doorbells = nullptr; // with ROCEFAB_TEST_DOORBELLS=1: the context's doorbell queue
};

struct connection_options {
    ibv_mtu mtu = IBV_MTU_1024;
    std::uint8_t rnr_retry = 7;
    std::uint8_t retry_cnt = 7;
    std::uint8_t timeout = 14;
    int access = IBV_ACCESS_REMOTE_WRITE;
    std::uint8_t max_rd_atomic = 1;      // outstanding READ/atomic requests, as requester
    std::uint8_t max_dest_rd_atomic = 1; // responder resources
    // Added to the peer's QPN as each side's destination QP: packets then go to a QPN the peer
    // does not have.
    std::uint32_t dest_qpn_offset = 0;
};

class two_nics : public ::testing::Test {
protected:
    // Hooks for a derived fixture: change the NICs' specs, or put a node with two ports on the
    // cable (port 0 towards h1, port 1 towards h2; the links h1-middle and middle-h2 are then
    // the ones _a_to_b and _b_to_a name on h1's side).
    virtual void adjust(nic_spec&, nic_spec&) {}
    virtual node* middle() { return nullptr; }
    // The memory the NIC reaches a host's buffers through: the test's own, unless a fixture
    // wants writes to fail as they do when a program unmaps its buffer.
    virtual std::unique_ptr<address_space> memory_of(const host_side&) {
        return std::make_unique<local_address_space>();
    }

    // With ROCEFAB_TEST_ONE_NIC=1 (meson's *_loopback tests) both sides are contexts of the first
    // NIC, so every test of the suite runs again over the NIC's loopback, as rdma-core's tests
    // and MPI put both ends on one device. The second NIC then stays idle on the cable.
    virtual bool one_nic() const { return env_flag("ROCEFAB_TEST_ONE_NIC"); }

    // With ROCEFAB_TEST_DOORBELLS=1 (meson's nic_rc_with_doorbells) each context has a doorbell
    // queue, as every program's has under the daemon and the simulator, and the tests ring it
    // after each post (ring_doorbell): the NIC then learns of posted work from doorbells alone.
    // Without one it reads each listed QP's send ring at every look.
    static bool with_doorbells() { return env_flag("ROCEFAB_TEST_DOORBELLS"); }
    // Whether the environment variable `name` is 1.
    static bool env_flag(const char* name) {
        const char* v = std::getenv(name);
        return v && std::strcmp(v, "1") == 0;
    }

    void SetUp() override {
        ASSERT_NE(test_pool(), nullptr);
        // A NIC reaches its peer, and itself, at their MACs (the host's neighbour table).
        auto resolver_for = [](const nic_spec& self, const nic_spec& peer) {
            return [self, peer](const wire::ipv6_address& gid, wire::mac_address& mac) {
                if (gid == peer.address)
                    mac = peer.mac;
                else if (gid == self.address)
                    mac = self.mac;
                else
                    return false;
                return true;
            };
        };
        nic_spec s1 = spec_for("h1", 1), s2 = spec_for("h2", 2);
        adjust(s1, s2);
        _nic1 = std::make_unique<nic_node>(s1, resolver_for(s1, s2));
        _nic2 = std::make_unique<nic_node>(s2, resolver_for(s2, s1));
        const node_id a = _wiring.add_node(*_nic1), b = _wiring.add_node(*_nic2);
        link_model model{};
        model.speed_bps = 100'000'000'000;
        model.propagation_delay = microseconds(1);
        model.mtu = 4200;
        if (node* m = middle()) {
            const node_id mid = _wiring.add_node(*m);
            std::tie(_a_to_b, _b_to_a) = _wiring.connect(a, 0, mid, 0, model);
            _wiring.connect(mid, 1, b, 0, model);
        } else {
            std::tie(_a_to_b, _b_to_a) = _wiring.connect(a, 0, b, 0, model);
        }
        _wiring.attach_all(test_pool());
        _driver = std::make_unique<virtual_time_driver>(_wiring);
        make_host(h1, *_nic1);
        make_host(h2, one_nic() ? *_nic1 : *_nic2);
    }

    void TearDown() override {
        for (auto* h : {&h1, &h2})
            if (h->async_read_fd >= 0) ::close(h->async_read_fd);
    }

    void make_host(host_side& h, nic_node& nic) {
        h.nic = &nic;
        int events[2];
        ASSERT_EQ(::pipe2(events, O_CLOEXEC | O_NONBLOCK), 0);
        h.async_read_fd = events[0];
        shared_region doorbells;
        if (with_doorbells()) {
            int fd;
            ASSERT_TRUE(shared_region::create("test-doorbells", hw::doorbell_queue_region_size, doorbells, fd));
            ::close(fd);
            h.doorbells = static_cast<hw::doorbell_queue*>(doorbells.base());
        }
        h.context = nic.open_context(memory_of(h), events[1], std::move(doorbells));
        ASSERT_EQ(nic.alloc_pd(h.context, h.pd), 0);
        ASSERT_EQ(nic.reg_mr(h.context, h.pd, reinterpret_cast<std::uint64_t>(h.memory.data()), h.memory.size(),
                             reinterpret_cast<std::uint64_t>(h.memory.data()), static_cast<std::uint32_t>(_mr_access),
                             h.mr_handle, h.lkey, h.rkey),
                  0);
        auto make_cq = [&](std::uint32_t& handle, hw::cq_control*& control, hw::cqe*& slots) {
            shared_region region;
            int fd;
            ASSERT_TRUE(shared_region::create("test-cq", hw::cq_region_size(256), region, fd));
            ::close(fd);
            control = static_cast<hw::cq_control*>(region.base());
            slots = reinterpret_cast<hw::cqe*>(static_cast<char*>(region.base()) + hw::cq_slots_offset);
            ASSERT_EQ(nic.create_cq(h.context, 256, 0, std::move(region), handle), 0);
        };
        make_cq(h.send_cq, h.send_cq_control, h.send_cqes);
        make_cq(h.recv_cq, h.recv_cq_control, h.recv_cqes);
        ibv_qp_cap cap{};
        cap.max_send_wr = 64;
        cap.max_recv_wr = 64;
        cap.max_send_sge = 4;
        cap.max_recv_sge = 4;
        ibv_qp_cap granted;
        std::uint32_t send_slots, recv_slots;
        ASSERT_EQ(nic_node::qp_geometry(cap, granted, send_slots, recv_slots), 0);
        shared_region region;
        int fd;
        ASSERT_TRUE(shared_region::create("test-qp", hw::qp_region_size(send_slots, recv_slots), region, fd));
        ::close(fd);
        h.qp_control = static_cast<hw::qp_control*>(region.base());
        h.sq = reinterpret_cast<hw::send_wqe*>(static_cast<char*>(region.base()) + hw::qp_send_slots_offset);
        h.rq =
            reinterpret_cast<hw::recv_wqe*>(static_cast<char*>(region.base()) + hw::qp_recv_slots_offset(send_slots));
        nic_node::qp_request request{h.pd, h.send_cq, h.recv_cq, IBV_QPT_RC, false, cap};
        ASSERT_EQ(nic.create_qp(h.context, request, std::move(region), h.qp, h.qpn, granted), 0);
    }

    int to_init(host_side& h, int access) {
        ibv_qp_attr attr{};
        attr.qp_state = IBV_QPS_INIT;
        attr.pkey_index = 0;
        attr.port_num = 1;
        attr.qp_access_flags = static_cast<unsigned>(access);
        return h.nic->modify_qp(h.context, h.qp, attr,
                                IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS, now());
    }

    int to_rtr(host_side& h, const host_side& peer, const connection_options& o) {
        ibv_qp_attr attr{};
        attr.qp_state = IBV_QPS_RTR;
        attr.path_mtu = o.mtu;
        attr.dest_qp_num = (peer.qpn + o.dest_qpn_offset) & 0xffffff;
        attr.rq_psn = 1000;
        attr.max_dest_rd_atomic = o.max_dest_rd_atomic;
        attr.min_rnr_timer = 1; // 0.01 ms
        attr.ah_attr.is_global = 1;
        attr.ah_attr.port_num = 1;
        attr.ah_attr.grh.hop_limit = 64;
        attr.ah_attr.grh.sgid_index = 1;
        std::memcpy(attr.ah_attr.grh.dgid.raw, peer.nic->gid(1).bytes.data(), 16);
        return h.nic->modify_qp(h.context, h.qp, attr,
                                IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                                    IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER,
                                now());
    }

    int to_rts(host_side& h, const connection_options& o) {
        ibv_qp_attr attr{};
        attr.qp_state = IBV_QPS_RTS;
        attr.timeout = o.timeout;
        attr.retry_cnt = o.retry_cnt;
        attr.rnr_retry = o.rnr_retry;
        attr.sq_psn = 1000;
        attr.max_rd_atomic = o.max_rd_atomic;
        return h.nic->modify_qp(h.context, h.qp, attr,
                                IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
                                    IBV_QP_MAX_QP_RD_ATOMIC,
                                now());
    }

    void connect(const connection_options& o = {}) {
        ASSERT_EQ(to_init(h1, o.access), 0);
        ASSERT_EQ(to_init(h2, o.access), 0);
        ASSERT_EQ(to_rtr(h1, h2, o), 0);
        ASSERT_EQ(to_rtr(h2, h1, o), 0);
        ASSERT_EQ(to_rts(h1, o), 0);
        ASSERT_EQ(to_rts(h2, o), 0);
    }

    sim_time now() const { return _driver ? _driver->now() : 0; }

    static void post_recv(host_side& h, std::uint64_t wr_id, std::uint64_t offset, std::uint32_t length) {
        auto& ring = h.qp_control->recv;
        const std::uint32_t p = ring.producer.load();
        hw::recv_wqe& w = h.rq[p & (ring.size - 1)];
        w.wr_id = wr_id;
        w.num_sge = 1;
        w.sg_list[0] = {reinterpret_cast<std::uint64_t>(h.memory.data()) + offset, length, h.lkey};
        ring.producer.store(p + 1, std::memory_order_release);
    }

    static void post_send(host_side& h, std::uint64_t wr_id, ibv_wr_opcode opcode, std::uint64_t offset,
                          std::uint32_t length, std::uint64_t remote = 0, std::uint32_t rkey = 0,
                          std::uint32_t lkey_override = 0, std::uint32_t imm = 0) {
        auto& ring = h.qp_control->send;
        const std::uint32_t p = ring.producer.load();
        hw::send_wqe& w = h.sq[p & (ring.size - 1)];
        std::memset(&w, 0, sizeof w);
        w.wr_id = wr_id;
        w.opcode = static_cast<std::uint8_t>(opcode);
        w.flags = hw::wqe_flag::signaled;
        w.num_sge = 1;
        w.immediate = htobe32(imm);
        w.sg_list[0] = {reinterpret_cast<std::uint64_t>(h.memory.data()) + offset, length,
                        lkey_override ? lkey_override : h.lkey};
        w.remote_address = remote;
        w.rkey = rkey;
        ring.producer.store(p + 1, std::memory_order_release);
        ring_doorbell(h);
    }

    // After a post to h's send ring: the verbs library's doorbell (objects.hpp's notify_nic),
    // when the context has a doorbell queue.
    static void ring_doorbell(host_side& h) {
        if (h.doorbells && hw::claim_doorbell(*h.qp_control)) hw::push_doorbell(*h.doorbells, h.qp);
    }

    static std::vector<hw::cqe> poll(hw::cq_control* control, hw::cqe* slots) {
        std::vector<hw::cqe> out;
        auto& ring = control->ring;
        std::uint32_t c = ring.consumer.load();
        const std::uint32_t p = ring.producer.load(std::memory_order_acquire);
        for (; c != p; ++c) out.push_back(slots[c & (ring.size - 1)]);
        ring.consumer.store(c, std::memory_order_release);
        return out;
    }

    void run_for(sim_time span) { _driver->run_until(_driver->now() + span); }

    // The async events the host's context has raised since the last call.
    static std::vector<attach::async_event_record> async_events(const host_side& h) {
        std::vector<attach::async_event_record> out;
        attach::async_event_record r;
        while (::read(h.async_read_fd, &r, sizeof r) == sizeof r) out.push_back(r);
        return out;
    }

    static ibv_qp_state state_of(const host_side& h) {
        ibv_qp_attr attr{};
        ibv_qp_cap cap{};
        bool all = false;
        h.nic->query_qp(h.context, h.qp, attr, cap, all);
        return attr.qp_state;
    }

    int _mr_access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE; // set before SetUp to change
    wiring _wiring;
    std::unique_ptr<nic_node> _nic1, _nic2;
    std::unique_ptr<virtual_time_driver> _driver;
    link_id _a_to_b{}, _b_to_a{};
    host_side h1, h2;
};

inline void fill_pattern(std::vector<std::uint8_t>& memory, std::size_t offset, std::size_t length, std::uint8_t seed) {
    for (std::size_t i = 0; i < length; ++i) memory[offset + i] = static_cast<std::uint8_t>(seed + i * 7 + i / 251);
}

} // namespace rocefab::nic::testing
