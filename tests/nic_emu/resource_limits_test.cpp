// The device's limits are enforced as ibv_query_device reports them, and the numbers the NIC
// hands out (memory keys, QPNs) never name two live objects, however often they wrap.

#include "nic_emu/nic_node.hpp"
#include "tests/support/eal_environment.hpp"

#include <gtest/gtest.h>

#include <sys/mman.h>
#include <unordered_set>

namespace rocefab::nic {
namespace {

class resource_limits : public ::testing::Test {
protected:
    void SetUp() override {
        ASSERT_NE(rocefab::testing::test_pool(), nullptr);
        nic_spec spec;
        spec.host = "h1";
        spec.name = "rfab0";
        spec.mac.bytes = {0x02, 0x01, 0x00, 0x01, 0x00, 0x01};
        spec.address = wire::ipv6_address::v4_mapped(0x0a000001);
        _nic = std::make_unique<nic_node>(spec, [](const wire::ipv6_address&, wire::mac_address& mac) {
            mac.bytes = {0x02, 0x02, 0, 0, 0, 1};
            return true;
        });
        _context = _nic->open_context(std::make_unique<local_address_space>(), -1);
        ASSERT_EQ(_nic->alloc_pd(_context, _pd), 0);
    }

    // A region the NIC may use as a ring (anonymous memory: the NIC does not care where it lives).
    static shared_region region(std::size_t length) {
        void* base = ::mmap(nullptr, length, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        EXPECT_NE(base, MAP_FAILED);
        return shared_region(base, length);
    }

    int create_cq(std::uint32_t& handle) {
        return _nic->create_cq(_context, 1, 0, region(hw::cq_region_size(1)), handle);
    }

    int create_qp(std::uint32_t cq, std::uint32_t& handle, std::uint32_t& qpn) {
        ibv_qp_cap cap{};
        ibv_qp_cap granted{};
        std::uint32_t send_slots, recv_slots;
        EXPECT_EQ(nic_node::qp_geometry(cap, granted, send_slots, recv_slots), 0);
        return _nic->create_qp(_context, {_pd, cq, cq, IBV_QPT_RC, false, cap},
                               region(hw::qp_region_size(send_slots, recv_slots)), handle, qpn, granted);
    }

    std::uint64_t address() const { return reinterpret_cast<std::uint64_t>(_memory.data()); }

    std::unique_ptr<nic_node> _nic;
    std::uint32_t _context = 0, _pd = 0;
    std::vector<std::uint8_t> _memory = std::vector<std::uint8_t>(4096);
};

TEST_F(resource_limits, keys_never_alias_a_live_mr_through_more_than_two_to_the_24_registrations) {
    std::uint32_t live_handle, live_lkey, live_rkey;
    ASSERT_EQ(_nic->reg_mr(_context, _pd, address(), 64, address(), IBV_ACCESS_LOCAL_WRITE, live_handle, live_lkey,
                           live_rkey),
              0);
    // 2^24 indices in the key: the counter passes the live MR's index once, at least.
    const std::uint32_t registrations = (1u << 24) + 1000;
    std::uint32_t collisions = 0;
    for (std::uint32_t i = 0; i < registrations; ++i) {
        std::uint32_t handle, lkey, rkey;
        ASSERT_EQ(
            _nic->reg_mr(_context, _pd, address() + 64, 64, address() + 64, IBV_ACCESS_LOCAL_WRITE, handle, lkey, rkey),
            0);
        collisions += lkey == live_lkey || rkey == live_rkey || handle == live_handle;
        ASSERT_EQ(_nic->dereg_mr(_context, handle), 0);
    }
    EXPECT_EQ(collisions, 0u);
    // The live MR still answers to its key, for its own range only.
    EXPECT_EQ(_nic->resources().mrs, 1u);
    EXPECT_EQ(_nic->dereg_mr(_context, live_handle), 0);
}

TEST_F(resource_limits, qpns_skip_the_special_qps_and_live_qps_when_the_counter_wraps) {
    std::uint32_t cq;
    ASSERT_EQ(create_cq(cq), 0);
    // A live QP holds the number just past the wrap.
    _nic->set_next_qpn_for_test(2);
    std::uint32_t live, live_qpn;
    ASSERT_EQ(create_qp(cq, live, live_qpn), 0);
    EXPECT_EQ(live_qpn, 2u);
    _nic->set_next_qpn_for_test(wire::mask24 - 1);
    std::vector<std::uint32_t> numbers;
    for (int i = 0; i < 4; ++i) {
        std::uint32_t handle, qpn;
        ASSERT_EQ(create_qp(cq, handle, qpn), 0);
        numbers.push_back(qpn);
    }
    // 0xfffffe, 0xffffff, then past 0 and 1 (QP0, QP1) and the live QP 2.
    EXPECT_EQ(numbers, (std::vector<std::uint32_t>{0xfffffe, 0xffffff, 3, 4}));
}

TEST_F(resource_limits, protection_domains_and_mrs_stop_at_the_reported_maximum_with_enomem) {
    const ibv_device_attr attributes = _nic->device_attributes();
    EXPECT_EQ(attributes.max_pd, static_cast<int>(limits::max_pd));
    std::uint32_t handle;
    for (std::uint32_t i = 1; i < limits::max_pd; ++i) ASSERT_EQ(_nic->alloc_pd(_context, handle), 0) << i;
    EXPECT_EQ(_nic->alloc_pd(_context, handle), ENOMEM);

    EXPECT_EQ(attributes.max_mr, static_cast<int>(limits::max_mr));
    std::uint32_t lkey, rkey;
    std::unordered_set<std::uint32_t> keys;
    for (std::uint32_t i = 0; i < limits::max_mr; ++i) {
        ASSERT_EQ(_nic->reg_mr(_context, _pd, address(), 64, address(), IBV_ACCESS_LOCAL_WRITE, handle, lkey, rkey), 0);
        keys.insert(lkey);
    }
    EXPECT_EQ(keys.size(), limits::max_mr);
    EXPECT_EQ(_nic->reg_mr(_context, _pd, address(), 64, address(), IBV_ACCESS_LOCAL_WRITE, handle, lkey, rkey),
              ENOMEM);
    EXPECT_EQ(_nic->dereg_mr(_context, handle), 0);
    EXPECT_EQ(_nic->reg_mr(_context, _pd, address(), 64, address(), IBV_ACCESS_LOCAL_WRITE, handle, lkey, rkey), 0);
}

TEST_F(resource_limits, cqs_and_qps_stop_at_the_reported_maximum_with_enomem) {
    const ibv_device_attr attributes = _nic->device_attributes();
    EXPECT_EQ(attributes.max_cq, static_cast<int>(limits::max_cq));
    EXPECT_EQ(attributes.max_qp, static_cast<int>(limits::max_qp));
    std::uint32_t cq, handle, qpn;
    for (std::uint32_t i = 0; i < limits::max_cq; ++i) ASSERT_EQ(create_cq(cq), 0) << i;
    EXPECT_EQ(create_cq(handle), ENOMEM);
    for (std::uint32_t i = 0; i < limits::max_qp; ++i) ASSERT_EQ(create_qp(cq, handle, qpn), 0) << i;
    EXPECT_EQ(create_qp(cq, handle, qpn), ENOMEM);
    EXPECT_EQ(_nic->destroy_qp(_context, handle), 0);
    EXPECT_EQ(create_qp(cq, handle, qpn), 0);
}

} // namespace
} // namespace rocefab::nic
