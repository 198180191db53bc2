// The emulated RDMA NIC: one Ethernet port, a GID table like Soft-RoCE's, the verbs' resources
// over queues that live in shared memory with the application, and a dispatcher that hands each
// QP's packets and polls to its transport engines (requester.hpp, completer.hpp, responder.hpp;
// IBA chapter 9), which reach back through transport_port.
//
// Threading: every method runs on the data-plane thread. The control plane reaches the
// resource methods (create_qp, modify_qp, ...) through the driver's mailbox.
#pragma once

#include "dataplane/link.hpp"
#include "dataplane/log.hpp"
#include "dataplane/node.hpp"
#include "dataplane/pfc_pause.hpp"
#include "dataplane/wire/roce_frame.hpp"
#include "nic_emu/completer.hpp"
#include "nic_emu/counters.hpp"
#include "nic_emu/nic_spec.hpp"
#include "nic_emu/dcqcn.hpp"
#include "nic_emu/dma_batch.hpp"
#include "nic_emu/gsi_queue.hpp"
#include "nic_emu/requester.hpp"
#include "nic_emu/resources.hpp"
#include "nic_emu/responder.hpp"
#include "nic_emu/slot_table.hpp"
#include "nic_emu/transport_context.hpp"

#include <infiniband/verbs.h>

#include <array>
#include <span>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>

namespace rocefab::nic {

// Resolves the destination MAC for a destination GID, as the host's neighbour table would
// (the peer's MAC on the same subnet, the gateway's otherwise). False when unreachable.
using neighbour_resolver = std::function<bool(const wire::ipv6_address&, wire::mac_address&)>;

// The device's limits, as ibv_query_device reports them and as the NIC enforces them: past one,
// a create fails with ENOMEM, as a provider's does when the device is out of that resource.
namespace limits {
inline constexpr std::uint32_t max_qp = 65536;
inline constexpr std::uint32_t max_cq = 65536;
inline constexpr std::uint32_t max_mr = 65536;
inline constexpr std::uint32_t max_pd = 65536;
inline constexpr std::uint32_t max_srq = 65536;
inline constexpr std::uint32_t max_ah = 65536;
inline constexpr std::uint32_t max_comp_channels = 65536; // not a device attribute; bounds descriptors
} // namespace limits

class nic_node final : public node, private transport_port {
public:
    static constexpr std::uint32_t gid_count = 2;

    nic_node(nic_spec spec, neighbour_resolver resolver);
    ~nic_node() override;

    // Control path, before the first QP reaches RTR.
    void set_resolver(neighbour_resolver resolver) { _resolve = std::move(resolver); }
    // Sees the frames the NIC turns around itself (loopback.cpp), which no cable carries; a
    // capture on the NIC's cable end sets it. Called on the data-plane thread.
    void set_loopback_tap(frame_tap* tap) { _loopback_tap = tap; }

    // -- node ----------------------------------------------------------------------------
    void receive(std::uint16_t port, rte_mbuf* frame, sim_time now) override;
    bool poll(sim_time now) override;
    sim_time next_deadline() const override;

    // -- what the verbs see ----------------------------------------------------------------
    const nic_spec& spec() const { return _spec; }
    const wire::ipv6_address& gid(std::uint32_t index) const { return _gids[index]; }
    std::uint64_t node_guid() const { return _node_guid; } // host order
    ibv_device_attr device_attributes() const;
    ibv_port_attr port_attributes() const;
    const nic_counters& counters() const { return _transport.counters; }
    struct resource_counts {
        std::size_t contexts, pds, mrs, channels, cqs, qps;
    };
    resource_counts resources() const {
        return {_contexts.size(), _pds.size(), _mrs_by_lkey.size(), _channels.size(), _cqs.size(), _qps.size()};
    }

    // What `rdma resource show qp` shows of a QP, and the ring positions that explain a stall.
    struct qp_view {
        std::uint32_t qpn, dest_qpn;
        ibv_qp_type type;
        ibv_qp_state state;
        std::uint32_t sq_psn, rq_psn, last_acked_psn;
        std::uint32_t sq_posted, sq_started, sq_current, sq_retired; // send ring indices
        sim_time port_busy_for;               // how far ahead of now the port's transmit queue reaches
        std::uint32_t rq_posted, rq_consumed; // receive ring indices (own ring)
        bool timer_armed, waiting_rnr, responses_pending;
        bool rate_limited; // DCQCN has cut its rate
        double current_rate_bps, target_rate_bps, alpha;
        std::uint32_t send_cq_produced, send_cq_consumed, recv_cq_produced, recv_cq_consumed;
    };
    std::vector<qp_view> queue_pairs(sim_time now) const;
    // What the simulator's recorder samples of a sending QP every sample interval, as
    // queue_pairs() shows it, without the rest: its next PSN and its DCQCN rate at `now`.
    // Empty when no QP has the number.
    struct send_state {
        std::uint32_t next_psn;
        double current_rate_bps;
    };
    std::optional<send_state> send_progress(std::uint32_t qpn, sim_time now) const;

    // When received PFC lets `priority` send again (<= now: not paused).
    sim_time paused_until(std::uint8_t priority) const override { return _pauses.until(priority & 7); }

    // -- resources (control path; return 0 or an errno value) -------------------------------
    // `doorbells`, when not empty, holds the program's hw::doorbell_queue; without one the
    // context's QPs are looked at on every poll.
    std::uint32_t open_context(std::unique_ptr<address_space> memory, int async_fd, shared_region doorbells = {});
    // Frees everything the context still holds, as closing a uverbs file does.
    void close_context(std::uint32_t context);

    int alloc_pd(std::uint32_t context, std::uint32_t& handle);
    int dealloc_pd(std::uint32_t context, std::uint32_t handle);
    int reg_mr(std::uint32_t context, std::uint32_t pd, std::uint64_t address, std::uint64_t length, std::uint64_t iova,
               std::uint32_t access, std::uint32_t& handle, std::uint32_t& lkey, std::uint32_t& rkey);
    int dereg_mr(std::uint32_t context, std::uint32_t handle);
    // `channel_fd` is taken over (closed with the channel).
    int create_channel(std::uint32_t context, int channel_fd, std::uint32_t& handle);
    int destroy_channel(std::uint32_t context, std::uint32_t handle);
    int create_cq(std::uint32_t context, std::uint32_t slots, std::uint32_t channel, shared_region region,
                  std::uint32_t& handle);
    int destroy_cq(std::uint32_t context, std::uint32_t handle);
    struct qp_request {
        std::uint32_t pd, send_cq, recv_cq;
        ibv_qp_type type;
        bool sq_sig_all;
        ibv_qp_cap cap;
        std::uint32_t srq = 0; // 0: the QP has its own receive ring
    };
    // Rounds the capabilities up to what the NIC gives; `cap` returns them.
    static int qp_geometry(const ibv_qp_cap& requested, ibv_qp_cap& granted, std::uint32_t& send_slots,
                           std::uint32_t& recv_slots);
    int create_qp(std::uint32_t context, const qp_request& request, shared_region region, std::uint32_t& handle,
                  std::uint32_t& qpn, ibv_qp_cap& cap);
    int modify_qp(std::uint32_t context, std::uint32_t handle, const ibv_qp_attr& attr, int mask, sim_time now);
    int query_qp(std::uint32_t context, std::uint32_t handle, ibv_qp_attr& attr, ibv_qp_cap& cap,
                 bool& sq_sig_all) const;
    int destroy_qp(std::uint32_t context, std::uint32_t handle);

    // ah_srq_control.cpp: address handles and shared receive queues.
    int create_ah(std::uint32_t context, std::uint32_t pd, const ibv_ah_attr& attr, std::uint32_t& handle);
    int destroy_ah(std::uint32_t context, std::uint32_t handle);
    // Rounds max_wr up to ring slots and checks the limits; `granted` returns what the SRQ gets.
    static int srq_geometry(const ibv_srq_attr& requested, ibv_srq_attr& granted, std::uint32_t& slots);
    int create_srq(std::uint32_t context, std::uint32_t pd, const ibv_srq_attr& granted, std::uint32_t slots,
                   shared_region region, std::uint32_t& handle);
    int modify_srq(std::uint32_t context, std::uint32_t handle, const ibv_srq_attr& attr, int mask);
    int query_srq(std::uint32_t context, std::uint32_t handle, ibv_srq_attr& attr) const;
    int destroy_srq(std::uint32_t context, std::uint32_t handle);

    // GSI (QP1): what arrives for QP1 waits in gsi() for the daemon's CM (any thread may pop,
    // one at a time); send_mad() sends a MAD from QP1 (data plane, through the mailbox).
    // Returns 0, or EHOSTUNREACH when no neighbour answers for `destination`.
    gsi_queue& gsi() { return *_gsi; }
    int send_mad(const wire::ipv6_address& destination, std::uint32_t dest_qpn, std::uint32_t qkey,
                 const std::array<std::uint8_t, mad_size>& mad, sim_time now);

    // Test access.
    const queue_pair* find_qp_by_number(std::uint32_t qpn) const;
    // Where the QPN counter stands: a test takes it to the wrap without creating 2^24 QPs.
    void set_next_qpn_for_test(std::uint32_t qpn) { _next_qpn = qpn & wire::mask24; }

private:
    // The QP's DCQCN rate brought up to `now`, for what reads it (queue_pairs(), send_progress()).
    static dcqcn_rate rate_at(const queue_pair& qp, sim_time now);

    // -- transport_port: what the engines ask of the NIC (transport_context.hpp) ---------------
    // completions and async events (nic_node.cpp)
    bool post_completion(completion_queue& cq, const hw::cqe& entry, bool solicited) override;
    void raise_async_event(std::uint32_t context, ibv_event_type type, std::uint32_t handle) override;
    void enter_error(queue_pair& qp, const char* why) override;
    void fail_send_queue(queue_pair& qp) override;
    bool flush_dma() override { return _responder.flush_dma(); }
    // resources (nic_control.cpp)
    const memory_region* local_mr(std::uint32_t lkey, std::uint32_t pd, std::uint64_t address, std::uint64_t length,
                                  std::uint32_t needed_access) const override;
    const memory_region* remote_mr(std::uint32_t rkey, std::uint32_t pd, std::uint64_t va, std::uint64_t length,
                                   std::uint32_t needed_access) const override;
    address_space* context_memory(std::uint32_t context) const override {
        const auto it = _contexts.find(context);
        return it == _contexts.end() ? nullptr : it->second.memory.get();
    }
    const address_handle* find_address_handle(std::uint32_t handle) const override {
        const auto it = _ahs.find(handle);
        return it == _ahs.end() ? nullptr : &it->second;
    }
    // the port
    rte_mbuf* start_frame(const wire::roce_headers_spec& spec, std::size_t payload_length,
                          std::uint8_t*& payload) override;
    void finish_frame(rte_mbuf* frame, sim_time now) override;
    sim_time link_busy_until() const override { return busy_until(0); }

    // The one place a QP's state (IBA 10.3.1) changes; a change is traced at debug level.
    void set_qp_state(queue_pair& qp, ibv_qp_state next);
    // IBA 10.3.1: SQE and ERR complete what the send queue (and in ERR the receive queue) holds
    // with flush errors.
    bool flush_send_queue(queue_pair& qp);
    bool flush(queue_pair& qp);
    // The IP TTL / hop limit of packets to `dgid`. Like the kernel's ib_resolve_eth_dmac(), which
    // replaces the hop limit a program gives (ibv_rc_pingpong asks for 1) with the host route's
    // for a unicast RoCEv2 destination: 64, Linux's default. Multicast keeps the requested one.
    static std::uint8_t resolved_hop_limit(const wire::ipv6_address& dgid, std::uint8_t requested) {
        const bool multicast = dgid.bytes[0] == 0xff ||
                               (dgid.bytes[10] == 0xff && dgid.bytes[11] == 0xff && (dgid.bytes[12] & 0xf0) == 0xe0);
        return multicast ? requested : 64;
    }

    nic_spec _spec;
    neighbour_resolver _resolve;
    std::array<wire::ipv6_address, gid_count> _gids;
    std::uint64_t _node_guid;
    // What the engines share (transport_context.hpp), and the engines.
    transport_context _transport{*this, _spec, name()};
    requester _requester{_transport, _completer};
    completer _completer{_transport, _requester};
    responder _responder{_transport};
    std::unique_ptr<gsi_queue> _gsi = std::make_unique<gsi_queue>();
    void receive_gsi(const wire::parsed_roce& packet);
    std::uint32_t _gsi_psn = 0;

    std::uint32_t allocate_handle();
    std::uint32_t allocate_key(std::uint32_t handle);
    std::uint32_t allocate_qpn();
    std::uint32_t _next_handle = 1;
    std::uint32_t _next_qpn = 0x11; // QP0/QP1 are special; ConnectX and rxe start above them
    std::uint32_t _next_key = 0xff; // the first key's index is 0x100
    std::map<std::uint32_t, context_state> _contexts;
    std::map<std::uint32_t, protection_domain> _pds;
    // The keys' tables, as a ConnectX's mkey table: by the key's index (lkey == rkey here).
    struct mr_slots {
        static constexpr std::uint32_t slots = limits::max_mr;
        static constexpr unsigned index_shift = 8;
        static std::uint32_t number(const memory_region& mr) { return mr.lkey; }
    };
    slot_table<memory_region, mr_slots> _mrs_by_lkey;
    std::map<std::uint32_t, std::uint32_t> _mr_handles;               // handle -> key
    std::map<std::uint32_t, std::pair<std::uint32_t, int>> _channels; // handle -> (context, fd)
    std::map<std::uint32_t, std::unique_ptr<completion_queue>> _cqs;
    std::map<std::uint32_t, std::unique_ptr<queue_pair>> _qps; // by handle
    // The QPs by number, as a ConnectX's QP context table: by the QPN's low bits.
    struct qp_slots {
        static constexpr std::uint32_t slots = limits::max_qp;
        static constexpr unsigned index_shift = 0;
        static std::uint32_t number(queue_pair* const& qp) { return qp ? qp->qpn : 0; }
    };
    slot_table<queue_pair*, qp_slots> _qps_by_number;
    std::unordered_map<std::uint32_t, address_handle> _ahs;               // by handle
    std::map<std::uint32_t, std::unique_ptr<shared_receive_queue>> _srqs; // by handle
    log::event_throttle _error_log;                                       // QPs and CQs a program can fail at will
    // PFC received from the switch (802.1Qbb): each priority may not send before this.
    pause_timers _pauses;
    // The receive buffer of a slow receiver (nic_spec::host_rx_bps) and the PFC it sends:
    // receive_buffer.cpp.
    struct receive_buffer {
        std::vector<rte_mbuf*> ring; // allocated at construction; head/tail run freely
        std::uint32_t head = 0, tail = 0;
        std::uint32_t bytes = 0;
        std::array<std::uint32_t, 8> bytes_by_priority{};
        sim_time next_delivery = 0; // when the host takes the next frame
        bool delivering = false;    // receive() is handing a buffered frame on
    };
    receive_buffer _rx;
    // Frames for this NIC's own MAC (loopback.cpp): they wait here for the next poll, so the
    // engine that sent one never re-enters receive() from inside itself.
    struct loopback_ring {
        static constexpr std::uint32_t slots = 1024; // a power of two; head/tail run freely
        std::uint32_t head = 0, tail = 0;            // before the slots: every poll reads them, beside _rx's fields
        std::array<rte_mbuf*, slots> frames{};
        std::uint32_t held() const { return tail - head; }
    };
    loopback_ring _loopback;
    frame_tap* _loopback_tap = nullptr;
    // Takes a frame finish_frame() addressed to this NIC itself.
    void loop_back(rte_mbuf* frame, sim_time now);
    // Delivers what was looped back before this call; true when it delivered anything.
    bool deliver_looped_back(sim_time now);
    // Whether the engines may start another burst: room for it, and for the answer to every
    // frame already waiting (an ACK or NAK each).
    bool loopback_has_room() const {
        return _loopback.held() * 2 + 2 * gather_batch::max_packets <= loopback_ring::slots;
    }
    pause_sender _rx_pauses; // the PFC the receive buffer sends
    // Holds `frame` for the host; false when the NIC has no receive buffer (host_rx_bps 0).
    bool buffer_received(rte_mbuf* frame, sim_time now);
    // Hands the host what is due by now, sends XON where a priority has drained and refreshes
    // XOFF before it runs out. True when it did anything.
    bool run_receive_buffer(sim_time now);
    sim_time receive_buffer_deadline() const;
    std::uint8_t priority_of_frame(rte_mbuf* frame) const;
    void send_pfc(std::uint8_t priority, std::uint16_t quanta, sim_time now);
    // The priority a received packet travels in, by the NIC's trust mode.
    std::uint8_t priority_of(const wire::parsed_roce& packet) const {
        return _spec.trust_pcp && packet.vlan_present ? packet.pcp : _spec.dscp_to_priority[packet.dscp & 63];
    }
    // Under trust PCP, tags `h` (whose DSCP is set) with its priority: `service_level` if not 0.
    void set_priority_tag(wire::roce_headers_spec& h, std::uint8_t service_level) const {
        if (!_spec.trust_pcp) return;
        h.vlan = true;
        h.vid = 0;
        h.pcp = service_level ? service_level & 7 : _spec.dscp_to_priority[h.dscp & 63];
    }
    void on_pfc(std::span<const std::uint8_t> frame, sim_time now);
    // The QPs poll() looks at are those that may have work, so that idle QPs cost nothing: a QP
    // joins the list when a program rings for it (its doorbell queue), a frame arrives for it or
    // a verb changes it, and leaves once qp_deadline() says it waits for nothing.
    void activate(queue_pair& qp) {
        if (qp.listing != poll_listing::idle) return;
        qp.listing = poll_listing::listed;
        _active_qps.push_back(&qp);
    }
    bool take_doorbells();
    void take_doorbell(queue_pair& qp);
    void retire_idle_qps();
    // When `qp` next has something to do: 0 at once, `never` when it waits for a frame or a verb.
    // Each engine answers for itself (requester.cpp, completer.cpp, responder.cpp); the QP's
    // deadline is the earliest.
    sim_time qp_deadline(const queue_pair& qp) const;
    // DCQCN: a CE-marked packet arrived for `qp` (notification point); a CNP arrived for it
    // (reaction point).
    void on_congestion_experienced(queue_pair& qp, const wire::parsed_roce& packet, sim_time now);
    void on_cnp(queue_pair& qp, sim_time now);
    std::vector<queue_pair*> _active_qps; // iteration order for the requester (round robin)
    std::size_t _round_robin = 0;
};

} // namespace rocefab::nic
