// The input of fuzz_attach_protocol: what a program sends the daemon's attach socket, message by
// message, and what it does to the memory it shares with the NIC in between. The seed tool
// (make_seeds.cpp) writes the same format.
//
//   input   := flags:u8 message*
//   message := kind:u8 length:u8 body[length]
//
//   kind & 0x1f  the request's op (attach::op; what is not an op is sent as one all the same)
//   kind & 0x20  send the body as the datagram itself, of whatever length, not as a request
//   kind & 0x40  pass the program's /proc/self/mem and /proc/self/maps along (as open_device does)
//   kind & 0x80  not a message: write the body into a region the daemon shared (its first byte
//                picks the region, its second and third the offset), then ring the doorbell
//
// A request's body is copied over the request's fields after `code`: `handle` first, then the
// union. A handle field that holds a small number (below handle_refs) names the n-th handle a
// reply returned instead, so that an input can create a PD and then use it.
//
//   flags & 1    do not say hello and open rfab0 first (every input does otherwise)
//
// A truncated last message takes what is left. Every byte sequence is a valid input.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace rocefab::fuzz {

inline constexpr std::uint8_t attach_raw = 0x20, attach_memory = 0x40, attach_scribble = 0x80;
inline constexpr std::uint8_t attach_no_open = 1;
inline constexpr std::uint32_t handle_refs = 16;

struct attach_message {
    std::uint8_t kind = 0;
    std::span<const std::uint8_t> body;
};

class attach_reader {
public:
    explicit attach_reader(std::span<const std::uint8_t> input) : _rest(input) {
        if (!_rest.empty()) {
            _flags = _rest[0];
            _rest = _rest.subspan(1);
        }
    }
    std::uint8_t flags() const { return _flags; }

    bool next(attach_message& out) {
        if (_rest.size() < 2) return false;
        out.kind = _rest[0];
        const std::size_t length = std::min<std::size_t>(_rest[1], _rest.size() - 2);
        out.body = _rest.subspan(2, length);
        _rest = _rest.subspan(2 + length);
        return true;
    }

private:
    std::span<const std::uint8_t> _rest;
    std::uint8_t _flags = 0;
};

} // namespace rocefab::fuzz
