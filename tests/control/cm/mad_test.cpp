// CM MAD wire formats (IBA 12.6, 12.11, 13.4.3): field positions and masked fields.
#include "control/cm/mad.hpp"

#include <gtest/gtest.h>
#include <infiniband/verbs.h>

#include <cstddef>

namespace rocefab::cm {
namespace {

TEST(cm_mad, header_fields_sit_where_iba_13_4_3_puts_them) {
    cm_mad mad;
    set_header(mad, attribute::req, 0x1122334455667788ull);
    const auto* bytes = reinterpret_cast<const std::uint8_t*>(&mad);
    EXPECT_EQ(bytes[0], 1);    // base version
    EXPECT_EQ(bytes[1], 0x07); // CM class
    EXPECT_EQ(bytes[2], 2);    // class version
    EXPECT_EQ(bytes[3], 0x03); // Send()
    EXPECT_EQ(bytes[8], 0x11);
    EXPECT_EQ(bytes[15], 0x88);
    EXPECT_EQ(bytes[16], 0x00);
    EXPECT_EQ(bytes[17], 0x10); // attribute ID, big-endian
    EXPECT_EQ(classify(mad), attribute::req);
}

TEST(cm_mad, classify_drops_what_is_not_a_cm_send) {
    cm_mad mad;
    set_header(mad, attribute::rep, 1);
    mad.header.mgmt_class = 0x81; // a directed-route SMP
    EXPECT_FALSE(classify(mad));
    set_header(mad, attribute::rep, 1);
    mad.header.class_version = 1;
    EXPECT_FALSE(classify(mad));
    set_header(mad, attribute::rep, 1);
    mad.header.method = 0x81; // GetResp
    EXPECT_FALSE(classify(mad));
    set_header(mad, attribute::rep, 1);
    mad.header.attribute_id.store(0x0042);
    EXPECT_FALSE(classify(mad));
}

TEST(cm_mad, req_fields_follow_table_103) {
    EXPECT_EQ(offsetof(req_msg, service_id), 8u);
    EXPECT_EQ(offsetof(req_msg, local_qpn_responder_resources), 32u);
    EXPECT_EQ(offsetof(req_msg, psn_local_timeout_retry), 44u);
    EXPECT_EQ(offsetof(req_msg, pkey), 48u);
    EXPECT_EQ(offsetof(req_msg, primary_local_gid), 56u);
    EXPECT_EQ(offsetof(req_msg, primary_remote_gid), 72u);
    EXPECT_EQ(offsetof(req_msg, private_data), 140u);
    req_msg m{};
    m.local_qpn_responder_resources.set(0xabcdef, 4);
    m.set_psn_timeout_retry(0x123456, 20, 7);
    m.set_mtu_rnr(IBV_MTU_4096, 6);
    m.set_retries_srq(15, true);
    m.set_remote_timeout_transport_flow(20, 0, true);
    EXPECT_EQ(m.local_qpn_responder_resources.high(), 0xabcdefu);
    EXPECT_EQ(m.local_qpn_responder_resources.low(), 4);
    EXPECT_EQ(m.starting_psn(), 0x123456u);
    EXPECT_EQ(m.local_cm_response_timeout(), 20);
    EXPECT_EQ(m.retry_count(), 7);
    EXPECT_EQ(m.path_mtu(), IBV_MTU_4096);
    EXPECT_EQ(m.rnr_retry_count(), 6);
    EXPECT_EQ(m.max_cm_retries(), 15);
    EXPECT_TRUE(m.srq());
    EXPECT_EQ(m.remote_cm_response_timeout(), 20u);
    EXPECT_TRUE(m.end_to_end_flow_control());
    const auto* bytes = reinterpret_cast<const std::uint8_t*>(&m);
    EXPECT_EQ(bytes[32], 0xab); // QPN in the high 24 bits
    EXPECT_EQ(bytes[35], 4);
    EXPECT_EQ(bytes[50], (IBV_MTU_4096 << 4) | 6);
}

TEST(cm_mad, rep_rej_sidr_fields_follow_their_tables) {
    EXPECT_EQ(offsetof(rep_msg, starting_psn), 20u);
    EXPECT_EQ(offsetof(rep_msg, local_ca_guid), 28u);
    EXPECT_EQ(offsetof(rep_msg, private_data), 36u);
    EXPECT_EQ(offsetof(rej_msg, reason), 10u);
    EXPECT_EQ(offsetof(rej_msg, private_data), 84u);
    EXPECT_EQ(offsetof(dreq_msg, private_data), 12u);
    EXPECT_EQ(offsetof(sidr_req_msg, service_id), 8u);
    EXPECT_EQ(offsetof(sidr_rep_msg, qkey), 20u);
    EXPECT_EQ(offsetof(sidr_rep_msg, private_data), 96u);
    rej_msg r{};
    r.set_rejected(static_cast<std::uint8_t>(message_kind::rep));
    EXPECT_EQ(r.message_rejected, 0x40);
    rep_msg p{};
    p.set_rnr_retry_srq(7, true);
    EXPECT_EQ(p.rnr_retry_count(), 7);
    EXPECT_TRUE(p.srq());
}

TEST(cm_mad, ip_service_ids_are_annex_a11s) {
    EXPECT_EQ(ip_service_id(port_space_tcp, 7174), 0x0000000001061c06ull);
    EXPECT_EQ(ip_service_id(port_space_udp, 7174), 0x0000000001111c06ull);
}

} // namespace
} // namespace rocefab::cm
