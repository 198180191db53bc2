// The order in which a packet pool hands out its free buffers (dataplane/eal.hpp, pool_order),
// and where a populated pool's buffers live (pool_pages::populated).
#include "dataplane/eal.hpp"
#include "tests/support/eal_environment.hpp"

#include <gtest/gtest.h>

#include <rte_mempool.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>
#include <string_view>
#include <sys/mman.h>
#include <vector>

namespace rocefab::testing {
namespace {

constexpr unsigned pool_size = 1023;

// Takes every buffer of a new pool, frees them in the order taken, then takes them all again:
// whether the one freed first of all comes out last, as it does only where the pool hands out
// the buffer freed last first beyond its per-lcore cache. Also gives the pool's driver.
bool first_freed_comes_out_last(pool_order order, const char* name, std::string_view& driver,
                                pool_pages pages = pool_pages::on_first_use) {
    std::string error;
    rte_mempool* pool = create_packet_pool(name, pool_size, error, pages, order);
    EXPECT_NE(pool, nullptr) << error;
    if (!pool) return false;
    driver = rte_mempool_get_ops(pool->ops_index)->name;
    std::array<rte_mbuf*, pool_size> taken{}, again{};
    EXPECT_EQ(rte_pktmbuf_alloc_bulk(pool, taken.data(), taken.size()), 0);
    for (rte_mbuf* m : taken) rte_pktmbuf_free(m);
    for (rte_mbuf*& m : again) m = rte_pktmbuf_alloc(pool);
    const bool last = again.back() == taken.front();
    for (rte_mbuf* m : again) rte_pktmbuf_free(m);
    rte_mempool_free(pool);
    return last;
}

TEST(packet_pool, last_freed_first_is_dpdks_stack_and_hands_out_the_first_freed_buffer_last) {
    ASSERT_NE(test_pool(), nullptr); // starts the EAL
    std::string_view driver;
    EXPECT_TRUE(first_freed_comes_out_last(pool_order::last_freed_first, "lifo_test_pool", driver));
    EXPECT_EQ(driver, "stack");
    // The ring, through the same cache, does not: the check tells the two apart.
    EXPECT_FALSE(first_freed_comes_out_last(pool_order::ring, "ring_test_pool", driver));
    EXPECT_EQ(driver, "ring_mp_mc");
}

TEST(packet_pool, a_populated_pool_keeps_its_order) {
    ASSERT_NE(test_pool(), nullptr);
    std::string_view driver;
    EXPECT_TRUE(
        first_freed_comes_out_last(pool_order::last_freed_first, "lifo_populated_pool", driver, pool_pages::populated));
    EXPECT_EQ(driver, "stack");
    EXPECT_FALSE(first_freed_comes_out_last(pool_order::ring, "ring_populated_pool", driver, pool_pages::populated));
    EXPECT_EQ(driver, "ring_mp_mc");
}

// The pool's memory chunks: where each starts, and how long it is.
std::vector<std::pair<std::uintptr_t, std::size_t>> chunks_of(rte_mempool* pool) {
    std::vector<std::pair<std::uintptr_t, std::size_t>> chunks;
    rte_mempool_mem_iter(
        pool,
        [](rte_mempool*, void* out, rte_mempool_memhdr* chunk, unsigned) {
            static_cast<std::vector<std::pair<std::uintptr_t, std::size_t>>*>(out)->emplace_back(
                reinterpret_cast<std::uintptr_t>(chunk->addr), chunk->len);
        },
        &chunks);
    return chunks;
}

// The AnonHugePages of the mapping that holds `address`, in kB, from /proc/self/smaps; -1 if no
// mapping holds it.
long huge_kb_at(std::uintptr_t address) {
    std::ifstream smaps("/proc/self/smaps");
    bool inside = false;
    for (std::string line; std::getline(smaps, line);) {
        std::uintptr_t from = 0, to = 0;
        char dash = 0;
        std::istringstream fields(line);
        if (fields >> std::hex >> from >> dash >> to && dash == '-') {
            inside = from <= address && address < to;
        } else if (inside && line.starts_with("AnonHugePages:")) {
            return std::stol(line.substr(line.find(':') + 1));
        }
    }
    return -1;
}

bool transparent_huge_pages_off() {
    std::ifstream setting("/sys/kernel/mm/transparent_hugepage/enabled");
    std::string modes;
    return !std::getline(setting, modes) || modes.find("[never]") != std::string::npos;
}

TEST(packet_pool, a_populated_pool_has_every_buffer_on_memory_of_its_own_unmapped_with_it) {
    ASSERT_NE(test_pool(), nullptr);
    std::string error;
    rte_mempool* pool = create_packet_pool("own_memory_pool", pool_size, error, pool_pages::populated);
    ASSERT_NE(pool, nullptr) << error;
    const auto chunks = chunks_of(pool);
    ASSERT_FALSE(chunks.empty());
    auto in_pool = [&](const void* p) {
        const auto a = reinterpret_cast<std::uintptr_t>(p);
        for (const auto& [start, length] : chunks)
            if (start <= a && a < start + length) return true;
        return false;
    };
    // Every buffer is an mbuf that holds a jumbo frame, within the pool's memory; none comes twice.
    std::array<rte_mbuf*, pool_size> all{};
    ASSERT_EQ(rte_pktmbuf_alloc_bulk(pool, all.data(), all.size()), 0);
    EXPECT_EQ(rte_pktmbuf_alloc(pool), nullptr) << "more buffers than asked for";
    std::vector<rte_mbuf*> sorted(all.begin(), all.end());
    std::sort(sorted.begin(), sorted.end());
    EXPECT_EQ(std::adjacent_find(sorted.begin(), sorted.end()), sorted.end());
    for (rte_mbuf* m : all) {
        ASSERT_TRUE(in_pool(m));
        ASSERT_EQ(m->pool, pool);
        ASSERT_EQ(rte_pktmbuf_data_room_size(pool), packet_data_room);
        char* data = rte_pktmbuf_append(m, 9000);
        ASSERT_NE(data, nullptr);
        ASSERT_TRUE(in_pool(data + 8999));
        data[0] = data[8999] = 1;
    }
    for (rte_mbuf* m : all) rte_pktmbuf_free(m);
    // It is the pool's own mapping, on 2 MiB boundaries, so that THP can back it, and it goes
    // with the pool.
    const std::uintptr_t first = chunks.front().first;
    EXPECT_EQ(first % (2u << 20), 0u);
    EXPECT_GE(huge_kb_at(first), 0);
    rte_mempool_free(pool);
    EXPECT_EQ(huge_kb_at(first), -1) << "the pool's memory is still mapped after the pool is freed";
}

TEST(packet_pool, a_populated_pool_is_on_huge_pages_where_the_kernel_gives_them) {
    if (transparent_huge_pages_off()) GTEST_SKIP() << "transparent huge pages are off on this machine";
    ASSERT_NE(test_pool(), nullptr);
    std::string error;
    rte_mempool* pool = create_packet_pool("huge_page_pool", pool_size, error, pool_pages::populated);
    ASSERT_NE(pool, nullptr) << error;
    const std::uintptr_t first = chunks_of(pool).front().first;
    EXPECT_GT(huge_kb_at(first), 0) << "THP is on, yet the pool's memory has no huge page";
    rte_mempool_free(pool);
}

} // namespace
} // namespace rocefab::testing
