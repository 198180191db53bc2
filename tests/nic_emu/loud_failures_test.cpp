// Failures a ConnectX reports loudly, under virtual time: a CQ that overflows takes the QPs that
// complete into it to the error state with their async events.

#include "tests/nic_emu/two_nics_fixture.hpp"

namespace rocefab::nic {
namespace {

using namespace rocefab::nic::testing;

class loud_failures : public two_nics {};

bool has_event(const std::vector<attach::async_event_record>& events, ibv_event_type type, std::uint32_t handle) {
    for (const auto& e : events)
        if (e.event_type == static_cast<std::uint32_t>(type) && e.handle == handle) return true;
    return false;
}

TEST_F(loud_failures, a_cq_that_overflows_is_in_error_and_so_is_every_qp_completing_into_it) {
    connect();
    const std::uint64_t remote = reinterpret_cast<std::uint64_t>(h2.memory.data());
    // 256 slots: the 257th completion finds no room. Nobody polls.
    std::uint64_t wr = 0;
    for (int round = 0; round < 5; ++round) {
        for (int i = 0; i < 60; ++i, ++wr) post_send(h1, wr, IBV_WR_RDMA_WRITE, 0, 64, remote, h2.rkey);
        run_for(microseconds(100));
    }
    const auto events = async_events(h1);
    EXPECT_TRUE(has_event(events, IBV_EVENT_CQ_ERR, h1.send_cq));
    EXPECT_TRUE(has_event(events, IBV_EVENT_QP_FATAL, h1.qp));
    EXPECT_EQ(state_of(h1), IBV_QPS_ERR);
    EXPECT_EQ(h1.send_cq_control->overflowed.load(), 1u);
    EXPECT_GE(_nic1->counters().cq_overflow, 1u);
    // The CQ holds the 256 completions that fitted, in order, and nothing since.
    const auto cqes = poll(h1.send_cq_control, h1.send_cqes);
    ASSERT_EQ(cqes.size(), 256u);
    for (std::size_t i = 0; i < cqes.size(); ++i) EXPECT_EQ(cqes[i].wr_id, i);
    post_send(h1, 9999, IBV_WR_RDMA_WRITE, 0, 64, remote, h2.rkey);
    run_for(microseconds(100));
    EXPECT_TRUE(poll(h1.send_cq_control, h1.send_cqes).empty());
    // The peer's QP, completing into CQs of its own, is untouched.
    EXPECT_EQ(state_of(h2), IBV_QPS_RTS);
    EXPECT_TRUE(async_events(h2).empty());
}

TEST_F(loud_failures, a_qp_sharing_nothing_with_the_overflowing_cq_is_left_alone) {
    connect();
    // h2's receive CQ overflows: h2's QP, which completes into it, fails; h1 sees the NAKs or
    // timeouts that follow, but h1's own CQs never overflowed.
    for (int round = 0; round < 5; ++round) {
        for (int i = 0; i < 60; ++i) {
            post_recv(h2, 1000 + round * 60 + i, 0, 64);
            post_send(h1, round * 60 + i, IBV_WR_SEND, 0, 64);
        }
        run_for(microseconds(100));
        poll(h1.send_cq_control, h1.send_cqes);
    }
    const auto events = async_events(h2);
    EXPECT_TRUE(has_event(events, IBV_EVENT_CQ_ERR, h2.recv_cq));
    EXPECT_TRUE(has_event(events, IBV_EVENT_QP_FATAL, h2.qp));
    EXPECT_EQ(state_of(h2), IBV_QPS_ERR);
    EXPECT_FALSE(has_event(async_events(h1), IBV_EVENT_CQ_ERR, h1.send_cq));
}

} // namespace
} // namespace rocefab::nic
