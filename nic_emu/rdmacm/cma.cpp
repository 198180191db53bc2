// Our librdmacm.so.1: rdma-core 44's rdma_cm API (rdma/rdma_cma.h) over the daemon's connection
// manager (control/cm/), which plays the kernel's ucma + rdma_cm + IB CM. Like rdma-core's
// librdmacm/cma.c, the library keeps the user-visible rdma_cm_id inside a private record, moves
// the QP through INIT/RTR/RTS with the attributes the CM gives (rdma_init_qp_attr), turns the
// CM's CONNECT_RESPONSE into an RTU and ESTABLISHED, and runs ids without a channel
// synchronously (ucma_complete). Talking to the daemon: nic_emu/rdmacm/cm_protocol.hpp.
#include "nic_emu/descriptor_passing.hpp"
#include "nic_emu/rdmacm/cm_protocol.hpp"
#include "nic_emu/rdmacm/event_names.hpp"

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>
#include <rdma/rdma_verbs.h>

#include <arpa/inet.h>
#include <cerrno>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <endian.h>
#include <fcntl.h>
#include <map>
#include <mutex>
#include <netdb.h>
#include <poll.h>
#include <string>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>
#include <vector>

namespace proto = rocefab::cm_protocol;

namespace {

struct cma_device {
    ibv_context* verbs = nullptr;
    std::uint64_t guid = 0; // network order
    ibv_pd* pd = nullptr;   // the default PD of rdma_create_qp(id, NULL, ...)
    int max_qp_rd_atom = 0, max_qp_init_rd_atom = 0;
};

struct channel_private {
    rdma_event_channel channel; // first: the user's pointer is to this
    int command_fd = -1;
    std::uint64_t token = 0;
    std::mutex command_lock;
};

struct id_private {
    rdma_cm_id id; // first
    std::uint32_t handle = 0;
    channel_private* channel = nullptr;
    bool sync = false; // made with no channel: its own, and calls wait for their event
    ibv_sa_path_rec path{};
    cma_device* device = nullptr;
    std::uint8_t responder_resources = 0, initiator_depth = 0;
    bool connect_error = false;
    std::mutex lock;
    std::condition_variable cond;
    int events_reported = 0, events_completed = 0;
    ibv_qp_init_attr* qp_init_attr = nullptr; // rdma_create_ep's, for rdma_get_request
    std::uint32_t remote_qkey = 0;
};

struct cma_event {
    rdma_cm_event event; // first
    std::uint8_t private_data[232];
    id_private* id_priv = nullptr;
};

std::mutex global_lock;
std::vector<cma_device> devices;
bool devices_ready = false;
std::map<std::uint32_t, id_private*> ids_by_handle;

int set_errno(int e) {
    errno = e;
    return -1;
}

// The devices, opened once, as ucma_init does (global_lock held).
int init_devices() {
    if (devices_ready) return 0;
    int count = 0;
    ibv_device** list = ibv_get_device_list(&count);
    if (!list) return errno ? errno : ENODEV;
    if (count == 0) {
        ibv_free_device_list(list);
        return ENODEV;
    }
    for (int i = 0; i < count; ++i) {
        cma_device d;
        d.guid = ibv_get_device_guid(list[i]);
        d.verbs = ibv_open_device(list[i]);
        if (!d.verbs) continue;
        ibv_device_attr attr{};
        if (ibv_query_device(d.verbs, &attr) == 0) {
            d.max_qp_rd_atom = attr.max_qp_rd_atom;
            d.max_qp_init_rd_atom = attr.max_qp_init_rd_atom;
        }
        d.pd = ibv_alloc_pd(d.verbs);
        devices.push_back(d);
    }
    // The contexts keep what they need of their devices; the list itself is not kept (the
    // verbs library keeps a device alive while a context uses it).
    ibv_free_device_list(list);
    if (devices.empty()) return ENODEV;
    devices.reserve(devices.size());
    devices_ready = true;
    return 0;
}

cma_device* device_by_guid(std::uint64_t guid) {
    std::lock_guard lock(global_lock);
    if (init_devices()) return nullptr;
    for (auto& d : devices)
        if (d.guid == guid) return &d;
    return nullptr;
}

std::string socket_path() {
    if (const char* p = std::getenv("ROCEFAB_CM_SOCKET"); p && *p) return p;
    // The attach socket's sibling: RUNTIME/attach/HOST.sock -> RUNTIME/cm/HOST.sock.
    if (const char* a = std::getenv("ROCEFAB_SOCKET"); a && *a) {
        std::string s = a;
        const auto slash = s.rfind('/');
        if (slash != std::string::npos) {
            const auto parent = s.rfind('/', slash - 1);
            if (parent != std::string::npos) return s.substr(0, parent) + "/cm" + s.substr(slash);
        }
    }
    return {};
}

int command(channel_private* ch, proto::request& r, proto::reply& out) {
    r.magic_number = proto::magic;
    std::lock_guard lock(ch->command_lock);
    ssize_t n;
    do {
        n = ::send(ch->command_fd, &r, sizeof r, MSG_NOSIGNAL);
    } while (n < 0 && errno == EINTR);
    if (n != static_cast<ssize_t>(sizeof r)) return ENODEV;
    do {
        n = ::recv(ch->command_fd, &out, sizeof out, 0);
    } while (n < 0 && errno == EINTR);
    if (n != static_cast<ssize_t>(sizeof out) || out.magic_number != proto::magic) return ENODEV;
    return out.status;
}

proto::request make_request(proto::op code, const id_private* id) {
    proto::request r;
    std::memset(&r, 0, sizeof r);
    r.code = code;
    if (id) r.id = id->handle;
    return r;
}

void copy_sockaddr(sockaddr_storage& to, const sockaddr* from) {
    std::memset(&to, 0, sizeof to);
    if (!from) return;
    const std::size_t length = from->sa_family == AF_INET    ? sizeof(sockaddr_in)
                               : from->sa_family == AF_INET6 ? sizeof(sockaddr_in6)
                                                             : sizeof(sockaddr_storage);
    std::memcpy(&to, from, length);
}

// What the CM says of the id's addresses and route, into the user's rdma_cm_id.
void apply_route(id_private* id, const proto::route_info& route) {
    rdma_cm_id& u = id->id;
    if (route.source.ss_family) std::memcpy(&u.route.addr.src_storage, &route.source, sizeof route.source);
    if (route.destination.ss_family)
        std::memcpy(&u.route.addr.dst_storage, &route.destination, sizeof route.destination);
    if (route.node_guid) {
        if (cma_device* d = device_by_guid(route.node_guid)) {
            id->device = d;
            u.verbs = d->verbs;
            u.port_num = route.port_num;
            // ucma_get_device: an id bound to a device has that device's PD until the program gives
            // its own (rdma_create_qp, rdma_create_ep). pyverbs' PD(cmid) and rdma_reg_msgs use it.
            if (!u.pd) u.pd = d->pd;
        }
    }
    std::memcpy(u.route.addr.addr.ibaddr.sgid.raw, route.sgid, 16);
    std::memcpy(u.route.addr.addr.ibaddr.dgid.raw, route.dgid, 16);
    u.route.addr.addr.ibaddr.pkey = htobe16(route.pkey);
    if (route.route_resolved) {
        ibv_sa_path_rec& p = id->path;
        std::memset(&p, 0, sizeof p);
        std::memcpy(p.sgid.raw, route.sgid, 16);
        std::memcpy(p.dgid.raw, route.dgid, 16);
        p.hop_limit = route.hop_limit;
        p.traffic_class = route.traffic_class;
        p.reversible = htobe32(1);
        p.numb_path = 1;
        p.pkey = htobe16(route.pkey);
        p.mtu_selector = 2; // exactly
        p.mtu = route.path_mtu;
        p.rate_selector = 2;
        p.rate = IBV_RATE_100_GBPS;
        p.packet_life_time_selector = 2;
        p.packet_life_time = 16;
        u.route.path_rec = &p;
        u.route.num_paths = 1;
    }
}

channel_private* open_channel() {
    const std::string path = socket_path();
    if (path.empty()) {
        errno = ENODEV;
        return nullptr;
    }
    auto* ch = new channel_private;
    ch->channel.fd = -1;
    int pair[2];
    if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair) != 0) {
        delete ch;
        return nullptr;
    }
    const int fd = ::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    std::snprintf(address.sun_path, sizeof address.sun_path, "%s", path.c_str());
    if (fd < 0 || ::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
        if (fd >= 0) ::close(fd);
        ::close(pair[0]);
        ::close(pair[1]);
        delete ch;
        errno = ENODEV;
        return nullptr;
    }
    ch->command_fd = fd;
    proto::request r = make_request(proto::op::hello, nullptr);
    r.magic_number = proto::magic;
    const int pass[1] = {pair[1]};
    if (!rocefab::send_with_descriptors(fd, &r, sizeof r, pass)) {
        ::close(fd);
        ::close(pair[0]);
        ::close(pair[1]);
        delete ch;
        errno = ENODEV;
        return nullptr;
    }
    ::close(pair[1]);
    proto::reply out;
    const ssize_t n = ::recv(fd, &out, sizeof out, 0);
    if (n != static_cast<ssize_t>(sizeof out) || out.status) {
        ::close(fd);
        ::close(pair[0]);
        delete ch;
        errno = n == static_cast<ssize_t>(sizeof out) ? out.status : ENODEV;
        return nullptr;
    }
    ch->token = out.channel_token;
    ch->channel.fd = pair[0];
    return ch;
}

channel_private* private_of(rdma_event_channel* c) { return reinterpret_cast<channel_private*>(c); }
id_private* private_of(rdma_cm_id* id) { return reinterpret_cast<id_private*>(id); }

id_private* new_id(channel_private* ch, void* context, rdma_port_space ps, ibv_qp_type type, std::uint32_t handle) {
    auto* id = new id_private;
    std::memset(&id->id, 0, sizeof id->id);
    id->id.channel = &ch->channel;
    id->id.context = context;
    id->id.ps = ps;
    id->id.qp_type = type;
    id->channel = ch;
    id->handle = handle;
    std::lock_guard lock(global_lock);
    ids_by_handle[handle] = id;
    return id;
}

bool is_ud(const id_private* id) { return id->id.qp_type == IBV_QPT_UD || id->id.ps == RDMA_PS_UDP; }

int modify_qp_from_cm(id_private* id, ibv_qp_state state, int extra_mask = 0, std::uint8_t value = 0) {
    ibv_qp_attr attr;
    int mask = 0;
    rdma_cm_id* u = &id->id;
    attr.qp_state = state;
    if (rdma_init_qp_attr(u, &attr, &mask)) return errno;
    if (extra_mask == IBV_QP_MAX_DEST_RD_ATOMIC) attr.max_dest_rd_atomic = value;
    if (extra_mask == IBV_QP_MAX_QP_RD_ATOMIC) attr.max_rd_atomic = value;
    return ibv_modify_qp(u->qp, &attr, mask);
}

int modify_qp_err(id_private* id) {
    if (!id->id.qp) return 0;
    ibv_qp_attr attr{};
    attr.qp_state = IBV_QPS_ERR;
    return ibv_modify_qp(id->id.qp, &attr, IBV_QP_STATE);
}

// ucma_complete: a synchronous id waits for its operation's event.
int complete(id_private* id) {
    if (!id->sync) return 0;
    if (id->id.event) {
        rdma_ack_cm_event(id->id.event);
        id->id.event = nullptr;
    }
    if (rdma_get_cm_event(id->id.channel, &id->id.event)) return -1;
    const rdma_cm_event* e = id->id.event;
    if (e->status) {
        if (e->event == RDMA_CM_EVENT_REJECTED) return set_errno(ECONNREFUSED);
        return set_errno(e->status < 0 ? -e->status : e->status);
    }
    return 0;
}

void fill_conn(proto::conn_params& c, const rdma_conn_param* p) {
    if (!p) return;
    c.responder_resources = p->responder_resources;
    c.initiator_depth = p->initiator_depth;
    c.flow_control = p->flow_control;
    c.retry_count = p->retry_count;
    c.rnr_retry_count = p->rnr_retry_count;
    c.srq = p->srq;
    c.qp_num = p->qp_num;
    const std::size_t n = std::min<std::size_t>(p->private_data_len, sizeof c.private_data);
    if (p->private_data && n) std::memcpy(c.private_data, p->private_data, n);
    c.private_data_len = static_cast<std::uint8_t>(n);
}

} // namespace

extern "C" {

rdma_event_channel* rdma_create_event_channel(void) {
    {
        std::lock_guard lock(global_lock);
        if (const int e = init_devices()) {
            errno = e;
            return nullptr;
        }
    }
    channel_private* ch = open_channel();
    return ch ? &ch->channel : nullptr;
}

void rdma_destroy_event_channel(rdma_event_channel* channel) {
    if (!channel) return;
    channel_private* ch = private_of(channel);
    ::close(ch->command_fd);
    ::close(ch->channel.fd);
    delete ch;
}

int rdma_create_id(rdma_event_channel* channel, rdma_cm_id** id, void* context, rdma_port_space ps) {
    const ibv_qp_type type = ps == RDMA_PS_UDP || ps == RDMA_PS_IPOIB ? IBV_QPT_UD : IBV_QPT_RC;
    if (!id) return set_errno(EINVAL);
    if (ps != RDMA_PS_TCP && ps != RDMA_PS_UDP && ps != RDMA_PS_IPOIB && ps != RDMA_PS_IB) return set_errno(EINVAL);
    if (ps == RDMA_PS_IB) return set_errno(EOPNOTSUPP); // AF_IB addressing: see the README
    bool sync = false;
    if (!channel) {
        channel = rdma_create_event_channel();
        if (!channel) return -1;
        sync = true;
    }
    channel_private* ch = private_of(channel);
    proto::request r = make_request(proto::op::create_id, nullptr);
    r.port_space = static_cast<std::uint16_t>(ps);
    r.qp_type = static_cast<std::uint8_t>(type);
    proto::reply out;
    if (const int e = command(ch, r, out)) {
        if (sync) rdma_destroy_event_channel(channel);
        return set_errno(e);
    }
    id_private* p = new_id(ch, context, ps, type, out.id);
    p->sync = sync;
    *id = &p->id;
    return 0;
}

int rdma_destroy_id(rdma_cm_id* id) {
    if (!id) return set_errno(EINVAL);
    id_private* p = private_of(id);
    {
        std::lock_guard lock(global_lock);
        ids_by_handle.erase(p->handle);
    }
    proto::request r = make_request(proto::op::destroy_id, p);
    proto::reply out;
    command(p->channel, r, out);
    if (id->event) {
        rdma_ack_cm_event(id->event);
        id->event = nullptr;
    }
    // rdma-core: the id lives until every event reported for it is acknowledged.
    {
        std::unique_lock lock(p->lock);
        p->cond.wait(lock, [&] { return p->events_completed >= p->events_reported; });
    }
    if (p->sync) rdma_destroy_event_channel(id->channel);
    delete p->qp_init_attr;
    delete p;
    return 0;
}

int rdma_bind_addr(rdma_cm_id* id, sockaddr* addr) {
    if (!id || !addr) return set_errno(EINVAL);
    id_private* p = private_of(id);
    proto::request r = make_request(proto::op::bind_addr, p);
    copy_sockaddr(r.source, addr);
    proto::reply out;
    if (const int e = command(p->channel, r, out)) return set_errno(e);
    apply_route(p, out.route);
    return 0;
}

int rdma_resolve_addr(rdma_cm_id* id, sockaddr* src_addr, sockaddr* dst_addr, int timeout_ms) {
    if (!id || !dst_addr) return set_errno(EINVAL);
    id_private* p = private_of(id);
    proto::request r = make_request(proto::op::resolve_addr, p);
    copy_sockaddr(r.source, src_addr);
    copy_sockaddr(r.destination, dst_addr);
    r.timeout_ms = timeout_ms;
    proto::reply out;
    if (const int e = command(p->channel, r, out)) return set_errno(e);
    copy_sockaddr(id->route.addr.dst_storage, dst_addr);
    return complete(p);
}

int rdma_resolve_route(rdma_cm_id* id, int timeout_ms) {
    if (!id) return set_errno(EINVAL);
    id_private* p = private_of(id);
    proto::request r = make_request(proto::op::resolve_route, p);
    r.timeout_ms = timeout_ms;
    proto::reply out;
    if (const int e = command(p->channel, r, out)) return set_errno(e);
    return complete(p);
}

int rdma_init_qp_attr(rdma_cm_id* id, ibv_qp_attr* qp_attr, int* qp_attr_mask) {
    if (!id || !qp_attr || !qp_attr_mask) return set_errno(EINVAL);
    id_private* p = private_of(id);
    proto::request r = make_request(proto::op::init_qp_attr, p);
    r.qp_state = qp_attr->qp_state;
    proto::reply out;
    if (const int e = command(p->channel, r, out)) return set_errno(e);
    *qp_attr = out.qp_attr;
    *qp_attr_mask = out.qp_attr_mask;
    return 0;
}

int rdma_create_qp_ex(rdma_cm_id* id, ibv_qp_init_attr_ex* attr) {
    if (!id || !attr) return set_errno(EINVAL);
    id_private* p = private_of(id);
    if (!id->verbs || !p->device) return set_errno(EINVAL);
    if (id->qp) return set_errno(EINVAL);
    ibv_pd* pd = (attr->comp_mask & IBV_QP_INIT_ATTR_PD) && attr->pd ? attr->pd : p->device->pd;
    if (!pd) return set_errno(EINVAL);
    if (pd->context != id->verbs) return set_errno(EINVAL);
    // ucma_create_cqs: CQs of the id's own when the caller gives none.
    if (!attr->send_cq || !attr->recv_cq) {
        if (!attr->recv_cq) {
            id->recv_cq_channel = ibv_create_comp_channel(id->verbs);
            if (!id->recv_cq_channel) return -1;
            id->recv_cq = ibv_create_cq(id->verbs, std::max<int>(1, attr->cap.max_recv_wr), id, id->recv_cq_channel, 0);
            if (!id->recv_cq) return -1;
            attr->recv_cq = id->recv_cq;
        }
        if (!attr->send_cq) {
            id->send_cq_channel = ibv_create_comp_channel(id->verbs);
            if (!id->send_cq_channel) return -1;
            id->send_cq = ibv_create_cq(id->verbs, std::max<int>(1, attr->cap.max_send_wr), id, id->send_cq_channel, 0);
            if (!id->send_cq) return -1;
            attr->send_cq = id->send_cq;
        }
    }
    ibv_qp_init_attr plain{};
    plain.qp_context = attr->qp_context;
    plain.send_cq = attr->send_cq;
    plain.recv_cq = attr->recv_cq;
    plain.srq = attr->srq ? attr->srq : id->srq;
    plain.cap = attr->cap;
    plain.qp_type = attr->qp_type;
    plain.sq_sig_all = attr->sq_sig_all;
    ibv_qp* qp = ibv_create_qp(pd, &plain);
    if (!qp) return -1;
    attr->cap = plain.cap;
    id->qp = qp;
    id->pd = pd;
    // ucma_init_conn_qp / ucma_init_ud_qp: INIT now; UD goes on to RTS, which it needs nothing more for.
    int e = modify_qp_from_cm(p, IBV_QPS_INIT);
    if (!e && is_ud(p)) {
        e = modify_qp_from_cm(p, IBV_QPS_RTR);
        if (!e) e = modify_qp_from_cm(p, IBV_QPS_RTS);
    }
    if (e) {
        ibv_destroy_qp(qp);
        id->qp = nullptr;
        return set_errno(e);
    }
    return 0;
}

int rdma_create_qp(rdma_cm_id* id, ibv_pd* pd, ibv_qp_init_attr* qp_init_attr) {
    if (!id || !qp_init_attr) return set_errno(EINVAL);
    ibv_qp_init_attr_ex ex{};
    ex.qp_context = qp_init_attr->qp_context;
    ex.send_cq = qp_init_attr->send_cq;
    ex.recv_cq = qp_init_attr->recv_cq;
    ex.srq = qp_init_attr->srq;
    ex.cap = qp_init_attr->cap;
    ex.qp_type = qp_init_attr->qp_type;
    ex.sq_sig_all = qp_init_attr->sq_sig_all;
    ex.comp_mask = IBV_QP_INIT_ATTR_PD;
    ex.pd = pd;
    const int ret = rdma_create_qp_ex(id, &ex);
    if (ret == 0) {
        qp_init_attr->cap = ex.cap;
        qp_init_attr->send_cq = ex.send_cq;
        qp_init_attr->recv_cq = ex.recv_cq;
    }
    return ret;
}

void rdma_destroy_qp(rdma_cm_id* id) {
    if (!id || !id->qp) return;
    ibv_destroy_qp(id->qp);
    id->qp = nullptr;
    if (id->send_cq) ibv_destroy_cq(id->send_cq);
    if (id->recv_cq) ibv_destroy_cq(id->recv_cq);
    if (id->send_cq_channel) ibv_destroy_comp_channel(id->send_cq_channel);
    if (id->recv_cq_channel) ibv_destroy_comp_channel(id->recv_cq_channel);
    id->send_cq = id->recv_cq = nullptr;
    id->send_cq_channel = id->recv_cq_channel = nullptr;
}

int rdma_connect(rdma_cm_id* id, rdma_conn_param* conn_param) {
    if (!id) return set_errno(EINVAL);
    id_private* p = private_of(id);
    proto::request r = make_request(proto::op::connect, p);
    if (is_ud(p)) {
        if (conn_param) fill_conn(r.conn, conn_param);
    } else {
        if (!id->qp && !conn_param) return set_errno(EINVAL);
        rdma_conn_param defaults{};
        defaults.responder_resources = RDMA_MAX_RESP_RES;
        defaults.initiator_depth = RDMA_MAX_INIT_DEPTH;
        defaults.retry_count = 7;
        defaults.rnr_retry_count = 7;
        fill_conn(r.conn, conn_param ? conn_param : &defaults);
        const int max_res = p->device ? p->device->max_qp_rd_atom : 16;
        const int max_init = p->device ? p->device->max_qp_init_rd_atom : 16;
        if (r.conn.responder_resources == RDMA_MAX_RESP_RES || r.conn.responder_resources > max_res)
            r.conn.responder_resources = static_cast<std::uint8_t>(max_res);
        if (r.conn.initiator_depth == RDMA_MAX_INIT_DEPTH || r.conn.initiator_depth > max_init)
            r.conn.initiator_depth = static_cast<std::uint8_t>(max_init);
        if (id->qp) {
            r.conn.qp_num = id->qp->qp_num;
            r.conn.srq = id->srq != nullptr || id->qp->srq != nullptr;
        }
        p->responder_resources = r.conn.responder_resources;
        p->initiator_depth = r.conn.initiator_depth;
    }
    proto::reply out;
    if (const int e = command(p->channel, r, out)) return set_errno(e);
    return complete(p);
}

int rdma_listen(rdma_cm_id* id, int backlog) {
    if (!id) return set_errno(EINVAL);
    id_private* p = private_of(id);
    proto::request r = make_request(proto::op::listen, p);
    r.backlog = backlog;
    proto::reply out;
    if (const int e = command(p->channel, r, out)) return set_errno(e);
    apply_route(p, out.route);
    return 0;
}

int rdma_accept(rdma_cm_id* id, rdma_conn_param* conn_param) {
    if (!id) return set_errno(EINVAL);
    id_private* p = private_of(id);
    proto::request r = make_request(proto::op::accept, p);
    if (is_ud(p)) {
        if (conn_param) fill_conn(r.conn, conn_param);
        if (id->qp) r.conn.qp_num = id->qp->qp_num;
        r.conn.qkey = RDMA_UDP_QKEY;
    } else {
        if (!id->qp && !conn_param) return set_errno(EINVAL);
        rdma_conn_param defaults{};
        defaults.responder_resources = RDMA_MAX_RESP_RES;
        defaults.initiator_depth = RDMA_MAX_INIT_DEPTH;
        fill_conn(r.conn, conn_param ? conn_param : &defaults);
        std::uint8_t resources =
            r.conn.responder_resources == RDMA_MAX_RESP_RES ? p->responder_resources : r.conn.responder_resources;
        std::uint8_t depth =
            r.conn.initiator_depth == RDMA_MAX_INIT_DEPTH ? p->initiator_depth : r.conn.initiator_depth;
        r.conn.responder_resources = resources;
        r.conn.initiator_depth = depth;
        if (id->qp) {
            r.conn.qp_num = id->qp->qp_num;
            r.conn.srq = id->srq != nullptr || id->qp->srq != nullptr;
            // ucma_modify_qp_rtr/rts before the REP goes: the peer may send once it has it.
            int e = modify_qp_from_cm(p, IBV_QPS_RTR, IBV_QP_MAX_DEST_RD_ATOMIC, resources);
            if (!e) e = modify_qp_from_cm(p, IBV_QPS_RTS, IBV_QP_MAX_QP_RD_ATOMIC, depth);
            if (e) return set_errno(e);
        }
    }
    proto::reply out;
    if (const int e = command(p->channel, r, out)) {
        modify_qp_err(p);
        return set_errno(e);
    }
    if (id->event) {
        rdma_ack_cm_event(id->event);
        id->event = nullptr;
    }
    if (is_ud(p)) return 0;
    return complete(p);
}

int rdma_reject(rdma_cm_id* id, const void* private_data, uint8_t private_data_len) {
    if (!id) return set_errno(EINVAL);
    id_private* p = private_of(id);
    proto::request r = make_request(proto::op::reject, p);
    const std::size_t n = std::min<std::size_t>(private_data_len, sizeof r.conn.private_data);
    if (private_data && n) std::memcpy(r.conn.private_data, private_data, n);
    r.conn.private_data_len = static_cast<std::uint8_t>(n);
    proto::reply out;
    if (const int e = command(p->channel, r, out)) return set_errno(e);
    if (id->event) {
        rdma_ack_cm_event(id->event);
        id->event = nullptr;
    }
    return 0;
}

int rdma_reject_ece(rdma_cm_id* id, const void* private_data, uint8_t private_data_len) {
    return rdma_reject(id, private_data, private_data_len);
}

int rdma_notify(rdma_cm_id* id, ibv_event_type event) {
    if (!id) return set_errno(EINVAL);
    id_private* p = private_of(id);
    proto::request r = make_request(proto::op::notify, p);
    r.event_type = event;
    proto::reply out;
    if (const int e = command(p->channel, r, out)) return set_errno(e);
    return 0;
}

// The active side of an external-QP connection, after its CONNECT_RESPONSE and after moving its own QP
// with rdma_init_qp_attr: the RTU. As librdmacm's rdma_establish, this is ucma_process_conn_resp with no
// QP to move: an ACCEPT on the active id (the kernel's rdma_accept then runs cma_rep_recv, which sends
// the RTU), and no ESTABLISHED event comes to this side. An id with a QP of rdma_create_qp's got its RTU
// when its CONNECT_RESPONSE was read, so it has nothing to establish.
int rdma_establish(rdma_cm_id* id) {
    if (!id) return set_errno(EINVAL);
    if (id->qp) return set_errno(EINVAL);
    id_private* p = private_of(id);
    proto::request r = make_request(proto::op::accept, p);
    proto::reply out;
    if (const int e = command(p->channel, r, out)) return set_errno(e);
    return 0;
}

int rdma_disconnect(rdma_cm_id* id) {
    if (!id) return set_errno(EINVAL);
    id_private* p = private_of(id);
    modify_qp_err(p);
    proto::request r = make_request(proto::op::disconnect, p);
    proto::reply out;
    if (const int e = command(p->channel, r, out)) return set_errno(e);
    return complete(p);
}

int rdma_get_cm_event(rdma_event_channel* channel, rdma_cm_event** event) {
    if (!channel || !event) return set_errno(EINVAL);
    channel_private* ch = private_of(channel);
    for (;;) {
        proto::event e;
        // One recv(), as librdmacm makes one write() to the ucma device: a signal ends the wait
        // with EINTR unless its handler asked for SA_RESTART (the kernel then restarts either).
        const ssize_t n = ::recv(ch->channel.fd, &e, sizeof e, 0);
        if (n < 0) return -1; // EAGAIN on a non-blocking channel, as rdma-core's gives
        if (n != static_cast<ssize_t>(sizeof e) || e.magic_number != proto::magic) return set_errno(ENODATA);
        auto* evt = new cma_event;
        std::memset(&evt->event, 0, sizeof evt->event);
        evt->event.event = static_cast<rdma_cm_event_type>(e.type);
        evt->event.status = e.status;
        id_private* p = nullptr;
        if (e.type == RDMA_CM_EVENT_CONNECT_REQUEST) {
            id_private* listener = nullptr;
            {
                std::lock_guard lock(global_lock);
                auto it = ids_by_handle.find(e.listen_id);
                if (it != ids_by_handle.end()) listener = it->second;
            }
            if (!listener) { // the listener is being destroyed: the request goes with it
                proto::request r;
                std::memset(&r, 0, sizeof r);
                r.code = proto::op::destroy_id;
                r.id = e.id;
                proto::reply out;
                command(ch, r, out);
                delete evt;
                continue;
            }
            p = new_id(ch, listener->id.context, listener->id.ps, is_ud(listener) ? IBV_QPT_UD : IBV_QPT_RC, e.id);
            p->sync = false;
            apply_route(p, e.route);
            const int max_res = p->device ? p->device->max_qp_rd_atom : 16;
            const int max_init = p->device ? p->device->max_qp_init_rd_atom : 16;
            p->responder_resources = static_cast<std::uint8_t>(std::min<int>(e.conn.responder_resources, max_res));
            p->initiator_depth = static_cast<std::uint8_t>(std::min<int>(e.conn.initiator_depth, max_init));
            evt->event.listen_id = &listener->id;
            evt->event.id = &p->id;
            // An rdma_create_ep listener gives its requests a QP like its own (rdma_get_request).
            if (listener->qp_init_attr) {
                ibv_qp_init_attr attr = *listener->qp_init_attr;
                if (rdma_create_qp(&p->id, listener->id.pd, &attr)) {
                    // rdma-core rejects the request then; so does this.
                    rdma_reject(&p->id, nullptr, 0);
                }
            }
            {
                std::lock_guard lock(listener->lock);
                ++listener->events_reported;
            }
            evt->id_priv = listener;
        } else {
            std::lock_guard lock(global_lock);
            auto it = ids_by_handle.find(e.id);
            if (it == ids_by_handle.end()) { // destroyed since: the event goes with it
                delete evt;
                continue;
            }
            p = it->second;
        }
        if (e.type != RDMA_CM_EVENT_CONNECT_REQUEST) {
            evt->event.id = &p->id;
            apply_route(p, e.route);
            std::lock_guard lock(p->lock);
            ++p->events_reported;
            evt->id_priv = p;
        }
        rdma_cm_id* id = &p->id;
        switch (e.type) {
        case proto::internal_connect_response:
            // ucma_process_conn_resp: the QP to RTR and RTS with the REP's values, then the RTU.
            if (id->qp) {
                int err = modify_qp_from_cm(p, IBV_QPS_RTR);
                if (!err) err = modify_qp_from_cm(p, IBV_QPS_RTS);
                proto::request r = make_request(err ? proto::op::reject : proto::op::accept, p);
                proto::reply out;
                const int sent = command(ch, r, out);
                if (err || sent) {
                    modify_qp_err(p);
                    evt->event.event = RDMA_CM_EVENT_CONNECT_ERROR;
                    evt->event.status = -(err ? err : sent);
                } else {
                    evt->event.event = RDMA_CM_EVENT_ESTABLISHED;
                }
            }
            break;
        case RDMA_CM_EVENT_REJECTED:
        case RDMA_CM_EVENT_UNREACHABLE:
        case RDMA_CM_EVENT_CONNECT_ERROR: modify_qp_err(p); break;
        default: break;
        }
        std::memcpy(evt->private_data, e.conn.private_data, sizeof evt->private_data);
        if (is_ud(p) && (e.type == RDMA_CM_EVENT_ESTABLISHED || e.type == RDMA_CM_EVENT_CONNECT_REQUEST ||
                         e.type == RDMA_CM_EVENT_UNREACHABLE || e.type == RDMA_CM_EVENT_REJECTED)) {
            rdma_ud_param& ud = evt->event.param.ud;
            ud.private_data = evt->private_data;
            ud.private_data_len = e.conn.private_data_len;
            ud.ah_attr = e.ud.ah_attr;
            ud.qp_num = e.ud.qp_num;
            ud.qkey = e.ud.qkey;
        } else {
            rdma_conn_param& c = evt->event.param.conn;
            c.private_data = e.conn.private_data_len ? evt->private_data : nullptr;
            c.private_data_len = e.conn.private_data_len;
            c.responder_resources = e.conn.responder_resources;
            c.initiator_depth = e.conn.initiator_depth;
            c.flow_control = e.conn.flow_control;
            c.retry_count = e.conn.retry_count;
            c.rnr_retry_count = e.conn.rnr_retry_count;
            c.srq = e.conn.srq;
            c.qp_num = e.conn.qp_num;
        }
        *event = &evt->event;
        return 0;
    }
}

int rdma_ack_cm_event(rdma_cm_event* event) {
    if (!event) return set_errno(EINVAL);
    auto* evt = reinterpret_cast<cma_event*>(event);
    if (id_private* p = evt->id_priv) {
        std::lock_guard lock(p->lock);
        ++p->events_completed;
        p->cond.notify_all();
    }
    delete evt;
    return 0;
}

const char* rdma_event_str(rdma_cm_event_type event) { return proto::event_name(event); }

ibv_context** rdma_get_devices(int* num_devices) {
    std::lock_guard lock(global_lock);
    if (const int e = init_devices()) {
        if (num_devices) *num_devices = 0;
        errno = e;
        return nullptr;
    }
    // NOLINTNEXTLINE(bugprone-sizeof-expression): an array of pointers, as the verbs API hands out
    auto** list = static_cast<ibv_context**>(std::calloc(devices.size() + 1, sizeof(ibv_context*)));
    if (!list) return nullptr;
    for (std::size_t i = 0; i < devices.size(); ++i) list[i] = devices[i].verbs;
    if (num_devices) *num_devices = static_cast<int>(devices.size());
    return list;
}

void rdma_free_devices(ibv_context** list) { std::free(list); }

uint16_t rdma_get_src_port(rdma_cm_id* id) {
    const sockaddr* a = &id->route.addr.src_addr;
    return a->sa_family == AF_INET6  ? reinterpret_cast<const sockaddr_in6*>(a)->sin6_port
           : a->sa_family == AF_INET ? reinterpret_cast<const sockaddr_in*>(a)->sin_port
                                     : 0;
}

uint16_t rdma_get_dst_port(rdma_cm_id* id) {
    const sockaddr* a = &id->route.addr.dst_addr;
    return a->sa_family == AF_INET6  ? reinterpret_cast<const sockaddr_in6*>(a)->sin6_port
           : a->sa_family == AF_INET ? reinterpret_cast<const sockaddr_in*>(a)->sin_port
                                     : 0;
}

int rdma_set_option(rdma_cm_id* id, int level, int optname, void* optval, size_t optlen) {
    if (!id || (!optval && optlen)) return set_errno(EINVAL);
    id_private* p = private_of(id);
    proto::request r = make_request(proto::op::set_option, p);
    r.option_level = level;
    r.option_name = optname;
    if (optlen > sizeof r.option_value) {
        // RDMA_OPTION_IB_PATH carries path records: the route is the fabric's, taken as given.
        if (level == RDMA_OPTION_IB && optname == RDMA_OPTION_IB_PATH)
            optlen = 0;
        else
            return set_errno(EINVAL);
    }
    if (optlen) std::memcpy(r.option_value, optval, optlen);
    r.option_length = static_cast<std::uint32_t>(optlen);
    proto::reply out;
    if (const int e = command(p->channel, r, out)) return set_errno(e);
    return 0;
}

int rdma_migrate_id(rdma_cm_id* id, rdma_event_channel* channel) {
    if (!id) return set_errno(EINVAL);
    id_private* p = private_of(id);
    bool sync = false;
    if (!channel) {
        channel = rdma_create_event_channel();
        if (!channel) return -1;
        sync = true;
    }
    channel_private* to = private_of(channel);
    proto::request r = make_request(proto::op::migrate_id, p);
    r.channel_token = to->token;
    proto::reply out;
    if (const int e = command(p->channel, r, out)) {
        if (sync) rdma_destroy_event_channel(channel);
        return set_errno(e);
    }
    // rdma-core: the event a synchronous id still holds is acknowledged here (rdma_create_ep's
    // ids are synchronous, and libfabric migrates them); then the rest must be, before the id moves.
    if (p->sync && id->event) {
        rdma_ack_cm_event(id->event);
        id->event = nullptr;
    }
    {
        std::unique_lock lock(p->lock);
        p->cond.wait(lock, [&] { return p->events_completed >= p->events_reported; });
    }
    if (p->sync) rdma_destroy_event_channel(id->channel);
    p->sync = sync;
    p->channel = to;
    id->channel = channel;
    return 0;
}

// ---- rdma_getaddrinfo and endpoints (librdmacm/addrinfo.c, cma.c rdma_create_ep) ---------------

// No node and no service: the addresses come from the hints alone, as rdma-core's copies them
// (libfabric's verbs provider passes the peer's address that way).
static int addrinfo_from_hints(const rdma_addrinfo& hints, rdma_addrinfo** res) {
    auto* out = static_cast<rdma_addrinfo*>(std::calloc(1, sizeof(rdma_addrinfo)));
    if (!out) return set_errno(ENOMEM);
    out->ai_flags = hints.ai_flags;
    out->ai_family = hints.ai_family ? hints.ai_family : AF_INET;
    out->ai_port_space = hints.ai_port_space ? hints.ai_port_space : RDMA_PS_TCP;
    out->ai_qp_type = hints.ai_qp_type ? hints.ai_qp_type : out->ai_port_space == RDMA_PS_UDP ? IBV_QPT_UD : IBV_QPT_RC;
    auto copy = [](const sockaddr* from, socklen_t length, sockaddr*& to, socklen_t& to_length) {
        if (!from || !length) return true;
        to = static_cast<sockaddr*>(std::calloc(1, length));
        if (!to) return false;
        std::memcpy(to, from, length);
        to_length = length;
        return true;
    };
    if (!copy(hints.ai_src_addr, hints.ai_src_len, out->ai_src_addr, out->ai_src_len) ||
        !copy(hints.ai_dst_addr, hints.ai_dst_len, out->ai_dst_addr, out->ai_dst_len)) {
        rdma_freeaddrinfo(out);
        return set_errno(ENOMEM);
    }
    *res = out;
    return 0;
}

int rdma_getaddrinfo(const char* node, const char* service, const rdma_addrinfo* hints, rdma_addrinfo** res) {
    if (!res) return set_errno(EINVAL);
    if (!node && !service) {
        if (!hints || (!hints->ai_src_len && !hints->ai_dst_len)) return set_errno(EINVAL);
        if (hints->ai_family == AF_IB) return set_errno(EAFNOSUPPORT);
        return addrinfo_from_hints(*hints, res);
    }
    addrinfo ai_hints{};
    ai_hints.ai_family = hints && hints->ai_family ? hints->ai_family : AF_INET;
    if (ai_hints.ai_family == AF_IB) return set_errno(EAFNOSUPPORT);
    ai_hints.ai_socktype = SOCK_STREAM;
    const bool passive = hints && (hints->ai_flags & RAI_PASSIVE);
    if (passive) ai_hints.ai_flags |= AI_PASSIVE;
    if (hints && (hints->ai_flags & RAI_NUMERICHOST)) ai_hints.ai_flags |= AI_NUMERICHOST;
    addrinfo* found = nullptr;
    const int e = ::getaddrinfo(node, service, &ai_hints, &found);
    if (e) {
        errno = e == EAI_SYSTEM ? errno : ENOENT;
        return e;
    }
    auto* out = static_cast<rdma_addrinfo*>(std::calloc(1, sizeof(rdma_addrinfo)));
    out->ai_flags = hints ? hints->ai_flags : 0;
    out->ai_family = found->ai_family;
    out->ai_port_space = hints && hints->ai_port_space ? hints->ai_port_space : RDMA_PS_TCP;
    out->ai_qp_type = hints && hints->ai_qp_type          ? hints->ai_qp_type
                      : out->ai_port_space == RDMA_PS_UDP ? IBV_QPT_UD
                                                          : IBV_QPT_RC;
    auto* addr = static_cast<sockaddr*>(std::calloc(1, found->ai_addrlen));
    std::memcpy(addr, found->ai_addr, found->ai_addrlen);
    if (passive) {
        out->ai_src_addr = addr;
        out->ai_src_len = found->ai_addrlen;
    } else {
        out->ai_dst_addr = addr;
        out->ai_dst_len = found->ai_addrlen;
        if (hints && hints->ai_src_addr && hints->ai_src_len) {
            out->ai_src_addr = static_cast<sockaddr*>(std::calloc(1, hints->ai_src_len));
            std::memcpy(out->ai_src_addr, hints->ai_src_addr, hints->ai_src_len);
            out->ai_src_len = hints->ai_src_len;
        }
    }
    if (found->ai_canonname) {
        if (passive)
            out->ai_src_canonname = ::strdup(found->ai_canonname);
        else
            out->ai_dst_canonname = ::strdup(found->ai_canonname);
    }
    ::freeaddrinfo(found);
    *res = out;
    return 0;
}

void rdma_freeaddrinfo(rdma_addrinfo* res) {
    while (res) {
        rdma_addrinfo* next = res->ai_next;
        std::free(res->ai_src_addr);
        std::free(res->ai_dst_addr);
        std::free(res->ai_src_canonname);
        std::free(res->ai_dst_canonname);
        std::free(res->ai_route);
        std::free(res->ai_connect);
        std::free(res);
        res = next;
    }
}

int rdma_create_ep(rdma_cm_id** id, rdma_addrinfo* res, ibv_pd* pd, ibv_qp_init_attr* qp_init_attr) {
    if (!id || !res) return set_errno(EINVAL);
    rdma_cm_id* cm_id = nullptr;
    if (rdma_create_id(nullptr, &cm_id, nullptr, static_cast<rdma_port_space>(res->ai_port_space))) return -1;
    id_private* p = private_of(cm_id);
    int ret;
    if (res->ai_flags & RAI_PASSIVE) {
        ret = rdma_bind_addr(cm_id, res->ai_src_addr);
        if (ret) goto fail;
        if (qp_init_attr) {
            p->qp_init_attr = new ibv_qp_init_attr(*qp_init_attr);
            p->qp_init_attr->qp_type = static_cast<ibv_qp_type>(res->ai_qp_type);
            if (pd) cm_id->pd = pd; // ucma_passive_ep: else the device's, from rdma_bind_addr
        }
        *id = cm_id;
        return 0;
    }
    ret = rdma_resolve_addr(cm_id, res->ai_src_addr, res->ai_dst_addr, 2000);
    if (ret) goto fail;
    ret = rdma_resolve_route(cm_id, 2000);
    if (ret) goto fail;
    if (qp_init_attr) {
        qp_init_attr->qp_type = static_cast<ibv_qp_type>(res->ai_qp_type);
        ret = rdma_create_qp(cm_id, pd, qp_init_attr);
        if (ret) goto fail;
    }
    *id = cm_id;
    return 0;
fail : {
    const int e = errno;
    rdma_destroy_ep(cm_id);
    errno = e;
    return -1;
}
}

void rdma_destroy_ep(rdma_cm_id* id) {
    if (!id) return;
    if (id->qp) rdma_destroy_qp(id);
    if (id->srq) rdma_destroy_srq(id);
    rdma_destroy_id(id);
}

int rdma_get_request(rdma_cm_id* listen, rdma_cm_id** id) {
    if (!listen || !id) return set_errno(EINVAL);
    id_private* p = private_of(listen);
    if (!p->sync) return set_errno(EINVAL);
    if (listen->event) {
        rdma_ack_cm_event(listen->event);
        listen->event = nullptr;
    }
    rdma_cm_event* event = nullptr;
    if (rdma_get_cm_event(listen->channel, &event)) return -1;
    if (event->status) {
        const int e = event->status < 0 ? -event->status : event->status;
        rdma_ack_cm_event(event);
        return set_errno(e);
    }
    if (event->event != RDMA_CM_EVENT_CONNECT_REQUEST) {
        rdma_ack_cm_event(event);
        return set_errno(EINVAL);
    }
    // The new id runs synchronously too, on a channel of its own (rdma-core migrates it).
    rdma_cm_id* child = event->id;
    if (rdma_migrate_id(child, nullptr) == 0) {
        // migrate waits for acks of the child's own events only: the request is the listener's
    }
    child->event = event;
    *id = child;
    return 0;
}

int rdma_create_srq_ex(rdma_cm_id* id, ibv_srq_init_attr_ex* attr) {
    if (!id || !attr) return set_errno(EINVAL);
    id_private* p = private_of(id);
    if (!p->device) return set_errno(EINVAL);
    ibv_pd* pd = (attr->comp_mask & IBV_SRQ_INIT_ATTR_PD) && attr->pd ? attr->pd : p->device->pd;
    ibv_srq_init_attr plain{};
    plain.srq_context = attr->srq_context;
    plain.attr = attr->attr;
    ibv_srq* srq = ibv_create_srq(pd, &plain);
    if (!srq) return -1;
    attr->attr = plain.attr;
    id->srq = srq;
    id->pd = pd;
    return 0;
}

int rdma_create_srq(rdma_cm_id* id, ibv_pd* pd, ibv_srq_init_attr* attr) {
    if (!id || !attr) return set_errno(EINVAL);
    ibv_srq_init_attr_ex ex{};
    ex.srq_context = attr->srq_context;
    ex.attr = attr->attr;
    ex.comp_mask = IBV_SRQ_INIT_ATTR_PD;
    ex.pd = pd;
    if (rdma_create_srq_ex(id, &ex)) return -1;
    attr->attr = ex.attr;
    return 0;
}

void rdma_destroy_srq(rdma_cm_id* id) {
    if (!id || !id->srq) return;
    ibv_destroy_srq(id->srq);
    id->srq = nullptr;
}

// ECE (enhanced connection establishment) is a ConnectX-6 Dx vendor extension the emulated NIC
// does not offer: as rdma-core on a device without it, setting is refused, and nothing comes back.
int rdma_set_local_ece(rdma_cm_id* id, ibv_ece* ece) {
    if (!id || !ece) return set_errno(EINVAL);
    return set_errno(EOPNOTSUPP);
}

int rdma_get_remote_ece(rdma_cm_id* id, ibv_ece* ece) {
    if (!id || !ece) return set_errno(EINVAL);
    return set_errno(EOPNOTSUPP);
}

} // extern "C"
