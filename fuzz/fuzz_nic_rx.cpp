// libFuzzer target: arbitrary frames into nic_emu::nic_node::receive() of a NIC with RC, UC and
// UD QPs in RTS and registered memory (nic_under_test.hpp), then poll() as the driver would, so
// that what gets past the parser reaches the transport engines: responder (SEND, WRITE, READ and
// atomic requests, duplicates, PSN gaps), completer (ACK, NAK, RNR NAK, READ responses, atomic
// ACKs), UC and UD receive, SRQ, CNPs (DCQCN), PFC and the slow receiver's buffer.
//
// Input: records (support/records.hpp). A record's flags may address its frame to one of the QPs
// (the BTH's destination QP) and fix up its lengths, IPv4 header checksum and ICRC
// (support/roce_fixup.hpp): with the seeds' addresses, PSNs and keys, mutations then reach deep
// states instead of stopping at the ICRC check. Flags also let the application reap completions,
// repost receives, post more requests and move the rc QP through SQD, ERR and RESET between frames.
//
// Besides the sanitizers (and the poisoned guards around the registered memory, which make any
// access outside a registered range a report): every frame the NIC sends is a valid RoCE frame
// (ICRC included) or a well-formed PFC frame, the NIC never sends a frame it was given, and once
// the NIC is gone every packet buffer is back in its pool.
#include "dataplane/wire/pfc.hpp"
#include "fuzz/nic_under_test.hpp"
#include "fuzz/support/drive.hpp"
#include "fuzz/support/packets.hpp"
#include "fuzz/support/records.hpp"
#include "fuzz/support/roce_fixup.hpp"

#include <cstdio>
#include <string>
#include <vector>

namespace {

using namespace rocefab;
namespace nut = fuzz::nic_under_test;

class checking_sink final : public frame_sink {
public:
    sim_time transmit(std::uint16_t port, rte_mbuf* frame, sim_time now) override {
        if (port != 0) fuzz::invariant_broken("the NIC sent out of a port it does not have");
        if (fuzz::from_input_pool(frame)) fuzz::invariant_broken("the NIC sent a frame it was given");
        // This checks the bytes as a wire would carry them: the ICRC the NIC left to be written
        // where something observes the frame (dataplane/packet.hpp) is written here, as a
        // capture writes it, and must then be valid like everything else.
        seal_deferred_icrc(frame);
        const std::span<std::uint8_t> bytes = frame_bytes(frame);
        const auto* eth = reinterpret_cast<const wire::ethernet_header*>(bytes.data());
        if (bytes.size() >= sizeof *eth && eth->ether_type.load() == wire::ethertype::mac_control) {
            std::uint8_t enable;
            std::array<std::uint16_t, 8> quanta;
            if (!wire::parse_pfc_frame(bytes, enable, quanta))
                fuzz::invariant_broken("the NIC sent a malformed PFC frame");
        } else {
            wire::parsed_roce parsed;
            if (wire::parse_roce_frame(bytes, parsed) != wire::parse_error::none)
                fuzz::invariant_broken("the NIC sent a frame that is not valid RoCE");
        }
        _busy = std::max(now, _busy) + serialization_time(bytes.size(), 100'000'000'000ull);
        fuzz::free_transmitted(frame);
        return _busy;
    }
    sim_time busy_until(std::uint16_t) const override { return _busy; }

private:
    sim_time _busy = 0;
};

} // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
    (void)fuzz::pools();
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    fuzz::record_reader input({data, size});
    {
        checking_sink sink;
        nut::nic_under_test dut(input.config());
        nic::nic_node& nic = dut.nic();
        nic.attach(&sink, fuzz::pools().node);
        fuzz::node_clock clock;
        clock.advance(nic, microseconds(10)); // the opening requests go out
        std::vector<std::uint8_t> bytes;
        fuzz::frame_record r;
        while (input.next(r)) {
            bytes.assign(r.frame.begin(), r.frame.end());
            const unsigned qp = r.flags & nut::flag::qp_mask;
            fuzz::apply(bytes, {.lengths = (r.flags & nut::flag::fix_lengths) != 0,
                                .dest_qpn = qp >= 1 && qp <= nut::qp_count
                                                ? std::optional(dut.qpn(static_cast<nut::qp_index>(qp - 1)))
                                                : std::nullopt,
                                .seal = (r.flags & nut::flag::seal) != 0});
            for (unsigned copy = 0; copy <= fuzz::repeat_count(r.repeat); ++copy) {
                rte_mbuf* frame = fuzz::input_frame(bytes);
                if (!frame) break;
                nic.receive(0, frame, clock.now());
            }
            clock.settle(nic);
            if (r.flags & nut::flag::replenish) dut.replenish();
            if (r.flags & nut::flag::post_more) dut.post_more();
            if (r.flags & nut::flag::cycle_state) dut.cycle_rc_state(clock.now());
            clock.advance(nic, fuzz::advance_of(r.advance));
        }
        clock.advance(nic, milliseconds(5)); // timers: retransmission, RNR, gaps
        if (fuzz::show_counters()) {
            std::string line;
            nic.counters().for_each([&](const char* name, std::uint64_t value) {
                if (value) line += " " + std::string(name) + "=" + std::to_string(value);
            });
            std::fprintf(stderr, "nic:%s\n", line.c_str());
        }
    } // the NIC frees what it holds
    fuzz::expect_all_returned();
    return 0;
}
