// What a NIC is configured with: its addresses, its link, and the QoS and DCQCN settings a user
// would give a ConnectX (mlnx_qos, the mlx5 sysfs knobs).
#pragma once

#include "dataplane/wire/roce_frame.hpp"
#include "nic_emu/adaptive_retransmission.hpp"
#include "nic_emu/dcqcn.hpp"

#include <array>
#include <cstdint>
#include <string>

namespace rocefab::nic {

// How an RC requester recovers lost requests (the topology's `nic: retransmission:`).
enum class retransmission_mode : std::uint8_t {
    // IBA 9.7.5.2.8: a sequence NAK or a timeout resends everything from the PSN it names.
    go_back_n,
    // IRN (Mittal et al., SIGCOMM'18) and ConnectX's lossy-RoCE selective repeat: the requester
    // resends only the packet a NAK names, once per recovery (requester.hpp). RDMA READ and
    // atomic responses are still recovered go-back-N.
    selective_repeat,
};

struct nic_spec {
    std::string host; // the emulated host the NIC sits in
    std::string name; // the device name programs see, e.g. rfab0
    wire::mac_address mac;
    wire::ipv6_address address; // v4-mapped for an IPv4 interface address
    std::uint64_t speed_bps = 100'000'000'000;
    std::uint32_t ip_mtu = 9000;
    std::uint8_t ecn = wire::ecn::ect0; // ConnectX marks RoCEv2 packets ECN-capable by default
    // The DSCP of RoCE traffic whose program leaves the traffic class 0, as NVIDIA's lossless RoCE
    // configuration sets it (tos 106: DSCP 26); a program's own traffic class wins.
    std::uint8_t dscp = 26;
    // Trust PCP (`mlnx_qos --trust pcp`) instead: every frame carries an 802.1Q priority tag
    // (VID 0) whose PCP is its priority, the QP's service level if it has one, else the
    // priority its DSCP maps to below; CNPs go with cnp_802p_prio.
    bool trust_pcp = false;
    // Trust DSCP (`mlnx_qos --trust dscp`): which PFC priority a DSCP travels in. NVIDIA's RoCE
    // defaults: 26 -> 3 (RoCE, lossless), 48 -> 6 (CNP), the rest 0.
    std::array<std::uint8_t, 64> dscp_to_priority = [] {
        std::array<std::uint8_t, 64> map{};
        map[26] = 3;
        map[48] = 6;
        return map;
    }();
    // DCQCN: the mlx5 knobs, and the priorities it runs on as reaction point and notification
    // point (sysfs ecn/roce_rp/enable/N and ecn/roce_np/enable/N; ConnectX: all of them).
    dcqcn_params dcqcn;
    std::uint8_t dcqcn_rp_priorities = 0xff;
    std::uint8_t dcqcn_np_priorities = 0xff;
    // The host side of the receive path. 0: the host takes frames as fast as the link brings
    // them. Otherwise frames wait in the NIC's receive buffer and reach the host at this rate,
    // as behind a PCIe bottleneck or a busy host: a slow receiver.
    std::uint64_t host_rx_bps = 0;
    // The receive buffer, and the PFC the NIC sends for its lossless priorities (`mlnx_qos
    // --pfc`; NVIDIA's RoCE configuration: 3): XOFF when a priority holds more than
    // rx_xoff_bytes, XON once it holds less than rx_xon_bytes. What arrives over the buffer's
    // size is discarded (rx_prioN_buf_discard).
    std::uint32_t rx_buffer_bytes = 512 * 1024;
    std::uint32_t rx_xoff_bytes = 256 * 1024;
    std::uint32_t rx_xon_bytes = 128 * 1024;
    std::uint8_t pfc_priorities = 1u << 3;
    retransmission_mode retransmission = retransmission_mode::go_back_n;
    // ConnectX's adaptive retransmission (`roce_adp_retrans_en`, adaptive_retransmission.hpp):
    // RC transport timeouts that start at tens of microseconds and grow on repeats, in either
    // mode. Off: the QP's `timeout`, as IBA specifies.
    bool adaptive_retransmission = false;
    adaptive_profile adaptive_timeouts; // its profile
};

} // namespace rocefab::nic
