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

// Whether a pool's pages are all faulted in when it is made, as reserved hugepages are, or as
// its buffers are first used.
enum class pool_pages : std::uint8_t { on_first_use, populated };

// A pool of `count` packet buffers with a packet_meta block in each; nullptr + error on failure.
// Without hugepages its memory comes from the kernel a page at a time: a buffer's first frame
// costs two page faults and two pages cleared. `populated` pays that once, here, for the whole
// pool (about 150 MB for 16 k buffers): right for a simulation, which goes through many buffers
// at once and counts its loop's wall time, not for a daemon that may sit idle.
rte_mempool* create_packet_pool(const std::string& name, unsigned count, std::string& error,
                                pool_pages pages = pool_pages::on_first_use);

} // namespace rocefab
