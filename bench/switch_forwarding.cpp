// Benchmark (not a test): the switch pipeline's forwarding rate on one core between DPDK
// net_null ports, the ports dpdk-testpmd forwards between in bench/switch_vs_testpmd, on one of
// two paths through a switch with NVIDIA's RoCE QoS profile:
//
// The cut-through path (the default). Frames flow both ways at once (port 0 -> 1 and 1 -> 0, as
// testpmd's io mode does with one forwarding core) and the links are never busy, so every frame
// goes straight on (switch_node::cut_through): parse, DSCP classification, LPM route with
// TTL/checksum/MAC rewrite, then the admission, ECN and PFC checks a frame meets at an empty
// queue, the scheduler's turn and transmit. Nothing is queued, so the ECN/WRED decision at a
// queue with a depth, buffering, the ETS pick and the link shaper never run.
//
// The queued path (--queued). Ports 0 and 1 both send to hosts behind port 2 at line rate (a 2:1
// incast) and every link serialises at 100 Gb/s under the bench's own virtual clock, which moves
// on by one burst's wire time per round; wall time only measures the work. The egress link is
// busy whenever a frame arrives, so every frame is admitted into the shared buffer, meets the
// ECN/WRED decision at a standing queue (and some are marked), is queued, picked by the ETS
// scheduler once the link model frees up, released from the buffer and sent. The ingress
// priority groups fill until the switch sends XOFF; the bench's hosts honour it (and XON) as a
// NIC does, so the class stays lossless and the run checks that none is dropped.
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
// to the next: the route lookup then meets a new destination every frame.
//
// With --no-switch (cut-through path only) each received frame gets its header and goes straight
// to the other port's burst, as the switch would hand it over: the ports' and the bench's own cost
// per frame, the floor under the switch's figure (testpmd's io mode is the same loop without the
// header write).
//
// With --recycle the ethdevs are left out, so what is measured is the pipeline alone: on the
// cut-through path the same 2 x 32 mbufs go round, a header written into each, through the
// switch and back; on the queued path frames come from the mempool and go back to it when sent,
// as net_null does. That is the mode bench/switch_instructions runs under callgrind.
#include "dataplane/clock.hpp"
#include "dataplane/eal.hpp"
#include "dataplane/link.hpp"
#include "dataplane/wire/bth.hpp"
#include "dataplane/wire/ethernet.hpp"
#include "dataplane/wire/ip.hpp"
#include "dataplane/wire/opcodes.hpp"
#include "dataplane/wire/pfc.hpp"
#include "dataplane/wire/udp.hpp"
#include "switch_emu/switch_node.hpp"

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wvolatile"
#pragma GCC diagnostic ignored "-Wpedantic"
#pragma GCC diagnostic ignored "-Wunused-parameter"
#include <rte_ethdev.h>
#pragma GCC diagnostic pop

#include <CLI/CLI.hpp>

#include <algorithm>

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

constexpr std::uint16_t max_ports = 3;
constexpr std::uint16_t burst_size = 32; // testpmd's default burst
constexpr std::uint64_t line_rate_bps = 100'000'000'000ull;
// Where the queued path's frames go; ports 0 and 1 send to it.
constexpr std::uint16_t incast_port = 2;

wire::mac_address switch_port_mac(std::uint16_t port) { return {{0x02, 0, 0, 0, 0, static_cast<std::uint8_t>(port)}}; }
wire::mac_address host_mac(std::uint16_t port) { return {{0x02, 0, 0, 0, 0xbb, static_cast<std::uint8_t>(port)}}; }
// Host `h` (0 to 253) behind switch port p: 10.0.p.(h + 2), in the /24 routed out of port p.
std::uint32_t host_ip(std::uint16_t port, std::uint32_t h = 0) { return (0x0a000002u + h) | std::uint32_t(port) << 8; }

switch_spec bench_switch(std::uint16_t ports, bool queued) {
    switch_spec spec;
    spec.name = "bench";
    for (std::uint16_t p = 0; p < ports; ++p) {
        spec.ports.push_back({"swp" + std::to_string(p + 1), switch_port_mac(p), line_rate_bps, 9000});
        spec.routes.push_back({wire::ipv6_address::v4_mapped(host_ip(p) & 0xffffff00u), 24, false, {p}, {host_mac(p)}});
    }
    if (queued) {
        // With 64 B frames the default 16 MiB buffer would let each ingress group hold over 80k
        // frames before XOFF, far past the egress ring's 4096: it would tail-drop the lossless
        // class. A 2 MiB buffer at alpha 1/16 pauses each group at about 116 kB, so the queue
        // stands at about 230 kB, inside the profile's ECN marking range (150 kB and up), and
        // with the headroom under 8192 frames.
        spec.buffer_bytes = 2 * 1024 * 1024;
        spec.buffer_alpha = 1.0 / 16;
        spec.queue_frames = 8192;
        // As the realtime daemon sets it (control/node_specs.cpp): the bench hands the switch a
        // burst a round, one burst's wire time apart, so a link must take frames that far ahead
        // or the port could not reach its line rate.
        spec.transmit_fifo = microseconds(2);
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

// What the host behind `ingress` sends to host `to` behind `egress`: a RoCEv2 SEND ONLY of
// `frame_size` bytes (FCS excluded, as DPDK counts), DSCP 26 ECT(0) so that it takes the
// lossless, ECN-enabled traffic class 3.
roce_headers roce_frame_start(std::uint16_t ingress, std::uint16_t egress, std::uint16_t frame_size, std::uint32_t to) {
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
// goes to rte_eth_tx_burst when full or when the main loop flushes. On the cut-through path a
// link is never busy: the bench measures the pipeline's cost per frame, and the ethdev paces the
// rest. On the queued path each link serialises at line rate (the link model's arithmetic,
// dataplane/link.hpp), and the hosts on ports 0 and 1 act on the PFC frames the switch sends them.
class ethdev_sink final : public frame_sink {
public:
    // `recycle`: a full burst is only counted, not sent; its frames belong to the bench again
    // (cut-through), or go back to their mempool (queued).
    ethdev_sink(std::span<const std::uint16_t> ethdev_ports, bool recycle, bool queued)
        : _recycle(recycle), _queued(queued) {
        for (std::size_t p = 0; p < ethdev_ports.size(); ++p) _ports[p].ethdev_port = ethdev_ports[p];
    }

    sim_time transmit(std::uint16_t port, rte_mbuf* frame, sim_time now) override {
        if (_queued) return transmit_shaped(port, frame, now);
        join_burst(_ports[port], frame);
        return 0;
    }
    sim_time busy_until(std::uint16_t port) const override { return _ports[port].busy_until; }
    // The cut-through path's runs: joined to the burst a frame at a time, as transmit() does,
    // without a call for each. On the queued path each frame goes through the link model.
    std::size_t transmit_while_free(std::uint16_t port, std::span<rte_mbuf* const> frames, sim_time now,
                                    sim_time takes_until, sim_time& busy) override {
        if (_queued) return frame_sink::transmit_while_free(port, frames, now, takes_until, busy);
        if (busy > takes_until) return 0;
        tx_port& out = _ports[port];
        for (rte_mbuf* frame : frames) join_burst(out, frame);
        busy = 0;
        return frames.size();
    }

    void flush() {
        for (tx_port& out : _ports)
            if (out.count) flush(out);
    }
    bool recycles() const { return _recycle; }
    // Whether the host on `port` may send at `now`: not paused by the switch.
    bool may_send(std::uint16_t port, sim_time now) const { return _ports[port].paused_until <= now; }
    std::uint64_t accepted(std::uint16_t port) const { return _ports[port].accepted; }
    std::uint64_t refused(std::uint16_t port) const { return _ports[port].refused; }
    std::uint64_t pfc_frames(std::uint16_t port) const { return _ports[port].pfc_frames; }
    // Wire time the link of `port` has spent sending data and PFC frames.
    sim_time wire_time(std::uint16_t port) const { return _ports[port].wire_time; }

    static constexpr std::uint8_t lossless_priority = 3; // DSCP 26's, in the RoCE profile

private:
    struct tx_port {
        std::array<rte_mbuf*, burst_size> burst{};
        std::uint16_t count = 0;
        std::uint16_t ethdev_port = 0;
        sim_time busy_until = 0;
        sim_time paused_until = 0;
        sim_time wire_time = 0;
        std::uint64_t accepted = 0;
        std::uint64_t refused = 0;
        std::uint64_t pfc_frames = 0;
    };

    // The queued path's transmit: the link model's serialisation, and PFC at the hosts. Out of
    // line, so that the cut-through path's transmit() stays as small as it was.
    [[gnu::noinline]] sim_time transmit_shaped(std::uint16_t port, rte_mbuf* frame, sim_time now) {
        tx_port& out = _ports[port];
        const std::uint32_t length = rte_pktmbuf_pkt_len(frame);
        const sim_time wire_time = serialization_time(length + wire_overhead_bytes, line_rate_bps);
        out.busy_until = std::max(out.busy_until, now) + wire_time;
        out.wire_time += wire_time;
        std::uint8_t enable = 0;
        std::array<std::uint16_t, 8> quanta{};
        if (port != incast_port && wire::parse_pfc_frame(frame_bytes(frame), enable, quanta)) {
            // The sending host's MAC: pauses for the quanta from now, 0 resumes at once.
            if (enable & (1u << lossless_priority))
                out.paused_until = now + wire::pause_quanta_to_time(quanta[lossless_priority], line_rate_bps);
            ++out.pfc_frames;
            rte_pktmbuf_free(frame);
            return out.busy_until;
        }
        join_burst(out, frame);
        return out.busy_until;
    }

    // A frame joins the port's burst, which goes out when full.
    void join_burst(tx_port& out, rte_mbuf* frame) {
        out.burst[out.count++] = frame;
        if (out.count == burst_size) flush(out);
    }

    // Out of line: transmit() takes every frame, this one frame in a burst.
    [[gnu::noinline]] void flush(tx_port& out) {
        if (_recycle) {
            if (_queued) rte_pktmbuf_free_bulk(out.burst.data(), out.count);
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

    std::array<tx_port, max_ports> _ports;
    bool _recycle;
    bool _queued;
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

// Where the frames received on `in` go: the other port, or on the queued path the incast port.
std::uint16_t egress_of(std::uint16_t in, bool queued) {
    return queued ? incast_port : static_cast<std::uint16_t>(1 - in);
}

// Empty when every frame received on the ingress ports left through the switch (unless
// `switched` is false: the bench handed them on itself) and the ethdev of its egress port;
// otherwise the first discrepancy.
std::string check_forwarded(const switch_node& sw, bool switched, const ethdev_sink& sink, bool queued,
                            const std::array<std::uint64_t, max_ports>& received,
                            std::span<const std::uint16_t> ethdev_ports) {
    for (std::uint16_t port = 0; switched && port < sw.port_count(); ++port)
        for (port_counter c : loss_counters)
            if (sw.counter(port, c) != 0)
                return "port " + std::to_string(port) + " counted " + std::to_string(sw.counter(port, c)) + " " +
                       std::string(name_of(c));
    std::array<std::uint64_t, max_ports> expected_out{};
    for (std::uint16_t in = 0; in < 2; ++in) {
        if (switched && sw.counter(in, port_counter::rx_packets) != received[in])
            return "port " + std::to_string(in) + ": switch rx_packets " +
                   std::to_string(sw.counter(in, port_counter::rx_packets)) + ", ethdev delivered " +
                   std::to_string(received[in]);
        expected_out[egress_of(in, queued)] += received[in];
    }
    for (std::uint16_t out = 0; out < sw.port_count(); ++out) {
        // tx_packets counts data frames only: a PFC frame the switch sent would show as a surplus here.
        if ((switched && sw.counter(out, port_counter::tx_packets) != expected_out[out]) ||
            sink.accepted(out) != expected_out[out] || sink.refused(out) != 0)
            return std::to_string(expected_out[out]) + " frames for port " + std::to_string(out) +
                   ", switch tx_packets " + std::to_string(sw.counter(out, port_counter::tx_packets)) +
                   ", ethdev accepted " + std::to_string(sink.accepted(out)) + " and refused " +
                   std::to_string(sink.refused(out));
        if (sink.recycles() || expected_out[out] == 0) continue;
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
    CLI::App app{"Forwarding rate of the rocefab switch pipeline between DPDK net_null ports"};
    unsigned frame_size = 64;
    unsigned duration_s = 5;
    int cpu = 1;
    bool recycle = false;
    bool queued = false;
    bool no_switch = false;
    unsigned flows = 1;
    app.add_option("--size", frame_size, "frame size in bytes, FCS excluded")->check(CLI::Range(60u, 9014u));
    app.add_option("--flows", flows,
                   "destinations behind each port the frames go to in turn, each frame to the next one")
        ->check(CLI::Range(1u, 254u));
    app.add_option("--seconds", duration_s, "how long to forward")->check(CLI::Range(1u, 600u));
    app.add_option("--cpu", cpu, "the CPU to forward on (testpmd -l 0-1 forwards on CPU 1)")
        ->check(CLI::Range(0, CPU_SETSIZE - 1));
    app.add_flag("--recycle", recycle, "leave the ethdevs out: the switch alone, fed from memory");
    app.add_flag("--queued", queued,
                 "the queued path: ports 0 and 1 into port 2 at line rate, links shaped, PFC honoured");
    app.add_flag("--no-switch", no_switch,
                 "the cut-through path's ports and loop with the switch left out: each frame goes straight on")
        ->excludes("--queued");
    CLI11_PARSE(app, argc, argv);

    const std::uint16_t port_count = queued ? 3 : 2;
    const std::string size = std::to_string(frame_size);
    eal_options options;
    options.file_prefix = "rocefab-bench-" + std::to_string(::getpid());
    for (std::uint16_t p = 0; p < port_count; ++p)
        options.extra_args.push_back("--vdev=net_null" + std::to_string(p) + ",size=" + size);
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
    std::vector<std::uint16_t> ethdev_ports(port_count);
    for (std::uint16_t p = 0; p < port_count; ++p) {
        const std::string name = "net_null" + std::to_string(p);
        if (rte_eth_dev_get_port_by_name(name.c_str(), &ethdev_ports[p]) != 0) return fail("no ethdev " + name);
        if (!start_port(ethdev_ports[p], pool, error)) return fail(error);
    }

    switch_node sw(bench_switch(port_count, queued));
    ethdev_sink sink(ethdev_ports, recycle, queued);
    sw.attach(&sink, pool);
    std::array<std::vector<roce_headers>, 2> headers;
    for (std::uint16_t in = 0; in < 2; ++in)
        for (std::uint32_t to = 0; to < flows; ++to)
            headers[in].push_back(
                roce_frame_start(in, egress_of(in, queued), static_cast<std::uint16_t>(frame_size), to));
    std::uint32_t next_flow = 0;

    std::array<std::uint64_t, max_ports> received{};
    std::array<std::array<rte_mbuf*, burst_size>, 2> bursts{};
    if (recycle && !queued)
        for (auto& burst : bursts)
            if (rte_pktmbuf_alloc_bulk(pool, burst.data(), burst_size) != 0) return fail("cannot allocate mbufs");
    // Frames from port `in` at `now`, as the realtime driver hands a link's frames over.
    auto receive = [&](std::uint16_t in, sim_time now) {
        std::array<rte_mbuf*, burst_size>& burst = bursts[in];
        std::uint16_t n = burst_size;
        if (!recycle)
            n = rte_eth_rx_burst(ethdev_ports[in], 0, burst.data(), burst_size);
        else if (queued && rte_pktmbuf_alloc_bulk(pool, burst.data(), burst_size) != 0)
            n = 0; // the queues hold the pool; the link frees some
        for (std::uint16_t i = 0; i < n; ++i) {
            rte_mbuf* m = burst[i];
            std::memcpy(rte_pktmbuf_mtod(m, void*), &headers[in][next_flow], sizeof(roce_headers));
            if (++next_flow == flows) next_flow = 0;
            m->data_len = static_cast<std::uint16_t>(frame_size);
            m->pkt_len = frame_size;
        }
        if (no_switch) {
            for (std::uint16_t i = 0; i < n; ++i) sink.transmit(egress_of(in, false), burst[i], now);
        } else {
            sw.receive_burst(in, {burst.data(), n}, now);
        }
        received[in] += n;
    };

    const sim_time end = seconds(duration_s);
    tsc_clock clock;
    // The queued path's clock: a round is the wire time of a burst, in which each host not
    // paused sends one at line rate and the egress link can send one.
    const sim_time round = burst_size * serialization_time(frame_size + wire_overhead_bytes, line_rate_bps);
    sim_time virtual_now = 0;
    for (sim_time now = clock.now(); now < end; now = clock.now()) {
        if (!queued) {
            for (std::uint16_t in = 0; in < 2; ++in) {
                receive(in, now);
                if (recycle) sink.flush(); // the frames are back, for the next round
            }
            sw.poll(now);
            sink.flush();
            continue;
        }
        for (int i = 0; i < 16; ++i, virtual_now += round) { // the wall clock read once in 16 rounds
            for (std::uint16_t in = 0; in < 2; ++in)
                if (sink.may_send(in, virtual_now)) receive(in, virtual_now);
            sw.poll(virtual_now);
            sink.flush();
        }
    }
    const double elapsed_s = double(clock.now()) / 1e9;
    std::array<std::uint64_t, max_ports> forwarded{};
    for (std::uint16_t p = 0; p < port_count; ++p) forwarded[p] = sink.accepted(p);
    // What is still queued leaves, so that the check below can account for every frame.
    while (queued && sw.buffer_in_use() != 0) {
        virtual_now += round;
        sw.poll(virtual_now);
        sink.flush();
    }
    if (recycle && !queued)
        for (auto& burst : bursts) rte_pktmbuf_free_bulk(burst.data(), burst_size);

    if (const std::string why = check_forwarded(sw, !no_switch, sink, queued, received, ethdev_ports); !why.empty())
        return fail(why);
    double total = 0;
    std::string by_port;
    for (std::uint16_t p = 0; p < port_count; ++p) {
        if (forwarded[p] == 0) continue;
        total += double(forwarded[p]);
        char line[64];
        std::snprintf(line, sizeof line, "%sto port %u: %.2f", by_port.empty() ? "" : ", ", p,
                      double(forwarded[p]) / elapsed_s / 1e6);
        by_port += line;
    }
    std::uint64_t marked = 0;
    for (std::uint16_t p = 0; p < port_count; ++p) marked += sw.counter(p, port_counter::ecn_marked);
    std::printf("%u B%s: %.2f Mpps forwarded on the %s (%s) on CPU %d, %u destination%s a port, %.0f frames "
                "in %.2f s, %llu ECN-marked, none dropped\n",
                frame_size, recycle ? " (recycled, no ethdev)" : "", total / elapsed_s / 1e6,
                queued      ? "queued path (2:1 at line rate)"
                : no_switch ? "cut-through path's ports, no switch"
                            : "cut-through path",
                by_port.c_str(), cpu, flows, flows == 1 ? "" : "s", total, elapsed_s,
                static_cast<unsigned long long>(marked));
    if (queued)
        std::printf("  virtual time %.3f ms: port 2's link busy %.1f %%, %llu XOFF/XON frames to the hosts, "
                    "queue peak %llu B\n",
                    double(virtual_now) / 1e6, 100.0 * double(sink.wire_time(incast_port)) / double(virtual_now),
                    static_cast<unsigned long long>(sink.pfc_frames(0) + sink.pfc_frames(1)),
                    static_cast<unsigned long long>(sw.queue_stats(incast_port, 3).peak_bytes));

    for (std::uint16_t port : ethdev_ports) {
        rte_eth_dev_stop(port);
        rte_eth_dev_close(port);
    }
    return 0;
}
