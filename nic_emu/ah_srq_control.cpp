// The command interface for address handles (IBA 10.2.2) and shared receive queues (IBA
// 10.2.9): control path, errno results.

#include "nic_emu/nic_node.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace rocefab::nic {

// ---- address handles -------------------------------------------------------------------------

int nic_node::create_ah(std::uint32_t context, std::uint32_t pd, const ibv_ah_attr& attr, std::uint32_t& handle) {
    if (!_contexts.count(context)) return EINVAL;
    auto p = _pds.find(pd);
    if (p == _pds.end() || p->second.context != context) return EINVAL;
    // RoCE routes every packet over UDP/IP: an address without a GRH cannot be reached, as in
    // modify_qp's address vector (rxe and mlx5 refuse it too).
    if (!attr.is_global || attr.port_num > 1) return EINVAL;
    if (attr.grh.sgid_index >= gid_count) return EINVAL;
    wire::ipv6_address dgid;
    std::memcpy(dgid.bytes.data(), attr.grh.dgid.raw, 16);
    if (_gids[attr.grh.sgid_index].is_v4_mapped() != dgid.is_v4_mapped()) return EINVAL;
    wire::mac_address next_hop;
    if (!_resolve || !_resolve(dgid, next_hop)) return EHOSTUNREACH;
    if (_ahs.size() >= limits::max_ah) return ENOMEM;

    address_handle ah;
    ah.handle = handle = allocate_handle();
    ah.context = context;
    ah.pd = pd;
    ah.attr = attr;
    wire::roce_headers_spec& h = ah.headers;
    h.source_mac = _spec.mac;
    h.destination_mac = next_hop;
    h.source_gid = _gids[attr.grh.sgid_index];
    h.destination_gid = dgid;
    h.dscp = attr.grh.traffic_class ? attr.grh.traffic_class >> 2 : _spec.dscp;
    h.ecn = _spec.ecn;
    h.hop_limit = resolved_hop_limit(dgid, attr.grh.hop_limit);
    h.flow_label = attr.grh.flow_label;
    h.pkey = 0xffff;
    set_priority_tag(h, attr.sl);
    _ahs[ah.handle] = ah;
    return 0;
}

int nic_node::destroy_ah(std::uint32_t context, std::uint32_t handle) {
    auto it = _ahs.find(handle);
    if (it == _ahs.end() || it->second.context != context) return EINVAL;
    _ahs.erase(it);
    return 0;
}

// ---- shared receive queues -------------------------------------------------------------------------

int nic_node::srq_geometry(const ibv_srq_attr& requested, ibv_srq_attr& granted, std::uint32_t& slots) {
    if (requested.max_wr == 0 || requested.max_wr > hw::max_queue_depth || requested.max_sge > hw::max_sge)
        return EINVAL;
    slots = hw::ring_slots_for(requested.max_wr);
    granted = {};
    granted.max_wr = slots;
    granted.max_sge = std::max<std::uint32_t>(requested.max_sge, 1);
    granted.srq_limit = 0; // ibv_create_srq ignores the limit; ibv_modify_srq arms it
    return 0;
}

int nic_node::create_srq(std::uint32_t context, std::uint32_t pd, const ibv_srq_attr& granted, std::uint32_t slots,
                         shared_region region, std::uint32_t& handle) {
    if (!_contexts.count(context)) return EINVAL;
    auto p = _pds.find(pd);
    if (p == _pds.end() || p->second.context != context) return EINVAL;
    if (slots == 0 || (slots & (slots - 1)) || region.length() < hw::srq_region_size(slots)) return EINVAL;
    if (_srqs.size() >= limits::max_srq) return ENOMEM;
    auto srq = std::make_unique<shared_receive_queue>();
    srq->handle = handle = allocate_handle();
    srq->context = context;
    srq->pd = pd;
    srq->control = static_cast<hw::srq_control*>(region.base());
    srq->slots = reinterpret_cast<hw::recv_wqe*>(static_cast<char*>(region.base()) + hw::srq_slots_offset);
    srq->size = slots;
    srq->max_wr = granted.max_wr;
    srq->max_sge = granted.max_sge;
    srq->control->recv.size = slots;
    srq->control->recv.slot_size = sizeof(hw::recv_wqe);
    srq->region = std::move(region);
    _srqs[srq->handle] = std::move(srq);
    return 0;
}

int nic_node::modify_srq(std::uint32_t context, std::uint32_t handle, const ibv_srq_attr& attr, int mask) {
    auto it = _srqs.find(handle);
    if (it == _srqs.end() || it->second->context != context) return EINVAL;
    if (mask & ~(IBV_SRQ_MAX_WR | IBV_SRQ_LIMIT)) return EINVAL;
    // Resizing is not offered (the device does not claim IBV_DEVICE_SRQ_RESIZE): the kernel
    // answers EINVAL for it on such a device.
    if (mask & IBV_SRQ_MAX_WR) return EINVAL;
    if (mask & IBV_SRQ_LIMIT) {
        if (attr.srq_limit > it->second->max_wr) return EINVAL;
        it->second->limit = attr.srq_limit;
    }
    return 0;
}

int nic_node::query_srq(std::uint32_t context, std::uint32_t handle, ibv_srq_attr& attr) const {
    auto it = _srqs.find(handle);
    if (it == _srqs.end() || it->second->context != context) return EINVAL;
    attr = {};
    attr.max_wr = it->second->max_wr;
    attr.max_sge = it->second->max_sge;
    attr.srq_limit = it->second->limit;
    return 0;
}

int nic_node::destroy_srq(std::uint32_t context, std::uint32_t handle) {
    auto it = _srqs.find(handle);
    if (it == _srqs.end() || it->second->context != context) return EINVAL;
    for (const auto& [h, qp] : _qps)
        if (qp->srq == it->second.get()) return EBUSY;
    _srqs.erase(it);
    return 0;
}

} // namespace rocefab::nic
