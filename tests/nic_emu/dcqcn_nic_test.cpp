// DCQCN in the NIC under virtual time: a node on the cable marks every RoCE packet from h1 to
// h2 with ECN CE, as a congested switch would. h2, the notification point, answers with CNPs;
// h1, the reaction point, cuts the QP's rate and paces its packets.
#include "dataplane/wire/ethernet.hpp"
#include "dataplane/wire/ip.hpp"
#include "dataplane/wire/opcodes.hpp"
#include "dataplane/wire/udp.hpp"
#include "tests/nic_emu/two_nics_fixture.hpp"

#include <cstring>

namespace rocefab::nic::testing {
namespace {

// Forwards between its two ports; one in `every` ECN-capable frames from port 0 (h1) leaves
// marked CE, as through a queue held between its ECN thresholds, until `marks_left` are marked.
class ce_marker final : public node {
public:
    ce_marker() : node("marker", 2) {}
    void receive(std::uint16_t port, rte_mbuf* frame, sim_time now) override {
        const auto* eth = rte_pktmbuf_mtod(frame, const wire::ethernet_header*);
        const bool tagged = eth->ether_type.load() == wire::ethertype::vlan;
        const std::size_t l2 = sizeof(wire::ethernet_header) + (tagged ? sizeof(wire::vlan_header) : 0);
        if (port == 1) { // from h2: the CNPs, and the priority tag they travel with
            const auto* bth = rte_pktmbuf_mtod_offset(frame, const std::uint8_t*,
                                                      l2 + sizeof(wire::ipv4_header) + sizeof(wire::udp_header));
            if (*bth == static_cast<std::uint8_t>(wire::ib_opcode::cnp)) {
                ++cnps_seen;
                if (tagged)
                    cnp_priorities |=
                        1u << rte_pktmbuf_mtod_offset(frame, const wire::vlan_header*, sizeof(wire::ethernet_header))
                                  ->pcp();
            }
        }
        if (port == 0 && marks_left) {
            auto* ip = rte_pktmbuf_mtod_offset(frame, wire::ipv4_header*, l2);
            if ((ip->tos & 3) != wire::ecn::not_ect && ++seen % every == 0) {
                ip->tos |= wire::ecn::ce; // the ICRC masks the TOS byte and the IP checksum
                ip->update_checksum();
                ++marked;
                --marks_left;
            }
        }
        transmit(port == 0 ? 1 : 0, frame, now);
    }
    bool poll(sim_time) override { return false; }

    std::uint64_t every = 16;
    std::uint64_t marks_left = 16; // the whole 1 MiB message
    std::uint64_t seen = 0, marked = 0;
    std::uint64_t cnps_seen = 0;
    std::uint8_t cnp_priorities = 0; // a bit per PCP the tagged CNPs carried
};

class dcqcn_nics : public two_nics {
protected:
    void adjust(nic_spec& h1_spec, nic_spec&) override {
        if (!reaction_point_on) h1_spec.dcqcn_rp_priorities = 0;
    }
    node* middle() override { return &marker; }

    // A 1 MiB SEND from h1 to h2 on a connected pair; returns how long until h2's receive
    // completed.
    sim_time send_one_mebibyte(std::uint64_t id = 1) {
        const sim_time start = now();
        post_recv(h2, id, 0, 1 << 20);
        post_send(h1, id, IBV_WR_SEND, 0, 1 << 20);
        while (now() < start + milliseconds(20)) {
            run_for(microseconds(1));
            if (!poll(h2.recv_cq_control, h2.recv_cqes).empty()) return now() - start;
        }
        ADD_FAILURE() << "the send did not complete in 20 ms";
        return now() - start;
    }

    bool reaction_point_on = true;
    ce_marker marker;
};

// Unthrottled the 1 MiB SEND takes about 86 us (rc_transport's a_1_mib_send_takes_the_time_the_link_needs).
TEST_F(dcqcn_nics, marked_packets_bring_cnps_and_the_sender_slows_down) {
    connect({.mtu = IBV_MTU_4096});
    const sim_time done = send_one_mebibyte();
    run_for(microseconds(5)); // the last CNP reaches h1
    const nic_counters& np = h2.nic->counters();
    const nic_counters& rp = h1.nic->counters();
    EXPECT_EQ(marker.marked, 16u);
    EXPECT_EQ(np.np_ecn_marked_roce_packets, 16u);
    EXPECT_GT(np.np_cnp_sent, 1u);
    // At most one CNP per QP per min_time_between_cnps (4 us), the first at once.
    EXPECT_LE(np.np_cnp_sent, static_cast<std::uint64_t>(done / 4'000 + 1));
    EXPECT_EQ(rp.rp_cnp_handled, np.np_cnp_sent);
    EXPECT_EQ(rp.rp_cnp_ignored, 0u);
    EXPECT_GT(done, microseconds(150)); // the rest of the message paced well below line rate
    const auto qps = h1.nic->queue_pairs(now());
    ASSERT_EQ(qps.size(), 1u);
    EXPECT_TRUE(qps[0].rate_limited);
    EXPECT_LT(qps[0].current_rate_bps, 100e9);
    EXPECT_EQ(rp.retransmitted_packets, 0u); // slower, not lossy
}

TEST_F(dcqcn_nics, the_rate_climbs_back_by_timer_alone_slowly_and_faster_while_sending) {
    connect({.mtu = IBV_MTU_4096});
    send_one_mebibyte(1);
    run_for(microseconds(5));
    const auto cut = h1.nic->queue_pairs(now())[0];
    marker.marks_left = 0;
    // Idle for 1 ms: three timer events (300 us each). Fast recovery moves the rate halfway to
    // the target, then each additive step raises the target by rpg_ai_rate, 5 Mb/s.
    run_for(milliseconds(1));
    const auto idle = h1.nic->queue_pairs(now())[0];
    EXPECT_GT(idle.current_rate_bps, cut.current_rate_bps);
    EXPECT_LE(idle.target_rate_bps, cut.target_rate_bps + 2 * 5e6 + 1);
    // Sending 1 MiB unmarked: a byte-counter event every 32 767 bytes, and with the timer's
    // events past the threshold too, hyper increase (50 Mb/s a step, more each step).
    send_one_mebibyte(2);
    const auto sent = h1.nic->queue_pairs(now())[0];
    EXPECT_GT(sent.target_rate_bps, idle.target_rate_bps + 1e9);
    EXPECT_GT(sent.current_rate_bps, idle.current_rate_bps);
    EXPECT_TRUE(sent.rate_limited); // ConnectX's defaults take far longer to reach 100 Gb/s
}

// What `rocefab sim` samples of a sending QP (send_progress) is what queue_pairs() shows of it:
// the rate brought up to the time asked, without moving the QP, and the next PSN.
TEST_F(dcqcn_nics, the_sampled_send_progress_is_the_queue_pair_view) {
    connect({.mtu = IBV_MTU_4096});
    send_one_mebibyte(1);
    run_for(microseconds(5));
    const auto view = h1.nic->queue_pairs(now())[0];
    for (const sim_time later : {now(), now() + microseconds(300), now() + milliseconds(1)}) {
        const auto progress = h1.nic->send_progress(view.qpn, later);
        ASSERT_TRUE(progress.has_value());
        EXPECT_EQ(progress->next_psn, view.sq_psn);
        EXPECT_EQ(progress->current_rate_bps, h1.nic->queue_pairs(later)[0].current_rate_bps);
    }
    EXPECT_GT(h1.nic->send_progress(view.qpn, now() + milliseconds(1))->current_rate_bps, view.current_rate_bps);
    EXPECT_EQ(h1.nic->send_progress(view.qpn, now())->current_rate_bps, view.current_rate_bps); // nothing moved
    EXPECT_FALSE(h1.nic->send_progress(view.qpn + 1, now()).has_value());
}

// Trusting PCP (`trust: l2`), every frame carries a priority tag, and a CNP goes with
// cnp_802p_prio whatever priority the data it answers had.
class dcqcn_nics_trusting_pcp : public dcqcn_nics {
protected:
    void adjust(nic_spec& h1_spec, nic_spec& h2_spec) override {
        h1_spec.trust_pcp = h2_spec.trust_pcp = true;
        h2_spec.dcqcn.cnp_802p_prio = 5;
    }
};

TEST_F(dcqcn_nics_trusting_pcp, cnps_carry_cnp_802p_prio_in_their_priority_tag) {
    connect({.mtu = IBV_MTU_4096});
    send_one_mebibyte();
    run_for(microseconds(5));
    EXPECT_GT(marker.cnps_seen, 0u);
    EXPECT_EQ(marker.cnps_seen, h2.nic->counters().np_cnp_sent);
    EXPECT_EQ(marker.cnp_priorities, 1u << 5);
    EXPECT_EQ(h1.nic->counters().rp_cnp_handled, h2.nic->counters().np_cnp_sent);
}

class dcqcn_nics_without_reaction_point : public dcqcn_nics {
protected:
    dcqcn_nics_without_reaction_point() { reaction_point_on = false; }
};

TEST_F(dcqcn_nics_without_reaction_point, cnps_for_a_priority_with_dcqcn_off_are_ignored) {
    connect({.mtu = IBV_MTU_4096});
    const sim_time done = send_one_mebibyte();
    run_for(microseconds(5)); // the last CNP reaches h1
    EXPECT_GT(h2.nic->counters().np_cnp_sent, 0u);
    EXPECT_EQ(h1.nic->counters().rp_cnp_ignored, h2.nic->counters().np_cnp_sent);
    EXPECT_EQ(h1.nic->counters().rp_cnp_handled, 0u);
    EXPECT_LT(done, microseconds(95)); // line rate, plus the extra cable of the marker
}

// A slow receiver: h2's host takes frames at 10 Gb/s from a 100 Gb/s link. Its NIC buffers what
// arrives and pauses h1 with PFC whenever priority 3 holds more than 256 kB, so nothing is lost.
class slow_receiver : public two_nics {
protected:
    void adjust(nic_spec&, nic_spec& h2_spec) override { h2_spec.host_rx_bps = 10'000'000'000; }

    // A 1 MiB SEND from h1 to h2 on a connected pair at path MTU 4096; returns when h2's receive
    // completed, or 0 if it did not within 20 ms.
    sim_time send_one_mebibyte() {
        connect({.mtu = IBV_MTU_4096});
        post_recv(h2, 1, 0, 1 << 20);
        post_send(h1, 1, IBV_WR_SEND, 0, 1 << 20);
        while (now() < milliseconds(20)) {
            run_for(microseconds(10));
            if (!poll(h2.recv_cq_control, h2.recv_cqes).empty()) return now();
        }
        return 0;
    }
};

TEST_F(slow_receiver, pauses_the_sender_with_pfc_instead_of_dropping) {
    const sim_time done = send_one_mebibyte();
    ASSERT_GT(done, 0) << "the send did not complete";
    // 1 MiB at the host's 10 Gb/s: at least 839 us, however fast the link.
    EXPECT_GT(done, microseconds(839));
    const nic_counters& receiver = h2.nic->counters();
    EXPECT_GT(receiver.tx_prio_pause[3], 1u); // XOFF, XON, ...
    EXPECT_GT(receiver.tx_prio_pause_duration_us[3], 0u);
    EXPECT_EQ(receiver.rx_prio_buf_discard[3], 0u);
    EXPECT_EQ(h1.nic->counters().rx_prio_pause[3], receiver.tx_prio_pause[3]);
    EXPECT_EQ(h1.nic->counters().retransmitted_packets, 0u);
}

// Frames that reach a NIC trusting DSCP with a priority tag anyway (a switch on the way tags
// them): the NIC classifies them by DSCP, as it does for congestion notification, and not by
// the tag. Here the tag says priority 1, which is lossy; the DSCP says 3, which is lossless.
class priority_tagger final : public node {
public:
    priority_tagger() : node("tagger", 2) {}
    void receive(std::uint16_t port, rte_mbuf* frame, sim_time now) override {
        auto* eth = rte_pktmbuf_mtod(frame, wire::ethernet_header*);
        if (port == 0 && eth->ether_type.load() == wire::ethertype::ipv4) {
            auto* moved = reinterpret_cast<std::uint8_t*>(rte_pktmbuf_prepend(frame, sizeof(wire::vlan_header)));
            if (!moved) { // no headroom: the test cannot go on
                ADD_FAILURE() << "no headroom to tag a frame";
                rte_pktmbuf_free(frame);
                return;
            }
            std::memmove(moved, moved + sizeof(wire::vlan_header), 2 * sizeof(wire::mac_address));
            auto* tagged = reinterpret_cast<wire::ethernet_header*>(moved);
            auto* tag = reinterpret_cast<wire::vlan_header*>(moved + sizeof(wire::ethernet_header));
            tag->set(1, 0);
            tag->ether_type.store(wire::ethertype::ipv4);
            tagged->ether_type.store(wire::ethertype::vlan);
        }
        transmit(port == 0 ? 1 : 0, frame, now);
    }
    bool poll(sim_time) override { return false; }
};

class slow_receiver_trusting_dscp_behind_a_tagger : public slow_receiver {
protected:
    node* middle() override { return &tagger; }
    priority_tagger tagger;
};

TEST_F(slow_receiver_trusting_dscp_behind_a_tagger, a_tagged_frame_is_buffered_and_paused_by_its_dscp) {
    const sim_time done = send_one_mebibyte();
    ASSERT_GT(done, 0) << "the send did not complete";
    const nic_counters& receiver = h2.nic->counters();
    EXPECT_GT(receiver.tx_prio_pause[3], 1u);
    EXPECT_EQ(receiver.tx_prio_pause[1], 0u);
    EXPECT_EQ(receiver.rx_prio_buf_discard[1], 0u);
    EXPECT_EQ(receiver.rx_prio_buf_discard[3], 0u);
    EXPECT_EQ(h1.nic->counters().retransmitted_packets, 0u);
}

} // namespace
} // namespace rocefab::nic::testing
