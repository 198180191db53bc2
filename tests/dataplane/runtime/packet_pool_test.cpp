// The order in which a packet pool hands out its free buffers (dataplane/eal.hpp, pool_order).
#include "dataplane/eal.hpp"
#include "tests/support/eal_environment.hpp"

#include <gtest/gtest.h>

#include <rte_mempool.h>

#include <array>
#include <string_view>

namespace rocefab::testing {
namespace {

constexpr unsigned pool_size = 1023;

// Takes every buffer of a new pool, frees them in the order taken, then takes them all again:
// whether the one freed first of all comes out last, as it does only where the pool hands out
// the buffer freed last first beyond its per-lcore cache. Also gives the pool's driver.
bool first_freed_comes_out_last(pool_order order, const char* name, std::string_view& driver) {
    std::string error;
    rte_mempool* pool = create_packet_pool(name, pool_size, error, pool_pages::on_first_use, order);
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

} // namespace
} // namespace rocefab::testing
