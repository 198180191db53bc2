#include "dataplane/packet.hpp"

#include "dataplane/wire/frame_info.hpp"
#include "dataplane/wire/roce_frame.hpp"

namespace rocefab {

std::uint64_t icrc_deferred_flag = 0;

void seal_deferred_icrc(rte_mbuf* m) {
    if (!icrc_deferred(m)) return;
    m->ol_flags &= ~icrc_deferred_flag;
    // Only a NIC marks a frame, and only a whole RoCE frame it built; a switch may have added or
    // removed a VLAN tag since, so where the headers lie is read again. The datagram ends with
    // the ICRC; Ethernet padding may follow it.
    const std::span<std::uint8_t> bytes = frame_bytes(m);
    wire::frame_info info;
    if (wire::parse_headers(bytes, info) != wire::frame_status::ip) return;
    wire::seal_roce_frame(bytes.data(), info.l3_end());
}

} // namespace rocefab
