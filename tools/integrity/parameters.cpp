// rdma-integrity's command line: see parameters.hpp. Errors are one line on stderr and exit 2.
#include "parameters.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

namespace rocefab::tools::integrity {

namespace {

[[noreturn]] void usage(int status) {
    std::fprintf(status ? stderr : stdout,
                 "usage: rdma-integrity --server [OPTIONS]\n"
                 "       rdma-integrity [OPTIONS] CONNECT_HOST\n"
                 "  -d DEV            RDMA device (default: the first)\n"
                 "  -g GID_INDEX      local GID index for the RoCE GRH (default 0)\n"
                 "  -p TCP_PORT       TCP port for the connection set-up (default 18517)\n"
                 "  -e                sleep on completion events instead of busy polling\n"
                 "  --timeout SECONDS give up after this long without progress (default 30)\n"
                 "client only (the server takes them from the client):\n"
                 "  -n MESSAGES       data messages to send (default 10000)\n"
                 "  --seed S          seed of the message sequence (default 1)\n"
                 "  --mtu 1024|4096   path MTU (default 1024)\n"
                 "  --max-size BYTES  largest message (default 65536)\n"
                 "  --ops LIST        comma-separated opcodes: send,send_imm,write,write_imm,read,cmp_swap,\n"
                 "                    fetch_add (default all)\n"
                 "  --inject-corruption SEQ  flip the first byte of the first non-empty message from SEQ on\n"
                 "                    (checks that the server catches it)\n");
    std::exit(status);
}

std::uint64_t number(const char* option, const char* text, std::uint64_t low, std::uint64_t high) {
    char* end = nullptr;
    errno = 0;
    const unsigned long long v = std::strtoull(text, &end, 0);
    if (errno || !end || *end || v < low || v > high || *text == '-') {
        std::fprintf(stderr, "rdma-integrity: %s: '%s' is not a number in %llu..%llu\n", option, text,
                     static_cast<unsigned long long>(low), static_cast<unsigned long long>(high));
        std::exit(2);
    }
    return v;
}

std::uint32_t parse_ops(const std::string& list) {
    std::uint32_t mask = 0;
    std::size_t start = 0;
    while (start <= list.size()) {
        const std::size_t comma = std::min(list.find(',', start), list.size());
        const std::string name = list.substr(start, comma - start);
        unsigned i = 0;
        while (i < op_count && name != op_table[i].name) ++i;
        if (i == op_count) {
            std::fprintf(stderr, "rdma-integrity: --ops: unknown opcode '%s' (valid: %s)\n", name.c_str(), all_ops);
            std::exit(2);
        }
        mask |= 1u << i;
        start = comma + 1;
    }
    return mask;
}

} // namespace

options parse(int argc, char** argv) {
    options o;
    o.run.ops_mask = parse_ops(all_ops);
    for (int i = 1; i < argc; ++i) {
        const std::string_view a = argv[i];
        auto value = [&]() -> const char* {
            if (i + 1 >= argc) {
                std::fprintf(stderr, "rdma-integrity: %s needs a value\n", argv[i]);
                std::exit(2);
            }
            return argv[++i];
        };
        if (a == "--server")
            o.server = true;
        else if (a == "-h" || a == "--help")
            usage(0);
        else if (a == "-e" || a == "--events")
            o.events = true;
        else if (a == "-d" || a == "--ib-dev")
            o.device = value();
        else if (a == "-g" || a == "--gid-idx")
            o.gid_index = static_cast<int>(number("-g", value(), 0, 255));
        else if (a == "-p" || a == "--port")
            o.port = static_cast<std::uint16_t>(number("-p", value(), 1, 65535));
        else if (a == "-n" || a == "--messages")
            o.run.messages = number("-n", value(), 1, 0x7fffffff);
        else if (a == "--seed")
            o.run.seed = number("--seed", value(), 0, UINT64_MAX);
        else if (a == "--inject-corruption")
            o.corrupt_from = number("--inject-corruption", value(), 0, UINT64_MAX);
        else if (a == "--timeout")
            o.stall_seconds = static_cast<unsigned>(number("--timeout", value(), 1, 86400));
        else if (a == "--mtu") {
            const char* v = value();
            o.run.mtu = static_cast<std::uint32_t>(number("--mtu", v, 256, 4096));
            if (o.run.mtu != 1024 && o.run.mtu != 4096) {
                std::fprintf(stderr, "rdma-integrity: --mtu: %s (valid: 1024, 4096)\n", v);
                std::exit(2);
            }
        } else if (a == "--max-size")
            o.run.max_size = static_cast<std::uint32_t>(number("--max-size", value(), 1, 1u << 30));
        else if (a == "--ops")
            o.run.ops_mask = parse_ops(value());
        else if (!a.empty() && a[0] == '-') {
            std::fprintf(stderr, "rdma-integrity: unknown option %s\n", argv[i]);
            usage(2);
        } else if (o.host.empty())
            o.host = argv[i];
        else
            usage(2);
    }
    if (o.server == !o.host.empty()) usage(2);
    return o;
}

} // namespace rocefab::tools::integrity
