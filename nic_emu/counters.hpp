// NIC counters, named as ConnectX users read them: the IB port counters
// (/sys/class/infiniband/*/ports/1/counters) and the RDMA hw_counters (`rdma statistic`),
// plus this emulation's own drop reasons. Declared once, bumped on the data path, read by
// `rocefab show`.
#pragma once

#include <array>
#include <cstdint>
#include <string>

namespace rocefab::nic {

#define ROCEFAB_NIC_COUNTERS(X)                                                                                        \
    X(port_xmit_packets)                                                                                               \
    X(port_xmit_data) /* bytes, as hardware's is in 4-byte words but shown here in bytes */                            \
    X(port_rcv_packets)                                                                                                \
    X(port_rcv_data)                                                                                                   \
    X(port_rcv_errors)       /* frames that failed to parse: truncated, wrong lengths, not RoCE */                     \
    X(rx_icrc_encapsulated)  /* ICRC mismatch: dropped */                                                              \
    X(rx_dropped_not_for_us) /* destination MAC or GID not this NIC's */                                               \
    X(rx_unknown_qp)                                                                                                   \
    X(gsi_rx_mads)       /* MADs for QP1 handed to the daemon's CM */                                                  \
    X(gsi_rx_dropped)    /* MADs for QP1 dropped: not a UD SEND of 256 bytes, wrong Q_Key, or the CM's queue full */   \
    X(gsi_tx_mads)       /* MADs the CM sent from QP1 */                                                               \
    X(rx_qp_state_drops) /* packet for a QP in a state that cannot take it */                                          \
    X(rx_transport_mismatch) /* opcode of another transport than the QP's */                                           \
    X(rx_pfc_frames)                                                                                                   \
    X(tx_no_buffer)      /* the packet pool was empty: transmission deferred */                                        \
    X(loopback_packets)  /* frames to this NIC itself, turned around inside it (QPs of one NIC) */                     \
    X(loopback_discards) /* ... dropped because the loopback ring was full */                                          \
    X(rdma_sends)                                                                                                      \
    X(rdma_writes)                                                                                                     \
    X(out_of_sequence) /* responder saw a PSN ahead of the expected one */                                             \
    X(packet_seq_err)  /* requester received a PSN sequence error NAK */                                               \
    X(duplicate_request)                                                                                               \
    X(rnr_nak_sent) /* responder: no receive WQE posted */                                                             \
    X(rnr_nak_received)                                                                                                \
    X(local_ack_timeout_err) /* requester transport timer expired */                                                   \
    X(rnr_nak_retry_err)                                                                                               \
    X(req_cqe_error)                                                                                                   \
    X(req_cqe_flush_error)                                                                                             \
    X(resp_cqe_error)                                                                                                  \
    X(resp_cqe_flush_error)                                                                                            \
    X(req_remote_access_errors)                                                                                        \
    X(req_remote_invalid_request)                                                                                      \
    X(resp_remote_access_errors)                                                                                       \
    X(resp_local_length_error)                                                                                         \
    X(local_protection_errors)                                                                                         \
    X(memory_access_faults) /* registered memory vanished (process died or unmapped it) */                             \
    X(dma_shared_bytes)     /* registered bytes moved by plain copy: pages the program put on a memfd */               \
    X(dma_proc_mem_bytes)   /* registered bytes moved through the program's /proc/self/mem */                          \
    X(cq_overflow)                                                                                                     \
    X(comp_events)                                                                                                     \
    X(acks_sent)                                                                                                       \
    X(naks_sent)                                                                                                       \
    X(retransmitted_packets)                                                                                           \
    X(out_of_buffer)      /* UC/UD: no receive WQE, the message was dropped (mlx5's name) */                           \
    X(qkey_violations)    /* UD: Q_Key of the datagram not the QP's, dropped (IBA 10.2.5) */                           \
    X(uc_dropped_packets) /* UC: packets discarded after a gap until the next FIRST/ONLY */                            \
    X(ud_send_too_long)   /* UD: a send WQE longer than the path MTU completed in error */                             \
    X(srq_limit_events)                                                                                                \
    X(rx_read_requests)                                                                                                \
    X(rx_atomic_requests)                                                                                              \
    X(implied_nak_seq_err)           /* a response skipped an unanswered READ/atomic (IBA 9.7.5.2.3): retried */       \
    X(resp_duplicate_atomic_replays) /* a duplicate atomic answered from the saved result */                           \
    X(np_ecn_marked_roce_packets)    /* DCQCN notification point: CE-marked RoCE packets received */                   \
    X(np_cnp_sent)    /* ... and the CNPs sent for them (at most one per QP per min_time_between_cnps) */              \
    X(rp_cnp_handled) /* DCQCN reaction point: CNPs that cut a QP's rate */                                            \
    X(rp_cnp_ignored) /* CNPs for a QP whose priority has DCQCN off, or no such connected QP */

struct nic_counters {
#define ROCEFAB_DECLARE(name) std::uint64_t name = 0;
    ROCEFAB_NIC_COUNTERS(ROCEFAB_DECLARE)
#undef ROCEFAB_DECLARE

    // PFC received and sent per priority, and frames the receive buffer had no room for, as
    // `ethtool -S` names them on a ConnectX. rx_prio_pause on a cache line of its own: `rocefab
    // sim` sums it over every NIC at every sample.
    alignas(64) std::array<std::uint64_t, 8> rx_prio_pause{};
    std::array<std::uint64_t, 8> rx_prio_pause_duration_us{}; // up to the latest pause frame
    std::array<std::uint64_t, 8> tx_prio_pause{};
    std::array<std::uint64_t, 8> tx_prio_pause_duration_us{}; // pauses that have ended
    std::array<std::uint64_t, 8> rx_prio_buf_discard{};

    template <typename Visitor> void for_each(Visitor&& visit) const {
#define ROCEFAB_VISIT(name) visit(#name, name);
        ROCEFAB_NIC_COUNTERS(ROCEFAB_VISIT)
#undef ROCEFAB_VISIT
        // ethtool's per-priority names: "rx_prio3_pause", "tx_prio3_pause_duration", ...
        static const auto names = [] {
            std::array<std::array<std::string, 8>, 5> table;
            constexpr const char* affixes[5][2] = {{"rx", "pause"},
                                                   {"rx", "pause_duration"},
                                                   {"tx", "pause"},
                                                   {"tx", "pause_duration"},
                                                   {"rx", "buf_discard"}};
            for (unsigned k = 0; k < 5; ++k)
                for (unsigned p = 0; p < 8; ++p)
                    table[k][p] = std::string(affixes[k][0]) + "_prio" + std::to_string(p) + "_" + affixes[k][1];
            return table;
        }();
        const std::array<const std::array<std::uint64_t, 8>*, 5> values = {&rx_prio_pause, &rx_prio_pause_duration_us,
                                                                           &tx_prio_pause, &tx_prio_pause_duration_us,
                                                                           &rx_prio_buf_discard};
        for (unsigned k = 0; k < 5; ++k)
            for (unsigned p = 0; p < 8; ++p) visit(names[k][p].c_str(), (*values[k])[p]);
    }
};

} // namespace rocefab::nic
