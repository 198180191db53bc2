// Classic libpcap capture files with nanosecond timestamps (magic 0xa1b23c4d) and
// LINKTYPE_ETHERNET, so Wireshark/tshark read the fabric's frames as they were on the wire.
// Records are written through a stdio buffer sized once at open(): no allocation per frame.
#pragma once

#include "dataplane/time.hpp"

#include <cstdint>
#include <cstdio>
#include <memory>
#include <span>
#include <string>

namespace rocefab {

class pcap_writer {
public:
    static constexpr std::uint32_t magic_nanoseconds = 0xa1b2'3c4du;
    static constexpr std::uint32_t linktype_ethernet = 1;
    static constexpr std::uint32_t snap_length = 262'144;

    pcap_writer() = default;
    ~pcap_writer() { close(); }
    pcap_writer(const pcap_writer&) = delete;
    pcap_writer& operator=(const pcap_writer&) = delete;

    // Creates (truncates) `path` and writes the file header. On failure returns false with `error`.
    bool open(const std::string& path, std::string& error);
    // The same on a file already open for writing (and taken over: closed with the writer);
    // `name` is for messages.
    bool open(int fd, const std::string& name, std::string& error);
    bool is_open() const { return _file != nullptr; }
    // One record. Negative timestamps are written as 0; frames above snap_length are truncated.
    // A no-op when the file is not open.
    void write(sim_time timestamp, std::span<const std::uint8_t> frame);
    void flush();
    void close();

    std::uint64_t frames_written() const { return _frames; }
    // True once any write failed (e.g. disk full); the capture is then incomplete.
    bool failed() const { return _failed; }

private:
    std::FILE* _file = nullptr;
    std::unique_ptr<char[]> _buffer;
    std::uint64_t _frames = 0;
    bool _failed = false;
};

} // namespace rocefab
