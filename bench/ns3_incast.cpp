// bench/sim_speed's reference: ns-3 3.37 (Debian's libns3-dev) running the 16:1 incast of
// configs/incast-16to1-dcqcn.yaml with its own models: h1..h16 each send 4 MB to h17 through
// one node in the middle (an IPv4 router), every link point-to-point at 100 Gb/s with 1 us of
// delay and an MTU of 4200, for 10 ms of simulated time. The transport is ns-3's TCP (NewReno,
// 4096-byte segments, as RoCE's 4096-byte payloads), a reliable protocol with congestion
// control as DCQCN over RC is; the router's queues drop where rocefab's switch pauses.
//
// Counts what rocefab's virtual-time driver counts: frames handed to a receiving device at the
// far end of a link (PhyRxEnd on every point-to-point device, data and acknowledgements, both
// directions), over the wall time of Simulator::Run() alone.
//   usage: ns3_incast [--senders N] [--duration-ms D]   prints "<wall s> <frames> <frames per wall s>"
#include <ns3/applications-module.h>
#include <ns3/core-module.h>
#include <ns3/internet-module.h>
#include <ns3/network-module.h>
#include <ns3/point-to-point-module.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace {

std::uint64_t frames_received = 0;

// By value: the trace source connects only a sink of exactly its own signature.
void count_frame(ns3::Ptr<const ns3::Packet>) { ++frames_received; } // NOLINT(performance-unnecessary-value-param)

} // namespace

int main(int argc, char** argv) {
    unsigned senders = 16;
    double duration_ms = 10;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (std::strcmp(argv[i], "--senders") == 0)
            senders = static_cast<unsigned>(std::atoi(argv[i + 1]));
        else if (std::strcmp(argv[i], "--duration-ms") == 0)
            duration_ms = std::atof(argv[i + 1]);
        else {
            std::fprintf(stderr, "usage: %s [--senders N] [--duration-ms D]\n", argv[0]);
            return 2;
        }
    }
    if (senders == 0 || senders > 250 || duration_ms <= 0) {
        std::fprintf(stderr, "ns3_incast: --senders must be 1..250 and --duration-ms > 0\n");
        return 2;
    }
    using namespace ns3;
    constexpr std::uint32_t flow_bytes = 4 * 1000 * 1000; // "4MB" in rocefab's units
    Config::SetDefault("ns3::TcpSocket::SegmentSize", UintegerValue(4096));
    Config::SetDefault("ns3::TcpSocket::SndBufSize", UintegerValue(flow_bytes));
    Config::SetDefault("ns3::TcpSocket::RcvBufSize", UintegerValue(flow_bytes));

    NodeContainer hosts, middle;
    hosts.Create(senders + 1);
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
    for (unsigned h = 0; h <= senders; ++h) {
        NetDeviceContainer devices = p2p.Install(hosts.Get(h), middle.Get(0));
        const std::string subnet = "10.0." + std::to_string(h) + ".0";
        addresses.SetBase(subnet.c_str(), "255.255.255.0");
        host_address.push_back(addresses.Assign(devices).GetAddress(0));
    }
    Ipv4GlobalRoutingHelper::PopulateRoutingTables();

    const std::uint16_t port = 5001;
    PacketSinkHelper sink("ns3::TcpSocketFactory", InetSocketAddress(Ipv4Address::GetAny(), port));
    sink.Install(hosts.Get(senders)).Start(Seconds(0));
    for (unsigned h = 0; h < senders; ++h) {
        BulkSendHelper source("ns3::TcpSocketFactory", InetSocketAddress(host_address[senders], port));
        source.SetAttribute("MaxBytes", UintegerValue(flow_bytes));
        source.SetAttribute("SendSize", UintegerValue(65536));
        source.Install(hosts.Get(h)).Start(Seconds(0));
    }
    Config::ConnectWithoutContext("/NodeList/*/DeviceList/*/$ns3::PointToPointNetDevice/PhyRxEnd",
                                  MakeCallback(&count_frame));

    Simulator::Stop(MicroSeconds(static_cast<std::int64_t>(duration_ms * 1000)));
    const auto start = std::chrono::steady_clock::now();
    Simulator::Run();
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    Simulator::Destroy();
    std::printf("%.3f %llu %.0f\n", wall, static_cast<unsigned long long>(frames_received),
                static_cast<double>(frames_received) / wall);
    return 0;
}
