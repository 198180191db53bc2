// The switch pipeline end to end: frames go in through receive(), come out of a fake link that
// records them, and counters say what happened to the rest.
#include "switch_emu/show.hpp"
#include "switch_emu/switch_node.hpp"

#include "dataplane/wire/ethernet.hpp"
#include "dataplane/wire/ip.hpp"
#include "dataplane/wire/pfc.hpp"
#include "dataplane/wire/udp.hpp"
#include "tests/support/eal_environment.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <stdexcept>
#include <vector>

namespace rocefab::switch_emu {
namespace {

using rocefab::testing::make_frame;
using rocefab::testing::test_pool;

wire::mac_address mac(const char* text) {
    wire::mac_address m;
    EXPECT_TRUE(wire::mac_address::parse(text, m)) << text;
    return m;
}

std::uint32_t ipv4(const char* text) {
    std::uint32_t a = 0;
    EXPECT_TRUE(wire::parse_ipv4(text, a)) << text;
    return a;
}

wire::ipv6_address ipv6(const char* text) {
    wire::ipv6_address a;
    EXPECT_TRUE(wire::ipv6_address::parse(text, a)) << text;
    return a;
}

// ---------------------------------------------------------------------------------------------
// Frames

const wire::mac_address host_mac = mac("02:00:00:00:aa:01");

struct frame_options {
    wire::mac_address destination_mac = mac("02:00:00:00:00:00"); // switch port 0
    wire::mac_address source_mac = host_mac;
    std::uint8_t ttl = 64;
    std::uint8_t dscp = 0;
    std::uint16_t source_port = 49152;
    std::uint16_t destination_port = wire::roce_v2_udp_port;
    std::size_t payload = 16;
    std::optional<std::uint8_t> pcp;    // set: 802.1Q priority tag with this PCP
    std::uint8_t ecn = wire::ecn::ect0; // RoCEv2 NICs send ECN-capable packets
};

std::size_t put_ethernet(std::vector<std::uint8_t>& bytes, const frame_options& o, std::uint16_t ether_type) {
    wire::ethernet_header eth{o.destination_mac, o.source_mac, wire::be16(o.pcp ? wire::ethertype::vlan : ether_type)};
    bytes.resize(sizeof eth);
    std::memcpy(bytes.data(), &eth, sizeof eth);
    if (o.pcp) {
        wire::vlan_header tag{};
        tag.set(*o.pcp, 0);
        tag.ether_type.store(ether_type);
        bytes.resize(bytes.size() + sizeof tag);
        std::memcpy(bytes.data() + sizeof eth, &tag, sizeof tag);
    }
    return bytes.size();
}

void put_udp(std::vector<std::uint8_t>& bytes, const frame_options& o) {
    wire::udp_header udp{wire::be16(o.source_port), wire::be16(o.destination_port),
                         wire::be16(static_cast<std::uint16_t>(sizeof(wire::udp_header) + o.payload)), wire::be16(0)};
    const std::size_t at = bytes.size();
    bytes.resize(at + sizeof udp + o.payload, 0x5a);
    std::memcpy(bytes.data() + at, &udp, sizeof udp);
}

std::vector<std::uint8_t> ipv4_udp_frame(std::uint32_t source, std::uint32_t destination, const frame_options& o = {}) {
    std::vector<std::uint8_t> bytes;
    const std::size_t l3 = put_ethernet(bytes, o, wire::ethertype::ipv4);
    wire::ipv4_header ip{};
    ip.version_ihl = 0x45;
    ip.set_dscp_ecn(o.dscp, o.ecn);
    ip.total_length.store(static_cast<std::uint16_t>(sizeof ip + sizeof(wire::udp_header) + o.payload));
    ip.flags_fragment.store(0x4000); // DF, as RoCEv2 sends
    ip.ttl = o.ttl;
    ip.protocol = wire::ip_protocol::udp;
    ip.source.store(source);
    ip.destination.store(destination);
    ip.update_checksum();
    bytes.resize(l3 + sizeof ip);
    std::memcpy(bytes.data() + l3, &ip, sizeof ip);
    put_udp(bytes, o);
    return bytes;
}

std::vector<std::uint8_t> ipv6_udp_frame(const wire::ipv6_address& source, const wire::ipv6_address& destination,
                                         const frame_options& o = {}) {
    std::vector<std::uint8_t> bytes;
    const std::size_t l3 = put_ethernet(bytes, o, wire::ethertype::ipv6);
    wire::ipv6_header ip{};
    ip.set(o.dscp, o.ecn, 0x12345);
    ip.payload_length.store(static_cast<std::uint16_t>(sizeof(wire::udp_header) + o.payload));
    ip.next_header = wire::ip_protocol::udp;
    ip.hop_limit = o.ttl;
    ip.source = source;
    ip.destination = destination;
    bytes.resize(l3 + sizeof ip);
    std::memcpy(bytes.data() + l3, &ip, sizeof ip);
    put_udp(bytes, o);
    return bytes;
}

wire::ipv4_header read_ipv4(const std::vector<std::uint8_t>& frame, std::size_t l3 = sizeof(wire::ethernet_header)) {
    wire::ipv4_header ip{};
    EXPECT_GE(frame.size(), l3 + sizeof ip);
    if (frame.size() >= l3 + sizeof ip) std::memcpy(&ip, frame.data() + l3, sizeof ip);
    return ip;
}

wire::ipv6_header read_ipv6(const std::vector<std::uint8_t>& frame) {
    wire::ipv6_header ip{};
    EXPECT_GE(frame.size(), sizeof(wire::ethernet_header) + sizeof ip);
    if (frame.size() >= sizeof(wire::ethernet_header) + sizeof ip)
        std::memcpy(&ip, frame.data() + sizeof(wire::ethernet_header), sizeof ip);
    return ip;
}

wire::ethernet_header read_ethernet(const std::vector<std::uint8_t>& frame) {
    wire::ethernet_header eth{};
    EXPECT_GE(frame.size(), sizeof eth);
    if (frame.size() >= sizeof eth) std::memcpy(&eth, frame.data(), sizeof eth);
    return eth;
}

// ---------------------------------------------------------------------------------------------
// A fake link on every port: records what the switch transmits and models serialisation at
// `rate_bps` (0: never busy unless a test says so).

struct sent_frame {
    std::uint16_t port;
    std::vector<std::uint8_t> bytes;
    sim_time at;
    std::uint8_t priority;
    std::uint8_t traffic_class;
};

// What two runs of the same frames sent, frame by frame: the same ports, times and bytes.
void expect_same_frames(const std::vector<sent_frame>& got, const std::vector<sent_frame>& expected) {
    ASSERT_EQ(got.size(), expected.size());
    for (std::size_t i = 0; i < got.size(); ++i) {
        EXPECT_EQ(got[i].port, expected[i].port) << "frame " << i;
        EXPECT_EQ(got[i].at, expected[i].at) << "frame " << i;
        EXPECT_EQ(got[i].bytes, expected[i].bytes) << "frame " << i;
    }
}

class recording_sink final : public frame_sink {
public:
    explicit recording_sink(std::size_t ports, std::uint64_t rate_bps = 0) : _busy(ports, 0), _rate_bps(rate_bps) {}

    sim_time transmit(std::uint16_t port, rte_mbuf* frame, sim_time now) override {
        const auto bytes = frame_bytes(frame);
        sent.push_back({port, {bytes.begin(), bytes.end()}, now, meta(frame).priority, meta(frame).traffic_class});
        if (_rate_bps) _busy[port] = std::max(now, _busy[port]) + serialization_time(bytes.size(), _rate_bps);
        rte_pktmbuf_free(frame);
        return _busy[port];
    }
    sim_time busy_until(std::uint16_t port) const override { return _busy[port]; }
    void set_busy_until(std::uint16_t port, sim_time t) { _busy[port] = t; }

    std::vector<sent_frame> sent;

private:
    std::vector<sim_time> _busy;
    std::uint64_t _rate_bps;
};

// ---------------------------------------------------------------------------------------------
// The switch under test: port 0 faces the sending host; routes lead out of ports 1..4.

constexpr std::uint64_t hundred_gig = 100'000'000'000ull;

wire::mac_address port_mac(unsigned port) {
    wire::mac_address m = mac("02:00:00:00:00:00");
    m.bytes[5] = static_cast<std::uint8_t>(port);
    return m;
}

wire::mac_address neighbour_mac(unsigned port) {
    wire::mac_address m = mac("02:00:00:00:bb:00");
    m.bytes[5] = static_cast<std::uint8_t>(port);
    return m;
}

route_spec v4_route(const char* prefix, unsigned length, const std::vector<std::uint16_t>& ports) {
    route_spec r{wire::ipv6_address::v4_mapped(ipv4(prefix)), length, false, ports, {}};
    for (auto p : ports) r.next_hop_macs.push_back(neighbour_mac(p));
    return r;
}

route_spec v6_route(const char* prefix, unsigned length, const std::vector<std::uint16_t>& ports) {
    route_spec r{ipv6(prefix), length, true, ports, {}};
    for (auto p : ports) r.next_hop_macs.push_back(neighbour_mac(p));
    return r;
}

switch_spec test_spec() {
    switch_spec spec;
    spec.name = "leaf1";
    for (unsigned p = 0; p < 5; ++p)
        spec.ports.push_back({"swp" + std::to_string(p + 1), port_mac(p), hundred_gig, p == 4 ? 1500u : 9000u});
    spec.routes = {
        v4_route("10.0.0.0", 8, {1}),    v4_route("10.1.0.0", 16, {2}),   v4_route("192.168.0.0", 24, {1, 2, 3, 4}),
        v4_route("172.16.0.0", 12, {4}), v6_route("2001:db8::", 32, {1}), v6_route("2001:db8:1::", 48, {2}),
    };
    return spec;
}

class switch_pipeline : public ::testing::Test {
protected:
    void SetUp() override {
        ASSERT_NE(test_pool(), nullptr);
        _available_before = rte_mempool_avail_count(test_pool());
    }
    void TearDown() override {
        sw.reset(); // frees what is still queued
        if (test_pool()) {
            EXPECT_EQ(rte_mempool_avail_count(test_pool()), _available_before) << "mbuf leak";
        }
    }

    void build(switch_spec spec = test_spec(), std::uint64_t link_rate_bps = 0) {
        sink.emplace(spec.ports.size(), link_rate_bps);
        sw.emplace(std::move(spec));
        sw->attach(&*sink, test_pool());
    }

    void send(const std::vector<std::uint8_t>& bytes, sim_time now = 0, std::uint16_t port = 0) {
        rte_mbuf* m = make_frame(bytes);
        ASSERT_NE(m, nullptr);
        sw->receive(port, m, now);
    }

    std::uint64_t count(std::uint16_t port, port_counter c) const { return sw->counter(port, c); }

    std::optional<recording_sink> sink;
    std::optional<switch_node> sw;

private:
    unsigned _available_before = 0;
};

const std::uint32_t host_ip = ipv4("10.9.9.9");

// ---------------------------------------------------------------------------------------------
// Forwarding

TEST_F(switch_pipeline, forwards_ipv4_to_routed_port_with_macs_rewritten_ttl_decremented_and_checksum_valid) {
    build();
    send(ipv4_udp_frame(host_ip, ipv4("10.2.3.4"), {.ttl = 64}));

    ASSERT_EQ(sink->sent.size(), 1u);
    const sent_frame& out = sink->sent[0];
    EXPECT_EQ(out.port, 1);
    const auto eth = read_ethernet(out.bytes);
    EXPECT_EQ(eth.destination, neighbour_mac(1));
    EXPECT_EQ(eth.source, port_mac(1));
    const auto ip = read_ipv4(out.bytes);
    EXPECT_EQ(ip.ttl, 63);
    EXPECT_TRUE(ip.checksum_ok());
    wire::ipv4_header recomputed = ip;
    recomputed.update_checksum();
    EXPECT_EQ(recomputed.checksum.load(), ip.checksum.load());
    EXPECT_EQ(count(0, port_counter::rx_packets), 1u);
    EXPECT_EQ(count(1, port_counter::tx_packets), 1u);
    EXPECT_EQ(count(1, port_counter::tx_bytes), out.bytes.size());
}

TEST_F(switch_pipeline, incremental_checksum_stays_valid_for_every_ttl_and_tos) {
    build();
    for (unsigned ttl = 2; ttl <= 255; ttl += 3) {
        for (std::uint8_t dscp : {0, 26, 48, 63}) {
            sink->sent.clear();
            send(ipv4_udp_frame(host_ip, ipv4("10.2.3.4"), {.ttl = static_cast<std::uint8_t>(ttl), .dscp = dscp}));
            ASSERT_EQ(sink->sent.size(), 1u);
            const auto ip = read_ipv4(sink->sent[0].bytes);
            EXPECT_EQ(ip.ttl, ttl - 1);
            EXPECT_TRUE(ip.checksum_ok()) << "ttl " << ttl << " dscp " << int(dscp);
        }
    }
}

TEST_F(switch_pipeline, forwards_ipv6_to_routed_port_with_macs_rewritten_and_hop_limit_decremented) {
    build();
    send(ipv6_udp_frame(ipv6("2001:db8:9::1"), ipv6("2001:db8:5::7"), {.ttl = 2}));

    ASSERT_EQ(sink->sent.size(), 1u);
    EXPECT_EQ(sink->sent[0].port, 1);
    const auto eth = read_ethernet(sink->sent[0].bytes);
    EXPECT_EQ(eth.destination, neighbour_mac(1));
    EXPECT_EQ(eth.source, port_mac(1));
    EXPECT_EQ(read_ipv6(sink->sent[0].bytes).hop_limit, 1);
}

TEST_F(switch_pipeline, longest_prefix_wins_over_a_shorter_one) {
    auto spec = test_spec();
    spec.routes.push_back(v4_route("0.0.0.0", 0, {3}));
    spec.routes.push_back(v4_route("10.1.2.3", 32, {4}));
    build(spec);
    const std::map<const char*, std::uint16_t> expected = {{"10.2.0.1", 1}, {"10.1.0.1", 2}, {"10.1.2.3", 4},
                                                           {"10.1.2.2", 2}, {"11.0.0.1", 3}, {"10.255.255.255", 1}};
    for (const auto& [destination, port] : expected) {
        sink->sent.clear();
        send(ipv4_udp_frame(host_ip, ipv4(destination)));
        ASSERT_EQ(sink->sent.size(), 1u) << destination;
        EXPECT_EQ(sink->sent[0].port, port) << destination;
    }
    for (const auto& [destination, port] :
         std::map<const char*, std::uint16_t>{{"2001:db8:1::9", 2}, {"2001:db8:2::9", 1}}) {
        sink->sent.clear();
        send(ipv6_udp_frame(ipv6("2001:db8:9::1"), ipv6(destination)));
        ASSERT_EQ(sink->sent.size(), 1u) << destination;
        EXPECT_EQ(sink->sent[0].port, port) << destination;
    }
}

TEST_F(switch_pipeline, ipv4_default_route_does_not_catch_ipv6) {
    auto spec = test_spec();
    spec.routes.push_back(v4_route("0.0.0.0", 0, {3}));
    build(spec);
    send(ipv6_udp_frame(ipv6("2001:db8:9::1"), ipv6("2001:db9::1")));
    EXPECT_TRUE(sink->sent.empty());
    EXPECT_EQ(count(0, port_counter::drops_no_route), 1u);
}

TEST_F(switch_pipeline, vlan_tagged_ipv4_is_routed) {
    build();
    send(ipv4_udp_frame(host_ip, ipv4("10.1.0.9"), {.pcp = 3}));
    ASSERT_EQ(sink->sent.size(), 1u);
    EXPECT_EQ(sink->sent[0].port, 2);
    const auto ip = read_ipv4(sink->sent[0].bytes, sizeof(wire::ethernet_header) + sizeof(wire::vlan_header));
    EXPECT_EQ(ip.ttl, 63);
    EXPECT_TRUE(ip.checksum_ok());
}

TEST_F(switch_pipeline, ethernet_padding_after_the_ip_packet_is_accepted) {
    build();
    auto bytes = ipv4_udp_frame(host_ip, ipv4("10.2.3.4"), {.payload = 0}); // 42 bytes
    bytes.resize(60, 0);                                                    // padded to the Ethernet minimum
    send(bytes);
    EXPECT_EQ(sink->sent.size(), 1u);
}

// ---------------------------------------------------------------------------------------------
// Drops: each counted once, under its reason, and nothing forwarded

TEST_F(switch_pipeline, frame_without_route_is_dropped_as_no_route) {
    build();
    send(ipv4_udp_frame(host_ip, ipv4("11.0.0.1")));
    send(ipv6_udp_frame(ipv6("2001:db8:9::1"), ipv6("2001:db9::1")));
    EXPECT_TRUE(sink->sent.empty());
    EXPECT_EQ(count(0, port_counter::drops_no_route), 2u);
}

TEST_F(switch_pipeline, ttl_or_hop_limit_of_one_or_zero_is_dropped_as_ttl_expired) {
    build();
    send(ipv4_udp_frame(host_ip, ipv4("10.2.3.4"), {.ttl = 1}));
    send(ipv4_udp_frame(host_ip, ipv4("10.2.3.4"), {.ttl = 0}));
    send(ipv6_udp_frame(ipv6("2001:db8:9::1"), ipv6("2001:db8:5::7"), {.ttl = 1}));
    EXPECT_TRUE(sink->sent.empty());
    EXPECT_EQ(count(0, port_counter::drops_ttl_expired), 3u);
}

TEST_F(switch_pipeline, unicast_to_another_mac_is_dropped_as_not_for_us) {
    build();
    send(ipv4_udp_frame(host_ip, ipv4("10.2.3.4"), {.destination_mac = port_mac(1)})); // port 1's MAC, on port 0
    send(ipv4_udp_frame(host_ip, ipv4("10.2.3.4"), {.destination_mac = mac("02:12:34:56:78:9a")}));
    EXPECT_TRUE(sink->sent.empty());
    EXPECT_EQ(count(0, port_counter::rx_drops_not_for_us), 2u);
}

TEST_F(switch_pipeline, a_mac_one_bit_from_the_ports_in_any_byte_is_not_for_us_and_the_source_does_not_matter) {
    // The port's MAC is compared as one masked 8-byte word that also holds the source MAC's
    // first two bytes: each of the six bytes must count, and those two must not.
    build();
    for (std::size_t byte = 0; byte < 6; ++byte) {
        wire::mac_address near = port_mac(0);
        near.bytes[byte] ^= 0x80; // not the group bit: still unicast
        send(ipv4_udp_frame(host_ip, ipv4("10.2.3.4"), {.destination_mac = near}));
    }
    EXPECT_TRUE(sink->sent.empty());
    EXPECT_EQ(count(0, port_counter::rx_drops_not_for_us), 6u);
    for (const char* source : {"ff:ff:00:00:00:01", "00:00:00:00:00:01", "a5:5a:12:34:56:78"})
        send(ipv4_udp_frame(host_ip, ipv4("10.2.3.4"), {.source_mac = mac(source)}));
    EXPECT_EQ(sink->sent.size(), 3u);
    EXPECT_EQ(count(0, port_counter::rx_drops_not_for_us), 6u);
}

TEST_F(switch_pipeline, bad_ipv4_header_checksum_is_dropped_as_malformed) {
    build();
    auto bytes = ipv4_udp_frame(host_ip, ipv4("10.2.3.4"));
    bytes[sizeof(wire::ethernet_header) + 10] ^= 0x01; // checksum's low byte
    send(bytes);
    EXPECT_TRUE(sink->sent.empty());
    EXPECT_EQ(count(0, port_counter::rx_drops_malformed), 1u);
}

TEST_F(switch_pipeline, bad_version_ihl_or_total_length_is_dropped_as_malformed) {
    build();
    const std::size_t l3 = sizeof(wire::ethernet_header);
    auto with_header = [&](auto edit) {
        auto bytes = ipv4_udp_frame(host_ip, ipv4("10.2.3.4"));
        wire::ipv4_header ip = read_ipv4(bytes);
        edit(ip);
        // A valid checksum, so that only the edited field is wrong. Over the 20 bytes of the copy,
        // not update_checksum()'s IHL x 4: IHL 15 would make it read 40 bytes past the copy.
        ip.checksum.store(0);
        const auto* b = reinterpret_cast<const std::uint8_t*>(&ip);
        std::uint32_t sum = 0;
        for (std::size_t i = 0; i < sizeof ip; i += 2) sum += std::uint32_t(b[i]) << 8 | b[i + 1];
        while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
        ip.checksum.store(static_cast<std::uint16_t>(~sum));
        std::memcpy(bytes.data() + l3, &ip, sizeof ip);
        return bytes;
    };
    send(with_header([](wire::ipv4_header& ip) { ip.version_ihl = 0x44; })); // IHL 4
    send(with_header([](wire::ipv4_header& ip) { ip.version_ihl = 0x65; })); // version 6
    send(with_header([](wire::ipv4_header& ip) { ip.version_ihl = 0x4f; })); // IHL past the end
    send(with_header(
        [](wire::ipv4_header& ip) { ip.total_length.store(ip.total_length.load() + 1); })); // past the frame
    send(with_header([](wire::ipv4_header& ip) { ip.total_length.store(19); }));            // below IHL
    auto v6 = ipv6_udp_frame(ipv6("2001:db8:9::1"), ipv6("2001:db8:5::7"));
    v6[l3] = 0x45; // version 4 in an IPv6 EtherType
    send(v6);
    EXPECT_TRUE(sink->sent.empty());
    EXPECT_EQ(count(0, port_counter::rx_drops_malformed), 6u);
}

TEST_F(switch_pipeline, truncated_frames_at_every_length_are_dropped_as_malformed) {
    build();
    const std::vector<std::vector<std::uint8_t>> whole = {
        ipv4_udp_frame(host_ip, ipv4("10.2.3.4")),
        ipv4_udp_frame(host_ip, ipv4("10.2.3.4"), {.pcp = 3}),
        ipv6_udp_frame(ipv6("2001:db8:9::1"), ipv6("2001:db8:5::7")),
    };
    std::uint64_t sent = 0;
    for (const auto& frame : whole) {
        for (std::size_t length = 0; length < frame.size(); ++length) {
            send({frame.begin(), frame.begin() + static_cast<std::ptrdiff_t>(length)});
            ++sent;
            ASSERT_EQ(count(0, port_counter::rx_drops_malformed), sent) << "length " << length;
        }
    }
    EXPECT_TRUE(sink->sent.empty());
    EXPECT_EQ(count(0, port_counter::rx_packets), sent);
}

TEST_F(switch_pipeline, mac_control_frames_are_consumed_and_counted_as_pause) {
    build();
    std::vector<std::uint8_t> pfc(60, 0);
    const wire::ethernet_header eth{mac("01:80:c2:00:00:01"), host_mac, wire::be16(wire::ethertype::mac_control)};
    std::memcpy(pfc.data(), &eth, sizeof eth);
    pfc[14] = 0x01; // opcode 0x0101: PFC
    pfc[15] = 0x01;
    send(pfc);
    EXPECT_TRUE(sink->sent.empty());
    EXPECT_EQ(count(0, port_counter::rx_pause_frames), 1u);
    EXPECT_EQ(count(0, port_counter::rx_drops_non_ip), 0u);
}

TEST_F(switch_pipeline, arp_and_other_non_ip_frames_are_dropped_as_non_ip) {
    build();
    std::vector<std::uint8_t> arp(60, 0);
    const wire::ethernet_header eth{mac("ff:ff:ff:ff:ff:ff"), host_mac, wire::be16(wire::ethertype::arp)};
    std::memcpy(arp.data(), &eth, sizeof eth);
    send(arp);
    auto qinq = arp;
    qinq[12] = 0x88; // 802.1ad outer tag
    qinq[13] = 0xa8;
    send(qinq);
    EXPECT_TRUE(sink->sent.empty());
    EXPECT_EQ(count(0, port_counter::rx_drops_non_ip), 2u);
}

TEST_F(switch_pipeline, packet_over_egress_mtu_is_dropped_as_mtu_exceeded_on_the_egress_port) {
    build(); // port 4 has MTU 1500
    const std::size_t fits = 1500 - sizeof(wire::ipv4_header) - sizeof(wire::udp_header);
    send(ipv4_udp_frame(host_ip, ipv4("172.16.0.1"), {.payload = fits}));
    send(ipv4_udp_frame(host_ip, ipv4("172.16.0.1"), {.payload = fits + 1}));
    ASSERT_EQ(sink->sent.size(), 1u);
    EXPECT_EQ(read_ipv4(sink->sent[0].bytes).total_length.load(), 1500);
    EXPECT_EQ(count(4, port_counter::drops_mtu_exceeded), 1u);
}

TEST_F(switch_pipeline, corrupted_frames_are_each_forwarded_or_counted_exactly_once) {
    build();
    std::mt19937 random(7);
    const auto v4 = ipv4_udp_frame(host_ip, ipv4("192.168.0.5"));
    const auto v6 = ipv6_udp_frame(ipv6("2001:db8:9::1"), ipv6("2001:db8:5::7"));
    constexpr int frames = 3000;
    for (int i = 0; i < frames; ++i) {
        auto bytes = (i % 2) ? v6 : v4;
        const int flips = 1 + static_cast<int>(random() % 4);
        for (int f = 0; f < flips; ++f)
            bytes[random() % bytes.size()] ^= static_cast<std::uint8_t>(1u << (random() % 8));
        bytes.resize(random() % (bytes.size() + 1));
        send(bytes);
    }
    std::uint64_t accounted = sink->sent.size();
    for (std::uint16_t port = 0; port < sw->port_count(); ++port)
        for (port_counter c :
             {port_counter::rx_drops_not_for_us, port_counter::rx_drops_malformed, port_counter::rx_drops_non_ip,
              port_counter::rx_pause_frames, port_counter::drops_no_route, port_counter::drops_ttl_expired,
              port_counter::drops_mtu_exceeded, port_counter::tail_drops})
            accounted += count(port, c);
    EXPECT_EQ(count(0, port_counter::rx_packets), std::uint64_t(frames));
    EXPECT_EQ(accounted, std::uint64_t(frames));
    EXPECT_EQ(sw->buffer_in_use(), 0u);
}

TEST_F(switch_pipeline, a_burst_is_forwarded_and_counted_as_its_frames_one_at_a_time) {
    // Bursts longer than a vector, with every kind of frame in them: routed over ECMP, to a
    // lossy and a lossless class, bridged-away, malformed, expired, unroutable, non-IP, and
    // PFC frames that pause and resume the port they arrive on, port 1, one of the ECMP
    // members, between the frames around them. Links at 10G keep frames queued across bursts,
    // so the queue stages see what the frames before them left.
    std::vector<std::vector<std::uint8_t>> frames;
    std::mt19937 random(11);
    auto pfc_frame = [](std::uint16_t quanta) {
        std::array<std::uint16_t, 8> quanta_of{};
        quanta_of[3] = quanta;
        std::vector<std::uint8_t> bytes(wire::pfc_frame_length);
        wire::write_pfc_frame(bytes.data(), neighbour_mac(0), 1u << 3, quanta_of);
        return bytes;
    };
    for (int i = 0; i < 300; ++i) {
        frame_options o;
        o.destination_mac = port_mac(1);
        o.dscp = (i % 3) ? 26 : 0;
        o.source_port = static_cast<std::uint16_t>(49152 + random() % 64);
        o.payload = 16 + random() % 2000;
        switch (random() % 12) {
        case 0: frames.push_back(pfc_frame(random() % 2 ? 0xffff : 0)); break;
        case 1:
            o.ttl = 1;
            frames.push_back(ipv4_udp_frame(host_ip, ipv4("10.1.2.3"), o));
            break;
        case 2: frames.push_back(ipv4_udp_frame(host_ip, ipv4("11.0.0.1"), o)); break;
        case 3: {
            auto bytes = ipv4_udp_frame(host_ip, ipv4("10.1.2.3"), o);
            bytes[24] ^= 0x40; // the IPv4 header checksum
            frames.push_back(bytes);
            break;
        }
        case 4:
            o.destination_mac = mac("02:00:00:00:99:99");
            frames.push_back(ipv4_udp_frame(host_ip, ipv4("10.1.2.3"), o));
            break;
        case 5: frames.push_back(ipv6_udp_frame(ipv6("2001:db8:9::1"), ipv6("2001:db8:1::7"), o)); break;
        default: frames.push_back(ipv4_udp_frame(host_ip, ipv4(i % 2 ? "192.168.0.9" : "10.1.2.3"), o)); break;
        }
    }

    auto run = [&](bool in_bursts) {
        recording_sink link(5, 10'000'000'000ull);
        switch_node node(test_spec());
        node.attach(&link, test_pool());
        sim_time now = 0;
        for (std::size_t at = 0; at < frames.size(); now += 2'000) {
            const std::size_t n =
                std::min<std::size_t>(frames.size() - at, 1 + random() % (2 * switch_node::vector_size));
            std::vector<rte_mbuf*> burst;
            for (std::size_t i = at; i < at + n; ++i) burst.push_back(make_frame(frames[i]));
            if (in_bursts) {
                node.receive_burst(1, burst, now);
            } else {
                for (rte_mbuf* m : burst) node.receive(1, m, now);
            }
            at += n;
            node.poll(now);
        }
        for (sim_time end = now + 10'000'000; now < end; now += 1'000) node.poll(now);
        return std::pair(std::move(link.sent), counters_json(node));
    };
    const std::mt19937 seed = random;
    const auto [one_by_one, one_by_one_counters] = run(false);
    random = seed; // the same burst lengths, taken whole this time
    const auto [bursts, burst_counters] = run(true);

    expect_same_frames(bursts, one_by_one);
    EXPECT_EQ(burst_counters, one_by_one_counters);
    // The mix did what it is for: frames were dropped for every reason, paused and marked.
    const auto& port1 = burst_counters["ports"][1];
    for (const char* reason :
         {"rx_drops_not_for_us", "rx_drops_malformed", "drops_no_route", "drops_ttl_expired", "rx_pause_frames"})
        EXPECT_GT(port1[reason].get<std::uint64_t>(), 0u) << reason;
    EXPECT_GT(burst_counters["ports"][1]["rx_prio3_pause"].get<std::uint64_t>(), 0u);
    EXPECT_GT(bursts.size(), 100u);
}

TEST_F(switch_pipeline, frames_cut_through_in_runs_leave_what_they_leave_one_at_a_time) {
    // Runs of one flow's frames, of mixed lengths. Into a 100G link that is now free, now busy,
    // a run goes straight through until the link has taken 1 us of it (the transmit FIFO), and
    // the rest of it queues; into a link that is never busy, every run goes straight through.
    // Taken as runs or one frame at a time, the same frames must leave at the same times, with
    // the same counters and buffer watermarks (the longest frame of a run sets them, not its
    // last). A lossy frame now and then, and a flow to another port, break the runs.
    std::vector<std::vector<std::uint8_t>> frames;
    std::mt19937 random(5);
    for (int i = 0; i < 400; ++i) {
        frame_options o;
        o.dscp = random() % 8 ? 26 : 0;
        o.payload = 16 + random() % 3000;
        frames.push_back(ipv4_udp_frame(host_ip, ipv4(random() % 8 ? "10.1.2.3" : "10.0.0.5"), o));
    }
    auto run = [&](bool in_bursts, std::uint64_t link_rate_bps) {
        recording_sink link(5, link_rate_bps);
        switch_spec spec = test_spec();
        spec.transmit_fifo = 1'000; // a link takes frames up to 1 us ahead of the wire
        switch_node node(spec);
        node.attach(&link, test_pool());
        sim_time now = 0;
        std::size_t sent_on_arrival = 0;
        for (std::size_t at = 0; at < frames.size(); now += 6'000) { // about 4 us of frames every 6 us
            const std::size_t n =
                std::min<std::size_t>(frames.size() - at, 1 + random() % (2 * switch_node::vector_size));
            std::vector<rte_mbuf*> burst;
            for (std::size_t i = at; i < at + n; ++i) burst.push_back(make_frame(frames[i]));
            const std::size_t sent_before = link.sent.size();
            if (in_bursts) {
                node.receive_burst(0, burst, now);
            } else {
                for (rte_mbuf* m : burst) node.receive(0, m, now);
            }
            sent_on_arrival += link.sent.size() - sent_before;
            at += n;
            node.poll(now);
        }
        for (sim_time end = now + 1'000'000; now < end; now += 1'000) node.poll(now);
        return std::tuple(std::move(link.sent), counters_json(node), sent_on_arrival);
    };
    for (const std::uint64_t link_rate_bps : {hundred_gig, std::uint64_t(0)}) {
        SCOPED_TRACE(link_rate_bps ? "100G link" : "link never busy");
        const std::mt19937 seed = random;
        const auto [one_by_one, one_by_one_counters, one_by_one_on_arrival] = run(false, link_rate_bps);
        random = seed;
        const auto [runs, run_counters, runs_on_arrival] = run(true, link_rate_bps);

        ASSERT_EQ(one_by_one.size(), frames.size());
        expect_same_frames(runs, one_by_one);
        EXPECT_EQ(run_counters, one_by_one_counters);
        EXPECT_EQ(runs_on_arrival, one_by_one_on_arrival);
        if (link_rate_bps) { // both ways were taken: frames sent as they arrived, and frames queued
            EXPECT_GT(runs_on_arrival, 50u);
            EXPECT_LT(runs_on_arrival, frames.size() - 50);
        } else {
            EXPECT_EQ(runs_on_arrival, frames.size());
        }
    }
}

// ---------------------------------------------------------------------------------------------
// ECMP

TEST_F(switch_pipeline, ecmp_spreads_flows_over_every_member_and_keeps_each_flow_on_one_port) {
    build();
    std::map<std::uint16_t, std::uint16_t> port_of_flow;
    std::map<std::uint16_t, int> flows_on_port;
    for (std::uint16_t flow = 0; flow < 64; ++flow) {
        sink->sent.clear();
        send(ipv4_udp_frame(host_ip, ipv4("192.168.0.10"), {.source_port = static_cast<std::uint16_t>(49152 + flow)}));
        ASSERT_EQ(sink->sent.size(), 1u);
        const std::uint16_t port = sink->sent[0].port;
        EXPECT_EQ(read_ethernet(sink->sent[0].bytes).destination, neighbour_mac(port))
            << "next hop of the chosen member";
        port_of_flow[flow] = port;
        ++flows_on_port[port];
    }
    // 64 flows over 4 uplinks: each within 25 % of its fair 16.
    for (std::uint16_t port = 1; port <= 4; ++port) {
        EXPECT_GE(flows_on_port[port], 12) << "port " << port;
        EXPECT_LE(flows_on_port[port], 20) << "port " << port;
    }
    EXPECT_EQ(flows_on_port.size(), 4u);

    for (int round = 0; round < 3; ++round) {
        for (std::uint16_t flow = 0; flow < 64; ++flow) {
            sink->sent.clear();
            send(ipv4_udp_frame(
                host_ip, ipv4("192.168.0.10"),
                {.source_port = static_cast<std::uint16_t>(49152 + flow), .payload = 16u + 100u * round}));
            ASSERT_EQ(sink->sent.size(), 1u);
            EXPECT_EQ(sink->sent[0].port, port_of_flow[flow]) << "flow " << flow << " moved";
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Classification

TEST_F(switch_pipeline, dscp_26_is_priority_3_dscp_48_is_priority_6_and_the_rest_best_effort) {
    build();
    const std::map<std::uint8_t, std::uint8_t> expected = {{26, 3}, {48, 6}, {0, 0}, {10, 0}, {46, 0}};
    for (const auto& [dscp, priority] : expected) {
        sink->sent.clear();
        send(ipv4_udp_frame(host_ip, ipv4("10.2.3.4"), {.dscp = dscp}));
        ASSERT_EQ(sink->sent.size(), 1u);
        EXPECT_EQ(sink->sent[0].priority, priority) << "dscp " << int(dscp);
        EXPECT_EQ(sink->sent[0].traffic_class, priority) << "identity priority to TC map";
    }
    sink->sent.clear();
    send(ipv6_udp_frame(ipv6("2001:db8:9::1"), ipv6("2001:db8:5::7"), {.dscp = 26}));
    ASSERT_EQ(sink->sent.size(), 1u);
    EXPECT_EQ(sink->sent[0].priority, 3);
}

TEST_F(switch_pipeline, dscp_trust_ignores_pcp) {
    build();
    send(ipv4_udp_frame(host_ip, ipv4("10.2.3.4"), {.dscp = 0, .pcp = 5}));
    ASSERT_EQ(sink->sent.size(), 1u);
    EXPECT_EQ(sink->sent[0].priority, 0);
}

TEST_F(switch_pipeline, pcp_trust_takes_priority_from_the_tag_and_default_when_untagged) {
    auto spec = test_spec();
    spec.qos.trust = trust_mode::pcp;
    spec.qos.default_priority = 1;
    spec.qos.priority_to_tc[5] = 2;
    spec.qos.priority_to_tc[1] = 4;
    build(spec);
    send(ipv4_udp_frame(host_ip, ipv4("10.2.3.4"), {.dscp = 26, .pcp = 5}));
    send(ipv4_udp_frame(host_ip, ipv4("10.2.3.4"), {.dscp = 26}));
    ASSERT_EQ(sink->sent.size(), 2u);
    EXPECT_EQ(sink->sent[0].priority, 5);
    EXPECT_EQ(sink->sent[0].traffic_class, 2);
    EXPECT_EQ(sink->sent[1].priority, 1);
    EXPECT_EQ(sink->sent[1].traffic_class, 4); // the default priority's class
}

// ---------------------------------------------------------------------------------------------
// Scheduling, shaping, buffer

TEST_F(switch_pipeline, strict_tc6_preempts_the_dwrr_classes_queued_before_it) {
    build();
    sink->set_busy_until(1, 1000);
    send(ipv4_udp_frame(host_ip, ipv4("10.2.3.4"), {.dscp = 0}), 10);
    send(ipv4_udp_frame(host_ip, ipv4("10.2.3.4"), {.dscp = 26}), 20);
    send(ipv4_udp_frame(host_ip, ipv4("10.2.3.4"), {.dscp = 48}), 30); // a CNP
    EXPECT_TRUE(sink->sent.empty());
    EXPECT_EQ(sw->queue_depth_frames(1, 0), 1u);
    EXPECT_EQ(sw->queue_depth_frames(1, 3), 1u);
    EXPECT_EQ(sw->queue_depth_frames(1, 6), 1u);

    EXPECT_TRUE(sw->poll(1000));
    ASSERT_EQ(sink->sent.size(), 3u);
    EXPECT_EQ(sink->sent[0].traffic_class, 6);
}

// Both DWRR classes backlogged on one port: each gets its share of the bytes sent, whatever the
// frame sizes (deficit round robin charges bytes, not frames).
std::map<std::uint8_t, std::uint64_t> bytes_by_class(const std::vector<sent_frame>& sent, std::size_t first_frames) {
    std::map<std::uint8_t, std::uint64_t> bytes;
    for (std::size_t i = 0; i < std::min(first_frames, sent.size()); ++i)
        bytes[sent[i].traffic_class] += sent[i].bytes.size();
    return bytes;
}

TEST_F(switch_pipeline, ets_shares_the_port_50_50_between_tc0_and_tc3_in_bytes) {
    build();
    sink->set_busy_until(1, 1'000'000);
    for (int i = 0; i < 400; ++i) {
        send(ipv4_udp_frame(host_ip, ipv4("10.2.3.4"), {.dscp = 0, .payload = 300}), i);   // small frames
        send(ipv4_udp_frame(host_ip, ipv4("10.2.3.4"), {.dscp = 26, .payload = 1400}), i); // large frames
    }
    sw->poll(1'000'000);
    // While both classes still have frames, they have had equal bytes, within one round.
    const auto bytes = bytes_by_class(sink->sent, 300);
    const double share3 = double(bytes.at(3)) / double(bytes.at(0) + bytes.at(3));
    EXPECT_NEAR(share3, 0.5, 0.05);
}

TEST_F(switch_pipeline, ets_shares_follow_the_configured_percentages) {
    switch_spec spec = test_spec();
    spec.qos.ets.bandwidth_percent = {20, 0, 0, 80, 0, 0, 0, 0};
    build(spec);
    sink->set_busy_until(1, 1'000'000);
    for (int i = 0; i < 400; ++i) {
        send(ipv4_udp_frame(host_ip, ipv4("10.2.3.4"), {.dscp = 0, .payload = 1000}), i);
        send(ipv4_udp_frame(host_ip, ipv4("10.2.3.4"), {.dscp = 26, .payload = 1000}), i);
    }
    sw->poll(1'000'000);
    const auto bytes = bytes_by_class(sink->sent, 400);
    const double share3 = double(bytes.at(3)) / double(bytes.at(0) + bytes.at(3));
    EXPECT_NEAR(share3, 0.8, 0.05);
}

TEST_F(switch_pipeline, a_class_without_a_share_sends_only_when_the_others_are_idle) {
    switch_spec spec = test_spec();
    spec.qos.dscp_to_priority[10] = 1; // TC 1: DWRR with 0 %
    build(spec);
    sink->set_busy_until(1, 1'000'000);
    send(ipv4_udp_frame(host_ip, ipv4("10.2.3.4"), {.dscp = 10}), 1);
    for (int i = 0; i < 5; ++i) send(ipv4_udp_frame(host_ip, ipv4("10.2.3.4"), {.dscp = 0}), 2 + i);
    sw->poll(1'000'000);
    ASSERT_EQ(sink->sent.size(), 6u);
    EXPECT_EQ(sink->sent.back().traffic_class, 1);
}

// ---------------------------------------------------------------------------------------------
// PFC received: the port stops sending the paused priorities

std::vector<std::uint8_t> pfc_frame(std::uint8_t enable, std::uint16_t quanta_all) {
    std::vector<std::uint8_t> bytes(wire::pfc_frame_length);
    std::array<std::uint16_t, 8> quanta;
    quanta.fill(quanta_all);
    wire::write_pfc_frame(bytes.data(), neighbour_mac(1), enable, quanta);
    return bytes;
}

TEST_F(switch_pipeline, a_pause_frame_stops_its_priority_for_its_quanta_and_other_classes_go_on) {
    build();
    send(pfc_frame(1u << 3, 1000), 0, 1); // from the neighbour on port 1: priority 3, 1000 quanta
    const sim_time pause = wire::pause_quanta_to_time(1000, hundred_gig); // 5.12 us at 100G
    EXPECT_EQ(pause, 5120);
    send(ipv4_udp_frame(host_ip, ipv4("10.2.3.4"), {.dscp = 26}), 100);
    send(ipv4_udp_frame(host_ip, ipv4("10.2.3.4"), {.dscp = 0}), 200);
    ASSERT_EQ(sink->sent.size(), 1u);
    EXPECT_EQ(sink->sent[0].traffic_class, 0); // priority 0 is not paused
    EXPECT_EQ(sw->queue_depth_frames(1, 3), 1u);
    EXPECT_EQ(sw->next_deadline(), pause);
    EXPECT_FALSE(sw->poll(pause - 1));
    EXPECT_TRUE(sw->poll(pause));
    ASSERT_EQ(sink->sent.size(), 2u);
    EXPECT_EQ(sink->sent[1].traffic_class, 3);
    EXPECT_EQ(sw->pfc_counters(1, 3).rx_pause, 1u);
    EXPECT_EQ(sw->pfc_counters(1, 0).rx_pause, 0u);
    EXPECT_EQ(count(1, port_counter::rx_pause_frames), 1u);
}

TEST_F(switch_pipeline, an_xon_resumes_at_once_and_the_pause_duration_is_counted) {
    build();
    send(pfc_frame(1u << 3, 0xffff), 0, 1); // XOFF: 335 us at 100G
    send(ipv4_udp_frame(host_ip, ipv4("10.2.3.4"), {.dscp = 26}), 100);
    EXPECT_TRUE(sink->sent.empty());
    send(pfc_frame(1u << 3, 0), 7000, 1); // XON after 7 us
    ASSERT_EQ(sink->sent.size(), 1u);
    EXPECT_EQ(sink->sent[0].at, 7000);
    EXPECT_EQ(sw->pfc_counters(1, 3).rx_pause, 2u);
    EXPECT_EQ(sw->pfc_counters(1, 3).rx_pause_duration_us, 7u);
    std::map<std::string, std::uint64_t> named;
    sw->for_each_counter(1, [&](std::string_view name, std::uint64_t v) { named[std::string(name)] = v; });
    EXPECT_EQ(named.at("rx_prio3_pause"), 2u);
    EXPECT_EQ(named.at("rx_prio3_pause_duration"), 7u);
}

// ---------------------------------------------------------------------------------------------
// PFC watchdog

// The neighbour on port 1 keeps priority 3 paused, refreshing before each pause ends, from 0
// until `until`; the switch is polled all along. Returns the time reached.
sim_time storm(switch_node& sw, sim_time from, sim_time until, const std::vector<std::uint8_t>& xoff) {
    sim_time t = from;
    for (; t < until; t += 200'000) { // every 200 us; a 0xffff pause lasts 335 us at 100G
        rte_mbuf* m = rocefab::testing::make_frame(xoff);
        sw.receive(1, m, t);
        sw.poll(t);
    }
    return t;
}

void run_quietly(switch_node& sw, sim_time from, sim_time until) {
    for (sim_time t = from; t <= until; t += 1'000'000) sw.poll(t);
}

TEST_F(switch_pipeline, a_queue_paused_for_three_polls_is_stormed_dropped_and_restored_when_the_pauses_stop) {
    build();
    EXPECT_EQ(sw->next_deadline(), never); // no pause, no watchdog timer
    const auto xoff = pfc_frame(1u << 3, 0xffff);
    storm(*sw, 0, 1, xoff); // paused from the start
    for (int i = 0; i < 5; ++i) send(ipv4_udp_frame(host_ip, ipv4("10.2.3.4"), {.dscp = 26}), 1);
    sim_time t = storm(*sw, 200'000, milliseconds(299), xoff);
    EXPECT_EQ(count(1, port_counter::pfc_wd_storms), 0u); // polls at 100 and 200 ms so far
    EXPECT_EQ(sw->queue_depth_frames(1, 3), 5u);
    t = storm(*sw, t, milliseconds(301), xoff); // the poll at 300 ms: the third in a row
    EXPECT_EQ(count(1, port_counter::pfc_wd_storms), 1u);
    EXPECT_EQ(count(1, port_counter::watchdog_drops), 5u);
    EXPECT_EQ(sw->queue_depth_frames(1, 3), 0u);
    EXPECT_EQ(sw->buffer_in_use(), 0u);
    // While stormed, what arrives for the queue is dropped; other classes go on.
    send(ipv4_udp_frame(host_ip, ipv4("10.2.3.4"), {.dscp = 26}), t);
    send(ipv4_udp_frame(host_ip, ipv4("10.2.3.4"), {.dscp = 0}), t);
    EXPECT_EQ(count(1, port_counter::watchdog_drops), 6u);
    ASSERT_EQ(sink->sent.size(), 1u);
    EXPECT_EQ(sink->sent[0].traffic_class, 0);
    // The pauses stop at 400 ms; three quiet polls later the queue is restored.
    t = storm(*sw, t, milliseconds(400), xoff);
    run_quietly(*sw, t, milliseconds(650));
    EXPECT_EQ(count(1, port_counter::pfc_wd_restores), 0u);
    run_quietly(*sw, milliseconds(650), milliseconds(750));
    EXPECT_EQ(count(1, port_counter::pfc_wd_restores), 1u);
    send(ipv4_udp_frame(host_ip, ipv4("10.2.3.4"), {.dscp = 26}), milliseconds(751));
    ASSERT_EQ(sink->sent.size(), 2u);
    EXPECT_EQ(sink->sent[1].traffic_class, 3);
    EXPECT_EQ(sw->next_deadline(), never); // nothing paused or stormed: the watchdog sleeps
}

TEST_F(switch_pipeline, the_forward_action_sends_a_stormed_queue_despite_the_pauses) {
    switch_spec spec = test_spec();
    spec.qos.pfc_watchdog.action = pfc_watchdog_action::forward;
    build(spec);
    storm(*sw, 0, 1, pfc_frame(1u << 3, 0xffff));
    for (int i = 0; i < 5; ++i) send(ipv4_udp_frame(host_ip, ipv4("10.2.3.4"), {.dscp = 26}), 1);
    EXPECT_TRUE(sink->sent.empty());
    storm(*sw, 200'000, milliseconds(301), pfc_frame(1u << 3, 0xffff));
    EXPECT_EQ(count(1, port_counter::pfc_wd_storms), 1u);
    EXPECT_EQ(count(1, port_counter::watchdog_drops), 0u);
    EXPECT_EQ(sink->sent.size(), 5u); // sent although paused
}

TEST_F(switch_pipeline, a_watchdog_that_is_off_lets_a_storm_hold_the_queue) {
    switch_spec spec = test_spec();
    spec.qos.pfc_watchdog.enabled = false;
    build(spec);
    storm(*sw, 0, 1, pfc_frame(1u << 3, 0xffff));
    for (int i = 0; i < 5; ++i) send(ipv4_udp_frame(host_ip, ipv4("10.2.3.4"), {.dscp = 26}), 1);
    storm(*sw, 200'000, milliseconds(501), pfc_frame(1u << 3, 0xffff));
    EXPECT_EQ(count(1, port_counter::pfc_wd_storms), 0u);
    EXPECT_EQ(sw->queue_depth_frames(1, 3), 5u);
}

// ---------------------------------------------------------------------------------------------
// ECN and WRED on enqueue

switch_spec ecn_spec() {
    switch_spec spec = test_spec();
    for (unsigned tc : {0u, 3u}) spec.qos.congestion[tc] = {true, 20'000, 60'000, 100};
    return spec;
}

// The depth of the queue each frame joined, from the frames' sizes: frame i found i before it.
std::size_t frames_below(std::uint64_t depth_bytes, std::size_t frame_bytes) {
    return (depth_bytes + frame_bytes - 1) / frame_bytes;
}

TEST_F(switch_pipeline, ecn_marks_nothing_below_min_some_between_and_every_ect_packet_above_max) {
    build(ecn_spec());
    sink->set_busy_until(1, 1'000'000'000);
    const auto bytes = ipv4_udp_frame(host_ip, ipv4("10.2.3.4"), {.dscp = 26, .payload = 1000});
    constexpr int frames = 100; // up to about 100 kB deep
    for (int i = 0; i < frames; ++i) send(bytes, i);
    EXPECT_EQ(count(1, port_counter::wred_drops), 0u);
    sink->set_busy_until(1, 0);
    sw->poll(1'000'000'000);
    ASSERT_EQ(sink->sent.size(), std::size_t(frames));
    const std::size_t min_at = frames_below(20'000, bytes.size()), max_at = frames_below(60'000, bytes.size());
    std::size_t marked_between = 0;
    for (std::size_t i = 0; i < sink->sent.size(); ++i) {
        SCOPED_TRACE(i);
        const wire::ipv4_header ip = read_ipv4(sink->sent[i].bytes);
        EXPECT_TRUE(ip.checksum_ok());
        const bool marked = ip.ecn() == wire::ecn::ce;
        if (i < min_at)
            EXPECT_FALSE(marked);
        else if (i >= max_at)
            EXPECT_TRUE(marked);
        else
            marked_between += marked;
        EXPECT_EQ(ip.dscp(), 26); // the DSCP is untouched
    }
    // The probability rises linearly across the band: some marked, not all.
    EXPECT_GT(marked_between, 0u);
    EXPECT_LT(marked_between, max_at - min_at);
    EXPECT_EQ(count(1, port_counter::ecn_marked), marked_between + (frames - max_at));
}

TEST_F(switch_pipeline, ecn_marking_is_the_same_for_the_same_seed) {
    auto marks = [&](std::uint64_t seed) {
        switch_spec spec = ecn_spec();
        spec.random_seed = seed;
        build(spec);
        sink->set_busy_until(1, 1'000'000'000);
        for (int i = 0; i < 60; ++i) send(ipv4_udp_frame(host_ip, ipv4("10.2.3.4"), {.dscp = 26, .payload = 1000}), i);
        sink->set_busy_until(1, 0);
        sw->poll(1'000'000'000);
        std::vector<bool> out;
        for (const auto& f : sink->sent) out.push_back(read_ipv4(f.bytes).ecn() == wire::ecn::ce);
        sw.reset();
        return out;
    };
    EXPECT_EQ(marks(7), marks(7));
    EXPECT_NE(marks(7), marks(8));
}

TEST_F(switch_pipeline, above_max_a_packet_that_cannot_be_marked_is_dropped_only_in_a_lossy_class) {
    build(ecn_spec());
    sink->set_busy_until(1, 1'000'000'000);
    for (int i = 0; i < 100; ++i) {
        send(ipv4_udp_frame(host_ip, ipv4("10.2.3.4"), {.dscp = 0, .payload = 1000, .ecn = wire::ecn::not_ect}), i);
        send(ipv4_udp_frame(host_ip, ipv4("10.2.3.4"), {.dscp = 26, .payload = 1000, .ecn = wire::ecn::not_ect}), i);
    }
    // TC 0 is lossy: it stops growing at max. TC 3 carries lossless priority 3: nothing dropped.
    EXPECT_EQ(sw->queue_depth_frames(1, 0), frames_below(60'000, 1042));
    EXPECT_EQ(sw->queue_depth_frames(1, 3), 100u);
    EXPECT_EQ(count(1, port_counter::wred_drops), 100u - frames_below(60'000, 1042));
    EXPECT_EQ(count(1, port_counter::ecn_marked), 0u);
}

TEST_F(switch_pipeline, ecn_marks_ipv6_in_its_traffic_class_field) {
    build(ecn_spec());
    sink->set_busy_until(2, 1'000'000'000);
    for (int i = 0; i < 80; ++i)
        send(ipv6_udp_frame(ipv6("2001:db8::9"), ipv6("2001:db8:1::5"), {.dscp = 26, .payload = 1000}), i);
    sink->set_busy_until(2, 0);
    sw->poll(1'000'000'000);
    ASSERT_FALSE(sink->sent.empty());
    const wire::ipv6_header last = read_ipv6(sink->sent.back().bytes);
    EXPECT_EQ(last.ecn(), wire::ecn::ce);
    EXPECT_EQ(last.dscp(), 26);
    EXPECT_EQ(last.flow_label(), 0x12345u);
}

TEST_F(switch_pipeline, busy_link_holds_frames_until_it_frees_up_and_next_deadline_says_when) {
    build(test_spec(), hundred_gig);
    EXPECT_EQ(sw->next_deadline(), never);
    const sim_time t = 5000;
    sink->set_busy_until(1, t);
    const auto bytes = ipv4_udp_frame(host_ip, ipv4("10.2.3.4"), {.payload = 1000});
    for (int i = 0; i < 3; ++i) send(bytes, 100 * i);

    EXPECT_TRUE(sink->sent.empty());
    EXPECT_EQ(sw->next_deadline(), t);
    EXPECT_FALSE(sw->poll(t - 1));
    EXPECT_TRUE(sink->sent.empty());

    EXPECT_TRUE(sw->poll(t));
    ASSERT_EQ(sink->sent.size(), 1u) << "one frame per idle link, not a burst";
    EXPECT_EQ(sink->sent[0].at, t);
    const sim_time serialisation = serialization_time(bytes.size(), hundred_gig);
    EXPECT_EQ(sw->next_deadline(), t + serialisation);

    EXPECT_FALSE(sw->poll(t + serialisation - 1));
    EXPECT_TRUE(sw->poll(t + serialisation));
    EXPECT_TRUE(sw->poll(t + 2 * serialisation));
    ASSERT_EQ(sink->sent.size(), 3u);
    EXPECT_EQ(sink->sent[2].at, t + 2 * serialisation);
    EXPECT_EQ(sw->next_deadline(), never);
    EXPECT_FALSE(sw->poll(t + 10 * serialisation));
}

TEST_F(switch_pipeline, idle_link_sends_on_arrival) {
    build(test_spec(), hundred_gig);
    send(ipv4_udp_frame(host_ip, ipv4("10.2.3.4")), 777);
    ASSERT_EQ(sink->sent.size(), 1u);
    EXPECT_EQ(sink->sent[0].at, 777);
}

TEST_F(switch_pipeline, full_shared_buffer_tail_drops_and_tracks_occupancy_per_port) {
    const auto bytes = ipv4_udp_frame(host_ip, ipv4("10.2.3.4"), {.payload = 200});
    auto spec = test_spec();
    spec.buffer_bytes = 3 * bytes.size();
    spec.buffer_alpha = 1000; // no dynamic limit: one group may fill the pool
    build(spec);
    sink->set_busy_until(1, 1000);
    for (int i = 0; i < 5; ++i) send(bytes);

    EXPECT_EQ(count(1, port_counter::tail_drops), 2u);
    EXPECT_EQ(count(1, port_counter::buffer_bytes), 3 * bytes.size());
    EXPECT_EQ(count(1, port_counter::buffer_peak_bytes), 3 * bytes.size());
    EXPECT_EQ(sw->buffer_in_use(), 3 * bytes.size());
    EXPECT_EQ(sw->queue_depth_frames(1, 0), 3u);

    // Another port shares the same buffer: it is full for it too.
    send(ipv4_udp_frame(host_ip, ipv4("10.1.0.1"), {.payload = 200}));
    EXPECT_EQ(count(2, port_counter::tail_drops), 1u);

    sw->poll(1000);
    EXPECT_EQ(sink->sent.size(), 3u);
    EXPECT_EQ(count(1, port_counter::buffer_bytes), 0u);
    EXPECT_EQ(count(1, port_counter::buffer_peak_bytes), 3 * bytes.size());
    EXPECT_EQ(sw->buffer_in_use(), 0u);

    send(ipv4_udp_frame(host_ip, ipv4("10.1.0.1"), {.payload = 200}), 1000);
    EXPECT_EQ(sink->sent.size(), 4u) << "space is back once the queue drains";
}

TEST_F(switch_pipeline, a_frame_dropped_within_a_run_raises_no_watermark) {
    // A run of three frames for one queue, the middle one longer than the whole buffer: the
    // first cuts through, the second is tail-dropped, the third cuts through after it. The
    // buffer's peak is the longest frame that passed through it, not the one dropped.
    const auto small = ipv4_udp_frame(host_ip, ipv4("10.2.3.4"), {.payload = 200});
    const auto big = ipv4_udp_frame(host_ip, ipv4("10.2.3.4"), {.payload = 1400});
    auto spec = test_spec();
    spec.buffer_bytes = 3 * small.size();
    spec.buffer_alpha = 1000;
    build(spec);
    const std::array<rte_mbuf*, 3> run{make_frame(small), make_frame(big), make_frame(small)};
    sw->receive_burst(0, run, 0);

    EXPECT_EQ(sink->sent.size(), 2u);
    EXPECT_EQ(count(1, port_counter::tail_drops), 1u);
    EXPECT_EQ(count(1, port_counter::buffer_peak_bytes), small.size());
    EXPECT_EQ(sw->buffer_in_use(), 0u);
}

// Spectrum's dynamic threshold: a priority group may hold alpha x the free shared bytes, so with
// alpha 1 a single lossy group stops at half the pool, and a second group still finds room. An
// egress queue meets the same threshold: a second group sending to the full queue finds none.
TEST_F(switch_pipeline, a_lossy_group_and_queue_stop_at_their_dynamic_threshold_and_leave_room_for_others) {
    const auto bytes = ipv4_udp_frame(host_ip, ipv4("10.2.3.4"), {.payload = 958}); // 1000 B
    ASSERT_EQ(bytes.size(), 1000u);
    auto spec = test_spec();
    spec.buffer_bytes = 100'000;
    build(spec);
    sink->set_busy_until(1, 1'000'000);
    sink->set_busy_until(2, 1'000'000);
    for (int i = 0; i < 100; ++i) send(bytes, i, 0);
    EXPECT_EQ(sw->queue_depth_frames(1, 0), 50u); // 50 000 held, 50 000 free: the limit
    EXPECT_EQ(count(1, port_counter::tail_drops), 50u);
    // The same priority from another port is another group, under its own threshold; but the
    // queue it sends to holds its threshold already.
    const auto from_port_3 =
        ipv4_udp_frame(host_ip, ipv4("10.2.3.4"), {.destination_mac = port_mac(3), .payload = 958});
    for (int i = 0; i < 100; ++i) send(from_port_3, 200 + i, 3);
    EXPECT_EQ(sw->queue_depth_frames(1, 0), 50u);
    EXPECT_EQ(count(1, port_counter::tail_drops), 150u);
    EXPECT_EQ(sw->queue_stats(1, 0).tail_drops, 150u);
    // To another queue it takes alpha x what is left: 25 000 of the 50 000 free.
    const auto to_port_2 = ipv4_udp_frame(host_ip, ipv4("10.1.0.1"), {.destination_mac = port_mac(3), .payload = 958});
    for (int i = 0; i < 100; ++i) send(to_port_2, 400 + i, 3);
    EXPECT_EQ(sw->queue_depth_frames(2, 0), 25u);
}

// ---------------------------------------------------------------------------------------------
// PFC sent: a lossless group that fills pauses its neighbour, takes the rest into headroom, and
// resumes it once drained

TEST_F(switch_pipeline, a_full_lossless_group_sends_xoff_uses_headroom_and_sends_xon_when_drained) {
    const auto bytes = ipv4_udp_frame(host_ip, ipv4("10.2.3.4"), {.dscp = 26, .payload = 958});
    auto spec = test_spec();
    spec.buffer_bytes = 100'000;
    build(spec);
    sink->set_busy_until(1, 1'000'000);
    const std::uint32_t headroom = sw->buffer().headroom_of(0);
    // 2 x (9000 + 42) + 100 Gb/s x (2 x 500 ns + 1 us) = 18 084 + 25 000
    EXPECT_EQ(headroom, 43'084u);
    for (int i = 0; i < 60; ++i) send(bytes, i, 0);
    // 50 frames reach the threshold; the 51st goes to headroom and XOFF goes out of port 0.
    EXPECT_EQ(sw->queue_depth_frames(1, 3), 60u);
    EXPECT_EQ(count(1, port_counter::tail_drops), 0u);
    EXPECT_EQ(sw->buffer().headroom_used(0, 3), 10'000u);
    ASSERT_EQ(sink->sent.size(), 1u);
    EXPECT_EQ(sink->sent[0].port, 0);
    std::uint8_t enable = 0;
    std::array<std::uint16_t, 8> quanta{};
    ASSERT_TRUE(wire::parse_pfc_frame(sink->sent[0].bytes, enable, quanta));
    EXPECT_EQ(enable, 1u << 3);
    EXPECT_EQ(quanta[3], 0xffff);
    EXPECT_EQ(sw->pfc_counters(0, 3).tx_pause, 1u);

    // Past the headroom, a lossless frame is dropped and counted as a headroom overflow.
    for (int i = 0; i < 40; ++i) send(bytes, 100 + i, 0);
    EXPECT_EQ(sw->buffer().headroom_used(0, 3), 43'000u);
    EXPECT_EQ(count(0, port_counter::headroom_drops), 7u);
    EXPECT_EQ(count(1, port_counter::tail_drops), 0u);

    // Draining: XON once the headroom is empty and the group two frames below its threshold.
    sink->set_busy_until(1, 0);
    sw->poll(1'000); // before the XOFF would be refreshed
    std::vector<std::size_t> pfc_at;
    for (std::size_t i = 0; i < sink->sent.size(); ++i)
        if (sink->sent[i].port == 0) pfc_at.push_back(i);
    ASSERT_EQ(pfc_at.size(), 2u);
    ASSERT_TRUE(wire::parse_pfc_frame(sink->sent[pfc_at[1]].bytes, enable, quanta));
    EXPECT_EQ(quanta[3], 0); // XON
    EXPECT_EQ(sw->pfc_counters(0, 3).tx_pause, 2u);
    EXPECT_EQ(sw->buffer_in_use(), 0u);
}

TEST_F(switch_pipeline, an_xoff_is_refreshed_before_it_expires_while_the_group_stays_full) {
    const auto bytes = ipv4_udp_frame(host_ip, ipv4("10.2.3.4"), {.dscp = 26, .payload = 958});
    auto spec = test_spec();
    spec.buffer_bytes = 100'000;
    build(spec);
    sink->set_busy_until(1, 10'000'000);
    for (int i = 0; i < 60; ++i) send(bytes, i, 0);
    ASSERT_EQ(sw->pfc_counters(0, 3).tx_pause, 1u);
    // 0xffff quanta at 100 Gb/s last 335.5 us; the XOFF is sent again after half of that.
    const sim_time half = wire::pause_quanta_to_time(0xffff, hundred_gig) / 2;
    // The 51st frame (sent at t = 50) found the group full.
    EXPECT_EQ(sw->next_deadline(), 50 + half);
    sw->poll(50 + half);
    EXPECT_EQ(sw->pfc_counters(0, 3).tx_pause, 2u);
    EXPECT_EQ(sw->next_deadline(), 50 + 2 * half);
}

TEST_F(switch_pipeline, full_queue_ring_tail_drops_and_returns_the_buffer) {
    auto spec = test_spec();
    spec.queue_frames = 2;
    build(spec);
    sink->set_busy_until(1, 1000);
    const auto bytes = ipv4_udp_frame(host_ip, ipv4("10.2.3.4"));
    for (int i = 0; i < 3; ++i) send(bytes);
    EXPECT_EQ(count(1, port_counter::tail_drops), 1u);
    EXPECT_EQ(count(1, port_counter::buffer_bytes), 2 * bytes.size());
    EXPECT_EQ(sw->buffer_in_use(), 2 * bytes.size());
}

TEST_F(switch_pipeline, frames_still_queued_are_freed_with_the_switch) {
    const unsigned before = rte_mempool_avail_count(test_pool());
    build();
    sink->set_busy_until(1, 1000);
    for (int i = 0; i < 10; ++i) send(ipv4_udp_frame(host_ip, ipv4("10.2.3.4")));
    EXPECT_EQ(sw->queue_depth_frames(1, 0), 10u);
    sw.reset();
    EXPECT_EQ(rte_mempool_avail_count(test_pool()), before);
}

// ---------------------------------------------------------------------------------------------
// Counters and configuration

TEST_F(switch_pipeline, counters_are_listed_by_name_for_every_port) {
    build();
    send(ipv4_udp_frame(host_ip, ipv4("10.2.3.4")));
    std::vector<std::string> names;
    std::uint64_t rx_packets = 0;
    sw->for_each_counter(0, [&](std::string_view name, std::uint64_t value) {
        names.emplace_back(name);
        if (name == "rx_packets") rx_packets = value;
    });
    EXPECT_EQ(names.size(), port_counter_count + 4 * traffic_class_count); // and rx/tx PFC per priority
    EXPECT_EQ(names.front(), "rx_packets");
    EXPECT_EQ(rx_packets, 1u);
    EXPECT_EQ(std::set<std::string>(names.begin(), names.end()).size(), names.size()) << "names are unique";

    const nlohmann::json json = counters_json(*sw);
    EXPECT_EQ(json["name"], "leaf1");
    ASSERT_EQ(json["ports"].size(), 5u);
    EXPECT_EQ(json["ports"][1]["port"], "swp2");
    EXPECT_EQ(json["ports"][1]["tx_packets"], 1);
    EXPECT_EQ(json["ports"][0]["rx_packets"], 1);
    EXPECT_EQ(json["ports"][0]["rx_prio3_pause"], 0);
    EXPECT_EQ(json["ports"][0]["queues"].size(), traffic_class_count);
    EXPECT_EQ(json["ports"][1]["queues"][0]["tx_packets"], 1); // DSCP 0: traffic class 0
    EXPECT_EQ(json["ports"][0]["priorities"][0]["rx_packets"], 1);
    EXPECT_EQ(json["buffer"]["size_bytes"], 16 * 1024 * 1024);
}

TEST_F(switch_pipeline, unusable_specs_are_refused_with_a_reason) {
    auto refused = [](auto edit) {
        auto spec = test_spec();
        edit(spec);
        return !validate(spec).empty();
    };
    EXPECT_TRUE(validate(test_spec()).empty()) << validate(test_spec());
    EXPECT_TRUE(refused([](switch_spec& s) { s.routes.push_back(v4_route("10.0.0.0", 8, {9})); }));
    EXPECT_TRUE(refused([](switch_spec& s) { s.routes.push_back(v4_route("10.3.0.0", 16, {7})); }));
    EXPECT_TRUE(refused([](switch_spec& s) { s.routes.push_back(v4_route("10.3.0.1", 16, {1})); })); // host bits
    EXPECT_TRUE(refused([](switch_spec& s) { s.routes.push_back(v4_route("10.3.0.0", 33, {1})); }));
    EXPECT_TRUE(refused([](switch_spec& s) { s.routes.push_back(v4_route("10.0.0.0", 8, {2})); })); // twice
    EXPECT_TRUE(refused([](switch_spec& s) { s.routes.push_back(v4_route("10.3.0.0", 16, {})); }));
    EXPECT_TRUE(refused([](switch_spec& s) { s.routes[2].next_hop_macs.pop_back(); }));
    EXPECT_TRUE(refused([](switch_spec& s) { s.routes[0].prefix = ipv6("2001:db8::"); })); // v4 not mapped
    EXPECT_TRUE(refused([](switch_spec& s) { s.qos.dscp_to_priority[5] = 8; }));
    EXPECT_TRUE(refused([](switch_spec& s) { s.ports[1].mtu = 0; }));
    EXPECT_TRUE(refused([](switch_spec& s) { s.qos.ets.bandwidth_percent[1] = 1; })); // 101 % in all
    EXPECT_TRUE(refused([](switch_spec& s) { s.qos.ets.bandwidth_percent[0] = 101; }));
    EXPECT_TRUE(refused([](switch_spec& s) { s.ports[2].name = "swp1"; }));
    EXPECT_TRUE(refused([](switch_spec& s) {
        s.ports.clear();
        s.routes.clear();
    }));

    auto spec = test_spec();
    spec.routes.push_back(v4_route("10.3.0.0", 16, {7}));
    EXPECT_THROW(switch_node{spec}, std::invalid_argument);
}

} // namespace
} // namespace rocefab::switch_emu
