// Packet buffers for the frame fuzzers: the EAL without hugepages (as the tests start it) and two
// pools. `input` holds the frames the fuzzer hands to a node, `node` the frames a node makes
// itself (PFC, ACKs, responses), so that the fuzzer knows which frames are its own.
//
// An mbuf's data room lives in DPDK's memory, which AddressSanitizer knows nothing about: a parser
// reading past a frame's end would read the rest of the buffer and no one would notice. So every
// input frame is poisoned around its bytes (headroom and tailroom): reading or writing a byte
// that is not the frame's is reported like a heap overflow. Nothing in the nodes grows a received
// frame into its head- or tailroom (they only rewrite header bytes in place), and an input
// buffer is only ever reused through input_frame(), which unpoisons it first.
#pragma once

#include "dataplane/eal.hpp"
#include "dataplane/packet.hpp"

#include <sanitizer/asan_interface.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <span>
#include <string>
#include <unistd.h>

namespace rocefab::fuzz {

struct packet_pools {
    rte_mempool* input = nullptr;
    rte_mempool* node = nullptr;
    static constexpr unsigned input_count = 1023;
    static constexpr unsigned node_count = 2047;
};

inline const packet_pools& pools() {
    static const packet_pools p = [] {
        packet_pools made;
        std::string error;
        eal_options options;
        options.file_prefix = "rocefab-fuzz-" + std::to_string(::getpid());
        options.memory_mb = 128;
        if (!start_eal(options, error)) {
            std::fprintf(stderr, "fuzz: %s\n", error.c_str());
            std::abort();
        }
        made.input = create_packet_pool("fuzz_input", packet_pools::input_count, error);
        if (made.input) made.node = create_packet_pool("fuzz_node", packet_pools::node_count, error);
        if (!made.node) {
            std::fprintf(stderr, "fuzz: %s\n", error.c_str());
            std::abort();
        }
        return made;
    }();
    return p;
}

inline void unpoison(rte_mbuf* m) { ASAN_UNPOISON_MEMORY_REGION(m->buf_addr, m->buf_len); }

// A frame from the input pool holding `bytes`, poisoned around them; nullptr when the pool is
// empty (a node holding every buffer is not the fuzzer's business: the frame is simply not sent).
inline rte_mbuf* input_frame(std::span<const std::uint8_t> bytes) {
    rte_mbuf* m = rte_pktmbuf_alloc(pools().input);
    if (!m) return nullptr;
    unpoison(m);
    char* data = rte_pktmbuf_append(m, static_cast<std::uint16_t>(bytes.size()));
    if (!data) {
        rte_pktmbuf_free(m);
        return nullptr;
    }
    if (!bytes.empty()) std::memcpy(data, bytes.data(), bytes.size());
    meta(m) = packet_meta{};
    auto* begin = static_cast<std::uint8_t*>(m->buf_addr);
    auto* frame = rte_pktmbuf_mtod(m, std::uint8_t*);
    ASAN_POISON_MEMORY_REGION(begin, frame - begin);
    ASAN_POISON_MEMORY_REGION(frame + bytes.size(), begin + m->buf_len - (frame + bytes.size()));
    return m;
}

inline bool from_input_pool(const rte_mbuf* m) { return m->pool == pools().input; }

// Frees a frame a node transmitted; an input frame is unpoisoned first, for whoever looks at its
// buffer next.
inline void free_transmitted(rte_mbuf* m) {
    if (from_input_pool(m)) unpoison(m);
    rte_pktmbuf_free(m);
}

// After a node is destroyed every buffer must be back: a frame a node neither sent nor freed is
// a leak AddressSanitizer cannot see (mbufs are not malloc'd). Aborts, naming the pool.
inline void expect_all_returned() {
    const packet_pools& p = pools();
    const unsigned input_free = rte_mempool_avail_count(p.input), node_free = rte_mempool_avail_count(p.node);
    if (input_free != packet_pools::input_count || node_free != packet_pools::node_count) {
        std::fprintf(stderr, "fuzz: packet buffers leaked: %u of %u input, %u of %u node buffers not returned\n",
                     packet_pools::input_count - input_free, packet_pools::input_count,
                     packet_pools::node_count - node_free, packet_pools::node_count);
        std::abort();
    }
}

// ROCEFAB_FUZZ_SHOW=1: the targets print what moved (counters) after each input, to check by
// eye that a seed does what its name says (`fuzz_switch_rx -runs=0 SEED`).
inline bool show_counters() {
    static const bool show = [] {
        const char* v = std::getenv("ROCEFAB_FUZZ_SHOW");
        return v && *v && *v != '0';
    }();
    return show;
}

// An invariant of the node under test is broken: say which and abort (libFuzzer saves the input).
[[noreturn]] inline void invariant_broken(const char* what) {
    std::fprintf(stderr, "fuzz: invariant broken: %s\n", what);
    std::abort();
}

} // namespace rocefab::fuzz
