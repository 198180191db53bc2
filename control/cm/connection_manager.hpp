// The daemon's connection manager: the kernel's rdma_cm (cma.c) and IB CM (cm.c) in one, for
// the NICs of a fabric. Each rdma_cm id is an explicit state machine (cm_state); what a program
// asks (through cm_server, the ucma of this house) and what arrives as CM MADs on the NICs'
// QP1 move it from state to state; timeouts and retries are deadlines it keeps (IBA 12.9).
//
// Pure logic: time is an argument, MADs go out and events go to programs through the sinks
// given at construction. The server drives it from the io thread; tests drive it under a fake
// clock with two ports wired to each other.
#pragma once

#include "control/cm/mad.hpp"
#include "dataplane/time.hpp"
#include "dataplane/wire/ip.hpp"
#include "nic_emu/gsi_queue.hpp"
#include "nic_emu/rdmacm/cm_protocol.hpp"

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

namespace rocefab::cm {

// One NIC the CM serves: the emulated host it sits in and its IPv4 interface address.
struct local_port {
    std::string host, device;
    std::uint32_t ipv4 = 0; // host order
    std::uint8_t prefix_length = 24;
    wire::ipv6_address gid;      // GID index 1: the v4-mapped address
    std::uint64_t node_guid = 0; // host order
    std::uint8_t active_mtu = IBV_MTU_4096;
    std::uint8_t max_rd_atomic = 16;
};

// IBA 12.7.32 and the kernel's defaults for RoCE: CMA_CM_RESPONSE_TIMEOUT 20 (4.096 us * 2^20,
// ~4.3 s), CMA_IBOE_PACKET_LIFETIME 16, CMA_MAX_CM_RETRIES 15. The REQ waits
// 2 * packet life + remote response time per try (cm.c, cm_send_req).
struct cm_timing {
    std::uint8_t cm_response_timeout = 20;
    std::uint8_t packet_life_time = 16;
    std::uint8_t max_cm_retries = 15;
    // The ARP of a destination nobody has gives up at the program's rdma_resolve_addr timeout,
    // but never later than this (the kernel's neighbour table retries a few seconds).
    sim_time max_arp_time = seconds(3);
};
// IBA 13.4.6.2: 4.096 us * 2^value.
inline sim_time cm_time(std::uint8_t value) {
    return value >= 31 ? seconds(8796) : static_cast<sim_time>(4096) << value;
}

#define ROCEFAB_CM_STATES(X)                                                                                           \
    X(idle)                                                                                                            \
    X(address_query) /* rdma_resolve_addr: waiting for the neighbour */                                                \
    X(address_resolved)                                                                                                \
    X(address_bound)                                                                                                   \
    X(route_resolved)                                                                                                  \
    X(listening)                                                                                                       \
    X(req_sent)     /* IB_CM_REQ_SENT */                                                                               \
    X(req_received) /* IB_CM_REQ_RCVD: the consumer has a CONNECT_REQUEST to answer */                                 \
    X(rep_sent)     /* IB_CM_REP_SENT */                                                                               \
    X(rep_received) /* IB_CM_REP_RCVD: the library moves its QP, then asks for the RTU */                              \
    X(established)                                                                                                     \
    X(dreq_sent)                                                                                                       \
    X(dreq_received)                                                                                                   \
    X(timewait)                                                                                                        \
    X(sidr_req_sent)                                                                                                   \
    X(sidr_req_received)                                                                                               \
    X(ud_ready)    /* a UD id resolved by SIDR, or accepted */                                                         \
    X(rejected)    /* errors are states too: REJ received or sent */                                                   \
    X(unreachable) /* retries exhausted */                                                                             \
    X(address_error)

enum class cm_state : std::uint8_t {
#define ROCEFAB_CM_STATE_ENUM(name) name,
    ROCEFAB_CM_STATES(ROCEFAB_CM_STATE_ENUM)
#undef ROCEFAB_CM_STATE_ENUM
};
const char* state_name(cm_state s);

#define ROCEFAB_CM_COUNTERS(X)                                                                                         \
    X(mads_received)                                                                                                   \
    X(mads_sent)                                                                                                       \
    X(mads_malformed) /* not a CM MAD we take: dropped */                                                              \
    X(mads_unmatched) /* no id expects it (a late retry, a stale connection): dropped */                               \
    X(mads_retransmitted)                                                                                              \
    X(req_rejected_no_listener)                                                                                        \
    X(connections_established)                                                                                         \
    X(connect_timeouts)                                                                                                \
    X(sidr_resolved)

struct cm_counters {
#define ROCEFAB_CM_COUNTER_FIELD(name) std::uint64_t name = 0;
    ROCEFAB_CM_COUNTERS(ROCEFAB_CM_COUNTER_FIELD)
#undef ROCEFAB_CM_COUNTER_FIELD
};

class connection_manager {
public:
    using session_id = std::uint64_t;
    struct sinks {
        // A MAD from port `port`'s QP1 to `destination`'s QP `qpn`.
        std::function<void(std::size_t port, const wire::ipv6_address& destination, std::uint32_t qpn,
                           const std::array<std::uint8_t, mad_size>& mad)>
            send_mad;
        std::function<void(session_id, const cm_protocol::event&)> deliver;
    };
    struct owner {
        std::string host;
        std::uint32_t uid = 0;
        std::int32_t pid = 0;
    };

    // What one event channel may hold, so that one program cannot take every id from the others.
    static constexpr std::uint32_t max_ids_per_channel = 4096;

    connection_manager(std::vector<local_port> ports, sinks out, cm_timing timing = {}, std::uint64_t seed = 1);
    ~connection_manager();

    // A channel connected; its token is what migrate_id names it by.
    std::uint64_t open_session(session_id session, owner who);
    // The channel is gone: its ids are destroyed (a connection is rejected or disconnected on
    // the wire, as when a process dies with ids open).
    void close_session(session_id session, sim_time now);

    cm_protocol::reply handle(session_id session, const cm_protocol::request& request, sim_time now);
    void receive(std::size_t port, const nic::gsi_datagram& datagram, sim_time now);
    void advance(sim_time now);
    sim_time next_deadline() const;

    const cm_counters& counters() const { return _counters; }
    std::size_t ids() const { return _ids.size(); }

    // One id as the operator lists it (iproute2's `rdma resource show cm_id`): who holds it, its
    // state and its addresses. A script waits on it for a server to listen before its client starts.
    struct id_summary {
        std::string host, device; // device: empty until the id is bound to a NIC
        std::uint32_t uid = 0;
        std::int32_t pid = 0;
        cm_state state = cm_state::idle;
        std::uint16_t port_space = 0;
        std::uint32_t source_ip = 0, destination_ip = 0; // host order
        std::uint16_t source_port = 0, destination_port = 0;
        std::uint32_t qpn = 0;
    };
    std::vector<id_summary> list_ids() const;
    // Test access: the state of id `handle`.
    std::optional<cm_state> state_of(std::uint32_t handle) const;

private:
    struct cm_id;
    struct session_state {
        owner who;
        std::uint64_t token = 0;
        std::uint32_t ids = 0; // a channel holds at most max_ids_per_channel
    };
    cm_id& add_id(std::unique_ptr<cm_id> id);

    int create_id(session_id session, const cm_protocol::request& r, std::uint32_t& handle);
    void destroy(cm_id& id, sim_time now);
    int bind(cm_id& id, const sockaddr_storage& address);
    int resolve_addr(cm_id& id, const cm_protocol::request& r, sim_time now);
    int resolve_route(cm_id& id);
    int listen(cm_id& id, int backlog);
    int connect(cm_id& id, const cm_protocol::request& r, sim_time now);
    int accept(cm_id& id, const cm_protocol::request& r, sim_time now);
    int reject(cm_id& id, const cm_protocol::request& r, sim_time now);
    int disconnect(cm_id& id, const cm_protocol::request& r, sim_time now);
    int init_qp_attr(const cm_id& id, int state, ibv_qp_attr& attr, int& mask) const;
    int migrate(cm_id& id, session_id from, std::uint64_t token);
    int set_option(cm_id& id, const cm_protocol::request& r);
    void fill_route(const cm_id& id, cm_protocol::route_info& route) const;

    void on_req(std::size_t port, const nic::gsi_datagram& d, const cm_mad& mad, sim_time now);
    void on_rep(const cm_mad& mad, sim_time now);
    void on_rtu(const cm_mad& mad, sim_time now);
    void on_rej(const cm_mad& mad, sim_time now);
    void on_mra(const cm_mad& mad, sim_time now);
    void on_dreq(std::size_t port, const nic::gsi_datagram& d, const cm_mad& mad, sim_time now);
    void on_drep(const cm_mad& mad, sim_time now);
    void on_sidr_req(std::size_t port, const nic::gsi_datagram& d, const cm_mad& mad, sim_time now);
    void on_sidr_rep(const cm_mad& mad, sim_time now);
    void on_timeout(cm_id& id, sim_time now);

    void transition(cm_id& id, cm_state next, const char* why);
    // Sends `mad` from the id's port; `retry` keeps it for retransmission until `timeout`.
    void send(cm_id& id, const cm_mad& mad, sim_time now, sim_time timeout = 0, int retries = 0);
    void send_to(std::size_t port, const wire::ipv6_address& destination, std::uint32_t qpn, const cm_mad& mad);
    void send_rej(std::size_t port, const wire::ipv6_address& destination, std::uint32_t qpn,
                  std::uint32_t local_comm_id, std::uint32_t remote_comm_id, std::uint64_t tid, message_kind rejected,
                  reject_reason reason, const std::uint8_t* private_data = nullptr, std::size_t length = 0);
    void event(cm_id& id, std::uint32_t type, int status, const std::uint8_t* private_data = nullptr,
               std::size_t private_length = 0, std::uint32_t listen_id = 0,
               const cm_protocol::conn_params* conn = nullptr, const cm_protocol::ud_params* ud = nullptr);
    cm_id* find(std::uint32_t handle);
    cm_id* find_by_comm_id(std::uint32_t comm_id);
    cm_id* find_listener(std::size_t port, std::uint16_t port_space, std::uint16_t port_number, std::uint32_t ipv4);
    std::optional<std::size_t> port_for_source(const std::string& host, std::uint32_t destination) const;
    std::optional<std::size_t> port_of_address(const std::string& host, std::uint32_t ipv4) const;
    std::optional<std::size_t> owner_of_address(std::uint32_t ipv4) const;
    bool port_in_use(std::uint16_t port_space, std::uint16_t port, std::uint32_t ipv4, const cm_id* except) const;
    std::uint16_t ephemeral_port(std::uint16_t port_space, std::uint32_t ipv4);
    std::uint32_t random24() { return static_cast<std::uint32_t>(_random()) & 0xffffff; }

    std::vector<local_port> _ports;
    sinks _out;
    cm_timing _timing;
    std::mt19937_64 _random;
    std::map<session_id, session_state> _sessions;
    std::map<std::uint32_t, std::unique_ptr<cm_id>> _ids;
    std::uint32_t _next_handle = 1;
    std::uint32_t _next_comm_id;
    cm_counters _counters;
};

} // namespace rocefab::cm
