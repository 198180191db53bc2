#include "dataplane/wire/opcodes.hpp"

#include <gtest/gtest.h>
#include <infiniband/opcode.h> // rdma-core's values, an independent source for Table 39

#include <string>

namespace rocefab::wire {
namespace {

// Opcode values as rdma-core defines them.
static_assert(to_byte(ib_opcode::rc_send_first) == IBV_OPCODE_RC_SEND_FIRST);
static_assert(to_byte(ib_opcode::rc_rdma_write_only_with_immediate) == IBV_OPCODE_RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE);
static_assert(to_byte(ib_opcode::rc_rdma_read_request) == IBV_OPCODE_RC_RDMA_READ_REQUEST);
static_assert(to_byte(ib_opcode::rc_rdma_read_response_only) == IBV_OPCODE_RC_RDMA_READ_RESPONSE_ONLY);
static_assert(to_byte(ib_opcode::rc_acknowledge) == IBV_OPCODE_RC_ACKNOWLEDGE);
static_assert(to_byte(ib_opcode::rc_atomic_acknowledge) == IBV_OPCODE_RC_ATOMIC_ACKNOWLEDGE);
static_assert(to_byte(ib_opcode::rc_compare_swap) == IBV_OPCODE_RC_COMPARE_SWAP);
static_assert(to_byte(ib_opcode::rc_fetch_add) == IBV_OPCODE_RC_FETCH_ADD);
static_assert(to_byte(ib_opcode::uc_send_first) == IBV_OPCODE_UC_SEND_FIRST);
static_assert(to_byte(ib_opcode::uc_rdma_write_only_with_immediate) == IBV_OPCODE_UC_RDMA_WRITE_ONLY_WITH_IMMEDIATE);
static_assert(to_byte(ib_opcode::ud_send_only) == IBV_OPCODE_UD_SEND_ONLY);
static_assert(to_byte(ib_opcode::ud_send_only_with_immediate) == IBV_OPCODE_UD_SEND_ONLY_WITH_IMMEDIATE);

std::uint8_t length_of(ib_opcode op) { return opcode_info_of(op).header_length; }

TEST(opcode_table, header_lengths_match_the_iba_packet_formats) {
    EXPECT_EQ(length_of(ib_opcode::rc_send_first), 12);
    EXPECT_EQ(length_of(ib_opcode::rc_send_only), 12);
    EXPECT_EQ(length_of(ib_opcode::rc_send_last_with_immediate), 16);
    EXPECT_EQ(length_of(ib_opcode::rc_rdma_write_first), 28);
    EXPECT_EQ(length_of(ib_opcode::rc_rdma_write_middle), 12);
    EXPECT_EQ(length_of(ib_opcode::rc_rdma_write_last_with_immediate), 16);
    EXPECT_EQ(length_of(ib_opcode::rc_rdma_write_only), 28);
    EXPECT_EQ(length_of(ib_opcode::rc_rdma_write_only_with_immediate), 32);
    EXPECT_EQ(length_of(ib_opcode::rc_rdma_read_request), 28);
    EXPECT_EQ(length_of(ib_opcode::rc_rdma_read_response_first), 16);
    EXPECT_EQ(length_of(ib_opcode::rc_rdma_read_response_middle), 12);
    EXPECT_EQ(length_of(ib_opcode::rc_rdma_read_response_last), 16);
    EXPECT_EQ(length_of(ib_opcode::rc_rdma_read_response_only), 16);
    EXPECT_EQ(length_of(ib_opcode::rc_acknowledge), 16);
    EXPECT_EQ(length_of(ib_opcode::rc_atomic_acknowledge), 24);
    EXPECT_EQ(length_of(ib_opcode::rc_compare_swap), 40);
    EXPECT_EQ(length_of(ib_opcode::rc_fetch_add), 40);
    EXPECT_EQ(length_of(ib_opcode::rc_send_last_with_invalidate), 16);
    EXPECT_EQ(length_of(ib_opcode::rc_send_only_with_invalidate), 16);
    EXPECT_EQ(length_of(ib_opcode::uc_rdma_write_first), 28);
    EXPECT_EQ(length_of(ib_opcode::uc_send_only_with_immediate), 16);
    EXPECT_EQ(length_of(ib_opcode::ud_send_only), 20);
    EXPECT_EQ(length_of(ib_opcode::ud_send_only_with_immediate), 24);
    EXPECT_EQ(length_of(ib_opcode::cnp), 12);
}

TEST(opcode_table, extension_headers_follow_in_iba_order) {
    const auto& write_imm = opcode_info_of(ib_opcode::rc_rdma_write_only_with_immediate);
    EXPECT_EQ(write_imm.offset(ext_header::reth), 12);
    EXPECT_EQ(write_imm.offset(ext_header::immdt), 28);
    const auto& ud_imm = opcode_info_of(ib_opcode::ud_send_only_with_immediate);
    EXPECT_EQ(ud_imm.offset(ext_header::deth), 12);
    EXPECT_EQ(ud_imm.offset(ext_header::immdt), 20);
    const auto& atomic_ack = opcode_info_of(ib_opcode::rc_atomic_acknowledge);
    EXPECT_EQ(atomic_ack.offset(ext_header::aeth), 12);
    EXPECT_EQ(atomic_ack.offset(ext_header::atomic_ack_eth), 16);
    EXPECT_EQ(opcode_info_of(ib_opcode::rc_fetch_add).offset(ext_header::atomic_eth), 12);
    EXPECT_EQ(opcode_info_of(ib_opcode::rc_send_only_with_invalidate).offset(ext_header::ieth), 12);
}

TEST(opcode_table, exactly_the_supported_opcodes_are_valid) {
    int valid = 0;
    for (int op = 0; op < 256; ++op) {
        const auto& info = opcode_info_of(static_cast<std::uint8_t>(op));
        if (!info.valid) {
            EXPECT_EQ(info.mask, 0u) << op;
            continue;
        }
        ++valid;
        const std::string name = info.name;
        switch (info.transport) {
        case ib_transport::rc:
            EXPECT_EQ(op >> 5, 0) << name;
            EXPECT_EQ(name.substr(0, 3), "RC_");
            break;
        case ib_transport::uc:
            EXPECT_EQ(op >> 5, 1) << name;
            EXPECT_EQ(name.substr(0, 3), "UC_");
            break;
        case ib_transport::ud:
            EXPECT_EQ(op >> 5, 3) << name;
            EXPECT_EQ(name.substr(0, 3), "UD_");
            break;
        case ib_transport::cnp: EXPECT_EQ(op, 0x81); break;
        case ib_transport::none: ADD_FAILURE() << "valid opcode without transport " << op; break;
        }
        // Exactly one of first/middle/last/only, except for the CNP which is none of them.
        const int position = info.has(opcode_mask::first) + info.has(opcode_mask::middle) +
                             info.has(opcode_mask::last) + info.has(opcode_mask::only);
        EXPECT_EQ(position, info.transport == ib_transport::cnp ? 0 : 1) << name;
        EXPECT_NE(info.has(opcode_mask::request), info.has(opcode_mask::response) || info.has(opcode_mask::cnp))
            << name;
        EXPECT_EQ(info.has(opcode_mask::immdt), name.find("IMMEDIATE") != std::string::npos) << name;
        EXPECT_EQ(info.has(opcode_mask::ieth), name.find("INVALIDATE") != std::string::npos) << name;
    }
    EXPECT_EQ(valid, 23 + 12 + 2 + 1);
    EXPECT_FALSE(opcode_info_of(0x15).valid); // reserved in RC
    EXPECT_FALSE(opcode_info_of(0x2c).valid); // UC has no reads or atomics
    EXPECT_FALSE(opcode_info_of(0x40).valid); // RD is not supported over RoCE
    EXPECT_FALSE(opcode_info_of(0x60).valid); // UD sends are only "only"
    EXPECT_FALSE(opcode_info_of(0x80).valid);
}

TEST(opcode_table, payload_and_solicited_bits_follow_the_operation) {
    EXPECT_FALSE(opcode_info_of(ib_opcode::rc_rdma_read_request).has(opcode_mask::payload));
    EXPECT_FALSE(opcode_info_of(ib_opcode::rc_acknowledge).has(opcode_mask::payload));
    EXPECT_FALSE(opcode_info_of(ib_opcode::rc_compare_swap).has(opcode_mask::payload));
    EXPECT_TRUE(opcode_info_of(ib_opcode::rc_rdma_read_response_middle).has(opcode_mask::payload));
    EXPECT_TRUE(opcode_info_of(ib_opcode::rc_send_last).has(opcode_mask::solicitable));
    EXPECT_TRUE(opcode_info_of(ib_opcode::rc_rdma_write_only_with_immediate).has(opcode_mask::solicitable));
    EXPECT_FALSE(opcode_info_of(ib_opcode::rc_rdma_write_only).has(opcode_mask::solicitable));
    EXPECT_FALSE(opcode_info_of(ib_opcode::rc_send_first).has(opcode_mask::solicitable));
    EXPECT_TRUE(opcode_info_of(ib_opcode::rc_rdma_read_response_only).has(opcode_mask::response | opcode_mask::read));
}

TEST(opcode_table, pad_brings_payload_to_a_multiple_of_four) {
    EXPECT_EQ(pad_for(0), 0);
    EXPECT_EQ(pad_for(1), 3);
    EXPECT_EQ(pad_for(2), 2);
    EXPECT_EQ(pad_for(3), 1);
    EXPECT_EQ(pad_for(4096), 0);
}

} // namespace
} // namespace rocefab::wire
