#include "switch_emu/counters.hpp"

#include <string>

namespace rocefab::switch_emu {

nlohmann::json port_counters::to_json() const {
    nlohmann::json out = nlohmann::json::object();
    for_each([&](std::string_view name, std::uint64_t value) { out[std::string(name)] = value; });
    return out;
}

} // namespace rocefab::switch_emu
