// The egress FIFOs against a plain model: each (port, TC) keeps its own frames in order, refuses
// a frame when full, and reports the depth and backlog the model has, whether a FIFO empties
// often (and starts again at its first slot) or runs full and wraps around its ring.
#include "switch_emu/egress_queue.hpp"

#include "tests/support/eal_environment.hpp"

#include <gtest/gtest.h>

#include <array>
#include <deque>
#include <random>
#include <vector>

namespace rocefab::switch_emu {
namespace {

using rocefab::testing::make_frame;
using rocefab::testing::test_pool;

class egress_queue_model : public ::testing::Test {
protected:
    static constexpr std::uint16_t ports = 5;
    static constexpr std::uint32_t capacity = 8;

    void SetUp() override {
        ASSERT_NE(test_pool(), nullptr);
        _available_before = rte_mempool_avail_count(test_pool());
    }
    std::deque<rte_mbuf*>& model_of(std::uint16_t port, std::uint8_t tc) {
        return model[port * traffic_class_count + tc];
    }
    ::testing::AssertionResult agrees(egress_queues& queues, std::uint16_t port) {
        std::uint8_t backlog = 0;
        for (std::uint8_t tc = 0; tc < traffic_class_count; ++tc) {
            const auto& q = model_of(port, tc);
            std::uint64_t bytes = 0;
            for (const rte_mbuf* frame : q) bytes += rte_pktmbuf_pkt_len(frame);
            if (queues.depth_frames(port, tc) != q.size() || queues.depth_bytes(port, tc) != bytes)
                return ::testing::AssertionFailure()
                       << "port " << port << " TC " << int(tc) << ": depth " << queues.depth_frames(port, tc)
                       << " frames, " << queues.depth_bytes(port, tc) << " bytes; the model " << q.size() << ", "
                       << bytes;
            if (!q.empty()) backlog = static_cast<std::uint8_t>(backlog | 1u << tc);
        }
        if (queues.backlog(port) != backlog)
            return ::testing::AssertionFailure()
                   << "port " << port << ": backlog " << int(queues.backlog(port)) << ", the model " << int(backlog);
        return ::testing::AssertionSuccess();
    }

    // The frames each FIFO holds; they belong to the queues (which free them), not to the model.
    std::array<std::deque<rte_mbuf*>, ports * traffic_class_count> model;
    unsigned _available_before = 0;
};

TEST_F(egress_queue_model, each_fifo_keeps_its_frames_in_order_through_empties_and_wraps) {
    std::mt19937 random{11};
    // TC 3 of every port fills and drains in long runs (full, wrapping); TC 0 and TC 6 mostly
    // hold a frame or two and empty between them.
    const std::array<std::uint8_t, 3> classes{0, 3, 6};
    int refused = 0, emptied = 0;
    {
        egress_queues queues(ports, capacity);
        ASSERT_EQ(queues.capacity(), capacity);
        for (int step = 0; step < 40'000; ++step) {
            const auto port = static_cast<std::uint16_t>(random() % ports);
            const std::uint8_t tc = classes[random() % classes.size()];
            auto& q = model_of(port, tc);
            const bool filling = tc == 3 ? (step / 500) % 2 == 0 : random() % 2 == 0;
            if (filling) {
                std::vector<std::uint8_t> bytes(64 + random() % 1400, 0);
                rte_mbuf* frame = make_frame(bytes);
                ASSERT_NE(frame, nullptr);
                if (queues.enqueue(port, tc, frame)) {
                    ASSERT_LT(q.size(), capacity) << "took a frame beyond its capacity";
                    q.push_back(frame);
                } else {
                    ASSERT_EQ(q.size(), capacity) << "refused a frame with room";
                    rte_pktmbuf_free(frame);
                    ++refused;
                }
            } else {
                rte_mbuf* frame = queues.dequeue(port, tc);
                if (q.empty()) {
                    ASSERT_EQ(frame, nullptr);
                } else {
                    ASSERT_EQ(frame, q.front()) << "port " << port << " TC " << int(tc) << " out of order";
                    q.pop_front();
                    rte_pktmbuf_free(frame);
                    if (q.empty()) ++emptied;
                }
            }
            ASSERT_TRUE(agrees(queues, port)) << "at step " << step;
        }
    } // whatever is still queued goes with the queues
    EXPECT_GT(refused, 100) << "the run never filled a FIFO";
    EXPECT_GT(emptied, 1'000) << "the run seldom emptied a FIFO";
    EXPECT_EQ(rte_mempool_avail_count(test_pool()), _available_before) << "mbuf leak";
}

} // namespace
} // namespace rocefab::switch_emu
