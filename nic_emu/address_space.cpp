#include "nic_emu/address_space.hpp"

#include <cstring>

namespace rocefab::nic {

namespace {

std::size_t total(std::span<const iovec> v) {
    std::size_t n = 0;
    for (const auto& e : v) n += e.iov_len;
    return n;
}

// Copies between two scatter lists of equal total length.
void copy_lists(std::span<const iovec> to, std::span<const iovec> from) {
    std::size_t ti = 0, to_off = 0;
    for (const auto& f : from) {
        std::size_t done = 0;
        while (done < f.iov_len && ti < to.size()) {
            const std::size_t n = std::min(f.iov_len - done, to[ti].iov_len - to_off);
            std::memcpy(static_cast<char*>(to[ti].iov_base) + to_off, static_cast<const char*>(f.iov_base) + done, n);
            done += n;
            to_off += n;
            if (to_off == to[ti].iov_len) {
                ++ti;
                to_off = 0;
            }
        }
    }
}

} // namespace

bool local_address_space::read(std::span<const iovec> local, std::span<const iovec> remote) {
    if (total(local) != total(remote)) return false;
    copy_lists(local, remote);
    return true;
}

bool local_address_space::write(std::span<const iovec> local, std::span<const iovec> remote) {
    if (total(local) != total(remote)) return false;
    copy_lists(remote, local);
    return true;
}

} // namespace rocefab::nic
