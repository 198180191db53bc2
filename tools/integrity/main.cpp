// rdma-integrity: a data-integrity test for an RC queue pair, written against plain libibverbs so
// that it runs unchanged on the rocefab fabric and on real RDMA hardware.
//
//   rdma-integrity --server [-d DEV] [-g GID_INDEX] [-p PORT] [-e]
//   rdma-integrity HOST [-d DEV] [-g GID_INDEX] [-p PORT] [-n MESSAGES] [--seed S] [--mtu 1024|4096]
//                       [--max-size BYTES] [--ops send,send_imm,write,write_imm,read,cmp_swap,fetch_add] [-e]
//
// The client sends a seeded pseudo-random sequence of messages; message `seq` has an opcode, a
// size and a payload that are pure functions of (seed, seq), so the server regenerates the whole
// schedule from the parameters the client sends it over TCP and checks every byte, every length,
// every immediate and the order. RDMA WRITEs land in a region of the server's memory; after each
// batch of writes the client sends a CHECK message naming, for each write, its sequence number and
// where it landed, and the server verifies the region (RC ordering puts the writes' data in place
// before the SEND that follows them completes). The server returns CREDIT messages so the client
// never overruns the server's receive queue and knows which parts of the region it may reuse.
//
// RDMA READs read an area of the server's memory that the server filled at set-up from the seed;
// where each READ reads and how much are functions of (seed, seq), and the client checks every
// byte it gets back, and that the gaps between its scatter entries stay untouched. Atomics work
// on 8-byte words of a third area whose initial values are functions of the seed; the client is
// the only writer of those words, so it predicts the original value each atomic returns and
// checks it. CHECK messages name READs and atomics too: the server, which regenerates every
// operand from (seed, seq), replays the atomics on a model in sequence order, checks the READ
// source was left alone, and at DONE compares the words in memory with its model (an atomic
// executed twice, or not at all, shows there).
//
// Only <infiniband/verbs.h>, the C/C++ standard library and POSIX sockets are used.
//
// The files, split as perftest splits each test's main from its parameters, communication and
// resources:
//   parameters      the command line
//   schedule        what message `seq` is: opcode, size, payload, READ and atomic operands
//   wire            what the two sides exchange, and its big-endian serialisation
//   communication   the TCP link to the peer (tools/tcp_rendezvous.hpp): hellos, 'D', 'E', fail()
//   resources       device, PD, CQ, QP, memory registration, waiting for completions
//   server, client  the two sides; byte_ring.hpp holds the client's two rings

#include "client.hpp"
#include "parameters.hpp"
#include "server.hpp"

int main(int argc, char** argv) {
    using namespace rocefab::tools::integrity;
    const options o = parse(argc, argv);
    return o.server ? serve(o) : connect_and_send(o);
}
