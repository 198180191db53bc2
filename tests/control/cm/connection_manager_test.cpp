// The CM's state machine under a fake clock: two hosts' NICs wired to each other through a
// test "fabric" that can lose MADs, and the programs' requests made as the library makes them.
#include "control/cm/connection_manager.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <arpa/inet.h>
#include <cstring>
#include <deque>
#include <rdma/rdma_cma.h>

namespace rocefab::cm {
namespace {

struct sent_mad {
    std::size_t from;
    wire::ipv6_address to;
    std::uint32_t qpn;
    std::array<std::uint8_t, mad_size> mad;
};

class cm_fixture : public ::testing::Test {
protected:
    static constexpr connection_manager::session_id server = 1, client = 2, stranger = 3;

    cm_fixture() {
        local_port a;
        a.host = "h1";
        a.device = "rfab0";
        a.ipv4 = 0x0a000001;
        a.gid = wire::ipv6_address::v4_mapped(a.ipv4);
        a.node_guid = 0x1111;
        local_port b = a;
        b.host = "h2";
        b.ipv4 = 0x0a000002;
        b.gid = wire::ipv6_address::v4_mapped(b.ipv4);
        b.node_guid = 0x2222;
        connection_manager::sinks out;
        out.send_mad = [this](std::size_t port, const wire::ipv6_address& to, std::uint32_t qpn,
                              const std::array<std::uint8_t, mad_size>& mad) {
            wire_.push_back({port, to, qpn, mad});
        };
        out.deliver = [this](connection_manager::session_id s, const cm_protocol::event& e) {
            events_[s].push_back(e);
        };
        timing_.cm_response_timeout = 15;
        timing_.packet_life_time = 10;
        timing_.max_cm_retries = 2;
        cm_ = std::make_unique<connection_manager>(std::vector<local_port>{a, b}, out, timing_, 42);
        cm_->open_session(server, {"h2", 0, 100});
        cm_->open_session(client, {"h1", 0, 200});
        cm_->open_session(stranger, {"h1", 1000, 300});
    }

    // Carries the MADs on the wire to the port that has the destination GID; `lose` drops
    // the next ones.
    void carry() {
        while (!wire_.empty()) {
            sent_mad m = wire_.front();
            wire_.pop_front();
            ++carried_;
            if (lose_ > 0) {
                --lose_;
                continue;
            }
            const std::size_t to = m.to == wire::ipv6_address::v4_mapped(0x0a000001) ? 0 : 1;
            if (m.to != wire::ipv6_address::v4_mapped(0x0a000001) && m.to != wire::ipv6_address::v4_mapped(0x0a000002))
                continue; // nobody has it
            nic::gsi_datagram d;
            d.source_gid =
                to == 0 ? wire::ipv6_address::v4_mapped(0x0a000002) : wire::ipv6_address::v4_mapped(0x0a000001);
            d.destination_gid = m.to;
            d.source_qpn = 1;
            d.qkey = nic::gsi_qkey;
            d.mad = m.mad;
            cm_->receive(to, d, now_);
        }
    }

    cm_protocol::reply request(connection_manager::session_id s, cm_protocol::op code, std::uint32_t id,
                               void (*fill)(cm_protocol::request&) = nullptr) {
        cm_protocol::request r;
        std::memset(&r, 0, sizeof r);
        r.magic_number = cm_protocol::magic;
        r.code = code;
        r.id = id;
        r.port_space = RDMA_PS_TCP;
        r.qp_type = IBV_QPT_RC;
        if (fill) fill(r);
        auto out = cm_->handle(s, r, now_);
        cm_->advance(now_);
        carry();
        return out;
    }

    static void address(sockaddr_storage& s, std::uint32_t ip, std::uint16_t port) {
        std::memset(&s, 0, sizeof s);
        auto& a = reinterpret_cast<sockaddr_in&>(s);
        a.sin_family = AF_INET;
        a.sin_addr.s_addr = htonl(ip);
        a.sin_port = htons(port);
    }

    std::uint32_t listen_on(std::uint16_t port) {
        const std::uint32_t id = request(server, cm_protocol::op::create_id, 0).id;
        listen_port_ = port;
        EXPECT_EQ(request(server, cm_protocol::op::bind_addr, id,
                          [](cm_protocol::request& r) { address(r.source, 0, listen_port_); })
                      .status,
                  0);
        EXPECT_EQ(request(server, cm_protocol::op::listen, id).status, 0);
        return id;
    }

    // The client's id resolved to 10.0.0.2:port and connecting with QP 0x123.
    std::uint32_t connect_to(std::uint16_t port) {
        const std::uint32_t id = request(client, cm_protocol::op::create_id, 0).id;
        connect_port_ = port;
        EXPECT_EQ(request(client, cm_protocol::op::resolve_addr, id,
                          [](cm_protocol::request& r) {
                              address(r.destination, 0x0a000002, connect_port_);
                              r.timeout_ms = 2000;
                          })
                      .status,
                  0);
        EXPECT_EQ(take(client).type, RDMA_CM_EVENT_ADDR_RESOLVED);
        EXPECT_EQ(request(client, cm_protocol::op::resolve_route, id).status, 0);
        EXPECT_EQ(take(client).type, RDMA_CM_EVENT_ROUTE_RESOLVED);
        EXPECT_EQ(request(client, cm_protocol::op::connect, id,
                          [](cm_protocol::request& r) {
                              r.conn.qp_num = 0x123;
                              r.conn.responder_resources = 4;
                              r.conn.initiator_depth = 2;
                              r.conn.retry_count = 7;
                              r.conn.rnr_retry_count = 7;
                              r.conn.private_data_len = 5;
                              std::memcpy(r.conn.private_data, "hello", 5);
                          })
                      .status,
                  0);
        return id;
    }

    // A connection up on both sides: returns {active, passive}.
    std::pair<std::uint32_t, std::uint32_t> establish(std::uint16_t port) {
        listen_on(port);
        const std::uint32_t active = connect_to(port);
        const auto request_event = take(server);
        request(server, cm_protocol::op::accept, request_event.id,
                [](cm_protocol::request& r) { r.conn.qp_num = 0x456; });
        EXPECT_EQ(take(client).type, cm_protocol::internal_connect_response);
        request(client, cm_protocol::op::accept, active); // the RTU
        EXPECT_EQ(take(server).type, RDMA_CM_EVENT_ESTABLISHED);
        return {active, request_event.id};
    }

    cm_protocol::event take(connection_manager::session_id s) {
        auto& q = events_[s];
        if (q.empty()) {
            ADD_FAILURE() << "no event for session " << s;
            return {};
        }
        auto e = q.front();
        q.pop_front();
        return e;
    }

    void pass_time(sim_time dt) {
        const sim_time end = now_ + dt;
        while (cm_->next_deadline() <= end) {
            now_ = std::max(now_, cm_->next_deadline());
            cm_->advance(now_);
            carry();
        }
        now_ = end;
    }

    cm_timing timing_;
    std::unique_ptr<connection_manager> cm_;
    std::deque<sent_mad> wire_;
    std::map<connection_manager::session_id, std::deque<cm_protocol::event>> events_;
    sim_time now_ = seconds(1);
    int lose_ = 0;
    int carried_ = 0;
    static inline std::uint16_t listen_port_ = 0, connect_port_ = 0;
};

TEST_F(cm_fixture, a_connection_goes_req_rep_rtu_and_both_sides_agree_on_qpns_and_psns) {
    const std::uint32_t listener = listen_on(7471);
    const std::uint32_t active = connect_to(7471);
    EXPECT_EQ(cm_->state_of(active), cm_state::req_sent);
    const auto request_event = take(server);
    ASSERT_EQ(request_event.type, RDMA_CM_EVENT_CONNECT_REQUEST);
    EXPECT_EQ(request_event.listen_id, listener);
    EXPECT_EQ(request_event.conn.qp_num, 0x123u);
    EXPECT_EQ(request_event.conn.private_data_len, 56); // a REQ's 92 bytes less the CMA header
    EXPECT_EQ(std::memcmp(request_event.conn.private_data, "hello", 5), 0);
    // From the passive side, the peer's initiator depth is the responder resources asked of it.
    EXPECT_EQ(request_event.conn.responder_resources, 2);
    EXPECT_EQ(request_event.conn.initiator_depth, 4);
    const std::uint32_t passive = request_event.id;
    EXPECT_EQ(cm_->state_of(passive), cm_state::req_received);

    const auto passive_rts = request(server, cm_protocol::op::init_qp_attr, passive,
                                     [](cm_protocol::request& r) { r.qp_state = IBV_QPS_RTS; });
    EXPECT_EQ(request(server, cm_protocol::op::accept, passive,
                      [](cm_protocol::request& r) {
                          r.conn.qp_num = 0x456;
                          r.conn.responder_resources = 2;
                          r.conn.initiator_depth = 4;
                      })
                  .status,
              0);
    EXPECT_EQ(cm_->state_of(passive), cm_state::rep_sent);
    const auto response = take(client);
    EXPECT_EQ(response.type, cm_protocol::internal_connect_response);
    EXPECT_EQ(response.conn.qp_num, 0x456u);
    EXPECT_EQ(cm_->state_of(active), cm_state::rep_received);

    const auto active_rtr = request(client, cm_protocol::op::init_qp_attr, active,
                                    [](cm_protocol::request& r) { r.qp_state = IBV_QPS_RTR; });
    const auto active_rts = request(client, cm_protocol::op::init_qp_attr, active,
                                    [](cm_protocol::request& r) { r.qp_state = IBV_QPS_RTS; });
    const auto passive_rtr = request(server, cm_protocol::op::init_qp_attr, passive,
                                     [](cm_protocol::request& r) { r.qp_state = IBV_QPS_RTR; });
    const auto passive_rts2 = request(server, cm_protocol::op::init_qp_attr, passive,
                                      [](cm_protocol::request& r) { r.qp_state = IBV_QPS_RTS; });
    (void)passive_rts;
    EXPECT_EQ(active_rtr.qp_attr.dest_qp_num, 0x456u);
    EXPECT_EQ(passive_rtr.qp_attr.dest_qp_num, 0x123u);
    EXPECT_EQ(active_rtr.qp_attr.rq_psn, passive_rts2.qp_attr.sq_psn);
    EXPECT_EQ(passive_rtr.qp_attr.rq_psn, active_rts.qp_attr.sq_psn);
    EXPECT_EQ(active_rtr.qp_attr.ah_attr.grh.sgid_index, 1);
    EXPECT_TRUE(active_rtr.qp_attr_mask & IBV_QP_AV);
    EXPECT_EQ(active_rts.qp_attr.retry_cnt, 7);

    EXPECT_EQ(request(client, cm_protocol::op::accept, active).status, 0); // the RTU
    EXPECT_EQ(cm_->state_of(active), cm_state::established);
    EXPECT_EQ(cm_->state_of(passive), cm_state::established);
    EXPECT_EQ(take(server).type, RDMA_CM_EVENT_ESTABLISHED);

    EXPECT_EQ(request(client, cm_protocol::op::disconnect, active).status, 0);
    EXPECT_EQ(take(server).type, RDMA_CM_EVENT_DISCONNECTED);
    EXPECT_EQ(cm_->state_of(active), cm_state::dreq_sent);
    EXPECT_EQ(request(server, cm_protocol::op::disconnect, passive).status, 0);
    EXPECT_EQ(take(client).type, RDMA_CM_EVENT_DISCONNECTED);
    EXPECT_EQ(cm_->state_of(active), cm_state::timewait);
    EXPECT_EQ(cm_->counters().connections_established, 2u);
}

TEST_F(cm_fixture, the_passive_sides_mra_keeps_the_active_side_from_retrying_while_the_program_decides) {
    listen_on(7471);
    const std::uint32_t active = connect_to(7471);
    const auto request_event = take(server);
    ASSERT_EQ(request_event.type, RDMA_CM_EVENT_CONNECT_REQUEST);
    const sim_time per_try = 2 * cm_time(timing_.packet_life_time) + cm_time(timing_.cm_response_timeout);
    pass_time(per_try * (timing_.max_cm_retries + 2)); // longer than all the REQ's tries
    EXPECT_EQ(cm_->counters().mads_retransmitted, 0u);
    EXPECT_EQ(cm_->state_of(active), cm_state::req_sent);
    EXPECT_TRUE(events_[client].empty());
    EXPECT_EQ(request(server, cm_protocol::op::accept, request_event.id,
                      [](cm_protocol::request& r) { r.conn.qp_num = 0x456; })
                  .status,
              0);
    EXPECT_EQ(take(client).type, cm_protocol::internal_connect_response);
}

TEST_F(cm_fixture, both_sides_disconnecting_at_once_each_get_disconnected) {
    const auto [active, passive] = establish(7471);
    // Both DREQs leave before either arrives.
    cm_protocol::request r;
    std::memset(&r, 0, sizeof r);
    r.magic_number = cm_protocol::magic;
    r.code = cm_protocol::op::disconnect;
    r.id = active;
    cm_->handle(client, r, now_);
    r.id = passive;
    cm_->handle(server, r, now_);
    carry();
    EXPECT_EQ(take(client).type, RDMA_CM_EVENT_DISCONNECTED);
    EXPECT_EQ(take(server).type, RDMA_CM_EVENT_DISCONNECTED);
    EXPECT_EQ(cm_->state_of(active), cm_state::timewait);
    EXPECT_EQ(cm_->state_of(passive), cm_state::timewait);
}

TEST_F(cm_fixture, a_dreq_nobody_answers_still_ends_in_disconnected_after_the_retries) {
    const auto [active, passive] = establish(7471);
    (void)passive;
    lose_ = 1000;
    request(client, cm_protocol::op::disconnect, active);
    EXPECT_TRUE(events_[client].empty());
    const sim_time per_try = 2 * cm_time(timing_.packet_life_time) + cm_time(timing_.cm_response_timeout);
    pass_time(per_try * (timing_.max_cm_retries + 1));
    EXPECT_EQ(take(client).type, RDMA_CM_EVENT_DISCONNECTED);
    EXPECT_EQ(cm_->state_of(active), cm_state::timewait);
}

TEST_F(cm_fixture, a_program_that_dies_connected_disconnects_its_peer) {
    const auto [active, passive] = establish(7471);
    (void)active;
    cm_->close_session(client, now_);
    carry();
    EXPECT_EQ(take(server).type, RDMA_CM_EVENT_DISCONNECTED);
    EXPECT_EQ(cm_->state_of(passive), cm_state::dreq_received);
    EXPECT_FALSE(cm_->state_of(active));
}

TEST_F(cm_fixture, a_rejected_request_reaches_the_active_side_with_the_private_data) {
    listen_on(7471);
    connect_to(7471);
    const auto request_event = take(server);
    EXPECT_EQ(request(server, cm_protocol::op::reject, request_event.id,
                      [](cm_protocol::request& r) {
                          r.conn.private_data_len = 3;
                          std::memcpy(r.conn.private_data, "no!", 3);
                      })
                  .status,
              0);
    const auto e = take(client);
    EXPECT_EQ(e.type, RDMA_CM_EVENT_REJECTED);
    EXPECT_EQ(e.status, 28); // consumer defined
    EXPECT_EQ(std::memcmp(e.conn.private_data, "no!", 3), 0);
}

TEST_F(cm_fixture, sidr_finds_the_listeners_qp_or_says_the_service_is_not_supported) {
    const std::uint32_t listener = request(server, cm_protocol::op::create_id, 0, [](cm_protocol::request& r) {
                                       r.port_space = RDMA_PS_UDP;
                                       r.qp_type = IBV_QPT_UD;
                                   }).id;
    request(server, cm_protocol::op::bind_addr, listener, [](cm_protocol::request& r) { address(r.source, 0, 7000); });
    EXPECT_EQ(request(server, cm_protocol::op::listen, listener).status, 0);
    const auto resolve_and_connect = [&](std::uint16_t port) {
        const std::uint32_t id = request(client, cm_protocol::op::create_id, 0, [](cm_protocol::request& r) {
                                     r.port_space = RDMA_PS_UDP;
                                     r.qp_type = IBV_QPT_UD;
                                 }).id;
        connect_port_ = port;
        request(client, cm_protocol::op::resolve_addr, id, [](cm_protocol::request& r) {
            r.port_space = RDMA_PS_UDP;
            address(r.destination, 0x0a000002, connect_port_);
        });
        EXPECT_EQ(take(client).type, RDMA_CM_EVENT_ADDR_RESOLVED);
        request(client, cm_protocol::op::resolve_route, id);
        EXPECT_EQ(take(client).type, RDMA_CM_EVENT_ROUTE_RESOLVED);
        EXPECT_EQ(request(client, cm_protocol::op::connect, id).status, 0);
        return id;
    };
    resolve_and_connect(7000);
    const auto request_event = take(server);
    ASSERT_EQ(request_event.type, RDMA_CM_EVENT_CONNECT_REQUEST);
    EXPECT_EQ(request(server, cm_protocol::op::accept, request_event.id,
                      [](cm_protocol::request& r) {
                          r.conn.qp_num = 0x789;
                          r.conn.qkey = RDMA_UDP_QKEY;
                      })
                  .status,
              0);
    const auto established = take(client);
    EXPECT_EQ(established.type, RDMA_CM_EVENT_ESTABLISHED);
    EXPECT_EQ(established.ud.qp_num, 0x789u);
    EXPECT_EQ(established.ud.qkey, static_cast<std::uint32_t>(RDMA_UDP_QKEY));
    EXPECT_EQ(established.ud.ah_attr.grh.sgid_index, 1);
    EXPECT_EQ(cm_->counters().sidr_resolved, 1u);

    resolve_and_connect(7001);
    const auto refused = take(client);
    EXPECT_EQ(refused.type, RDMA_CM_EVENT_UNREACHABLE);
    EXPECT_EQ(refused.status, 1); // SIDR status: service ID not supported
}

TEST_F(cm_fixture, a_req_for_a_port_nobody_listens_on_is_rejected_with_invalid_service_id) {
    listen_on(7471);
    const std::uint32_t active = connect_to(7472);
    const auto e = take(client);
    EXPECT_EQ(e.type, RDMA_CM_EVENT_REJECTED);
    EXPECT_EQ(e.status, 8);
    EXPECT_EQ(cm_->state_of(active), cm_state::rejected);
    EXPECT_EQ(cm_->counters().req_rejected_no_listener, 1u);
}

TEST_F(cm_fixture, a_lost_req_is_sent_again_after_the_response_timeout) {
    listen_on(7471);
    lose_ = 1;
    connect_to(7471);
    EXPECT_TRUE(events_[server].empty());
    const sim_time per_try = 2 * cm_time(timing_.packet_life_time) + cm_time(timing_.cm_response_timeout);
    pass_time(per_try - 1);
    EXPECT_TRUE(events_[server].empty());
    pass_time(1);
    EXPECT_EQ(take(server).type, RDMA_CM_EVENT_CONNECT_REQUEST);
    EXPECT_EQ(cm_->counters().mads_retransmitted, 1u);
}

TEST_F(cm_fixture, a_req_nobody_answers_is_unreachable_once_retries_run_out) {
    lose_ = 1000;
    const std::uint32_t active = connect_to(7471);
    const sim_time per_try = 2 * cm_time(timing_.packet_life_time) + cm_time(timing_.cm_response_timeout);
    pass_time(per_try * (timing_.max_cm_retries + 1) - 1);
    EXPECT_TRUE(events_[client].empty());
    pass_time(1);
    const auto e = take(client);
    EXPECT_EQ(e.type, RDMA_CM_EVENT_UNREACHABLE);
    EXPECT_EQ(e.status, -ETIMEDOUT);
    EXPECT_EQ(cm_->state_of(active), cm_state::unreachable);
    EXPECT_EQ(cm_->counters().mads_retransmitted, timing_.max_cm_retries);
}

TEST_F(cm_fixture, a_program_cannot_touch_another_channels_id) {
    const std::uint32_t listener = listen_on(7471);
    EXPECT_EQ(request(stranger, cm_protocol::op::destroy_id, listener).status, EINVAL);
    EXPECT_EQ(request(client, cm_protocol::op::listen, listener).status, EINVAL);
    EXPECT_EQ(cm_->state_of(listener), cm_state::listening);
}

TEST_F(cm_fixture, one_channel_cannot_take_every_id) {
    for (std::uint32_t i = 0; i < connection_manager::max_ids_per_channel; ++i)
        ASSERT_EQ(cm_->handle(
                         stranger,
                         [] {
                             cm_protocol::request r{};
                             r.code = cm_protocol::op::create_id;
                             r.port_space = RDMA_PS_TCP;
                             r.qp_type = IBV_QPT_RC;
                             return r;
                         }(),
                         now_)
                      .status,
                  0);
    EXPECT_EQ(request(stranger, cm_protocol::op::create_id, 0).status, ENOMEM);
    EXPECT_EQ(request(client, cm_protocol::op::create_id, 0).status, 0); // others still can
    cm_->close_session(stranger, now_);
    EXPECT_EQ(cm_->ids(), 1u);
}

TEST_F(cm_fixture, malformed_mads_are_dropped_and_counted) {
    nic::gsi_datagram d;
    d.qkey = nic::gsi_qkey;
    d.mad.fill(0xff);
    cm_->receive(0, d, now_);
    d.mad.fill(0);
    cm_->receive(0, d, now_);
    cm_->receive(7, d, now_); // no such port
    EXPECT_EQ(cm_->counters().mads_malformed, 2u);
    EXPECT_TRUE(wire_.empty());
}

TEST_F(cm_fixture, binding_a_port_in_use_fails_and_port_zero_takes_an_ephemeral_one) {
    listen_on(7471);
    const std::uint32_t other = request(server, cm_protocol::op::create_id, 0).id;
    EXPECT_EQ(request(server, cm_protocol::op::bind_addr, other,
                      [](cm_protocol::request& r) { address(r.source, 0x0a000002, 7471); })
                  .status,
              EADDRINUSE);
    const auto any = request(server, cm_protocol::op::bind_addr, other,
                             [](cm_protocol::request& r) { address(r.source, 0x0a000002, 0); });
    EXPECT_EQ(any.status, 0);
    const auto port = ntohs(reinterpret_cast<const sockaddr_in&>(any.route.source).sin_port);
    EXPECT_GE(port, 32768);
    const std::uint32_t third = request(server, cm_protocol::op::create_id, 0).id;
    EXPECT_EQ(request(server, cm_protocol::op::bind_addr, third,
                      [](cm_protocol::request& r) { address(r.source, 0x0a000001, 0); })
                  .status,
              EADDRNOTAVAIL); // h1's address, not h2's
}

TEST_F(cm_fixture, a_loopback_address_binds_to_no_device_and_a_listener_there_takes_no_remote_request) {
    // libfabric's verbs provider binds a passive id to 127.0.0.1 and takes "no device" to mean
    // "listen on the devices' own addresses" (vrb_fill_addr).
    const std::uint32_t id = request(server, cm_protocol::op::create_id, 0).id;
    EXPECT_EQ(request(server, cm_protocol::op::bind_addr, id,
                      [](cm_protocol::request& r) { address(r.source, 0x7f000001, 7471); })
                  .status,
              0);
    const auto ids = cm_->list_ids();
    ASSERT_EQ(ids.size(), 1u);
    EXPECT_EQ(ids[0].state, cm_state::address_bound);
    EXPECT_EQ(ids[0].device, "");
    EXPECT_EQ(ids[0].source_ip, 0x7f000001u);
    EXPECT_EQ(request(server, cm_protocol::op::listen, id).status, 0);
    connect_to(7471); // to 10.0.0.2:7471, which nobody listens on
    EXPECT_TRUE(events_[server].empty());
    EXPECT_EQ(cm_->counters().req_rejected_no_listener, 1u);
}

TEST_F(cm_fixture, an_address_nobody_has_is_an_address_error_after_the_timeout) {
    const std::uint32_t id = request(client, cm_protocol::op::create_id, 0).id;
    request(client, cm_protocol::op::resolve_addr, id, [](cm_protocol::request& r) {
        address(r.destination, 0x0a000063, 1);
        r.timeout_ms = 500;
    });
    EXPECT_TRUE(events_[client].empty());
    pass_time(milliseconds(500));
    const auto e = take(client);
    EXPECT_EQ(e.type, RDMA_CM_EVENT_ADDR_ERROR);
    EXPECT_EQ(e.status, -ETIMEDOUT);
}

TEST_F(cm_fixture, the_id_list_shows_who_listens_and_who_is_connected_with_their_addresses) {
    EXPECT_TRUE(cm_->list_ids().empty());
    const auto [active, passive] = establish(7471);
    (void)active;
    (void)passive;
    const auto ids = cm_->list_ids();
    ASSERT_EQ(ids.size(), 3u); // the listener, and the two ends of the connection
    const auto listener =
        std::find_if(ids.begin(), ids.end(), [](const auto& id) { return id.state == cm_state::listening; });
    ASSERT_NE(listener, ids.end());
    EXPECT_EQ(listener->host, "h2");
    EXPECT_EQ(listener->pid, 100);
    EXPECT_EQ(listener->source_port, 7471);
    EXPECT_EQ(listener->source_ip, 0u); // the wildcard: no device yet
    EXPECT_EQ(listener->device, "");
    EXPECT_EQ(listener->port_space, RDMA_PS_TCP);
    const auto client_end = std::find_if(ids.begin(), ids.end(), [](const auto& id) { return id.host == "h1"; });
    ASSERT_NE(client_end, ids.end());
    EXPECT_EQ(client_end->state, cm_state::established);
    EXPECT_EQ(client_end->pid, 200);
    EXPECT_EQ(client_end->device, "rfab0");
    EXPECT_EQ(client_end->destination_ip, 0x0a000002u);
    EXPECT_EQ(client_end->destination_port, 7471);
    EXPECT_EQ(client_end->qpn, 0x123u);
}

} // namespace
} // namespace rocefab::cm
