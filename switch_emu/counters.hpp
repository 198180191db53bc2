// Per-port counters, declared once (VPP-style X-macro) so that the enum, the names `rocefab show`
// prints and the JSON keys can never drift apart. Names follow what a Spectrum/Cumulus user reads
// in `ethtool -S swpN` and `nv show interface swpN counters`; comments give the closest one.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace rocefab::switch_emu {

// X(identifier, which port it is counted on: why)
#define ROCEFAB_SWITCH_PORT_COUNTERS(X)                                                                                \
    X(rx_packets)          /* ingress: every frame received, dropped or not (rx-packets) */                            \
    X(rx_bytes)            /* ingress: their bytes, FCS excluded (rx-bytes) */                                         \
    X(tx_packets)          /* egress: frames handed to the link (tx-packets) */                                        \
    X(tx_bytes)            /* egress: their bytes (tx-bytes) */                                                        \
    X(rx_drops_not_for_us) /* ingress: unicast to another MAC; a routed port is not a bridge */                        \
    X(rx_drops_malformed)  /* ingress: truncated, bad IHL/length/version, bad IPv4 header checksum */                  \
    X(rx_drops_non_ip)     /* ingress: ARP, QinQ and any other EtherType a routed port does not route */               \
    X(rx_pause_frames)     /* ingress: MAC control (802.3x PAUSE, 802.1Qbb PFC) consumed */                            \
    X(drops_no_route)      /* ingress: no route for the destination (HwIfInL3Drops) */                                 \
    X(drops_ttl_expired)   /* ingress: TTL / hop limit <= 1; no ICMP is sent */                                        \
    X(drops_mtu_exceeded)  /* egress: IP length over the egress port's MTU; no fragmentation */                        \
    X(tail_drops)          /* egress: shared buffer or queue full (tc_no_buffer_discard_uc) */                         \
    X(headroom_drops)      /* ingress: lossless PG over its headroom: the headroom is too small */                     \
    X(pfc_wd_storms)       /* egress: queues the PFC watchdog declared stormed (storm detected) */                     \
    X(pfc_wd_restores)     /* egress: stormed queues restored once the pauses stopped */                               \
    X(watchdog_drops)      /* egress: frames of a stormed queue dropped (action drop) */                               \
    X(ecn_marked)          /* egress: ECN-capable packets marked CE on enqueue (ecn_marked) */                         \
    X(wred_drops)          /* egress: not ECN-capable, lossy class, queue above max (wred_discard) */                  \
    X(buffer_bytes)        /* egress: gauge, bytes this port holds in the shared buffer now */                         \
    X(buffer_peak_bytes)   /* egress: gauge, the most it has held (Spectrum watermark) */

enum class port_counter : std::uint8_t {
#define ROCEFAB_COUNTER_ENUM(id) id,
    ROCEFAB_SWITCH_PORT_COUNTERS(ROCEFAB_COUNTER_ENUM)
#undef ROCEFAB_COUNTER_ENUM
};

inline constexpr std::size_t port_counter_count = 0
#define ROCEFAB_COUNTER_ONE(id) +1
    ROCEFAB_SWITCH_PORT_COUNTERS(ROCEFAB_COUNTER_ONE)
#undef ROCEFAB_COUNTER_ONE
    ;

inline constexpr std::array<std::string_view, port_counter_count> port_counter_names = {
#define ROCEFAB_COUNTER_NAME(id) #id,
    ROCEFAB_SWITCH_PORT_COUNTERS(ROCEFAB_COUNTER_NAME)
#undef ROCEFAB_COUNTER_NAME
};

inline constexpr std::string_view name_of(port_counter c) { return port_counter_names[static_cast<std::size_t>(c)]; }

// One egress queue (port, traffic class): the columns of NVUE's
// `nv show interface swpN counters qos egress-queue-stats`. The current depth is the queue's own.
struct queue_counters {
    std::uint64_t tx_packets = 0;
    std::uint64_t tx_bytes = 0;
    std::uint64_t tail_drops = 0;     // Tx Uc Buffer Discards
    std::uint64_t wred_drops = 0;     // Wred Discards
    std::uint64_t watchdog_drops = 0; // PFC watchdog, action drop
    std::uint64_t ecn_marked = 0;     // Ecn Marked Packets
    std::uint64_t peak_bytes = 0;     // Max Buffer Usage
};

// One ingress priority group (port, switch priority): what `counters qos ingress-buffer-stats`
// and ethtool's rx_frames_prio_N / rx_octets_prio_N show. Its buffer use is the buffer's own.
struct ingress_counters {
    std::uint64_t rx_packets = 0;
    std::uint64_t rx_bytes = 0;
    std::uint64_t headroom_drops = 0;
};

// One port's counters. Plain integers: a switch is driven by one thread at a time.
class port_counters {
public:
    void bump(port_counter c, std::uint64_t by = 1) { _values[index(c)] += by; }
    void set(port_counter c, std::uint64_t value) { _values[index(c)] = value; }
    std::uint64_t operator[](port_counter c) const { return _values[index(c)]; }

    // Calls `f(std::string_view name, std::uint64_t value)` for every counter, in declaration order.
    template <typename Callback> void for_each(Callback&& f) const {
        for (std::size_t i = 0; i < port_counter_count; ++i) f(port_counter_names[i], _values[i]);
    }

private:
    static constexpr std::size_t index(port_counter c) { return static_cast<std::size_t>(c); }
    std::array<std::uint64_t, port_counter_count> _values{};
};

} // namespace rocefab::switch_emu
