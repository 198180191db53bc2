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
// its buffers are first used. A populated pool has memory of its own, not the EAL's, which the
// kernel may back with transparent huge pages (in madvise or always mode), so that frames in
// flight by the thousand do not each need a TLB entry of their own.
enum class pool_pages : std::uint8_t { on_first_use, populated };

// Which free buffer a pool hands out next, once its per-lcore cache (256 buffers) is empty or
// full. `ring`, DPDK's default: the one freed longest ago, through a ring any thread may use.
// `last_freed_first` (DPDK's stack driver): the one freed last, whose lines are likeliest still
// in cache. Where thousands of frames wait in queues (an incast), the cache keeps running dry and
// the ring hands out the coldest of 16 k buffers: a cache miss, and on some VMs far more, on each
// new frame (the 16:1 incast of bench/sim_speed ran in half the time on a LIFO pool).
enum class pool_order : std::uint8_t { ring, last_freed_first };

// A pool of `count` packet buffers with a packet_meta block in each; nullptr + error on failure.
// Without hugepages its memory comes from the kernel a page at a time: a buffer's first frame
// costs two page faults and two pages cleared. `populated` pays that once, here, for the whole
// pool (about 150 MB for 16 k buffers): right for a simulation, which goes through many buffers
// at once and counts its loop's wall time, not for a daemon that may sit idle. A pool asked for
// `last_freed_first` falls back to `ring` where DPDK has no stack driver.
rte_mempool* create_packet_pool(const std::string& name, unsigned count, std::string& error,
                                pool_pages pages = pool_pages::on_first_use, pool_order order = pool_order::ring);

} // namespace rocefab
