// How the NIC reaches an application's registered memory, the way a device uses DMA. The NIC
// calls these only after checking a key, its protection domain, the bounds and the access
// flags (nic_emu/memory_region.hpp), so nothing outside a registered range is touched.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <sys/uio.h>

namespace rocefab::nic {

// The bytes a scatter list covers.
inline std::size_t total_length(std::span<const iovec> v) {
    std::size_t n = 0;
    for (const auto& e : v) n += e.iov_len;
    return n;
}

struct nic_counters;

class address_space {
public:
    virtual ~address_space() = default;
    // Where the bytes moved are counted (the NIC's dma_* counters), if anywhere.
    void count_into(nic_counters* counters) { _counters = counters; }
    // Scatter/gather copies; false when the memory is gone (the process died or unmapped it).
    virtual bool read(std::span<const iovec> local, std::span<const iovec> remote) = 0;
    virtual bool write(std::span<const iovec> local, std::span<const iovec> remote) = 0;

    bool read(std::uint64_t address, void* out, std::size_t length) {
        iovec l{out, length}, r{reinterpret_cast<void*>(address), length};
        return read({&l, 1}, {&r, 1});
    }
    bool write(std::uint64_t address, const void* in, std::size_t length) {
        iovec l{const_cast<void*>(in), length}, r{reinterpret_cast<void*>(address), length};
        return write({&l, 1}, {&r, 1});
    }

protected:
    nic_counters* _counters = nullptr;
};

// This process's own memory: for tests and the virtual-time traffic generator.
class local_address_space final : public address_space {
public:
    bool read(std::span<const iovec> local, std::span<const iovec> remote) override;
    bool write(std::span<const iovec> local, std::span<const iovec> remote) override;
};

} // namespace rocefab::nic
