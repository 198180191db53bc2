// Throughput of the ICRC hot path: crc32() over 1 KiB and 4 KiB buffers, and compute_icrc() over a
// 4 KiB-payload RoCEv2 IPv4 packet. Reports bytes/ns, best of several runs (the machine is shared,
// so the best run is the one least disturbed by other work).
#include "dataplane/wire/icrc.hpp"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <vector>

namespace {

template <typename F> double best_bytes_per_ns(std::size_t bytes_per_call, F&& call) {
    constexpr int runs = 7;
    const std::size_t calls = std::max<std::size_t>(1, (256u << 20) / bytes_per_call / 4);
    double best = 0;
    for (int r = 0; r < runs; ++r) {
        const auto start = std::chrono::steady_clock::now();
        for (std::size_t i = 0; i < calls; ++i) call();
        const auto ns = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - start).count();
        best = std::max(best, double(calls * bytes_per_call) / ns);
    }
    return best;
}

} // namespace

int main() {
    std::vector<std::uint8_t> buffer(4096 + 64);
    for (std::size_t i = 0; i < buffer.size(); ++i) buffer[i] = static_cast<std::uint8_t>(i * 131 + 7);
    volatile std::uint32_t sink = 0;

    for (std::size_t size : {64u, 1024u, 4096u}) {
        const std::span<const std::uint8_t> bytes(buffer.data(), size);
        const double rate = best_bytes_per_ns(size, [&] { sink = sink ^ rocefab::wire::crc32(bytes); });
        std::printf("crc32        %5zu B: %6.2f bytes/ns\n", size, rate);
    }
    // IPv4 (20) + UDP (8) + BTH (12) + 4096 payload: the masked-header path plus the bulk.
    buffer[0] = 0x45;
    const std::span<const std::uint8_t> packet(buffer.data(), 20 + 8 + 12 + 4096);
    const double rate = best_bytes_per_ns(packet.size(), [&] { sink = sink ^ rocefab::wire::compute_icrc(packet); });
    std::printf("compute_icrc %5zu B: %6.2f bytes/ns\n", packet.size(), rate);
    return 0;
}
