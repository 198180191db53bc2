// Failures a ConnectX reports loudly, under virtual time: a CQ that overflows takes the QPs that
// complete into it to the error state with their async events; a WRITE whose target the program
// took away is answered with a NAK, never an ACK.

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

// h2's memory refuses writes to one range, as a program's does once it unmaps the pages under
// a registered buffer (process_memory.hpp): the MR still covers them, the write fails.
class loud_failures_unmapped_target : public loud_failures {
protected:
    // Under the last 1 KiB packet of the third WRITE, the one that asks for the ACK.
    static constexpr std::uint64_t hole_offset = 128 * 1024 + 7 * 1024, hole_length = 1024;

    class memory_with_a_hole final : public address_space {
    public:
        explicit memory_with_a_hole(std::uint64_t begin) : _begin(begin) {}
        bool read(std::span<const iovec> local, std::span<const iovec> remote) override {
            return _memory.read(local, remote);
        }
        bool write(std::span<const iovec> local, std::span<const iovec> remote) override {
            for (const iovec& r : remote) {
                const auto at = reinterpret_cast<std::uint64_t>(r.iov_base);
                if (at < _begin + hole_length && at + r.iov_len > _begin) return false;
            }
            return _memory.write(local, remote);
        }

    private:
        local_address_space _memory;
        std::uint64_t _begin;
    };

    std::unique_ptr<address_space> memory_of(const host_side& h) override {
        if (&h != &h2) return loud_failures::memory_of(h);
        return std::make_unique<memory_with_a_hole>(reinterpret_cast<std::uint64_t>(h.memory.data()) + hole_offset);
    }
};

TEST_F(loud_failures_unmapped_target, the_write_that_fails_is_nakked_and_what_came_before_it_is_acknowledged) {
    connect();
    std::iota(h1.memory.begin(), h1.memory.begin() + 4 * 8192, std::uint8_t{1});
    const std::uint64_t remote = reinterpret_cast<std::uint64_t>(h2.memory.data());
    // Four 8 KiB WRITEs of 8 packets each, back to back: the last packet of the third lands in
    // the hole. It asks for an ACK, which is answered while its write is still staged: were the
    // ACK sent before the write is made, it would promise the third WRITE to h1.
    for (std::uint64_t i = 0; i < 4; ++i)
        post_send(h1, i, IBV_WR_RDMA_WRITE, i * 8192, 8192, remote + i * 64 * 1024, h2.rkey);
    run_for(microseconds(200));

    const auto cqes = poll(h1.send_cq_control, h1.send_cqes);
    ASSERT_EQ(cqes.size(), 4u);
    EXPECT_EQ(cqes[0].status, IBV_WC_SUCCESS);
    EXPECT_EQ(cqes[1].status, IBV_WC_SUCCESS);
    EXPECT_EQ(cqes[2].status, IBV_WC_REM_ACCESS_ERR); // IBA 9.7.5.2.8: the NAK at its PSN
    EXPECT_EQ(cqes[3].status, IBV_WC_WR_FLUSH_ERR);
    EXPECT_TRUE(std::equal(h1.memory.begin(), h1.memory.begin() + 8192, h2.memory.begin()));
    EXPECT_TRUE(std::equal(h1.memory.begin() + 8192, h1.memory.begin() + 16384, h2.memory.begin() + 64 * 1024));
    EXPECT_EQ(h2.nic->counters().memory_access_faults, 1u);
    EXPECT_EQ(h2.nic->counters().resp_remote_access_errors, 1u);
    EXPECT_EQ(h1.nic->counters().req_remote_access_errors, 1u);
    EXPECT_EQ(state_of(h1), IBV_QPS_ERR);
    EXPECT_EQ(state_of(h2), IBV_QPS_ERR);
}

} // namespace
} // namespace rocefab::nic
