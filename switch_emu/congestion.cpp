#include "switch_emu/congestion.hpp"

#include "dataplane/wire/ip.hpp"

namespace rocefab::switch_emu {

congestion_control::congestion_control(const qos_spec& qos, std::uint64_t seed)
    : _classes(qos.congestion), _state(seed ? seed : 0x9e3779b97f4a7c15ull) {
    for (unsigned priority = 0; priority < traffic_class_count; ++priority)
        if (qos.lossless_priorities & (1u << priority))
            _lossless_tcs |= static_cast<std::uint8_t>(1u << qos.priority_to_tc[priority]);
}

std::uint64_t congestion_control::next_random() {
    // xorshift64*: cheap, and enough for a marking probability.
    _state ^= _state >> 12;
    _state ^= _state << 25;
    _state ^= _state >> 27;
    return _state * 0x2545f4914f6cdd1dull;
}

congestion_verdict congestion_control::decide_above_min(std::uint8_t tc, std::uint64_t depth_bytes, std::uint8_t ecn) {
    const congestion_spec& c = _classes[tc & 7];
    const bool capable = ecn != wire::ecn::not_ect;
    if (depth_bytes >= c.max_bytes) {
        if (capable) return congestion_verdict::mark;
        return (_lossless_tcs & (1u << tc)) ? congestion_verdict::pass : congestion_verdict::drop;
    }
    if (!capable) return congestion_verdict::pass;
    // Linear from 0 at min to probability_percent at max, compared in 1/2^32 steps.
    const std::uint64_t span = c.max_bytes - c.min_bytes;
    const std::uint64_t threshold =
        ((depth_bytes - c.min_bytes) * c.probability_percent * (std::uint64_t(1) << 32)) / (span * 100);
    return (next_random() >> 32) < threshold ? congestion_verdict::mark : congestion_verdict::pass;
}

void mark_congestion_experienced(rte_mbuf* frame, const parsed_frame& parsed) {
    if (parsed.v6) {
        auto* ip = header_at<wire::ipv6_header>(frame, parsed.l3_offset);
        if (!ip) return;
        std::uint32_t word = ip->version_class_flow.load();
        word |= std::uint32_t(wire::ecn::ce) << 20;
        ip->version_class_flow.store(word);
        return;
    }
    auto* ip = header_at<wire::ipv4_header>(frame, parsed.l3_offset);
    if (!ip) return;
    // RFC 1624 incremental update over the 16-bit word holding version/IHL and TOS.
    const std::uint16_t old_word = static_cast<std::uint16_t>(ip->version_ihl << 8 | ip->tos);
    ip->tos = static_cast<std::uint8_t>(ip->tos | wire::ecn::ce);
    const std::uint16_t new_word = static_cast<std::uint16_t>(ip->version_ihl << 8 | ip->tos);
    std::uint32_t sum = static_cast<std::uint16_t>(~ip->checksum.load());
    sum += static_cast<std::uint16_t>(~old_word);
    sum += new_word;
    while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
    ip->checksum.store(static_cast<std::uint16_t>(~sum));
}

} // namespace rocefab::switch_emu
