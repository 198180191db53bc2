#include "dataplane/pcap_writer.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <unistd.h>

namespace rocefab {
namespace {

constexpr std::size_t buffer_size = 1 << 20;

// The pcap header and records are in the writer's native byte order; readers detect it from
// the magic number.
struct file_header {
    std::uint32_t magic;
    std::uint16_t version_major, version_minor;
    std::int32_t thiszone;
    std::uint32_t sigfigs, snaplen, network;
};
static_assert(sizeof(file_header) == 24);

struct record_header {
    std::uint32_t seconds, nanoseconds, included_length, original_length;
};
static_assert(sizeof(record_header) == 16);

} // namespace

bool pcap_writer::open(const std::string& path, std::string& error) {
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        error = "cannot create " + path + ": " + std::strerror(errno);
        return false;
    }
    return open(fd, path, error);
}

bool pcap_writer::open(int fd, const std::string& path, std::string& error) {
    close();
    _file = ::fdopen(fd, "wb");
    if (!_file) {
        error = "cannot write " + path + ": " + std::strerror(errno);
        ::close(fd);
        return false;
    }
    _buffer = std::make_unique<char[]>(buffer_size);
    std::setvbuf(_file, _buffer.get(), _IOFBF, buffer_size);
    const file_header header{magic_nanoseconds, 2, 4, 0, 0, snap_length, linktype_ethernet};
    if (std::fwrite(&header, sizeof header, 1, _file) != 1) {
        error = "cannot write " + path + ": " + std::strerror(errno);
        close();
        return false;
    }
    _frames = 0;
    _failed = false;
    return true;
}

void pcap_writer::write(sim_time timestamp, std::span<const std::uint8_t> frame) {
    if (!_file) return;
    const sim_time t = std::max<sim_time>(timestamp, 0);
    const auto included = static_cast<std::uint32_t>(std::min<std::size_t>(frame.size(), snap_length));
    const record_header record{static_cast<std::uint32_t>(t / 1'000'000'000),
                               static_cast<std::uint32_t>(t % 1'000'000'000), included,
                               static_cast<std::uint32_t>(frame.size())};
    if (std::fwrite(&record, sizeof record, 1, _file) != 1 ||
        (included && std::fwrite(frame.data(), included, 1, _file) != 1))
        _failed = true;
    ++_frames;
}

void pcap_writer::flush() {
    if (_file && std::fflush(_file) != 0) _failed = true;
}

void pcap_writer::close() {
    if (_file) {
        if (std::fclose(_file) != 0) _failed = true;
        _file = nullptr;
    }
    _buffer.reset();
}

} // namespace rocefab
