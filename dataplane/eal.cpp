#include "dataplane/eal.hpp"
#include "dataplane/packet.hpp"

#include <mutex>
#include <sched.h>
#include <sys/mman.h>
#include <unistd.h>

namespace rocefab {

bool start_eal(const eal_options& options, std::string& error) {
    static std::once_flag once;
    static bool started = false;
    static std::string first_error;
    std::call_once(once, [&] {
        std::vector<std::string> args = {"rocefab",
                                         "--file-prefix=" + options.file_prefix,
                                         "--no-pci",
                                         "--no-telemetry",
                                         "--log-level=lib.eal:error",
                                         "--log-level=lib.*:warning",
                                         "-l",
                                         "0"};
        if (!options.use_hugepages) {
            // --no-huge implies legacy memory mode, which DPDK 22.11 refuses to combine with
            // --in-memory; --no-shconf gives the same "no files left behind" without it.
            args.push_back("--no-huge");
            args.push_back("--no-shconf");
            args.push_back("-m");
            args.push_back(std::to_string(options.memory_mb));
        }
        for (const auto& extra : options.extra_args) args.push_back(extra);
        std::vector<char*> argv;
        for (auto& a : args) argv.push_back(a.data());
        argv.push_back(nullptr);
        if (rte_eal_init(static_cast<int>(args.size()), argv.data()) < 0) {
            first_error = std::string("DPDK EAL failed to start: ") + rte_strerror(rte_errno);
            return;
        }
        // The EAL pins the calling thread to lcore 0's CPU, and threads made later inherit
        // that. The fabric shares the machine with the programs it serves: let the scheduler
        // place the daemon's threads.
        cpu_set_t all;
        CPU_ZERO(&all);
        for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) CPU_SET(cpu, &all);
        sched_setaffinity(0, sizeof all, &all);
        // packet_meta's place in every mbuf, reserved before any driver asks for dynamic fields.
        const rte_mbuf_dynfield meta_field{"rocefab_packet_meta", sizeof(packet_meta), alignof(packet_meta), 0};
        if (rte_mbuf_dynfield_register_offset(&meta_field, packet_meta_offset) !=
            static_cast<int>(packet_meta_offset)) {
            first_error = std::string("cannot reserve the mbuf field for packet metadata: ") + rte_strerror(rte_errno);
            return;
        }
        // Without the flag every frame is sealed as it is built, which is only slower.
        const rte_mbuf_dynflag deferred_icrc{"rocefab_icrc_deferred", 0};
        const int bit = rte_mbuf_dynflag_register(&deferred_icrc);
        if (bit >= 0) icrc_deferred_flag = std::uint64_t{1} << bit;
        started = true;
    });
    if (!started) error = first_error;
    return started;
}

rte_mempool* create_packet_pool(const std::string& name, unsigned count, std::string& error, pool_pages pages,
                                pool_order order) {
    constexpr unsigned cache = 256;
    // No private area: packet_meta is in the mbuf itself (packet.hpp).
    rte_mempool* pool = nullptr;
    if (order == pool_order::last_freed_first)
        pool = rte_pktmbuf_pool_create_by_ops(name.c_str(), count, cache, 0, packet_data_room, SOCKET_ID_ANY, "stack");
    if (!pool) pool = rte_pktmbuf_pool_create(name.c_str(), count, cache, 0, packet_data_room, SOCKET_ID_ANY);
    if (!pool) {
        error = "cannot create mempool " + name + ": " + rte_strerror(rte_errno);
        return nullptr;
    }
    if (pages == pool_pages::populated) {
        // Only an optimisation: where MADV_POPULATE_WRITE is missing (Linux < 5.14) the pages
        // come on first use as before.
        rte_mempool_mem_iter(
            pool,
            [](rte_mempool*, void*, rte_mempool_memhdr* chunk, unsigned) {
                const auto page = static_cast<std::uintptr_t>(::sysconf(_SC_PAGESIZE));
                const auto begin = reinterpret_cast<std::uintptr_t>(chunk->addr) & ~(page - 1);
                const auto end = reinterpret_cast<std::uintptr_t>(chunk->addr) + chunk->len;
                ::madvise(reinterpret_cast<void*>(begin), end - begin, MADV_POPULATE_WRITE);
            },
            nullptr);
    }
    return pool;
}

} // namespace rocefab
