// ibv_modify_qp's attributes as the daemon receives them: raw bytes from a client's message
// (attach_protocol.hpp carries an ibv_qp_attr as it is). Its enum fields may hold any 32-bit
// value, and the NIC must refuse what is out of range without acting on it.

#include "dataplane/log.hpp"
#include "tests/nic_emu/two_nics_fixture.hpp"

#include <spdlog/sinks/ringbuffer_sink.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <string_view>

namespace rocefab::nic {
namespace {

using namespace rocefab::nic::testing;

class qp_attributes : public two_nics {};

// An enum field of `attr` set to `value` the way a message fills it: by its bytes, not by a
// conversion to the enum (which would itself be undefined for a value out of the enum's range).
template <typename Field> void set_raw(Field& field, std::uint32_t value) {
    static_assert(sizeof(Field) == sizeof value);
    std::memcpy(&field, &value, sizeof value);
}

TEST_F(qp_attributes, out_of_range_states_and_path_mtu_are_refused_and_change_nothing) {
    for (const std::uint32_t bad : {8u, 100u, 0x80000000u, 0xffffffffu}) {
        SCOPED_TRACE(bad);
        ibv_qp_attr attr{};
        set_raw(attr.qp_state, bad);
        attr.port_num = 1;
        attr.qp_access_flags = IBV_ACCESS_REMOTE_WRITE;
        EXPECT_EQ(h1.nic->modify_qp(h1.context, h1.qp, attr,
                                    IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS, now()),
                  EINVAL);
        attr.qp_state = IBV_QPS_INIT;
        set_raw(attr.cur_qp_state, bad);
        EXPECT_EQ(h1.nic->modify_qp(
                      h1.context, h1.qp, attr,
                      IBV_QP_STATE | IBV_QP_CUR_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS, now()),
                  EINVAL);
    }
    ASSERT_EQ(h1.nic->find_qp_by_number(h1.qpn)->state, IBV_QPS_RESET);
    ASSERT_EQ(to_init(h1, IBV_ACCESS_REMOTE_WRITE), 0);
    for (const std::uint32_t bad : {0u, 6u, 100u, 0xffffffffu}) {
        SCOPED_TRACE(bad);
        ibv_qp_attr attr{};
        attr.qp_state = IBV_QPS_RTR;
        set_raw(attr.path_mtu, bad);
        attr.dest_qp_num = h2.qpn;
        attr.rq_psn = 1000;
        attr.max_dest_rd_atomic = 1;
        attr.min_rnr_timer = 1;
        attr.ah_attr.is_global = 1;
        attr.ah_attr.port_num = 1;
        attr.ah_attr.grh.hop_limit = 64;
        attr.ah_attr.grh.sgid_index = 1;
        std::memcpy(attr.ah_attr.grh.dgid.raw, h2.nic->gid(1).bytes.data(), 16);
        EXPECT_EQ(h1.nic->modify_qp(h1.context, h1.qp, attr,
                                    IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                                        IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER,
                                    now()),
                  EINVAL);
    }
    EXPECT_EQ(h1.nic->find_qp_by_number(h1.qpn)->state, IBV_QPS_INIT);
}

// The QP state (IBA 10.3.1) and the transport engines' own states change in one place each, which
// traces the change at debug level: how a QP got where it is can be read from the NIC's log.
TEST_F(qp_attributes, state_changes_are_traced_at_debug_level) {
    spdlog::logger& logger = log::nic();
    const auto level = logger.level();
    auto sink = std::make_shared<spdlog::sinks::ringbuffer_sink_mt>(64);
    logger.sinks().push_back(sink);
    logger.set_level(spdlog::level::debug);
    connect();
    ibv_qp_attr attr{};
    attr.qp_state = IBV_QPS_SQD;
    attr.en_sqd_async_notify = 1;
    const int drained = h1.nic->modify_qp(h1.context, h1.qp, attr, IBV_QP_STATE | IBV_QP_EN_SQD_ASYNC_NOTIFY, now());
    logger.sinks().pop_back();
    logger.set_level(level);
    ASSERT_EQ(drained, 0);
    const std::vector<std::string> lines = sink->last_formatted();
    auto traced = [&](std::string_view text) {
        return std::any_of(lines.begin(), lines.end(), [&](const std::string& l) { return l.find(text) != l.npos; });
    };
    EXPECT_TRUE(traced("(RC) RESET -> INIT"));
    EXPECT_TRUE(traced("(RC) RTR -> RTS"));
    EXPECT_TRUE(traced("(RC) RTS -> SQD"));
    EXPECT_TRUE(traced("requester: ready -> draining"));
}

TEST_F(qp_attributes, every_engine_state_has_a_name) {
    EXPECT_STREQ(state_name(requester_state::drained), "drained");
    EXPECT_STREQ(state_name(completer_state::implied_retry), "implied-retry");
    EXPECT_STREQ(state_name(responder_state::dropping_message), "dropping-message");
    EXPECT_STREQ(state_name(receive_state::filling), "filling");
}

} // namespace
} // namespace rocefab::nic
