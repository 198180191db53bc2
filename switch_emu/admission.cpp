#include "switch_emu/admission.hpp"

#include <algorithm>

namespace rocefab::switch_emu {

bool shared_buffer::admit(port_counters& egress, std::uint32_t bytes) {
    if (bytes > _size - _in_use) {
        egress.bump(port_counter::tail_drops);
        return false;
    }
    _in_use += bytes;
    _peak = std::max(_peak, _in_use);
    const std::uint64_t held = egress[port_counter::buffer_bytes] + bytes;
    egress.set(port_counter::buffer_bytes, held);
    egress.set(port_counter::buffer_peak_bytes, std::max(egress[port_counter::buffer_peak_bytes], held));
    return true;
}

void shared_buffer::release(port_counters& egress, std::uint32_t bytes) {
    // Never below zero, even if a caller releases twice: a wrong gauge is a bug, a wrapped
    // one would also lock the buffer for good.
    _in_use -= std::min<std::size_t>(_in_use, bytes);
    egress.set(port_counter::buffer_bytes, egress[port_counter::buffer_bytes] - std::min<std::uint64_t>(egress[port_counter::buffer_bytes], bytes));
}

} // namespace rocefab::switch_emu
