// A running fabric: the nodes a topology describes (switches and NICs) and the links between
// them, as control/fabric_builder.hpp builds them, and the realtime driver that runs them on a
// data-plane thread. The control plane talks to the nodes only through the driver's mailbox.
#pragma once

#include "control/config/topology.hpp"
#include "control/fabric_builder.hpp"
#include "dataplane/pcap_writer.hpp"
#include "dataplane/realtime_driver.hpp"
#include "nic_emu/nic_node.hpp"

#include <nlohmann/json.hpp>

#include <atomic>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace rocefab::control {

class fabric {
public:
    // Builds every node and link; throws std::runtime_error with a readable reason (EAL or
    // mempool failure, a switch spec the switch refuses).
    explicit fabric(config::topology topology);
    ~fabric();

    void start(); // the data-plane thread
    void stop();
    // The CPU the data-plane thread has to itself (daemon: dataplane-cpu), or -1 when it shares
    // them all. `rocefab run` keeps the programs it starts off it.
    int dataplane_cpu() const { return _dataplane_cpu; }

    const config::topology& topology() const { return _topology; }
    realtime_driver& driver() { return *_driver; }

    // The NIC `nic_name` of host `host`, or nullptr.
    nic::nic_node* find_nic(const std::string& host, const std::string& nic_name);
    std::vector<nic::nic_node*> nics_of(const std::string& host);

    // Captures both directions of the cable at `endpoint` ("h1/rfab0", "sw1/swp2") to a pcap
    // file; "" or an error message.
    std::string start_capture(const std::string& endpoint, const std::string& path);
    // The same into `fd`, a file open for writing that the capture takes over (closed on an
    // error too); `path` is for messages.
    std::string start_capture(const std::string& endpoint, int fd, const std::string& path);
    // Stops it and returns the frames written, or -1 when there was no such capture.
    std::int64_t stop_capture(const std::string& endpoint);

    // A change to a cable's fault injection; what is left empty keeps its current value.
    struct fault_update {
        std::optional<double> loss, corruption, duplication, reordering; // each in [0, 1]
        std::optional<sim_time> reorder_delay;                           // >= 0
    };
    // Applies `faults` and/or `up` to both directions of the cable at `endpoint` ("h1/rfab0"), on
    // the data-plane thread. Returns "" or an error (unknown endpoint, value out of range); on
    // success `state` (if given) receives the cable's faults and state afterwards as JSON.
    std::string set_link(const std::string& endpoint, const std::optional<fault_update>& faults, std::optional<bool> up,
                         nlohmann::json* state = nullptr);

    // Every counter of every switch port, NIC and link: copied on the data-plane thread,
    // formatted on the caller's.
    nlohmann::json counters();

private:
    // The topology link index whose cable ends at `endpoint`, or an error message in `error`.
    std::optional<std::size_t> cable_at(const std::string& endpoint, std::string& error) const;

    config::topology _topology; // before _built, whose NICs read it
    rte_mempool* _pool = nullptr;
    std::unique_ptr<fabric_builder> _built; // after the EAL: links are DPDK rings
    std::unique_ptr<realtime_driver> _driver;
    struct capture;
    std::map<std::string, std::unique_ptr<capture>> _captures;
    std::int64_t _epoch_ns = 0; // wall clock at driver time 0, for pcap timestamps
    std::atomic<bool> _stop{false};
    int _dataplane_cpu = -1;
    std::thread _thread;
};

// Where a fabric called `name` keeps its sockets, pid and log.
std::string runtime_directory(const std::string& name);
std::string runtime_root();
// Makes sure the runtime root exists and nobody but its owner (this user, or root) can put
// anything in it: otherwise another user could put a socket of their own where a program looks
// for the daemon's, and be handed that program's memory. "" or what is wrong with it.
std::string secure_runtime_root();

} // namespace rocefab::control
