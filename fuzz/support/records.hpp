// The input of a frame fuzzer (fuzz_switch_rx, fuzz_nic_rx): one configuration byte that picks
// a variant of the node under test, then a sequence of records, each a frame and what to do
// with it. The seed tool (make_seeds.cpp) writes the same format, so a seed is a small story:
// "a READ response for PSN 1003, then 2 us later an ACK for 1007".
//
//   input  := config:u8 record*
//   record := flags:u8 repeat:u8 advance:u8 length:u16le frame[length]
//
// A truncated last record takes what is left. Every byte sequence is a valid input.
#pragma once

#include "dataplane/time.hpp"

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace rocefab::fuzz {

// The largest frame a packet buffer holds (dataplane/eal.hpp's packet_data_room, headroom excluded).
inline constexpr std::size_t max_frame_length = 9216;

struct frame_record {
    std::uint8_t flags = 0;   // the target's own meaning (fix-ups, port, QP, ...)
    std::uint8_t repeat = 0;  // the frame is handed over 1 + repeat_count(repeat) times
    std::uint8_t advance = 0; // time that passes after the record: advance_of()
    std::span<const std::uint8_t> frame;
};

// How many more copies of a record's frame follow the first: 0 to 63, so that one record can
// fill a queue past an ECN or PFC threshold.
constexpr unsigned repeat_count(std::uint8_t repeat) { return repeat & 63u; }

// One byte of time: the low 6 bits are a count, the top 2 a scale of 1 ns, 128 ns, 16 us or
// 2 ms. A record reaches from a frame time at 100G (tens of ns) to past the PFC watchdog's 100 ms
// poll and an RC transport timeout.
constexpr sim_time advance_of(std::uint8_t code) {
    constexpr sim_time scale[4] = {1, 128, 16'384, 2'097'152};
    return sim_time(code & 63) * scale[code >> 6];
}

class record_reader {
public:
    explicit record_reader(std::span<const std::uint8_t> input) : _rest(input) {
        if (!_rest.empty()) {
            _config = _rest[0];
            _rest = _rest.subspan(1);
        }
    }
    std::uint8_t config() const { return _config; }

    // False when the input is used up.
    bool next(frame_record& out) {
        if (_rest.size() < 5) return false;
        out.flags = _rest[0];
        out.repeat = _rest[1];
        out.advance = _rest[2];
        std::size_t length = std::size_t(_rest[3]) | std::size_t(_rest[4]) << 8;
        _rest = _rest.subspan(5);
        if (length > _rest.size()) length = _rest.size();
        out.frame = _rest.first(length);
        _rest = _rest.subspan(length);
        if (out.frame.size() > max_frame_length) out.frame = out.frame.first(max_frame_length);
        return true;
    }

private:
    std::span<const std::uint8_t> _rest;
    std::uint8_t _config = 0;
};

inline void append_record(std::vector<std::uint8_t>& out, std::uint8_t flags, std::uint8_t repeat, std::uint8_t advance,
                          std::span<const std::uint8_t> frame) {
    out.push_back(flags);
    out.push_back(repeat);
    out.push_back(advance);
    out.push_back(static_cast<std::uint8_t>(frame.size()));
    out.push_back(static_cast<std::uint8_t>(frame.size() >> 8));
    out.insert(out.end(), frame.begin(), frame.end());
}

} // namespace rocefab::fuzz
