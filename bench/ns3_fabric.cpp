// bench/sim_speed's reference: ns-3 3.37 (Debian's libns3-dev) running the bench's fabrics with
// its own models, every host on one node in the middle (an IPv4 router), every link
// point-to-point at 100 Gb/s with 1 us of delay and an MTU of 4200. The transport is ns-3's
// TCP (NewReno, 4096-byte segments, as RoCE's 4096-byte payloads), a reliable protocol with
// congestion control as DCQCN over RC is; the router's queues drop where rocefab's switch pauses.
//   - incast (the default): the 16:1 incast of configs/incast-16to1-dcqcn.yaml, h1..h16 each
//     sending 4 MB to h17, for 10 ms;
//   - permutation: N hosts, each sending `--bytes` to another, the receivers a random
//     derangement of the senders, as rocefab sim's `pattern: permutation` (its own draw: which
//     host sends to which does not change what a frame costs, since every host has one flow in
//     and one out), for 2 ms: how ns-3's cost of a frame grows with the fabric.
//
// Counts what rocefab's virtual-time driver counts: frames handed to a receiving device at the
// far end of a link (PhyRxEnd on every point-to-point device, data and acknowledgements, both
// directions), over the wall time of Simulator::Run() alone.
//   usage: ns3_fabric [--senders N] [--permutation HOSTS --bytes B] [--duration-ms D]
//   prints "<wall s> <frames> <frames per wall s>"
#include <ns3/applications-module.h>
#include <ns3/core-module.h>
#include <ns3/internet-module.h>
#include <ns3/network-module.h>
#include <ns3/point-to-point-module.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <random>
#include <string>
#include <vector>

namespace {

std::uint64_t frames_received = 0;

// By value: the trace source connects only a sink of exactly its own signature.
void count_frame(ns3::Ptr<const ns3::Packet>) { ++frames_received; } // NOLINT(performance-unnecessary-value-param)

// For each host, the host it sends to: a derangement (nobody sends to itself), the same every run.
std::vector<unsigned> derangement(unsigned hosts) {
    std::mt19937_64 random(1);
    std::vector<unsigned> to(hosts);
    std::iota(to.begin(), to.end(), 0u);
    for (bool fixed_point = true; fixed_point;) {
        std::shuffle(to.begin(), to.end(), random);
        fixed_point = false;
        for (unsigned h = 0; h < hosts; ++h) fixed_point |= to[h] == h;
    }
    return to;
}

} // namespace

int main(int argc, char** argv) {
    unsigned senders = 16, permutation_hosts = 0;
    std::uint64_t bytes = 0;
    double duration_ms = 0;
    bool duration_given = false;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (std::strcmp(argv[i], "--senders") == 0)
            senders = static_cast<unsigned>(std::atoi(argv[i + 1]));
        else if (std::strcmp(argv[i], "--permutation") == 0)
            permutation_hosts = static_cast<unsigned>(std::atoi(argv[i + 1]));
        else if (std::strcmp(argv[i], "--bytes") == 0)
            bytes = std::strtoull(argv[i + 1], nullptr, 10);
        else if (std::strcmp(argv[i], "--duration-ms") == 0) {
            duration_ms = std::atof(argv[i + 1]);
            duration_given = true;
        } else {
            std::fprintf(stderr, "usage: %s [--senders N] [--permutation HOSTS --bytes B] [--duration-ms D]\n",
                         argv[0]);
            return 2;
        }
    }
    const bool permutation = permutation_hosts != 0;
    const unsigned hosts_count = permutation ? permutation_hosts : senders + 1;
    if (!duration_given) duration_ms = permutation ? 2 : 10;
    if (!permutation) bytes = 4 * 1000 * 1000; // "4MB" in rocefab's units
    if (hosts_count < 2 || hosts_count > 62500 || duration_ms <= 0 || bytes == 0 || bytes > UINT32_MAX) {
        std::fprintf(stderr, "ns3_fabric: 2..62500 hosts, --bytes 1..2^32-1 with --permutation, --duration-ms > 0\n");
        return 2;
    }
    using namespace ns3;
    Config::SetDefault("ns3::TcpSocket::SegmentSize", UintegerValue(4096));
    Config::SetDefault("ns3::TcpSocket::SndBufSize", UintegerValue(static_cast<std::uint32_t>(bytes)));
    Config::SetDefault("ns3::TcpSocket::RcvBufSize", UintegerValue(static_cast<std::uint32_t>(bytes)));

    NodeContainer hosts, middle;
    hosts.Create(hosts_count);
    middle.Create(1);
    InternetStackHelper stack;
    stack.Install(hosts);
    stack.Install(middle);

    PointToPointHelper p2p;
    p2p.SetDeviceAttribute("DataRate", StringValue("100Gbps"));
    p2p.SetDeviceAttribute("Mtu", UintegerValue(4200));
    p2p.SetChannelAttribute("Delay", StringValue("1us"));
    Ipv4AddressHelper addresses;
    std::vector<Ipv4Address> host_address;
    for (unsigned h = 0; h < hosts_count; ++h) {
        NetDeviceContainer devices = p2p.Install(hosts.Get(h), middle.Get(0));
        const std::string subnet = "10." + std::to_string(h / 250) + "." + std::to_string(h % 250) + ".0";
        addresses.SetBase(subnet.c_str(), "255.255.255.0");
        host_address.push_back(addresses.Assign(devices).GetAddress(0));
    }
    Ipv4GlobalRoutingHelper::PopulateRoutingTables();

    const std::uint16_t port = 5001;
    PacketSinkHelper sink("ns3::TcpSocketFactory", InetSocketAddress(Ipv4Address::GetAny(), port));
    auto send = [&](unsigned from, unsigned to) {
        BulkSendHelper source("ns3::TcpSocketFactory", InetSocketAddress(host_address[to], port));
        source.SetAttribute("MaxBytes", UintegerValue(bytes));
        source.SetAttribute("SendSize", UintegerValue(65536));
        source.Install(hosts.Get(from)).Start(Seconds(0));
    };
    if (permutation) {
        const std::vector<unsigned> to = derangement(hosts_count);
        for (unsigned h = 0; h < hosts_count; ++h) {
            sink.Install(hosts.Get(h)).Start(Seconds(0));
            send(h, to[h]);
        }
    } else {
        sink.Install(hosts.Get(senders)).Start(Seconds(0));
        for (unsigned h = 0; h < senders; ++h) send(h, senders);
    }
    Config::ConnectWithoutContext("/NodeList/*/DeviceList/*/$ns3::PointToPointNetDevice/PhyRxEnd",
                                  MakeCallback(&count_frame));

    Simulator::Stop(MicroSeconds(static_cast<std::int64_t>(duration_ms * 1000)));
    const auto start = std::chrono::steady_clock::now();
    Simulator::Run();
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    Simulator::Destroy();
    std::printf("%.4f %llu %.0f\n", wall, static_cast<unsigned long long>(frames_received),
                static_cast<double>(frames_received) / wall);
    return 0;
}
