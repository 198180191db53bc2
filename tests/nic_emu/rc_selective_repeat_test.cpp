// Selective repeat for RC (nic_spec::retransmission, IRN's loss recovery) under virtual time: a
// node on the cable drops, delays and duplicates chosen request packets of h1's, so each test
// knows exactly which packets were lost and can count how often each PSN went on the wire.
#include "dataplane/wire/ethernet.hpp"
#include "dataplane/wire/ip.hpp"
#include "dataplane/wire/udp.hpp"
#include "tests/nic_emu/two_nics_fixture.hpp"

#include <map>

namespace rocefab::nic::testing {
namespace {

constexpr std::uint32_t first_psn = 1000; // the fixture's sq_psn

// Forwards between its two ports. Request packets from h1 (port 0) are counted by PSN, and the
// first `drop[psn]` of them are lost, the first is held back `delay[psn]`, or followed by a
// copy; from h2 (port 1), NAKs can be doubled.
class request_meddler final : public node {
public:
    request_meddler() : node("meddler", 2) {}

    void receive(std::uint16_t port, rte_mbuf* frame, sim_time now) override {
        const auto* eth = rte_pktmbuf_mtod(frame, const wire::ethernet_header*);
        const bool roce = eth->ether_type.load() == wire::ethertype::ipv4;
        const auto* bth = rte_pktmbuf_mtod_offset(frame, const wire::bth*,
                                                  sizeof(wire::ethernet_header) + sizeof(wire::ipv4_header) +
                                                      sizeof(wire::udp_header));
        if (port == 1) {
            if (roce) {
                const auto psn = static_cast<std::uint32_t>(wire::psn_diff(bth->psn(), first_psn));
                if (responses_seen[psn]++ < drop_response[psn]) {
                    rte_pktmbuf_free(frame);
                    return;
                }
            }
            // An acknowledgement's AETH follows the BTH: its syndrome's top bits 011 are a NAK.
            const auto* aeth = reinterpret_cast<const std::uint8_t*>(bth + 1);
            const bool nak =
                roce && bth->opcode() == wire::to_byte(wire::ib_opcode::rc_acknowledge) && (*aeth & 0xe0) == 0x60;
            if (nak && double_naks) transmit(0, rte_pktmbuf_copy(frame, test_pool(), 0, UINT32_MAX), now);
            transmit(0, frame, now);
            return;
        }
        if (!roce) {
            transmit(1, frame, now);
            return;
        }
        const auto psn = static_cast<std::uint32_t>(wire::psn_diff(bth->psn(), first_psn));
        const unsigned seen = sent[psn]++;
        if (seen < drop[psn]) {
            rte_pktmbuf_free(frame);
            return;
        }
        if (seen == 0 && delay.count(psn)) {
            held.push_back({now + delay[psn], frame});
            return;
        }
        if (seen == 0 && duplicate.count(psn)) transmit(1, rte_pktmbuf_copy(frame, test_pool(), 0, UINT32_MAX), now);
        transmit(1, frame, now);
    }
    bool poll(sim_time now) override {
        bool did = false;
        for (std::size_t i = 0; i < held.size();) {
            if (held[i].first > now) {
                ++i;
                continue;
            }
            transmit(1, held[i].second, now);
            held.erase(held.begin() + static_cast<std::ptrdiff_t>(i));
            did = true;
        }
        return did;
    }
    sim_time next_deadline() const override {
        sim_time earliest = never;
        for (const auto& h : held) earliest = std::min(earliest, h.first);
        return earliest;
    }

    // PSNs relative to first_psn.
    std::map<std::uint32_t, unsigned> drop, sent;
    std::map<std::uint32_t, unsigned> drop_response, responses_seen; // from h2, by PSN
    std::map<std::uint32_t, sim_time> delay;
    std::map<std::uint32_t, bool> duplicate;
    bool double_naks = false;
    std::vector<std::pair<sim_time, rte_mbuf*>> held;
};

class rc_selective_repeat : public two_nics {
protected:
    void adjust(nic_spec& a, nic_spec& b) override { a.retransmission = b.retransmission = mode; }
    node* middle() override { return &meddler; }

    // `messages` SENDs of `size` bytes from h1 to h2, each into its own receive; true when every
    // one completed in order on both sides with its bytes intact.
    bool send_messages(int messages, std::uint32_t size, sim_time within) {
        fill_pattern(h1.memory, 0, std::size_t(messages) * size, 41);
        for (int i = 0; i < messages; ++i) {
            post_recv(h2, i, (2 << 20) + std::uint64_t(i) * size, size);
            post_send(h1, i, IBV_WR_SEND, std::uint64_t(i) * size, size);
        }
        run_for(within);
        const auto sends = poll(h1.send_cq_control, h1.send_cqes);
        const auto recvs = poll(h2.recv_cq_control, h2.recv_cqes);
        EXPECT_EQ(sends.size(), std::size_t(messages));
        EXPECT_EQ(recvs.size(), std::size_t(messages));
        if (sends.size() != std::size_t(messages) || recvs.size() != std::size_t(messages)) return false;
        for (int i = 0; i < messages; ++i) {
            EXPECT_EQ(sends[i].wr_id, std::uint64_t(i));
            EXPECT_EQ(sends[i].status, IBV_WC_SUCCESS);
            EXPECT_EQ(recvs[i].wr_id, std::uint64_t(i));
            EXPECT_EQ(recvs[i].status, IBV_WC_SUCCESS);
            EXPECT_EQ(recvs[i].byte_len, size);
        }
        const std::size_t bytes = std::size_t(messages) * size;
        EXPECT_TRUE(std::equal(h1.memory.begin(), h1.memory.begin() + bytes, h2.memory.begin() + (2 << 20)));
        return true;
    }
    // How many times each request PSN went on the wire, as "psn:count" for those not sent once.
    std::string sent_other_than_once(std::uint32_t packets) {
        std::string out;
        for (std::uint32_t p = 0; p < packets; ++p)
            if (meddler.sent[p] != 1) out += std::to_string(p) + ":" + std::to_string(meddler.sent[p]) + " ";
        return out;
    }

    // Random loss, corruption, duplication and reordering both ways (as configs/lossy-two-hosts.yaml
    // puts on h1's cable) over 400 SENDs and WRITEs of 8 packets: every byte arrives, in order.
    // Returns the packets resent, and sets `lost` to the frames lost or corrupted.
    std::uint64_t run_under_random_faults(std::uint64_t& lost) {
        connect({.timeout = 8});
        link_faults faults;
        faults.loss = 0.01;
        faults.corruption = 0.001;
        faults.duplication = 0.005;
        faults.reordering = 0.01;
        _wiring.link_at(_a_to_b).set_faults(faults);
        _wiring.link_at(_b_to_a).set_faults(faults);
        constexpr int messages = 400;
        constexpr std::uint32_t size = 8192; // 8 packets each
        fill_pattern(h1.memory, 0, std::size_t(messages) * size / 4, 77);
        int posted = 0, sends_done = 0, recvs_done = 0;
        const std::uint64_t remote = reinterpret_cast<std::uint64_t>(h2.memory.data()) + (1 << 20);
        while (sends_done < messages && now() < milliseconds(200)) {
            // At most 32 messages outstanding, as the send queue holds 64.
            while (posted < messages && posted - sends_done < 32) {
                const std::uint64_t at = std::uint64_t(posted % 100) * size;
                if (posted % 2) {
                    post_recv(h2, posted, (2 << 20) + at, size);
                    post_send(h1, posted, IBV_WR_SEND, at, size);
                } else {
                    post_send(h1, posted, IBV_WR_RDMA_WRITE, at, size, remote + at, h2.rkey);
                }
                ++posted;
            }
            run_for(microseconds(10));
            for (const hw::cqe& c : poll(h1.send_cq_control, h1.send_cqes)) {
                EXPECT_EQ(c.status, IBV_WC_SUCCESS);
                EXPECT_EQ(c.wr_id, std::uint64_t(sends_done));
                ++sends_done;
            }
            for (const hw::cqe& c : poll(h2.recv_cq_control, h2.recv_cqes)) {
                EXPECT_EQ(c.status, IBV_WC_SUCCESS);
                EXPECT_EQ(c.wr_id, std::uint64_t(2 * recvs_done + 1));
                ++recvs_done;
            }
        }
        EXPECT_EQ(sends_done, messages);
        EXPECT_EQ(recvs_done, messages / 2);
        for (int k = 0; k < 100; ++k) {
            const std::size_t at = std::size_t(k) * size;
            const auto landed = k % 2 ? h2.memory.begin() + (2 << 20) : h2.memory.begin() + (1 << 20);
            EXPECT_TRUE(std::equal(h1.memory.begin() + at, h1.memory.begin() + at + size, landed + at)) << k;
        }
        lost = 0;
        for (link_id l : {_a_to_b, _b_to_a})
            lost += _wiring.link_at(l).counters().drops_loss + _wiring.link_at(l).counters().frames_corrupted;
        const std::uint64_t resent = h1.nic->counters().retransmitted_packets;
        RecordProperty("resent", std::to_string(resent));
        RecordProperty("lost", std::to_string(lost));
        RecordProperty("timeouts", std::to_string(h1.nic->counters().local_ack_timeout_err));
        return resent;
    }

    retransmission_mode mode = retransmission_mode::selective_repeat;
    request_meddler meddler;
};

// 16 packets of 1024 B in one SEND; the sixth is lost. The responder holds the ten after it, NAKs
// the gap once the reorder grace is over, and the requester resends the one packet.
TEST_F(rc_selective_repeat, a_lost_packet_is_resent_alone_and_once) {
    connect();
    meddler.drop[5] = 1;
    ASSERT_TRUE(send_messages(1, 16384, milliseconds(1)));
    EXPECT_EQ(sent_other_than_once(16), "5:2 ");
    EXPECT_EQ(h1.nic->counters().retransmitted_packets, 1u);
    EXPECT_EQ(h2.nic->counters().naks_sent, 1u);
    EXPECT_EQ(h1.nic->counters().packet_seq_err, 1u);
    EXPECT_EQ(h1.nic->counters().local_ack_timeout_err, 0u);
}

// The same loss with the default, go-back-N (IBA 9.7.5.2.8): everything from the gap on is sent
// again, as before selective repeat existed.
class rc_go_back_n : public rc_selective_repeat {
protected:
    rc_go_back_n() { mode = nic_spec{}.retransmission; }
};

TEST_F(rc_go_back_n, stays_the_default_and_resends_everything_from_the_gap) {
    EXPECT_EQ(mode, retransmission_mode::go_back_n);
    connect();
    meddler.drop[5] = 1;
    ASSERT_TRUE(send_messages(1, 16384, milliseconds(1)));
    EXPECT_EQ(sent_other_than_once(16), "5:2 6:2 7:2 8:2 9:2 10:2 11:2 12:2 13:2 14:2 15:2 ");
    EXPECT_EQ(h1.nic->counters().retransmitted_packets, 11u);
}

// Three gaps in one window, in a SEND and an RDMA WRITE: the responder names each in turn once
// the one before is filled (the packets past it have waited out the grace by then), and each
// lost packet is resent once. The WRITE's middle packets carry no RETH: the responder places
// what it held in PSN order, so they land where the FIRST said.
TEST_F(rc_selective_repeat, several_gaps_in_one_window_are_resent_once_each) {
    connect();
    meddler.drop[3] = meddler.drop[7] = meddler.drop[12] = 1;
    fill_pattern(h1.memory, 0, 16384, 3);
    const std::uint64_t remote = reinterpret_cast<std::uint64_t>(h2.memory.data()) + (1 << 20);
    post_send(h1, 1, IBV_WR_RDMA_WRITE, 0, 8192, remote, h2.rkey); // PSNs 0-7
    post_recv(h2, 2, 2 << 20, 8192);
    post_send(h1, 2, IBV_WR_SEND, 8192, 8192); // PSNs 8-15
    run_for(milliseconds(1));
    const auto sends = poll(h1.send_cq_control, h1.send_cqes);
    ASSERT_EQ(sends.size(), 2u);
    EXPECT_EQ(sends[0].wr_id, 1u);
    EXPECT_EQ(sends[1].wr_id, 2u);
    EXPECT_EQ(poll(h2.recv_cq_control, h2.recv_cqes).size(), 1u);
    EXPECT_TRUE(std::equal(h1.memory.begin(), h1.memory.begin() + 8192, h2.memory.begin() + (1 << 20)));
    EXPECT_TRUE(std::equal(h1.memory.begin() + 8192, h1.memory.begin() + 16384, h2.memory.begin() + (2 << 20)));
    EXPECT_EQ(sent_other_than_once(16), "3:2 7:2 12:2 ");
    EXPECT_EQ(h1.nic->counters().retransmitted_packets, 3u);
    EXPECT_EQ(h2.nic->counters().naks_sent, 3u);
    EXPECT_EQ(h1.nic->counters().local_ack_timeout_err, 0u);
}

// The resend is lost too. The responder has NAKed that gap already and does not again; the
// transport timer resends the oldest unacknowledged packet, that one alone.
TEST_F(rc_selective_repeat, a_lost_retransmission_is_resent_once_more_after_the_timeout) {
    connect({.timeout = 8}); // 4.096 us * 2^8 = 1 ms
    meddler.drop[5] = 2;
    ASSERT_TRUE(send_messages(1, 16384, milliseconds(3)));
    EXPECT_EQ(sent_other_than_once(16), "5:3 ");
    EXPECT_EQ(h1.nic->counters().retransmitted_packets, 2u);
    EXPECT_EQ(h1.nic->counters().local_ack_timeout_err, 1u);
    EXPECT_EQ(h2.nic->counters().naks_sent, 1u);
}

// No packet follows the lost last one, so nothing shows the responder a gap: the transport timer
// finds it. Nothing of the message was acknowledged (only its last packet asks for an ACK), so
// the timer resends the first packet, whose ACK (a resend asks for one) stops short of the last:
// that one is resent next, and nothing else.
TEST_F(rc_selective_repeat, a_lost_last_packet_is_found_by_the_timeout_and_resent_alone) {
    connect({.timeout = 8});
    meddler.drop[15] = 1;
    ASSERT_TRUE(send_messages(1, 16384, milliseconds(3)));
    EXPECT_EQ(sent_other_than_once(16), "0:2 15:2 ");
    EXPECT_EQ(h1.nic->counters().retransmitted_packets, 2u);
    EXPECT_EQ(h1.nic->counters().local_ack_timeout_err, 1u);
    EXPECT_EQ(h2.nic->counters().naks_sent, 0u);
}

// The last three are lost: after the timeout (and the first packet's resend, as above) each ACK
// stops short of what was sent a timeout ago and names the next lost packet (a partial ACK): one
// timeout in all.
TEST_F(rc_selective_repeat, a_lost_tail_is_resent_packet_by_packet_after_one_timeout) {
    connect({.timeout = 8});
    meddler.drop[13] = meddler.drop[14] = meddler.drop[15] = 1;
    ASSERT_TRUE(send_messages(1, 16384, milliseconds(3)));
    EXPECT_EQ(sent_other_than_once(16), "0:2 13:2 14:2 15:2 ");
    EXPECT_EQ(h1.nic->counters().retransmitted_packets, 4u);
    EXPECT_EQ(h1.nic->counters().local_ack_timeout_err, 1u);
}

// Two READs of eight packets each lose a response. Each is asked for again alone, from the lost
// response on, once the responses past it have waited out the grace (the implied NAK): the
// second READ's responses that arrived meanwhile are kept, and its own gap gets its own grace
// once the first READ is complete. No timeout.
class rc_selective_repeat_reads : public rc_selective_repeat {
protected:
    rc_selective_repeat_reads() { _mr_access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ; }
};

TEST_F(rc_selective_repeat_reads, lost_responses_of_two_reads_are_asked_for_again_read_by_read) {
    connection_options o;
    o.access = IBV_ACCESS_REMOTE_READ;
    o.max_rd_atomic = 4;
    o.max_dest_rd_atomic = 4;
    o.timeout = 8;
    connect(o);
    fill_pattern(h2.memory, 0, 16384, 9);
    const std::uint64_t remote = reinterpret_cast<std::uint64_t>(h2.memory.data());
    meddler.drop_response[2] = meddler.drop_response[10] = 1;
    post_send(h1, 1, IBV_WR_RDMA_READ, 1 << 20, 8192, remote, h2.rkey);                 // responses 0-7
    post_send(h1, 2, IBV_WR_RDMA_READ, (1 << 20) + 8192, 8192, remote + 8192, h2.rkey); // 8-15
    run_for(milliseconds(1));
    const auto sends = poll(h1.send_cq_control, h1.send_cqes);
    ASSERT_EQ(sends.size(), 2u);
    EXPECT_EQ(sends[0].status, IBV_WC_SUCCESS);
    EXPECT_EQ(sends[1].status, IBV_WC_SUCCESS);
    EXPECT_TRUE(std::equal(h2.memory.begin(), h2.memory.begin() + 16384, h1.memory.begin() + (1 << 20)));
    EXPECT_EQ(h1.nic->counters().implied_nak_seq_err, 2u);
    EXPECT_EQ(h1.nic->counters().retransmitted_packets, 2u);
    EXPECT_EQ(h1.nic->counters().local_ack_timeout_err, 0u);
}

// Reordering within the grace is taken as it comes: nothing NAKed, nothing resent.
TEST_F(rc_selective_repeat, packets_reordered_within_the_grace_cost_no_resend) {
    connect();
    meddler.delay[2] = microseconds(5);
    meddler.delay[9] = microseconds(12);
    meddler.delay[20] = microseconds(3);
    ASSERT_TRUE(send_messages(4, 8192, milliseconds(1)));
    EXPECT_EQ(sent_other_than_once(32), "");
    EXPECT_GT(h2.nic->counters().out_of_sequence, 0u);
    EXPECT_EQ(h2.nic->counters().naks_sent, 0u);
    EXPECT_EQ(h1.nic->counters().retransmitted_packets, 0u);
}

// A packet later than the grace looks lost and is resent once; when the late original arrives it
// is a duplicate, dropped and counted, and nothing else is resent.
TEST_F(rc_selective_repeat, a_packet_later_than_the_grace_is_resent_once_and_its_original_dropped) {
    connect();
    meddler.delay[4] = microseconds(40);
    ASSERT_TRUE(send_messages(2, 8192, milliseconds(1)));
    EXPECT_EQ(sent_other_than_once(16), "4:2 ");
    EXPECT_EQ(h1.nic->counters().retransmitted_packets, 1u);
    EXPECT_EQ(h2.nic->counters().naks_sent, 1u);
    EXPECT_EQ(h2.nic->counters().duplicate_request, 1u);
}

// Duplicated requests are dropped and counted; a duplicated NAK asks for nothing more.
TEST_F(rc_selective_repeat, duplicate_requests_and_duplicate_naks_resend_nothing_more) {
    connect();
    meddler.duplicate[2] = meddler.duplicate[11] = true;
    meddler.drop[8] = 1;
    meddler.double_naks = true;
    ASSERT_TRUE(send_messages(2, 8192, milliseconds(1)));
    EXPECT_EQ(h2.nic->counters().naks_sent, 1u);
    EXPECT_EQ(h1.nic->counters().packet_seq_err, 2u); // the NAK and its copy
    EXPECT_EQ(h1.nic->counters().retransmitted_packets, 1u);
    EXPECT_EQ(meddler.sent[8], 2u);
    EXPECT_GE(h2.nic->counters().duplicate_request, 2u);
}

// Under random faults a lost frame costs about one resend with selective repeat...
TEST_F(rc_selective_repeat, under_random_faults_every_message_arrives_with_about_one_resend_per_loss) {
    std::uint64_t lost = 0;
    const std::uint64_t resent = run_under_random_faults(lost);
    ASSERT_GT(lost, 20u);
    EXPECT_LE(resent, 2 * lost) << resent << " resent for " << lost << " lost";
}

// ... and tens with go-back-N.
TEST_F(rc_go_back_n, under_random_faults_every_message_arrives_with_many_resends_per_loss) {
    std::uint64_t lost = 0;
    const std::uint64_t resent = run_under_random_faults(lost);
    ASSERT_GT(lost, 20u);
    EXPECT_GT(resent, 5 * lost) << resent << " resent for " << lost << " lost";
}

} // namespace
} // namespace rocefab::nic::testing
