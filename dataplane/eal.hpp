// DPDK EAL start-up and the packet mempool. Without hugepages and without PCI by default
// (--no-huge --no-pci --no-shconf), with a file prefix of its own per fabric so that several
// fabrics, and test binaries, run side by side.
#pragma once

#include "dataplane/dpdk.hpp"

#include <string>
#include <vector>

namespace rocefab {

struct eal_options {
    std::string file_prefix = "rocefab";
    unsigned memory_mb = 512; // --no-huge takes its memory from the heap; -m sizes it
    bool use_hugepages = false;
    std::vector<std::string> extra_args; // e.g. --vdev=net_af_packet0,iface=veth0
};

// Starts the EAL once per process; later calls return the first result. On failure returns
// false and sets `error` to DPDK's reason.
bool start_eal(const eal_options& options, std::string& error);

// Data room big enough for a 9000-byte MTU frame (jumbo), plus DPDK's headroom.
inline constexpr std::uint16_t packet_data_room = RTE_PKTMBUF_HEADROOM + 9216;

// A pool of `count` packet buffers with a packet_meta block in each; nullptr + error on failure.
rte_mempool* create_packet_pool(const std::string& name, unsigned count, std::string& error);

} // namespace rocefab
