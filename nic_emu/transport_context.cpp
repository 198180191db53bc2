// The DMA staging the engines share (transport_context.hpp, dma_batch.hpp).

#include "nic_emu/transport_context.hpp"

#include <algorithm>

namespace rocefab::nic {

bool transport_context::stage_scatter(queue_pair& qp, std::span<const hw::sge> sges, std::uint64_t offset,
                                      const std::uint8_t* data, std::size_t length, ibv_wc_status& status,
                                      const write_origin& origin) {
    if (length == 0) return true;
    // Check every piece first, then stage them: the data lands whole or not at all.
    struct piece {
        address_space* memory;
        std::uint64_t address, length, done;
    };
    std::array<piece, hw::max_sge> pieces;
    std::size_t count = 0;
    std::uint64_t skip = offset, left = length, done = 0;
    for (std::size_t i = 0; i < sges.size() && i < hw::max_sge && left; ++i) {
        const hw::sge& s = sges[i];
        if (skip >= s.length) {
            skip -= s.length;
            continue;
        }
        const std::uint64_t take = std::min<std::uint64_t>(s.length - skip, left);
        const memory_region* mr = port.local_mr(s.lkey, qp.pd, s.address + skip, take, IBV_ACCESS_LOCAL_WRITE);
        // One copy call writes one address space: every MR of a PD belongs to the same program.
        if (!mr || (count && mr->memory != pieces[0].memory)) {
            status = IBV_WC_LOC_PROT_ERR;
            return false;
        }
        pieces[count++] = {mr->memory, s.address + skip, take, done};
        done += take;
        left -= take;
        skip = 0;
    }
    if (left) {
        status = IBV_WC_LOC_LEN_ERR; // longer than the buffers
        return false;
    }
    if (!dma.fits(pieces[0].memory, count)) port.flush_dma();
    for (std::size_t i = 0; i < count; ++i)
        dma.add_write(pieces[i].memory, const_cast<std::uint8_t*>(data) + pieces[i].done, pieces[i].address,
                      pieces[i].length, origin);
    if (!dma.holds(current_frame)) dma.hold(current_frame);
    return true;
}

void transport_context::stage_completion(queue_pair& qp, completion_queue& cq, const hw::cqe& entry, bool solicited,
                                         std::uint32_t first_psn, std::uint32_t last_psn) {
    // A completion must not be seen before the data it reports.
    if (dma.empty()) {
        port.post_completion(cq, entry, solicited);
        return;
    }
    if (!dma.fits(dma.memory(), 0)) port.flush_dma();
    if (dma.empty())
        port.post_completion(cq, entry, solicited);
    else
        dma.add_completion({&qp, &cq, entry, solicited, first_psn, last_psn});
}

} // namespace rocefab::nic
