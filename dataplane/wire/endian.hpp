// Big-endian integer types for wire headers. A wire field is never a host-order integer:
// reading and writing go through load()/store(), which byte-swap on little-endian hosts.
#pragma once

#include <bit>
#include <cstdint>
#include <cstring>

namespace rocefab::wire {

template <typename Int> constexpr Int byte_swap(Int v) {
    if constexpr (sizeof(Int) == 2)
        return __builtin_bswap16(v);
    else if constexpr (sizeof(Int) == 4)
        return __builtin_bswap32(v);
    else if constexpr (sizeof(Int) == 8)
        return __builtin_bswap64(v);
    else
        return v;
}

template <typename Int> class big_endian {
public:
    constexpr big_endian() = default;
    constexpr explicit big_endian(Int host) { store(host); }

    constexpr Int load() const {
        if constexpr (std::endian::native == std::endian::little && sizeof(Int) > 1)
            return byte_swap(_raw);
        else
            return _raw;
    }
    constexpr void store(Int host) {
        if constexpr (std::endian::native == std::endian::little && sizeof(Int) > 1)
            _raw = byte_swap(host);
        else
            _raw = host;
    }
    constexpr Int raw() const { return _raw; }
    friend constexpr bool operator==(big_endian a, big_endian b) { return a._raw == b._raw; }

private:
    Int _raw{};
} __attribute__((packed));

using be16 = big_endian<std::uint16_t>;
using be32 = big_endian<std::uint32_t>;
using be64 = big_endian<std::uint64_t>;

static_assert(sizeof(be16) == 2 && sizeof(be32) == 4 && sizeof(be64) == 8);

// 24-bit quantities (QPN, PSN) live in the low bits of a 32-bit word on the wire.
inline constexpr std::uint32_t mask24 = 0x00ff'ffffu;

} // namespace rocefab::wire
