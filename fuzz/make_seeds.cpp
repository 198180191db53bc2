// Writes the seed corpora of the frame fuzzers: small valid stories for fuzz_switch_rx and
// fuzz_nic_rx, built with the shipped frame builders (wire::write_roce_headers, seal_roce_frame,
// write_pfc_frame) and addressed to the nodes under test (switch_under_test.hpp,
// nic_under_test.hpp). Run from the repository root after changing either:
//   build-fuzz/fuzz/make_fuzz_seeds fuzz/corpus
// It replaces the files it writes in corpus/switch_rx/ and corpus/nic_rx/ and leaves the rest.
#include "dataplane/wire/cnp.hpp"
#include "dataplane/wire/pfc.hpp"
#include "dataplane/wire/roce_frame.hpp"
#include "fuzz/nic_under_test.hpp"
#include "fuzz/support/attach_records.hpp"
#include "fuzz/support/records.hpp"
#include "nic_emu/attach_protocol.hpp"
#include "fuzz/switch_under_test.hpp"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace {

using namespace rocefab;
using bytes = std::vector<std::uint8_t>;

bytes pattern(std::size_t n, std::uint8_t seed = 1) {
    bytes b(n);
    for (std::size_t i = 0; i < n; ++i) b[i] = static_cast<std::uint8_t>(seed + i * 7);
    return b;
}

// A whole RoCEv2 frame: headers, payload, ICRC, Ethernet padding to 60 bytes.
bytes roce(const wire::roce_headers_spec& spec, const bytes& payload = {}) {
    const std::size_t length = wire::roce_frame_length(spec, payload.size());
    bytes frame(std::max(length, wire::ethernet_min_frame_length), 0);
    const std::size_t headers = wire::write_roce_headers(frame.data(), spec, payload.size());
    std::copy(payload.begin(), payload.end(), frame.begin() + static_cast<std::ptrdiff_t>(headers));
    wire::seal_roce_frame(frame.data(), length);
    return frame;
}

bytes pfc(const wire::mac_address& source, std::uint8_t enable, std::uint16_t quanta) {
    bytes frame(wire::pfc_frame_length);
    std::array<std::uint16_t, 8> q{};
    q.fill(quanta);
    wire::write_pfc_frame(frame.data(), source, enable, q);
    return frame;
}

// A story: the config byte, then records.
struct story {
    explicit story(std::uint8_t config) { data.push_back(config); }
    story& add(std::uint8_t flags, const bytes& frame, std::uint8_t advance = 0, std::uint8_t repeat = 0) {
        fuzz::append_record(data, flags, repeat, advance, frame);
        return *this;
    }
    bytes data;
};

class corpus {
public:
    explicit corpus(std::filesystem::path dir) : _dir(std::move(dir)) { std::filesystem::create_directories(_dir); }
    void write(const std::string& name, const story& s) {
        std::ofstream out(_dir / name, std::ios::binary | std::ios::trunc);
        out.write(reinterpret_cast<const char*>(s.data.data()), static_cast<std::streamsize>(s.data.size()));
        ++_count;
    }
    ~corpus() { std::printf("%s: %u seeds\n", _dir.c_str(), _count); }

private:
    std::filesystem::path _dir;
    unsigned _count = 0;
};

// Time codes (records.hpp's advance_of): 1 us, 100 us, 2 ms, 100 ms.
constexpr std::uint8_t us1 = 0x40 | 8, us100 = 0x80 | 6, ms2 = 0xc0 | 1, ms100 = 0xc0 | 48;

// ---- fuzz_switch_rx --------------------------------------------------------------------------

void switch_seeds(const std::filesystem::path& root) {
    namespace sut = fuzz::switch_under_test;
    namespace f = sut::flag;
    namespace c = sut::config_bit;
    corpus out(root / "switch_rx");
    // A RoCEv2 packet from the host behind `from` to `to`.
    auto frame = [](std::uint16_t from, const wire::ipv6_address& source, const wire::ipv6_address& to,
                    std::size_t payload, std::uint8_t dscp = 26) {
        wire::roce_headers_spec s;
        s.source_mac = sut::neighbour_mac(from);
        s.destination_mac = sut::port_mac(from);
        s.source_gid = source;
        s.destination_gid = to;
        s.dscp = dscp;
        s.ecn = wire::ecn::ect0;
        s.opcode = wire::to_byte(wire::ib_opcode::rc_send_only);
        s.dest_qpn = 0x11;
        s.psn = 7;
        return s;
    };
    auto v4 = [](std::uint32_t a) { return wire::ipv6_address::v4_mapped(a); };
    const std::uint8_t sealed = f::seal;
    auto p = [](std::uint16_t port) { return static_cast<std::uint8_t>(port); };

    const auto to_port1 = frame(0, v4(sut::host_ipv4(0)), v4(sut::host_ipv4(1)), 256);
    out.write("roce_v4_lossless", story(0).add(sealed | p(0), roce(to_port1, pattern(256)), us1));
    out.write("roce_v6",
              story(0).add(sealed | p(0), roce(frame(0, sut::host_ipv6(0), sut::host_ipv6(1), 128), pattern(128))));
    {
        auto s = frame(1, v4(sut::host_ipv4(1)), v4(sut::host_ipv4(2)), 64);
        s.vlan = true;
        s.pcp = 3;
        out.write("vlan_pcp3_trust_l2", story(c::trust_pcp).add(sealed | p(1), roce(s, pattern(64))));
        s.pcp = 5;
        out.write("vlan_pcp5_trust_l3", story(0).add(sealed | p(1), roce(s, pattern(64))));
    }
    {
        wire::roce_headers_spec s = frame(1, v4(sut::host_ipv4(1)), v4(sut::host_ipv4(0)), 0, 48);
        s.ecn = wire::ecn::not_ect;
        wire::make_cnp_spec(s, 0x11);
        out.write("cnp_dscp48", story(0).add(sealed | p(1), roce(s, bytes(wire::cnp_payload_length, 0))));
    }
    {
        auto s = to_port1;
        s.destination_mac = sut::neighbour_mac(2); // another host's MAC: bridged
        s.destination_gid = v4(sut::host_ipv4(2));
        out.write("bridged", story(0).add(sealed | p(0), roce(s, pattern(100))));
    }
    {
        story st(0), ar(c::adaptive_routing);
        for (std::uint16_t flow = 0; flow < 4; ++flow) {
            auto s = frame(0, v4(sut::host_ipv4(0)), v4(sut::ecmp_ipv4), 1000);
            s.udp_source_port = static_cast<std::uint16_t>(0xc000 + flow * 17);
            st.add(sealed | p(0), roce(s, pattern(1000)), us1, 7);
            ar.add(sealed | p(0), roce(s, pattern(1000)), us1, 15);
        }
        auto s6 = frame(0, sut::host_ipv6(0), sut::host_ipv6(7), 64); // IPv6 default route: ECMP
        st.add(sealed | p(0), roce(s6, pattern(64)));
        out.write("ecmp", st);
        out.write("adaptive_routing", ar);
    }
    // An incast into the 1G port: ECN marks past 150 kB, then XOFF, headroom, XON as it drains.
    {
        const auto from0 = frame(0, v4(sut::host_ipv4(0)), v4(sut::host_ipv4(2)), 1400);
        const auto from1 = frame(1, v4(sut::host_ipv4(1)), v4(sut::host_ipv4(2)), 1400);
        story st(0), lossy(c::lossy), tight(c::reserved_bytes | c::small_alpha | c::transmit_fifo);
        for (story* s : {&st, &lossy, &tight})
            for (int round = 0; round < 2; ++round) {
                s->add(sealed | f::hold | p(0), roce(from0, pattern(1400)), 0, 63);
                s->add(sealed | p(0), roce(from0, pattern(1400, 9)), us1, 63);
                s->add(sealed | p(1), roce(from1, pattern(1400, 3)), us100, 63);
            }
        out.write("incast_ecn_pfc", st);
        out.write("incast_lossy", lossy);
        out.write("incast_reserved_alpha_fifo", tight);
    }
    // PFC received: port 2's neighbour pauses priority 3; frames queue behind it; XON lets them go.
    {
        const auto to2 = frame(0, v4(sut::host_ipv4(0)), v4(sut::host_ipv4(2)), 1000);
        story st(0);
        st.add(p(2), pfc(sut::neighbour_mac(2), 1 << 3, 0xffff), us1);
        st.add(sealed | p(0), roce(to2, pattern(1000)), us100, 20);
        st.add(p(2), pfc(sut::neighbour_mac(2), 1 << 3, 0), us100);
        out.write("pfc_xoff_xon", st);
        // A storm: the neighbour keeps pausing; the watchdog (1 ms polls) declares it, drops, restores.
        for (std::uint8_t config :
             {std::uint8_t(c::fast_watchdog), std::uint8_t(c::fast_watchdog | c::watchdog_forward)}) {
            story storm(config);
            storm.add(sealed | p(0), roce(to2, pattern(1000)), 0, 10);
            for (int i = 0; i < 6; ++i) storm.add(p(2), pfc(sut::neighbour_mac(2), 1 << 3, 0xffff), ms2);
            storm.add(sealed | p(0), roce(to2, pattern(1000)), ms2, 3);
            out.write(config & c::watchdog_forward ? "pfc_storm_forward" : "pfc_storm_drop", storm);
        }
        bytes pause = pfc(sut::neighbour_mac(2), 0, 0xffff); // 802.3x PAUSE: opcode 0x0001
        pause[14] = 0x00;
        pause[15] = 0x01;
        out.write("pause_8023x", story(0).add(p(2), pause).add(p(2), pfc(sut::neighbour_mac(2), 0xff, 1000), ms100));
    }
    // What the switch drops, each for its reason.
    {
        auto ttl = to_port1;
        ttl.hop_limit = 1;
        auto big = frame(0, v4(sut::host_ipv4(0)), v4(sut::host_ipv4(2)), 2000); // port 2's MTU is 1500
        auto unrouted = frame(0, v4(sut::host_ipv4(0)), v4(0xc0a80001u), 16);
        story st(0);
        st.add(sealed | p(0), roce(ttl, pattern(16)));
        st.add(sealed | p(0), roce(big, pattern(2000)));
        st.add(sealed | p(0), roce(unrouted, pattern(16)));
        bytes arp(60, 0);
        std::copy_n(bytes{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}.begin(), 6, arp.begin());
        arp[12] = 0x08;
        arp[13] = 0x06;
        st.add(p(1), arp);
        bytes truncated = roce(to_port1, pattern(256));
        truncated.resize(40);
        st.add(p(0), truncated);
        out.write("drops", st);
    }
    // IPv4 header options (IHL 6) and a fragment: the parser's slow path.
    {
        bytes opt = roce(to_port1, pattern(64));
        opt.insert(opt.begin() + 34, {0x01, 0x01, 0x01, 0x00}); // 4 bytes of NOP/EOL options
        opt[14] = 0x46;
        out.write("ipv4_options", story(0).add(f::fix_lengths | sealed | p(0), opt));
        bytes fragment = roce(to_port1, pattern(64));
        fragment[20] = 0x20; // More Fragments
        out.write("ipv4_fragment", story(0).add(sealed | p(0), fragment));
    }
    // One vector mixing flows, a PFC frame in the middle, and a lossy UDP packet.
    {
        auto udp = to_port1;
        udp.dscp = 0;
        story st(0);
        st.add(sealed | f::hold | p(0), roce(to_port1, pattern(300)), 0, 3);
        st.add(f::hold | p(0), pfc(sut::neighbour_mac(0), 1 << 3, 0x100));
        st.add(sealed | f::hold | p(0),
               roce(frame(0, v4(sut::host_ipv4(0)), v4(sut::host_ipv4(2)), 300), pattern(300)));
        st.add(sealed | p(0), roce(udp, pattern(300)), us1, 2);
        out.write("mixed_vector", st);
    }
}

// ---- fuzz_nic_rx -----------------------------------------------------------------------------

void nic_seeds(const std::filesystem::path& root) {
    namespace nut = fuzz::nic_under_test;
    namespace f = nut::flag;
    namespace c = nut::config_bit;
    corpus out(root / "nic_rx");
    nut::nic_under_test dut(0); // for what the NIC chooses itself: QPNs, keys, its link-local GID
    const std::uint32_t rkey = dut.main_rkey();
    const std::uint64_t window = nut::main_iova + nut::remote_window;
    auto qp_flag = [](nut::qp_index q) { return static_cast<std::uint8_t>(q + 1); };

    // A packet from the peer to `q`.
    auto to = [&](nut::qp_index q, wire::ib_opcode opcode, std::uint32_t psn) {
        wire::roce_headers_spec s;
        s.source_mac = nut::peer_mac;
        s.destination_mac = nut::nic_mac;
        if (q == nut::rc_srq) {
            s.source_gid = nut::peer_ipv6();
            s.destination_gid = dut.nic().gid(0);
        } else {
            s.source_gid = wire::ipv6_address::v4_mapped(nut::peer_ipv4);
            s.destination_gid = wire::ipv6_address::v4_mapped(nut::nic_ipv4);
        }
        s.dscp = 26;
        s.ecn = wire::ecn::ect0;
        s.opcode = wire::to_byte(opcode);
        s.dest_qpn = dut.qpn(q);
        s.psn = psn;
        s.ack_request = true;
        return s;
    };
    using op = wire::ib_opcode;
    const std::uint8_t rc = qp_flag(nut::rc) | f::seal, uc = qp_flag(nut::uc) | f::seal,
                       ud = qp_flag(nut::ud) | f::seal, srq = qp_flag(nut::rc_srq) | f::seal;

    // -- the responder: requests from the peer
    out.write("rc_send_only", story(0).add(rc, roce(to(nut::rc, op::rc_send_only, nut::rq_psn), pattern(200))));
    {
        auto s = to(nut::rc, op::rc_send_only_with_immediate, nut::rq_psn);
        s.immediate = 0x12345678;
        s.solicited = true;
        out.write("rc_send_immediate", story(0).add(rc, roce(s, pattern(32))));
    }
    {
        story st(c::mtu_256); // a three-packet SEND at path MTU 256
        st.add(rc, roce(to(nut::rc, op::rc_send_first, nut::rq_psn), pattern(256)));
        st.add(rc, roce(to(nut::rc, op::rc_send_middle, nut::rq_psn + 1), pattern(256, 2)));
        st.add(rc, roce(to(nut::rc, op::rc_send_last, nut::rq_psn + 2), pattern(100, 3)));
        out.write("rc_send_three_packets", st);
        story gap(c::mtu_256); // the middle one late: held ahead of the gap, then drained
        gap.add(rc, roce(to(nut::rc, op::rc_send_first, nut::rq_psn), pattern(256)));
        gap.add(rc, roce(to(nut::rc, op::rc_send_last, nut::rq_psn + 2), pattern(100, 3)), us1);
        gap.add(rc, roce(to(nut::rc, op::rc_send_middle, nut::rq_psn + 1), pattern(256, 2)), us100);
        out.write("rc_send_reordered", gap);
    }
    {
        auto s = to(nut::rc, op::rc_rdma_write_only, nut::rq_psn);
        s.reth_va = window;
        s.reth_rkey = rkey;
        s.reth_length = 300;
        out.write("rc_write_only", story(0).add(rc, roce(s, pattern(300))));
        s.opcode = wire::to_byte(op::rc_rdma_write_only_with_immediate);
        s.immediate = 7;
        out.write("rc_write_immediate", story(0).add(rc, roce(s, pattern(300))));
        s = to(nut::rc, op::rc_rdma_write_first, nut::rq_psn);
        s.reth_va = window;
        s.reth_rkey = rkey;
        s.reth_length = 1500;
        story st(0);
        st.add(rc, roce(s, pattern(1024)));
        st.add(rc, roce(to(nut::rc, op::rc_rdma_write_last, nut::rq_psn + 1), pattern(476)));
        out.write("rc_write_two_packets", st);
        s = to(nut::rc, op::rc_rdma_write_only, nut::rq_psn);
        s.reth_va = nut::read_only_iova; // remote read only: a remote access error NAK
        s.reth_rkey = dut.read_only_rkey();
        s.reth_length = 16;
        out.write("rc_write_read_only_mr", story(0).add(rc, roce(s, pattern(16))));
    }
    {
        auto s = to(nut::rc, op::rc_rdma_read_request, nut::rq_psn);
        s.reth_va = window;
        s.reth_rkey = rkey;
        s.reth_length = 3000;
        story st(0);
        st.add(rc, roce(s), us1);
        s.psn = nut::rq_psn + 3;
        s.reth_va = nut::read_only_iova;
        s.reth_rkey = dut.read_only_rkey();
        s.reth_length = 100;
        st.add(rc, roce(s), us1);
        s.psn = nut::rq_psn; // a duplicate of the first: read again (C9-112)
        s.reth_va = window;
        s.reth_rkey = rkey;
        s.reth_length = 3000;
        st.add(rc, roce(s), us1);
        out.write("rc_read_requests", st);
    }
    {
        // At the edges of the registered ranges: the last bytes of each MR, and one byte past.
        const std::uint64_t main_end = nut::main_iova + nut::main_bytes;
        auto write = to(nut::rc, op::rc_rdma_write_only, nut::rq_psn);
        write.reth_va = main_end - 300;
        write.reth_rkey = rkey;
        write.reth_length = 300;
        auto read = to(nut::rc, op::rc_rdma_read_request, nut::rq_psn + 1);
        read.reth_va = nut::read_only_iova + nut::read_only_bytes - 2000;
        read.reth_rkey = dut.read_only_rkey();
        read.reth_length = 2000;
        auto atomic = to(nut::rc, op::rc_fetch_add, nut::rq_psn + 3);
        atomic.atomic_va = main_end - 8;
        atomic.atomic_rkey = rkey;
        atomic.atomic_swap_add = 1;
        out.write("rc_mr_edges",
                  story(0).add(rc, roce(write, pattern(300))).add(rc, roce(read), us1).add(rc, roce(atomic), us1));
        write.reth_va = main_end - 299; // one byte past the end: a remote access error
        out.write("rc_write_past_mr_end", story(0).add(rc, roce(write, pattern(300))));
        read.reth_va += 1;
        read.psn = nut::rq_psn;
        out.write("rc_read_past_mr_end", story(0).add(rc, roce(read), us1));
        atomic.atomic_va = main_end;
        atomic.psn = nut::rq_psn;
        out.write("rc_atomic_past_mr_end", story(0).add(rc, roce(atomic), us1));
    }
    {
        auto s = to(nut::rc, op::rc_compare_swap, nut::rq_psn);
        s.atomic_va = window + 64;
        s.atomic_rkey = rkey;
        s.atomic_compare = 0;
        s.atomic_swap_add = 5;
        story st(c::one_rd_atomic);
        st.add(rc, roce(s));
        s.opcode = wire::to_byte(op::rc_fetch_add);
        s.psn = nut::rq_psn + 1;
        s.atomic_swap_add = 3;
        st.add(rc, roce(s));
        st.add(rc, roce(s), us1); // a duplicate: answered from the saved result
        s.psn = nut::rq_psn + 2;
        s.atomic_va = window + 65; // not 8-byte aligned
        st.add(rc, roce(s));
        out.write("rc_atomics", st);
    }
    {
        story st(0);
        st.add(rc, roce(to(nut::rc, op::rc_send_only, nut::rq_psn - 1), pattern(8)));        // duplicate: ACKed again
        st.add(rc, roce(to(nut::rc, op::rc_send_only, nut::rq_psn + 3), pattern(8)), us100); // ahead: held, NAK
        st.add(rc, roce(to(nut::rc, op::rc_send_only, nut::rq_psn), pattern(8)), us1);
        out.write("rc_duplicate_and_gap", st);
        story rnr(c::few_retries); // more SENDs than receive WQEs: RNR NAK
        for (std::uint32_t i = 0; i < nut::rc_receive_slots + 2; ++i)
            rnr.add(rc, roce(to(nut::rc, op::rc_send_only, nut::rq_psn + i), pattern(8)));
        out.write("rc_receiver_not_ready", rnr);
    }
    {
        auto s = to(nut::rc, op::rc_send_only, nut::rq_psn);
        s.ecn = wire::ecn::ce; // the NIC, as notification point, answers with a CNP
        out.write("rc_ecn_ce", story(0).add(rc, roce(s, pattern(64)), us100, 3));
    }

    // -- the completer: responses to the requests the NIC opened with (PSNs 1000-1008)
    auto response = [&](op opcode, std::uint32_t psn, std::uint8_t syndrome, std::uint32_t msn) {
        auto s = to(nut::rc, opcode, psn);
        s.ack_request = false;
        s.aeth_syndrome = syndrome;
        s.aeth_msn = msn;
        return s;
    };
    namespace syn = wire::aeth_syndrome;
    {
        story st(0);
        st.add(rc, roce(response(op::rc_acknowledge, nut::send_psn, syn::ack(31), 1)), us1);
        st.add(rc, roce(response(op::rc_acknowledge, nut::write_psn + 1, syn::ack(31), 2)), us1);
        st.add(rc, roce(response(op::rc_rdma_read_response_first, nut::read_psn, syn::ack(31), 3), pattern(1024)));
        st.add(rc, roce(response(op::rc_rdma_read_response_middle, nut::read_psn + 1, 0, 0), pattern(1024, 4)));
        st.add(rc, roce(response(op::rc_rdma_read_response_last, nut::read_psn + 2, syn::ack(31), 3), pattern(952, 5)),
               us1);
        auto atomic = response(op::rc_atomic_acknowledge, nut::compare_swap_psn, syn::ack(31), 4);
        atomic.atomic_original = 0;
        st.add(rc, roce(atomic));
        atomic.psn = nut::fetch_add_psn;
        atomic.aeth_msn = 5;
        atomic.atomic_original = 41;
        st.add(rc, roce(atomic), us1);
        st.add(rc | f::replenish | f::post_more,
               roce(response(op::rc_acknowledge, nut::send_immediate_psn, syn::ack(31), 6)), us100);
        out.write("rc_completer_all", st);
    }
    out.write("rc_ack_coalesced",
              story(0).add(rc, roce(response(op::rc_acknowledge, nut::write_psn + 1, syn::ack(31), 2)), us1));
    out.write("rc_nak_sequence", story(0).add(rc,
                                              roce(response(op::rc_acknowledge, nut::write_psn,
                                                            syn::nak(wire::nak_code::psn_sequence_error), 1)),
                                              us100));
    out.write("rc_nak_remote_access", story(0).add(rc,
                                                   roce(response(op::rc_acknowledge, nut::send_psn,
                                                                 syn::nak(wire::nak_code::remote_access_error), 0)),
                                                   us100));
    out.write("rc_rnr_nak", story(c::few_retries)
                                .add(rc, roce(response(op::rc_acknowledge, nut::send_psn, syn::rnr_nak(1), 0)), ms2)
                                .add(rc, roce(response(op::rc_acknowledge, nut::send_psn, syn::rnr_nak(1), 0)), ms2));
    {
        story st(0); // only the last READ response: the ones before it are missing (implied NAK)
        st.add(rc, roce(response(op::rc_acknowledge, nut::write_psn + 1, syn::ack(31), 2)));
        st.add(rc, roce(response(op::rc_rdma_read_response_last, nut::read_psn + 2, syn::ack(31), 3), pattern(952, 5)),
               us100);
        st.add(rc, roce(response(op::rc_acknowledge, nut::send_immediate_psn, syn::ack(31), 6)), ms2);
        out.write("rc_read_response_missing", st);
        story timeout(c::few_retries); // nothing answers: retransmission, then retries exhausted
        timeout.add(0, bytes{}, ms100).add(0, bytes{}, ms100);
        out.write("rc_transport_timeout", timeout);
    }

    {
        // The application moves rc through SQD, RTS, ERR and RESET (back to RTS) while responses
        // and requests are held ahead of gaps.
        const std::uint8_t cycle = rc | f::cycle_state;
        story st(0);
        st.add(rc, roce(response(op::rc_rdma_read_response_last, nut::read_psn + 2, syn::ack(31), 3), pattern(952, 5)));
        st.add(rc, roce(to(nut::rc, op::rc_send_only, nut::rq_psn + 2), pattern(8)));
        st.add(cycle, roce(response(op::rc_acknowledge, nut::send_psn, syn::ack(31), 1)), us1);      // to SQD
        st.add(cycle, roce(response(op::rc_acknowledge, nut::write_psn + 1, syn::ack(31), 2)), us1); // to RTS
        st.add(cycle, roce(to(nut::rc, op::rc_send_only, nut::rq_psn), pattern(8)), us1);            // to ERR
        st.add(cycle, roce(to(nut::rc, op::rc_send_only, nut::rq_psn + 1), pattern(8)), us1);        // RESET, RTS
        st.add(rc | f::post_more, roce(to(nut::rc, op::rc_send_only, nut::rq_psn), pattern(8)), us100);
        st.add(rc, roce(response(op::rc_acknowledge, nut::sq_psn + 2, syn::ack(31), 3)), us1);
        out.write("rc_state_cycle", st);
    }

    // -- UC, UD, the SRQ over IPv6
    out.write("uc_send_only", story(0).add(uc, roce(to(nut::uc, op::uc_send_only, nut::rq_psn), pattern(100))));
    {
        auto s = to(nut::uc, op::uc_rdma_write_first, nut::rq_psn);
        s.reth_va = window;
        s.reth_rkey = rkey;
        s.reth_length = 1100;
        story st(0);
        st.add(uc, roce(s, pattern(1024)));
        st.add(uc, roce(to(nut::uc, op::uc_rdma_write_last_with_immediate, nut::rq_psn + 2), pattern(76))); // a gap
        st.add(uc, roce(to(nut::uc, op::uc_send_first, nut::rq_psn + 3), pattern(1024)));
        st.add(uc, roce(to(nut::uc, op::uc_send_last, nut::rq_psn + 4), pattern(10)));
        out.write("uc_write_gap_send", st);
    }
    {
        auto s = to(nut::ud, op::ud_send_only, 5);
        s.deth_qkey = nut::qkey;
        s.deth_source_qpn = nut::peer_qpn[nut::ud];
        story st(0);
        st.add(ud, roce(s, pattern(200)));
        s.deth_qkey = 0x22222222; // the wrong Q_Key: dropped
        st.add(ud, roce(s, pattern(20)));
        s.deth_qkey = nut::qkey;
        s.opcode = wire::to_byte(op::ud_send_only_with_immediate);
        s.source_gid = nut::peer_ipv6(); // UD takes any source, over IPv6 too
        s.destination_gid = dut.nic().gid(0);
        st.add(ud, roce(s, pattern(1024)));
        out.write("ud_sends", st);
    }
    out.write("srq_rc_v6_send",
              story(0).add(srq, roce(to(nut::rc_srq, op::rc_send_only, nut::rq_psn), pattern(500)), 0, 9));

    // -- congestion: CNP (reaction point), PFC, a slow receiver, priority tags
    {
        wire::roce_headers_spec s = to(nut::rc, op::rc_send_only, 0);
        s.dscp = 48;
        wire::make_cnp_spec(s, dut.qpn(nut::rc));
        out.write("cnp", story(0).add(rc, roce(s, bytes(wire::cnp_payload_length, 0)), us1, 5));
    }
    out.write("pfc_pause_prio3",
              story(0).add(0, pfc(nut::peer_mac, 1 << 3, 0xffff), us100).add(0, pfc(nut::peer_mac, 1 << 3, 0)));
    out.write(
        "slow_receiver",
        story(c::slow_receiver).add(rc, roce(to(nut::rc, op::rc_send_only, nut::rq_psn), pattern(1000)), us1, 40));
    {
        auto s = to(nut::rc, op::rc_send_only, nut::rq_psn);
        s.vlan = true;
        s.pcp = 3;
        out.write("vlan_trust_pcp", story(c::trust_pcp).add(rc, roce(s, pattern(64))));
    }
    {
        bytes bad = roce(to(nut::rc, op::rc_send_only, nut::rq_psn), pattern(64));
        bad[bad.size() - 1] ^= 1; // a bad ICRC, not sealed: counted, dropped
        out.write("bad_icrc", story(0).add(qp_flag(nut::rc), bad));
    }
}

} // namespace

// ---- fuzz_attach_protocol -------------------------------------------------------------------

// A program's conversation with the attach socket (support/attach_records.hpp). Handles are
// named by the order the replies returned them: 0 the first (after open_device, which returns
// none), 1 the next, ...
struct conversation {
    explicit conversation(std::uint8_t flags = 0) { data.push_back(flags); }
    conversation& send(const attach::request& r, std::uint8_t extra = 0) {
        // The body: the request from `handle` on, as far as its fields reach (at most 255 bytes).
        const auto* from = reinterpret_cast<const std::uint8_t*>(&r.handle);
        std::size_t length = std::min<std::size_t>(255, sizeof r - offsetof(attach::request, handle));
        while (length > 4 && from[length - 1] == 0) --length;
        data.push_back(static_cast<std::uint8_t>(static_cast<std::uint8_t>(r.code) | extra));
        data.push_back(static_cast<std::uint8_t>(length));
        data.insert(data.end(), from, from + length);
        return *this;
    }
    conversation& raw(const bytes& datagram, std::uint8_t extra = 0) {
        data.push_back(static_cast<std::uint8_t>(fuzz::attach_raw | extra));
        data.push_back(static_cast<std::uint8_t>(datagram.size()));
        data.insert(data.end(), datagram.begin(), datagram.end());
        return *this;
    }
    conversation& scribble(std::uint8_t region, std::uint16_t offset, const bytes& with) {
        data.push_back(fuzz::attach_scribble);
        data.push_back(static_cast<std::uint8_t>(3 + with.size()));
        data.push_back(region);
        data.push_back(static_cast<std::uint8_t>(offset >> 8));
        data.push_back(static_cast<std::uint8_t>(offset));
        data.insert(data.end(), with.begin(), with.end());
        return *this;
    }
    bytes data;
};

attach::request request(attach::op code, std::uint32_t handle = 0) {
    attach::request r{};
    r.code = code;
    r.handle = handle;
    return r;
}

void attach_seeds(const std::filesystem::path& root) {
    using attach::op;
    const std::filesystem::path dir = root / "attach_protocol";
    std::filesystem::create_directories(dir);
    unsigned count = 0;
    auto write = [&](const std::string& name, const conversation& c) {
        std::ofstream out(dir / name, std::ios::binary | std::ios::trunc);
        out.write(reinterpret_cast<const char*>(c.data.data()), static_cast<std::streamsize>(c.data.size()));
        ++count;
    };
    auto rc_qp = [](std::uint32_t pd, std::uint32_t cq, ibv_qp_type type = IBV_QPT_RC, std::uint32_t srq = 0) {
        attach::request r = request(op::create_qp);
        r.create_qp.pd = pd;
        r.create_qp.send_cq = r.create_qp.recv_cq = cq;
        r.create_qp.srq = srq;
        r.create_qp.qp_type = type;
        r.create_qp.cap.max_send_wr = r.create_qp.cap.max_recv_wr = 8;
        r.create_qp.cap.max_send_sge = r.create_qp.cap.max_recv_sge = 1;
        return r;
    };
    auto cq = [](std::uint32_t cqe, std::uint32_t channel = 0) {
        attach::request r = request(op::create_cq);
        r.create_cq.cqe = cqe;
        r.create_cq.channel = channel;
        return r;
    };
    auto modify = [](std::uint32_t qp, ibv_qp_state state, int mask) {
        attach::request r = request(op::modify_qp, qp);
        r.modify_qp.attr.qp_state = state;
        r.modify_qp.attr.port_num = 1;
        r.modify_qp.attr.path_mtu = IBV_MTU_1024;
        r.modify_qp.attr.dest_qp_num = 0x11;
        r.modify_qp.attr.timeout = 14;
        r.modify_qp.attr.retry_cnt = 7;
        r.modify_qp.attr.rnr_retry = 7;
        r.modify_qp.attr.ah_attr.is_global = 1;
        r.modify_qp.attr.ah_attr.port_num = 1;
        r.modify_qp.attr.ah_attr.grh.sgid_index = 1;
        // h2's address, 10.0.0.2, as an IPv4-mapped GID.
        const std::uint8_t gid[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 0, 0, 2};
        std::memcpy(r.modify_qp.attr.ah_attr.grh.dgid.raw, gid, 16);
        r.modify_qp.mask = mask;
        return r;
    };
    // pd 0, cq 1, qp 2: up to RTS towards h2, queried, torn down in order.
    conversation connected;
    connected.send(request(op::alloc_pd)).send(cq(16)).send(rc_qp(0, 1));
    connected.send(modify(2, IBV_QPS_INIT, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS));
    connected.send(modify(2, IBV_QPS_RTR,
                          IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                              IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER));
    connected.send(modify(2, IBV_QPS_RTS,
                          IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
                              IBV_QP_MAX_QP_RD_ATOMIC));
    connected.send(request(op::query_qp, 2)).send(request(op::query_device)).send(request(op::query_port));
    write("rc_qp_to_rts_and_back", conversation(connected)
                                       .send(request(op::destroy_qp, 2))
                                       .send(request(op::destroy_cq, 1))
                                       .send(request(op::dealloc_pd, 0)));
    // The same QP's rings and CQ scribbled on, its doorbell rung: the NIC reads what it finds.
    write("rc_qp_rings_scribbled", conversation(connected)
                                       .scribble(0, 0, bytes(64, 0xff))
                                       .scribble(1, 0, bytes(200, 0x41))
                                       .scribble(2, 8, bytes(128, 0x7f))
                                       .scribble(3, 0, bytes(64, 0x01)));
    attach::request mr = request(op::reg_mr);
    mr.reg_mr.pd = 0;
    mr.reg_mr.access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;
    mr.reg_mr.address = 0x1000;
    mr.reg_mr.length = 4096;
    write("reg_mr_unmapped", conversation().send(request(op::alloc_pd)).send(mr).send(request(op::dereg_mr, 1)));
    attach::request srq = request(op::create_srq);
    srq.create_srq.pd = 0;
    srq.create_srq.attr.max_wr = 16;
    srq.create_srq.attr.max_sge = 1;
    attach::request limit = request(op::modify_srq, 2);
    limit.modify_srq.attr.srq_limit = 4;
    limit.modify_srq.mask = IBV_SRQ_LIMIT;
    write("srq_and_a_qp_on_it", conversation()
                                    .send(request(op::alloc_pd))
                                    .send(cq(8))
                                    .send(srq)
                                    .send(limit)
                                    .send(request(op::query_srq, 2))
                                    .send(rc_qp(0, 1, IBV_QPT_RC, 2))
                                    .send(request(op::destroy_srq, 2)));
    write("channel_and_cq", conversation()
                                .send(request(op::create_comp_channel))
                                .send(cq(4, 0))
                                .send(request(op::destroy_comp_channel, 0))
                                .send(request(op::destroy_cq, 1))
                                .send(request(op::destroy_comp_channel, 0)));
    attach::request ah = request(op::create_ah);
    ah.create_ah.pd = 0;
    ah.create_ah.attr.is_global = 1;
    ah.create_ah.attr.port_num = 1;
    ah.create_ah.attr.grh.sgid_index = 1;
    const std::uint8_t h2[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 0, 0, 2};
    std::memcpy(ah.create_ah.attr.grh.dgid.raw, h2, 16);
    write("ud_qp_and_ah", conversation()
                              .send(request(op::alloc_pd))
                              .send(cq(8))
                              .send(rc_qp(0, 1, IBV_QPT_UD))
                              .send(ah)
                              .send(request(op::destroy_ah, 3)));
    attach::request other_host = request(op::hello);
    other_host.hello.version = attach::protocol_version;
    std::strcpy(other_host.hello.host, "h2");
    attach::request open = request(op::open_device);
    std::strcpy(open.open_device.device, "rfab0");
    write("no_hello_then_another_host", conversation(fuzz::attach_no_open)
                                            .send(request(op::alloc_pd))
                                            .send(open, fuzz::attach_memory)
                                            .send(other_host));
    write("open_without_memory", conversation(fuzz::attach_no_open)
                                     .send([] {
                                         attach::request h = request(op::hello);
                                         h.hello.version = attach::protocol_version;
                                         return h;
                                     }())
                                     .send(open));
    write("short_and_unknown_messages",
          conversation().raw({1, 2, 3}).raw(bytes(40, 0xee), fuzz::attach_memory).send(request(static_cast<op>(31))));
    std::printf("%s: %u seeds\n", dir.c_str(), count);
}

int main(int argc, char** argv) {
    if (argc != 2) {
        std::fprintf(stderr, "usage: %s CORPUS_DIR (fuzz/corpus)\n", argv[0]);
        return 2;
    }
    switch_seeds(argv[1]);
    nic_seeds(argv[1]);
    attach_seeds(argv[1]);
    return 0;
}
