// RC transport (SEND, RDMA WRITE, reliability) between two NICs connected back to back, under
// virtual time (the fixture: two_nics_fixture.hpp).

#include "tests/nic_emu/two_nics_fixture.hpp"

#include "dataplane/wire/pfc.hpp"

namespace rocefab::nic {
namespace {

using namespace rocefab::nic::testing;

class rc_transport : public two_nics {};

TEST_F(rc_transport, send_of_every_size_arrives_whole_and_completes_on_both_sides) {
    connect();
    std::uint64_t wr = 1;
    for (std::uint32_t size : {0u, 1u, 1023u, 1024u, 1025u, 4096u, 65536u, 1u << 20}) {
        SCOPED_TRACE(size);
        fill_pattern(h1.memory, 0, size, static_cast<std::uint8_t>(size));
        std::fill(h2.memory.begin() + (2 << 20), h2.memory.end(), 0);
        post_recv(h2, wr, 2 << 20, 2 << 20);
        post_send(h1, wr, IBV_WR_SEND, 0, size);
        run_for(milliseconds(1));
        const auto sends = poll(h1.send_cq_control, h1.send_cqes);
        const auto recvs = poll(h2.recv_cq_control, h2.recv_cqes);
        ASSERT_EQ(sends.size(), 1u);
        ASSERT_EQ(recvs.size(), 1u);
        EXPECT_EQ(sends[0].status, IBV_WC_SUCCESS);
        EXPECT_EQ(sends[0].opcode, IBV_WC_SEND);
        EXPECT_EQ(sends[0].wr_id, wr);
        EXPECT_EQ(recvs[0].status, IBV_WC_SUCCESS);
        EXPECT_EQ(recvs[0].opcode, IBV_WC_RECV);
        EXPECT_EQ(recvs[0].byte_len, size);
        EXPECT_EQ(recvs[0].src_qp, h1.qpn);
        EXPECT_TRUE(std::equal(h1.memory.begin(), h1.memory.begin() + size, h2.memory.begin() + (2 << 20)));
        ++wr;
    }
}

TEST_F(rc_transport, a_1_mib_send_takes_the_time_the_link_needs) {
    connect({.mtu = IBV_MTU_4096});
    post_recv(h2, 1, 0, 1 << 20);
    post_send(h1, 1, IBV_WR_SEND, 0, 1 << 20);
    sim_time done = 0;
    while (!done && now() < milliseconds(10)) {
        run_for(microseconds(1));
        if (!poll(h2.recv_cq_control, h2.recv_cqes).empty()) done = now();
    }
    // 256 packets of 4096 B payload + 74 B of headers + 24 B of wire overhead at 100 Gb/s,
    // plus 1 us of cable: about 85 us. The receive completes when the last packet lands.
    EXPECT_GT(done, microseconds(84));
    EXPECT_LT(done, microseconds(90));
}

TEST_F(rc_transport, rdma_write_lands_in_remote_memory_and_with_immediate_consumes_a_receive) {
    connect();
    const std::uint32_t size = 10000;
    fill_pattern(h1.memory, 0, size, 3);
    const std::uint64_t remote = reinterpret_cast<std::uint64_t>(h2.memory.data()) + 4096;
    post_send(h1, 7, IBV_WR_RDMA_WRITE, 0, size, remote, h2.rkey);
    run_for(milliseconds(1));
    auto sends = poll(h1.send_cq_control, h1.send_cqes);
    ASSERT_EQ(sends.size(), 1u);
    EXPECT_EQ(sends[0].status, IBV_WC_SUCCESS);
    EXPECT_EQ(sends[0].opcode, IBV_WC_RDMA_WRITE);
    EXPECT_TRUE(std::equal(h1.memory.begin(), h1.memory.begin() + size, h2.memory.begin() + 4096));
    EXPECT_TRUE(poll(h2.recv_cq_control, h2.recv_cqes).empty()); // a plain WRITE is invisible

    post_recv(h2, 9, 0, 16);
    post_send(h1, 8, IBV_WR_RDMA_WRITE_WITH_IMM, 0, size, remote, h2.rkey, 0, 0xabcd1234);
    run_for(milliseconds(1));
    const auto recvs = poll(h2.recv_cq_control, h2.recv_cqes);
    ASSERT_EQ(recvs.size(), 1u);
    EXPECT_EQ(recvs[0].wr_id, 9u);
    EXPECT_EQ(recvs[0].opcode, IBV_WC_RECV_RDMA_WITH_IMM);
    EXPECT_EQ(recvs[0].wc_flags & IBV_WC_WITH_IMM, unsigned(IBV_WC_WITH_IMM));
    EXPECT_EQ(be32toh(recvs[0].immediate), 0xabcd1234u);
    EXPECT_EQ(recvs[0].byte_len, size);
}

TEST_F(rc_transport, send_without_a_receive_is_retried_after_rnr_naks_until_one_is_posted) {
    connect({.rnr_retry = 7});
    post_send(h1, 1, IBV_WR_SEND, 0, 100);
    run_for(milliseconds(1));
    EXPECT_TRUE(poll(h1.send_cq_control, h1.send_cqes).empty());
    EXPECT_GT(h2.nic->counters().rnr_nak_sent, 0u);
    post_recv(h2, 5, 0, 100);
    run_for(milliseconds(1));
    const auto sends = poll(h1.send_cq_control, h1.send_cqes);
    ASSERT_EQ(sends.size(), 1u);
    EXPECT_EQ(sends[0].status, IBV_WC_SUCCESS);
    EXPECT_EQ(poll(h2.recv_cq_control, h2.recv_cqes).size(), 1u);
}

TEST_F(rc_transport, rnr_retries_run_out_with_rnr_retry_exceeded_and_the_qp_in_error) {
    connect({.rnr_retry = 2});
    post_send(h1, 1, IBV_WR_SEND, 0, 100);
    post_send(h1, 2, IBV_WR_SEND, 0, 100);
    run_for(milliseconds(5));
    const auto sends = poll(h1.send_cq_control, h1.send_cqes);
    ASSERT_EQ(sends.size(), 2u);
    EXPECT_EQ(sends[0].status, IBV_WC_RNR_RETRY_EXC_ERR);
    EXPECT_EQ(sends[1].status, IBV_WC_WR_FLUSH_ERR);
    EXPECT_EQ(h1.nic->find_qp_by_number(h1.qpn)->state, IBV_QPS_ERR);
    EXPECT_EQ(h1.nic->counters().rnr_nak_retry_err, 1u);
    EXPECT_EQ(h1.nic->counters().rnr_nak_received, 3u); // the first try and two retries
}

TEST_F(rc_transport, write_with_a_wrong_rkey_is_a_remote_access_error_and_memory_is_untouched) {
    connect();
    fill_pattern(h1.memory, 0, 64, 1);
    const std::uint64_t remote = reinterpret_cast<std::uint64_t>(h2.memory.data());
    post_send(h1, 1, IBV_WR_RDMA_WRITE, 0, 64, remote, h2.rkey ^ 0x100);
    run_for(milliseconds(1));
    const auto sends = poll(h1.send_cq_control, h1.send_cqes);
    ASSERT_EQ(sends.size(), 1u);
    EXPECT_EQ(sends[0].status, IBV_WC_REM_ACCESS_ERR);
    EXPECT_EQ(h2.nic->counters().resp_remote_access_errors, 1u);
    EXPECT_EQ(h1.nic->counters().req_remote_access_errors, 1u);
    EXPECT_EQ(h2.nic->find_qp_by_number(h2.qpn)->state, IBV_QPS_ERR);
    EXPECT_TRUE(std::all_of(h2.memory.begin(), h2.memory.begin() + 64, [](auto b) { return b == 0; }));
}

// A key is found by its index (its upper 24 bits, as mlx5's mkeys), and the index by its low
// 16 bits. A key that shares the live region's slot must still be refused: one an index cycle
// (2^16) away, or one whose low byte (a later registration's) differs.
class rc_transport_wrong_key : public rc_transport, public ::testing::WithParamInterface<std::uint32_t> {};

TEST_P(rc_transport_wrong_key, write_with_a_key_that_shares_the_regions_slot_is_refused) {
    connect();
    const std::uint32_t wrong = h2.rkey ^ GetParam();
    post_send(h1, 1, IBV_WR_RDMA_WRITE, 0, 64, reinterpret_cast<std::uint64_t>(h2.memory.data()), wrong);
    run_for(milliseconds(1));
    const auto sends = poll(h1.send_cq_control, h1.send_cqes);
    ASSERT_EQ(sends.size(), 1u);
    EXPECT_EQ(sends[0].status, IBV_WC_REM_ACCESS_ERR);
    EXPECT_EQ(h2.nic->counters().resp_remote_access_errors, 1u);
    EXPECT_TRUE(std::all_of(h2.memory.begin(), h2.memory.begin() + 64, [](auto b) { return b == 0; }));
}

INSTANTIATE_TEST_SUITE_P(same_slot, rc_transport_wrong_key, ::testing::Values(1u << 24, 0x01u));

// A QP is found by its QPN's low 16 bits: a packet for a QPN one cycle away from a live QP's
// shares its slot, and is counted and dropped all the same.
TEST_F(rc_transport, packets_for_a_qpn_that_shares_a_live_qps_slot_are_dropped) {
    connect({.dest_qpn_offset = 1u << 16});
    post_recv(h2, 1, 0, 64);
    post_send(h1, 1, IBV_WR_SEND, 0, 64);
    run_for(milliseconds(1));
    EXPECT_GT(h2.nic->counters().rx_unknown_qp, 0u);
    EXPECT_TRUE(poll(h2.recv_cq_control, h2.recv_cqes).empty());
}

TEST_F(rc_transport, write_past_the_end_of_the_region_is_refused) {
    connect();
    const std::uint64_t end = reinterpret_cast<std::uint64_t>(h2.memory.data()) + h2.memory.size();
    post_send(h1, 1, IBV_WR_RDMA_WRITE, 0, 64, end - 32, h2.rkey);
    run_for(milliseconds(1));
    const auto sends = poll(h1.send_cq_control, h1.send_cqes);
    ASSERT_EQ(sends.size(), 1u);
    EXPECT_EQ(sends[0].status, IBV_WC_REM_ACCESS_ERR);
}

TEST_F(rc_transport, write_to_a_qp_without_remote_write_access_is_refused) {
    connect({.access = 0});
    post_send(h1, 1, IBV_WR_RDMA_WRITE, 0, 64, reinterpret_cast<std::uint64_t>(h2.memory.data()), h2.rkey);
    run_for(milliseconds(1));
    const auto sends = poll(h1.send_cq_control, h1.send_cqes);
    ASSERT_EQ(sends.size(), 1u);
    EXPECT_EQ(sends[0].status, IBV_WC_REM_ACCESS_ERR);
}

TEST_F(rc_transport, a_bad_lkey_completes_with_local_protection_error) {
    connect();
    post_send(h1, 1, IBV_WR_SEND, 0, 64, 0, 0, h1.lkey + 0x100);
    run_for(milliseconds(1));
    const auto sends = poll(h1.send_cq_control, h1.send_cqes);
    ASSERT_EQ(sends.size(), 1u);
    EXPECT_EQ(sends[0].status, IBV_WC_LOC_PROT_ERR);
    EXPECT_EQ(h1.nic->counters().local_protection_errors, 1u);
    EXPECT_EQ(h1.nic->find_qp_by_number(h1.qpn)->state, IBV_QPS_ERR);
}

TEST_F(rc_transport, an_opcode_the_nic_does_not_offer_is_a_local_qp_operation_error_not_a_protection_error) {
    connect();
    post_send(h1, 1, IBV_WR_LOCAL_INV, 0, 64);
    run_for(milliseconds(1));
    const auto sends = poll(h1.send_cq_control, h1.send_cqes);
    ASSERT_EQ(sends.size(), 1u);
    EXPECT_EQ(sends[0].status, IBV_WC_LOC_QP_OP_ERR);
    EXPECT_EQ(h1.nic->counters().local_protection_errors, 0u);
    EXPECT_EQ(h1.nic->find_qp_by_number(h1.qpn)->state, IBV_QPS_ERR);
}

TEST_F(rc_transport, a_corrupted_frame_fails_the_icrc_is_dropped_and_counted_and_the_message_is_resent) {
    connect({.timeout = 10}); // 4.096 us * 2^10 = 4.19 ms
    link_faults corrupt;
    corrupt.corruption = 1.0; // a bit flipped where only the ICRC protects it
    _wiring.link_at(_a_to_b).set_faults(corrupt);
    fill_pattern(h1.memory, 0, 64, 5);
    post_send(h1, 1, IBV_WR_RDMA_WRITE, 0, 64, reinterpret_cast<std::uint64_t>(h2.memory.data()), h2.rkey);
    for (int i = 0; i < 1000 && _wiring.link_at(_a_to_b).counters().frames_corrupted == 0; ++i)
        run_for(nanoseconds(100));
    ASSERT_EQ(_wiring.link_at(_a_to_b).counters().frames_corrupted, 1u);
    _wiring.link_at(_a_to_b).set_faults({});
    run_for(microseconds(10));
    EXPECT_EQ(h2.nic->counters().rx_icrc_encapsulated, 1u);
    EXPECT_TRUE(std::all_of(h2.memory.begin(), h2.memory.begin() + 64, [](auto b) { return b == 0; }));
    run_for(milliseconds(10)); // the transport timer resends it
    const auto sends = poll(h1.send_cq_control, h1.send_cqes);
    ASSERT_EQ(sends.size(), 1u);
    EXPECT_EQ(sends[0].status, IBV_WC_SUCCESS);
    EXPECT_TRUE(std::equal(h1.memory.begin(), h1.memory.begin() + 64, h2.memory.begin()));
    EXPECT_EQ(h2.nic->counters().rx_icrc_encapsulated, 1u);
    EXPECT_GE(h1.nic->counters().local_ack_timeout_err, 1u);
}

// A NIC leaves each frame's ICRC to be written where something can see it (dataplane/packet.hpp).
// A capture is such a place: every frame it records carries the ICRC a receiver checks, and the
// receiver, given the now sealed frames, checks them all and finds none broken.
class recording_tap final : public frame_tap {
public:
    void on_frame(sim_time, std::span<const std::uint8_t> frame) override {
        frames.emplace_back(frame.begin(), frame.end());
    }
    std::vector<std::vector<std::uint8_t>> frames;
};

TEST_F(rc_transport, a_capture_sees_every_frame_with_its_icrc_written) {
    ASSERT_NE(icrc_deferred_flag, 0u) << "the EAL did not grant the deferred-ICRC mbuf flag";
    connect();
    recording_tap tap;
    // Over one NIC (the suite's loopback run) the frames turn around inside it, where its own
    // capture point is.
    const auto set_taps = [&](frame_tap* t) {
        if (one_nic()) return h1.nic->set_loopback_tap(t);
        _wiring.link_at(_a_to_b).set_tap(t);
        _wiring.link_at(_b_to_a).set_tap(t);
    };
    set_taps(&tap);
    fill_pattern(h1.memory, 0, 8192, 3);
    post_send(h1, 1, IBV_WR_RDMA_WRITE, 0, 8192, reinterpret_cast<std::uint64_t>(h2.memory.data()), h2.rkey);
    run_for(microseconds(50));
    set_taps(nullptr);
    ASSERT_EQ(poll(h1.send_cq_control, h1.send_cqes).size(), 1u);
    ASSERT_GE(tap.frames.size(), 9u); // 8 packets at MTU 1024 and at least one ACK
    for (const auto& frame : tap.frames) {
        wire::parsed_roce packet;
        EXPECT_EQ(wire::parse_roce_frame(frame, packet), wire::parse_error::none);
        EXPECT_NE(packet.icrc, 0u);
    }
    EXPECT_EQ(h2.nic->counters().rx_icrc_encapsulated, 0u);
    EXPECT_EQ(h1.nic->counters().rx_icrc_encapsulated, 0u);
    EXPECT_TRUE(std::equal(h1.memory.begin(), h1.memory.begin() + 8192, h2.memory.begin()));
}

// A link's duplicate is a copy of the frame as it was sent, ICRC still to be written: the
// receiver takes it as a duplicate request, not as a frame with a broken ICRC.
TEST_F(rc_transport, a_duplicated_frame_is_a_duplicate_request_not_an_icrc_error) {
    if (one_nic()) GTEST_SKIP() << "over one NIC no frame crosses the cable that duplicates it";
    connect();
    link_faults twice;
    twice.duplication = 1.0;
    _wiring.link_at(_a_to_b).set_faults(twice);
    fill_pattern(h1.memory, 0, 4096, 4);
    post_send(h1, 1, IBV_WR_RDMA_WRITE, 0, 4096, reinterpret_cast<std::uint64_t>(h2.memory.data()), h2.rkey);
    run_for(microseconds(50));
    ASSERT_EQ(poll(h1.send_cq_control, h1.send_cqes).size(), 1u);
    EXPECT_EQ(_wiring.link_at(_a_to_b).counters().frames_duplicated, 4u);
    EXPECT_EQ(h2.nic->counters().rx_icrc_encapsulated, 0u);
    EXPECT_EQ(h2.nic->counters().duplicate_request, 4u);
    EXPECT_TRUE(std::equal(h1.memory.begin(), h1.memory.begin() + 4096, h2.memory.begin()));
}

TEST_F(rc_transport, a_cut_cable_exhausts_retries_after_the_transport_timeout) {
    connect({.retry_cnt = 3, .timeout = 10}); // 4.096 us * 2^10 = 4.19 ms per try
    _wiring.link_at(_a_to_b).set_up(false);
    post_send(h1, 1, IBV_WR_SEND, 0, 64);
    run_for(milliseconds(16));
    EXPECT_TRUE(poll(h1.send_cq_control, h1.send_cqes).empty()); // 3 retries: not yet
    run_for(milliseconds(2));
    const auto sends = poll(h1.send_cq_control, h1.send_cqes);
    ASSERT_EQ(sends.size(), 1u);
    EXPECT_EQ(sends[0].status, IBV_WC_RETRY_EXC_ERR);
    EXPECT_EQ(h1.nic->counters().local_ack_timeout_err, 4u);
}

TEST_F(rc_transport, a_lost_packet_is_resent_after_a_timeout_and_data_arrives_once) {
    connect({.retry_cnt = 7, .timeout = 8});
    post_recv(h2, 1, 0, 1 << 20);
    fill_pattern(h1.memory, 0, 8192, 9);
    _wiring.link_at(_a_to_b).set_up(false);
    post_send(h1, 1, IBV_WR_SEND, 0, 8192);
    run_for(microseconds(5));
    _wiring.link_at(_a_to_b).set_up(true);
    run_for(milliseconds(5));
    const auto sends = poll(h1.send_cq_control, h1.send_cqes);
    const auto recvs = poll(h2.recv_cq_control, h2.recv_cqes);
    ASSERT_EQ(sends.size(), 1u);
    EXPECT_EQ(sends[0].status, IBV_WC_SUCCESS);
    ASSERT_EQ(recvs.size(), 1u);
    EXPECT_EQ(recvs[0].byte_len, 8192u);
    EXPECT_TRUE(std::equal(h1.memory.begin(), h1.memory.begin() + 8192, h2.memory.begin()));
    EXPECT_GT(h1.nic->counters().retransmitted_packets, 0u);
}

// A sprayed fabric (adaptive routing) delivers the packets of one QP out of order. Like a
// ConnectX with out-of-order placement, the responder takes them as they come: no sequence NAK,
// nothing resent, every SEND and WRITE whole and in order.
TEST_F(rc_transport, packets_reordered_by_the_fabric_are_taken_without_a_nak_or_a_resend) {
    connect();
    link_faults sprayed;
    sprayed.reordering = 0.1;
    sprayed.reorder_delay = microseconds(2); // a later packet overtakes by a few packets
    _wiring.link_at(_a_to_b).set_faults(sprayed);
    constexpr int messages = 40;
    constexpr std::uint32_t size = 16384; // 16 packets at MTU 1024
    fill_pattern(h1.memory, 0, messages * size, 17);
    for (int i = 0; i < messages; ++i) {
        const std::uint64_t at = std::uint64_t(i) * size;
        if (i % 2) {
            post_recv(h2, i, (2 << 20) + at, size);
            post_send(h1, i, IBV_WR_SEND, at, size);
        } else {
            post_send(h1, i, IBV_WR_RDMA_WRITE, at, size,
                      reinterpret_cast<std::uint64_t>(h2.memory.data()) + (2 << 20) + at, h2.rkey);
        }
    }
    run_for(milliseconds(1));
    const auto sends = poll(h1.send_cq_control, h1.send_cqes);
    const auto recvs = poll(h2.recv_cq_control, h2.recv_cqes);
    ASSERT_EQ(sends.size(), std::size_t(messages));
    ASSERT_EQ(recvs.size(), std::size_t(messages / 2));
    for (int i = 0; i < messages; ++i) {
        EXPECT_EQ(sends[i].wr_id, std::uint64_t(i));
        EXPECT_EQ(sends[i].status, IBV_WC_SUCCESS);
    }
    for (int k = 0; k < messages / 2; ++k) EXPECT_EQ(recvs[k].wr_id, std::uint64_t(2 * k + 1));
    EXPECT_TRUE(std::equal(h1.memory.begin(), h1.memory.begin() + messages * size, h2.memory.begin() + (2 << 20)));
    EXPECT_GT(_wiring.link_at(_a_to_b).counters().frames_reordered, 20u);
    EXPECT_GT(h2.nic->counters().out_of_sequence, 0u);
    EXPECT_EQ(h2.nic->counters().naks_sent, 0u);
    EXPECT_EQ(h1.nic->counters().retransmitted_packets, 0u);
}

// A packet lost for good leaves a gap that no reordering fills: the responder asks for it with a
// sequence NAK once the reorder grace is over, long before the transport timer would fire.
TEST_F(rc_transport, a_gap_that_stays_open_is_naked_after_the_reorder_grace) {
    connect({.timeout = 14}); // 67 ms: only a NAK can make this quick
    post_recv(h2, 1, 0, 1 << 20);
    post_recv(h2, 2, 1 << 20, 1 << 20);
    fill_pattern(h1.memory, 0, 8192, 5);
    link_faults lossy;
    lossy.loss = 1.0;
    _wiring.link_at(_a_to_b).set_faults(lossy);
    post_send(h1, 1, IBV_WR_SEND, 0, 1024); // one packet, lost
    run_for(microseconds(1));
    ASSERT_EQ(_wiring.link_at(_a_to_b).counters().drops_loss, 1u);
    _wiring.link_at(_a_to_b).set_faults({});
    post_send(h1, 2, IBV_WR_SEND, 0, 8192); // eight packets behind the gap
    run_for(microseconds(10));
    EXPECT_EQ(h2.nic->counters().naks_sent, 0u); // still within the grace
    EXPECT_EQ(h2.nic->counters().out_of_sequence, 8u);
    run_for(microseconds(40));
    EXPECT_EQ(h2.nic->counters().naks_sent, 1u);
    const auto recvs = poll(h2.recv_cq_control, h2.recv_cqes);
    ASSERT_EQ(recvs.size(), 2u);
    EXPECT_EQ(recvs[0].wr_id, 1u);
    EXPECT_EQ(recvs[1].byte_len, 8192u);
    EXPECT_TRUE(std::equal(h1.memory.begin(), h1.memory.begin() + 8192, h2.memory.begin() + (1 << 20)));
    EXPECT_EQ(h1.nic->counters().local_ack_timeout_err, 0u);
}

// PFC from the switch: RoCE leaves on DSCP 26 (NVIDIA's lossless configuration), which is
// priority 3; a pause for priority 3 stops the NIC's sending for its quanta, and an XON resumes
// it at once. The pauses are counted as a ConnectX counts them.
void receive_pfc(nic_node& nic, std::uint8_t enable, std::uint16_t quanta, sim_time now) {
    rte_mbuf* m = rte_pktmbuf_alloc(test_pool());
    ASSERT_NE(m, nullptr);
    auto* data = reinterpret_cast<std::uint8_t*>(rte_pktmbuf_append(m, wire::pfc_frame_length));
    std::array<std::uint16_t, 8> q;
    q.fill(quanta);
    wire::write_pfc_frame(data, wire::mac_address{{0x02, 0x02, 0, 1, 0, 1}}, enable, q);
    nic.receive(0, m, now);
}

TEST_F(rc_transport, a_pfc_pause_for_the_roce_priority_stops_sending_until_it_ends_or_an_xon) {
    connect();
    receive_pfc(*h1.nic, 1u << 3, 0xffff, now()); // 335 us at 100 Gb/s
    post_recv(h2, 1, 0, 4096);
    post_send(h1, 1, IBV_WR_SEND, 0, 4096);
    run_for(microseconds(300));
    EXPECT_EQ(h1.nic->counters().port_xmit_packets, 0u);
    run_for(microseconds(100)); // the pause ran out at 335 us
    auto sends = poll(h1.send_cq_control, h1.send_cqes);
    ASSERT_EQ(sends.size(), 1u);
    EXPECT_EQ(sends[0].status, IBV_WC_SUCCESS);

    // Another priority's pause does not hold RoCE; an XON ends a pause at once.
    receive_pfc(*h1.nic, 1u << 0, 0xffff, now());
    post_recv(h2, 2, 0, 4096);
    post_send(h1, 2, IBV_WR_SEND, 0, 4096);
    run_for(microseconds(20));
    EXPECT_EQ(poll(h1.send_cq_control, h1.send_cqes).size(), 1u);
    receive_pfc(*h1.nic, 1u << 3, 0xffff, now());
    post_recv(h2, 3, 0, 4096);
    post_send(h1, 3, IBV_WR_SEND, 0, 4096);
    run_for(microseconds(20));
    EXPECT_TRUE(poll(h1.send_cq_control, h1.send_cqes).empty());
    receive_pfc(*h1.nic, 1u << 3, 0, now());
    run_for(microseconds(20));
    EXPECT_EQ(poll(h1.send_cq_control, h1.send_cqes).size(), 1u);
    EXPECT_EQ(h1.nic->counters().rx_prio_pause[3], 3u);
    EXPECT_EQ(h1.nic->counters().rx_prio_pause_duration_us[3], 335u + 20u);
    EXPECT_EQ(h1.nic->counters().rx_prio_pause[0], 1u);
}

TEST_F(rc_transport, moving_to_error_flushes_posted_receives) {
    connect();
    post_recv(h2, 11, 0, 64);
    post_recv(h2, 12, 64, 64);
    ibv_qp_attr attr{};
    attr.qp_state = IBV_QPS_ERR;
    ASSERT_EQ(h2.nic->modify_qp(h2.context, h2.qp, attr, IBV_QP_STATE, now()), 0);
    run_for(microseconds(10));
    const auto recvs = poll(h2.recv_cq_control, h2.recv_cqes);
    ASSERT_EQ(recvs.size(), 2u);
    EXPECT_EQ(recvs[0].wr_id, 11u);
    EXPECT_EQ(recvs[0].status, IBV_WC_WR_FLUSH_ERR);
    EXPECT_EQ(recvs[1].wr_id, 12u);
}

TEST_F(rc_transport, modify_qp_enforces_the_iba_transition_table) {
    ibv_qp_attr attr{};
    attr.qp_state = IBV_QPS_RTR;
    EXPECT_EQ(h1.nic->modify_qp(h1.context, h1.qp, attr, IBV_QP_STATE, 0), EINVAL); // RESET -> RTR
    attr.qp_state = IBV_QPS_INIT;
    EXPECT_EQ(h1.nic->modify_qp(h1.context, h1.qp, attr, IBV_QP_STATE | IBV_QP_PORT, 0), EINVAL); // missing attrs
    attr.port_num = 2;
    EXPECT_EQ(h1.nic->modify_qp(h1.context, h1.qp, attr,
                                IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS, 0),
              EINVAL); // no port 2
    ASSERT_EQ(to_init(h1, 0), 0);
    connection_options o;
    ibv_qp_attr rtr{};
    rtr.qp_state = IBV_QPS_RTR;
    rtr.path_mtu = IBV_MTU_1024;
    EXPECT_EQ(h1.nic->modify_qp(h1.context, h1.qp, rtr, IBV_QP_STATE | IBV_QP_PATH_MTU, 0), EINVAL);
    EXPECT_EQ(to_rtr(h1, h2, o), 0);
    EXPECT_EQ(to_rts(h1, o), 0);
    EXPECT_EQ(h1.nic->find_qp_by_number(h1.qpn)->state, IBV_QPS_RTS);
}

TEST_F(rc_transport, an_address_vector_without_grh_is_rejected_on_roce) {
    ASSERT_EQ(to_init(h1, 0), 0);
    ibv_qp_attr attr{};
    attr.qp_state = IBV_QPS_RTR;
    attr.path_mtu = IBV_MTU_1024;
    attr.dest_qp_num = h2.qpn;
    attr.ah_attr.is_global = 0;
    attr.ah_attr.dlid = 1;
    EXPECT_EQ(h1.nic->modify_qp(h1.context, h1.qp, attr,
                                IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                                    IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER,
                                0),
              EINVAL);
}

TEST_F(rc_transport, closing_a_context_frees_its_objects) {
    connect();
    h1.nic->close_context(h1.context);
    EXPECT_EQ(h1.nic->find_qp_by_number(h1.qpn), nullptr);
    // Packets for the freed QP are counted and dropped, not trusted.
    post_send(h2, 1, IBV_WR_SEND, 0, 10);
    run_for(milliseconds(1));
    EXPECT_GT(h1.nic->counters().rx_unknown_qp, 0u);
}

} // namespace
} // namespace rocefab::nic
