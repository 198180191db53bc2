// Communication Management MADs (IBA vol 1 ch. 12) in their wire format: the MAD header of
// IBA 13.4.3 and the CM messages of 12.6 (REQ, MRA, REJ, REP, RTU, DREQ, DREP) and 12.11
// (SIDR_REQ, SIDR_REP), plus the "CMA header" the kernel's rdma_cm puts at the start of a
// REQ's and SIDR_REQ's private data for IP-based services (drivers/infiniband/core/cma.c).
// One packed struct each, big-endian fields, sizes asserted; fields narrower than their word
// through masked accessors, as in dataplane/wire/bth.hpp.
#pragma once

#include "dataplane/wire/endian.hpp"

#include <array>
#include <cstdint>
#include <cstring>
#include <optional>
#include <span>

namespace rocefab::cm {

using wire::be16;
using wire::be32;
using wire::be64;

inline constexpr std::size_t mad_size = 256;
inline constexpr std::size_t cm_data_size = 232;

// IBA 13.4.3 (Table 145): the common MAD header.
struct mad_header {
    std::uint8_t base_version;  // 1
    std::uint8_t mgmt_class;    // 0x07: communication management
    std::uint8_t class_version; // 2 for the CM
    std::uint8_t method;        // R (1) | method (7)
    be16 status;
    be16 class_specific;
    be64 transaction_id;
    be16 attribute_id;
    be16 reserved;
    be32 attribute_modifier;
} __attribute__((packed));
static_assert(sizeof(mad_header) == 24);

inline constexpr std::uint8_t mad_base_version = 1;
inline constexpr std::uint8_t mgmt_class_cm = 0x07;
inline constexpr std::uint8_t cm_class_version = 2;
inline constexpr std::uint8_t method_send = 0x03; // IBA 13.4.5: CM messages are Send()s

// IBA 12.6.2 Table 100: attribute IDs of the CM class.
enum class attribute : std::uint16_t {
    class_port_info = 0x0001,
    req = 0x0010,
    mra = 0x0011,
    rej = 0x0012,
    rep = 0x0013,
    rtu = 0x0014,
    dreq = 0x0015,
    drep = 0x0016,
    sidr_req = 0x0017,
    sidr_rep = 0x0018,
    lap = 0x0019,
    apr = 0x001a,
};
const char* attribute_name(attribute a);

// A 24-bit field in the high bits of a word, with 8 bits below it (QPN | responder resources).
struct high24_low8 {
    be32 word;
    constexpr std::uint32_t high() const { return word.load() >> 8; }
    constexpr std::uint8_t low() const { return static_cast<std::uint8_t>(word.load()); }
    constexpr void set(std::uint32_t high24, std::uint8_t low8) { word.store((high24 & 0xffffff) << 8 | low8); }
} __attribute__((packed));
static_assert(sizeof(high24_low8) == 4);

// IBA 12.6.5 Table 103: ConnectRequest.
struct req_msg {
    be32 local_comm_id;
    be32 reserved4;
    be64 service_id;
    be64 local_ca_guid;
    be32 reserved24;
    be32 local_qkey;
    high24_low8 local_qpn_responder_resources;
    high24_low8 local_eecn_initiator_depth;
    // remote EECN (24) | remote CM response timeout (5) | transport service type (2) | end-to-end flow control (1)
    be32 remote_eecn_timeout_transport_flow;
    // starting PSN (24) | local CM response timeout (5) | retry count (3)
    be32 psn_local_timeout_retry;
    be16 pkey;
    std::uint8_t mtu_rdc_rnr;         // path MTU (4) | RDC exists (1) | RNR retry count (3)
    std::uint8_t max_retries_srq_ext; // max CM retries (4) | SRQ (1) | extended transport type (3)
    be16 primary_local_lid;
    be16 primary_remote_lid;
    std::array<std::uint8_t, 16> primary_local_gid;
    std::array<std::uint8_t, 16> primary_remote_gid;
    be32 primary_flow_label_rate; // flow label (20) | reserved (6) | packet rate (6)
    std::uint8_t primary_traffic_class;
    std::uint8_t primary_hop_limit;
    std::uint8_t primary_sl_subnet_local;   // SL (4) | subnet local (1) | reserved (3)
    std::uint8_t primary_local_ack_timeout; // local ACK timeout (5) | reserved (3)
    std::array<std::uint8_t, 44> alternate_path;
    std::array<std::uint8_t, 92> private_data;

    std::uint32_t remote_cm_response_timeout() const { return remote_eecn_timeout_transport_flow.load() >> 3 & 31; }
    std::uint8_t transport_service_type() const { return remote_eecn_timeout_transport_flow.load() >> 1 & 3; }
    bool end_to_end_flow_control() const { return remote_eecn_timeout_transport_flow.load() & 1; }
    void set_remote_timeout_transport_flow(std::uint8_t timeout, std::uint8_t transport, bool flow) {
        remote_eecn_timeout_transport_flow.store(static_cast<std::uint32_t>(timeout & 31) << 3 |
                                                 static_cast<std::uint32_t>(transport & 3) << 1 | (flow ? 1u : 0u));
    }
    std::uint32_t starting_psn() const { return psn_local_timeout_retry.load() >> 8; }
    std::uint8_t local_cm_response_timeout() const { return psn_local_timeout_retry.load() >> 3 & 31; }
    std::uint8_t retry_count() const { return psn_local_timeout_retry.load() & 7; }
    void set_psn_timeout_retry(std::uint32_t psn, std::uint8_t timeout, std::uint8_t retry) {
        psn_local_timeout_retry.store((psn & 0xffffff) << 8 | static_cast<std::uint32_t>(timeout & 31) << 3 |
                                      (retry & 7));
    }
    std::uint8_t path_mtu() const { return mtu_rdc_rnr >> 4; }
    std::uint8_t rnr_retry_count() const { return mtu_rdc_rnr & 7; }
    void set_mtu_rnr(std::uint8_t mtu, std::uint8_t rnr) {
        mtu_rdc_rnr = static_cast<std::uint8_t>((mtu & 15) << 4 | (rnr & 7));
    }
    std::uint8_t max_cm_retries() const { return max_retries_srq_ext >> 4; }
    bool srq() const { return max_retries_srq_ext & 0x08; }
    void set_retries_srq(std::uint8_t retries, bool has_srq) {
        max_retries_srq_ext = static_cast<std::uint8_t>((retries & 15) << 4 | (has_srq ? 0x08 : 0));
    }
    std::uint32_t primary_flow_label() const { return primary_flow_label_rate.load() >> 12; }
    std::uint8_t primary_packet_rate() const { return primary_flow_label_rate.load() & 63; }
    void set_primary_flow_label_rate(std::uint32_t flow, std::uint8_t rate) {
        primary_flow_label_rate.store((flow & 0xfffff) << 12 | (rate & 63));
    }
    std::uint8_t primary_sl() const { return primary_sl_subnet_local >> 4; }
    std::uint8_t primary_local_ack_timeout_value() const { return primary_local_ack_timeout >> 3; }
} __attribute__((packed));
static_assert(sizeof(req_msg) == cm_data_size);

// IBA 12.6.6 Table 104: MessageReceiptAcknowledgement.
struct mra_msg {
    be32 local_comm_id;
    be32 remote_comm_id;
    std::uint8_t message_mraed;   // (2) | reserved (6)
    std::uint8_t service_timeout; // (5) | reserved (3)
    std::array<std::uint8_t, 222> private_data;
} __attribute__((packed));
static_assert(sizeof(mra_msg) == cm_data_size);

// IBA 12.6.7 Table 105: Reject.
struct rej_msg {
    be32 local_comm_id;
    be32 remote_comm_id;
    std::uint8_t message_rejected;   // (2) | reserved (6)
    std::uint8_t reject_info_length; // (7) | reserved (1)
    be16 reason;
    std::array<std::uint8_t, 72> additional_reject_info;
    std::array<std::uint8_t, 148> private_data;

    std::uint8_t rejected() const { return message_rejected >> 6; }
    void set_rejected(std::uint8_t which) { message_rejected = static_cast<std::uint8_t>((which & 3) << 6); }
} __attribute__((packed));
static_assert(sizeof(rej_msg) == cm_data_size);

// Table 105's "Message REJected" and Table 104's "Message MRAed".
enum class message_kind : std::uint8_t { req = 0, rep = 1, other = 2 };

// IBA 12.6.7.2 Table 106 (and the kernel's enum ib_cm_rej_reason).
enum class reject_reason : std::uint16_t {
    no_qp = 1,
    no_eec = 2,
    no_resources = 3,
    timeout = 4,
    unsupported = 5,
    invalid_comm_id = 6,
    invalid_comm_instance = 7,
    invalid_service_id = 8,
    invalid_transport_type = 9,
    stale_conn = 10,
    invalid_gid = 12,
    invalid_mtu = 26,
    insufficient_resp_resources = 27,
    consumer_defined = 28,
    invalid_rnr_retry = 29,
    duplicate_local_comm_id = 30,
};

// IBA 12.6.8 Table 107: Reply.
struct rep_msg {
    be32 local_comm_id;
    be32 remote_comm_id;
    be32 local_qkey;
    high24_low8 local_qpn; // QPN (24) | reserved (8)
    high24_low8 local_eecn;
    high24_low8 starting_psn; // PSN (24) | reserved (8)
    std::uint8_t responder_resources;
    std::uint8_t initiator_depth;
    std::uint8_t ack_delay_failover_flow; // target ACK delay (5) | failover accepted (2) | end-to-end flow control (1)
    std::uint8_t rnr_retry_srq;           // RNR retry count (3) | SRQ (1) | reserved (4)
    be64 local_ca_guid;
    std::array<std::uint8_t, 196> private_data;

    std::uint8_t rnr_retry_count() const { return rnr_retry_srq >> 5; }
    bool srq() const { return rnr_retry_srq & 0x10; }
    void set_rnr_retry_srq(std::uint8_t rnr, bool has_srq) {
        rnr_retry_srq = static_cast<std::uint8_t>((rnr & 7) << 5 | (has_srq ? 0x10 : 0));
    }
    bool end_to_end_flow_control() const { return ack_delay_failover_flow & 1; }
} __attribute__((packed));
static_assert(sizeof(rep_msg) == cm_data_size);

// IBA 12.6.9 Table 108: ReadyToUse.
struct rtu_msg {
    be32 local_comm_id;
    be32 remote_comm_id;
    std::array<std::uint8_t, 224> private_data;
} __attribute__((packed));
static_assert(sizeof(rtu_msg) == cm_data_size);

// IBA 12.6.10 Table 109: DisconnectRequest.
struct dreq_msg {
    be32 local_comm_id;
    be32 remote_comm_id;
    high24_low8 remote_qpn; // remote QPN/EECN (24) | reserved (8)
    std::array<std::uint8_t, 220> private_data;
} __attribute__((packed));
static_assert(sizeof(dreq_msg) == cm_data_size);

// IBA 12.6.11 Table 110: DisconnectReply.
struct drep_msg {
    be32 local_comm_id;
    be32 remote_comm_id;
    std::array<std::uint8_t, 224> private_data;
} __attribute__((packed));
static_assert(sizeof(drep_msg) == cm_data_size);

// IBA 12.11.1 Table 115: ServiceIDResolutionRequest.
struct sidr_req_msg {
    be32 request_id;
    be16 pkey;
    be16 reserved;
    be64 service_id;
    std::array<std::uint8_t, 216> private_data;
} __attribute__((packed));
static_assert(sizeof(sidr_req_msg) == cm_data_size);

// IBA 12.11.2 Table 116: ServiceIDResolutionResponse.
struct sidr_rep_msg {
    be32 request_id;
    std::uint8_t status;
    std::uint8_t additional_info_length;
    be16 reserved;
    high24_low8 qpn; // QPN (24) | reserved (8)
    be64 service_id;
    be32 qkey;
    std::array<std::uint8_t, 72> class_port_info;
    std::array<std::uint8_t, 136> private_data;
} __attribute__((packed));
static_assert(sizeof(sidr_rep_msg) == cm_data_size);

// IBA 12.11.2 Table 117: SIDR_REP status.
enum class sidr_status : std::uint8_t {
    valid = 0,
    service_id_not_supported = 1,
    rejected = 2,
    no_qp = 3,
    redirect = 4,
    version_not_supported = 5,
};

// A whole CM MAD.
struct cm_mad {
    mad_header header;
    std::array<std::uint8_t, cm_data_size> data;

    template <typename Msg> Msg& as() {
        static_assert(sizeof(Msg) == cm_data_size);
        return *reinterpret_cast<Msg*>(data.data());
    }
    template <typename Msg> const Msg& as() const {
        static_assert(sizeof(Msg) == cm_data_size);
        return *reinterpret_cast<const Msg*>(data.data());
    }
} __attribute__((packed));
static_assert(sizeof(cm_mad) == mad_size);

// The kernel's struct cma_hdr (cma.c): first in the private data of a REQ or SIDR_REQ to an
// IP-based service ID (IBA Annex A11, "RDMA IP CM Service"), it carries the addresses. The
// consumer's private data follows it.
struct cma_header {
    std::uint8_t cma_version; // 0x00
    std::uint8_t ip_version;  // (4) in the high nibble: 4 or 6
    be16 source_port;
    std::array<std::uint8_t, 16> source_address; // IPv4: in the last 4 bytes
    std::array<std::uint8_t, 16> destination_address;
} __attribute__((packed));
static_assert(sizeof(cma_header) == 36);

// IBA A11.2: IP-based service IDs, 0x0000000001PPpppp (PP the port space, pppp the port).
inline constexpr std::uint64_t ip_service_id_base = 0x0000000001000000ull;
inline constexpr std::uint16_t port_space_tcp = 0x0106; // RDMA_PS_TCP
inline constexpr std::uint16_t port_space_udp = 0x0111; // RDMA_PS_UDP
inline constexpr std::uint16_t port_space_ipoib = 0x0002;
inline constexpr std::uint16_t port_space_ib = 0x013f;
inline constexpr std::uint64_t ip_service_id(std::uint16_t port_space, std::uint16_t port) {
    return (static_cast<std::uint64_t>(port_space) << 16) | port;
}
inline constexpr bool is_ip_service_id(std::uint64_t sid) { return (sid >> 24) == 1 || (sid >> 32) == 0; }

// Checks a received MAD's header as the CM's receive path does: version, class, method, a
// known attribute. nullopt (the caller counts and drops) otherwise.
std::optional<attribute> classify(const cm_mad& mad);

// Fills the header of an outgoing CM MAD.
void set_header(cm_mad& mad, attribute a, std::uint64_t transaction_id);

} // namespace rocefab::cm
