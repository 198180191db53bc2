// The daemon's side of librdmacm, as the kernel's ucma is: one socket per emulated host
// (`cm/HOST.sock` in the runtime directory), one connection per event channel of a program.
// It runs the connection_manager on the io thread: requests from programs, MADs the NICs' QP1
// received (their gsi_queue's eventfd wakes it), and the CM's timers. MADs go out through the
// data plane's mailbox, so the data plane never waits for the CM.
#pragma once

#include "control/access.hpp"
#include "control/cm/connection_manager.hpp"
#include "control/fabric.hpp"
#include "control/host_sockets.hpp"
#include "control/throttled_log.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/steady_timer.hpp>
#include <nlohmann/json.hpp>

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace rocefab::control {

inline constexpr const char* cm_directory_name = "cm";
inline std::string cm_socket_path(const std::string& runtime_dir, const std::string& host) {
    return runtime_dir + "/" + cm_directory_name + "/" + host + ".sock";
}

class cm_server {
public:
    static constexpr std::size_t max_channels = 16384, max_channels_per_user = 1024;

    // Throws std::runtime_error when a socket cannot be made.
    cm_server(boost::asio::io_context& io, fabric& fab, const std::string& runtime_dir, const access_policy& policy);
    ~cm_server();

    // The CM's counters and how many ids it holds, for `rocefab show` (io thread).
    nlohmann::json counters() const;

private:
    class session;
    struct gsi_watch;

    // A channel the access policy let in, unless the limits say no.
    void accepted(int fd, const peer& who, const std::string& host);
    void watch_gsi(gsi_watch& w);
    void rearm_timer();
    sim_time now() const;

    boost::asio::io_context& _io;
    fabric& _fabric;
    const access_policy& _policy;
    std::string _directory;
    std::vector<nic::nic_node*> _nics; // the CM's ports, in order
    std::unique_ptr<cm::connection_manager> _cm;
    std::vector<std::unique_ptr<gsi_watch>> _gsi;
    std::map<std::uint64_t, std::weak_ptr<session>> _sessions;
    std::uint64_t _next_session = 1;
    boost::asio::steady_timer _timer;
    throttled_log _refusals;
    std::unique_ptr<host_sockets> _sockets; // last: its handlers use the members above
};

} // namespace rocefab::control
