// Writes to application memory gathered across the packets of one data-plane iteration and
// made with one process_vm_writev: on a VM a system call costs microseconds, several times the
// rest of a packet's work, and one a packet capped the NIC at a few hundred thousand packets a
// second. The frames whose payload is to be written stay alive until the flush, and so do the
// completions that must not be seen before their data.
#pragma once

#include "dataplane/packet.hpp"
#include "nic_emu/address_space.hpp"
#include "nic_emu/hw_abi.hpp"
#include "nic_emu/resources.hpp"

#include <array>
#include <cstddef>
#include <sys/uio.h>

namespace rocefab::nic {

class dma_batch {
public:
    static constexpr std::size_t max_segments = 512; // under IOV_MAX (1024)
    static constexpr std::size_t max_frames = 128;
    static constexpr std::size_t max_completions = 128;

    struct completion {
        queue_pair* qp;
        completion_queue* cq;
        hw::cqe entry;
        bool solicited;
    };

    // Room for `segments` more writes to `memory`, or the batch must be flushed first.
    bool fits(const address_space* memory, std::size_t segments) const {
        return (!_memory || _memory == memory) && _segments + segments <= max_segments &&
               _frames < max_frames && _completions < max_completions;
    }
    // Room for this many more writes to `memory`, held frames and completions.
    bool has_room(const address_space* memory, std::size_t segments, std::size_t frames,
                  std::size_t completions) const {
        return (!_memory || _memory == memory) && _segments + segments <= max_segments &&
               _frames + frames <= max_frames && _completions + completions <= max_completions;
    }
    bool empty() const { return _segments == 0 && _frames == 0 && _completions == 0; }

    void add_write(address_space* memory, void* from, std::uint64_t to, std::size_t length, queue_pair* writer) {
        _memory = memory;
        if (_writers_count == 0 || _writers[_writers_count - 1] != writer) {
            if (_writers_count < _writers.size()) _writers[_writers_count++] = writer;
        }
        _local[_segments] = {from, length};
        _remote[_segments] = {reinterpret_cast<void*>(to), length};
        ++_segments;
    }
    void hold(rte_mbuf* frame) { _held[_frames++] = frame; }
    bool holds(const rte_mbuf* frame) const { return _frames && _held[_frames - 1] == frame; }
    void add_completion(const completion& c) { _pending[_completions++] = c; }

    address_space* memory() const { return _memory; }
    std::span<const iovec> local() const { return {_local.data(), _segments}; }
    std::span<const iovec> remote() const { return {_remote.data(), _segments}; }
    std::span<const completion> completions() const { return {_pending.data(), _completions}; }
    // The QPs that wrote in this batch (each at least once; a QP may appear twice).
    std::span<queue_pair* const> writers() const { return {_writers.data(), _writers_count}; }

    // After the write: frees the held frames, except `in_hand` (the frame receive() is still
    // handling, which receive() frees itself), and forgets everything.
    void clear(const rte_mbuf* in_hand = nullptr) {
        for (std::size_t i = 0; i < _frames; ++i)
            if (_held[i] != in_hand) rte_pktmbuf_free(_held[i]);
        _memory = nullptr;
        _segments = _frames = _completions = _writers_count = 0;
    }

private:
    address_space* _memory = nullptr;
    std::array<iovec, max_segments> _local{};
    std::array<iovec, max_segments> _remote{};
    std::size_t _segments = 0;
    std::array<rte_mbuf*, max_frames> _held{};
    std::size_t _frames = 0;
    std::array<completion, max_completions> _pending{};
    std::size_t _completions = 0;
    std::array<queue_pair*, max_segments> _writers{};
    std::size_t _writers_count = 0;
};

} // namespace rocefab::nic
