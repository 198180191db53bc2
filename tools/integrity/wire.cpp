// rdma-integrity's messages in their big-endian wire form: see wire.hpp.
#include "wire.hpp"

namespace rocefab::tools::integrity {

void encode(const client_hello& h, std::uint8_t out[client_hello::wire_size]) {
    writer w{out};
    w.u32(hello_magic);
    w.u64(h.run.seed);
    w.u64(h.run.messages);
    w.u32(h.run.max_size);
    w.u32(h.run.mtu);
    w.u32(h.run.ops_mask);
    w.u32(h.qpn);
    w.u32(h.psn);
    w.u32(h.lid);
    w.bytes(h.gid, 16);
}

std::optional<client_hello> decode_client_hello(const std::uint8_t in[client_hello::wire_size]) {
    reader r{in};
    if (r.u32() != hello_magic) return std::nullopt;
    client_hello c{};
    c.run.seed = r.u64();
    c.run.messages = r.u64();
    c.run.max_size = r.u32();
    c.run.mtu = r.u32();
    c.run.ops_mask = r.u32();
    c.qpn = r.u32();
    c.psn = r.u32();
    c.lid = r.u32();
    r.bytes(c.gid, 16);
    return c;
}

void encode(const server_hello& h, std::uint8_t out[server_hello::wire_size]) {
    writer w{out};
    w.u32(hello_magic);
    w.u32(h.qpn);
    w.u32(h.psn);
    w.u32(h.lid);
    w.bytes(h.gid, 16);
    w.u64(h.region_address);
    w.u64(h.region_size);
    w.u32(h.rkey);
    w.u32(h.receive_depth);
    w.u64(h.read_address);
    w.u64(h.atomic_address);
    w.u32(h.read_rkey);
    w.u32(h.atomic_rkey);
}

std::optional<server_hello> decode_server_hello(const std::uint8_t in[server_hello::wire_size]) {
    reader r{in};
    if (r.u32() != hello_magic) return std::nullopt;
    server_hello s{};
    s.qpn = r.u32();
    s.psn = r.u32();
    s.lid = r.u32();
    r.bytes(s.gid, 16);
    s.region_address = r.u64();
    s.region_size = r.u64();
    s.rkey = r.u32();
    s.receive_depth = r.u32();
    s.read_address = r.u64();
    s.atomic_address = r.u64();
    s.read_rkey = r.u32();
    s.atomic_rkey = r.u32();
    return s;
}

std::size_t encode_control(std::uint8_t* out, control_type type, bool ack_request, std::uint64_t messages,
                           std::uint64_t bytes, const std::vector<write_entry>& entries) {
    writer w{out};
    w.u32(check_magic);
    w.u32(static_cast<std::uint32_t>(type));
    w.u32(ack_request ? flag_ack_request : 0);
    w.u32(static_cast<std::uint32_t>(entries.size()));
    w.u64(messages);
    w.u64(bytes);
    for (const write_entry& e : entries) {
        w.u64(e.seq);
        w.u64(e.offset);
        w.u32(e.length);
        w.u32(e.op);
    }
    return static_cast<std::size_t>(w.p - out);
}

control_header decode_control_header(const std::uint8_t* message) {
    reader r{message};
    control_header h{};
    h.magic = r.u32();
    h.type = r.u32();
    h.flags = r.u32();
    h.count = r.u32();
    h.messages = r.u64();
    h.bytes = r.u64();
    return h;
}

write_entry decode_write_entry(const std::uint8_t* message, std::uint32_t index) {
    reader r{message + control_header_size + index * write_entry_size};
    write_entry e{};
    e.seq = r.u64();
    e.offset = r.u64();
    e.length = r.u32();
    e.op = r.u32();
    return e;
}

void encode(const credit_message& m, std::uint8_t out[credit_message::wire_size]) {
    writer w{out};
    w.u32(credit_magic);
    w.u32(static_cast<std::uint32_t>(m.type));
    w.u64(m.receives_reposted);
    w.u64(m.verified_through);
    w.u64(m.messages);
    w.u64(m.bytes);
}

std::optional<credit_message> decode_credit(const std::uint8_t in[credit_message::wire_size]) {
    reader r{in};
    if (r.u32() != credit_magic) return std::nullopt;
    credit_message m{};
    m.type = static_cast<credit_type>(r.u32());
    m.receives_reposted = r.u64();
    m.verified_through = r.u64();
    m.messages = r.u64();
    m.bytes = r.u64();
    return m;
}

} // namespace rocefab::tools::integrity
