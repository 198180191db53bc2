// The responder's RDMA READ and atomic side (IBA 9.7.5.1.4-6 and rxe_resp.c): checks a request
// against the QP's access flags and the rkey's MR, keeps it as a responder resource, and sends
// READ responses (FIRST/MIDDLE/LAST/ONLY) and ATOMIC ACKNOWLEDGEs in PSN order as the link
// allows. A duplicate READ is read again; a duplicate atomic is answered from the saved
// original value and never executed twice (C9-112, C9-113).
//
// Limit of the emulation: an atomic is a read then a write of the target's memory through the
// address_space (process_vm_readv/writev). It is atomic against every other RDMA operation,
// since one thread runs the NIC, but not against the target program's own CPU stores to the
// same 8 bytes in between. Real HCAs give the same guarantee only (IBV_ATOMIC_HCA: atomic with
// respect to other operations of this HCA, not to the host CPU).

#include "nic_emu/responder.hpp"

#include "dataplane/link.hpp"

#include <algorithm>
#include <bit>
#include <cstring>

namespace rocefab::nic {

namespace {

using wire::aeth_syndrome::invalid_credits;

// IBA 9.4.3: a READ transfers at most 2^31 bytes, like every message.
constexpr std::uint64_t max_read_length = 1ull << 31;

std::uint32_t resource_capacity(const queue_pair& qp) {
    // max_dest_rd_atomic 0 is taken as 1, as ConnectX does (mlx5 encodes its log2).
    return std::clamp<std::uint32_t>(qp.attr.max_dest_rd_atomic, 1, max_responder_resources);
}

static_assert(max_responder_resources == 16, "pending_slots has a bit per resource");

std::uint32_t slot_of(const queue_pair& qp, const responder_resource& r) {
    return static_cast<std::uint32_t>(&r - qp.responder.rd_atomic.data());
}

bool is_pending(const queue_pair& qp, const responder_resource& r) {
    return (qp.responder.pending_slots >> slot_of(qp, r)) & 1u;
}

void set_pending(queue_pair& qp, const responder_resource& r, bool pending) {
    const auto bit = static_cast<std::uint16_t>(1u << slot_of(qp, r));
    qp.responder.pending_slots = pending ? qp.responder.pending_slots | bit : qp.responder.pending_slots & ~bit;
}

// The pending resource nearest after rd_atomic_head, in slot order: the oldest.
responder_resource* oldest_pending(queue_pair& qp) {
    const std::uint32_t pending = qp.responder.pending_slots;
    if (pending == 0) return nullptr;
    const std::uint32_t head = qp.responder.rd_atomic_head;
    const std::uint32_t from_head = ((pending >> head) | (pending << (max_responder_resources - head))) & 0xffffu;
    return &qp.responder.rd_atomic[(head + std::countr_zero(from_head)) % max_responder_resources];
}

} // namespace

void responder::handle_read_atomic_request(queue_pair& qp, const wire::parsed_roce& packet, sim_time now) {
    const wire::bth& bth = *packet.bth_header;
    const std::uint32_t psn = bth.psn();
    const bool is_read = packet.info->has(wire::opcode_mask::read);
    auto nak = [&](wire::nak_code code) {
        send_ack(qp, psn, wire::aeth_syndrome::nak(code), now);
        _context.port.enter_error(qp, wire::to_string(code));
    };
    if (qp.responder.receive != receive_state::none || qp.responder.write) {
        // A READ or atomic inside a multi-packet SEND or WRITE: the opcode sequence is broken.
        nak(wire::nak_code::invalid_request);
        return;
    }
    std::uint32_t pending = 0;
    for (const auto& r : qp.responder.rd_atomic) pending += is_pending(qp, r) && !r.replay;
    if (pending >= resource_capacity(qp)) {
        // The requester has more READ/atomic requests outstanding than max_dest_rd_atomic
        // (IBA 9.7.5.1.3: too many outstanding is an invalid request).
        nak(wire::nak_code::invalid_request);
        return;
    }

    responder_resource res;
    if (is_read) {
        ++_context.counters.rx_read_requests;
        const wire::reth& reth = *packet.reth_header;
        const std::uint64_t va = reth.virtual_address.load();
        const std::uint32_t length = reth.dma_length.load();
        const std::uint32_t rkey = reth.rkey.load();
        if (length > max_read_length) {
            nak(wire::nak_code::invalid_request);
            return;
        }
        // IBA 9.7.5.1.4 (C9-88): the QP must allow remote reads, and the rkey must name an MR
        // of the QP's PD with remote read access covering the range; zero bytes need no key.
        const bool allowed = (qp.attr.qp_access_flags & IBV_ACCESS_REMOTE_READ) &&
                             (length == 0 || _context.port.remote_mr(rkey, qp.pd, va, length, IBV_ACCESS_REMOTE_READ));
        if (!allowed) {
            ++_context.counters.resp_remote_access_errors;
            nak(wire::nak_code::remote_access_error);
            return;
        }
        res.type = responder_resource::kind::read;
        res.packets = std::max<std::uint32_t>(1, (length + qp.mtu_bytes - 1) / qp.mtu_bytes);
        res.va = va;
        res.rkey = rkey;
        res.length = length;
    } else {
        ++_context.counters.rx_atomic_requests;
        const wire::atomic_eth& a = *packet.atomic_eth_header;
        const std::uint64_t va = a.virtual_address.load();
        const std::uint32_t rkey = a.rkey.load();
        if (va & 7) {
            // IBA 9.4.5 (C9-34): the target of an atomic is 8-byte aligned; rxe and ConnectX
            // answer a misaligned one with an invalid request NAK.
            nak(wire::nak_code::invalid_request);
            return;
        }
        const memory_region* mr = (qp.attr.qp_access_flags & IBV_ACCESS_REMOTE_ATOMIC)
                                      ? _context.port.remote_mr(rkey, qp.pd, va, 8, IBV_ACCESS_REMOTE_ATOMIC)
                                      : nullptr;
        if (!mr) {
            ++_context.counters.resp_remote_access_errors;
            nak(wire::nak_code::remote_access_error);
            return;
        }
        // Writes accepted before this request land first (they are ordered before it).
        flush_dma();
        const std::uint64_t address = mr->address + (va - mr->iova);
        std::uint64_t original = 0;
        bool ok = mr->memory->read(address, &original, sizeof original);
        if (ok) {
            std::uint64_t value;
            bool store = true;
            if (packet.bth_header->opcode() == wire::to_byte(wire::ib_opcode::rc_compare_swap)) {
                store = original == a.compare.load();
                value = a.swap_add.load();
            } else {
                value = original + a.swap_add.load();
            }
            if (store) ok = mr->memory->write(address, &value, sizeof value);
        }
        if (!ok) {
            ++_context.counters.memory_access_faults;
            nak(wire::nak_code::remote_operational_error);
            return;
        }
        res.type = responder_resource::kind::atomic;
        res.packets = 1;
        res.original = original;
    }
    res.first_psn = psn;
    res.response_psn = psn;
    qp.responder.rd_atomic[qp.responder.rd_atomic_head] = res;
    set_pending(qp, qp.responder.rd_atomic[qp.responder.rd_atomic_head], true);
    qp.responder.rd_atomic_head = (qp.responder.rd_atomic_head + 1) % max_responder_resources;
    qp.responder.expected_psn = wire::psn_add(psn, res.packets);
    qp.responder.msn = wire::psn_add(qp.responder.msn, 1);
}

void responder::handle_duplicate_read_atomic(queue_pair& qp, const wire::parsed_roce& packet, sim_time now) {
    ++_context.counters.duplicate_request;
    const std::uint32_t psn = packet.bth_header->psn();
    const bool is_read = packet.info->has(wire::opcode_mask::read);
    responder_resource* found = nullptr;
    for (auto& r : qp.responder.rd_atomic) {
        if (r.type == responder_resource::kind::none) continue;
        const std::int32_t into = wire::psn_diff(psn, r.first_psn);
        if (into >= 0 && into < static_cast<std::int32_t>(r.packets)) found = &r;
    }
    // Older than every resource kept: the requester has had its answer (IBA 9.7.5.1.6 lets
    // the responder drop it).
    if (!found) return;
    if (!is_read) {
        if (found->type != responder_resource::kind::atomic || found->first_psn != psn) return;
        ++_context.counters.resp_duplicate_atomic_replays;
        set_pending(qp, *found, true); // the same ATOMIC ACKNOWLEDGE again, not the operation
        found->replay = true;
        return;
    }
    if (found->type != responder_resource::kind::read) return;
    // C9-112: a duplicate READ is executed again, for the range it asks (the requester asks
    // only for what it is missing), with its PSN; the memory checks apply again.
    const wire::reth& reth = *packet.reth_header;
    const std::uint64_t va = reth.virtual_address.load();
    const std::uint32_t length = reth.dma_length.load();
    const std::uint32_t rkey = reth.rkey.load();
    const std::uint32_t packets = std::max<std::uint32_t>(1, (length + qp.mtu_bytes - 1) / qp.mtu_bytes);
    const bool fits = static_cast<std::uint32_t>(wire::psn_diff(psn, found->first_psn)) + packets <= found->packets;
    const bool allowed = fits && (qp.attr.qp_access_flags & IBV_ACCESS_REMOTE_READ) &&
                         (length == 0 || _context.port.remote_mr(rkey, qp.pd, va, length, IBV_ACCESS_REMOTE_READ));
    if (!allowed) {
        ++_context.counters.resp_remote_access_errors;
        send_ack(qp, psn, wire::aeth_syndrome::nak(wire::nak_code::remote_access_error), now);
        _context.port.enter_error(qp, "remote access error (duplicate READ)");
        return;
    }
    found->va = va;
    found->rkey = rkey;
    found->length = length;
    found->sent = 0;
    found->response_psn = psn;
    set_pending(qp, *found, true);
    found->replay = true;
}

bool responder::send_responses(queue_pair& qp, sim_time now) {
    if (qp.state != IBV_QPS_RTR && qp.state != IBV_QPS_RTS && qp.state != IBV_QPS_SQD && qp.state != IBV_QPS_SQE)
        return false;
    gather_batch batch;
    sim_time link_free = std::max(_context.port.link_busy_until(), now);
    bool failed = false;
    std::uint32_t failed_psn = 0, batch_psn = 0;
    while (batch.count < gather_batch::max_packets && link_free <= now + transmit_fifo_time) {
        responder_resource* res = oldest_pending(qp);
        if (!res) break;
        wire::roce_headers_spec spec = qp.headers;
        spec.ack_request = false;
        spec.solicited = false;
        spec.aeth_syndrome = wire::aeth_syndrome::ack(invalid_credits);
        spec.aeth_msn = qp.responder.msn & wire::mask24;
        std::uint8_t* out = nullptr;
        rte_mbuf* frame = nullptr;
        if (res->type == responder_resource::kind::atomic) {
            // IBA 9.7.5.1.5: ATOMIC ACKNOWLEDGE, AETH and the original value.
            spec.opcode = wire::to_byte(wire::ib_opcode::rc_atomic_acknowledge);
            spec.psn = res->first_psn;
            spec.atomic_original = res->original;
            frame = _context.port.start_frame(spec, 0, out);
            if (!frame) break;
            set_pending(qp, *res, false);
        } else {
            // IBA 9.7.5.1.4: one response per MTU, PSNs from the request's; AETH on FIRST,
            // LAST and ONLY (Table 39), MIDDLE carries none.
            const std::uint32_t remaining = res->length - res->sent;
            const std::uint32_t payload = std::min(qp.mtu_bytes, remaining);
            const bool first = res->sent == 0;
            const bool last = payload == remaining;
            using wire::ib_opcode;
            spec.opcode = wire::to_byte(first && last ? ib_opcode::rc_rdma_read_response_only
                                        : first       ? ib_opcode::rc_rdma_read_response_first
                                        : last        ? ib_opcode::rc_rdma_read_response_last
                                                      : ib_opcode::rc_rdma_read_response_middle);
            spec.psn = wire::psn_add(res->response_psn, res->sent / qp.mtu_bytes);
            const memory_region* mr = nullptr;
            if (payload) {
                // Checked again for every packet: the MR may be deregistered meanwhile.
                mr = _context.port.remote_mr(res->rkey, qp.pd, res->va + res->sent, payload, IBV_ACCESS_REMOTE_READ);
                if (!mr) {
                    failed = true;
                    failed_psn = spec.psn;
                    set_pending(qp, *res, false);
                    break;
                }
                if (batch.memory && batch.memory != mr->memory) break; // the next burst takes it
            }
            frame = _context.port.start_frame(spec, payload, out);
            if (!frame) break;
            if (payload) {
                batch.memory = mr->memory;
                batch.local[batch.segments] = {out, payload};
                batch.remote[batch.segments] = {reinterpret_cast<void*>(mr->address + (res->va + res->sent - mr->iova)),
                                                payload};
                ++batch.segments;
            }
            res->sent += payload;
            if (last) set_pending(qp, *res, false);
        }
        if (batch.count == 0) batch_psn = spec.psn;
        batch.frames[batch.count++] = frame;
        link_free += serialization_time(rte_pktmbuf_data_len(frame) + wire_overhead_bytes, _context.spec.speed_bps);
    }
    if (batch.count == 0 && !failed && !qp.responder.deferred_ack) return false;
    if (batch.segments &&
        !batch.memory->read({batch.local.data(), batch.segments}, {batch.remote.data(), batch.segments})) {
        // The registered memory vanished under the NIC: the READ cannot be answered.
        for (std::size_t i = 0; i < batch.count; ++i) rte_pktmbuf_free(batch.frames[i]);
        ++_context.counters.memory_access_faults;
        send_ack(qp, batch_psn, wire::aeth_syndrome::nak(wire::nak_code::remote_operational_error), now);
        _context.port.enter_error(qp, "the program's registered memory vanished");
        return true;
    }
    for (std::size_t i = 0; i < batch.count; ++i) _context.port.finish_frame(batch.frames[i], now);
    if (failed) {
        ++_context.counters.resp_remote_access_errors;
        send_ack(qp, failed_psn, wire::aeth_syndrome::nak(wire::nak_code::remote_access_error), now);
        _context.port.enter_error(qp, "remote access error");
        return true;
    }
    if (qp.responder.deferred_ack && !responses_pending(qp)) {
        const deferred_ack deferred = *qp.responder.deferred_ack;
        qp.responder.deferred_ack.reset();
        // A sequence NAK waited behind the responses while the request it was missing may
        // have arrived late (reordered) and been answered: the requests that overtook it were
        // discarded all the same, so the NAK names where the responder stands now. Naming the
        // old PSN, already acknowledged by those responses, would be stale (IBA 9.7.5.1.1).
        std::uint32_t psn = deferred.psn;
        const bool sequence_nak =
            wire::aeth_syndrome::is_nak(deferred.syndrome) &&
            wire::aeth_syndrome::nak_code_of(deferred.syndrome) == wire::nak_code::psn_sequence_error;
        if (sequence_nak && wire::psn_diff(qp.responder.expected_psn, psn) > 0) psn = qp.responder.expected_psn;
        send_ack(qp, psn, deferred.syndrome, now);
    }
    return true;
}

} // namespace rocefab::nic
