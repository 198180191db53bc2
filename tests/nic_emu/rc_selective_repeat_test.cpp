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
        sent_at[psn].push_back(now);
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
    std::map<std::uint32_t, std::vector<sim_time>> sent_at;          // when each went on, lost or not
    std::map<std::uint32_t, unsigned> drop_response, responses_seen; // from h2, by PSN
    std::map<std::uint32_t, sim_time> delay;
    std::map<std::uint32_t, bool> duplicate;
    bool double_naks = false;
    std::vector<std::pair<sim_time, rte_mbuf*>> held;
};

class rc_selective_repeat : public two_nics {
protected:
    void adjust(nic_spec& a, nic_spec& b) override {
        a.retransmission = b.retransmission = mode;
        a.adaptive_retransmission = b.adaptive_retransmission = adaptive;
    }
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
    const adaptive_profile& profile() const { return h1.nic->spec().adaptive_timeouts; }
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

    // Runs until h1's send CQ has an entry or `within` is over; returns when, or `never`.
    sim_time first_send_completion(sim_time within) {
        const sim_time end = now() + within;
        while (now() < end) {
            run_for(microseconds(1));
            if (h1.send_cq_control->ring.producer.load(std::memory_order_acquire) !=
                h1.send_cq_control->ring.consumer.load(std::memory_order_relaxed))
                return now();
        }
        return never;
    }

    retransmission_mode mode = retransmission_mode::selective_repeat;
    bool adaptive = false;
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

// Adaptive retransmission (nic_spec::adaptive_retransmission, ConnectX's roce_adp_retrans_en):
// the profile's timeouts, step by step. From the initial timeout (2^3 x 4.096 us), each value
// of the first range twice, up to its top (2^6), then the next range from its low bound.
TEST(adaptive_timeout, grows_through_the_profiles_ranges_and_comes_down_on_progress) {
    const adaptive_profile p; // this NIC's default
    adaptive_timeout t{3, -1, 0};
    const sim_time qp_timeout = sim_time(4096) << 14; // 67 ms
    std::vector<int> exponents;
    for (int i = 0; i < 22; ++i) {
        exponents.push_back(t.exponent);
        t.timed_out(p);
    }
    EXPECT_EQ(exponents, (std::vector<int>{3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 12, 13, 14, 15, 16}));
    EXPECT_EQ(adaptive_timeout({3, -1, 0}).duration(qp_timeout, p), 32'768);
    // Never longer than the QP's own timeout.
    EXPECT_EQ(t.duration(qp_timeout, p), qp_timeout);
    EXPECT_EQ(adaptive_timeout({9, 1, 0}).duration(sim_time(4096) << 8, p), sim_time(4096) << 8);

    // Progress lowers the exponent by the range's decrease, into the range below if it falls there.
    adaptive_timeout q{8, 1, 1};
    q.progressed(p);
    EXPECT_EQ(q.exponent, 6);
    EXPECT_EQ(q.range, 0);
    EXPECT_EQ(q.uses, 0);
    q.progressed(p);
    q.progressed(p);
    EXPECT_EQ(q.exponent, 3); // not below the first range
    // Before the initial timeout expired, progress changes nothing.
    adaptive_timeout fresh{4, -1, 0};
    fresh.progressed(p);
    EXPECT_EQ(fresh.exponent, 4);
    EXPECT_EQ(fresh.range, -1);
}

// The initial timeout is drawn per QP (2^3 or 2^4 x 4.096 us) so that QPs do not time out in
// step, and the same QP number always draws the same.
TEST(adaptive_timeout, the_initial_timeout_spreads_over_qp_numbers) {
    const adaptive_profile profile;
    int threes = 0, fours = 0;
    for (std::uint32_t qpn = 0x100; qpn < 0x200; ++qpn) {
        const adaptive_timeout t = adaptive_timeout::initial(qpn, profile);
        EXPECT_EQ(t.range, -1);
        EXPECT_EQ(t.exponent, adaptive_timeout::initial(qpn, profile).exponent);
        threes += t.exponent == 3;
        fours += t.exponent == 4;
    }
    EXPECT_EQ(threes + fours, 256);
    EXPECT_GT(threes, 64);
    EXPECT_GT(fours, 64);
}

class rc_adaptive_retransmission : public rc_selective_repeat {
protected:
    rc_adaptive_retransmission() { adaptive = true; }
};

// The lost last packet of rc_selective_repeat's test above, with the QP's timeout at 1 ms: the
// adaptive timer finds it after the QP's initial timeout of tens of microseconds, and the
// recovery resends what it did there, no more.
TEST_F(rc_adaptive_retransmission, finds_a_lost_last_packet_in_tens_of_microseconds) {
    connect({.timeout = 8});
    meddler.drop[15] = 1;
    fill_pattern(h1.memory, 0, 16384, 5);
    post_recv(h2, 1, 2 << 20, 16384);
    post_send(h1, 1, IBV_WR_SEND, 0, 16384);
    const sim_time initial = adaptive_timeout::initial(h1.qpn, profile()).duration(sim_time(4096) << 8, profile());
    const sim_time done = first_send_completion(milliseconds(1));
    ASSERT_NE(done, never);
    EXPECT_GE(done, initial);
    EXPECT_LT(done, initial + microseconds(20)); // the message's wire time and two round trips
    EXPECT_EQ(poll(h1.send_cq_control, h1.send_cqes).at(0).status, IBV_WC_SUCCESS);
    EXPECT_TRUE(std::equal(h1.memory.begin(), h1.memory.begin() + 16384, h2.memory.begin() + (2 << 20)));
    EXPECT_EQ(sent_other_than_once(16), "0:2 15:2 ");
    EXPECT_EQ(h1.nic->counters().local_ack_timeout_err, 1u);
}

// A peer that never answers: the request is resent at the profile's growing intervals (each
// within 1 us of what adaptive_timeout says), and the QP gives up with RETRY_EXC_ERR once
// nothing has moved on for retry_cnt x its own timeout (2 x 1 ms), after more, shorter tries
// than the 2 retries it would have made without adaptive timeouts.
TEST_F(rc_adaptive_retransmission, resends_at_growing_intervals_and_gives_up_after_retry_cnt_timeouts) {
    connect({.retry_cnt = 2, .timeout = 8});
    const sim_time qp_timeout = sim_time(4096) << 8;
    meddler.drop[0] = 1000;
    post_send(h1, 7, IBV_WR_SEND, 0, 512);
    post_recv(h2, 7, 2 << 20, 512);
    const sim_time failed = first_send_completion(milliseconds(10));
    ASSERT_NE(failed, never);
    const auto cqes = poll(h1.send_cq_control, h1.send_cqes);
    ASSERT_EQ(cqes.size(), 1u);
    EXPECT_EQ(cqes[0].status, IBV_WC_RETRY_EXC_ERR);
    const std::vector<sim_time>& at = meddler.sent_at[0];
    ASSERT_GE(at.size(), 2u);
    EXPECT_GE(failed - at[0], 2 * qp_timeout);
    EXPECT_LT(failed - at[0], 3 * qp_timeout);
    EXPECT_EQ(h1.nic->counters().local_ack_timeout_err, at.size()); // the last one gave up
    EXPECT_GT(at.size(), 8u);
    adaptive_timeout expected = adaptive_timeout::initial(h1.qpn, profile());
    for (std::size_t i = 1; i < at.size(); ++i) {
        const sim_time wanted = expected.duration(qp_timeout, profile());
        EXPECT_NEAR(double(at[i] - at[i - 1]), double(wanted), 1000.0) << "resend " << i;
        expected.timed_out(profile());
    }
}

// A topology's own profile (as `mlxreg` sets one on a ConnectX): a time base of 8.192 us, the
// first timeout 2^2 of it, a first range of 2^2 to 2^3 once each, then 2^5 to 2^6 twice each,
// and the last value for ever after.
class rc_adaptive_custom_profile : public rc_adaptive_retransmission {
protected:
    void adjust(nic_spec& a, nic_spec& b) override {
        rc_adaptive_retransmission::adjust(a, b);
        adaptive_profile p;
        p.time_base = 8192;
        p.initial_low = 2;
        p.initial_size = 1;
        p.ranges = {{{2, 1, 1, 2}, {5, 1, 2, 2}}};
        p.range_count = 2;
        a.adaptive_timeouts = b.adaptive_timeouts = p;
    }
};

TEST_F(rc_adaptive_custom_profile, resends_at_the_profiles_intervals) {
    connect({.retry_cnt = 3, .timeout = 10}); // 4.2 ms, so 12.6 ms in all
    meddler.drop[0] = 1000;
    post_send(h1, 7, IBV_WR_SEND, 0, 512);
    post_recv(h2, 7, 2 << 20, 512);
    ASSERT_NE(first_send_completion(milliseconds(20)), never);
    EXPECT_EQ(poll(h1.send_cq_control, h1.send_cqes).at(0).status, IBV_WC_RETRY_EXC_ERR);
    const std::vector<sim_time>& at = meddler.sent_at[0];
    const std::vector<double> expected_us = {32.768, 65.536, 262.144, 262.144, 524.288, 524.288, 524.288, 524.288};
    ASSERT_GT(at.size(), expected_us.size());
    for (std::size_t i = 0; i < expected_us.size(); ++i)
        EXPECT_NEAR(double(at[i + 1] - at[i]) / 1000.0, expected_us[i], 1.0) << "resend " << i + 1;
}

// Adaptive timeouts do not depend on selective repeat: with go-back-N a lost last packet is also
// found after the initial timeout, and resent from there, as go-back-N does.
class rc_adaptive_go_back_n : public rc_selective_repeat {
protected:
    rc_adaptive_go_back_n() {
        adaptive = true;
        mode = retransmission_mode::go_back_n;
    }
};

TEST_F(rc_adaptive_go_back_n, finds_a_lost_last_packet_after_the_initial_timeout) {
    connect({.timeout = 8});
    meddler.drop[15] = 1;
    post_recv(h2, 1, 2 << 20, 16384);
    post_send(h1, 1, IBV_WR_SEND, 0, 16384);
    const sim_time done = first_send_completion(milliseconds(1));
    ASSERT_NE(done, never);
    EXPECT_LT(done,
              adaptive_timeout::initial(h1.qpn, profile()).duration(sim_time(4096) << 8, profile()) + microseconds(20));
    EXPECT_EQ(h1.nic->counters().local_ack_timeout_err, 1u);
}

} // namespace
} // namespace rocefab::nic::testing
