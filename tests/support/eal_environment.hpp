// Test binaries that handle packets start the EAL once (no hugepages, in memory, a file
// prefix per binary) and share one mempool.
#pragma once

#include "dataplane/eal.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <span>
#include <unistd.h>

namespace rocefab::testing {

inline rte_mempool* test_pool() {
    static rte_mempool* pool = [] {
        std::string error;
        eal_options options;
        options.file_prefix = "rocefab-test-" + std::to_string(::getpid());
        options.memory_mb = 256;
        if (!start_eal(options, error)) {
            ADD_FAILURE() << error;
            return static_cast<rte_mempool*>(nullptr);
        }
        rte_mempool* p = create_packet_pool("test_pool", 8191, error);
        if (!p) ADD_FAILURE() << error;
        return p;
    }();
    return pool;
}

// A frame holding `bytes`, or nullptr (the test fails) when the pool is empty.
inline rte_mbuf* make_frame(std::span<const std::uint8_t> bytes) {
    rte_mbuf* m = rte_pktmbuf_alloc(test_pool());
    if (!m) return nullptr;
    char* data = rte_pktmbuf_append(m, static_cast<std::uint16_t>(bytes.size()));
    if (!data) {
        rte_pktmbuf_free(m);
        return nullptr;
    }
    // An empty span may have no data pointer, and memcpy's arguments must not be null even for 0 bytes.
    if (!bytes.empty()) std::memcpy(data, bytes.data(), bytes.size());
    return m;
}

} // namespace rocefab::testing
