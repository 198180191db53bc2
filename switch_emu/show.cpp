#include "switch_emu/show.hpp"

#include <string>

namespace rocefab::switch_emu {

namespace {
nlohmann::json port_json(const std::string& port_name, const switch_node::port_snapshot& p) {
    nlohmann::json out;
    out["port"] = port_name;
    p.counters.for_each([&](std::string_view name, std::uint64_t value) { out[std::string(name)] = value; });
    nlohmann::json queues = nlohmann::json::array(), priorities = nlohmann::json::array();
    for (std::uint8_t i = 0; i < traffic_class_count; ++i) {
        const std::string prio = "prio" + std::to_string(i);
        out["rx_" + prio + "_pause"] = p.pfc[i].rx_pause;
        out["rx_" + prio + "_pause_duration"] = p.pfc[i].rx_pause_duration_us;
        out["tx_" + prio + "_pause"] = p.pfc[i].tx_pause;
        out["tx_" + prio + "_pause_duration"] = p.pfc[i].tx_pause_duration_us;
        const queue_counters& q = p.queues[i];
        queues.push_back({{"tc", i},
                          {"tx_packets", q.tx_packets},
                          {"tx_bytes", q.tx_bytes},
                          {"tail_drops", q.tail_drops},
                          {"wred_drops", q.wred_drops},
                          {"watchdog_drops", q.watchdog_drops},
                          {"ecn_marked", q.ecn_marked},
                          {"depth_bytes", p.queue_depth_bytes[i]},
                          {"peak_bytes", q.peak_bytes}});
        const ingress_counters& in = p.ingress[i];
        priorities.push_back({{"priority", i},
                              {"rx_packets", in.rx_packets},
                              {"rx_bytes", in.rx_bytes},
                              {"headroom_drops", in.headroom_drops},
                              {"buffer_bytes", p.group_bytes[i]},
                              {"buffer_peak_bytes", p.group_peak_bytes[i]},
                              {"rx_pause", p.pfc[i].rx_pause},
                              {"rx_pause_duration", p.pfc[i].rx_pause_duration_us},
                              {"tx_pause", p.pfc[i].tx_pause},
                              {"tx_pause_duration", p.pfc[i].tx_pause_duration_us}});
    }
    out["queues"] = std::move(queues);
    out["priorities"] = std::move(priorities);
    return out;
}
} // namespace

nlohmann::json to_json(const std::string& name, const switch_spec& spec, const switch_node::snapshot_data& s) {
    nlohmann::json ports = nlohmann::json::array();
    for (std::size_t port = 0; port < s.ports.size(); ++port)
        ports.push_back(port_json(spec.ports[port].name, s.ports[port]));
    return {{"name", name},
            {"buffer",
             {{"size_bytes", s.buffer_size_bytes},
              {"in_use_bytes", s.buffer_in_use_bytes},
              {"peak_bytes", s.buffer_peak_bytes}}},
            {"adaptive_routing", {{"enabled", spec.adaptive_routing.enabled}, {"rerouted", s.adaptive_reroutes}}},
            {"ports", std::move(ports)}};
}

nlohmann::json counters_json(const switch_node& sw) {
    switch_node::snapshot_data s;
    sw.snapshot(s);
    return to_json(sw.name(), sw.spec(), s);
}

} // namespace rocefab::switch_emu
