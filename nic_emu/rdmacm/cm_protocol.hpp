// The protocol between our librdmacm.so.1 and the daemon's connection manager, the part that
// plays the kernel's ucma (drivers/infiniband/core/ucma.c). One SOCK_SEQPACKET connection per
// event channel, to `cm/HOST.sock` in the fabric's runtime directory: the library sends a
// request, the daemon answers with a reply on the same connection. Events go the other way
// on a second socket whose read end is the channel's fd (what rping and ucmatose poll): the
// library makes a socketpair and hands the daemon its write end with the hello.
//
// Every message is one fixed-size POD datagram; the daemon checks lengths and every field,
// and acts only on ids that belong to the connection the request came on. Header-only: the
// library links none of the daemon's code.
#pragma once

#include <infiniband/verbs.h>

#include <cstdint>
#include <netinet/in.h>
#include <sys/socket.h>

namespace rocefab::cm_protocol {

inline constexpr std::uint32_t magic = 0x52434d31; // "RCM1"

enum class op : std::uint32_t {
    hello = 1,     // fds[0]: the write end of the channel's event socket
    create_id,     // port_space, qp_type -> id
    destroy_id,    // id
    bind_addr,     // id, source -> reply.source
    resolve_addr,  // id, source (may be unspecified), destination, timeout_ms -> event
    resolve_route, // id, timeout_ms -> event
    listen,        // id, backlog
    connect,       // id, conn -> REQ (or SIDR_REQ)
    accept,        // id, conn -> REP (or SIDR_REP); after CONNECT_RESPONSE: RTU
    reject,        // id, conn.private_data -> REJ (or SIDR_REP status rejected)
    disconnect,    // id, conn.private_data -> DREQ (or DREP)
    init_qp_attr,  // id, qp_state -> reply.qp_attr, reply.qp_attr_mask
    query,         // id -> reply: addresses and route
    migrate_id,    // id, channel_token: the id's events go to that channel from now on
    set_option,    // id, option_level, option_name, option_value
    establish,     // id: the consumer saw the connection work (rdma_establish)
    notify,        // id, event_type (ibv_event_type of the QP)
};

struct conn_params {
    std::uint8_t responder_resources, initiator_depth, flow_control, retry_count, rnr_retry_count, srq;
    std::uint8_t private_data_len;
    std::uint8_t reserved;
    std::uint32_t qp_num;
    std::uint32_t qkey; // UD
    std::uint8_t private_data[232];
};

struct request {
    std::uint32_t magic_number;
    op code;
    std::uint32_t id;
    std::uint16_t port_space; // RDMA_PS_*
    std::uint8_t qp_type;     // ibv_qp_type
    std::uint8_t reserved;
    sockaddr_storage source, destination;
    std::int32_t timeout_ms;
    std::int32_t backlog;
    std::int32_t qp_state;
    std::int32_t option_level, option_name;
    std::uint8_t option_value[16];
    std::uint32_t option_length;
    std::uint64_t channel_token;
    std::uint32_t event_type;
    conn_params conn;
};

// What a resolved id knows of its route (rdma_cm_id.route, .port_num, .verbs by node GUID).
struct route_info {
    sockaddr_storage source, destination;
    std::uint8_t sgid[16], dgid[16];
    std::uint64_t node_guid; // network order: which device (ibv_get_device_guid)
    std::uint16_t pkey;
    std::uint8_t port_num;
    std::uint8_t path_mtu; // ibv_mtu
    std::uint8_t hop_limit, traffic_class;
    std::uint8_t addr_resolved, route_resolved;
    std::uint32_t flow_label;
};

struct reply {
    std::uint32_t magic_number;
    std::int32_t status; // 0 or an errno value
    std::uint32_t id;
    std::uint32_t reserved;
    std::uint64_t channel_token; // hello: this channel's token, for migrate_id
    route_info route;
    ibv_qp_attr qp_attr;
    std::int32_t qp_attr_mask;
};

struct ud_params {
    ibv_ah_attr ah_attr;
    std::uint32_t qp_num, qkey;
};

struct event {
    std::uint32_t magic_number;
    std::uint32_t type; // rdma_cm_event_type
    std::int32_t status;
    std::uint32_t id;        // the id the event is for (CONNECT_REQUEST: the new id)
    std::uint32_t listen_id; // CONNECT_REQUEST: the listener; 0 otherwise
    std::uint32_t reserved;
    conn_params conn;
    ud_params ud;
    route_info route;
};

// Events the daemon gives the library that it does not show the consumer as they are.
inline constexpr std::uint32_t internal_connect_response = 5; // RDMA_CM_EVENT_CONNECT_RESPONSE

} // namespace rocefab::cm_protocol
