// UC and UD queue pairs, address handles and shared receive queues between two NICs connected
// back to back, under virtual time. The fixture builds up in layers like rc_transport_test's:
// a cable and two NICs, then hosts (context, PD, MR, CQs), then QPs of the transport a test
// needs. The test plays the verbs library: it writes WQEs into the shared rings and reads CQEs.

#include "dataplane/virtual_time_driver.hpp"
#include "dataplane/wire/ip.hpp"
#include "dataplane/wiring.hpp"
#include "nic_emu/attach_protocol.hpp"
#include "nic_emu/nic_node.hpp"
#include "tests/support/eal_environment.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <fcntl.h>
#include <vector>

namespace rocefab::nic {
namespace {

using rocefab::testing::test_pool;

constexpr std::uint32_t test_qkey = 0x11111111;

nic_spec uc_ud_spec_for(const char* host, std::uint8_t index) {
    nic_spec s;
    s.host = host;
    s.name = "rfab0";
    s.mac.bytes = {0x02, 0x01, 0x00, index, 0x00, 0x01};
    s.address = wire::ipv6_address::v4_mapped(std::uint32_t(10) << 24 | index);
    s.ip_mtu = 1500; // active MTU 1024
    return s;
}

struct ring_qp {
    std::uint32_t handle = 0, qpn = 0;
    hw::qp_control* control = nullptr;
    hw::send_wqe* sq = nullptr;
    hw::recv_wqe* rq = nullptr;
};

struct ring_srq {
    std::uint32_t handle = 0;
    hw::srq_control* control = nullptr;
    hw::recv_wqe* slots = nullptr;
};

struct uc_ud_host {
    nic_node* nic = nullptr;
    std::uint32_t context = 0, pd = 0, send_cq = 0, recv_cq = 0;
    hw::cq_control* send_cq_control = nullptr;
    hw::cqe* send_cqes = nullptr;
    hw::cq_control* recv_cq_control = nullptr;
    hw::cqe* recv_cqes = nullptr;
    std::vector<std::uint8_t> memory = std::vector<std::uint8_t>(1 << 20);
    std::uint32_t mr_handle = 0, lkey = 0, rkey = 0;
    int async_read_fd = -1;
    std::uint64_t address(std::uint64_t offset) const {
        return reinterpret_cast<std::uint64_t>(memory.data()) + offset;
    }
};

struct send_options {
    std::uint64_t remote = 0;
    std::uint32_t rkey = 0;
    std::uint32_t imm = 0;
    std::uint32_t ah = 0, remote_qpn = 0, remote_qkey = test_qkey;
};

class uc_ud_srq : public ::testing::Test {
protected:
    void SetUp() override {
        ASSERT_NE(test_pool(), nullptr);
        auto resolver_to = [](const nic_spec& peer) {
            return [peer](const wire::ipv6_address& gid, wire::mac_address& mac) {
                // The peer's IPv4 address, or its link-local GID (fe80::, EUI-64 from its MAC).
                const auto& m = peer.mac.bytes;
                const bool link_local = gid.bytes[0] == 0xfe && gid.bytes[1] == 0x80 && gid.bytes[8] == (m[0] ^ 2) &&
                                        gid.bytes[13] == m[3] && gid.bytes[14] == m[4] && gid.bytes[15] == m[5];
                if (!(gid == peer.address) && !link_local) return false;
                mac = peer.mac;
                return true;
            };
        };
        const nic_spec s1 = uc_ud_spec_for("h1", 1), s2 = uc_ud_spec_for("h2", 2);
        _nic1 = std::make_unique<nic_node>(s1, resolver_to(s2));
        _nic2 = std::make_unique<nic_node>(s2, resolver_to(s1));
        const node_id a = _wiring.add_node(*_nic1), b = _wiring.add_node(*_nic2);
        link_model model{};
        model.speed_bps = 100'000'000'000;
        model.propagation_delay = microseconds(1);
        model.mtu = 1500;
        _wiring.connect(a, 0, b, 0, model);
        _wiring.attach_all(test_pool());
        _driver = std::make_unique<virtual_time_driver>(_wiring);
        make_host(h1, *_nic1);
        make_host(h2, *_nic2);
    }

    void TearDown() override {
        for (auto* h : {&h1, &h2})
            if (h->async_read_fd >= 0) ::close(h->async_read_fd);
    }

    void make_host(uc_ud_host& h, nic_node& nic) {
        h.nic = &nic;
        int fds[2];
        ASSERT_EQ(::pipe2(fds, O_CLOEXEC | O_NONBLOCK), 0);
        h.async_read_fd = fds[0];
        h.context = nic.open_context(std::make_unique<local_address_space>(), fds[1]);
        ASSERT_EQ(nic.alloc_pd(h.context, h.pd), 0);
        ASSERT_EQ(nic.reg_mr(h.context, h.pd, h.address(0), h.memory.size(), h.address(0),
                             IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE, h.mr_handle, h.lkey, h.rkey),
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
    }

    static ring_qp make_qp(uc_ud_host& h, ibv_qp_type type, std::uint32_t srq = 0) {
        ibv_qp_cap cap{};
        cap.max_send_wr = 64;
        cap.max_recv_wr = 64;
        cap.max_send_sge = 4;
        cap.max_recv_sge = 4;
        ibv_qp_cap granted;
        std::uint32_t send_slots, recv_slots;
        EXPECT_EQ(nic_node::qp_geometry(cap, granted, send_slots, recv_slots), 0);
        shared_region region;
        int fd;
        EXPECT_TRUE(shared_region::create("test-qp", hw::qp_region_size(send_slots, recv_slots), region, fd));
        ::close(fd);
        ring_qp q;
        q.control = static_cast<hw::qp_control*>(region.base());
        q.sq = reinterpret_cast<hw::send_wqe*>(static_cast<char*>(region.base()) + hw::qp_send_slots_offset);
        q.rq =
            reinterpret_cast<hw::recv_wqe*>(static_cast<char*>(region.base()) + hw::qp_recv_slots_offset(send_slots));
        nic_node::qp_request request{h.pd, h.send_cq, h.recv_cq, type, false, cap, srq};
        EXPECT_EQ(h.nic->create_qp(h.context, request, std::move(region), q.handle, q.qpn, granted), 0);
        return q;
    }

    static ring_srq make_srq(uc_ud_host& h, std::uint32_t max_wr) {
        ibv_srq_attr want{}, granted{};
        want.max_wr = max_wr;
        want.max_sge = 1;
        std::uint32_t slots = 0;
        EXPECT_EQ(nic_node::srq_geometry(want, granted, slots), 0);
        shared_region region;
        int fd;
        EXPECT_TRUE(shared_region::create("test-srq", hw::srq_region_size(slots), region, fd));
        ::close(fd);
        ring_srq s;
        s.control = static_cast<hw::srq_control*>(region.base());
        s.slots = reinterpret_cast<hw::recv_wqe*>(static_cast<char*>(region.base()) + hw::srq_slots_offset);
        EXPECT_EQ(h.nic->create_srq(h.context, h.pd, granted, slots, std::move(region), s.handle), 0);
        return s;
    }

    int modify(uc_ud_host& h, const ring_qp& q, ibv_qp_attr attr, int mask) {
        return h.nic->modify_qp(h.context, q.handle, attr, mask, now());
    }

    // GID index 1 is the IPv4-mapped address (RoCEv2 over IPv4), 0 the link-local one (IPv6).
    ibv_ah_attr address_of(const uc_ud_host& peer, std::uint8_t gid_index = 1) const {
        ibv_ah_attr ah{};
        ah.is_global = 1;
        ah.port_num = 1;
        ah.grh.hop_limit = 1;
        ah.grh.sgid_index = gid_index;
        std::memcpy(ah.grh.dgid.raw, peer.nic->gid(gid_index).bytes.data(), 16);
        return ah;
    }

    // RESET -> INIT -> RTR -> RTS with the attributes IBA 10.3.1 Table 93 asks of the transport.
    void bring_up(uc_ud_host& h, const ring_qp& q, ibv_qp_type type, const uc_ud_host* peer = nullptr,
                  const ring_qp* peer_qp = nullptr) {
        ibv_qp_attr a{};
        a.qp_state = IBV_QPS_INIT;
        a.port_num = 1;
        if (type == IBV_QPT_UD) {
            a.qkey = test_qkey;
            ASSERT_EQ(modify(h, q, a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY), 0);
            a = {};
            a.qp_state = IBV_QPS_RTR;
            ASSERT_EQ(modify(h, q, a, IBV_QP_STATE), 0);
        } else {
            a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE;
            ASSERT_EQ(modify(h, q, a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS), 0);
            a = {};
            a.qp_state = IBV_QPS_RTR;
            a.path_mtu = IBV_MTU_1024;
            a.dest_qp_num = peer_qp->qpn;
            a.rq_psn = 0;
            a.ah_attr = address_of(*peer);
            ASSERT_EQ(modify(h, q, a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN), 0);
        }
        a = {};
        a.qp_state = IBV_QPS_RTS;
        a.sq_psn = 0;
        ASSERT_EQ(modify(h, q, a, IBV_QP_STATE | IBV_QP_SQ_PSN), 0);
    }

    static void post_recv(hw::ring_header& ring, hw::recv_wqe* slots, uc_ud_host& h, std::uint64_t wr_id,
                          std::uint64_t offset, std::uint32_t length) {
        const std::uint32_t p = ring.producer.load();
        hw::recv_wqe& w = slots[p & (ring.size - 1)];
        w.wr_id = wr_id;
        w.num_sge = 1;
        w.sg_list[0] = {h.address(offset), length, h.lkey};
        ring.producer.store(p + 1, std::memory_order_release);
    }
    static void post_recv(uc_ud_host& h, ring_qp& q, std::uint64_t wr_id, std::uint64_t offset, std::uint32_t length) {
        post_recv(q.control->recv, q.rq, h, wr_id, offset, length);
    }
    static void post_srq_recv(uc_ud_host& h, ring_srq& s, std::uint64_t wr_id, std::uint64_t offset,
                              std::uint32_t length) {
        post_recv(s.control->recv, s.slots, h, wr_id, offset, length);
    }

    static void post_send(uc_ud_host& h, ring_qp& q, std::uint64_t wr_id, ibv_wr_opcode opcode, std::uint64_t offset,
                          std::uint32_t length, const send_options& o = {}) {
        auto& ring = q.control->send;
        const std::uint32_t p = ring.producer.load();
        hw::send_wqe& w = q.sq[p & (ring.size - 1)];
        std::memset(&w, 0, sizeof w);
        w.wr_id = wr_id;
        w.opcode = static_cast<std::uint8_t>(opcode);
        w.flags = hw::wqe_flag::signaled;
        w.num_sge = 1;
        w.immediate = htobe32(o.imm);
        w.sg_list[0] = {h.address(offset), length, h.lkey};
        w.remote_address = o.remote;
        w.rkey = o.rkey;
        w.ud_ah = o.ah;
        w.ud_remote_qpn = o.remote_qpn;
        w.ud_remote_qkey = o.remote_qkey;
        ring.producer.store(p + 1, std::memory_order_release);
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

    std::vector<rocefab::attach::async_event_record> async_events(uc_ud_host& h) {
        std::vector<rocefab::attach::async_event_record> out;
        rocefab::attach::async_event_record r;
        while (::read(h.async_read_fd, &r, sizeof r) == sizeof r) out.push_back(r);
        return out;
    }

    // A UC packet from h1's QP to h2's, built by hand so a test can leave one out.
    void inject_uc(const ring_qp& from, const ring_qp& to, wire::ib_opcode opcode, std::uint32_t psn,
                   const std::uint8_t* payload, std::size_t length) {
        wire::roce_headers_spec spec;
        spec.source_mac = h1.nic->spec().mac;
        spec.destination_mac = h2.nic->spec().mac;
        spec.source_gid = h1.nic->gid(1);
        spec.destination_gid = h2.nic->gid(1);
        spec.opcode = wire::to_byte(opcode);
        spec.dest_qpn = to.qpn;
        spec.psn = psn;
        (void)from;
        const std::size_t frame_length = wire::roce_frame_length(spec, length);
        rte_mbuf* m = rte_pktmbuf_alloc(test_pool());
        ASSERT_NE(m, nullptr);
        auto* data = reinterpret_cast<std::uint8_t*>(
            rte_pktmbuf_append(m, static_cast<std::uint16_t>(std::max(frame_length, wire::ethernet_min_frame_length))));
        std::memset(data, 0, std::max(frame_length, wire::ethernet_min_frame_length));
        const std::size_t header = wire::write_roce_headers(data, spec, length);
        std::memcpy(data + header, payload, length);
        wire::seal_roce_frame(data, frame_length);
        h2.nic->receive(0, m, now());
        h2.nic->poll(now()); // as the driver does after a receive: staged writes are made
    }

    sim_time now() const { return _driver ? _driver->now() : 0; }
    void run_for(sim_time span) { _driver->run_until(_driver->now() + span); }

    wiring _wiring;
    std::unique_ptr<nic_node> _nic1, _nic2;
    std::unique_ptr<virtual_time_driver> _driver;
    uc_ud_host h1, h2;
};

void fill_pattern(std::vector<std::uint8_t>& memory, std::size_t offset, std::size_t length, std::uint8_t seed) {
    for (std::size_t i = 0; i < length; ++i) memory[offset + i] = static_cast<std::uint8_t>(seed + i * 7 + i / 251);
}

// ---- UC ------------------------------------------------------------------------------------------

TEST_F(uc_ud_srq, uc_send_and_rdma_write_arrive_without_any_acknowledgement) {
    ring_qp a = make_qp(h1, IBV_QPT_UC), b = make_qp(h2, IBV_QPT_UC);
    bring_up(h1, a, IBV_QPT_UC, &h2, &b);
    bring_up(h2, b, IBV_QPT_UC, &h1, &a);

    fill_pattern(h1.memory, 0, 5000, 1);
    post_recv(h2, b, 10, 0x10000, 8192);
    post_send(h1, a, 1, IBV_WR_SEND, 0, 5000); // five packets at MTU 1024
    run_for(milliseconds(1));
    auto sends = poll(h1.send_cq_control, h1.send_cqes);
    auto recvs = poll(h2.recv_cq_control, h2.recv_cqes);
    ASSERT_EQ(sends.size(), 1u);
    EXPECT_EQ(sends[0].status, IBV_WC_SUCCESS);
    EXPECT_EQ(sends[0].opcode, IBV_WC_SEND);
    ASSERT_EQ(recvs.size(), 1u);
    EXPECT_EQ(recvs[0].wr_id, 10u);
    EXPECT_EQ(recvs[0].byte_len, 5000u);
    EXPECT_EQ(recvs[0].src_qp, a.qpn);
    EXPECT_TRUE(std::equal(h1.memory.begin(), h1.memory.begin() + 5000, h2.memory.begin() + 0x10000));

    fill_pattern(h1.memory, 0x1000, 3000, 2);
    post_send(h1, a, 2, IBV_WR_RDMA_WRITE, 0x1000, 3000, {.remote = h2.address(0x20000), .rkey = h2.rkey});
    post_recv(h2, b, 11, 0x30000, 16);
    post_send(h1, a, 3, IBV_WR_RDMA_WRITE_WITH_IMM, 0x1000, 100,
              {.remote = h2.address(0x40000), .rkey = h2.rkey, .imm = 0xfeed});
    run_for(milliseconds(1));
    sends = poll(h1.send_cq_control, h1.send_cqes);
    recvs = poll(h2.recv_cq_control, h2.recv_cqes);
    ASSERT_EQ(sends.size(), 2u);
    EXPECT_EQ(sends[0].opcode, IBV_WC_RDMA_WRITE);
    EXPECT_EQ(sends[1].status, IBV_WC_SUCCESS);
    EXPECT_TRUE(std::equal(h1.memory.begin() + 0x1000, h1.memory.begin() + 0x1000 + 3000, h2.memory.begin() + 0x20000));
    ASSERT_EQ(recvs.size(), 1u);
    EXPECT_EQ(recvs[0].wr_id, 11u);
    EXPECT_EQ(recvs[0].opcode, IBV_WC_RECV_RDMA_WITH_IMM);
    EXPECT_EQ(be32toh(recvs[0].immediate), 0xfeedu);
    EXPECT_EQ(recvs[0].byte_len, 100u);
    EXPECT_EQ(h2.nic->counters().acks_sent + h2.nic->counters().naks_sent, 0u);
    EXPECT_EQ(h1.nic->counters().port_rcv_packets, 0u); // nothing ever comes back
}

TEST_F(uc_ud_srq, a_uc_psn_gap_drops_the_message_in_progress_and_later_messages_arrive) {
    ring_qp a = make_qp(h1, IBV_QPT_UC), b = make_qp(h2, IBV_QPT_UC);
    bring_up(h1, a, IBV_QPT_UC, &h2, &b);
    bring_up(h2, b, IBV_QPT_UC, &h1, &a);
    post_recv(h2, b, 20, 0, 4096);
    post_recv(h2, b, 21, 4096, 4096);
    std::vector<std::uint8_t> mtu_of(1024, 0xab), tail(100, 0xcd);
    using wire::ib_opcode;
    inject_uc(a, b, ib_opcode::uc_send_first, 0, mtu_of.data(), 1024);
    // PSN 1 (a MIDDLE) is lost.
    inject_uc(a, b, ib_opcode::uc_send_middle, 2, mtu_of.data(), 1024);
    inject_uc(a, b, ib_opcode::uc_send_last, 3, tail.data(), 100);
    run_for(microseconds(10));
    EXPECT_TRUE(poll(h2.recv_cq_control, h2.recv_cqes).empty());
    EXPECT_EQ(h2.nic->counters().out_of_sequence, 1u);
    EXPECT_EQ(h2.nic->counters().uc_dropped_packets, 2u);

    // The next message arrives, into the receive WQE the broken one had taken.
    inject_uc(a, b, ib_opcode::uc_send_only, 4, tail.data(), 100);
    run_for(microseconds(10));
    auto recvs = poll(h2.recv_cq_control, h2.recv_cqes);
    ASSERT_EQ(recvs.size(), 1u);
    EXPECT_EQ(recvs[0].status, IBV_WC_SUCCESS);
    EXPECT_EQ(recvs[0].wr_id, 20u);
    EXPECT_EQ(recvs[0].byte_len, 100u);
    EXPECT_EQ(h2.memory[0], 0xcd);

    // And the real requester still reaches it after the resynchronisation.
    fill_pattern(h1.memory, 0, 3000, 5);
    post_send(h1, a, 1, IBV_WR_SEND, 0, 3000);
    run_for(milliseconds(1));
    recvs = poll(h2.recv_cq_control, h2.recv_cqes);
    ASSERT_EQ(recvs.size(), 1u);
    EXPECT_EQ(recvs[0].wr_id, 21u);
    EXPECT_EQ(recvs[0].byte_len, 3000u);
    EXPECT_TRUE(std::equal(h1.memory.begin(), h1.memory.begin() + 3000, h2.memory.begin() + 4096));
}

TEST_F(uc_ud_srq, a_uc_send_without_a_receive_is_dropped_not_retried) {
    ring_qp a = make_qp(h1, IBV_QPT_UC), b = make_qp(h2, IBV_QPT_UC);
    bring_up(h1, a, IBV_QPT_UC, &h2, &b);
    bring_up(h2, b, IBV_QPT_UC, &h1, &a);
    post_send(h1, a, 1, IBV_WR_SEND, 0, 2000);
    run_for(milliseconds(1));
    const auto sends = poll(h1.send_cq_control, h1.send_cqes);
    ASSERT_EQ(sends.size(), 1u);
    EXPECT_EQ(sends[0].status, IBV_WC_SUCCESS); // complete once sent: UC knows nothing more
    EXPECT_EQ(h2.nic->counters().out_of_buffer, 1u);
    EXPECT_EQ(h2.nic->counters().rnr_nak_sent, 0u);
}

// ---- UD ------------------------------------------------------------------------------------------

TEST_F(uc_ud_srq, ud_send_lands_after_a_grh_with_the_source_qp_and_immediate) {
    ring_qp a = make_qp(h1, IBV_QPT_UD), b = make_qp(h2, IBV_QPT_UD);
    bring_up(h1, a, IBV_QPT_UD);
    bring_up(h2, b, IBV_QPT_UD);
    std::uint32_t ah = 0;
    ASSERT_EQ(h1.nic->create_ah(h1.context, h1.pd, address_of(h2), ah), 0);

    fill_pattern(h1.memory, 0, 1000, 3);
    post_recv(h2, b, 30, 0, 40 + 1024);
    post_send(h1, a, 1, IBV_WR_SEND_WITH_IMM, 0, 1000, {.imm = 0x1234, .ah = ah, .remote_qpn = b.qpn});
    run_for(milliseconds(1));
    const auto sends = poll(h1.send_cq_control, h1.send_cqes);
    const auto recvs = poll(h2.recv_cq_control, h2.recv_cqes);
    ASSERT_EQ(sends.size(), 1u);
    EXPECT_EQ(sends[0].status, IBV_WC_SUCCESS);
    ASSERT_EQ(recvs.size(), 1u);
    EXPECT_EQ(recvs[0].status, IBV_WC_SUCCESS);
    EXPECT_EQ(recvs[0].byte_len, 1040u);
    EXPECT_EQ(recvs[0].src_qp, a.qpn);
    EXPECT_EQ(recvs[0].qp_num, b.qpn);
    EXPECT_EQ(recvs[0].wc_flags, unsigned(IBV_WC_GRH | IBV_WC_WITH_IMM));
    EXPECT_EQ(recvs[0].sl, 0x8 | 0x2); // as a ConnectX's CQE says: has a UDP header, IPv4
    EXPECT_EQ(be32toh(recvs[0].immediate), 0x1234u);
    // RoCEv2 over IPv4: 20 unused bytes, then the IPv4 header from 10.0.0.1 to 10.0.0.2.
    EXPECT_TRUE(std::all_of(h2.memory.begin(), h2.memory.begin() + 20, [](auto v) { return v == 0; }));
    const auto* ip = reinterpret_cast<const wire::ipv4_header*>(h2.memory.data() + 20);
    EXPECT_EQ(ip->version(), 4);
    EXPECT_EQ(ip->source.load(), (10u << 24) | 1);
    EXPECT_EQ(ip->destination.load(), (10u << 24) | 2);
    EXPECT_TRUE(std::equal(h1.memory.begin(), h1.memory.begin() + 1000, h2.memory.begin() + 40));
}

TEST_F(uc_ud_srq, over_ipv6_the_grh_area_holds_the_ipv6_header) {
    ring_qp a = make_qp(h1, IBV_QPT_UD), b = make_qp(h2, IBV_QPT_UD);
    bring_up(h1, a, IBV_QPT_UD);
    bring_up(h2, b, IBV_QPT_UD);
    std::uint32_t ah = 0;
    ibv_ah_attr attr = address_of(h2, 0);
    attr.grh.traffic_class = 26 << 2;
    attr.grh.flow_label = 0x12345;
    ASSERT_EQ(h1.nic->create_ah(h1.context, h1.pd, attr, ah), 0);
    fill_pattern(h1.memory, 0, 333, 4);
    post_recv(h2, b, 40, 0, 1024);
    post_send(h1, a, 1, IBV_WR_SEND, 0, 333, {.ah = ah, .remote_qpn = b.qpn});
    run_for(milliseconds(1));
    const auto recvs = poll(h2.recv_cq_control, h2.recv_cqes);
    ASSERT_EQ(recvs.size(), 1u);
    EXPECT_EQ(recvs[0].byte_len, 40u + 333u);
    EXPECT_EQ(recvs[0].wc_flags, unsigned(IBV_WC_GRH));
    EXPECT_EQ(recvs[0].sl, 0x8 | 0x1); // has a UDP header, IPv6
    const auto* ip = reinterpret_cast<const wire::ipv6_header*>(h2.memory.data());
    EXPECT_EQ(ip->version(), 6);
    EXPECT_EQ(ip->dscp(), 26);
    EXPECT_EQ(ip->flow_label(), 0x12345u);
    EXPECT_TRUE(ip->source == h1.nic->gid(0));
    EXPECT_TRUE(ip->destination == h2.nic->gid(0));
    EXPECT_TRUE(std::equal(h1.memory.begin(), h1.memory.begin() + 333, h2.memory.begin() + 40));
}

TEST_F(uc_ud_srq, a_ud_receive_buffer_without_room_for_grh_and_payload_completes_with_a_length_error) {
    ring_qp a = make_qp(h1, IBV_QPT_UD), b = make_qp(h2, IBV_QPT_UD);
    bring_up(h1, a, IBV_QPT_UD);
    bring_up(h2, b, IBV_QPT_UD);
    std::uint32_t ah = 0;
    ASSERT_EQ(h1.nic->create_ah(h1.context, h1.pd, address_of(h2), ah), 0);
    post_recv(h2, b, 50, 0, 100); // 40 + 100 do not fit
    post_recv(h2, b, 51, 4096, 140);
    post_send(h1, a, 1, IBV_WR_SEND, 0, 100, {.ah = ah, .remote_qpn = b.qpn});
    post_send(h1, a, 2, IBV_WR_SEND, 0, 100, {.ah = ah, .remote_qpn = b.qpn});
    run_for(milliseconds(1));
    const auto recvs = poll(h2.recv_cq_control, h2.recv_cqes);
    ASSERT_EQ(recvs.size(), 2u);
    EXPECT_EQ(recvs[0].status, IBV_WC_LOC_LEN_ERR);
    EXPECT_EQ(recvs[1].status, IBV_WC_SUCCESS); // the QP goes on receiving
    EXPECT_EQ(recvs[1].byte_len, 140u);
}

TEST_F(uc_ud_srq, a_ud_datagram_with_the_wrong_qkey_is_dropped_and_counted) {
    ring_qp a = make_qp(h1, IBV_QPT_UD), b = make_qp(h2, IBV_QPT_UD);
    bring_up(h1, a, IBV_QPT_UD);
    bring_up(h2, b, IBV_QPT_UD);
    std::uint32_t ah = 0;
    ASSERT_EQ(h1.nic->create_ah(h1.context, h1.pd, address_of(h2), ah), 0);
    post_recv(h2, b, 30, 0, 2048);
    post_send(h1, a, 1, IBV_WR_SEND, 0, 64, {.ah = ah, .remote_qpn = b.qpn, .remote_qkey = test_qkey + 1});
    run_for(milliseconds(1));
    EXPECT_TRUE(poll(h2.recv_cq_control, h2.recv_cqes).empty());
    EXPECT_EQ(h2.nic->counters().qkey_violations, 1u);
    // A WR Q_Key with the high bit set stands for the QP's own Q_Key (IBA 10.2.5).
    post_send(h1, a, 2, IBV_WR_SEND, 0, 64, {.ah = ah, .remote_qpn = b.qpn, .remote_qkey = 0x80000000u});
    run_for(milliseconds(1));
    EXPECT_EQ(poll(h2.recv_cq_control, h2.recv_cqes).size(), 1u);
}

TEST_F(uc_ud_srq, a_ud_send_longer_than_the_mtu_completes_with_a_length_error) {
    ring_qp a = make_qp(h1, IBV_QPT_UD), b = make_qp(h2, IBV_QPT_UD);
    bring_up(h1, a, IBV_QPT_UD);
    bring_up(h2, b, IBV_QPT_UD);
    std::uint32_t ah = 0;
    ASSERT_EQ(h1.nic->create_ah(h1.context, h1.pd, address_of(h2), ah), 0);
    post_recv(h2, b, 30, 0, 4096);
    post_send(h1, a, 1, IBV_WR_SEND, 0, 1025, {.ah = ah, .remote_qpn = b.qpn}); // active MTU 1024
    run_for(milliseconds(1));
    const auto sends = poll(h1.send_cq_control, h1.send_cqes);
    ASSERT_EQ(sends.size(), 1u);
    EXPECT_EQ(sends[0].status, IBV_WC_LOC_LEN_ERR);
    EXPECT_EQ(h1.nic->counters().ud_send_too_long, 1u);
    EXPECT_EQ(h1.nic->counters().port_xmit_packets, 0u);
    EXPECT_TRUE(poll(h2.recv_cq_control, h2.recv_cqes).empty());
}

// IBA 10.3.1: on UD (and UC) a failed send WQE takes the QP to SQE, not ERR. The WQE reports
// its error, the ones posted after it are flushed, receives go on, and SQE -> RTS resumes sending.
TEST_F(uc_ud_srq, a_failed_ud_send_stops_only_the_send_queue_until_the_qp_returns_to_rts) {
    ring_qp a = make_qp(h1, IBV_QPT_UD), b = make_qp(h2, IBV_QPT_UD);
    bring_up(h1, a, IBV_QPT_UD);
    bring_up(h2, b, IBV_QPT_UD);
    std::uint32_t ah_to_h2 = 0, ah_to_h1 = 0;
    ASSERT_EQ(h1.nic->create_ah(h1.context, h1.pd, address_of(h2), ah_to_h2), 0);
    ASSERT_EQ(h2.nic->create_ah(h2.context, h2.pd, address_of(h1), ah_to_h1), 0);
    for (std::uint64_t r = 0; r < 4; ++r) post_recv(h2, b, 30 + r, r * 2048, 2048);
    post_recv(h1, a, 40, 0, 2048);

    post_send(h1, a, 1, IBV_WR_SEND, 0, 64, {.ah = ah_to_h2, .remote_qpn = b.qpn});
    post_send(h1, a, 2, IBV_WR_SEND, 0, 2000, {.ah = ah_to_h2, .remote_qpn = b.qpn}); // over the MTU
    post_send(h1, a, 3, IBV_WR_SEND, 0, 64, {.ah = ah_to_h2, .remote_qpn = b.qpn});
    run_for(milliseconds(1));
    auto sends = poll(h1.send_cq_control, h1.send_cqes);
    ASSERT_EQ(sends.size(), 3u);
    EXPECT_EQ(sends[0].status, IBV_WC_SUCCESS);
    EXPECT_EQ(sends[1].status, IBV_WC_LOC_LEN_ERR);
    EXPECT_EQ(sends[2].status, IBV_WC_WR_FLUSH_ERR);
    EXPECT_EQ(h1.nic->find_qp_by_number(a.qpn)->state, IBV_QPS_SQE);
    EXPECT_EQ(poll(h2.recv_cq_control, h2.recv_cqes).size(), 1u);
    EXPECT_TRUE(async_events(h1).empty()); // the error completion is the report

    // The receive queue still works in SQE.
    post_send(h2, b, 9, IBV_WR_SEND, 0, 100, {.ah = ah_to_h1, .remote_qpn = a.qpn});
    run_for(milliseconds(1));
    const auto received = poll(h1.recv_cq_control, h1.recv_cqes);
    ASSERT_EQ(received.size(), 1u);
    EXPECT_EQ(received[0].status, IBV_WC_SUCCESS);

    // SQE -> RTS (IBA 10.3.1 Table 93), and sending works again.
    ibv_qp_attr attr{};
    attr.qp_state = IBV_QPS_RTS;
    attr.cur_qp_state = IBV_QPS_SQE;
    ASSERT_EQ(modify(h1, a, attr, IBV_QP_STATE | IBV_QP_CUR_STATE), 0);
    post_send(h1, a, 4, IBV_WR_SEND, 0, 64, {.ah = ah_to_h2, .remote_qpn = b.qpn});
    run_for(milliseconds(1));
    sends = poll(h1.send_cq_control, h1.send_cqes);
    ASSERT_EQ(sends.size(), 1u);
    EXPECT_EQ(sends[0].wr_id, 4u);
    EXPECT_EQ(sends[0].status, IBV_WC_SUCCESS);
    EXPECT_EQ(poll(h2.recv_cq_control, h2.recv_cqes).size(), 1u);
}

// IBA 10.3.1 (SQ Drain): in SQD the QP finishes what it started, starts nothing new, reports
// IBV_EVENT_SQ_DRAINED when asked to, and sends again once back in RTS.
TEST_F(uc_ud_srq, sqd_drains_the_send_queue_reports_it_and_holds_new_work_until_rts) {
    ring_qp a = make_qp(h1, IBV_QPT_UD), b = make_qp(h2, IBV_QPT_UD);
    bring_up(h1, a, IBV_QPT_UD);
    bring_up(h2, b, IBV_QPT_UD);
    std::uint32_t ah = 0;
    ASSERT_EQ(h1.nic->create_ah(h1.context, h1.pd, address_of(h2), ah), 0);
    for (std::uint64_t r = 0; r < 3; ++r) post_recv(h2, b, 30 + r, r * 2048, 2048);
    post_send(h1, a, 1, IBV_WR_SEND, 0, 64, {.ah = ah, .remote_qpn = b.qpn});
    run_for(microseconds(5));
    ASSERT_EQ(poll(h1.send_cq_control, h1.send_cqes).size(), 1u);

    ibv_qp_attr attr{};
    attr.qp_state = IBV_QPS_SQD;
    attr.en_sqd_async_notify = 1;
    ASSERT_EQ(modify(h1, a, attr, IBV_QP_STATE | IBV_QP_EN_SQD_ASYNC_NOTIFY), 0);
    post_send(h1, a, 2, IBV_WR_SEND, 0, 64, {.ah = ah, .remote_qpn = b.qpn});
    run_for(milliseconds(1));
    const auto events = async_events(h1);
    ASSERT_EQ(events.size(), 1u);
    EXPECT_EQ(events[0].event_type, unsigned(IBV_EVENT_SQ_DRAINED));
    EXPECT_EQ(events[0].handle, a.handle);
    EXPECT_TRUE(poll(h1.send_cq_control, h1.send_cqes).empty()); // posted in SQD: not started
    EXPECT_EQ(poll(h2.recv_cq_control, h2.recv_cqes).size(), 1u);

    attr = {};
    attr.qp_state = IBV_QPS_RTS;
    ASSERT_EQ(modify(h1, a, attr, IBV_QP_STATE), 0);
    run_for(milliseconds(1));
    const auto sends = poll(h1.send_cq_control, h1.send_cqes);
    ASSERT_EQ(sends.size(), 1u);
    EXPECT_EQ(sends[0].wr_id, 2u);
    EXPECT_EQ(poll(h2.recv_cq_control, h2.recv_cqes).size(), 1u);
    EXPECT_TRUE(async_events(h1).empty()); // one event per drain
}

TEST_F(uc_ud_srq, an_address_handle_needs_a_grh_and_a_reachable_gid) {
    ibv_ah_attr attr = address_of(h2);
    std::uint32_t ah = 0;
    attr.is_global = 0;
    EXPECT_EQ(h1.nic->create_ah(h1.context, h1.pd, attr, ah), EINVAL);
    attr = address_of(h2);
    attr.grh.sgid_index = 2;
    EXPECT_EQ(h1.nic->create_ah(h1.context, h1.pd, attr, ah), EINVAL);
    attr = address_of(h2);
    attr.grh.dgid.raw[15] = 99; // 10.0.0.99: nobody
    EXPECT_EQ(h1.nic->create_ah(h1.context, h1.pd, attr, ah), EHOSTUNREACH);
    ASSERT_EQ(h1.nic->create_ah(h1.context, h1.pd, address_of(h2), ah), 0);
    EXPECT_EQ(h1.nic->dealloc_pd(h1.context, h1.pd), EBUSY);
    EXPECT_EQ(h1.nic->destroy_ah(h1.context, ah), 0);
}

// ---- SRQ -----------------------------------------------------------------------------------------

TEST_F(uc_ud_srq, two_qps_take_their_receives_from_one_shared_queue) {
    ring_srq srq = make_srq(h2, 16);
    ring_qp a1 = make_qp(h1, IBV_QPT_UC), a2 = make_qp(h1, IBV_QPT_UC);
    ring_qp b1 = make_qp(h2, IBV_QPT_UC, srq.handle), b2 = make_qp(h2, IBV_QPT_UC, srq.handle);
    bring_up(h1, a1, IBV_QPT_UC, &h2, &b1);
    bring_up(h1, a2, IBV_QPT_UC, &h2, &b2);
    bring_up(h2, b1, IBV_QPT_UC, &h1, &a1);
    bring_up(h2, b2, IBV_QPT_UC, &h1, &a2);
    for (std::uint64_t i = 0; i < 4; ++i) post_srq_recv(h2, srq, 100 + i, i * 4096, 4096);
    post_send(h1, a1, 1, IBV_WR_SEND, 0, 2000);
    post_send(h1, a2, 2, IBV_WR_SEND, 0, 3000);
    post_send(h1, a1, 3, IBV_WR_SEND, 0, 10);
    run_for(milliseconds(1));
    const auto recvs = poll(h2.recv_cq_control, h2.recv_cqes);
    ASSERT_EQ(recvs.size(), 3u);
    std::vector<std::uint32_t> qps;
    std::vector<std::uint64_t> ids;
    for (const auto& r : recvs) {
        EXPECT_EQ(r.status, IBV_WC_SUCCESS);
        qps.push_back(r.qp_num);
        ids.push_back(r.wr_id);
    }
    EXPECT_EQ(std::count(qps.begin(), qps.end(), b1.qpn), 2);
    EXPECT_EQ(std::count(qps.begin(), qps.end(), b2.qpn), 1);
    std::sort(ids.begin(), ids.end());
    EXPECT_EQ(ids, (std::vector<std::uint64_t>{100, 101, 102}));
    EXPECT_EQ(srq.control->recv.consumer.load(), 3u);
    EXPECT_EQ(h2.nic->destroy_srq(h2.context, srq.handle), EBUSY); // QPs still use it
}

TEST_F(uc_ud_srq, an_armed_srq_limit_raises_one_event_when_the_queue_drops_below_it) {
    ring_srq srq = make_srq(h2, 16);
    ring_qp a = make_qp(h1, IBV_QPT_UD), b = make_qp(h2, IBV_QPT_UD, srq.handle);
    bring_up(h1, a, IBV_QPT_UD);
    bring_up(h2, b, IBV_QPT_UD);
    std::uint32_t ah = 0;
    ASSERT_EQ(h1.nic->create_ah(h1.context, h1.pd, address_of(h2), ah), 0);
    for (std::uint64_t i = 0; i < 4; ++i) post_srq_recv(h2, srq, 200 + i, i * 2048, 2048);
    ibv_srq_attr attr{};
    attr.max_wr = 32;
    EXPECT_EQ(h2.nic->modify_srq(h2.context, srq.handle, attr, IBV_SRQ_MAX_WR), EINVAL); // no resizing
    attr.srq_limit = 3;
    ASSERT_EQ(h2.nic->modify_srq(h2.context, srq.handle, attr, IBV_SRQ_LIMIT), 0);
    ASSERT_EQ(h2.nic->query_srq(h2.context, srq.handle, attr), 0);
    EXPECT_EQ(attr.srq_limit, 3u);
    EXPECT_EQ(attr.max_wr, 16u);

    post_send(h1, a, 1, IBV_WR_SEND, 0, 64, {.ah = ah, .remote_qpn = b.qpn}); // 4 -> 3: not below
    run_for(milliseconds(1));
    EXPECT_TRUE(async_events(h2).empty());
    post_send(h1, a, 2, IBV_WR_SEND, 0, 64, {.ah = ah, .remote_qpn = b.qpn}); // 3 -> 2: below
    post_send(h1, a, 3, IBV_WR_SEND, 0, 64, {.ah = ah, .remote_qpn = b.qpn}); // disarmed: no more
    run_for(milliseconds(1));
    const auto events = async_events(h2);
    ASSERT_EQ(events.size(), 1u);
    EXPECT_EQ(events[0].event_type, unsigned(IBV_EVENT_SRQ_LIMIT_REACHED));
    EXPECT_EQ(events[0].handle, srq.handle);
    EXPECT_EQ(poll(h2.recv_cq_control, h2.recv_cqes).size(), 3u);
    ASSERT_EQ(h2.nic->query_srq(h2.context, srq.handle, attr), 0);
    EXPECT_EQ(attr.srq_limit, 0u);
}

} // namespace
} // namespace rocefab::nic
