// A ring of bytes handed out in order and released in order, each allocation tagged with a key
// (a work request index or a sequence number) so that "everything up to key K is done" frees it.
// rdma-integrity's client keeps two: its own registered memory, and the server's write area.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <optional>

namespace rocefab::tools::integrity {

class byte_ring {
public:
    explicit byte_ring(std::size_t size) : _size(size) {}
    std::optional<std::size_t> allocate(std::size_t n, std::uint64_t key) {
        if (n == 0) n = 1; // keeps each allocation distinct and ordered
        std::size_t at = 0;
        if (!_live.empty()) {
            const std::size_t tail = _live.front().start;
            const std::size_t head = _live.back().start + _live.back().length;
            if (_live.back().start >= tail) { // live bytes are [tail, head): free at the end, then the start
                if (n <= _size - head)
                    at = head;
                else if (n <= tail)
                    at = 0; // never split an allocation: skip the end
                else
                    return std::nullopt;
            } else { // wrapped: free bytes are [head, tail)
                if (n > tail - head) return std::nullopt;
                at = head;
            }
        } else if (n > _size) {
            return std::nullopt;
        }
        _live.push_back({key, at, n});
        _used += n;
        return at;
    }
    void undo_last() {
        _used -= _live.back().length;
        _live.pop_back();
    }
    void release_through(std::uint64_t key) { // every allocation with key <= `key`
        while (!_live.empty() && _live.front().key <= key) release_front();
    }
    void release_below(std::uint64_t key) {
        while (!_live.empty() && _live.front().key < key) release_front();
    }
    // Bytes that cannot be allocated now: the live ones and the skipped end.
    std::size_t occupied() const {
        if (_live.empty()) return 0;
        const std::size_t tail = _live.front().start, head = _live.back().start + _live.back().length;
        return _live.back().start >= tail ? head - tail : _size - tail + head;
    }
    std::size_t used() const { return _used; }
    std::size_t size() const { return _size; }
    bool empty() const { return _live.empty(); }

private:
    struct allocation {
        std::uint64_t key;
        std::size_t start, length;
    };
    void release_front() {
        _used -= _live.front().length;
        _live.pop_front();
    }
    std::size_t _size, _used = 0;
    std::deque<allocation> _live;
};

} // namespace rocefab::tools::integrity
