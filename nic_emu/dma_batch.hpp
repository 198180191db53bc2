// Writes to application memory gathered across the packets of one data-plane iteration and
// made with as few system calls as the memory allows (nic_emu/process_memory.hpp): on a VM a
// system call costs microseconds, several times the rest of a packet's work, and one a packet
// capped the NIC at a few hundred thousand packets a second. The frames whose payload is to be
// written stay alive until the flush, and so do the completions that must not be seen before
// their data and the acknowledgements that must not promise it: a write that fails (the program
// unmapped the page, or exec'd) is answered with an error, never with an ACK.
#pragma once

#include "dataplane/packet.hpp"
#include "dataplane/wire/ib_extension_headers.hpp"
#include "nic_emu/address_space.hpp"
#include "nic_emu/hw_abi.hpp"
#include "nic_emu/resources.hpp"

#include <array>
#include <cstddef>
#include <sys/uio.h>

namespace rocefab::nic {

// What a staged write is part of, for when it fails. A request's payload at an RC responder is
// answered with a NAK at its PSN: a SEND's receive buffer with a remote operational error, an
// RDMA WRITE's target with a remote access error (IBA 9.7.5.2.8), as an on-demand-paging MR whose
// page fault fails answers. On UC and UD, and for a response's payload at the requester (READ
// data, an atomic's original value), nothing is answered: the QP fails alone.
// Sixteen bytes, so that the few a NIC's turn stages lie on one line.
struct write_origin {
    queue_pair* qp = nullptr;
    std::uint32_t psn = 0;
    bool nak = false;
    wire::nak_code code = wire::nak_code::remote_access_error;

    static write_origin request(queue_pair& qp, std::uint32_t psn, wire::nak_code code) {
        return {&qp, psn, qp.type == IBV_QPT_RC, code};
    }
    static write_origin local(queue_pair& qp) { return {&qp}; }
};
static_assert(sizeof(write_origin) == 16);

class dma_batch {
public:
    static constexpr std::size_t max_segments = 512; // under IOV_MAX (1024)
    static constexpr std::size_t max_frames = 128;
    static constexpr std::size_t max_completions = 128;

    static constexpr std::size_t max_acks = 128;

    // A completion waiting for the writes of the message it reports, whose packets carried the
    // PSNs first_psn to last_psn: if a write of its QP fails, the message that held the failed
    // write completes in error and the messages after it are flushed.
    struct completion {
        queue_pair* qp;
        completion_queue* cq;
        hw::cqe entry;
        bool solicited;
        std::uint32_t first_psn, last_psn;
    };
    // An ACK or NAK of a QP with writes in the batch: it goes once they are made, or not at all
    // if one of them fails (the NAK of the failed write replaces it).
    struct acknowledgement {
        queue_pair* qp;
        std::uint32_t psn;
        std::uint8_t syndrome;
        sim_time when;
    };

    // Room for `segments` more writes to `memory`, or the batch must be flushed first.
    bool fits(const address_space* memory, std::size_t segments) const {
        return (!_memory || _memory == memory) && _segments + segments <= max_segments && _frames < max_frames &&
               _completions < max_completions;
    }
    // Room for this many more writes to `memory`, held frames and completions.
    bool has_room(const address_space* memory, std::size_t segments, std::size_t frames,
                  std::size_t completions) const {
        return (!_memory || _memory == memory) && _segments + segments <= max_segments &&
               _frames + frames <= max_frames && _completions + completions <= max_completions;
    }
    bool empty() const { return _segments == 0 && _frames == 0 && _completions == 0 && _acks == 0; }
    // Room for one more acknowledgement (else the batch must be flushed first).
    bool has_ack_room() const { return _acks < max_acks; }

    void add_write(address_space* memory, void* from, std::uint64_t to, std::size_t length,
                   const write_origin& origin) {
        _memory = memory;
        origin.qp->responder.dma_batch_stamp = _stamp;
        _local[_segments] = {from, length};
        _remote[_segments] = {reinterpret_cast<void*>(to), length};
        _origins[_segments] = origin;
        ++_segments;
    }
    void hold(rte_mbuf* frame) { _held[_frames++] = frame; }
    bool holds(const rte_mbuf* frame) const { return _frames && _held[_frames - 1] == frame; }
    void add_completion(const completion& c) { _pending[_completions++] = c; }
    void add_acknowledgement(const acknowledgement& a) { _acknowledgements[_acks++] = a; }
    // Whether `qp` has writes in the batch: a write stamps its QP with the batch's stamp, and
    // each clear() takes a new one. (A list of the writers was a line more a turn to write and
    // have evicted, with a NIC for each of 256 hosts.)
    bool writes_for(const queue_pair* qp) const { return qp->responder.dma_batch_stamp == _stamp; }

    address_space* memory() const { return _memory; }
    std::span<const iovec> local() const { return {_local.data(), _segments}; }
    std::span<const iovec> remote() const { return {_remote.data(), _segments}; }
    std::span<const write_origin> origins() const { return {_origins.data(), _segments}; }
    std::span<const completion> completions() const { return {_pending.data(), _completions}; }
    std::span<const acknowledgement> acknowledgements() const { return {_acknowledgements.data(), _acks}; }

    // After the write: frees the held frames, except `in_hand` (the frame receive() is still
    // handling, which receive() frees itself), and forgets everything.
    void clear(const rte_mbuf* in_hand = nullptr) {
        for (std::size_t i = 0; i < _frames; ++i)
            if (_held[i] != in_hand) rte_pktmbuf_free(_held[i]);
        _memory = nullptr;
        _segments = _frames = _completions = _acks = 0;
        ++_stamp;
    }

private:
    // The counts first, in one cache line: most looks at a batch (empty(), fits(), a flush of a
    // few entries) read them all and only the first entries of the arrays after them.
    address_space* _memory = nullptr;
    std::size_t _segments = 0;
    std::size_t _frames = 0;
    std::size_t _completions = 0;
    std::size_t _acks = 0;
    std::uint64_t _stamp = 1; // responder_record::dma_batch_stamp of the QPs with writes here; never 0
    std::array<iovec, max_segments> _local{};
    std::array<iovec, max_segments> _remote{};
    std::array<write_origin, max_segments> _origins{};
    std::array<rte_mbuf*, max_frames> _held{};
    std::array<completion, max_completions> _pending{};
    std::array<acknowledgement, max_acks> _acknowledgements{};
};

} // namespace rocefab::nic
