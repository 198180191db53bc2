// rdma-integrity's server: it takes the run's parameters from the client's hello, regenerates the
// schedule, and checks what arrives against it: every SEND's bytes, length, immediate and order as
// it completes; the WRITEs, READs and atomics when a CHECK names them (RC ordering puts a WRITE's
// data in place before the SEND that follows it completes); the atomic area against its model at
// DONE. It returns CREDIT messages so that the client never overruns its receive queue and knows
// which parts of the write area it may reuse.
#include "server.hpp"

#include "communication.hpp"
#include "resources.hpp"
#include "schedule.hpp"
#include "wire.hpp"

#include <arpa/inet.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <deque>
#include <vector>

namespace rocefab::tools::integrity {

namespace {

constexpr std::size_t canary_gap = 64;
constexpr std::uint8_t receive_canary = 0xA5;
constexpr std::uint8_t region_canary = 0x5A;

// A receive slot: `pieces` scatter entries over a logical buffer of `capacity` bytes, each piece
// followed by a canary gap that the NIC must never touch.
struct receive_layout {
    std::size_t capacity, stride;
    std::uint32_t max_pieces;
    std::uint32_t pieces(std::uint64_t slot) const { return 1 + static_cast<std::uint32_t>(slot % max_pieces); }
    std::size_t piece_length(std::uint32_t pieces) const { return (capacity + pieces - 1) / pieces; }
};

class server {
public:
    server(verbs_context& v, const options& o, peer_link& peer, const client_hello& hello)
        : _v(v), _o(o), _peer(peer), _run(hello.run), _ops(enabled_ops(hello.run.ops_mask)) {
        const std::size_t capacity = std::max<std::size_t>(_run.max_size, max_control_size);
        // 256 receives, fewer for big messages: the receive buffers stay under 64 MiB.
        _depth =
            static_cast<std::uint32_t>(std::clamp<std::size_t>((64u << 20) / (capacity + 4 * canary_gap), 16, 256));
        _depth = std::min<std::uint32_t>(_depth, static_cast<std::uint32_t>(v.device.max_qp_wr));
        _layout.capacity = capacity;
        _layout.max_pieces = 3;
        create_queue_pair(v, server_send_depth, _depth, 1, _layout.max_pieces,
                          IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
                              IBV_ACCESS_REMOTE_ATOMIC,
                          _peer);
        _layout.max_pieces = std::max<std::uint32_t>(1, std::min(_layout.max_pieces, v.max_recv_sge));
        _layout.stride = (capacity + _layout.max_pieces * (canary_gap + 8) + 63) & ~std::size_t(63);
        _receive.assign(_layout.stride * _depth, receive_canary);
        _receive_mr = register_memory(v, _receive, IBV_ACCESS_LOCAL_WRITE, _peer);
        _region.assign(std::max<std::size_t>(4ull * _run.max_size, 256u << 10), region_canary);
        _region_mr = register_memory(v, _region, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE, _peer);
        // Each area grants only the remote access its operations need.
        _read_source.resize(read_area_size(_run));
        fill_payload(_read_source.data(), _read_source.size(), read_area_key(_run.seed), 0);
        _read_mr = register_memory(v, _read_source, IBV_ACCESS_REMOTE_READ, _peer);
        for (std::uint32_t i = 0; i < atomic_words + 2; ++i) _atomic_model[i] = initial_atomic_word(_run.seed, i);
        _atomic_area.assign(atomic_words + 2, 0);
        std::memcpy(_atomic_area.data(), _atomic_model.data(), _atomic_area.size() * 8);
        _atomic_mr = ibv_reg_mr(v.pd, _atomic_area.data(), _atomic_area.size() * 8,
                                IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_ATOMIC);
        if (!_atomic_mr) fail(_peer, "ibv_reg_mr of the atomic area failed: %s", std::strerror(errno));
        _credits.assign(credit_slot * server_send_depth, 0);
        _credits_mr = register_memory(v, _credits, IBV_ACCESS_LOCAL_WRITE, _peer);
        for (std::uint32_t i = 0; i < _depth; ++i) post_receive();
    }

    server_hello hello() const {
        server_hello h{};
        h.qpn = _v.qp->qp_num;
        h.psn = _v.psn;
        h.lid = _v.port.lid;
        std::memcpy(h.gid, _v.gid.raw, 16);
        h.region_address = reinterpret_cast<std::uintptr_t>(_region.data());
        h.region_size = _region.size();
        h.rkey = _region_mr->rkey;
        h.receive_depth = _depth;
        h.read_address = reinterpret_cast<std::uintptr_t>(_read_source.data());
        h.read_rkey = _read_mr->rkey;
        h.atomic_address = reinterpret_cast<std::uintptr_t>(_atomic_area.data());
        h.atomic_rkey = _atomic_mr->rkey;
        return h;
    }

    void run() {
        ibv_wc wc[32];
        watchdog dog;
        while (!(_finished && _sends_outstanding == 0)) {
            const int n = poll_completions(_v, wc, 32, _peer);
            for (int i = 0; i < n; ++i) handle(wc[i]);
            const bool sent = maybe_send_credit();
            if (n > 0 || sent) {
                dog.progress();
                continue;
            }
            if (dog.idle_and_expired(_o.stall_seconds, _v.channel, _peer))
                fail(_peer, "stalled for %u s: %llu of %llu messages verified, %llu receives completed",
                     _o.stall_seconds, static_cast<unsigned long long>(_next_seq),
                     static_cast<unsigned long long>(_run.messages),
                     static_cast<unsigned long long>(_receives_completed));
            wait_for_completion(_v, _peer);
        }
        std::printf("rdma-integrity: %llu messages, %llu bytes, 0 errors\n", static_cast<unsigned long long>(_next_seq),
                    static_cast<unsigned long long>(_bytes));
        std::fflush(stdout);
    }

private:
    void post_receive() {
        const std::uint64_t wr_id = _receives_posted++;
        const std::uint64_t slot = wr_id % _depth;
        const std::uint32_t pieces = _layout.pieces(slot);
        const std::size_t piece = _layout.piece_length(pieces);
        ibv_sge sge[4];
        std::uint8_t* base = _receive.data() + slot * _layout.stride;
        for (std::uint32_t j = 0; j < pieces; ++j) {
            const std::size_t length = std::min(piece, _layout.capacity - std::min(_layout.capacity, j * piece));
            sge[j] = {reinterpret_cast<std::uintptr_t>(base + j * (piece + canary_gap)),
                      static_cast<std::uint32_t>(length), _receive_mr->lkey};
        }
        ibv_recv_wr wr{};
        wr.wr_id = wr_id;
        wr.sg_list = sge;
        wr.num_sge = static_cast<int>(pieces);
        ibv_recv_wr* bad = nullptr;
        if (const int e = ibv_post_recv(_v.qp, &wr, &bad)) fail(_peer, "ibv_post_recv: %s", std::strerror(e));
    }

    // Calls f(logical_offset, pointer, length) for each piece of the slot's first `length` bytes.
    template <typename F> void for_each_piece(std::uint64_t slot, std::size_t length, F f) {
        const std::uint32_t pieces = _layout.pieces(slot);
        const std::size_t piece = _layout.piece_length(pieces);
        std::uint8_t* base = _receive.data() + slot * _layout.stride;
        for (std::uint32_t j = 0; j < pieces && j * piece < length; ++j)
            f(j * piece, base + j * (piece + canary_gap), std::min(piece, length - j * piece));
    }

    // Checks the data, then that nothing beyond it (the rest of the piece, the gaps) was written;
    // then restores the canary for the slot's next use.
    void verify_receive(std::uint64_t slot, const message_plan& m, std::uint32_t byte_len) {
        const std::uint64_t key = payload_key(_run.seed, m.seq);
        for_each_piece(slot, byte_len, [&](std::size_t offset, std::uint8_t* p, std::size_t length) {
            std::uint8_t want = 0;
            if (auto bad = payload_mismatch(p, length, key, offset, &want))
                fail(_peer, "seq %llu (%s, %u bytes): byte at offset %zu: expected 0x%02x, got 0x%02x",
                     static_cast<unsigned long long>(m.seq), info(m.op).name, m.size, offset + *bad, want, p[*bad]);
        });
        check_and_restore_canary(slot, byte_len, m.seq);
    }

    void check_and_restore_canary(std::uint64_t slot, std::size_t byte_len, std::uint64_t seq) {
        const std::uint32_t pieces = _layout.pieces(slot);
        const std::size_t piece = _layout.piece_length(pieces);
        std::uint8_t* base = _receive.data() + slot * _layout.stride;
        for (std::uint32_t j = 0; j < pieces; ++j) {
            const std::size_t start = j * piece;
            const std::size_t length = std::min(piece, _layout.capacity - std::min(_layout.capacity, start));
            std::uint8_t* p = base + j * (piece + canary_gap);
            const std::size_t data = byte_len > start ? std::min(length, byte_len - start) : 0;
            // Past the data: up to 64 bytes of the piece and the whole gap after it.
            const std::size_t check_end = std::min(length, data + 64);
            for (std::size_t i = data; i < check_end; ++i)
                if (p[i] != receive_canary)
                    fail(_peer,
                         "seq %llu: receive buffer written beyond the message's %zu bytes at offset %zu (got 0x%02x)",
                         static_cast<unsigned long long>(seq), byte_len, start + i, p[i]);
            for (std::size_t i = 0; i < canary_gap; ++i)
                if (p[length + i] != receive_canary)
                    fail(_peer, "seq %llu: receive scatter gap %u written at byte %zu (got 0x%02x)",
                         static_cast<unsigned long long>(seq), j, i, p[length + i]);
            std::memset(p, receive_canary, data);
        }
    }

    message_plan expect(std::uint64_t seq) {
        if (seq >= _run.messages)
            fail(_peer, "message beyond the end of the run: seq %llu of %llu", static_cast<unsigned long long>(seq),
                 static_cast<unsigned long long>(_run.messages));
        return plan_of(_run, _ops, seq);
    }

    void handle(const ibv_wc& wc) {
        // Only wr_id, status, qp_num and vendor_err are valid in a failed completion.
        check_status(wc, _peer);
        if (wc.qp_num != _v.qp->qp_num) fail(_peer, "completion for QP %u, expected %u", wc.qp_num, _v.qp->qp_num);
        if (wc.opcode & IBV_WC_RECV) {
            if (wc.wr_id != _receives_completed)
                fail(_peer, "receive completion out of order: wr_id %llu, expected %llu",
                     static_cast<unsigned long long>(wc.wr_id), static_cast<unsigned long long>(_receives_completed));
            ++_receives_completed;
            handle_receive(wc);
            post_receive();
            if (_receives_posted - _depth - _credited >= _depth / 4) _credit_wanted = true;
            return;
        }
        if (wc.opcode != IBV_WC_SEND)
            fail(_peer, "send completion with opcode %s, expected SEND", wc_opcode_name(wc.opcode));
        if (wc.wr_id != _sends_completed)
            fail(_peer, "send completion out of order: wr_id %llu, expected %llu",
                 static_cast<unsigned long long>(wc.wr_id), static_cast<unsigned long long>(_sends_completed));
        ++_sends_completed;
        --_sends_outstanding;
    }

    void handle_receive(const ibv_wc& wc) {
        const std::uint64_t slot = wc.wr_id % _depth;
        const bool with_imm = wc.wc_flags & IBV_WC_WITH_IMM;
        const std::uint32_t imm = with_imm ? ntohl(wc.imm_data) : 0;
        if (wc.opcode == IBV_WC_RECV && with_imm && (imm & control_immediate)) return handle_control(slot, wc.byte_len);
        if (wc.opcode == IBV_WC_RECV_RDMA_WITH_IMM) {
            if (!with_imm) fail(_peer, "RECV_RDMA_WITH_IMM completion without IBV_WC_WITH_IMM");
            return handle_write_immediate(slot, imm, wc.byte_len);
        }
        if (wc.opcode != IBV_WC_RECV) fail(_peer, "receive completion with opcode %s", wc_opcode_name(wc.opcode));
        // A data SEND: it must be the next message, and every WRITE before it already checked.
        const message_plan m = expect(_next_seq);
        const op_kind got = with_imm ? op_kind::send_imm : op_kind::send;
        if (m.op != got)
            fail(_peer, "seq %llu: expected %s (%u bytes), got %s of %u bytes", static_cast<unsigned long long>(m.seq),
                 info(m.op).name, m.size, info(got).name, wc.byte_len);
        if (with_imm && imm != (m.seq & 0x7fffffff))
            fail(_peer, "seq %llu (send_imm): immediate expected %llu, got %u", static_cast<unsigned long long>(m.seq),
                 static_cast<unsigned long long>(m.seq & 0x7fffffff), imm);
        if (wc.byte_len != m.size)
            fail(_peer, "seq %llu (%s): byte_len expected %u, got %u", static_cast<unsigned long long>(m.seq),
                 info(m.op).name, m.size, wc.byte_len);
        verify_receive(slot, m, wc.byte_len);
        _bytes += m.size;
        ++_next_seq;
    }

    // WRITE WITH IMMEDIATE: the immediate names the sequence number; every message between the
    // last one accounted for and it must be a plain WRITE. Its data is checked with its batch.
    void handle_write_immediate(std::uint64_t slot, std::uint32_t imm, std::uint32_t byte_len) {
        std::uint64_t seq = std::max(_next_seq, _immediate_cursor);
        for (;; ++seq) {
            const message_plan m = expect(seq);
            if (m.op == op_kind::write_imm) break;
            if (info(m.op).consumes_receive) // WRITEs, READs and atomics complete nothing at the server
                fail(_peer, "seq %llu: expected %s (%u bytes), got write_imm with immediate %u",
                     static_cast<unsigned long long>(seq), info(m.op).name, m.size, imm);
        }
        const message_plan m = expect(seq);
        if (imm != (seq & 0x7fffffff))
            fail(_peer, "seq %llu (write_imm): immediate expected %llu, got %u", static_cast<unsigned long long>(seq),
                 static_cast<unsigned long long>(seq & 0x7fffffff), imm);
        if (byte_len != m.size)
            fail(_peer, "seq %llu (write_imm): byte_len expected %u, got %u", static_cast<unsigned long long>(seq),
                 m.size, byte_len);
        check_and_restore_canary(slot, 0, seq);
        _immediates.push_back(seq);
        _immediate_cursor = seq + 1;
    }

    void handle_control(std::uint64_t slot, std::uint32_t byte_len) {
        std::uint8_t message[max_control_size];
        if (byte_len < control_header_size || byte_len > max_control_size)
            fail(_peer, "control message of %u bytes (expected %zu..%zu)", byte_len, control_header_size,
                 max_control_size);
        for_each_piece(slot, byte_len, [&](std::size_t offset, std::uint8_t* p, std::size_t length) {
            std::memcpy(message + offset, p, length);
        });
        check_and_restore_canary(slot, byte_len, _next_seq);
        const control_header h = decode_control_header(message);
        if (h.magic != check_magic) fail(_peer, "control message with magic 0x%08x", h.magic);
        if (byte_len != control_header_size + h.count * write_entry_size || h.count > max_writes_per_check)
            fail(_peer, "control message of %u bytes with %u entries", byte_len, h.count);
        if (h.type == static_cast<std::uint32_t>(control_type::check)) {
            for (std::uint32_t i = 0; i < h.count; ++i) verify_entry(decode_write_entry(message, i));
            if (!_immediates.empty())
                fail(_peer, "write_imm seq %llu completed at the server but no CHECK named it",
                     static_cast<unsigned long long>(_immediates.front()));
        } else if (h.type == static_cast<std::uint32_t>(control_type::done)) {
            if (_next_seq != _run.messages || h.messages != _run.messages)
                fail(_peer, "DONE after %llu messages (client says %llu), expected %llu",
                     static_cast<unsigned long long>(_next_seq), static_cast<unsigned long long>(h.messages),
                     static_cast<unsigned long long>(_run.messages));
            if (h.bytes != _bytes)
                fail(_peer, "DONE: client sent %llu bytes, server verified %llu",
                     static_cast<unsigned long long>(h.bytes), static_cast<unsigned long long>(_bytes));
            verify_atomic_area();
            _finishing = true;
        } else {
            fail(_peer, "control message of unknown type %u", h.type);
        }
        if (h.flags & flag_ack_request) _credit_wanted = true;
    }

    // A CHECK entry: the next message in sequence, a WRITE, READ or atomic.
    void verify_entry(const write_entry& e) {
        const message_plan m = expect(_next_seq);
        if (e.seq != m.seq)
            fail(_peer, "CHECK names seq %llu, expected seq %llu (%s)", static_cast<unsigned long long>(e.seq),
                 static_cast<unsigned long long>(m.seq), info(m.op).name);
        if (e.op != static_cast<std::uint32_t>(m.op) || info(m.op).area == target::none)
            fail(_peer, "seq %llu: expected %s (%u bytes), CHECK names opcode %u",
                 static_cast<unsigned long long>(m.seq), info(m.op).name, m.size, e.op);
        if (e.length != m.size)
            fail(_peer, "seq %llu (%s): CHECK names %u bytes, expected %u", static_cast<unsigned long long>(m.seq),
                 info(m.op).name, e.length, m.size);
        switch (info(m.op).area) {
        case target::write_area: verify_write(m, e); break;
        case target::read_area: verify_read_source(m, e); break;
        case target::atomic_area: replay_atomic(m, e); break;
        case target::none: break;
        }
        _bytes += m.size;
        ++_next_seq;
    }

    // The READ's source must still hold what the server put there: a READ never writes.
    void verify_read_source(const message_plan& m, const write_entry& e) {
        if (e.offset != m.read_offset)
            fail(_peer, "seq %llu (read): CHECK names read offset %llu, expected %llu",
                 static_cast<unsigned long long>(m.seq), static_cast<unsigned long long>(e.offset),
                 static_cast<unsigned long long>(m.read_offset));
        const std::uint8_t* p = _read_source.data() + e.offset;
        std::uint8_t want = 0;
        if (auto bad = payload_mismatch(p, e.length, read_area_key(_run.seed), e.offset, &want))
            fail(_peer,
                 "seq %llu (read, %u bytes at read offset %llu): the source changed at byte %zu: expected 0x%02x, "
                 "got 0x%02x",
                 static_cast<unsigned long long>(m.seq), m.size, static_cast<unsigned long long>(e.offset), *bad, want,
                 p[*bad]);
    }

    // Atomics execute at the responder in sequence order, so the model follows them in that order.
    void replay_atomic(const message_plan& m, const write_entry& e) {
        if (e.offset != std::uint64_t(m.atomic_word) * 8)
            fail(_peer, "seq %llu (%s): CHECK names atomic offset %llu, expected %llu",
                 static_cast<unsigned long long>(m.seq), info(m.op).name, static_cast<unsigned long long>(e.offset),
                 static_cast<unsigned long long>(m.atomic_word) * 8);
        _atomic_model[m.atomic_word] = step_of(m, _atomic_model[m.atomic_word]).after;
        _atomic_last[m.atomic_word] = m.seq + 1;
    }

    // At DONE every atomic has executed (they precede the DONE SEND): each word exactly once per atomic.
    void verify_atomic_area() {
        for (std::uint32_t i = 0; i < atomic_words + 2; ++i)
            if (_atomic_area[i] != _atomic_model[i]) {
                if (_atomic_last[i] == 0)
                    fail(_peer, "atomic word %u (%s): expected its initial 0x%016llx, got 0x%016llx", i,
                         i == 0 || i > atomic_words ? "a guard no atomic targets" : "no atomic targeted it",
                         static_cast<unsigned long long>(_atomic_model[i]),
                         static_cast<unsigned long long>(_atomic_area[i]));
                fail(_peer,
                     "atomic word %u after its last atomic (seq %llu): expected 0x%016llx, got 0x%016llx "
                     "(an atomic executed twice, lost, or out of order)",
                     i, static_cast<unsigned long long>(_atomic_last[i] - 1),
                     static_cast<unsigned long long>(_atomic_model[i]),
                     static_cast<unsigned long long>(_atomic_area[i]));
            }
    }

    void verify_write(const message_plan& m, const write_entry& e) {
        if (e.offset > _region.size() || e.length > _region.size() - e.offset)
            fail(_peer, "seq %llu: CHECK names region [%llu, +%u) outside the %zu-byte region",
                 static_cast<unsigned long long>(m.seq), static_cast<unsigned long long>(e.offset), e.length,
                 _region.size());
        if (m.op == op_kind::write_imm) {
            if (_immediates.empty() || _immediates.front() != m.seq)
                fail(_peer, "seq %llu (write_imm): data checked but its receive completion never came",
                     static_cast<unsigned long long>(m.seq));
            _immediates.pop_front();
        }
        std::uint8_t* p = _region.data() + e.offset;
        std::uint8_t want = 0;
        if (auto bad = payload_mismatch(p, e.length, payload_key(_run.seed, m.seq), 0, &want))
            fail(_peer,
                 "seq %llu (%s, %u bytes at region offset %llu): byte at offset %zu: expected 0x%02x, got 0x%02x",
                 static_cast<unsigned long long>(m.seq), info(m.op).name, m.size,
                 static_cast<unsigned long long>(e.offset), *bad, want, p[*bad]);
        std::memset(p, region_canary, e.length); // a later write that does not land shows as canary
    }

    bool maybe_send_credit() {
        if (!(_credit_wanted || (_finishing && !_finished)) || _sends_outstanding >= server_send_depth) return false;
        const std::uint64_t wr_id = _sends_posted++;
        std::uint8_t* slot = _credits.data() + (wr_id % server_send_depth) * credit_slot;
        encode(credit_message{.type = _finishing ? credit_type::final : credit_type::credit,
                              .receives_reposted = _receives_posted - _depth,
                              .verified_through = _next_seq,
                              .messages = _next_seq,
                              .bytes = _bytes},
               slot);
        ibv_sge sge{reinterpret_cast<std::uintptr_t>(slot), static_cast<std::uint32_t>(credit_message::wire_size),
                    _credits_mr->lkey};
        ibv_send_wr wr{};
        wr.wr_id = wr_id;
        wr.opcode = IBV_WR_SEND;
        wr.sg_list = &sge;
        wr.num_sge = 1;
        wr.send_flags = IBV_SEND_SIGNALED;
        ibv_send_wr* bad = nullptr;
        if (const int e = ibv_post_send(_v.qp, &wr, &bad)) fail(_peer, "ibv_post_send (credit): %s", std::strerror(e));
        ++_sends_outstanding;
        _credited = _receives_posted - _depth;
        _credit_wanted = false;
        if (_finishing) _finished = true;
        return true;
    }

    verbs_context& _v;
    const options& _o;
    peer_link& _peer;
    run_parameters _run;
    std::vector<op_kind> _ops;
    std::uint32_t _depth = 0;
    receive_layout _layout{};
    std::vector<std::uint8_t> _receive, _region, _credits, _read_source;
    std::vector<std::uint64_t> _atomic_area; // the NIC's, registered
    std::vector<std::uint64_t> _atomic_model = std::vector<std::uint64_t>(atomic_words + 2);
    std::vector<std::uint64_t> _atomic_last =
        std::vector<std::uint64_t>(atomic_words + 2); // seq + 1 of the last atomic
    ibv_mr *_receive_mr = nullptr, *_region_mr = nullptr, *_credits_mr = nullptr, *_read_mr = nullptr,
           *_atomic_mr = nullptr;
    std::uint64_t _receives_posted = 0, _receives_completed = 0, _credited = 0;
    std::uint64_t _sends_posted = 0, _sends_completed = 0, _sends_outstanding = 0;
    std::uint64_t _next_seq = 0, _bytes = 0, _immediate_cursor = 0;
    std::deque<std::uint64_t> _immediates; // write_imm seqs received, not yet named by a CHECK
    bool _credit_wanted = false, _finishing = false, _finished = false;
};
} // namespace

int serve(const options& o) {
    peer_link peer("server");
    verbs_context v;
    open_device(v, o, peer);
    peer.accept_client(o.port);
    const client_hello c = receive_client_hello(peer);
    if (c.run.ops_mask == 0 || enabled_ops(c.run.ops_mask).empty() || (c.run.ops_mask >> op_count))
        fail(peer, "the client asked for opcodes 0x%x", c.run.ops_mask);
    server s(v, o, peer, c);
    connect_queue_pair(v, o, c.run.mtu, c.qpn, c.psn, c.lid, c.gid, peer);
    send_hello(peer, s.hello()); // every receive is posted: the client may send
    s.run();
    peer.final_barrier();
    return 0;
}

} // namespace rocefab::tools::integrity
