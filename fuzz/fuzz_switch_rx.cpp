// libFuzzer target: arbitrary frames into a real switch_emu::switch_node (switch_under_test.hpp),
// through receive_burst() as the drivers hand them over, so that every stage runs on them:
// parse, classify, route or bridge, admission, ECN/WRED, PFC (received and sent), the watchdog,
// ETS and transmit. Input: records (support/records.hpp); a record's flags pick the ingress port
// and the fix-ups (support/roce_fixup.hpp), and may hold its frames back to share one burst
// (one vector through the pipeline) with the next record's.
//
// Besides the sanitizers, the sink checks what the switch sends:
//   - a frame the switch forwards has the length it came with, and a valid IPv4 header checksum;
//   - a RoCE frame that was valid (ICRC included) when it came in is valid when it goes out: the
//     switch rewrites only fields the ICRC leaves out (TTL, DSCP/ECN, checksum, MACs);
//   - a frame the switch makes itself is a well-formed PFC frame.
// and after the switch is gone, every packet buffer is back in its pool.
//
// Each input runs twice, on two switches: once with each burst in one receive_burst() (vectors,
// cut-through by runs), once frame by frame through receive(). switch_node promises the same
// result; the two runs must send the same frames out of the same ports at the same times and
// end with the same counters.
#include "dataplane/wire/pfc.hpp"
#include "fuzz/support/drive.hpp"
#include "fuzz/support/packets.hpp"
#include "fuzz/support/records.hpp"
#include "fuzz/support/roce_fixup.hpp"
#include "fuzz/switch_under_test.hpp"
#include "switch_emu/switch_node.hpp"

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstring>
#include <string>
#include <unordered_map>
#include <vector>

namespace {

using namespace rocefab;
namespace sut = fuzz::switch_under_test;

class checking_sink final : public frame_sink {
public:
    struct handed_over {
        std::uint32_t length;
        bool valid_roce;
    };
    // Called for each input frame as it is handed to the switch.
    void expect(rte_mbuf* frame) {
        if (!_checks) return;
        wire::parsed_roce unused;
        _inputs[frame] = {rte_pktmbuf_pkt_len(frame),
                          wire::parse_roce_frame(frame_bytes(frame), unused) == wire::parse_error::none};
    }

    // `checks`: check each frame (above); off for the second run of an input, which is compared
    // with the first instead.
    explicit checking_sink(bool checks) : _checks(checks) {}

    // What left the switch, in order: port, time, length and the first 64 bytes (the headers the
    // switch may rewrite; it never touches a payload) of each frame.
    struct sent {
        std::uint16_t port;
        sim_time at;
        std::uint32_t length;
        std::array<std::uint8_t, 64> head;
        friend bool operator==(const sent&, const sent&) = default;
    };
    std::vector<sent> trace;

    sim_time transmit(std::uint16_t port, rte_mbuf* frame, sim_time now) override {
        if (port >= sut::port_count) fuzz::invariant_broken("the switch sent out of a port it does not have");
        if (_checks) check(frame);
        sent out{port, now, rte_pktmbuf_pkt_len(frame), {}};
        const std::span<std::uint8_t> bytes = frame_bytes(frame);
        std::memcpy(out.head.data(), bytes.data(), std::min(bytes.size(), out.head.size()));
        trace.push_back(out);
        _busy[port] =
            std::max(now, _busy[port]) + serialization_time(rte_pktmbuf_pkt_len(frame), sut::port_speed_bps[port]);
        fuzz::free_transmitted(frame);
        return _busy[port];
    }
    sim_time busy_until(std::uint16_t port) const override { return port < sut::port_count ? _busy[port] : 0; }

private:
    void check(rte_mbuf* frame) {
        const std::span<std::uint8_t> bytes = frame_bytes(frame);
        if (!fuzz::from_input_pool(frame)) {
            std::uint8_t enable;
            std::array<std::uint16_t, 8> quanta;
            if (!wire::parse_pfc_frame(bytes, enable, quanta))
                fuzz::invariant_broken("the switch made a frame that is not PFC");
            return;
        }
        const auto it = _inputs.find(frame);
        if (it == _inputs.end()) fuzz::invariant_broken("the switch sent an input frame it was never given");
        if (rte_pktmbuf_pkt_len(frame) != it->second.length || bytes.size() != it->second.length)
            fuzz::invariant_broken("a forwarded frame changed length");
        std::size_t l3 = sizeof(wire::ethernet_header);
        std::uint16_t type = reinterpret_cast<const wire::ethernet_header*>(bytes.data())->ether_type.load();
        if (type == wire::ethertype::vlan) {
            type = reinterpret_cast<const wire::vlan_header*>(bytes.data() + l3)->ether_type.load();
            l3 += sizeof(wire::vlan_header);
        }
        if (type == wire::ethertype::ipv4 &&
            !reinterpret_cast<const wire::ipv4_header*>(bytes.data() + l3)->checksum_ok())
            fuzz::invariant_broken("a forwarded IPv4 frame has a bad header checksum");
        wire::parsed_roce parsed;
        if (it->second.valid_roce && wire::parse_roce_frame(bytes, parsed) != wire::parse_error::none)
            fuzz::invariant_broken("a valid RoCE frame left the switch invalid");
        _inputs.erase(it);
    }

    bool _checks;
    std::unordered_map<rte_mbuf*, handed_over> _inputs;
    std::array<sim_time, sut::port_count> _busy{};
};

// The counters that moved, port by port.
void show(const switch_emu::switch_node& sw) {
    for (std::uint16_t port = 0; port < sut::port_count; ++port) {
        std::string line;
        sw.for_each_counter(port, [&](std::string_view name, std::uint64_t value) {
            if (value) line += " " + std::string(name) + "=" + std::to_string(value);
        });
        for (std::uint8_t tc = 0; tc < switch_emu::traffic_class_count; ++tc) {
            const auto& q = sw.queue_stats(port, tc);
            if (q.ecn_marked || q.tail_drops || q.watchdog_drops)
                line += " tc" + std::to_string(tc) + ":ecn=" + std::to_string(q.ecn_marked) +
                        ",tail=" + std::to_string(q.tail_drops) + ",wd=" + std::to_string(q.watchdog_drops);
        }
        std::fprintf(stderr, "swp%u:%s\n", port + 1, line.c_str());
    }
}

// One run of the input on a fresh switch: its frames in bursts (receive_burst) or one at a time
// (receive). Returns what the switch sent, and its counters at the end.
struct outcome {
    std::vector<checking_sink::sent> trace;
    std::vector<std::uint64_t> counters;
};

// Every counter and gauge the switch shows, in a fixed order. Not counters_json(): its
// instrumented JSON code would branch on the values and pass them off as coverage.
std::vector<std::uint64_t> counters_of(const switch_emu::switch_node& sw) {
    std::vector<std::uint64_t> values{sw.buffer_in_use(), sw.adaptive_reroutes()};
    for (std::uint16_t port = 0; port < sut::port_count; ++port) {
        sw.for_each_counter(port, [&](std::string_view, std::uint64_t value) { values.push_back(value); });
        for (std::uint8_t c = 0; c < switch_emu::traffic_class_count; ++c) {
            const auto& q = sw.queue_stats(port, c);
            values.insert(values.end(), {q.tx_packets, q.tx_bytes, q.tail_drops, q.wred_drops, q.watchdog_drops,
                                         q.ecn_marked, q.peak_bytes, sw.queue_depth_bytes(port, c)});
            const auto& in = sw.ingress_stats(port, c);
            values.insert(values.end(), {in.rx_packets, in.rx_bytes, in.headroom_drops});
        }
    }
    return values;
}

outcome run(std::span<const std::uint8_t> data, bool bursts) {
    fuzz::record_reader input(data);
    checking_sink sink(bursts);
    switch_emu::switch_node sw(sut::make_spec(input.config()));
    sw.attach(&sink, fuzz::pools().node);
    fuzz::node_clock clock;
    std::vector<rte_mbuf*> burst;
    std::uint16_t burst_port = 0;
    std::vector<std::uint8_t> bytes;
    auto deliver = [&] {
        if (burst.empty()) return;
        if (bursts)
            sw.receive_burst(burst_port, burst, clock.now());
        else
            for (rte_mbuf* frame : burst) sw.receive(burst_port, frame, clock.now());
        burst.clear();
        clock.settle(sw);
    };
    fuzz::frame_record r;
    while (input.next(r)) {
        std::uint16_t port = r.flags & sut::flag::port_mask;
        if (port >= sut::port_count) port = 0;
        if (port != burst_port) deliver();
        burst_port = port;
        bytes.assign(r.frame.begin(), r.frame.end());
        fuzz::apply(bytes, {.lengths = (r.flags & sut::flag::fix_lengths) != 0,
                            .dest_qpn = std::nullopt,
                            .seal = (r.flags & sut::flag::seal) != 0});
        for (unsigned copy = 0; copy <= fuzz::repeat_count(r.repeat) && burst.size() < 256; ++copy) {
            rte_mbuf* frame = fuzz::input_frame(bytes);
            if (!frame) break;
            sink.expect(frame);
            burst.push_back(frame);
        }
        if (!(r.flags & sut::flag::hold)) deliver();
        if (r.advance) clock.advance(sw, fuzz::advance_of(r.advance));
    }
    deliver();
    clock.advance(sw, milliseconds(1));
    if (bursts && fuzz::show_counters()) show(sw);
    return {std::move(sink.trace), counters_of(sw)}; // the switch frees what it still queues
}

} // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
    (void)fuzz::pools();
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const outcome vectors = run({data, size}, true);
    fuzz::expect_all_returned();
    const outcome frames = run({data, size}, false);
    fuzz::expect_all_returned();
    if (vectors.trace != frames.trace)
        fuzz::invariant_broken("receive_burst() sent other frames, ports or times than receive() frame by frame");
    if (vectors.counters != frames.counters) // the buffer's and queues' peaks (watermarks) included
        fuzz::invariant_broken("receive_burst() left other counters than receive() frame by frame");
    return 0;
}
