#include "dataplane/wire/bth.hpp"
#include "dataplane/wire/ib_extension_headers.hpp"

#include <gtest/gtest.h>

#include <cstring>

namespace rocefab::wire {
namespace {

std::array<std::uint8_t, 12> bytes_of(const bth& h) {
    std::array<std::uint8_t, 12> b{};
    std::memcpy(b.data(), &h, sizeof h);
    return b;
}

TEST(bth, fields_land_on_the_bytes_iba_9_2_assigns) {
    bth h{};
    h.set_opcode(0x0a);
    h.set_solicited(true);
    h.set_migreq(true);
    h.set_pad_count(3);
    h.set_pkey(0x8001);
    h.set_fecn(true);
    h.set_becn(true);
    h.set_dest_qpn(0x123456);
    h.set_ack_request(true);
    h.set_psn(0xabcdef);
    const std::array<std::uint8_t, 12> expected{0x0a, 0xf0, 0x80, 0x01, 0xc0, 0x12, 0x34, 0x56, 0x80, 0xab, 0xcd, 0xef};
    EXPECT_EQ(bytes_of(h), expected);

    EXPECT_EQ(h.opcode(), 0x0a);
    EXPECT_TRUE(h.solicited());
    EXPECT_TRUE(h.migreq());
    EXPECT_EQ(h.pad_count(), 3);
    EXPECT_EQ(h.tver(), 0);
    EXPECT_EQ(h.pkey(), 0x8001);
    EXPECT_TRUE(h.fecn());
    EXPECT_TRUE(h.becn());
    EXPECT_EQ(h.dest_qpn(), 0x123456u);
    EXPECT_TRUE(h.ack_request());
    EXPECT_EQ(h.psn(), 0xabcdefu);
}

TEST(bth, setters_leave_neighbouring_bits_alone) {
    bth h{};
    h.set_becn(true);
    h.set_ack_request(true);
    h.set_dest_qpn(0xffffffff); // bits above 24 must not reach FECN/BECN
    h.set_psn(0xffffffff);
    EXPECT_TRUE(h.becn());
    EXPECT_FALSE(h.fecn());
    EXPECT_TRUE(h.ack_request());
    EXPECT_EQ(h.dest_qpn(), 0xffffffu);
    EXPECT_EQ(h.psn(), 0xffffffu);
    h.set_becn(false);
    h.set_ack_request(false);
    EXPECT_EQ(h.dest_qpn(), 0xffffffu);
    EXPECT_EQ(h.psn(), 0xffffffu);
    h.set_pad_count(7);
    EXPECT_EQ(h.pad_count(), 3);
    EXPECT_FALSE(h.solicited());
    EXPECT_EQ(h.tver(), 0);
}

TEST(psn, add_wraps_at_two_to_the_24) {
    EXPECT_EQ(psn_add(0xffffff, 1), 0u);
    EXPECT_EQ(psn_add(0xfffffe, 5), 3u);
    EXPECT_EQ(psn_add(10, 0), 10u);
    EXPECT_EQ(psn_add(0, 0x1000000), 0u);
}

TEST(psn, diff_is_signed_distance_across_the_wrap) {
    EXPECT_EQ(psn_diff(0, 0xffffff), 1);
    EXPECT_EQ(psn_diff(0xffffff, 0), -1);
    EXPECT_EQ(psn_diff(5, 5), 0);
    EXPECT_EQ(psn_diff(3, 0xfffffe), 5);
    EXPECT_EQ(psn_diff(0x7fffff, 0), 0x7fffff);
    EXPECT_EQ(psn_diff(0x800000, 0), -0x800000);
    EXPECT_EQ(psn_diff(0x000010, 0x800011), 0x7fffff); // just under half the space ahead
}

TEST(aeth, syndrome_encodings_follow_table_51) {
    EXPECT_EQ(aeth_syndrome::ack(0), 0x00);
    EXPECT_EQ(aeth_syndrome::ack(aeth_syndrome::invalid_credits), 0x1f);
    EXPECT_EQ(aeth_syndrome::rnr_nak(0x0e), 0x2e);
    EXPECT_EQ(aeth_syndrome::nak(nak_code::psn_sequence_error), 0x60);
    EXPECT_EQ(aeth_syndrome::nak(nak_code::invalid_request), 0x61);
    EXPECT_EQ(aeth_syndrome::nak(nak_code::remote_access_error), 0x62);
    EXPECT_EQ(aeth_syndrome::nak(nak_code::remote_operational_error), 0x63);
    EXPECT_EQ(aeth_syndrome::nak(nak_code::invalid_rd_request), 0x64);
}

TEST(aeth, decoders_tell_the_kinds_apart) {
    const std::uint8_t ack = aeth_syndrome::ack(7), rnr = aeth_syndrome::rnr_nak(18),
                       nak = aeth_syndrome::nak(nak_code::remote_access_error);
    EXPECT_TRUE(aeth_syndrome::is_ack(ack));
    EXPECT_FALSE(aeth_syndrome::is_rnr_nak(ack));
    EXPECT_FALSE(aeth_syndrome::is_nak(ack));
    EXPECT_EQ(aeth_syndrome::credits_of(ack), 7);
    EXPECT_TRUE(aeth_syndrome::is_rnr_nak(rnr));
    EXPECT_FALSE(aeth_syndrome::is_ack(rnr));
    EXPECT_EQ(aeth_syndrome::rnr_timer_of(rnr), 18);
    EXPECT_TRUE(aeth_syndrome::is_nak(nak));
    EXPECT_FALSE(aeth_syndrome::is_ack(nak));
    EXPECT_EQ(aeth_syndrome::nak_code_of(nak), nak_code::remote_access_error);
    // 10b is reserved: neither ACK, RNR NAK nor NAK.
    EXPECT_FALSE(aeth_syndrome::is_ack(0x40) || aeth_syndrome::is_rnr_nak(0x40) || aeth_syndrome::is_nak(0x40));
}

TEST(aeth, syndrome_and_msn_share_one_word) {
    aeth h{};
    h.set_msn(0xfedcba98);
    h.set_syndrome(0x62);
    std::uint8_t b[4];
    std::memcpy(b, &h, 4);
    EXPECT_EQ(b[0], 0x62);
    EXPECT_EQ(b[1], 0xdc);
    EXPECT_EQ(b[3], 0x98);
    EXPECT_EQ(h.msn(), 0xdcba98u);
    EXPECT_EQ(h.syndrome(), 0x62);
}

TEST(deth, source_qpn_is_24_bits_after_a_reserved_byte) {
    deth h{};
    h.qkey.store(0x80010000);
    h.set_source_qpn(0xff000001);
    std::uint8_t b[8];
    std::memcpy(b, &h, 8);
    const std::uint8_t expected[8] = {0x80, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01};
    EXPECT_EQ(0, std::memcmp(b, expected, 8));
    EXPECT_EQ(h.source_qpn(), 1u);
}

} // namespace
} // namespace rocefab::wire
