// The NIC's command interface: what the firmware of a real NIC does when the driver creates,
// modifies and destroys objects. Control path: allocation and errno results are fine here.

#include "nic_emu/nic_node.hpp"

#include "dataplane/log.hpp"
#include "nic_emu/qp_transitions.hpp"

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

namespace rocefab::nic {

// ---- shared_region -------------------------------------------------------------------------

shared_region::~shared_region() {
    if (_base) ::munmap(_base, _length);
}

shared_region& shared_region::operator=(shared_region&& other) noexcept {
    if (this != &other) {
        if (_base) ::munmap(_base, _length);
        _base = other._base;
        _length = other._length;
        other._base = nullptr;
        other._length = 0;
    }
    return *this;
}

bool shared_region::create(const char* name, std::size_t length, shared_region& out, int& fd) {
    fd = ::memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING);
    if (fd < 0) return false;
    // Sealed at its size: a program that truncated its ring would otherwise make the NIC's next
    // read of it a SIGBUS that kills the daemon.
    if (::ftruncate(fd, static_cast<off_t>(length)) != 0 ||
        ::fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0) {
        const int e = errno;
        ::close(fd);
        errno = e;
        return false;
    }
    void* base = ::mmap(nullptr, length, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (base == MAP_FAILED) {
        const int e = errno;
        ::close(fd);
        errno = e;
        return false;
    }
    out = shared_region(base, length); // memfd pages start zeroed
    return true;
}

// ---- identity --------------------------------------------------------------------------------

namespace {

// Modified EUI-64 from a MAC (RFC 4291 appendix A): the GUID and the link-local GID's
// interface identifier, as Soft-RoCE and mlx5 derive them.
std::array<std::uint8_t, 8> eui64(const wire::mac_address& mac) {
    const auto& m = mac.bytes;
    return {static_cast<std::uint8_t>(m[0] ^ 2), m[1], m[2], 0xff, 0xfe, m[3], m[4], m[5]};
}

// The largest IB MTU whose packets fit in the IP MTU with the worst-case RoCE headers, as the
// kernel's iboe_get_mtu() computes it (GRH 40 + UDP 8 + BTH 12 + AtomicETH 28 + XRC 4 + ICRC 4).
ibv_mtu ib_mtu_for(std::uint32_t ip_mtu) {
    const std::int64_t room = std::int64_t(ip_mtu) - (40 + 8 + 12 + 28 + 4 + 4);
    if (room >= 4096) return IBV_MTU_4096;
    if (room >= 2048) return IBV_MTU_2048;
    if (room >= 1024) return IBV_MTU_1024;
    if (room >= 512) return IBV_MTU_512;
    return IBV_MTU_256;
}

std::uint32_t mtu_bytes(ibv_mtu mtu) { return 128u << mtu; }

} // namespace

nic_node::nic_node(nic_spec spec, neighbour_resolver resolver)
    : node(spec.host + "/" + spec.name, 1), _spec(std::move(spec)), _resolve(std::move(resolver)),
      _rx_pauses(_spec.speed_bps) {
    const auto id = eui64(_spec.mac);
    wire::ipv6_address link_local;
    link_local.bytes[0] = 0xfe;
    link_local.bytes[1] = 0x80;
    std::copy(id.begin(), id.end(), link_local.bytes.begin() + 8);
    _gids[0] = link_local;
    _gids[1] = _spec.address;
    _node_guid = 0;
    for (auto b : id) _node_guid = _node_guid << 8 | b;
    // Room for the smallest frames that fit the receive buffer: no allocation per frame.
    if (_spec.host_rx_bps) _rx.ring.resize(std::bit_ceil(_spec.rx_buffer_bytes / wire::ethernet_min_frame_length + 1));
}

nic_node::~nic_node() {
    std::vector<std::uint32_t> contexts;
    for (const auto& [id, c] : _contexts) contexts.push_back(id);
    for (auto id : contexts) close_context(id);
    while (_rx.head != _rx.tail) rte_pktmbuf_free(_rx.ring[_rx.head++ & (_rx.ring.size() - 1)]);
    while (_loopback.head != _loopback.tail)
        rte_pktmbuf_free(_loopback.frames[_loopback.head++ & (loopback_ring::slots - 1)]);
}

ibv_device_attr nic_node::device_attributes() const {
    ibv_device_attr a{};
    std::snprintf(a.fw_ver, sizeof a.fw_ver, "rocefab 0.1.0");
    a.node_guid = htobe64(_node_guid);
    a.sys_image_guid = htobe64(_node_guid);
    a.max_mr_size = ~0ull;
    a.page_size_cap = 0xfffff000;
    a.vendor_id = 0xffffff; // no PCI vendor: the value Soft-RoCE reports for a software device
    a.vendor_part_id = 0;
    a.hw_ver = 0;
    a.max_qp = static_cast<int>(limits::max_qp);
    a.max_qp_wr = static_cast<int>(hw::max_queue_depth);
    a.device_cap_flags = IBV_DEVICE_RC_RNR_NAK_GEN | IBV_DEVICE_PORT_ACTIVE_EVENT | IBV_DEVICE_SYS_IMAGE_GUID;
    a.max_srq = static_cast<int>(limits::max_srq);
    a.max_srq_wr = static_cast<int>(hw::max_queue_depth);
    a.max_srq_sge = static_cast<int>(hw::max_sge);
    a.max_ah = static_cast<int>(limits::max_ah);
    a.max_sge = static_cast<int>(hw::max_sge);
    a.max_sge_rd = static_cast<int>(hw::max_sge);
    a.max_cq = static_cast<int>(limits::max_cq);
    a.max_cqe = static_cast<int>(hw::max_cqe);
    a.max_mr = static_cast<int>(limits::max_mr);
    a.max_pd = static_cast<int>(limits::max_pd);
    a.max_qp_rd_atom = 16;
    a.max_res_rd_atom = static_cast<int>(16 * limits::max_qp);
    a.max_qp_init_rd_atom = 16;
    // Atomic with respect to this HCA's other operations, not to the host CPU (see
    // responder_read_atomic.cpp): what IBV_ATOMIC_HCA promises.
    a.atomic_cap = IBV_ATOMIC_HCA;
    a.max_pkeys = 1;
    a.local_ca_ack_delay = 15;
    a.phys_port_cnt = 1;
    return a;
}

ibv_port_attr nic_node::port_attributes() const {
    ibv_port_attr p{};
    p.state = IBV_PORT_ACTIVE;
    p.max_mtu = IBV_MTU_4096;
    p.active_mtu = ib_mtu_for(_spec.ip_mtu);
    p.gid_tbl_len = gid_count;
    p.port_cap_flags = 0;
    p.max_msg_sz = 1u << 31;
    p.pkey_tbl_len = 1;
    p.lid = 0;
    p.sm_lid = 0;
    p.lmc = 0;
    p.max_vl_num = 1;
    p.sm_sl = 0;
    p.subnet_timeout = 0;
    p.init_type_reply = 0;
    // Speed and width as an IB port of the same rate reports it (EDR lanes are 25 Gb/s,
    // HDR 50, NDR 100).
    const std::uint64_t gbps = _spec.speed_bps / 1'000'000'000;
    p.active_width = 2; // 4x
    if (gbps >= 400)
        p.active_speed = 128; // NDR x4
    else if (gbps >= 200)
        p.active_speed = 64; // HDR x4
    else if (gbps >= 100)
        p.active_speed = 32; // EDR x4
    else if (gbps >= 40)
        p.active_speed = 4; // QDR x4
    else if (gbps >= 25)
        p.active_speed = 32, p.active_width = 1; // EDR x1
    else
        p.active_speed = 16, p.active_width = 1; // FDR10-class x1 for 10G and below
    p.phys_state = 5;                            // LinkUp
    p.link_layer = IBV_LINK_LAYER_ETHERNET;
    return p;
}

// ---- numbers -----------------------------------------------------------------------------------
// Handles, keys and QPNs come from counters that wrap; each skips the numbers live objects hold,
// so a new object never takes the name of one that lives (and a peer's stale rkey never reaches
// a new MR that happens to get its number after a wrap, unless that MR is created in the same
// place: mlx5 varies the key's low byte for the same reason).

std::uint32_t nic_node::allocate_handle() {
    auto taken = [this](std::uint32_t h) {
        return h == 0 || _contexts.count(h) || _pds.count(h) || _mr_handles.count(h) || _channels.count(h) ||
               _cqs.count(h) || _qps.count(h) || _ahs.count(h) || _srqs.count(h);
    };
    while (taken(_next_handle)) ++_next_handle;
    return _next_handle++;
}

std::uint32_t nic_node::allocate_key(std::uint32_t handle) {
    // An index in the upper 24 bits and a varying low byte, like mlx5's mkeys.
    for (;;) {
        _next_key = (_next_key + 1) & wire::mask24;
        const std::uint32_t key = _next_key << 8 | (handle & 0xff);
        if (_next_key != 0 && _mrs_by_lkey.free(key)) return key;
    }
}

std::uint32_t nic_node::allocate_qpn() {
    // QP0 and QP1 are the special QPs (IBA 10.2.3).
    for (;;) {
        const std::uint32_t qpn = _next_qpn;
        _next_qpn = (_next_qpn + 1) & wire::mask24;
        if (qpn > 1 && _qps_by_number.free(qpn)) return qpn;
    }
}

// ---- contexts, PDs, MRs -----------------------------------------------------------------------

std::vector<nic_node::qp_view> nic_node::queue_pairs(sim_time now) const {
    std::vector<qp_view> out;
    out.reserve(_qps.size());
    for (const auto& [handle, qp] : _qps) {
        qp_view v{};
        v.qpn = qp->qpn;
        v.dest_qpn = qp->attr.dest_qp_num;
        v.type = qp->type;
        v.state = qp->state;
        v.sq_psn = qp->requester.next_psn;
        v.rq_psn = qp->responder.expected_psn;
        v.last_acked_psn = qp->completer.last_acked_psn;
        v.sq_posted = qp->control->send.producer.load(std::memory_order_acquire);
        v.sq_started = qp->requester.sq_started;
        v.sq_current = qp->requester.sq_current;
        v.sq_retired = qp->requester.sq_retired;
        v.port_busy_for = busy_until(0) > now ? busy_until(0) - now : 0;
        v.rq_posted = qp->control->recv.producer.load(std::memory_order_acquire);
        v.rq_consumed = qp->responder.rq_consumed;
        v.timer_armed = qp->completer.retransmit_deadline != never;
        v.waiting_rnr = now < qp->requester.rnr_wait_until;
        v.responses_pending = qp->responder.deferred_ack || _responder.responses_pending(*qp);
        const dcqcn_rate rate = rate_at(*qp, now);
        v.rate_limited = rate.limited();
        v.current_rate_bps = rate.current_rate_bps();
        v.target_rate_bps = rate.target_rate_bps();
        v.alpha = rate.alpha();
        auto cq_indices = [](const completion_queue* cq, std::uint32_t& produced, std::uint32_t& consumed) {
            if (!cq) return;
            produced = cq->produced;
            consumed = cq->control->ring.consumer.load(std::memory_order_acquire);
        };
        cq_indices(qp->send_cq, v.send_cq_produced, v.send_cq_consumed);
        cq_indices(qp->recv_cq, v.recv_cq_produced, v.recv_cq_consumed);
        out.push_back(v);
    }
    return out;
}

std::uint32_t nic_node::open_context(std::unique_ptr<address_space> memory, int async_fd, shared_region doorbells) {
    const std::uint32_t id = allocate_handle();
    context_state& c = _contexts[id];
    c.id = id;
    c.memory = std::move(memory);
    if (c.memory) c.memory->count_into(&_transport.counters);
    c.async_fd = async_fd;
    if (doorbells.base() && doorbells.length() >= sizeof(hw::doorbell_queue)) {
        c.doorbell_region = std::move(doorbells);
        c.doorbells = static_cast<hw::doorbell_queue*>(c.doorbell_region.base());
        c.doorbells->ring.size = hw::doorbell_queue_slots;
        c.doorbells->ring.slot_size = sizeof(std::uint32_t);
    }
    return id;
}

void nic_node::close_context(std::uint32_t context) {
    auto it = _contexts.find(context);
    if (it == _contexts.end()) return;
    _responder.flush_dma(); // nothing staged may outlive the objects it names
    // Children first, as the kernel's uverbs cleanup does: QPs, CQs, channels, MRs, PDs.
    std::vector<std::uint32_t> handles;
    for (const auto& [h, qp] : _qps)
        if (qp->context == context) handles.push_back(h);
    for (auto h : handles) destroy_qp(context, h);
    handles.clear();
    for (const auto& [h, srq] : _srqs)
        if (srq->context == context) handles.push_back(h);
    for (auto h : handles) destroy_srq(context, h);
    handles.clear();
    for (const auto& [h, ah] : _ahs)
        if (ah.context == context) handles.push_back(h);
    for (auto h : handles) destroy_ah(context, h);
    handles.clear();
    for (const auto& [h, cq] : _cqs)
        if (cq->context == context) handles.push_back(h);
    for (auto h : handles) destroy_cq(context, h);
    handles.clear();
    for (const auto& [h, ch] : _channels)
        if (ch.first == context) handles.push_back(h);
    for (auto h : handles) destroy_channel(context, h);
    handles.clear();
    for (const auto& [h, key] : _mr_handles)
        if (_mrs_by_lkey.find(key)->context == context) handles.push_back(h);
    for (auto h : handles) dereg_mr(context, h);
    handles.clear();
    for (const auto& [h, pd] : _pds)
        if (pd.context == context) handles.push_back(h);
    for (auto h : handles) dealloc_pd(context, h);
    if (it->second.async_fd >= 0) ::close(it->second.async_fd);
    _contexts.erase(it);
}

int nic_node::alloc_pd(std::uint32_t context, std::uint32_t& handle) {
    if (!_contexts.count(context)) return EINVAL;
    if (_pds.size() >= limits::max_pd) return ENOMEM;
    handle = allocate_handle();
    _pds[handle] = {handle, context};
    return 0;
}

int nic_node::dealloc_pd(std::uint32_t context, std::uint32_t handle) {
    auto it = _pds.find(handle);
    if (it == _pds.end() || it->second.context != context) return EINVAL;
    bool in_use = false;
    _mrs_by_lkey.for_each([&](const memory_region& mr) { in_use |= mr.pd == handle; });
    if (in_use) return EBUSY;
    for (const auto& [h, qp] : _qps)
        if (qp->pd == handle) return EBUSY;
    for (const auto& [h, srq] : _srqs)
        if (srq->pd == handle) return EBUSY;
    for (const auto& [h, ah] : _ahs)
        if (ah.pd == handle) return EBUSY;
    _pds.erase(it);
    return 0;
}

int nic_node::reg_mr(std::uint32_t context, std::uint32_t pd, std::uint64_t address, std::uint64_t length,
                     std::uint64_t iova, std::uint32_t access, std::uint32_t& handle, std::uint32_t& lkey,
                     std::uint32_t& rkey) {
    auto c = _contexts.find(context);
    auto p = _pds.find(pd);
    if (c == _contexts.end() || p == _pds.end() || p->second.context != context) return EINVAL;
    if (length == 0 || address + length < address) return EINVAL;
    // IBA 10.6.3.1: remote write or atomic access needs local write access.
    if ((access & (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC)) && !(access & IBV_ACCESS_LOCAL_WRITE))
        return EINVAL;
    constexpr std::uint32_t known = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
                                    IBV_ACCESS_REMOTE_ATOMIC | IBV_ACCESS_MW_BIND | IBV_ACCESS_ZERO_BASED |
                                    IBV_ACCESS_ON_DEMAND | IBV_ACCESS_HUGETLB | IBV_ACCESS_RELAXED_ORDERING;
    if (access & ~known) return EINVAL;
    if (access & (IBV_ACCESS_ON_DEMAND | IBV_ACCESS_ZERO_BASED | IBV_ACCESS_MW_BIND)) return EOPNOTSUPP;
    // Whether the pages are there (EFAULT otherwise, as pinning them fails) the control plane
    // has checked against the program's own maps (process_memory::check_range).
    if (_mrs_by_lkey.size() >= limits::max_mr) return ENOMEM;
    handle = allocate_handle();
    const std::uint32_t key = allocate_key(handle);
    memory_region mr;
    mr.handle = handle;
    mr.context = context;
    mr.pd = pd;
    mr.address = address;
    mr.length = length;
    mr.iova = iova;
    mr.access = access;
    mr.lkey = key;
    mr.rkey = key;
    mr.memory = c->second.memory.get();
    _mrs_by_lkey.insert(mr);
    _mr_handles[handle] = key;
    lkey = rkey = key;
    return 0;
}

int nic_node::dereg_mr(std::uint32_t context, std::uint32_t handle) {
    _responder.flush_dma();
    auto it = _mr_handles.find(handle);
    if (it == _mr_handles.end() || _mrs_by_lkey.find(it->second)->context != context) return EINVAL;
    _mrs_by_lkey.erase(it->second);
    _mr_handles.erase(it);
    return 0;
}

const memory_region* nic_node::local_mr(std::uint32_t lkey, std::uint32_t pd, std::uint64_t address,
                                        std::uint64_t length, std::uint32_t needed_access) const {
    const memory_region* found = _mrs_by_lkey.find(lkey);
    if (!found) return nullptr;
    const memory_region& mr = *found;
    if (mr.pd != pd) return nullptr;
    if ((mr.access & needed_access) != needed_access) return nullptr;
    if (address < mr.address || length > mr.length || address - mr.address > mr.length - length) return nullptr;
    return &mr;
}

const memory_region* nic_node::remote_mr(std::uint32_t rkey, std::uint32_t pd, std::uint64_t va, std::uint64_t length,
                                         std::uint32_t needed_access) const {
    const memory_region* found = _mrs_by_lkey.find(rkey);
    if (!found) return nullptr;
    const memory_region& mr = *found;
    if (mr.pd != pd) return nullptr;
    if ((mr.access & needed_access) != needed_access) return nullptr;
    if (va < mr.iova || length > mr.length || va - mr.iova > mr.length - length) return nullptr;
    return &mr;
}

// ---- channels and CQs -------------------------------------------------------------------------

int nic_node::create_channel(std::uint32_t context, int channel_fd, std::uint32_t& handle) {
    if (!_contexts.count(context)) return EINVAL;
    if (_channels.size() >= limits::max_comp_channels) return ENOMEM;
    handle = allocate_handle();
    _channels[handle] = {context, channel_fd};
    return 0;
}

int nic_node::destroy_channel(std::uint32_t context, std::uint32_t handle) {
    auto it = _channels.find(handle);
    if (it == _channels.end() || it->second.first != context) return EINVAL;
    for (const auto& [h, cq] : _cqs)
        if (cq->channel == handle) return EBUSY;
    ::close(it->second.second);
    _channels.erase(it);
    return 0;
}

int nic_node::create_cq(std::uint32_t context, std::uint32_t slots, std::uint32_t channel, shared_region region,
                        std::uint32_t& handle) {
    if (!_contexts.count(context)) return EINVAL;
    int channel_fd = -1;
    if (channel) {
        auto it = _channels.find(channel);
        if (it == _channels.end() || it->second.first != context) return EINVAL;
        channel_fd = it->second.second;
    }
    if (_cqs.size() >= limits::max_cq) return ENOMEM;
    auto cq = std::make_unique<completion_queue>();
    cq->handle = handle = allocate_handle();
    cq->context = context;
    cq->control = static_cast<hw::cq_control*>(region.base());
    cq->slots = reinterpret_cast<hw::cqe*>(static_cast<char*>(region.base()) + hw::cq_slots_offset);
    cq->size = slots;
    cq->control->ring.size = slots;
    cq->control->ring.slot_size = sizeof(hw::cqe);
    cq->region = std::move(region);
    cq->channel = channel;
    cq->channel_fd = channel_fd;
    _cqs[cq->handle] = std::move(cq);
    return 0;
}

int nic_node::destroy_cq(std::uint32_t context, std::uint32_t handle) {
    _responder.flush_dma();
    auto it = _cqs.find(handle);
    if (it == _cqs.end() || it->second->context != context) return EINVAL;
    for (const auto& [h, qp] : _qps)
        if (qp->send_cq == it->second.get() || qp->recv_cq == it->second.get()) return EBUSY;
    _cqs.erase(it);
    return 0;
}

// ---- QPs ----------------------------------------------------------------------------------------

int nic_node::qp_geometry(const ibv_qp_cap& requested, ibv_qp_cap& granted, std::uint32_t& send_slots,
                          std::uint32_t& recv_slots) {
    if (requested.max_send_wr > hw::max_queue_depth || requested.max_recv_wr > hw::max_queue_depth ||
        requested.max_send_sge > hw::max_sge || requested.max_recv_sge > hw::max_sge ||
        requested.max_inline_data > hw::max_inline_data)
        return EINVAL;
    send_slots = hw::ring_slots_for(std::max<std::uint32_t>(requested.max_send_wr, 1));
    recv_slots = hw::ring_slots_for(std::max<std::uint32_t>(requested.max_recv_wr, 1));
    granted.max_send_wr = send_slots;
    granted.max_recv_wr = recv_slots;
    granted.max_send_sge = std::max<std::uint32_t>(requested.max_send_sge, 1);
    granted.max_recv_sge = std::max<std::uint32_t>(requested.max_recv_sge, 1);
    // Like ConnectX, the QP gets the inline room its WQE size allows, whatever was asked.
    granted.max_inline_data = hw::max_inline_data;
    return 0;
}

int nic_node::create_qp(std::uint32_t context, const qp_request& request, shared_region region, std::uint32_t& handle,
                        std::uint32_t& qpn, ibv_qp_cap& cap) {
    if (!_contexts.count(context)) return EINVAL;
    auto pd = _pds.find(request.pd);
    auto scq = _cqs.find(request.send_cq);
    auto rcq = _cqs.find(request.recv_cq);
    if (pd == _pds.end() || pd->second.context != context) return EINVAL;
    if (scq == _cqs.end() || scq->second->context != context) return EINVAL;
    if (rcq == _cqs.end() || rcq->second->context != context) return EINVAL;
    if (request.type != IBV_QPT_RC && request.type != IBV_QPT_UC && request.type != IBV_QPT_UD) return EOPNOTSUPP;
    shared_receive_queue* srq = nullptr;
    if (request.srq) {
        auto s = _srqs.find(request.srq);
        if (s == _srqs.end() || s->second->context != context) return EINVAL;
        srq = s->second.get();
    }
    std::uint32_t send_slots, recv_slots;
    if (int error = qp_geometry(request.cap, cap, send_slots, recv_slots)) return error;
    if (region.length() < hw::qp_region_size(send_slots, recv_slots)) return EINVAL;
    if (_qps.size() >= limits::max_qp) return ENOMEM;

    auto qp = std::make_unique<queue_pair>();
    qp->handle = handle = allocate_handle();
    qp->context = context;
    qp->qpn = qpn = allocate_qpn();
    qp->pd = request.pd;
    qp->type = request.type;
    qp->send_cq = scq->second.get();
    qp->recv_cq = rcq->second.get();
    qp->sq_sig_all = request.sq_sig_all;
    qp->cap = cap;
    qp->srq = srq;
    qp->rate.emplace(_spec.dcqcn, _spec.speed_bps);
    qp->notifier.emplace(_spec.dcqcn);
    qp->control = static_cast<hw::qp_control*>(region.base());
    qp->send_slots = reinterpret_cast<hw::send_wqe*>(static_cast<char*>(region.base()) + hw::qp_send_slots_offset);
    qp->recv_slots =
        reinterpret_cast<hw::recv_wqe*>(static_cast<char*>(region.base()) + hw::qp_recv_slots_offset(send_slots));
    qp->send_size = send_slots;
    qp->recv_size = recv_slots;
    qp->control->send.size = send_slots;
    qp->control->send.slot_size = sizeof(hw::send_wqe);
    qp->control->recv.size = recv_slots;
    qp->control->recv.slot_size = sizeof(hw::recv_wqe);
    qp->region = std::move(region);
    qp->requester.started_work.resize(send_slots);
    qp->attr.qp_state = IBV_QPS_RESET;
    qp->attr.path_mtu = IBV_MTU_1024;
    if (qp->type == IBV_QPT_UD) {
        // A UD QP has no path of its own: its messages are bounded by the port's MTU.
        qp->attr.path_mtu = port_attributes().active_mtu;
        qp->mtu_bytes = mtu_bytes(qp->attr.path_mtu);
    }
    qp->completer.adaptive = adaptive_timeout::initial(qp->qpn, _spec.adaptive_timeouts);
    qp->priority = _transport.priority_for(qp->headers);
    _qps_by_number.insert(qp.get());
    activate(*qp);
    if (_contexts.at(context).doorbells == nullptr) qp->listing = poll_listing::always;
    _qps[qp->handle] = std::move(qp);
    return 0;
}

int nic_node::destroy_qp(std::uint32_t context, std::uint32_t handle) {
    _responder.flush_dma();
    auto it = _qps.find(handle);
    if (it == _qps.end() || it->second->context != context) return EINVAL;
    queue_pair* qp = it->second.get();
    _responder.release_early(*qp);
    _qps_by_number.erase(qp->qpn);
    _active_qps.erase(std::remove(_active_qps.begin(), _active_qps.end(), qp), _active_qps.end());
    _round_robin = 0;
    _qps.erase(it);
    return 0;
}

std::optional<nic_node::send_state> nic_node::send_progress(std::uint32_t qpn, sim_time now) const {
    const queue_pair* qp = find_qp_by_number(qpn);
    if (!qp) return std::nullopt;
    return send_state{qp->requester.next_psn, rate_at(*qp, now).current_rate_bps()};
}

dcqcn_rate nic_node::rate_at(const queue_pair& qp, sim_time now) {
    dcqcn_rate rate = *qp.rate; // brought up to now on a copy: reading must not move the QP
    rate.advance(now);
    return rate;
}

const queue_pair* nic_node::find_qp_by_number(std::uint32_t qpn) const {
    queue_pair* const* found = _qps_by_number.find(qpn);
    return found ? *found : nullptr;
}

int nic_node::query_qp(std::uint32_t context, std::uint32_t handle, ibv_qp_attr& attr, ibv_qp_cap& cap,
                       bool& sq_sig_all) const {
    auto it = _qps.find(handle);
    if (it == _qps.end() || it->second->context != context) return EINVAL;
    const queue_pair& qp = *it->second;
    attr = qp.attr;
    attr.qp_state = qp.state;
    attr.cur_qp_state = qp.state;
    attr.cap = qp.cap;
    attr.sq_psn = qp.requester.next_psn;
    attr.rq_psn = qp.responder.expected_psn;
    cap = qp.cap;
    sq_sig_all = qp.sq_sig_all;
    return 0;
}

int nic_node::modify_qp(std::uint32_t context, std::uint32_t handle, const ibv_qp_attr& attr, int mask, sim_time now) {
    auto it = _qps.find(handle);
    if (it == _qps.end() || it->second->context != context) return EINVAL;
    queue_pair& qp = *it->second;
    // `attr` is a client's message as it came (attach_protocol.hpp): its enum fields may hold any
    // 32-bit value, and loading one outside its enum's range is undefined. They are checked as
    // integers before anything reads them as enums.
    const auto raw = [](const auto& field) {
        static_assert(sizeof field == sizeof(std::uint32_t));
        std::uint32_t value;
        std::memcpy(&value, &field, sizeof value);
        return value;
    };
    if ((mask & IBV_QP_STATE) && raw(attr.qp_state) > IBV_QPS_ERR) return EINVAL;
    if ((mask & IBV_QP_CUR_STATE) && raw(attr.cur_qp_state) > IBV_QPS_ERR) return EINVAL;
    if ((mask & IBV_QP_PATH_MTU) && (raw(attr.path_mtu) < IBV_MTU_256 || raw(attr.path_mtu) > IBV_MTU_4096))
        return EINVAL;
    const ibv_qp_state cur = (mask & IBV_QP_CUR_STATE) ? attr.cur_qp_state : qp.state;
    if ((mask & IBV_QP_CUR_STATE) && attr.cur_qp_state != qp.state) return EINVAL;
    const ibv_qp_state next = (mask & IBV_QP_STATE) ? attr.qp_state : cur;
    if (check_transition(qp.type, cur, next, mask)) return EINVAL;

    // Values (IBA 10.3 and the device's limits).
    if ((mask & IBV_QP_PORT) && attr.port_num != 1) return EINVAL;
    if ((mask & IBV_QP_PKEY_INDEX) && attr.pkey_index != 0) return EINVAL;
    if ((mask & IBV_QP_PATH_MTU) && (attr.path_mtu < IBV_MTU_256 || attr.path_mtu > port_attributes().active_mtu))
        return EINVAL;
    if ((mask & IBV_QP_TIMEOUT) && attr.timeout > 31) return EINVAL;
    if ((mask & IBV_QP_RETRY_CNT) && attr.retry_cnt > 7) return EINVAL;
    if ((mask & IBV_QP_RNR_RETRY) && attr.rnr_retry > 7) return EINVAL;
    if ((mask & IBV_QP_MIN_RNR_TIMER) && attr.min_rnr_timer > 31) return EINVAL;
    if ((mask & IBV_QP_MAX_QP_RD_ATOMIC) && attr.max_rd_atomic > 16) return EINVAL;
    if ((mask & IBV_QP_MAX_DEST_RD_ATOMIC) && attr.max_dest_rd_atomic > 16) return EINVAL;
    wire::mac_address next_hop;
    if (mask & IBV_QP_AV) {
        // RoCE carries every packet in UDP/IP: an address vector without a GRH cannot be
        // routed, and hardware rejects it (rdma-core's mlx5 and rxe both require is_global).
        if (!attr.ah_attr.is_global || attr.ah_attr.port_num > 1) return EINVAL;
        if (attr.ah_attr.grh.sgid_index >= gid_count) return EINVAL;
        wire::ipv6_address dgid;
        std::memcpy(dgid.bytes.data(), attr.ah_attr.grh.dgid.raw, 16);
        const bool source_v4 = _gids[attr.ah_attr.grh.sgid_index].is_v4_mapped();
        if (source_v4 != dgid.is_v4_mapped()) return EINVAL;
        if (!_resolve || !_resolve(dgid, next_hop)) return EHOSTUNREACH;
    }

    // Apply.
    if (mask & IBV_QP_PKEY_INDEX) qp.attr.pkey_index = attr.pkey_index;
    if (mask & IBV_QP_PORT) qp.attr.port_num = attr.port_num;
    if (mask & IBV_QP_ACCESS_FLAGS) qp.attr.qp_access_flags = attr.qp_access_flags;
    if (mask & IBV_QP_QKEY) qp.attr.qkey = attr.qkey;
    if (mask & IBV_QP_PATH_MTU) {
        qp.attr.path_mtu = attr.path_mtu;
        qp.mtu_bytes = mtu_bytes(attr.path_mtu);
    }
    if (mask & IBV_QP_DEST_QPN) qp.attr.dest_qp_num = attr.dest_qp_num & wire::mask24;
    if (mask & IBV_QP_RQ_PSN) {
        qp.attr.rq_psn = attr.rq_psn & wire::psn_mask;
        qp.responder.expected_psn = qp.attr.rq_psn;
    }
    if (mask & IBV_QP_SQ_PSN) {
        qp.attr.sq_psn = attr.sq_psn & wire::psn_mask;
        qp.requester.next_psn = qp.attr.sq_psn;
        qp.requester.psn_frontier = qp.requester.next_psn;
        qp.completer.last_acked_psn = wire::psn_add(qp.requester.next_psn, wire::psn_mask); // next_psn - 1
    }
    if (mask & IBV_QP_MAX_DEST_RD_ATOMIC) qp.attr.max_dest_rd_atomic = attr.max_dest_rd_atomic;
    if (mask & IBV_QP_MAX_QP_RD_ATOMIC) qp.attr.max_rd_atomic = attr.max_rd_atomic;
    if (mask & IBV_QP_MIN_RNR_TIMER) qp.attr.min_rnr_timer = attr.min_rnr_timer;
    if (mask & IBV_QP_TIMEOUT) {
        qp.attr.timeout = attr.timeout;
        // IBA 9.7.6.1.3: 4.096 us * 2^timeout; 0 means the timer is off.
        qp.ack_timeout = attr.timeout ? sim_time(4096) << attr.timeout : 0;
    }
    if (mask & IBV_QP_RETRY_CNT) {
        qp.attr.retry_cnt = attr.retry_cnt;
        qp.completer.retries_left = attr.retry_cnt;
    }
    if (mask & IBV_QP_RNR_RETRY) {
        qp.attr.rnr_retry = attr.rnr_retry;
        qp.completer.rnr_retries_left = attr.rnr_retry;
    }
    if (mask & IBV_QP_AV) {
        qp.attr.ah_attr = attr.ah_attr;
        wire::roce_headers_spec& h = qp.headers;
        h = {};
        h.source_mac = _spec.mac;
        h.destination_mac = next_hop;
        h.source_gid = _gids[attr.ah_attr.grh.sgid_index];
        std::memcpy(h.destination_gid.bytes.data(), attr.ah_attr.grh.dgid.raw, 16);
        h.dscp = attr.ah_attr.grh.traffic_class ? attr.ah_attr.grh.traffic_class >> 2 : _spec.dscp;
        h.ecn = _spec.ecn;
        h.hop_limit = resolved_hop_limit(h.destination_gid, attr.ah_attr.grh.hop_limit);
        h.flow_label = attr.ah_attr.grh.flow_label;
        h.pkey = 0xffff;
        set_priority_tag(h, attr.ah_attr.sl);
        qp.priority = _transport.priority_for(h);
    }
    if (mask & IBV_QP_DEST_QPN) qp.headers.dest_qpn = qp.attr.dest_qp_num;
    // RoCEv2 entropy: a source port per connection, from both QP numbers (rxe hashes the QPN;
    // IBA A17.4.2 leaves the choice to the sender), kept in 0xC000-0xFFFF.
    qp.headers.udp_source_port =
        static_cast<std::uint16_t>(0xc000 | ((qp.qpn * 0x9e3779b1u) ^ (qp.attr.dest_qp_num * 0x85ebca6bu)) >> 18);

    if (mask & IBV_QP_STATE) {
        if (next == IBV_QPS_RESET) {
            // Back to the state of a new QP: rings empty, engines idle (IBA 10.3.1).
            qp.control->send.producer.store(0, std::memory_order_relaxed);
            qp.control->send.consumer.store(0, std::memory_order_relaxed);
            qp.control->recv.producer.store(0, std::memory_order_relaxed);
            qp.control->recv.consumer.store(0, std::memory_order_relaxed);
            qp.requester.sq_retired = qp.requester.sq_started = qp.requester.sq_current = qp.responder.rq_consumed = 0;
            qp.requester.sq_posted = 0;
            qp.requester.sq_offset = 0;
            qp.requester.recovery = recovery_state::none;
            qp.requester.resends.clear();
            _responder.set_state(qp, receive_state::none);
            qp.responder.write.reset();
            _responder.set_state(qp, responder_state::in_sequence);
            _responder.release_early(qp);
            qp.completer.retransmit_deadline = never;
            qp.completer.adaptive = adaptive_timeout::initial(qp.qpn, _spec.adaptive_timeouts);
            qp.responder.msn = 0;
            qp.responder.rd_atomic = {};
            qp.responder.rd_atomic_head = 0;
            qp.responder.pending_slots = 0;
            qp.responder.deferred_ack.reset();
            _completer.set_state(qp, completer_state::ready);
        }
        // IBA 10.3.1 (SQ Drain): with en_sqd_async_notify the QP reports IBV_EVENT_SQ_DRAINED
        // once every WQE started before the transition has completed.
        if (next == IBV_QPS_SQD && qp.state != IBV_QPS_SQD && (mask & IBV_QP_EN_SQD_ASYNC_NOTIFY) &&
            attr.en_sqd_async_notify)
            _requester.set_state(qp, requester_state::draining);
        else if (next != IBV_QPS_SQD || qp.requester.state == requester_state::draining)
            _requester.set_state(qp, requester_state::ready); // a drain not asked to notify, or left, raises nothing
        set_qp_state(qp, next);
        if (next == IBV_QPS_ERR) enter_error(qp, "modified to ERR by the program");
    }
    activate(qp);
    (void)now;
    return 0;
}

} // namespace rocefab::nic
