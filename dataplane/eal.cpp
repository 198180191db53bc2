#include "dataplane/eal.hpp"
#include "dataplane/packet.hpp"

#include <mutex>

namespace rocefab {

bool start_eal(const eal_options& options, std::string& error) {
    static std::once_flag once;
    static bool started = false;
    static std::string first_error;
    std::call_once(once, [&] {
        std::vector<std::string> args = {"rocefab", "--file-prefix=" + options.file_prefix, "--no-pci",
                                         "--log-level=lib.eal:error", "--log-level=lib.*:warning", "-l", "0"};
        if (!options.use_hugepages) {
            args.push_back("--no-huge");
            args.push_back("--in-memory");
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
        started = true;
    });
    if (!started) error = first_error;
    return started;
}

rte_mempool* create_packet_pool(const std::string& name, unsigned count, std::string& error) {
    constexpr unsigned cache = 256;
    const unsigned priv = RTE_ALIGN(sizeof(packet_meta), RTE_MBUF_PRIV_ALIGN);
    rte_mempool* pool =
        rte_pktmbuf_pool_create(name.c_str(), count, cache, static_cast<std::uint16_t>(priv), packet_data_room,
                                SOCKET_ID_ANY);
    if (!pool) error = "cannot create mempool " + name + ": " + rte_strerror(rte_errno);
    return pool;
}

} // namespace rocefab
