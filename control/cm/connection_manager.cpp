#include "control/cm/connection_manager.hpp"

#include "dataplane/log.hpp"

#include "nic_emu/rdmacm/event_names.hpp"

#include <rdma/rdma_cma.h>

#include <algorithm>
#include <arpa/inet.h>
#include <cerrno>
#include <cstring>

namespace rocefab::cm {

const char* state_name(cm_state s) {
    switch (s) {
#define ROCEFAB_CM_STATE_NAME(name)                                                                                    \
    case cm_state::name: return #name;
        ROCEFAB_CM_STATES(ROCEFAB_CM_STATE_NAME)
#undef ROCEFAB_CM_STATE_NAME
    }
    return "?";
}

// The CMA's limits on a REQ's and REP's private data for IP services (rdma_cma.h).
inline constexpr std::size_t req_user_private = 92 - sizeof(cma_header); // 56
inline constexpr std::size_t sidr_req_user_private = 216 - sizeof(cma_header);
// CMA_CM_MRA_SETTING's service timeout: 4.096 us * 2^24, about 69 s.
inline constexpr std::uint8_t mra_service_timeout = 24;

struct connection_manager::cm_id {
    std::uint32_t handle = 0;
    session_id session = 0;
    std::uint16_t port_space = RDMA_PS_TCP;
    ibv_qp_type qp_type = IBV_QPT_RC;
    cm_state state = cm_state::idle;
    std::optional<std::size_t> port;                 // the local NIC, once bound to an address or resolved
    std::uint32_t source_ip = 0, destination_ip = 0; // host order; 0: wildcard / none
    std::uint16_t source_port = 0, destination_port = 0;
    bool bound = false, route_resolved = false, reuse_address = false, afonly = false;
    wire::ipv6_address dgid;
    std::uint8_t tos = 0;
    bool tos_set = false;
    std::uint8_t ack_timeout = 0; // rdma_set_option(RDMA_OPTION_ID_ACK_TIMEOUT); 0: the CM's
    // Connection (IBA 12.6): ours and the peer's.
    std::uint32_t local_comm_id = 0, remote_comm_id = 0;
    std::uint64_t transaction_id = 0;
    std::uint64_t remote_ca_guid = 0;
    std::uint32_t local_qpn = 0, remote_qpn = 0, local_psn = 0, remote_psn = 0;
    std::uint8_t responder_resources = 0, initiator_depth = 0, retry_count = 7, rnr_retry_count = 7;
    bool flow_control = true, srq = false;
    std::uint8_t path_mtu = IBV_MTU_1024;
    std::uint32_t qkey = RDMA_UDP_QKEY, remote_qkey = 0;
    std::uint32_t listener = 0;
    int backlog = 0;
    // The MAD being retried, and when the next try (or the failure) is due.
    std::optional<cm_mad> outstanding;
    // What answers a duplicate of the peer's last message (the MRA of a REQ): sent again as is.
    std::optional<cm_mad> last_reply;
    sim_time deadline = never;
    sim_time retry_interval = 0;
    int retries_left = 0;
    std::size_t peer_port_hint = 0;
};

connection_manager::connection_manager(std::vector<local_port> ports, sinks out, cm_timing timing, std::uint64_t seed)
    : _ports(std::move(ports)), _out(std::move(out)), _timing(timing), _random(seed),
      _next_comm_id(static_cast<std::uint32_t>(_random()) | 1) {}

connection_manager::~connection_manager() = default;

std::uint64_t connection_manager::open_session(session_id session, owner who) {
    session_state& s = _sessions[session];
    s.who = std::move(who);
    s.token = _random() | 1;
    return s.token;
}

void connection_manager::close_session(session_id session, sim_time now) {
    std::vector<std::uint32_t> handles;
    for (auto& [h, id] : _ids)
        if (id->session == session) handles.push_back(h);
    for (auto h : handles)
        if (auto* id = find(h)) destroy(*id, now);
    _sessions.erase(session);
}

std::optional<cm_state> connection_manager::state_of(std::uint32_t handle) const {
    auto it = _ids.find(handle);
    if (it == _ids.end()) return std::nullopt;
    return it->second->state;
}

std::vector<connection_manager::id_summary> connection_manager::list_ids() const {
    std::vector<id_summary> out;
    out.reserve(_ids.size());
    for (const auto& [handle, id] : _ids) {
        id_summary s;
        if (auto it = _sessions.find(id->session); it != _sessions.end()) {
            s.host = it->second.who.host;
            s.uid = it->second.who.uid;
            s.pid = it->second.who.pid;
        }
        if (id->port) s.device = _ports[*id->port].device;
        s.state = id->state;
        s.port_space = id->port_space;
        s.source_ip = id->source_ip;
        s.destination_ip = id->destination_ip;
        s.source_port = id->source_port;
        s.destination_port = id->destination_port;
        s.qpn = id->local_qpn;
        out.push_back(std::move(s));
    }
    return out;
}

connection_manager::cm_id& connection_manager::add_id(std::unique_ptr<cm_id> id) {
    cm_id& made = *id;
    ++_sessions[made.session].ids;
    _ids[made.handle] = std::move(id);
    return made;
}

connection_manager::cm_id* connection_manager::find(std::uint32_t handle) {
    auto it = _ids.find(handle);
    return it == _ids.end() ? nullptr : it->second.get();
}

connection_manager::cm_id* connection_manager::find_by_comm_id(std::uint32_t comm_id) {
    for (auto& [h, id] : _ids)
        if (id->local_comm_id == comm_id && comm_id != 0) return id.get();
    return nullptr;
}

void connection_manager::transition(cm_id& id, cm_state next, const char* why) {
    log::control().debug("cm id {}: {} -> {} ({})", id.handle, state_name(id.state), state_name(next), why);
    id.state = next;
}

// ---- addresses ------------------------------------------------------------------------------------

namespace {
bool ipv4_of(const sockaddr_storage& s, std::uint32_t& ip, std::uint16_t& port) {
    if (s.ss_family == AF_INET) {
        const auto& a = reinterpret_cast<const sockaddr_in&>(s);
        ip = ntohl(a.sin_addr.s_addr);
        port = ntohs(a.sin_port);
        return true;
    }
    if (s.ss_family == AF_INET6) { // a v4-mapped IPv6 address names the same interface
        const auto& a = reinterpret_cast<const sockaddr_in6&>(s);
        static const std::uint8_t prefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
        const bool any = IN6_IS_ADDR_UNSPECIFIED(&a.sin6_addr);
        if (!any && std::memcmp(a.sin6_addr.s6_addr, prefix, 12) != 0) return false;
        std::uint32_t v4;
        std::memcpy(&v4, a.sin6_addr.s6_addr + 12, 4);
        ip = any ? 0 : ntohl(v4);
        port = ntohs(a.sin6_port);
        return true;
    }
    return false;
}
void set_sockaddr(sockaddr_storage& s, std::uint32_t ip, std::uint16_t port) {
    std::memset(&s, 0, sizeof s);
    auto& a = reinterpret_cast<sockaddr_in&>(s);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(ip);
    a.sin_port = htons(port);
}
bool same_subnet(std::uint32_t a, std::uint32_t b, std::uint8_t prefix) {
    const std::uint32_t mask = prefix == 0 ? 0 : ~0u << (32 - prefix);
    return (a & mask) == (b & mask);
}
} // namespace

std::optional<std::size_t> connection_manager::port_of_address(const std::string& host, std::uint32_t ipv4) const {
    for (std::size_t i = 0; i < _ports.size(); ++i)
        if (_ports[i].host == host && _ports[i].ipv4 == ipv4) return i;
    return std::nullopt;
}

std::optional<std::size_t> connection_manager::owner_of_address(std::uint32_t ipv4) const {
    for (std::size_t i = 0; i < _ports.size(); ++i)
        if (_ports[i].ipv4 == ipv4) return i;
    return std::nullopt;
}

// Source selection as the kernel's: the NIC on the destination's subnet, else the host's first.
std::optional<std::size_t> connection_manager::port_for_source(const std::string& host,
                                                               std::uint32_t destination) const {
    std::optional<std::size_t> first;
    for (std::size_t i = 0; i < _ports.size(); ++i) {
        if (_ports[i].host != host) continue;
        if (!first) first = i;
        if (same_subnet(_ports[i].ipv4, destination, _ports[i].prefix_length)) return i;
    }
    return first;
}

bool connection_manager::port_in_use(std::uint16_t port_space, std::uint16_t port, std::uint32_t ipv4,
                                     const cm_id* except) const {
    for (const auto& [h, id] : _ids) {
        if (id.get() == except || !id->bound || id->port_space != port_space || id->source_port != port) continue;
        // Connected ids made by a listener share its port (the kernel's cma_ps binds them too).
        if (id->listener) continue;
        if (id->source_ip == 0 || ipv4 == 0 || id->source_ip == ipv4) {
            if (except && except->reuse_address && id->reuse_address && id->state != cm_state::listening) continue;
            return true;
        }
    }
    return false;
}

std::uint16_t connection_manager::ephemeral_port(std::uint16_t port_space, std::uint32_t ipv4) {
    // Linux's ip_local_port_range: 32768-60999.
    for (int tries = 0; tries < 28232; ++tries) {
        const auto port = static_cast<std::uint16_t>(32768 + _random() % 28232);
        if (!port_in_use(port_space, port, ipv4, nullptr)) return port;
    }
    return 0;
}

int connection_manager::bind(cm_id& id, const sockaddr_storage& address) {
    if (id.state != cm_state::idle) return EINVAL;
    std::uint32_t ip;
    std::uint16_t port;
    if (!ipv4_of(address, ip, port)) return EAFNOSUPPORT;
    const std::string& host = _sessions[id.session].who.host;
    std::optional<std::size_t> local;
    if ((ip >> 24) == 127) {
        // A loopback address has no RDMA device behind it: the id is bound, to no device.
        // libfabric's verbs provider relies on it: it binds a passive id to "localhost" and, finding
        // no device there (vrb_fill_addr), gives its listener the devices' own addresses.
    } else if (ip != 0) {
        local = port_of_address(host, ip);
        if (!local) return EADDRNOTAVAIL;
    }
    if (port == 0) {
        port = ephemeral_port(id.port_space, ip);
        if (port == 0) return EADDRINUSE;
    } else if (port_in_use(id.port_space, port, ip, &id)) {
        return EADDRINUSE;
    }
    id.port = local;
    id.source_ip = ip;
    id.source_port = port;
    id.bound = true;
    transition(id, cm_state::address_bound, "rdma_bind_addr");
    return 0;
}

int connection_manager::resolve_addr(cm_id& id, const cm_protocol::request& r, sim_time now) {
    std::uint32_t dst_ip, src_ip = 0;
    std::uint16_t dst_port, src_port = 0;
    if (!ipv4_of(r.destination, dst_ip, dst_port)) return EAFNOSUPPORT;
    if (r.source.ss_family != AF_UNSPEC && !ipv4_of(r.source, src_ip, src_port)) return EAFNOSUPPORT;
    if (id.state == cm_state::idle) {
        sockaddr_storage bind_to;
        set_sockaddr(bind_to, src_ip, src_port);
        if (const int e = bind(id, bind_to)) return e;
    }
    if (id.state != cm_state::address_bound) return EINVAL;
    const std::string& host = _sessions[id.session].who.host;
    if (id.source_ip == 0) {
        const auto local = port_for_source(host, dst_ip);
        if (!local) return EADDRNOTAVAIL; // a host with no NIC
        id.port = local;
        id.source_ip = _ports[*local].ipv4;
    }
    id.destination_ip = dst_ip;
    id.destination_port = dst_port;
    id.dgid = wire::ipv6_address::v4_mapped(dst_ip);
    const local_port& me = _ports[*id.port];
    transition(id, cm_state::address_query, "rdma_resolve_addr");
    // The neighbour: a NIC of the fabric answers ARP; on the local subnet nobody else does, so
    // the query times out (ADDR_ERROR, -ETIMEDOUT); off the subnet the gateway (the switch)
    // answers for anything.
    const bool on_subnet = same_subnet(me.ipv4, dst_ip, me.prefix_length);
    if (owner_of_address(dst_ip) || !on_subnet || dst_ip == 0) {
        id.deadline = now; // resolved at the next advance(): the event comes after the reply
    } else {
        const sim_time timeout = r.timeout_ms > 0 ? milliseconds(r.timeout_ms) : _timing.max_arp_time;
        id.deadline = now + std::min(timeout, _timing.max_arp_time);
    }
    return 0;
}

int connection_manager::resolve_route(cm_id& id) {
    if (id.state != cm_state::address_resolved) return EINVAL;
    id.route_resolved = true;
    id.path_mtu = _ports[*id.port].active_mtu;
    const auto peer = owner_of_address(id.destination_ip);
    if (peer) id.path_mtu = std::min(id.path_mtu, _ports[*peer].active_mtu);
    transition(id, cm_state::route_resolved, "rdma_resolve_route");
    event(id, RDMA_CM_EVENT_ROUTE_RESOLVED, 0);
    return 0;
}

int connection_manager::listen(cm_id& id, int backlog) {
    if (id.state == cm_state::listening) {
        id.backlog = backlog;
        return 0;
    }
    if (id.state == cm_state::idle) {
        sockaddr_storage any;
        set_sockaddr(any, 0, 0);
        if (const int e = bind(id, any)) return e;
    }
    if (id.state != cm_state::address_bound) return EINVAL;
    for (const auto& [h, other] : _ids)
        if (other.get() != &id && other->state == cm_state::listening && other->port_space == id.port_space &&
            other->source_port == id.source_port &&
            (other->source_ip == 0 || id.source_ip == 0 || other->source_ip == id.source_ip))
            return EADDRINUSE;
    id.backlog = backlog;
    transition(id, cm_state::listening, "rdma_listen");
    return 0;
}

void connection_manager::fill_route(const cm_id& id, cm_protocol::route_info& route) const {
    std::memset(&route, 0, sizeof route);
    set_sockaddr(route.source, id.source_ip, id.source_port);
    if (id.destination_ip || id.destination_port)
        set_sockaddr(route.destination, id.destination_ip, id.destination_port);
    else
        route.destination.ss_family = AF_INET;
    route.port_num = 1;
    route.pkey = 0xffff;
    route.path_mtu = id.path_mtu;
    route.hop_limit = 64;
    route.traffic_class = id.tos;
    if (id.port) {
        const local_port& me = _ports[*id.port];
        std::memcpy(route.sgid, me.gid.bytes.data(), 16);
        route.node_guid = htobe64(me.node_guid);
    }
    std::memcpy(route.dgid, id.dgid.bytes.data(), 16);
    route.addr_resolved = id.port && id.state != cm_state::address_bound && id.state != cm_state::address_query &&
                          id.state != cm_state::listening && id.state != cm_state::idle;
    route.route_resolved = id.route_resolved;
}

// ---- connecting -----------------------------------------------------------------------------------

int connection_manager::connect(cm_id& id, const cm_protocol::request& r, sim_time now) {
    if (id.state != cm_state::route_resolved) return EINVAL;
    const cm_protocol::conn_params& c = r.conn;
    const std::size_t limit = id.qp_type == IBV_QPT_UD ? sidr_req_user_private : req_user_private;
    if (c.private_data_len > limit) return EINVAL;
    const local_port& me = _ports[*id.port];
    id.local_comm_id = _next_comm_id++;
    if (id.local_comm_id == 0) id.local_comm_id = _next_comm_id++;
    id.transaction_id = (static_cast<std::uint64_t>(id.local_comm_id) << 32) | random24();

    cma_header h{};
    h.cma_version = 0;
    h.ip_version = 4 << 4;
    h.source_port.store(id.source_port);
    std::uint32_t be;
    be = htonl(id.source_ip);
    std::memcpy(h.source_address.data() + 12, &be, 4);
    be = htonl(id.destination_ip);
    std::memcpy(h.destination_address.data() + 12, &be, 4);
    const std::uint64_t service = ip_service_id(id.port_space, id.destination_port);
    // Per try: twice the packet life plus the peer's response time (cm.c, cm_send_req).
    const sim_time timeout = 2 * cm_time(_timing.packet_life_time) + cm_time(_timing.cm_response_timeout);
    cm_mad mad;
    if (id.qp_type == IBV_QPT_UD) { // RDMA_PS_UDP and RDMA_PS_IPOIB: SIDR (cma.c cma_resolve_ib_udp)
        set_header(mad, attribute::sidr_req, id.transaction_id);
        auto& m = mad.as<sidr_req_msg>();
        m.request_id.store(id.local_comm_id);
        m.pkey.store(0xffff);
        m.service_id.store(service);
        std::memcpy(m.private_data.data(), &h, sizeof h);
        std::memcpy(m.private_data.data() + sizeof h, c.private_data, c.private_data_len);
        transition(id, cm_state::sidr_req_sent, "rdma_connect (UD)");
        send(id, mad, now, timeout, _timing.max_cm_retries);
        return 0;
    }
    id.local_qpn = c.qp_num & 0xffffff;
    id.local_psn = random24();
    id.responder_resources = std::min(c.responder_resources, me.max_rd_atomic);
    id.initiator_depth = std::min(c.initiator_depth, me.max_rd_atomic);
    id.retry_count = c.retry_count & 7;
    id.rnr_retry_count = c.rnr_retry_count & 7;
    id.flow_control = c.flow_control;
    id.srq = c.srq;
    set_header(mad, attribute::req, id.transaction_id);
    auto& m = mad.as<req_msg>();
    m.local_comm_id.store(id.local_comm_id);
    m.service_id.store(service);
    m.local_ca_guid.store(me.node_guid);
    m.local_qkey.store(0);
    m.local_qpn_responder_resources.set(id.local_qpn, id.responder_resources);
    m.local_eecn_initiator_depth.set(0, id.initiator_depth);
    m.set_remote_timeout_transport_flow(_timing.cm_response_timeout, 0 /* RC */, id.flow_control);
    m.set_psn_timeout_retry(id.local_psn, _timing.cm_response_timeout, id.retry_count);
    m.pkey.store(0xffff);
    m.set_mtu_rnr(id.path_mtu, id.rnr_retry_count);
    m.set_retries_srq(_timing.max_cm_retries, id.srq);
    m.primary_local_lid.store(0xffff); // RoCE: permissive LIDs, as the kernel's cm_format_req
    m.primary_remote_lid.store(0xffff);
    std::memcpy(m.primary_local_gid.data(), me.gid.bytes.data(), 16);
    std::memcpy(m.primary_remote_gid.data(), id.dgid.bytes.data(), 16);
    m.set_primary_flow_label_rate(0, 0);
    m.primary_traffic_class = id.tos;
    m.primary_hop_limit = 64;
    m.primary_sl_subnet_local = 0x08;
    const std::uint8_t ack = id.ack_timeout ? id.ack_timeout : static_cast<std::uint8_t>(_timing.packet_life_time + 1);
    m.primary_local_ack_timeout = static_cast<std::uint8_t>(ack << 3);
    std::memcpy(m.private_data.data(), &h, sizeof h);
    std::memcpy(m.private_data.data() + sizeof h, c.private_data, c.private_data_len);
    transition(id, cm_state::req_sent, "rdma_connect");
    send(id, mad, now, timeout, _timing.max_cm_retries);
    return 0;
}

int connection_manager::accept(cm_id& id, const cm_protocol::request& r, sim_time now) {
    const cm_protocol::conn_params& c = r.conn;
    if (id.state == cm_state::rep_received) { // the active side, after CONNECT_RESPONSE: the RTU
        cm_mad mad;
        set_header(mad, attribute::rtu, id.transaction_id);
        auto& m = mad.as<rtu_msg>();
        m.local_comm_id.store(id.local_comm_id);
        m.remote_comm_id.store(id.remote_comm_id);
        send(id, mad, now);
        id.outstanding.reset();
        id.deadline = never;
        transition(id, cm_state::established, "RTU sent");
        ++_counters.connections_established;
        return 0;
    }
    if (id.state == cm_state::sidr_req_received) {
        if (c.private_data_len > 136) return EINVAL;
        cm_mad mad;
        set_header(mad, attribute::sidr_rep, id.transaction_id);
        auto& m = mad.as<sidr_rep_msg>();
        m.request_id.store(id.remote_comm_id);
        m.status = static_cast<std::uint8_t>(sidr_status::valid);
        m.qpn.set(c.qp_num, 0);
        m.service_id.store(ip_service_id(id.port_space, id.source_port));
        m.qkey.store(c.qkey ? c.qkey : id.qkey);
        std::memcpy(m.private_data.data(), c.private_data, c.private_data_len);
        send(id, mad, now);
        transition(id, cm_state::ud_ready, "SIDR_REP sent");
        return 0;
    }
    if (id.state != cm_state::req_received) return EINVAL;
    if (c.private_data_len > 196) return EINVAL;
    const local_port& me = _ports[*id.port];
    id.local_qpn = c.qp_num & 0xffffff;
    // The PSN was chosen when the REQ came: the library moved its QP to RTS with it before this.
    id.responder_resources = std::min(c.responder_resources, me.max_rd_atomic);
    id.initiator_depth = std::min(c.initiator_depth, me.max_rd_atomic);
    if (c.rnr_retry_count) id.rnr_retry_count = c.rnr_retry_count & 7;
    id.srq = c.srq;
    cm_mad mad;
    set_header(mad, attribute::rep, id.transaction_id);
    auto& m = mad.as<rep_msg>();
    m.local_comm_id.store(id.local_comm_id);
    m.remote_comm_id.store(id.remote_comm_id);
    m.local_qpn.set(id.local_qpn, 0);
    m.starting_psn.set(id.local_psn, 0);
    m.responder_resources = id.responder_resources;
    m.initiator_depth = id.initiator_depth;
    m.ack_delay_failover_flow = static_cast<std::uint8_t>(15 << 3 | (c.flow_control ? 1 : 0));
    m.set_rnr_retry_srq(id.rnr_retry_count, id.srq);
    m.local_ca_guid.store(me.node_guid);
    std::memcpy(m.private_data.data(), c.private_data, c.private_data_len);
    transition(id, cm_state::rep_sent, "rdma_accept");
    const sim_time timeout = 2 * cm_time(_timing.packet_life_time) + cm_time(_timing.cm_response_timeout);
    send(id, mad, now, timeout, _timing.max_cm_retries);
    return 0;
}

int connection_manager::reject(cm_id& id, const cm_protocol::request& r, sim_time now) {
    const cm_protocol::conn_params& c = r.conn;
    if (id.state == cm_state::sidr_req_received) {
        cm_mad mad;
        set_header(mad, attribute::sidr_rep, id.transaction_id);
        auto& m = mad.as<sidr_rep_msg>();
        m.request_id.store(id.remote_comm_id);
        m.status = static_cast<std::uint8_t>(sidr_status::rejected);
        std::memcpy(m.private_data.data(), c.private_data, std::min<std::size_t>(c.private_data_len, 136));
        send(id, mad, now);
        transition(id, cm_state::rejected, "rdma_reject (UD)");
        return 0;
    }
    if (id.state != cm_state::req_received && id.state != cm_state::rep_received) return EINVAL;
    if (c.private_data_len > 148) return EINVAL;
    const message_kind kind = id.state == cm_state::req_received ? message_kind::req : message_kind::rep;
    send_rej(*id.port, id.dgid, 1, id.local_comm_id, id.remote_comm_id, id.transaction_id, kind,
             reject_reason::consumer_defined, c.private_data, c.private_data_len);
    id.outstanding.reset();
    id.deadline = never;
    transition(id, cm_state::rejected, "rdma_reject");
    return 0;
}

int connection_manager::disconnect(cm_id& id, const cm_protocol::request&, sim_time now) {
    switch (id.state) {
    case cm_state::established:
    case cm_state::rep_sent: { // the REP's RTU may be lost; the peer may already use the QP
        cm_mad mad;
        set_header(mad, attribute::dreq, (static_cast<std::uint64_t>(id.local_comm_id) << 32) | random24());
        auto& m = mad.as<dreq_msg>();
        m.local_comm_id.store(id.local_comm_id);
        m.remote_comm_id.store(id.remote_comm_id);
        m.remote_qpn.set(id.remote_qpn, 0);
        transition(id, cm_state::dreq_sent, "rdma_disconnect");
        send(id, mad, now, 2 * cm_time(_timing.packet_life_time) + cm_time(_timing.cm_response_timeout),
             _timing.max_cm_retries);
        return 0;
    }
    case cm_state::dreq_received: {
        cm_mad mad;
        set_header(mad, attribute::drep, id.transaction_id);
        auto& m = mad.as<drep_msg>();
        m.local_comm_id.store(id.local_comm_id);
        m.remote_comm_id.store(id.remote_comm_id);
        send(id, mad, now);
        transition(id, cm_state::timewait, "DREP sent");
        return 0;
    }
    case cm_state::req_sent:
    case cm_state::rep_received:
        // The kernel's cma: a disconnect before the connection is up rejects it.
        send_rej(*id.port, id.dgid, 1, id.local_comm_id, id.remote_comm_id, id.transaction_id,
                 id.state == cm_state::req_sent ? message_kind::other : message_kind::rep, reject_reason::timeout);
        id.outstanding.reset();
        id.deadline = never;
        transition(id, cm_state::timewait, "rdma_disconnect before established");
        event(id, RDMA_CM_EVENT_DISCONNECTED, 0);
        return 0;
    case cm_state::dreq_sent:
    case cm_state::timewait: return 0;
    default: return EINVAL;
    }
}

int connection_manager::init_qp_attr(const cm_id& id, int state, ibv_qp_attr& attr, int& mask) const {
    std::memset(&attr, 0, sizeof attr);
    mask = 0;
    if (!id.port) return EINVAL;
    const bool ud = id.port_space == RDMA_PS_UDP || id.qp_type == IBV_QPT_UD;
    switch (state) {
    case IBV_QPS_INIT:
        attr.qp_state = IBV_QPS_INIT;
        attr.pkey_index = 0;
        attr.port_num = 1;
        mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT;
        if (ud) {
            attr.qkey = id.qkey;
            mask |= IBV_QP_QKEY;
        } else {
            // cm.c cm_init_qp_init_attr: remote write always, read and atomics with responder resources.
            attr.qp_access_flags = IBV_ACCESS_REMOTE_WRITE;
            if (id.responder_resources || id.state == cm_state::idle || id.state == cm_state::route_resolved ||
                id.state == cm_state::req_received || id.state == cm_state::address_resolved)
                attr.qp_access_flags |= IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
            mask |= IBV_QP_ACCESS_FLAGS;
        }
        return 0;
    case IBV_QPS_RTR:
        attr.qp_state = IBV_QPS_RTR;
        mask = IBV_QP_STATE;
        if (ud) return 0;
        if (id.state != cm_state::req_received && id.state != cm_state::rep_received &&
            id.state != cm_state::rep_sent && id.state != cm_state::established)
            return EINVAL;
        attr.path_mtu = static_cast<ibv_mtu>(id.path_mtu);
        attr.dest_qp_num = id.remote_qpn;
        attr.rq_psn = id.remote_psn;
        attr.max_dest_rd_atomic = id.responder_resources;
        attr.min_rnr_timer = 12; // the kernel cm's default (0.64 ms)
        attr.ah_attr.is_global = 1;
        attr.ah_attr.port_num = 1;
        std::memcpy(attr.ah_attr.grh.dgid.raw, id.dgid.bytes.data(), 16);
        attr.ah_attr.grh.sgid_index = 1;
        attr.ah_attr.grh.hop_limit = 64;
        attr.ah_attr.grh.traffic_class = id.tos;
        mask |= IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
                IBV_QP_MIN_RNR_TIMER;
        return 0;
    case IBV_QPS_RTS:
        attr.qp_state = IBV_QPS_RTS;
        mask = IBV_QP_STATE;
        if (ud) {
            attr.sq_psn = 0;
            mask |= IBV_QP_SQ_PSN;
            return 0;
        }
        if (id.state != cm_state::req_received && id.state != cm_state::rep_received &&
            id.state != cm_state::rep_sent && id.state != cm_state::established)
            return EINVAL;
        attr.sq_psn = id.local_psn;
        attr.timeout = id.ack_timeout ? id.ack_timeout : static_cast<std::uint8_t>(_timing.packet_life_time + 2);
        attr.retry_cnt = id.retry_count;
        attr.rnr_retry = id.rnr_retry_count;
        attr.max_rd_atomic = id.initiator_depth;
        mask |= IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC;
        return 0;
    default: return EINVAL;
    }
}

// ---- events and MADs ------------------------------------------------------------------------------

void connection_manager::event(cm_id& id, std::uint32_t type, int status, const std::uint8_t* private_data,
                               std::size_t private_length, std::uint32_t listen_id,
                               const cm_protocol::conn_params* conn, const cm_protocol::ud_params* ud) {
    cm_protocol::event e;
    std::memset(&e, 0, sizeof e);
    e.magic_number = cm_protocol::magic;
    e.type = type;
    e.status = status;
    e.id = id.handle;
    e.listen_id = listen_id;
    if (conn) e.conn = *conn;
    if (private_data && private_length) {
        const std::size_t n = std::min(private_length, sizeof e.conn.private_data);
        std::memcpy(e.conn.private_data, private_data, n);
        e.conn.private_data_len = static_cast<std::uint8_t>(n);
    }
    if (ud) e.ud = *ud;
    fill_route(id, e.route);
    log::control().debug("cm id {}: event {} status {}", id.handle, cm_protocol::event_name(type), status);
    if (_out.deliver) _out.deliver(id.session, e);
}

void connection_manager::send_to(std::size_t port, const wire::ipv6_address& destination, std::uint32_t qpn,
                                 const cm_mad& mad) {
    std::array<std::uint8_t, mad_size> bytes;
    std::memcpy(bytes.data(), &mad, mad_size);
    ++_counters.mads_sent;
    if (_out.send_mad) _out.send_mad(port, destination, qpn, bytes);
}

void connection_manager::send(cm_id& id, const cm_mad& mad, sim_time now, sim_time timeout, int retries) {
    send_to(*id.port, id.dgid, 1, mad);
    if (timeout > 0) {
        id.outstanding = mad;
        id.retry_interval = timeout;
        id.retries_left = retries;
        id.deadline = now + timeout;
    }
}

void connection_manager::send_rej(std::size_t port, const wire::ipv6_address& destination, std::uint32_t qpn,
                                  std::uint32_t local_comm_id, std::uint32_t remote_comm_id, std::uint64_t tid,
                                  message_kind rejected, reject_reason reason, const std::uint8_t* private_data,
                                  std::size_t length) {
    cm_mad mad;
    set_header(mad, attribute::rej, tid);
    auto& m = mad.as<rej_msg>();
    m.local_comm_id.store(local_comm_id);
    m.remote_comm_id.store(remote_comm_id);
    m.set_rejected(static_cast<std::uint8_t>(rejected));
    m.reason.store(static_cast<std::uint16_t>(reason));
    if (private_data && length)
        std::memcpy(m.private_data.data(), private_data, std::min(length, m.private_data.size()));
    send_to(port, destination, qpn, mad);
}

connection_manager::cm_id* connection_manager::find_listener(std::size_t port, std::uint16_t port_space,
                                                             std::uint16_t port_number, std::uint32_t ipv4) {
    cm_id* wildcard = nullptr;
    for (auto& [h, id] : _ids) {
        if (id->state != cm_state::listening || id->port_space != port_space || id->source_port != port_number)
            continue;
        if (_sessions[id->session].who.host != _ports[port].host) continue;
        if (id->source_ip == ipv4 && ipv4 == _ports[port].ipv4) return id.get();
        if (id->source_ip == 0) wildcard = id.get();
    }
    return wildcard;
}

void connection_manager::receive(std::size_t port, const nic::gsi_datagram& d, sim_time now) {
    if (port >= _ports.size()) return;
    cm_mad mad;
    std::memcpy(&mad, d.mad.data(), mad_size);
    const auto kind = classify(mad);
    if (!kind || d.qkey != nic::gsi_qkey) {
        ++_counters.mads_malformed;
        return;
    }
    ++_counters.mads_received;
    log::control().debug("cm: {} from {} on {}/{}", attribute_name(*kind), d.source_gid.to_string(), _ports[port].host,
                         _ports[port].device);
    switch (*kind) {
    case attribute::req: return on_req(port, d, mad, now);
    case attribute::rep: return on_rep(mad, now);
    case attribute::rtu: return on_rtu(mad, now);
    case attribute::rej: return on_rej(mad, now);
    case attribute::mra: return on_mra(mad, now);
    case attribute::dreq: return on_dreq(port, d, mad, now);
    case attribute::drep: return on_drep(mad, now);
    case attribute::sidr_req: return on_sidr_req(port, d, mad, now);
    case attribute::sidr_rep: return on_sidr_rep(mad, now);
    default: ++_counters.mads_malformed; return;
    }
}

void connection_manager::on_req(std::size_t port, const nic::gsi_datagram& d, const cm_mad& mad, sim_time now) {
    const auto& m = mad.as<req_msg>();
    const std::uint32_t remote_comm = m.local_comm_id.load();
    const std::uint64_t remote_guid = m.local_ca_guid.load();
    // A retried REQ (IBA 12.9.8.1): the REP again if it was sent, else nothing.
    for (auto& [h, id] : _ids) {
        if (id->remote_comm_id == remote_comm && id->remote_ca_guid == remote_guid && id->listener) {
            if (id->state == cm_state::rep_sent && id->outstanding)
                send_to(*id->port, id->dgid, 1, *id->outstanding);
            else if (id->state == cm_state::req_received && id->last_reply)
                send_to(*id->port, id->dgid, 1, *id->last_reply);
            return;
        }
    }
    const std::uint64_t service = m.service_id.load();
    const auto reject_now = [&](reject_reason reason) {
        send_rej(port, d.source_gid, d.source_qpn, 0, remote_comm, mad.header.transaction_id.load(), message_kind::req,
                 reason);
    };
    cma_header h;
    std::memcpy(&h, m.private_data.data(), sizeof h);
    if ((service >> 24) != 1 || h.cma_version != 0 || (h.ip_version >> 4) != 4 || m.transport_service_type() != 0) {
        // Not an IP service this CM knows: nobody listens for it (cm.c: cm_match_req).
        ++_counters.req_rejected_no_listener;
        return reject_now(reject_reason::invalid_service_id);
    }
    std::uint32_t dst, src;
    std::memcpy(&dst, h.destination_address.data() + 12, 4);
    std::memcpy(&src, h.source_address.data() + 12, 4);
    dst = ntohl(dst);
    src = ntohl(src);
    const auto port_space = static_cast<std::uint16_t>((service >> 16) & 0xffff);
    const auto port_number = static_cast<std::uint16_t>(service & 0xffff);
    cm_id* listener = dst == _ports[port].ipv4 ? find_listener(port, port_space, port_number, dst) : nullptr;
    if (!listener) {
        ++_counters.req_rejected_no_listener;
        return reject_now(reject_reason::invalid_service_id);
    }
    if (_ids.size() >= 65536 || _sessions[listener->session].ids >= max_ids_per_channel)
        return reject_now(reject_reason::no_resources);
    auto id = std::make_unique<cm_id>();
    id->handle = _next_handle++;
    id->session = listener->session;
    id->port_space = port_space;
    id->qp_type = IBV_QPT_RC;
    id->port = port;
    id->source_ip = dst;
    id->source_port = port_number;
    id->destination_ip = src;
    id->destination_port = h.source_port.load();
    id->bound = true;
    id->route_resolved = true;
    id->listener = listener->handle;
    id->tos = listener->tos;
    id->dgid = d.source_gid;
    id->local_comm_id = _next_comm_id++;
    id->remote_comm_id = remote_comm;
    id->remote_ca_guid = remote_guid;
    id->transaction_id = mad.header.transaction_id.load();
    id->remote_qpn = m.local_qpn_responder_resources.high();
    id->remote_psn = m.starting_psn();
    // Ours now, so that rdma_accept can take the QP to RTS before the REP tells the peer
    // (librdmacm's order): the peer may send as soon as it has the REP.
    id->local_psn = random24();
    id->path_mtu =
        std::min<std::uint8_t>(m.path_mtu() ? m.path_mtu() : std::uint8_t{IBV_MTU_1024}, _ports[port].active_mtu);
    id->retry_count = m.retry_count();
    id->rnr_retry_count = m.rnr_retry_count();
    id->flow_control = m.end_to_end_flow_control();
    id->srq = m.srq();
    // From the receiver's side, the peer's initiator depth is what it asks us to answer.
    id->responder_resources = m.local_eecn_initiator_depth.low();
    id->initiator_depth = m.local_qpn_responder_resources.low();
    id->state = cm_state::req_received;
    cm_protocol::conn_params conn{};
    conn.responder_resources = id->responder_resources;
    conn.initiator_depth = id->initiator_depth;
    conn.flow_control = id->flow_control;
    conn.retry_count = id->retry_count;
    conn.rnr_retry_count = id->rnr_retry_count;
    conn.srq = id->srq;
    conn.qp_num = id->remote_qpn;
    cm_id& made = add_id(std::move(id));
    log::control().debug("cm id {}: REQ for port {} from {} -> listener {}", made.handle, port_number,
                         d.source_gid.to_string(), listener->handle);
    event(made, RDMA_CM_EVENT_CONNECT_REQUEST, 0, m.private_data.data() + sizeof(cma_header), req_user_private,
          listener->handle, &conn);
    // cma.c cma_ib_req_handler: the program answers later, so the CM tells the peer at once to
    // wait (MRA with CMA_CM_MRA_SETTING's service timeout, 24), instead of retrying its REQ.
    cm_mad mra;
    set_header(mra, attribute::mra, made.transaction_id);
    auto& a = mra.as<mra_msg>();
    a.local_comm_id.store(made.local_comm_id);
    a.remote_comm_id.store(made.remote_comm_id);
    a.message_mraed = static_cast<std::uint8_t>(static_cast<std::uint8_t>(message_kind::req) << 6);
    a.service_timeout = static_cast<std::uint8_t>(mra_service_timeout << 3);
    made.last_reply = mra;
    send_to(port, made.dgid, 1, mra);
    (void)now;
}

void connection_manager::on_rep(const cm_mad& mad, sim_time now) {
    const auto& m = mad.as<rep_msg>();
    cm_id* id = find_by_comm_id(m.remote_comm_id.load());
    if (!id) {
        ++_counters.mads_unmatched;
        return;
    }
    if (id->state == cm_state::established && id->remote_comm_id == m.local_comm_id.load()) {
        // Our RTU was lost (IBA 12.9.8.3): the peer retries its REP; the RTU goes again.
        cm_mad rtu;
        set_header(rtu, attribute::rtu, id->transaction_id);
        rtu.as<rtu_msg>().local_comm_id.store(id->local_comm_id);
        rtu.as<rtu_msg>().remote_comm_id.store(id->remote_comm_id);
        send(*id, rtu, now);
        return;
    }
    if (id->state != cm_state::req_sent) {
        ++_counters.mads_unmatched;
        return;
    }
    id->remote_comm_id = m.local_comm_id.load();
    id->remote_qpn = m.local_qpn.high();
    id->remote_psn = m.starting_psn.high();
    id->remote_ca_guid = m.local_ca_guid.load();
    id->initiator_depth = std::min(id->initiator_depth, m.responder_resources);
    id->responder_resources = std::min(id->responder_resources, m.initiator_depth);
    id->outstanding.reset();
    id->deadline = never;
    transition(*id, cm_state::rep_received, "REP received");
    cm_protocol::conn_params conn{};
    conn.responder_resources = m.initiator_depth;
    conn.initiator_depth = m.responder_resources;
    conn.flow_control = m.end_to_end_flow_control();
    conn.rnr_retry_count = m.rnr_retry_count();
    conn.srq = m.srq();
    conn.qp_num = id->remote_qpn;
    event(*id, cm_protocol::internal_connect_response, 0, m.private_data.data(), m.private_data.size(), 0, &conn);
}

void connection_manager::on_rtu(const cm_mad& mad, sim_time) {
    const auto& m = mad.as<rtu_msg>();
    cm_id* id = find_by_comm_id(m.remote_comm_id.load());
    if (!id || id->state != cm_state::rep_sent || id->remote_comm_id != m.local_comm_id.load()) {
        ++_counters.mads_unmatched;
        return;
    }
    id->outstanding.reset();
    id->deadline = never;
    transition(*id, cm_state::established, "RTU received");
    ++_counters.connections_established;
    event(*id, RDMA_CM_EVENT_ESTABLISHED, 0);
}

void connection_manager::on_rej(const cm_mad& mad, sim_time) {
    const auto& m = mad.as<rej_msg>();
    cm_id* id = find_by_comm_id(m.remote_comm_id.load());
    if (!id) {
        // A REJ of a REQ carries no comm ID of ours when the peer had none to give (no
        // listener): it names our REQ by its transaction ID.
        const std::uint64_t tid = mad.header.transaction_id.load();
        for (auto& [h, each] : _ids)
            if (each->state == cm_state::req_sent && each->transaction_id == tid) id = each.get();
    }
    if (!id || (id->state != cm_state::req_sent && id->state != cm_state::rep_sent &&
                id->state != cm_state::rep_received && id->state != cm_state::established)) {
        ++_counters.mads_unmatched;
        return;
    }
    const auto reason = m.reason.load();
    id->outstanding.reset();
    id->deadline = never;
    const bool was_established = id->state == cm_state::established;
    transition(*id, cm_state::rejected, "REJ received");
    if (was_established) return event(*id, RDMA_CM_EVENT_DISCONNECTED, 0);
    // cma.c: a REJ with reason "timeout" or of a REP is the CM's, not a consumer's, but
    // REJECTED with the reason as status is what a program sees either way.
    event(*id, RDMA_CM_EVENT_REJECTED, reason, m.private_data.data(), m.private_data.size());
}

void connection_manager::on_mra(const cm_mad& mad, sim_time now) {
    const auto& m = mad.as<mra_msg>();
    cm_id* id = find_by_comm_id(m.remote_comm_id.load());
    const auto mraed = static_cast<message_kind>(m.message_mraed >> 6);
    if (!id || !id->outstanding ||
        !((id->state == cm_state::req_sent && mraed == message_kind::req) ||
          (id->state == cm_state::rep_sent && mraed == message_kind::rep))) {
        ++_counters.mads_unmatched;
        return;
    }
    // IBA 12.6.6 (cm.c cm_mra_handler): the peer needs longer; the next try waits its service
    // timeout plus the packet life.
    id->deadline = now + cm_time(m.service_timeout >> 3) + cm_time(_timing.packet_life_time);
    id->retry_interval = id->deadline - now;
}

void connection_manager::on_dreq(std::size_t port, const nic::gsi_datagram& d, const cm_mad& mad, sim_time now) {
    const auto& m = mad.as<dreq_msg>();
    cm_id* id = find_by_comm_id(m.remote_comm_id.load());
    const auto drep_to = [&](std::uint32_t local, std::uint32_t remote) {
        cm_mad reply;
        set_header(reply, attribute::drep, mad.header.transaction_id.load());
        reply.as<drep_msg>().local_comm_id.store(local);
        reply.as<drep_msg>().remote_comm_id.store(remote);
        send_to(port, d.source_gid, d.source_qpn, reply);
    };
    if (!id || id->remote_comm_id != m.local_comm_id.load()) {
        // cm.c: a DREQ for a connection this side no longer has still gets its DREP, so the
        // peer does not retry for nothing.
        ++_counters.mads_unmatched;
        return drep_to(m.remote_comm_id.load(), m.local_comm_id.load());
    }
    id->transaction_id = mad.header.transaction_id.load();
    switch (id->state) {
    case cm_state::established:
    case cm_state::rep_sent:
    case cm_state::rep_received:
        id->outstanding.reset();
        id->deadline = never;
        transition(*id, cm_state::dreq_received, "DREQ received");
        event(*id, RDMA_CM_EVENT_DISCONNECTED, 0);
        return;
    case cm_state::dreq_sent: // both sides disconnect at once: each answers the other
        drep_to(id->local_comm_id, id->remote_comm_id);
        return;
    case cm_state::timewait:
    case cm_state::rejected: drep_to(id->local_comm_id, id->remote_comm_id); return;
    default: ++_counters.mads_unmatched; return;
    }
    (void)now;
}

void connection_manager::on_drep(const cm_mad& mad, sim_time) {
    const auto& m = mad.as<drep_msg>();
    cm_id* id = find_by_comm_id(m.remote_comm_id.load());
    if (!id || id->state != cm_state::dreq_sent) {
        ++_counters.mads_unmatched;
        return;
    }
    id->outstanding.reset();
    id->deadline = never;
    transition(*id, cm_state::timewait, "DREP received");
    event(*id, RDMA_CM_EVENT_DISCONNECTED, 0);
}

void connection_manager::on_sidr_req(std::size_t port, const nic::gsi_datagram& d, const cm_mad& mad, sim_time) {
    const auto& m = mad.as<sidr_req_msg>();
    const std::uint64_t service = m.service_id.load();
    cma_header h;
    std::memcpy(&h, m.private_data.data(), sizeof h);
    const auto sidr_reject = [&](sidr_status status) {
        cm_mad reply;
        set_header(reply, attribute::sidr_rep, mad.header.transaction_id.load());
        reply.as<sidr_rep_msg>().request_id.store(m.request_id.load());
        reply.as<sidr_rep_msg>().status = static_cast<std::uint8_t>(status);
        reply.as<sidr_rep_msg>().service_id.store(service);
        send_to(port, d.source_gid, d.source_qpn, reply);
    };
    if ((service >> 24) != 1 || (h.ip_version >> 4) != 4) return sidr_reject(sidr_status::service_id_not_supported);
    std::uint32_t dst, src;
    std::memcpy(&dst, h.destination_address.data() + 12, 4);
    std::memcpy(&src, h.source_address.data() + 12, 4);
    dst = ntohl(dst);
    src = ntohl(src);
    const auto port_space = static_cast<std::uint16_t>((service >> 16) & 0xffff);
    const auto port_number = static_cast<std::uint16_t>(service & 0xffff);
    cm_id* listener = dst == _ports[port].ipv4 ? find_listener(port, port_space, port_number, dst) : nullptr;
    if (!listener) return sidr_reject(sidr_status::service_id_not_supported);
    if (_ids.size() >= 65536 || _sessions[listener->session].ids >= max_ids_per_channel)
        return sidr_reject(sidr_status::rejected);
    auto id = std::make_unique<cm_id>();
    id->handle = _next_handle++;
    id->session = listener->session;
    id->port_space = port_space;
    id->qp_type = IBV_QPT_UD;
    id->port = port;
    id->source_ip = dst;
    id->source_port = port_number;
    id->destination_ip = src;
    id->destination_port = h.source_port.load();
    id->bound = true;
    id->route_resolved = true;
    id->listener = listener->handle;
    id->dgid = d.source_gid;
    id->path_mtu = _ports[port].active_mtu;
    id->remote_comm_id = m.request_id.load();
    id->transaction_id = mad.header.transaction_id.load();
    id->state = cm_state::sidr_req_received;
    cm_id& made = add_id(std::move(id));
    event(made, RDMA_CM_EVENT_CONNECT_REQUEST, 0, m.private_data.data() + sizeof(cma_header), sidr_req_user_private,
          listener->handle);
}

void connection_manager::on_sidr_rep(const cm_mad& mad, sim_time) {
    const auto& m = mad.as<sidr_rep_msg>();
    cm_id* id = find_by_comm_id(m.request_id.load());
    if (!id || id->state != cm_state::sidr_req_sent) {
        ++_counters.mads_unmatched;
        return;
    }
    id->outstanding.reset();
    id->deadline = never;
    if (m.status != static_cast<std::uint8_t>(sidr_status::valid)) {
        transition(*id, cm_state::unreachable, "SIDR_REP not valid");
        // cma.c cma_ib_handler: a SIDR_REP that is not valid is UNREACHABLE with the SIDR status
        // itself (IBA 12.11.2 Table 117: 1 no such service, 2 rejected, 3 no QP, ...).
        return event(*id, RDMA_CM_EVENT_UNREACHABLE, m.status, m.private_data.data(), m.private_data.size());
    }
    id->remote_qpn = m.qpn.high();
    id->remote_qkey = m.qkey.load();
    transition(*id, cm_state::ud_ready, "SIDR_REP valid");
    ++_counters.sidr_resolved;
    cm_protocol::ud_params ud{};
    ud.qp_num = id->remote_qpn;
    ud.qkey = id->remote_qkey;
    ud.ah_attr.is_global = 1;
    ud.ah_attr.port_num = 1;
    std::memcpy(ud.ah_attr.grh.dgid.raw, id->dgid.bytes.data(), 16);
    ud.ah_attr.grh.sgid_index = 1;
    ud.ah_attr.grh.hop_limit = 64;
    ud.ah_attr.grh.traffic_class = id->tos;
    event(*id, RDMA_CM_EVENT_ESTABLISHED, 0, m.private_data.data(), m.private_data.size(), 0, nullptr, &ud);
}

// ---- time ---------------------------------------------------------------------------------------------

sim_time connection_manager::next_deadline() const {
    sim_time next = never;
    for (const auto& [h, id] : _ids) next = std::min(next, id->deadline);
    return next;
}

void connection_manager::advance(sim_time now) {
    std::vector<std::uint32_t> due;
    for (const auto& [h, id] : _ids)
        if (id->deadline <= now) due.push_back(h);
    for (auto h : due)
        if (cm_id* id = find(h)) on_timeout(*id, now);
}

void connection_manager::on_timeout(cm_id& id, sim_time now) {
    id.deadline = never;
    if (id.state == cm_state::address_query) {
        if (owner_of_address(id.destination_ip) || id.destination_ip == 0 ||
            !same_subnet(_ports[*id.port].ipv4, id.destination_ip, _ports[*id.port].prefix_length)) {
            transition(id, cm_state::address_resolved, "neighbour resolved");
            id.path_mtu = _ports[*id.port].active_mtu;
            return event(id, RDMA_CM_EVENT_ADDR_RESOLVED, 0);
        }
        // addr.c: the neighbour never answered.
        transition(id, cm_state::address_error, "no neighbour answered");
        id.state = cm_state::address_bound; // the kernel lets the consumer try again
        return event(id, RDMA_CM_EVENT_ADDR_ERROR, -ETIMEDOUT);
    }
    if (!id.outstanding) return;
    if (id.retries_left > 0) {
        --id.retries_left;
        ++_counters.mads_retransmitted;
        send_to(*id.port, id.dgid, 1, *id.outstanding);
        id.deadline = now + id.retry_interval;
        return;
    }
    id.outstanding.reset();
    ++_counters.connect_timeouts;
    switch (id.state) {
    case cm_state::req_sent:
        // cm.c: REQ retries exhausted -> IB_CM_REQ_ERROR; cma.c: RDMA_CM_EVENT_UNREACHABLE, -ETIMEDOUT.
        send_rej(*id.port, id.dgid, 1, id.local_comm_id, 0, id.transaction_id, message_kind::req,
                 reject_reason::timeout);
        transition(id, cm_state::unreachable, "REQ retries exhausted");
        return event(id, RDMA_CM_EVENT_UNREACHABLE, -ETIMEDOUT);
    case cm_state::sidr_req_sent:
        transition(id, cm_state::unreachable, "SIDR_REQ retries exhausted");
        return event(id, RDMA_CM_EVENT_UNREACHABLE, -ETIMEDOUT);
    case cm_state::rep_sent:
        // IB_CM_REP_ERROR: the kernel's cma reports CONNECT_ERROR, -ETIMEDOUT.
        send_rej(*id.port, id.dgid, 1, id.local_comm_id, id.remote_comm_id, id.transaction_id, message_kind::rep,
                 reject_reason::timeout);
        transition(id, cm_state::unreachable, "REP retries exhausted");
        return event(id, RDMA_CM_EVENT_CONNECT_ERROR, -ETIMEDOUT);
    case cm_state::dreq_sent:
        // IB_CM_DREQ_ERROR: the consumer sees DISCONNECTED all the same.
        transition(id, cm_state::timewait, "DREQ retries exhausted");
        return event(id, RDMA_CM_EVENT_DISCONNECTED, 0);
    default: return;
    }
}

// ---- requests -----------------------------------------------------------------------------------------

int connection_manager::create_id(session_id session, const cm_protocol::request& r, std::uint32_t& handle) {
    if (r.port_space != RDMA_PS_TCP && r.port_space != RDMA_PS_UDP && r.port_space != RDMA_PS_IPOIB)
        return EPROTONOSUPPORT;
    if (r.qp_type != IBV_QPT_RC && r.qp_type != IBV_QPT_UD && r.qp_type != IBV_QPT_UC) return EINVAL;
    if (_ids.size() >= 65536 || _sessions[session].ids >= max_ids_per_channel) return ENOMEM;
    auto id = std::make_unique<cm_id>();
    id->handle = handle = _next_handle++;
    id->session = session;
    id->port_space = r.port_space;
    id->qp_type = static_cast<ibv_qp_type>(r.qp_type);
    add_id(std::move(id));
    return 0;
}

void connection_manager::destroy(cm_id& id, sim_time now) {
    // The kernel's rdma_destroy_id: a connection still up is disconnected (DREQ), one being set
    // up is rejected, so the peer is not left waiting.
    switch (id.state) {
    case cm_state::established:
    case cm_state::rep_sent: {
        cm_mad mad;
        set_header(mad, attribute::dreq, (static_cast<std::uint64_t>(id.local_comm_id) << 32) | random24());
        mad.as<dreq_msg>().local_comm_id.store(id.local_comm_id);
        mad.as<dreq_msg>().remote_comm_id.store(id.remote_comm_id);
        mad.as<dreq_msg>().remote_qpn.set(id.remote_qpn, 0);
        send_to(*id.port, id.dgid, 1, mad);
        break;
    }
    case cm_state::dreq_received: {
        cm_mad mad;
        set_header(mad, attribute::drep, id.transaction_id);
        mad.as<drep_msg>().local_comm_id.store(id.local_comm_id);
        mad.as<drep_msg>().remote_comm_id.store(id.remote_comm_id);
        send_to(*id.port, id.dgid, 1, mad);
        break;
    }
    case cm_state::req_received:
    case cm_state::rep_received:
    case cm_state::req_sent:
        send_rej(*id.port, id.dgid, 1, id.local_comm_id, id.remote_comm_id, id.transaction_id,
                 id.state == cm_state::req_received ? message_kind::req : message_kind::rep,
                 id.state == cm_state::req_received ? reject_reason::consumer_defined : reject_reason::timeout);
        break;
    case cm_state::listening: {
        // Requests not yet accepted die with their listener.
        std::vector<std::uint32_t> children;
        for (auto& [h, other] : _ids)
            if (other->listener == id.handle && other->session == id.session &&
                (other->state == cm_state::req_received || other->state == cm_state::sidr_req_received))
                children.push_back(h);
        for (auto h : children) {
            if (cm_id* child = find(h)) {
                child->listener = 0;
            }
        }
        break;
    }
    default: break;
    }
    log::control().debug("cm id {}: destroyed in {}", id.handle, state_name(id.state));
    (void)now;
    if (auto s = _sessions.find(id.session); s != _sessions.end() && s->second.ids) --s->second.ids;
    _ids.erase(id.handle);
}

int connection_manager::migrate(cm_id& id, session_id from, std::uint64_t token) {
    const auto& me = _sessions[from].who;
    for (auto& [s, state] : _sessions) {
        if (state.token != token) continue;
        if (state.who.uid != me.uid || state.who.pid != me.pid || state.who.host != me.host) return EPERM;
        if (state.ids >= max_ids_per_channel) return ENOMEM;
        --_sessions[from].ids;
        ++state.ids;
        id.session = s;
        return 0;
    }
    return EINVAL;
}

int connection_manager::set_option(cm_id& id, const cm_protocol::request& r) {
    if (r.option_level != RDMA_OPTION_ID && r.option_level != RDMA_OPTION_IB) return ENOSYS;
    std::uint32_t value32 = 0;
    std::uint8_t value8 = 0;
    if (r.option_length >= 1) value8 = r.option_value[0];
    if (r.option_length >= 4) std::memcpy(&value32, r.option_value, 4);
    if (r.option_level == RDMA_OPTION_ID) {
        switch (r.option_name) {
        case RDMA_OPTION_ID_TOS:
            if (r.option_length != 1) return EINVAL;
            id.tos = value8;
            id.tos_set = true;
            return 0;
        case RDMA_OPTION_ID_REUSEADDR:
            if (r.option_length != 4) return EINVAL;
            if (id.state != cm_state::idle) return EINVAL;
            id.reuse_address = value32 != 0;
            return 0;
        case RDMA_OPTION_ID_AFONLY:
            if (r.option_length != 4) return EINVAL;
            if (id.state != cm_state::idle) return EINVAL;
            id.afonly = value32 != 0;
            return 0;
        case RDMA_OPTION_ID_ACK_TIMEOUT:
            if (r.option_length != 1) return EINVAL;
            id.ack_timeout = std::min<std::uint8_t>(value8, 31);
            return 0;
        default: return ENOSYS;
        }
    }
    // RDMA_OPTION_IB_PATH: a path record the program resolved itself; RoCE takes it as is.
    if (r.option_name == RDMA_OPTION_IB_PATH) {
        if (id.state != cm_state::address_resolved) return EINVAL;
        id.route_resolved = true;
        transition(id, cm_state::route_resolved, "RDMA_OPTION_IB_PATH");
        return 0;
    }
    return ENOSYS;
}

cm_protocol::reply connection_manager::handle(session_id session, const cm_protocol::request& r, sim_time now) {
    cm_protocol::reply out;
    std::memset(&out, 0, sizeof out);
    out.magic_number = cm_protocol::magic;
    out.id = r.id;
    if (!_sessions.count(session)) {
        out.status = EINVAL;
        return out;
    }
    using cm_protocol::op;
    if (r.code == op::create_id) {
        out.status = create_id(session, r, out.id);
        return out;
    }
    cm_id* id = find(r.id);
    // A program acts on its own ids only: another channel's id is as good as none.
    if (!id || id->session != session) {
        out.status = EINVAL;
        return out;
    }
    switch (r.code) {
    case op::destroy_id: destroy(*id, now); return out;
    case op::bind_addr: out.status = bind(*id, r.source); break;
    case op::resolve_addr: out.status = resolve_addr(*id, r, now); break;
    case op::resolve_route: out.status = resolve_route(*id); break;
    case op::listen: out.status = listen(*id, r.backlog); break;
    case op::connect: out.status = connect(*id, r, now); break;
    case op::accept: out.status = accept(*id, r, now); break;
    case op::reject: out.status = reject(*id, r, now); break;
    case op::disconnect: out.status = disconnect(*id, r, now); break;
    case op::init_qp_attr: out.status = init_qp_attr(*id, r.qp_state, out.qp_attr, out.qp_attr_mask); break;
    case op::query: break;
    case op::migrate_id: out.status = migrate(*id, session, r.channel_token); break;
    case op::set_option: out.status = set_option(*id, r); break;
    case op::establish:
        if (id->state == cm_state::rep_sent) {
            id->outstanding.reset();
            id->deadline = never;
            transition(*id, cm_state::established, "rdma_establish");
            event(*id, RDMA_CM_EVENT_ESTABLISHED, 0);
        } else if (id->state != cm_state::established) {
            out.status = EINVAL;
        }
        break;
    case op::notify:
        // ib_cm_notify(IB_EVENT_COMM_EST): traffic arrived before the RTU.
        if (r.event_type == IBV_EVENT_COMM_EST && id->state == cm_state::rep_sent) {
            id->outstanding.reset();
            id->deadline = never;
            transition(*id, cm_state::established, "communication established");
            event(*id, RDMA_CM_EVENT_ESTABLISHED, 0);
        }
        break;
    default: out.status = EINVAL; break;
    }
    if (cm_id* still = find(r.id)) fill_route(*still, out.route);
    return out;
}

} // namespace rocefab::cm
