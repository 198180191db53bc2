// A host for switch scenarios under virtual time: sends one flow of UDP datagrams at line rate,
// honours PFC as a ConnectX does, and counts what it receives. Shared by the switch scenario tests.
#pragma once

#include "dataplane/node.hpp"
#include "dataplane/time.hpp"
#include "dataplane/wire/ethernet.hpp"
#include "dataplane/wire/ip.hpp"
#include "dataplane/wire/pfc.hpp"
#include "dataplane/wire/udp.hpp"

#include <algorithm>
#include <array>
#include <cstring>
#include <map>
#include <string>

namespace rocefab::testing {

constexpr std::uint64_t hundred_gig = 100'000'000'000ull;

inline wire::mac_address mac_of(std::uint8_t kind, std::uint8_t index) {
    return {{0x02, 0x00, 0x00, 0x00, kind, index}};
}
inline wire::mac_address switch_port_mac(unsigned port) { return mac_of(0x00, static_cast<std::uint8_t>(port)); }
inline wire::mac_address host_mac(unsigned host) { return mac_of(0xaa, static_cast<std::uint8_t>(host)); }
inline std::uint32_t host_ip(unsigned host) {
    return (10u << 24) | (static_cast<std::uint32_t>(host) << 8) | 1;
} // 10.0.H.1

// A host with one port: sends `frames` UDP datagrams of `payload` bytes on `dscp` to
// `destination` as fast as its link takes them, stops a priority while PFC pauses it (as a
// ConnectX does with PFC enabled), and counts what it receives by UDP source port.
class traffic_host final : public node {
public:
    struct flow {
        std::uint32_t destination = 0;
        wire::mac_address next_hop;
        std::uint8_t dscp = 26;
        std::uint8_t priority = 3; // the priority its traffic travels in (DSCP 26 -> 3)
        std::size_t payload = 958; // 1000-byte frames
        std::uint64_t frames = 0;
        sim_time start = 0;
        std::uint16_t destination_port = wire::roce_v2_udp_port;
        // The UDP source port, a RoCEv2 flow's ECMP entropy; 0: 40000 + the host's index.
        std::uint16_t source_port = 0;
    };

    // `link_bps`: the speed of its link, which pause quanta are counted in.
    traffic_host(unsigned index, flow f, std::uint64_t link_bps = hundred_gig)
        : node("h" + std::to_string(index), 1), _index(index), _flow(f), _link_bps(link_bps) {}

    void receive(std::uint16_t, rte_mbuf* frame, sim_time now) override {
        std::uint8_t enable = 0;
        std::array<std::uint16_t, 8> quanta{};
        const auto bytes = frame_bytes(frame);
        if (wire::parse_pfc_frame(bytes, enable, quanta)) {
            ++pause_frames_received;
            for (unsigned p = 0; p < 8; ++p)
                if (enable & (1u << p)) _paused_until[p] = now + wire::pause_quanta_to_time(quanta[p], _link_bps);
        } else if (bytes.size() >= 14 + 20 + 8) {
            wire::udp_header udp;
            std::memcpy(&udp, bytes.data() + 14 + 20, sizeof udp);
            ++received_from[udp.source_port.load()];
        }
        rte_pktmbuf_free(frame);
    }

    bool poll(sim_time now) override {
        bool sent = false;
        while (sent_frames < _flow.frames && now >= _flow.start && busy_until(0) <= now &&
               _paused_until[_flow.priority] <= now) {
            rte_mbuf* m = allocate_frame();
            if (!m) break;
            write_frame(m, _index, _flow);
            transmit(0, m, now);
            ++sent_frames;
            sent = true;
        }
        return sent;
    }

    sim_time next_deadline() const override {
        if (sent_frames >= _flow.frames) return never;
        return std::max({_flow.start, busy_until(0), _paused_until[_flow.priority]});
    }

    std::uint16_t source_port() const { return source_port_of(_index, _flow); }
    static std::uint16_t source_port_of(unsigned index, const flow& f) {
        return f.source_port ? f.source_port : static_cast<std::uint16_t>(40000 + index);
    }

    // Appends to `m` the frame host `index` sends for `f`: Ethernet, IPv4 (ECT(0)), UDP.
    static void write_frame(rte_mbuf* m, unsigned index, const flow& f) {
        const std::size_t length = 14 + 20 + 8 + f.payload;
        auto* data = reinterpret_cast<std::uint8_t*>(rte_pktmbuf_append(m, static_cast<std::uint16_t>(length)));
        std::memset(data, 0, length);
        const wire::ethernet_header eth{f.next_hop, host_mac(index), wire::be16(wire::ethertype::ipv4)};
        std::memcpy(data, &eth, sizeof eth);
        wire::ipv4_header ip{};
        ip.version_ihl = 0x45;
        ip.set_dscp_ecn(f.dscp, wire::ecn::ect0);
        ip.total_length.store(static_cast<std::uint16_t>(20 + 8 + f.payload));
        ip.ttl = 64;
        ip.protocol = wire::ip_protocol::udp;
        ip.source.store(host_ip(index));
        ip.destination.store(f.destination);
        ip.update_checksum();
        std::memcpy(data + 14, &ip, sizeof ip);
        const wire::udp_header udp{wire::be16(source_port_of(index, f)), wire::be16(f.destination_port),
                                   wire::be16(static_cast<std::uint16_t>(8 + f.payload)), wire::be16(0)};
        std::memcpy(data + 34, &udp, sizeof udp);
    }

    std::uint64_t sent_frames = 0;
    std::uint64_t pause_frames_received = 0;
    std::map<std::uint16_t, std::uint64_t> received_from;

private:
    unsigned _index;
    flow _flow;
    std::uint64_t _link_bps;
    std::array<sim_time, 8> _paused_until{};
};

} // namespace rocefab::testing
