// The NIC fuzz_nic_rx feeds: a nic_emu::nic_node with one context playing the verbs library,
// shared with the seed tool so that seeds are addressed to its QPs, PSNs, keys and addresses.
//
// Four QPs in RTS, the peer being the fuzzer:
//   rc      RC over IPv4, its own receive queue; the requester has SEND, RDMA WRITE, RDMA READ,
//           compare-and-swap, fetch-and-add and SEND with immediate outstanding (PSNs 1000-1008),
//           so ACKs, NAKs, READ responses and atomic ACKs reach the completer;
//   rc_srq  RC over IPv6 (link-local source GID), receiving from a shared receive queue;
//   uc      UC over IPv4, a SEND outstanding;
//   ud      UD (Q_Key 0x11111111), a datagram outstanding through an address handle.
// The responders expect PSN 2000. Receive WQEs are posted on every receive ring.
//
// Application memory is one heap block: [guard | main MR | guard | read-only MR | guard]. The
// main MR allows local write and remote write, read and atomics; the read-only MR remote read
// alone. The guards are poisoned, so the NIC touching a byte outside a registered range is an
// AddressSanitizer report, not a silent scribble.
#pragma once

#include "dataplane/wire/ip.hpp"
#include "nic_emu/nic_node.hpp"

#include <sanitizer/asan_interface.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <unistd.h>
#include <vector>

namespace rocefab::fuzz::nic_under_test {

using hw::grh_length;
using nic::local_address_space;
using nic::nic_node;
using nic::nic_spec;
using nic::shared_region;

inline constexpr wire::mac_address nic_mac{{0x02, 0x01, 0x00, 0x01, 0x00, 0x01}};
inline constexpr wire::mac_address peer_mac{{0x02, 0x01, 0x00, 0x02, 0x00, 0x01}};
inline constexpr std::uint32_t nic_ipv4 = 0x0a000001u;  // 10.0.0.1
inline constexpr std::uint32_t peer_ipv4 = 0x0a000002u; // 10.0.0.2
inline wire::ipv6_address peer_ipv6() {                 // 2001:db8::2, rc_srq's peer
    wire::ipv6_address a{};
    a.bytes = {0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2};
    return a;
}

enum qp_index : std::uint8_t { rc, rc_srq, uc, ud, qp_count };
inline constexpr std::array<std::uint32_t, qp_count> peer_qpn = {0x100, 0x101, 0x102, 0x200};
inline constexpr std::uint32_t qkey = 0x11111111;
inline constexpr std::uint32_t sq_psn = 1000; // every requester's first PSN
inline constexpr std::uint32_t rq_psn = 2000; // every responder's expected PSN

// Remote addresses (RETH/AtomicETH VAs) are IOVAs: fixed, whatever the heap gives.
inline constexpr std::uint64_t main_iova = 0x1000'0000;
inline constexpr std::uint64_t read_only_iova = 0x2000'0000;
inline constexpr std::size_t guard_bytes = 4096;
inline constexpr std::size_t main_bytes = 96 * 1024;
inline constexpr std::size_t read_only_bytes = 16 * 1024;
// Where things are in the main MR (offsets from its start).
inline constexpr std::size_t rc_receive_at = 0, rc_receive_slots = 16;        // 1 KiB each, 2 SGEs
inline constexpr std::size_t uc_receive_at = 16 * 1024, uc_receive_slots = 8; // 1 KiB each
inline constexpr std::size_t ud_receive_at = 24 * 1024, ud_receive_slots = 8; // GRH + 1 KiB each
inline constexpr std::size_t srq_receive_at = 34 * 1024, srq_receive_slots = 8;
inline constexpr std::size_t send_from = 44 * 1024;
inline constexpr std::size_t read_into = 48 * 1024;
inline constexpr std::size_t atomic_into = 52 * 1024;
inline constexpr std::size_t remote_window = 64 * 1024; // what the seeds' WRITEs, READs and atomics name

// What the requester sends (the remote side is imaginary: these keys and VAs are the peer's).
inline constexpr std::uint32_t peer_rkey = 0x1234;
inline constexpr std::uint64_t peer_va = 0x5000'0000;
inline constexpr std::uint32_t write_length = 2000; // two packets at path MTU 1024
inline constexpr std::uint32_t read_length = 3000;  // three responses at path MTU 1024
// PSNs of the RC requester's opening requests (path MTU 1024).
inline constexpr std::uint32_t send_psn = sq_psn, write_psn = sq_psn + 1, read_psn = sq_psn + 3,
                               compare_swap_psn = sq_psn + 6, fetch_add_psn = sq_psn + 7,
                               send_immediate_psn = sq_psn + 8;

// `config`, the input's first byte, picks a variant:
namespace config_bit {
inline constexpr std::uint8_t trust_pcp = 1 << 0;     // frames priority-tagged (mlnx_qos --trust pcp)
inline constexpr std::uint8_t slow_receiver = 1 << 1; // host_rx_bps 1G, a 64 KiB receive buffer, PFC out
inline constexpr std::uint8_t no_dcqcn = 1 << 2;      // DCQCN neither reaction nor notification point
inline constexpr std::uint8_t one_rd_atomic = 1 << 3; // max_rd_atomic and max_dest_rd_atomic 1, not 4
inline constexpr std::uint8_t no_timeout = 1 << 4;    // timeout 0 (wait forever), not 8 (1 ms)
inline constexpr std::uint8_t few_retries = 1 << 5;   // retry_cnt 1 and rnr_retry 0, not 7 and 7
inline constexpr std::uint8_t mtu_256 = 1 << 6;       // path MTU 256, not 1024 (the PSNs above move)
} // namespace config_bit

// A record's flags.
namespace flag {
inline constexpr std::uint8_t qp_mask = 7; // 1 + qp_index: the BTH's destination QP is set to it
inline constexpr std::uint8_t fix_lengths = 1 << 3;
inline constexpr std::uint8_t seal = 1 << 4;        // IPv4 header checksum and ICRC
inline constexpr std::uint8_t replenish = 1 << 5;   // afterwards the application reaps CQEs and reposts receives
inline constexpr std::uint8_t post_more = 1 << 6;   // afterwards the application posts READ, fetch-and-add, SEND on rc
inline constexpr std::uint8_t cycle_state = 1 << 7; // afterwards the application moves rc on (cycle_rc_state)
} // namespace flag

namespace detail {
[[noreturn]] inline void setup_failed(const char* what, int error) {
    std::fprintf(stderr, "fuzz: setting up the NIC under test: %s failed (%d)\n", what, error);
    std::abort();
}
inline void check(int error, const char* what) {
    if (error) setup_failed(what, error);
}
} // namespace detail

class nic_under_test {
public:
    // Attach it to a sink before the first poll (the opening requests go out then).
    explicit nic_under_test(std::uint8_t config) : _config(config) {
        nic_spec spec;
        spec.host = "dut";
        spec.name = "rfab0";
        spec.mac = nic_mac;
        spec.address = wire::ipv6_address::v4_mapped(nic_ipv4);
        spec.ip_mtu = 4200;
        spec.trust_pcp = config & config_bit::trust_pcp;
        if (config & config_bit::slow_receiver) {
            spec.host_rx_bps = 1'000'000'000;
            spec.rx_buffer_bytes = 64 * 1024;
            spec.rx_xoff_bytes = 32 * 1024;
            spec.rx_xon_bytes = 16 * 1024;
        }
        if (config & config_bit::no_dcqcn) spec.dcqcn_rp_priorities = spec.dcqcn_np_priorities = 0;
        _nic = std::make_unique<nic_node>(spec, [](const wire::ipv6_address&, wire::mac_address& mac) {
            mac = peer_mac;
            return true;
        });
        build();
    }
    ~nic_under_test() {
        _nic.reset(); // closes the context: nothing refers to the memory after this
        ASAN_UNPOISON_MEMORY_REGION(_memory.get(), memory_bytes);
    }
    nic_under_test(const nic_under_test&) = delete;
    nic_under_test& operator=(const nic_under_test&) = delete;

    nic_node& nic() { return *_nic; }
    std::uint32_t qpn(qp_index q) const { return _qps[q].qpn; }
    std::uint32_t main_rkey() const { return _main_rkey; }
    std::uint32_t read_only_rkey() const { return _read_only_rkey; }

    // The application reaps every completion and tops each receive ring up again.
    void replenish() {
        for (cq_ring* cq : {&_send_cq, &_recv_cq}) {
            auto& ring = cq->control->ring;
            ring.consumer.store(ring.producer.load(std::memory_order_acquire), std::memory_order_release);
        }
        post_receives();
    }

    // The application posts another READ, fetch-and-add and SEND on the rc QP.
    void post_more() {
        post_send(_qps[rc], IBV_WR_RDMA_READ, read_into, 1000, peer_va + 0x4000, peer_rkey);
        post_atomic(IBV_WR_ATOMIC_FETCH_AND_ADD, atomic_into + 16, peer_va + 0x2010, 3, 0);
        post_send(_qps[rc], IBV_WR_SEND, send_from, 20);
    }

    // The application moves the rc QP one step along a cycle: to SQD (asking for the drained
    // event), back to RTS, to ERR, then through RESET back to RTS with the peer and PSNs of the
    // start. A step the QP's state does not allow (it went to ERR on its own) is refused, as
    // ibv_modify_qp would refuse it.
    void cycle_rc_state(sim_time now) {
        ibv_qp_attr a{};
        switch (_cycle++ % 4) {
        case 0:
            a.qp_state = IBV_QPS_SQD;
            a.en_sqd_async_notify = 1;
            (void)_nic->modify_qp(_context, _qps[rc].handle, a, IBV_QP_STATE | IBV_QP_EN_SQD_ASYNC_NOTIFY, now);
            break;
        case 1:
            a.qp_state = IBV_QPS_RTS;
            (void)_nic->modify_qp(_context, _qps[rc].handle, a, IBV_QP_STATE, now);
            break;
        case 2:
            a.qp_state = IBV_QPS_ERR;
            (void)_nic->modify_qp(_context, _qps[rc].handle, a, IBV_QP_STATE, now);
            break;
        default:
            a.qp_state = IBV_QPS_RESET;
            detail::check(_nic->modify_qp(_context, _qps[rc].handle, a, IBV_QP_STATE, now), "rc to RESET");
            connect(_qps[rc], IBV_QPT_RC, 1, peer_qpn[rc], _config & config_bit::one_rd_atomic, now);
            post_receives();
            break;
        }
    }

private:
    static constexpr std::size_t memory_bytes = 3 * guard_bytes + main_bytes + read_only_bytes;
    static constexpr std::size_t main_at = guard_bytes;
    static constexpr std::size_t read_only_at = 2 * guard_bytes + main_bytes;

    struct cq_ring {
        std::uint32_t handle = 0;
        hw::cq_control* control = nullptr;
    };
    struct qp_ring {
        std::uint32_t handle = 0, qpn = 0;
        hw::qp_control* control = nullptr;
        hw::send_wqe* sq = nullptr;
        hw::recv_wqe* rq = nullptr;
    };

    std::uint64_t address(std::size_t main_offset) const {
        return reinterpret_cast<std::uint64_t>(_memory.get() + main_at + main_offset);
    }

    void build() {
        _memory = std::make_unique<std::uint8_t[]>(memory_bytes);
        std::memset(_memory.get(), 0, memory_bytes);
        ASAN_POISON_MEMORY_REGION(_memory.get(), guard_bytes);
        ASAN_POISON_MEMORY_REGION(_memory.get() + main_at + main_bytes, guard_bytes);
        ASAN_POISON_MEMORY_REGION(_memory.get() + read_only_at + read_only_bytes, guard_bytes);

        nic_node& n = *_nic;
        _context = n.open_context(std::make_unique<local_address_space>(), -1);
        detail::check(n.alloc_pd(_context, _pd), "alloc_pd");
        std::uint32_t handle, rkey;
        detail::check(n.reg_mr(_context, _pd, address(0), main_bytes, main_iova,
                               IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
                                   IBV_ACCESS_REMOTE_ATOMIC,
                               handle, _lkey, _main_rkey),
                      "reg_mr (main)");
        std::uint32_t unused_lkey;
        detail::check(n.reg_mr(_context, _pd, reinterpret_cast<std::uint64_t>(_memory.get() + read_only_at),
                               read_only_bytes, read_only_iova, IBV_ACCESS_REMOTE_READ, handle, unused_lkey, rkey),
                      "reg_mr (read-only)");
        _read_only_rkey = rkey;
        make_cq(_send_cq);
        make_cq(_recv_cq);
        make_srq();
        const bool one = _config & config_bit::one_rd_atomic;
        make_qp(_qps[rc], IBV_QPT_RC, 0);
        make_qp(_qps[rc_srq], IBV_QPT_RC, _srq_handle);
        make_qp(_qps[uc], IBV_QPT_UC, 0);
        make_qp(_qps[ud], IBV_QPT_UD, 0);
        connect(_qps[rc], IBV_QPT_RC, 1, peer_qpn[rc], one);
        connect(_qps[rc_srq], IBV_QPT_RC, 0, peer_qpn[rc_srq], one);
        connect(_qps[uc], IBV_QPT_UC, 1, peer_qpn[uc], one);
        connect(_qps[ud], IBV_QPT_UD, 1, 0, one);
        ibv_ah_attr ah{};
        ah.is_global = 1;
        ah.port_num = 1;
        ah.grh.hop_limit = 64;
        ah.grh.sgid_index = 1;
        const wire::ipv6_address peer = wire::ipv6_address::v4_mapped(peer_ipv4);
        std::memcpy(ah.grh.dgid.raw, peer.bytes.data(), 16);
        detail::check(n.create_ah(_context, _pd, ah, _ah), "create_ah");
        post_receives();

        post_send(_qps[rc], IBV_WR_SEND, send_from, 100);
        post_send(_qps[rc], IBV_WR_RDMA_WRITE, send_from, write_length, peer_va, peer_rkey);
        post_send(_qps[rc], IBV_WR_RDMA_READ, read_into, read_length, peer_va + 0x1000, peer_rkey);
        post_atomic(IBV_WR_ATOMIC_CMP_AND_SWP, atomic_into, peer_va + 0x2000, 0, 1);
        post_atomic(IBV_WR_ATOMIC_FETCH_AND_ADD, atomic_into + 8, peer_va + 0x2008, 1, 0);
        post_send(_qps[rc], IBV_WR_SEND_WITH_IMM, send_from, 10);
        post_send(_qps[uc], IBV_WR_SEND, send_from + 1024, 50);
        post_send(_qps[ud], IBV_WR_SEND, send_from + 2048, 30);
    }

    void make_cq(cq_ring& cq) {
        shared_region region;
        int fd;
        if (!shared_region::create("fuzz-cq", hw::cq_region_size(256), region, fd))
            detail::setup_failed("CQ region", errno);
        ::close(fd);
        cq.control = static_cast<hw::cq_control*>(region.base());
        detail::check(_nic->create_cq(_context, 256, 0, std::move(region), cq.handle), "create_cq");
    }

    void make_srq() {
        ibv_srq_attr want{}, granted{};
        want.max_wr = srq_receive_slots;
        want.max_sge = 1;
        std::uint32_t slots = 0;
        detail::check(nic_node::srq_geometry(want, granted, slots), "srq_geometry");
        shared_region region;
        int fd;
        if (!shared_region::create("fuzz-srq", hw::srq_region_size(slots), region, fd))
            detail::setup_failed("SRQ region", errno);
        ::close(fd);
        _srq = static_cast<hw::srq_control*>(region.base());
        _srq_slots = reinterpret_cast<hw::recv_wqe*>(static_cast<char*>(region.base()) + hw::srq_slots_offset);
        detail::check(_nic->create_srq(_context, _pd, granted, slots, std::move(region), _srq_handle), "create_srq");
    }

    void make_qp(qp_ring& q, ibv_qp_type type, std::uint32_t srq) {
        ibv_qp_cap cap{};
        cap.max_send_wr = 64;
        cap.max_recv_wr = 32;
        cap.max_send_sge = 4;
        cap.max_recv_sge = 4;
        ibv_qp_cap granted;
        std::uint32_t send_slots, recv_slots;
        detail::check(nic_node::qp_geometry(cap, granted, send_slots, recv_slots), "qp_geometry");
        shared_region region;
        int fd;
        if (!shared_region::create("fuzz-qp", hw::qp_region_size(send_slots, recv_slots), region, fd))
            detail::setup_failed("QP region", errno);
        ::close(fd);
        q.control = static_cast<hw::qp_control*>(region.base());
        q.sq = reinterpret_cast<hw::send_wqe*>(static_cast<char*>(region.base()) + hw::qp_send_slots_offset);
        q.rq =
            reinterpret_cast<hw::recv_wqe*>(static_cast<char*>(region.base()) + hw::qp_recv_slots_offset(send_slots));
        const nic_node::qp_request request{_pd, _send_cq.handle, _recv_cq.handle, type, false, cap, srq};
        detail::check(_nic->create_qp(_context, request, std::move(region), q.handle, q.qpn, granted), "create_qp");
    }

    // RESET -> INIT -> RTR -> RTS with what IBA 10.3.1 Table 93 asks of the transport.
    void connect(const qp_ring& q, ibv_qp_type type, std::uint8_t sgid_index, std::uint32_t dest_qpn,
                 bool one_rd_atomic, sim_time now = 0) {
        nic_node& n = *_nic;
        ibv_qp_attr a{};
        a.qp_state = IBV_QPS_INIT;
        a.port_num = 1;
        if (type == IBV_QPT_UD) {
            a.qkey = qkey;
            detail::check(
                n.modify_qp(_context, q.handle, a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY, now),
                "UD to INIT");
            a = {};
            a.qp_state = IBV_QPS_RTR;
            detail::check(n.modify_qp(_context, q.handle, a, IBV_QP_STATE, now), "UD to RTR");
            a = {};
            a.qp_state = IBV_QPS_RTS;
            a.sq_psn = sq_psn;
            detail::check(n.modify_qp(_context, q.handle, a, IBV_QP_STATE | IBV_QP_SQ_PSN, now), "UD to RTS");
            return;
        }
        a.qp_access_flags =
            IBV_ACCESS_REMOTE_WRITE | (type == IBV_QPT_RC ? IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC : 0);
        detail::check(n.modify_qp(_context, q.handle, a,
                                  IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS, now),
                      "to INIT");
        a = {};
        a.qp_state = IBV_QPS_RTR;
        a.path_mtu = (_config & config_bit::mtu_256) ? IBV_MTU_256 : IBV_MTU_1024;
        a.dest_qp_num = dest_qpn;
        a.rq_psn = rq_psn;
        a.max_dest_rd_atomic = one_rd_atomic ? 1 : 4;
        a.min_rnr_timer = 1;
        a.ah_attr.is_global = 1;
        a.ah_attr.port_num = 1;
        a.ah_attr.grh.hop_limit = 64;
        a.ah_attr.grh.sgid_index = sgid_index;
        const wire::ipv6_address peer = sgid_index == 1 ? wire::ipv6_address::v4_mapped(peer_ipv4) : peer_ipv6();
        std::memcpy(a.ah_attr.grh.dgid.raw, peer.bytes.data(), 16);
        int mask = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN;
        if (type == IBV_QPT_RC) mask |= IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
        detail::check(n.modify_qp(_context, q.handle, a, mask, now), "to RTR");
        a = {};
        a.qp_state = IBV_QPS_RTS;
        a.sq_psn = sq_psn;
        mask = IBV_QP_STATE | IBV_QP_SQ_PSN;
        if (type == IBV_QPT_RC) {
            a.timeout = (_config & config_bit::no_timeout) ? 0 : 8;
            a.retry_cnt = (_config & config_bit::few_retries) ? 1 : 7;
            a.rnr_retry = (_config & config_bit::few_retries) ? 0 : 7;
            a.max_rd_atomic = one_rd_atomic ? 1 : 4;
            mask |= IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC;
        }
        detail::check(n.modify_qp(_context, q.handle, a, mask, now), "to RTS");
    }

    static void post_recv(hw::ring_header& ring, hw::recv_wqe* slots, std::uint64_t wr_id, std::uint64_t a,
                          std::uint32_t length, std::uint32_t lkey, bool two_sges) {
        const std::uint32_t p = ring.producer.load(std::memory_order_relaxed);
        hw::recv_wqe& w = slots[p & (ring.size - 1)];
        w.wr_id = wr_id;
        if (two_sges) {
            w.num_sge = 2;
            w.sg_list[0] = {a, length / 2, lkey};
            w.sg_list[1] = {a + length / 2, length - length / 2, lkey};
        } else {
            w.num_sge = 1;
            w.sg_list[0] = {a, length, lkey};
        }
        ring.producer.store(p + 1, std::memory_order_release);
    }

    // Tops every receive ring up to its count of buffers.
    void post_receives() {
        auto top_up = [&](hw::ring_header& ring, hw::recv_wqe* slots, std::size_t at, std::size_t count,
                          std::uint32_t length, bool two_sges) {
            while (ring.producer.load(std::memory_order_relaxed) - ring.consumer.load(std::memory_order_acquire) <
                   count) {
                const std::uint32_t p = ring.producer.load(std::memory_order_relaxed);
                post_recv(ring, slots, p, address(at + (p % count) * length), length, _lkey, two_sges);
            }
        };
        top_up(_qps[rc].control->recv, _qps[rc].rq, rc_receive_at, rc_receive_slots, 1024, true);
        top_up(_qps[uc].control->recv, _qps[uc].rq, uc_receive_at, uc_receive_slots, 1024, false);
        top_up(_qps[ud].control->recv, _qps[ud].rq, ud_receive_at, ud_receive_slots, grh_length + 1024, false);
        top_up(_srq->recv, _srq_slots, srq_receive_at, srq_receive_slots, 1024, false);
    }

    void post_send(qp_ring& q, ibv_wr_opcode opcode, std::size_t local, std::uint32_t length, std::uint64_t remote = 0,
                   std::uint32_t rkey = 0, std::uint64_t compare_add = 0, std::uint64_t swap = 0) {
        auto& ring = q.control->send;
        const std::uint32_t p = ring.producer.load(std::memory_order_relaxed);
        if (p - ring.consumer.load(std::memory_order_acquire) >= ring.size) return; // full: the application waits
        hw::send_wqe& w = q.sq[p & (ring.size - 1)];
        std::memset(&w, 0, sizeof w);
        w.wr_id = p;
        w.opcode = static_cast<std::uint8_t>(opcode);
        w.flags = hw::wqe_flag::signaled;
        w.num_sge = 1;
        w.immediate = htobe32(0xabcd0000u + p);
        w.sg_list[0] = {address(local), length, _lkey};
        w.remote_address = remote;
        w.rkey = rkey;
        w.compare_add = compare_add;
        w.swap = swap;
        if (&q == &_qps[ud]) {
            w.ud_ah = _ah;
            w.ud_remote_qpn = peer_qpn[ud];
            w.ud_remote_qkey = qkey;
        }
        ring.producer.store(p + 1, std::memory_order_release);
    }

    void post_atomic(ibv_wr_opcode opcode, std::size_t local, std::uint64_t remote, std::uint64_t compare_add,
                     std::uint64_t swap) {
        post_send(_qps[rc], opcode, local, 8, remote, peer_rkey, compare_add, swap);
    }

    std::uint8_t _config;
    std::unique_ptr<std::uint8_t[]> _memory;
    std::unique_ptr<nic_node> _nic;
    std::uint32_t _context = 0, _pd = 0, _lkey = 0, _main_rkey = 0, _read_only_rkey = 0, _ah = 0;
    cq_ring _send_cq, _recv_cq;
    std::uint32_t _srq_handle = 0;
    hw::srq_control* _srq = nullptr;
    hw::recv_wqe* _srq_slots = nullptr;
    std::array<qp_ring, qp_count> _qps{};
    unsigned _cycle = 0;
};

} // namespace rocefab::fuzz::nic_under_test
