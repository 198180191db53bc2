// Benchmark (not a test): the switch pipeline's forwarding rate on one core between two DPDK
// net_null ports, the same ports dpdk-testpmd forwards between in bench/switch_vs_testpmd.
// Frames flow both ways at once (port 0 -> 1 and 1 -> 0, as testpmd's io mode does with one
// forwarding core), each through every stage of a 2-port switch with NVIDIA's RoCE QoS profile:
// parse, DSCP classification, LPM route with TTL/checksum/MAC rewrite, ECN/WRED decision,
// shared-buffer admission, PFC thresholds, ETS scheduling and transmit.
//
// net_null hands out mbufs with uninitialised data, so each received frame is first overwritten
// with a prebuilt RoCEv2 header (one memcpy of 54 bytes). testpmd's io mode touches no packet
// data at all, so that write is counted against the switch (a real port would instead deliver
// headers to be read: about the same cost per frame).
//
// The rate counts only frames the ethdev accepted for transmission, and the run fails, printing
// no rate, unless the switch's counters and the ethdev's show every received frame forwarded.
//
// All frames from one port go to one destination unless --flows N spreads them over N, each frame
// to the next: the switch's route lookup then meets a new destination every frame, where with
// one it can reuse the last lookup (the route cache in switch_emu/route.hpp), RoCE's usual case.
//
// With --recycle the ethdevs are left out: the same 2 x 32 mbufs go round, a header written
// into each, through the switch and back, so what is measured is the pipeline alone. That is
// the mode bench/switch_instructions runs under callgrind, to count instructions per frame.
#include "dataplane/clock.hpp"
#include "dataplane/eal.hpp"
#include "dataplane/wire/bth.hpp"
#include "dataplane/wire/ethernet.hpp"
#include "dataplane/wire/ip.hpp"
#include "dataplane/wire/opcodes.hpp"
#include "dataplane/wire/udp.hpp"
#include "switch_emu/switch_node.hpp"

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wvolatile"
#pragma GCC diagnostic ignored "-Wpedantic"
#pragma GCC diagnostic ignored "-Wunused-parameter"
#include <rte_ethdev.h>
#pragma GCC diagnostic pop

#include <CLI/CLI.hpp>

#include <array>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <sched.h>
#include <string>
#include <unistd.h>
#include <vector>

namespace {

using namespace rocefab;
using namespace rocefab::switch_emu;

constexpr std::uint16_t port_count = 2;
constexpr std::uint16_t burst_size = 32; // testpmd's default burst

wire::mac_address switch_port_mac(std::uint16_t port) { return {{0x02, 0, 0, 0, 0, static_cast<std::uint8_t>(port)}}; }
wire::mac_address host_mac(std::uint16_t port) { return {{0x02, 0, 0, 0, 0xbb, static_cast<std::uint8_t>(port)}}; }
// Host `h` (0 to 253) behind switch port p: 10.0.p.(h + 2), in the /24 routed out of port p.
std::uint32_t host_ip(std::uint16_t port, std::uint32_t h = 0) { return (0x0a000002u + h) | std::uint32_t(port) << 8; }

switch_spec two_port_switch() {
    switch_spec spec;
    spec.name = "bench";
    for (std::uint16_t p = 0; p < port_count; ++p) {
        spec.ports.push_back({"swp" + std::to_string(p + 1), switch_port_mac(p), 100'000'000'000ull, 9000});
        spec.routes.push_back({wire::ipv6_address::v4_mapped(host_ip(p) & 0xffffff00u), 24, false, {p}, {host_mac(p)}});
    }
    return spec; // QoS left at qos_spec's defaults: NVIDIA's RoCE profile, every stage on
}

// The headers every frame starts with; the rest of the frame is whatever net_null left there.
struct roce_headers {
    wire::ethernet_header ethernet;
    wire::ipv4_header ip;
    wire::udp_header udp;
    wire::bth bth;
} __attribute__((packed));
static_assert(sizeof(roce_headers) == 54);

// What the host behind `ingress` sends to host `to` behind the other port: a RoCEv2 SEND ONLY of
// `frame_size` bytes (FCS excluded, as DPDK counts), DSCP 26 ECT(0) so that it takes the
// lossless, ECN-enabled traffic class 3.
roce_headers roce_frame_start(std::uint16_t ingress, std::uint16_t frame_size, std::uint32_t to) {
    const std::uint16_t egress = static_cast<std::uint16_t>(1 - ingress);
    const std::uint16_t l3_length = static_cast<std::uint16_t>(frame_size - sizeof(wire::ethernet_header));
    roce_headers h{};
    h.ethernet = {switch_port_mac(ingress), host_mac(ingress), wire::be16(wire::ethertype::ipv4)};
    h.ip.version_ihl = 0x45;
    h.ip.set_dscp_ecn(26, wire::ecn::ect0);
    h.ip.total_length.store(l3_length);
    h.ip.flags_fragment.store(0x4000); // DF, as RoCEv2 sends
    h.ip.ttl = 64;
    h.ip.protocol = wire::ip_protocol::udp;
    h.ip.source.store(host_ip(ingress));
    h.ip.destination.store(host_ip(egress, to));
    h.ip.update_checksum();
    h.udp = {wire::be16(49152), wire::be16(wire::roce_v2_udp_port),
             wire::be16(static_cast<std::uint16_t>(l3_length - sizeof(wire::ipv4_header))), wire::be16(0)};
    h.bth.set_opcode(static_cast<std::uint8_t>(wire::ib_opcode::rc_send_only));
    h.bth.set_pkey(0xffff);
    h.bth.set_dest_qpn(0x11);
    return h;
}

// The switch's links in this bench: what it transmits on a port joins that port's burst, which
// goes to rte_eth_tx_burst when full or when the main loop flushes.
class ethdev_sink final : public frame_sink {
public:
    // `recycle`: a full burst is only counted, not sent; its frames belong to the bench again.
    ethdev_sink(std::array<std::uint16_t, port_count> ethdev_ports, bool recycle) : _recycle(recycle) {
        for (std::uint16_t p = 0; p < port_count; ++p) _ports[p].ethdev_port = ethdev_ports[p];
    }

    sim_time transmit(std::uint16_t port, rte_mbuf* frame, sim_time) override {
        tx_port& out = _ports[port];
        out.burst[out.count++] = frame;
        if (out.count == burst_size) flush(out);
        return 0;
    }
    // Never busy: the bench measures the pipeline's cost per frame, and the ethdev paces the rest.
    sim_time busy_until(std::uint16_t) const override { return 0; }

    void flush() {
        for (tx_port& out : _ports)
            if (out.count) flush(out);
    }
    bool recycles() const { return _recycle; }
    std::uint64_t accepted(std::uint16_t port) const { return _ports[port].accepted; }
    std::uint64_t refused(std::uint16_t port) const { return _ports[port].refused; }

private:
    struct tx_port {
        std::array<rte_mbuf*, burst_size> burst{};
        std::uint16_t count = 0;
        std::uint16_t ethdev_port = 0;
        std::uint64_t accepted = 0;
        std::uint64_t refused = 0;
    };

    // Out of line: transmit() takes every frame, this one frame in a burst.
    [[gnu::noinline]] void flush(tx_port& out) {
        if (_recycle) {
            out.accepted += out.count;
            out.count = 0;
            return;
        }
        const std::uint16_t sent = rte_eth_tx_burst(out.ethdev_port, 0, out.burst.data(), out.count);
        for (std::uint16_t i = sent; i < out.count; ++i) rte_pktmbuf_free(out.burst[i]);
        out.accepted += sent;
        out.refused += out.count - sent;
        out.count = 0;
    }

    std::array<tx_port, port_count> _ports;
    bool _recycle;
};

bool start_port(std::uint16_t port, rte_mempool* pool, std::string& error) {
    const rte_eth_conf conf{};
    const int socket = rte_eth_dev_socket_id(port);
    int rc = rte_eth_dev_configure(port, 1, 1, &conf);
    if (rc == 0) rc = rte_eth_rx_queue_setup(port, 0, 1024, socket, nullptr, pool);
    if (rc == 0) rc = rte_eth_tx_queue_setup(port, 0, 1024, socket, nullptr);
    if (rc == 0) rc = rte_eth_dev_start(port);
    if (rc != 0) error = "cannot start ethdev port " + std::to_string(port) + ": " + rte_strerror(-rc);
    return rc == 0;
}

// Every counter that means a frame was lost on its way through the switch.
constexpr std::array loss_counters = {
    port_counter::rx_drops_not_for_us, port_counter::rx_drops_malformed, port_counter::rx_drops_non_ip,
    port_counter::drops_no_route,      port_counter::drops_ttl_expired,  port_counter::drops_mtu_exceeded,
    port_counter::tail_drops,          port_counter::headroom_drops,     port_counter::watchdog_drops,
    port_counter::wred_drops,
};

// Empty when every frame received on one port left through the switch and the ethdev of the
// other; otherwise the first discrepancy.
std::string check_forwarded(const switch_node& sw, const ethdev_sink& sink,
                            const std::array<std::uint64_t, port_count>& received,
                            const std::array<std::uint16_t, port_count>& ethdev_ports) {
    for (std::uint16_t in = 0; in < port_count; ++in) {
        const std::uint16_t out = static_cast<std::uint16_t>(1 - in);
        for (port_counter c : loss_counters)
            if (sw.counter(in, c) != 0)
                return "port " + std::to_string(in) + " counted " + std::to_string(sw.counter(in, c)) + " " +
                       std::string(name_of(c));
        if (sw.counter(in, port_counter::rx_packets) != received[in])
            return "port " + std::to_string(in) + ": switch rx_packets " +
                   std::to_string(sw.counter(in, port_counter::rx_packets)) + ", ethdev delivered " +
                   std::to_string(received[in]);
        // tx_packets counts data frames only: a PFC frame the switch sent would show as a surplus here.
        if (sw.counter(out, port_counter::tx_packets) != received[in] || sink.accepted(out) != received[in] ||
            sink.refused(out) != 0)
            return std::to_string(received[in]) + " frames in on port " + std::to_string(in) + ", switch tx_packets " +
                   std::to_string(sw.counter(out, port_counter::tx_packets)) + " on port " + std::to_string(out) +
                   ", ethdev accepted " + std::to_string(sink.accepted(out)) + " and refused " +
                   std::to_string(sink.refused(out));
        if (sink.recycles()) continue;
        rte_eth_stats stats{};
        if (rte_eth_stats_get(ethdev_ports[out], &stats) != 0 || stats.opackets != sink.accepted(out))
            return "ethdev port " + std::to_string(ethdev_ports[out]) + " reports " + std::to_string(stats.opackets) +
                   " packets sent, the bench handed it " + std::to_string(sink.accepted(out));
    }
    return {};
}

int fail(const std::string& why) {
    std::fprintf(stderr, "switch_forwarding: FAILED: %s\n", why.c_str());
    return 1;
}

} // namespace

int main(int argc, char** argv) {
    CLI::App app{"Forwarding rate of the rocefab switch pipeline between two DPDK net_null ports"};
    unsigned frame_size = 64;
    unsigned duration_s = 5;
    int cpu = 1;
    bool recycle = false;
    unsigned flows = 1;
    app.add_option("--size", frame_size, "frame size in bytes, FCS excluded")->check(CLI::Range(60u, 9014u));
    app.add_option("--flows", flows,
                   "destinations behind each port the frames go to in turn, each frame to the next one")
        ->check(CLI::Range(1u, 254u));
    app.add_option("--seconds", duration_s, "how long to forward")->check(CLI::Range(1u, 600u));
    app.add_option("--cpu", cpu, "the CPU to forward on (testpmd -l 0-1 forwards on CPU 1)")
        ->check(CLI::Range(0, CPU_SETSIZE - 1));
    app.add_flag("--recycle", recycle, "leave the ethdevs out: the same mbufs go round through the switch alone");
    CLI11_PARSE(app, argc, argv);

    const std::string size = std::to_string(frame_size);
    eal_options options;
    options.file_prefix = "rocefab-bench-" + std::to_string(::getpid());
    options.extra_args = {"--vdev=net_null0,size=" + size, "--vdev=net_null1,size=" + size};
    std::string error;
    if (!start_eal(options, error)) return fail(error);
    // start_eal lets the scheduler place threads anywhere; a forwarding rate means one core.
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(cpu, &one);
    if (sched_setaffinity(0, sizeof one, &one) != 0) return fail("cannot pin to CPU " + std::to_string(cpu));

    // As many mbufs as testpmd's --total-num-mbufs=16384, less one (a ring holds 2^n - 1).
    rte_mempool* pool = create_packet_pool("bench_pool", 16383, error);
    if (!pool) return fail(error);
    std::array<std::uint16_t, port_count> ethdev_ports{};
    for (std::uint16_t p = 0; p < port_count; ++p) {
        const std::string name = "net_null" + std::to_string(p);
        if (rte_eth_dev_get_port_by_name(name.c_str(), &ethdev_ports[p]) != 0) return fail("no ethdev " + name);
        if (!start_port(ethdev_ports[p], pool, error)) return fail(error);
    }

    switch_node sw(two_port_switch());
    ethdev_sink sink(ethdev_ports, recycle);
    sw.attach(&sink, pool);
    std::array<std::vector<roce_headers>, port_count> headers;
    for (std::uint16_t in = 0; in < port_count; ++in)
        for (std::uint32_t to = 0; to < flows; ++to)
            headers[in].push_back(roce_frame_start(in, static_cast<std::uint16_t>(frame_size), to));
    std::uint32_t next_flow = 0;

    std::array<std::uint64_t, port_count> received{};
    std::array<std::array<rte_mbuf*, burst_size>, port_count> bursts{};
    if (recycle)
        for (auto& burst : bursts)
            if (rte_pktmbuf_alloc_bulk(pool, burst.data(), burst_size) != 0) return fail("cannot allocate mbufs");
    const sim_time end = seconds(duration_s);
    tsc_clock clock;
    for (sim_time now = clock.now(); now < end; now = clock.now()) {
        for (std::uint16_t in = 0; in < port_count; ++in) {
            std::array<rte_mbuf*, burst_size>& burst = bursts[in];
            const std::uint16_t n =
                recycle ? burst_size : rte_eth_rx_burst(ethdev_ports[in], 0, burst.data(), burst_size);
            for (std::uint16_t i = 0; i < n; ++i) {
                rte_mbuf* m = burst[i];
                std::memcpy(rte_pktmbuf_mtod(m, void*), &headers[in][next_flow], sizeof(roce_headers));
                if (++next_flow == flows) next_flow = 0;
                m->data_len = static_cast<std::uint16_t>(frame_size);
                m->pkt_len = frame_size;
            }
            sw.receive_burst(in, {burst.data(), n}, now); // as the realtime driver hands a link's frames over
            received[in] += n;
            if (recycle) sink.flush(); // the frames are back, for the next round
        }
        sw.poll(now);
        sink.flush();
    }
    const double elapsed_s = double(clock.now()) / 1e9;
    if (recycle)
        for (auto& burst : bursts) rte_pktmbuf_free_bulk(burst.data(), burst_size);

    if (const std::string why = check_forwarded(sw, sink, received, ethdev_ports); !why.empty()) return fail(why);
    const double forwarded_01 = double(sink.accepted(1)), forwarded_10 = double(sink.accepted(0));
    std::printf(
        "%u B%s: %.2f Mpps forwarded (port 0 -> 1: %.2f, port 1 -> 0: %.2f) on CPU %d, %u destination%s a port, "
        "%.0f frames in %.2f s, %llu ECN-marked, none dropped\n",
        frame_size, recycle ? " (recycled, no ethdev)" : "", (forwarded_01 + forwarded_10) / elapsed_s / 1e6,
        forwarded_01 / elapsed_s / 1e6, forwarded_10 / elapsed_s / 1e6, cpu, flows, flows == 1 ? "" : "s",
        forwarded_01 + forwarded_10, elapsed_s,
        static_cast<unsigned long long>(sw.counter(0, port_counter::ecn_marked) +
                                        sw.counter(1, port_counter::ecn_marked)));

    for (std::uint16_t port : ethdev_ports) {
        rte_eth_dev_stop(port);
        rte_eth_dev_close(port);
    }
    return 0;
}
