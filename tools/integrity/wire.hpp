// What rdma-integrity's two sides exchange, and its big-endian serialisation: the hellos over
// TCP at set-up, then over the queue pair the client's CHECK and DONE control messages and the
// server's CREDIT messages.
//
// Control messages from the client are SEND WITH IMMEDIATE with the top bit of the immediate set;
// data immediates carry the sequence number (top bit clear).
#pragma once

#include "schedule.hpp"

#include <endian.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <vector>

namespace rocefab::tools::integrity {

struct writer {
    std::uint8_t* p;
    void u32(std::uint32_t v) {
        v = htobe32(v);
        std::memcpy(p, &v, 4);
        p += 4;
    }
    void u64(std::uint64_t v) {
        v = htobe64(v);
        std::memcpy(p, &v, 8);
        p += 8;
    }
    void bytes(const void* b, std::size_t n) {
        std::memcpy(p, b, n);
        p += n;
    }
};

struct reader {
    const std::uint8_t* p;
    std::uint32_t u32() {
        std::uint32_t v;
        std::memcpy(&v, p, 4);
        p += 4;
        return be32toh(v);
    }
    std::uint64_t u64() {
        std::uint64_t v;
        std::memcpy(&v, p, 8);
        p += 8;
        return be64toh(v);
    }
    void bytes(void* b, std::size_t n) {
        std::memcpy(b, p, n);
        p += n;
    }
};

constexpr std::uint32_t hello_magic = 0x52494E31;  // "RIN1"
constexpr std::uint32_t check_magic = 0x43484B31;  // "CHK1"
constexpr std::uint32_t credit_magic = 0x43524431; // "CRD1"
constexpr std::uint32_t control_immediate = 0x80000000u;

// ---------------------------------------------------------------------------------------------
// Set-up, over TCP. Each hello starts with hello_magic; wire_size counts it.

// Client -> server.
struct client_hello {
    run_parameters run;
    std::uint32_t qpn, psn, lid;
    std::uint8_t gid[16];
    static constexpr std::size_t wire_size = 4 + 8 + 8 + 4 + 4 + 4 + 4 + 4 + 4 + 16;
};

// Server -> client.
struct server_hello {
    std::uint32_t qpn, psn, lid;
    std::uint8_t gid[16];
    std::uint64_t region_address, region_size; // the write area
    std::uint32_t rkey, receive_depth;
    std::uint64_t read_address, atomic_address; // read_area_size(run) bytes; atomic_words + 2 words
    std::uint32_t read_rkey, atomic_rkey;
    static constexpr std::size_t wire_size = 4 + 4 + 4 + 4 + 16 + 8 + 8 + 4 + 4 + 8 + 8 + 4 + 4;
};

void encode(const client_hello& h, std::uint8_t out[client_hello::wire_size]);
void encode(const server_hello& h, std::uint8_t out[server_hello::wire_size]);
// nullopt when the bytes do not start with hello_magic: the peer is not rdma-integrity.
std::optional<client_hello> decode_client_hello(const std::uint8_t in[client_hello::wire_size]);
std::optional<server_hello> decode_server_hello(const std::uint8_t in[server_hello::wire_size]);

// ---------------------------------------------------------------------------------------------
// Client -> server over the QP: CHECK names the WRITEs, READs and atomics since the last one;
// DONE ends the run.

enum class control_type : std::uint32_t { check = 1, done = 2 };
constexpr std::uint32_t flag_ack_request = 1;
struct write_entry {
    std::uint64_t seq, offset;
    std::uint32_t length, op;
};
constexpr std::size_t max_writes_per_check = 8;
constexpr std::size_t control_header_size = 4 * 4 + 8 + 8;
constexpr std::size_t write_entry_size = 8 + 8 + 4 + 4;
constexpr std::size_t max_control_size = control_header_size + max_writes_per_check * write_entry_size;

// As received: the server checks each field, so none is trusted here.
struct control_header {
    std::uint32_t magic, type, flags, count;
    std::uint64_t messages, bytes; // sent so far, by the client's count
};

// Writes the message at `out` (max_control_size bytes) and returns its length.
std::size_t encode_control(std::uint8_t* out, control_type type, bool ack_request, std::uint64_t messages,
                           std::uint64_t bytes, const std::vector<write_entry>& entries);
control_header decode_control_header(const std::uint8_t* message);
// Entry `index` of a message whose length has been checked against its count.
write_entry decode_write_entry(const std::uint8_t* message, std::uint32_t index);

// ---------------------------------------------------------------------------------------------
// Server -> client over the QP.

// Each credit message travels in a slot of its own: the server's send buffers, the client's
// receive buffers. The server keeps up to server_send_depth of them in flight; the client posts
// client_receive_depth receives for them.
constexpr std::size_t credit_slot = 64;
constexpr std::uint32_t server_send_depth = 32;
constexpr std::uint32_t client_receive_depth = 32;

enum class credit_type : std::uint32_t { credit = 1, final = 2 };
struct credit_message {
    credit_type type;
    std::uint64_t receives_reposted; // receives the server has consumed and posted again
    std::uint64_t verified_through;  // every seq below this is verified
    std::uint64_t messages, bytes;   // final: what the server saw
    static constexpr std::size_t wire_size = 4 + 4 + 8 + 8 + 8 + 8;
};

void encode(const credit_message& m, std::uint8_t out[credit_message::wire_size]);
// nullopt when the message does not start with credit_magic.
std::optional<credit_message> decode_credit(const std::uint8_t in[credit_message::wire_size]);

} // namespace rocefab::tools::integrity
