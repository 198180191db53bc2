// rdma-integrity's schedule: what message `seq` is (its opcode, its size, its payload, and for a
// READ or an atomic where it reads or which word it changes), a pure function of the run's
// parameters and `seq`. The client draws what it sends from it; the server, given the same
// parameters in the client's hello, regenerates it and checks every byte, length, immediate and
// the order against it.
#pragma once

#include <infiniband/verbs.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

namespace rocefab::tools::integrity {

// ---------------------------------------------------------------------------------------------
// Operations: one table.

enum class op_kind : std::uint8_t { send, send_imm, write, write_imm, read, cmp_swap, fetch_add };

// Which area of the server's memory an operation addresses; every operation with a target is
// named in a CHECK message, which is how the server accounts for it in sequence order.
enum class target : std::uint8_t { none, write_area, read_area, atomic_area };

struct op_info {
    const char* name;
    ibv_wr_opcode wr_opcode;
    ibv_wc_opcode sender_completion;
    target area;
    bool consumes_receive;  // takes one receive WQE at the server
    bool carries_immediate; // immediate = sequence number
    bool carries_payload;   // the client sends the payload (else the NIC writes the client's buffer)
    bool may_inline;
};

constexpr op_info op_table[] = {
    {"send", IBV_WR_SEND, IBV_WC_SEND, target::none, true, false, true, true},
    {"send_imm", IBV_WR_SEND_WITH_IMM, IBV_WC_SEND, target::none, true, true, true, true},
    {"write", IBV_WR_RDMA_WRITE, IBV_WC_RDMA_WRITE, target::write_area, false, false, true, true},
    {"write_imm", IBV_WR_RDMA_WRITE_WITH_IMM, IBV_WC_RDMA_WRITE, target::write_area, true, true, true, true},
    {"read", IBV_WR_RDMA_READ, IBV_WC_RDMA_READ, target::read_area, false, false, false, false},
    {"cmp_swap", IBV_WR_ATOMIC_CMP_AND_SWP, IBV_WC_COMP_SWAP, target::atomic_area, false, false, false, false},
    {"fetch_add", IBV_WR_ATOMIC_FETCH_AND_ADD, IBV_WC_FETCH_ADD, target::atomic_area, false, false, false, false},
};
constexpr const char* all_ops = "send,send_imm,write,write_imm,read,cmp_swap,fetch_add";
constexpr unsigned op_count = sizeof op_table / sizeof op_table[0];

inline const op_info& info(op_kind op) { return op_table[static_cast<unsigned>(op)]; }

// The operations a mask (bit per op_kind) enables, in table order.
std::vector<op_kind> enabled_ops(std::uint32_t mask);

// ---------------------------------------------------------------------------------------------
// Deterministic randomness and payloads.

constexpr std::uint64_t golden = 0x9E3779B97F4A7C15ull;

constexpr std::uint64_t splitmix64(std::uint64_t x) {
    x += golden;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

struct rng {
    std::uint64_t state;
    std::uint64_t next() { return splitmix64(state += golden); }
    std::uint32_t below(std::uint32_t n) { return n ? static_cast<std::uint32_t>(next() % n) : 0; }
};

inline std::uint64_t payload_key(std::uint64_t seed, std::uint64_t seq) {
    return splitmix64(seed ^ splitmix64(seq + 1));
}

// Byte i of a message is byte (i % 8) (little-endian) of splitmix64(key + (i / 8) * golden).
inline std::uint64_t payload_word(std::uint64_t key, std::uint64_t word) { return splitmix64(key + word * golden); }

void fill_payload(std::uint8_t* dst, std::size_t length, std::uint64_t key, std::uint64_t offset);

// The first offset (relative to `offset`) whose byte differs from the payload, or nullopt.
std::optional<std::size_t> payload_mismatch(const std::uint8_t* p, std::size_t length, std::uint64_t key,
                                            std::uint64_t offset, std::uint8_t* expected_byte);

// ---------------------------------------------------------------------------------------------
// The schedule: what message `seq` is. Both sides compute it from the same parameters.

struct run_parameters {
    std::uint64_t seed = 1;
    std::uint64_t messages = 10000;
    std::uint32_t max_size = 65536;
    std::uint32_t mtu = 1024;
    std::uint32_t ops_mask = 0; // bit per op_kind
};

struct message_plan {
    std::uint64_t seq;
    op_kind op;
    std::uint32_t size;             // an atomic's is 8
    std::uint64_t read_offset = 0;  // read: where in the read area
    std::uint32_t atomic_word = 0;  // atomics: which word of the atomic area
    bool compare_hits = false;      // cmp_swap: compare with the current value, or with a different one
    std::uint64_t operand = 0;      // cmp_swap: the swap value; fetch_add: the addend
    std::uint64_t compare_flip = 0; // cmp_swap that misses: compare = current ^ compare_flip (non-zero)
    rng r; // continues after the above: the sender draws its own choices (SGEs, inline, signal) from it
};

// The read area holds the payload of a key no message has; a READ of `size` bytes at `offset`
// must return bytes [offset, offset + size) of it, so a READ from the wrong place shows.
inline std::uint64_t read_area_size(const run_parameters& p) { return std::uint64_t(p.max_size) + 4096; }
inline std::uint64_t read_area_key(std::uint64_t seed) { return splitmix64(seed ^ 0x52454144'41524541ull); }

// The atomic area: words 1..atomic_words are targets; words 0 and atomic_words + 1 are guards
// that no atomic may change.
constexpr std::uint32_t atomic_words = 64;
inline std::uint64_t initial_atomic_word(std::uint64_t seed, std::uint32_t word) {
    return splitmix64(seed * golden ^ (0x41544F4D00000000ull + word));
}

// What an atomic sends and what it must do to a word holding `current`.
struct atomic_step {
    std::uint64_t compare_add, swap; // the work request's operands
    std::uint64_t after;             // the word's value afterwards; the original returned is `current`
};

atomic_step step_of(const message_plan& m, std::uint64_t current);

// Message `seq` of the run; `ops` is enabled_ops(p.ops_mask), computed once by the caller.
message_plan plan_of(const run_parameters& p, const std::vector<op_kind>& ops, std::uint64_t seq);

} // namespace rocefab::tools::integrity
