// rdma-integrity's schedule: see schedule.hpp.
#include "schedule.hpp"

#include <algorithm>
#include <bit>
#include <cstring>

namespace rocefab::tools::integrity {

std::vector<op_kind> enabled_ops(std::uint32_t mask) {
    std::vector<op_kind> ops;
    for (unsigned i = 0; i < op_count; ++i)
        if (mask & (1u << i)) ops.push_back(static_cast<op_kind>(i));
    return ops;
}

void fill_payload(std::uint8_t* dst, std::size_t length, std::uint64_t key, std::uint64_t offset) {
    while (length) {
        const std::uint64_t word = payload_word(key, offset >> 3);
        const unsigned first = offset & 7;
        const std::size_t take = std::min<std::size_t>(8 - first, length);
        if (take == 8 && std::endian::native == std::endian::little) {
            std::memcpy(dst, &word, 8);
        } else {
            for (std::size_t i = 0; i < take; ++i) dst[i] = static_cast<std::uint8_t>(word >> (8 * (first + i)));
        }
        dst += take;
        offset += take;
        length -= take;
    }
}

std::optional<std::size_t> payload_mismatch(const std::uint8_t* p, std::size_t length, std::uint64_t key,
                                            std::uint64_t offset, std::uint8_t* expected_byte) {
    std::size_t done = 0;
    while (done < length) {
        const std::uint64_t word = payload_word(key, (offset + done) >> 3);
        const unsigned first = (offset + done) & 7;
        const std::size_t take = std::min<std::size_t>(8 - first, length - done);
        if (take == 8 && std::endian::native == std::endian::little && std::memcmp(p + done, &word, 8) == 0) {
            done += 8;
            continue;
        }
        for (std::size_t i = 0; i < take; ++i) {
            const auto want = static_cast<std::uint8_t>(word >> (8 * (first + i)));
            if (p[done + i] != want) {
                *expected_byte = want;
                return done + i;
            }
        }
        done += take;
    }
    return std::nullopt;
}

atomic_step step_of(const message_plan& m, std::uint64_t current) {
    if (m.op == op_kind::fetch_add) return {m.operand, 0, current + m.operand};
    const std::uint64_t compare = m.compare_hits ? current : current ^ m.compare_flip;
    return {compare, m.operand, compare == current ? m.operand : current};
}

namespace {

std::uint32_t pick_size(rng& r, std::uint32_t max_size, std::uint32_t mtu) {
    const std::uint32_t pick = r.below(100);
    if (pick < 5) return 0;
    if (pick < 8) return max_size;
    if (pick < 20) { // around a multiple of the path MTU, where segmentation has its edges
        const std::uint32_t multiples = std::max<std::uint32_t>(1, max_size / mtu);
        const std::int64_t size = std::int64_t(1 + r.below(multiples)) * mtu + std::int64_t(r.below(3)) - 1;
        return static_cast<std::uint32_t>(std::clamp<std::int64_t>(size, 0, max_size));
    }
    // Log-uniform: as many small messages as large ones.
    const unsigned bits = static_cast<unsigned>(std::bit_width(max_size));
    const std::uint32_t limit = std::min<std::uint64_t>(max_size, (1ull << r.below(bits + 1)) - 1);
    return r.below(limit + 1);
}

} // namespace

message_plan plan_of(const run_parameters& p, const std::vector<op_kind>& ops, std::uint64_t seq) {
    message_plan m{.seq = seq, .op = op_kind::send, .size = 0, .r = rng{splitmix64(p.seed * golden ^ splitmix64(seq))}};
    m.op = ops[m.r.below(static_cast<std::uint32_t>(ops.size()))];
    m.size = pick_size(m.r, p.max_size, p.mtu);
    if (m.op == op_kind::read) {
        m.read_offset = m.r.next() % (read_area_size(p) - m.size + 1);
    } else if (info(m.op).area == target::atomic_area) {
        m.size = 8;
        m.atomic_word = 1 + m.r.below(atomic_words);
        m.compare_hits = m.r.below(2) == 0;
        m.operand = m.r.next();
        m.compare_flip = m.r.next() | 1;
    }
    return m;
}

} // namespace rocefab::tools::integrity
