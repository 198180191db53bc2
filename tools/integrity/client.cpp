// rdma-integrity's client: it posts the schedule's messages (SENDs, WRITEs, READs and atomics,
// split over scatter/gather entries, some inline, some unsignalled, up to 16 work requests a post)
// as fast as the server's credits, its send queue and its memory allow. After each batch of WRITEs,
// READs and atomics it sends a CHECK naming them, so that the server can verify them in sequence
// order. It checks every byte a READ returns and that the gaps between its scatter entries stay
// untouched; being the only writer of the atomic words, it predicts the original value each atomic
// returns and checks it. Its completions must come in order, with the opcode and byte_len posted.
#include "client.hpp"

#include "byte_ring.hpp"
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
#include <optional>
#include <vector>

namespace rocefab::tools::integrity {

namespace {

constexpr std::uint32_t client_send_depth = 128;
constexpr unsigned max_chain = 16;      // work requests posted with one ibv_post_send
constexpr std::size_t sge_gap = 64;     // between the pieces of a gathered message
constexpr std::uint8_t scribble = 0xEE; // overwrites inline sources after posting, and gaps

class client {
public:
    client(verbs_context& v, const options& o, peer_link& peer)
        : _v(v), _o(o), _peer(peer), _run(o.run), _ops(enabled_ops(o.run.ops_mask)) {
        _send_depth = std::min<std::uint32_t>(client_send_depth, static_cast<std::uint32_t>(v.device.max_qp_wr));
        create_queue_pair(v, _send_depth, client_receive_depth, 6, 1, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE,
                          _peer);
        const std::size_t worst = _run.max_size + 8 * sge_gap + max_control_size;
        _local_size = std::max<std::size_t>(8 * worst, 1u << 20);
        _local.assign(_local_size, scribble);
        _local_mr = register_memory(v, _local, IBV_ACCESS_LOCAL_WRITE, _peer);
        _local_ring.emplace(_local_size);
        _receive.assign(client_receive_depth * credit_slot, 0);
        _receive_mr = register_memory(v, _receive, IBV_ACCESS_LOCAL_WRITE, _peer);
        for (std::uint32_t i = 0; i < client_receive_depth; ++i) post_receive();
    }

    client_hello hello() const {
        client_hello h{};
        h.run = _run;
        h.qpn = _v.qp->qp_num;
        h.psn = _v.psn;
        h.lid = _v.port.lid;
        std::memcpy(h.gid, _v.gid.raw, 16);
        return h;
    }

    void connect(const server_hello& s) {
        _remote_address = s.region_address;
        _rkey = s.rkey;
        _server_depth = s.receive_depth;
        _region_ring.emplace(s.region_size);
        _read_address = s.read_address;
        _read_rkey = s.read_rkey;
        _atomic_address = s.atomic_address;
        _atomic_rkey = s.atomic_rkey;
        for (std::uint32_t i = 0; i < atomic_words + 2; ++i) _atomic_value[i] = initial_atomic_word(_run.seed, i);
        if (_ops_use(target::atomic_area) && _v.device.atomic_cap == IBV_ATOMIC_NONE)
            fail(_peer, "the device does not support atomics (atomic_cap IBV_ATOMIC_NONE): leave cmp_swap and "
                        "fetch_add out of --ops");
    }

    void run() {
        ibv_wc wc[32];
        watchdog dog;
        while (!(_final_received && _signalled.empty())) {
            const int n = poll_completions(_v, wc, 32, _peer);
            for (int i = 0; i < n; ++i) handle(wc[i]);
            const bool posted = post_some();
            if (n > 0 || posted) {
                dog.progress();
                continue;
            }
            if (dog.idle_and_expired(_o.stall_seconds, _v.channel, _peer))
                fail(_peer,
                     "stalled for %u s at seq %llu of %llu: %lld receive credits, %zu of %zu region bytes in use, "
                     "%llu work requests outstanding, ack %s",
                     _o.stall_seconds, static_cast<unsigned long long>(_next_seq),
                     static_cast<unsigned long long>(_run.messages), static_cast<long long>(credits()),
                     _region_ring->used(), _region_ring->size(), static_cast<unsigned long long>(outstanding()),
                     _ack_pending ? "requested" : "not requested");
            wait_for_completion(_v, _peer);
        }
        std::printf("rdma-integrity: %llu messages, %llu bytes, 0 errors\n",
                    static_cast<unsigned long long>(_run.messages), static_cast<unsigned long long>(_bytes));
        std::fflush(stdout);
    }

private:
    std::int64_t credits() const {
        return static_cast<std::int64_t>(_server_depth) - static_cast<std::int64_t>(_receives_used - _server_reposted);
    }
    std::uint64_t outstanding() const { return _wrs_posted - _wrs_completed; }

    void post_receive() {
        const std::uint64_t wr_id = _receives_posted++;
        ibv_sge sge{reinterpret_cast<std::uintptr_t>(_receive.data() + (wr_id % client_receive_depth) * credit_slot),
                    static_cast<std::uint32_t>(credit_slot), _receive_mr->lkey};
        ibv_recv_wr wr{};
        wr.wr_id = wr_id;
        wr.sg_list = &sge;
        wr.num_sge = 1;
        ibv_recv_wr* bad = nullptr;
        if (const int e = ibv_post_recv(_v.qp, &wr, &bad)) fail(_peer, "ibv_post_recv: %s", std::strerror(e));
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
            if (wc.opcode != IBV_WC_RECV || (wc.wc_flags & IBV_WC_WITH_IMM) || wc.byte_len != credit_message::wire_size)
                fail(_peer, "credit message: opcode %s, %u bytes, flags 0x%x; expected RECV of %zu bytes",
                     wc_opcode_name(wc.opcode), wc.byte_len, wc.wc_flags, credit_message::wire_size);
            const std::optional<credit_message> credit =
                decode_credit(_receive.data() + (wc.wr_id % client_receive_depth) * credit_slot);
            if (!credit) fail(_peer, "credit message with a bad magic");
            const std::uint64_t reposted = credit->receives_reposted, verified = credit->verified_through,
                                messages = credit->messages, bytes = credit->bytes;
            if (reposted < _server_reposted || reposted > _receives_used || verified > _next_seq)
                fail(_peer,
                     "credit message out of range: %llu receives reposted (%llu used), verified through %llu (%llu "
                     "sent)",
                     static_cast<unsigned long long>(reposted), static_cast<unsigned long long>(_receives_used),
                     static_cast<unsigned long long>(verified), static_cast<unsigned long long>(_next_seq));
            _server_reposted = reposted;
            _region_ring->release_below(verified);
            _ack_pending = false;
            if (credit->type == credit_type::final) {
                if (!_done_sent) fail(_peer, "final credit before DONE");
                if (messages != _run.messages || bytes != _bytes)
                    fail(_peer, "server verified %llu messages and %llu bytes; client sent %llu and %llu",
                         static_cast<unsigned long long>(messages), static_cast<unsigned long long>(bytes),
                         static_cast<unsigned long long>(_run.messages), static_cast<unsigned long long>(_bytes));
                _final_received = true;
            }
            post_receive();
            return;
        }
        if (_signalled.empty())
            fail(_peer, "send completion wr_id %llu with none signalled", static_cast<unsigned long long>(wc.wr_id));
        const signalled expected = _signalled.front();
        const std::uint64_t wr_id = expected.wr_id;
        if (wc.wr_id != wr_id)
            fail(_peer, "send completion out of order: wr_id %llu, expected %llu",
                 static_cast<unsigned long long>(wc.wr_id), static_cast<unsigned long long>(wr_id));
        if (wc.opcode != expected.opcode)
            fail(_peer, "send completion wr_id %llu: opcode %s, expected %s", static_cast<unsigned long long>(wc.wr_id),
                 wc_opcode_name(wc.opcode), wc_opcode_name(expected.opcode));
        // byte_len is defined for READ and atomic completions only: the bytes placed locally.
        if (expected.byte_len && wc.byte_len != *expected.byte_len)
            fail(_peer, "seq %llu (%s, wr_id %llu): completion byte_len %u, expected %u",
                 static_cast<unsigned long long>(expected.seq), wc_opcode_name(wc.opcode),
                 static_cast<unsigned long long>(wr_id), wc.byte_len, *expected.byte_len);
        _signalled.pop_front();
        _wrs_completed = wr_id + 1; // completes every unsignalled request before it
        // ... and so has placed their READ data and atomic results: check them before the memory is reused.
        while (!_results.empty() && _results.front().wr_id <= wr_id) {
            verify_result(_results.front());
            _results.pop_front();
        }
        _local_ring->release_through(wr_id);
    }

    // What a READ or an atomic placed in the client's memory.
    struct pending_result {
        std::uint64_t wr_id, seq;
        op_kind op;
        std::uint64_t read_offset;       // read: where in the read area
        std::uint64_t expected_original; // atomics
        std::uint8_t* pieces[8];         // each followed by sge_gap bytes of scribble
        std::uint32_t lengths[8];
        unsigned n;
    };

    void verify_result(const pending_result& r) {
        if (r.op == op_kind::read) {
            std::uint64_t offset = r.read_offset;
            for (unsigned j = 0; j < r.n; ++j) {
                std::uint8_t want = 0;
                if (auto bad = payload_mismatch(r.pieces[j], r.lengths[j], read_area_key(_run.seed), offset, &want))
                    fail(_peer,
                         "seq %llu (read, %llu bytes at read offset %llu): byte at offset %llu: expected 0x%02x, got "
                         "0x%02x",
                         static_cast<unsigned long long>(r.seq), static_cast<unsigned long long>(read_length(r)),
                         static_cast<unsigned long long>(r.read_offset),
                         static_cast<unsigned long long>(offset - r.read_offset + *bad), want, r.pieces[j][*bad]);
                offset += r.lengths[j];
            }
        } else {
            std::uint64_t got;
            std::memcpy(&got, r.pieces[0], 8);
            if (got != r.expected_original)
                fail(_peer, "seq %llu (%s): returned original 0x%016llx, expected 0x%016llx",
                     static_cast<unsigned long long>(r.seq), info(r.op).name, static_cast<unsigned long long>(got),
                     static_cast<unsigned long long>(r.expected_original));
        }
        for (unsigned j = 0; j < r.n; ++j)
            for (std::size_t i = 0; i < sge_gap; ++i)
                if (r.pieces[j][r.lengths[j] + i] != scribble)
                    fail(_peer, "seq %llu (%s): local buffer written past scatter entry %u at byte %zu (got 0x%02x)",
                         static_cast<unsigned long long>(r.seq), info(r.op).name, j, i, r.pieces[j][r.lengths[j] + i]);
    }

    static std::uint64_t read_length(const pending_result& r) {
        std::uint64_t n = 0;
        for (unsigned j = 0; j < r.n; ++j) n += r.lengths[j];
        return n;
    }

    bool _ops_use(target area) const {
        return std::any_of(_ops.begin(), _ops.end(), [&](op_kind op) { return info(op).area == area; });
    }

    // --- building a chain of work requests ----------------------------------------------------

    struct chain {
        ibv_send_wr wr[max_chain];
        ibv_sge sge[max_chain][8];
        std::uint8_t* inline_source[max_chain][8];
        std::uint32_t inline_length[max_chain][8];
        unsigned count = 0;
    };

    bool room(unsigned wrs) const {
        return outstanding() + _chain.count + wrs <= _send_depth && _chain.count + wrs <= max_chain;
    }

    // Adds one work request; `pieces` of local memory (already filled) become its SGEs. Returns
    // it, for the atomic operands.
    ibv_send_wr& add(ibv_wr_opcode opcode, std::uint32_t imm, bool inline_data, bool signal, ibv_wc_opcode completion,
                     std::uint64_t remote_address, std::uint32_t rkey, std::uint8_t* const* pieces,
                     const std::uint32_t* lengths, unsigned n, std::size_t bytes,
                     std::optional<std::uint32_t> byte_len = std::nullopt, std::uint64_t seq = 0) {
        const unsigned i = _chain.count++;
        const std::uint64_t wr_id = _wrs_posted + i;
        _since_signal += 1;
        _bytes_since_signal += bytes;
        if (_since_signal >= _send_depth / 4 || _bytes_since_signal >= _local_size / 4) signal = true;
        if (signal) {
            _since_signal = 0;
            _bytes_since_signal = 0;
            _signalled.push_back({wr_id, completion, byte_len, seq});
        }
        ibv_send_wr& wr = _chain.wr[i];
        wr = {};
        wr.wr_id = wr_id;
        wr.opcode = opcode;
        wr.imm_data = htonl(imm);
        wr.send_flags = (signal ? IBV_SEND_SIGNALED : 0) | (inline_data ? IBV_SEND_INLINE : 0);
        wr.sg_list = _chain.sge[i];
        wr.num_sge = static_cast<int>(n);
        wr.wr.rdma.remote_addr = remote_address;
        wr.wr.rdma.rkey = rkey;
        for (unsigned j = 0; j < n; ++j) {
            _chain.sge[i][j] = {reinterpret_cast<std::uintptr_t>(pieces[j]), lengths[j], _local_mr->lkey};
            _chain.inline_source[i][j] = inline_data ? pieces[j] : nullptr;
            _chain.inline_length[i][j] = lengths[j];
        }
        for (unsigned j = n; j < 8; ++j) _chain.inline_source[i][j] = nullptr;
        return wr;
    }

    bool flush_chain() {
        if (_chain.count == 0) return false;
        for (unsigned i = 0; i + 1 < _chain.count; ++i) _chain.wr[i].next = &_chain.wr[i + 1];
        _chain.wr[_chain.count - 1].next = nullptr;
        ibv_send_wr* bad = nullptr;
        if (const int e = ibv_post_send(_v.qp, _chain.wr, &bad))
            fail(_peer,
                 "ibv_post_send of %u work requests failed at wr_id %llu: %s (%llu outstanding, %zu signalled, "
                 "send queue of %u)",
                 _chain.count, bad ? static_cast<unsigned long long>(bad->wr_id) : 0ull, std::strerror(e),
                 static_cast<unsigned long long>(outstanding()), _signalled.size(), _send_depth);
        // Inline data was copied when posting: the source may change now, and must not matter.
        for (unsigned i = 0; i < _chain.count; ++i)
            for (unsigned j = 0; j < 8; ++j)
                if (_chain.inline_source[i][j])
                    std::memset(_chain.inline_source[i][j], scribble, _chain.inline_length[i][j]);
        _wrs_posted += _chain.count;
        _chain.count = 0;
        return true;
    }

    // Allocates local memory for `size` bytes of message `m` split into SGEs and fills it with the
    // payload, or for a READ with the scribble byte the data must replace; the gaps between pieces
    // hold the scribble byte. An atomic gets one aligned 8-byte piece. Returns false when out of memory.
    bool stage_payload(message_plan& m, std::uint8_t** pieces, std::uint32_t* lengths, unsigned* n, bool* inline_data,
                       std::size_t* staged) {
        const op_info& op = info(m.op);
        if (op.area == target::atomic_area) {
            *inline_data = false;
            const std::size_t need = 8 + 7 + sge_gap;
            auto at = _local_ring->allocate(need, _wrs_posted + _chain.count);
            if (!at) return false;
            *staged = need;
            std::uint8_t* p = _local.data() + *at;
            std::memset(p, scribble, need);
            pieces[0] = p + (-reinterpret_cast<std::uintptr_t>(p) & 7); // IBA 9.4.5: naturally aligned
            lengths[0] = 8;
            *n = 1;
            return true;
        }
        *inline_data = op.may_inline && m.size <= _v.max_inline && m.r.below(2) == 0;
        const std::uint32_t max_sge = op.carries_payload ? _v.max_send_sge : _v.max_read_sge;
        unsigned count = m.size == 0 ? 0 : 1 + m.r.below(max_sge);
        count = std::min<unsigned>(count, m.size);
        std::uint32_t cuts[8];
        for (unsigned j = 0; j + 1 < count; ++j) cuts[j] = 1 + m.r.below(m.size - 1);
        std::sort(cuts, cuts + (count ? count - 1 : 0));
        const std::size_t need = m.size + count * sge_gap;
        auto at = _local_ring->allocate(need, _wrs_posted + _chain.count);
        if (!at) return false;
        *staged = need;
        std::uint8_t* p = _local.data() + *at;
        std::uint32_t start = 0;
        unsigned used = 0;
        for (unsigned j = 0; j < count; ++j) {
            const std::uint32_t end = j + 1 < count ? cuts[j] : m.size;
            if (end == start) continue; // equal cuts: fewer, longer pieces
            if (op.carries_payload)
                fill_payload(p, end - start, payload_key(_run.seed, m.seq), start);
            else
                std::memset(p, scribble, end - start);
            pieces[used] = p;
            lengths[used] = end - start;
            ++used;
            std::memset(p + (end - start), scribble, sge_gap);
            p += (end - start) + sge_gap;
            start = end;
        }
        *n = used;
        if (_o.corrupt_from && m.seq >= *_o.corrupt_from && used > 0 && !_corrupted && op.carries_payload) {
            pieces[0][0] ^= 0xFF; // after the payload is made: the server must name seq and offset 0
            _corrupted = true;
        }
        return true;
    }

    // Queues the CHECK (or DONE) control message: one work request, one credit, a little memory.
    // Returns false when one of them is lacking.
    bool add_control(control_type type, bool force_ack = false) {
        if (!room(1) || credits() < 1) return false;
        const auto at = _local_ring->allocate(max_control_size, _wrs_posted + _chain.count);
        if (!at) return false;
        std::uint8_t* p = _local.data() + *at;
        const bool ack = !_ack_pending && (force_ack || type == control_type::done ||
                                           _region_ring->occupied() * 2 > _region_ring->size() ||
                                           credits() * 2 < static_cast<std::int64_t>(_server_depth));
        const auto length = static_cast<std::uint32_t>(encode_control(p, type, ack, _next_seq, _bytes, _batch));
        const bool inline_data = length <= _v.max_inline && (_controls_sent & 1);
        std::uint8_t* pieces[1] = {p};
        add(IBV_WR_SEND_WITH_IMM, control_immediate | static_cast<std::uint32_t>(_controls_sent & 0xffffff),
            inline_data, type == control_type::done, IBV_WC_SEND, 0, 0, pieces, &length, 1, length);
        ++_controls_sent;
        ++_receives_used;
        if (ack) _ack_pending = true;
        _batch.clear();
        return true;
    }

    // Posts as much as credits, queue space, local memory and the remote region allow.
    bool post_some() {
        bool posted = false;
        for (;;) {
            if (_next_seq == _run.messages) {
                if (!_batch.empty()) {
                    if (!add_control(control_type::check)) break;
                    continue;
                }
                if (!_done_sent && add_control(control_type::done)) _done_sent = true;
                break;
            }
            message_plan m = plan_of(_run, _ops, _next_seq);
            const op_info& op = info(m.op);
            // A SEND follows the CHECK of the WRITEs, READs and atomics before it; a CHECK names at most 8.
            const bool named = op.area != target::none;
            if (!_batch.empty() && (!named || _batch.size() == max_writes_per_check)) {
                if (!add_control(control_type::check)) break;
                continue;
            }
            // One credit stays in reserve for the CHECK or DONE that must follow.
            if (op.consumes_receive && credits() < 2) break;
            const unsigned after = named ? 2 : 1; // the CHECK needs a slot of its own
            if (!room(after)) break;
            std::optional<std::size_t> remote;
            if (op.area == target::write_area) {
                remote = _region_ring->allocate(m.size, m.seq);
                if (!remote) { // the region is full of unverified writes: ask the server to verify them
                    if (!_batch.empty() || !_ack_pending) add_control(control_type::check, true);
                    break;
                }
            }
            std::uint8_t* pieces[8];
            std::uint32_t lengths[8];
            unsigned n = 0;
            bool inline_data = false;
            std::size_t staged = 0;
            if (!stage_payload(m, pieces, lengths, &n, &inline_data, &staged)) {
                if (remote) _region_ring->undo_last();
                break;
            }
            const bool signal = m.r.below(4) == 0;
            std::uint64_t remote_address = 0, entry_offset = 0;
            std::uint32_t rkey = 0;
            switch (op.area) {
            case target::write_area:
                entry_offset = *remote, remote_address = _remote_address + *remote, rkey = _rkey;
                break;
            case target::read_area:
                entry_offset = m.read_offset, remote_address = _read_address + m.read_offset, rkey = _read_rkey;
                break;
            case target::atomic_area:
                entry_offset = std::uint64_t(m.atomic_word) * 8, remote_address = _atomic_address + entry_offset,
                rkey = _atomic_rkey;
                break;
            case target::none: break;
            }
            const bool places_locally = op.area == target::read_area || op.area == target::atomic_area;
            ibv_send_wr& wr =
                add(op.wr_opcode, op.carries_immediate ? static_cast<std::uint32_t>(m.seq & 0x7fffffff) : 0,
                    inline_data, signal, op.sender_completion, remote_address, rkey, pieces, lengths, n, staged,
                    places_locally ? std::optional<std::uint32_t>(m.size) : std::nullopt, m.seq);
            if (places_locally) {
                pending_result r{wr.wr_id, m.seq, m.op, m.read_offset, 0, {}, {}, n};
                std::copy(pieces, pieces + n, r.pieces);
                std::copy(lengths, lengths + n, r.lengths);
                if (op.area == target::atomic_area) {
                    // The only writer of the word: it holds what the atomics before this one left.
                    std::uint64_t& word = _atomic_value[m.atomic_word];
                    const atomic_step step = step_of(m, word);
                    wr.wr.atomic.remote_addr = remote_address;
                    wr.wr.atomic.compare_add = step.compare_add;
                    wr.wr.atomic.swap = step.swap;
                    wr.wr.atomic.rkey = rkey;
                    r.expected_original = word;
                    word = step.after;
                }
                _results.push_back(r);
            }
            if (op.consumes_receive) ++_receives_used;
            if (op.area != target::none)
                _batch.push_back({m.seq, entry_offset, m.size, static_cast<std::uint32_t>(m.op)});
            _bytes += m.size;
            ++_next_seq;
            if (_chain.count + 2 > max_chain) posted |= flush_chain();
        }
        posted |= flush_chain();
        return posted;
    }

    verbs_context& _v;
    const options& _o;
    peer_link& _peer;
    run_parameters _run;
    std::vector<op_kind> _ops;
    std::uint32_t _send_depth = 0, _server_depth = 0;
    std::size_t _local_size = 0;
    std::vector<std::uint8_t> _local, _receive;
    ibv_mr *_local_mr = nullptr, *_receive_mr = nullptr;
    std::optional<byte_ring> _local_ring, _region_ring;
    std::uint64_t _remote_address = 0;
    std::uint32_t _rkey = 0;
    chain _chain;
    struct signalled {
        std::uint64_t wr_id;
        ibv_wc_opcode opcode;
        std::optional<std::uint32_t> byte_len; // READ and atomics
        std::uint64_t seq;                     // of a data message, for the error message
    };
    std::deque<signalled> _signalled;    // in posting order
    std::deque<pending_result> _results; // READs and atomics posted, in posting order
    std::uint64_t _read_address = 0, _atomic_address = 0;
    std::uint32_t _read_rkey = 0, _atomic_rkey = 0;
    std::uint64_t _atomic_value[atomic_words + 2] = {}; // what each word holds once every atomic posted has run
    std::vector<write_entry> _batch;                    // writes since the last CHECK
    std::uint64_t _wrs_posted = 0, _wrs_completed = 0, _since_signal = 0, _bytes_since_signal = 0;
    std::uint64_t _receives_posted = 0, _receives_completed = 0;
    std::uint64_t _receives_used = 0, _server_reposted = 0, _controls_sent = 0;
    std::uint64_t _next_seq = 0, _bytes = 0;
    bool _ack_pending = false, _done_sent = false, _final_received = false, _corrupted = false;
};
} // namespace

int connect_and_send(const options& o) {
    peer_link peer("client");
    verbs_context v;
    open_device(v, o, peer);
    client c(v, o, peer);
    peer.connect_to_server(o.host.c_str(), o.port);
    send_hello(peer, c.hello());
    const server_hello s = receive_server_hello(peer);
    if (s.receive_depth < 4) fail(peer, "the server offers %u receives", s.receive_depth);
    if (s.region_size < o.run.max_size)
        fail(peer, "the server's region (%llu bytes) is smaller than --max-size",
             static_cast<unsigned long long>(s.region_size));
    c.connect(s);
    connect_queue_pair(v, o, o.run.mtu, s.qpn, s.psn, s.lid, s.gid, peer);
    c.run();
    peer.final_barrier();
    return 0;
}

} // namespace rocefab::tools::integrity
