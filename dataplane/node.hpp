// A node is a switch or a NIC: pure logic that receives frames and timer ticks and emits frames.
// It never reads a clock, sleeps, locks or calls DPDK port functions; a driver (realtime or
// virtual time) calls it and carries what it transmits over links.
#pragma once

#include "dataplane/packet.hpp"
#include "dataplane/time.hpp"

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

namespace rocefab {

// Where a node's transmitted frames go: the driver connects each port to a link.
class frame_sink {
public:
    virtual ~frame_sink() = default;
    // Takes ownership of `frame`. A frame the link cannot carry (down, over MTU, queue full)
    // is freed and counted by the link. Returns busy_until(port) after taking it, for a sender
    // of several frames in a row (the switch's cut-through) that would otherwise ask each time.
    virtual sim_time transmit(std::uint16_t port, rte_mbuf* frame, sim_time now) = 0;
    // When the link on `port` finishes serialising what it already holds; <= now when idle.
    virtual sim_time busy_until(std::uint16_t port) const = 0;
    // transmit() of frames[0], frames[1], ... in turn for as long as the link takes another:
    // while `busy`, busy_until(port) as the caller last learnt it, is no later than
    // `takes_until`. Returns how many it took, and leaves busy_until(port) in `busy`. The
    // switch's cut-through sends a run of frames with one call rather than one a frame.
    virtual std::size_t transmit_while_free(std::uint16_t port, std::span<rte_mbuf* const> frames, sim_time now,
                                            sim_time takes_until, sim_time& busy) {
        std::size_t taken = 0;
        while (taken < frames.size() && busy <= takes_until) busy = transmit(port, frames[taken++], now);
        return taken;
    }
};

class node {
public:
    node(std::string name, std::uint16_t port_count) : _name(std::move(name)), _port_count(port_count) {}
    virtual ~node() = default;
    node(const node&) = delete;
    node& operator=(const node&) = delete;

    const std::string& name() const { return _name; }
    std::uint16_t port_count() const { return _port_count; }

    // A frame arrived on `port` at `now`. The node owns `frame` from here on.
    virtual void receive(std::uint16_t port, rte_mbuf* frame, sim_time now) = 0;
    // Frames that arrived on `port` by `now`, in order: the same as receive() on each in turn.
    // A node that processes frames in vectors (the switch) takes them all at once.
    virtual void receive_burst(std::uint16_t port, std::span<rte_mbuf* const> frames, sim_time now) {
        for (rte_mbuf* frame : frames) receive(port, frame, now);
    }

    // Work due at `now`: expired timers, and for a NIC the doorbells of its host's queues.
    // Returns whether it did anything, so an idle driver can back off.
    virtual bool poll(sim_time now) = 0;

    // The earliest time poll() has timer work; `never` when none. The virtual-time driver
    // jumps to it; the realtime driver polls continuously and may ignore it.
    virtual sim_time next_deadline() const { return never; }

    void attach(frame_sink* output, rte_mempool* pool) {
        _output = output;
        _pool = pool;
    }

protected:
    // Returns when the link is busy until, as frame_sink::transmit() does.
    sim_time transmit(std::uint16_t port, rte_mbuf* frame, sim_time now) { return _output->transmit(port, frame, now); }
    sim_time busy_until(std::uint16_t port) const { return _output->busy_until(port); }
    std::size_t transmit_while_free(std::uint16_t port, std::span<rte_mbuf* const> frames, sim_time now,
                                    sim_time takes_until, sim_time& busy) {
        return _output->transmit_while_free(port, frames, now, takes_until, busy);
    }
    // nullptr when the pool is exhausted; callers count that and carry on.
    rte_mbuf* allocate_frame() { return rte_pktmbuf_alloc(_pool); }
    rte_mempool* pool() const { return _pool; }

private:
    std::string _name;
    std::uint16_t _port_count;
    frame_sink* _output = nullptr;
    rte_mempool* _pool = nullptr;
};

} // namespace rocefab
