#include "dataplane/eal.hpp"
#include "dataplane/packet.hpp"

#include <cerrno>
#include <cstring>
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

namespace {

constexpr std::size_t huge_page_bytes = std::size_t{2} << 20;

// A populated pool's own mapping, unmapped when DPDK frees the pool's memory: DPDK calls this
// for the first chunk it made of the mapping, which starts where the mapping does; `opaque` is
// the mapping's length. Nothing is allocated for it: the pool of a process that never frees it
// (rocefab sim's) leaves nothing a leak checker could take for lost.
void unmap_pool(rte_mempool_memhdr* first_chunk, void* opaque) {
    ::munmap(first_chunk->addr, reinterpret_cast<std::uintptr_t>(opaque));
}

// rte_pktmbuf_pool_create_by_ops() with its buffers on memory of the pool's own instead of the
// EAL's: private, 2 MiB-aligned, offered to the kernel for transparent huge pages and faulted in
// at once. Without hugepages the EAL's memory is a memfd, which THP leaves alone; a simulation
// with thousands of frames in flight then needs a TLB entry or two for each of them. Where THP
// is off the same memory comes in 4 KiB pages, as before.
rte_mempool* create_populated_pool(const std::string& name, unsigned count, unsigned cache, const char* ops,
                                   std::string& error) {
    rte_mempool* pool = rte_mempool_create_empty(name.c_str(), count, sizeof(rte_mbuf) + packet_data_room, cache,
                                                 sizeof(rte_pktmbuf_pool_private), SOCKET_ID_ANY, 0);
    if (!pool) {
        error = "cannot create mempool " + name + ": " + rte_strerror(rte_errno);
        return nullptr;
    }
    auto fail = [&](const std::string& why) {
        error = "cannot create mempool " + name + ": " + why;
        rte_mempool_free(pool);
        return nullptr;
    };
    if (const int rc = rte_mempool_set_ops_byname(pool, ops, nullptr); rc != 0) return fail(rte_strerror(-rc));
    rte_pktmbuf_pool_private room{};
    room.mbuf_data_room_size = packet_data_room;
    rte_pktmbuf_pool_init(pool, &room);
    // Objects do not straddle a 2 MiB page (populate_virt keeps them within one), so a page
    // holds a whole number of them: what that leaves over is what the slack pays for.
    const std::size_t object = pool->header_size + pool->elt_size + pool->trailer_size;
    const std::size_t per_page = huge_page_bytes / object;
    const std::size_t length = (count + per_page - 1) / per_page * huge_page_bytes;
    void* raw = ::mmap(nullptr, length + huge_page_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (raw == MAP_FAILED) return fail(std::strerror(errno));
    // Trimmed to the 2 MiB-aligned part.
    const auto start = reinterpret_cast<std::uintptr_t>(raw);
    const std::uintptr_t aligned = (start + huge_page_bytes - 1) & ~(huge_page_bytes - 1);
    if (aligned != start) ::munmap(raw, aligned - start);
    if (const std::size_t tail = start + huge_page_bytes - aligned; tail != 0)
        ::munmap(reinterpret_cast<void*>(aligned + length), tail);
    void* memory = reinterpret_cast<void*>(aligned);
    // Both only advice: without THP the pages are small, without MADV_POPULATE_WRITE (Linux <
    // 5.14) they come on first use.
    ::madvise(memory, length, MADV_HUGEPAGE);
    ::madvise(memory, length, MADV_POPULATE_WRITE);
    const int populated = rte_mempool_populate_virt(pool, static_cast<char*>(memory), length, huge_page_bytes,
                                                    unmap_pool, reinterpret_cast<void*>(length));
    if (populated < 0 || static_cast<unsigned>(populated) != count) {
        if (populated <= 0) ::munmap(memory, length); // not the pool's yet
        return fail(populated < 0 ? rte_strerror(-populated) : "its memory holds too few buffers");
    }
    rte_mempool_obj_iter(pool, rte_pktmbuf_init, nullptr);
    return pool;
}

} // namespace

rte_mempool* create_packet_pool(const std::string& name, unsigned count, std::string& error, pool_pages pages,
                                pool_order order) {
    constexpr unsigned cache = 256;
    // No private area: packet_meta is in the mbuf itself (packet.hpp).
    const char* lifo = order == pool_order::last_freed_first ? "stack" : nullptr;
    if (pages == pool_pages::populated) {
        std::string ignored; // without the stack driver, the default one, as below
        if (rte_mempool* pool = lifo ? create_populated_pool(name, count, cache, lifo, ignored) : nullptr) return pool;
        return create_populated_pool(name, count, cache, rte_mbuf_best_mempool_ops(), error);
    }
    rte_mempool* pool = nullptr;
    if (lifo)
        pool = rte_pktmbuf_pool_create_by_ops(name.c_str(), count, cache, 0, packet_data_room, SOCKET_ID_ANY, lifo);
    if (!pool) pool = rte_pktmbuf_pool_create(name.c_str(), count, cache, 0, packet_data_room, SOCKET_ID_ANY);
    if (!pool) error = "cannot create mempool " + name + ": " + rte_strerror(rte_errno);
    return pool;
}

} // namespace rocefab
