// The attach server: where the verbs library of a program started with `rocefab run` reaches
// the NICs of its emulated host. One SOCK_SEQPACKET connection is one device context; when it
// closes (the program called ibv_close_device, exited or died) everything the context held is
// freed, as the kernel does when a uverbs file is released.
#pragma once

#include "control/fabric.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>

#include <memory>
#include <string>

namespace rocefab::control {

class attach_server {
public:
    // Listens on `socket_path` (replacing a stale socket); throws std::runtime_error on failure.
    attach_server(boost::asio::io_context& io, fabric& fab, std::string socket_path);
    ~attach_server();

    std::size_t sessions() const { return _sessions; }

private:
    class session;
    void accept_next();

    boost::asio::io_context& _io;
    fabric& _fabric;
    std::string _path;
    boost::asio::posix::stream_descriptor _listener;
    std::size_t _sessions = 0;
};

} // namespace rocefab::control
