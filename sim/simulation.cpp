#include "sim/simulation.hpp"

#include "dataplane/eal.hpp"
#include "dataplane/wire/bth.hpp"
#include "sim/decimal_text.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <chrono>
#include <cinttypes>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <unistd.h>

namespace rocefab::sim {

namespace {

constexpr std::uint32_t framing_per_packet = 82; // Ethernet, IPv4, UDP, BTH, ICRC, FCS, preamble, gap

double microseconds_of(sim_time t) { return static_cast<double>(t) / 1000.0; }

std::string format_us(sim_time t) {
    std::string text;
    append_fixed3(text, microseconds_of(t));
    return text;
}

} // namespace

// Samples the fabric every sample interval into rows of text, one table per CSV file.
class recorder final : public node {
public:
    recorder(const simulation& sim, const scenario& s) : node("recorder", 0), _sim(sim), _interval(s.sample_interval) {}

    void receive(std::uint16_t, rte_mbuf* frame, sim_time) override { rte_pktmbuf_free(frame); }
    sim_time next_deadline() const override { return _next; }
    bool poll(sim_time now) override {
        if (now < _next) return false;
        sample(now);
        _next = now + _interval;
        return true;
    }

    void sample(sim_time now) {
        const auto& switches = _sim.switches();
        const auto& flows = _sim.traffic().flows();
        if (_queues_header.empty()) start_tables();

        // Straight onto the tables: a row is a few numbers per port and per flow, every sample.
        append_fixed3(_queues, microseconds_of(now));
        std::size_t column = 0;
        for (const auto& sw : switches)
            for (std::uint16_t p = 0; p < sw->port_count(); ++p, ++column) {
                std::uint64_t bytes = 0;
                for (std::uint8_t tc = 0; tc < switch_emu::traffic_class_count; ++tc)
                    bytes += sw->queue_depth_bytes(p, tc);
                if (bytes) _queue_used[column] = true;
                _queues += ',';
                append_decimal(_queues, bytes);
            }
        _queues += '\n';

        append_fixed3(_flows, microseconds_of(now));
        for (std::size_t i = 0; i < flows.size(); ++i) {
            const auto& f = flows[i];
            double rate = 0;
            std::uint32_t sent = _sent_psn[i];
            if (f.finished == never || f.finished == now) {
                if (const auto progress = f.sender->send_progress(f.sender_qpn, now)) {
                    rate = f.spec->start <= now ? progress->current_rate_bps : 0;
                    sent = progress->next_psn;
                }
            }
            const auto packets = static_cast<std::uint64_t>(std::max(0, wire::psn_diff(sent, _sent_psn[i])));
            _sent_psn[i] = sent;
            const double sent_rate = _last_sample == never ? 0
                                                           : static_cast<double>(packets * f.payload_per_packet) * 8e9 /
                                                                 static_cast<double>(now - _last_sample);
            _flows += ',';
            append_fixed3(_flows, rate / 1e9);
            _flows += ',';
            append_fixed3(_flows, sent_rate / 1e9);
        }
        _flows += '\n';

        using switch_emu::port_counter;
        std::uint64_t ecn = 0, pauses = 0, cnp_sent = 0, cnp_handled = 0, nic_pauses = 0;
        std::array<std::uint64_t, 4> drops{}; // tail, WRED, headroom, watchdog
        for (const auto& sw : switches)
            for (std::uint16_t p = 0; p < sw->port_count(); ++p) {
                ecn += sw->counter(p, port_counter::ecn_marked);
                drops[0] += sw->counter(p, port_counter::tail_drops);
                drops[1] += sw->counter(p, port_counter::wred_drops);
                drops[2] += sw->counter(p, port_counter::headroom_drops);
                drops[3] += sw->counter(p, port_counter::watchdog_drops);
                for (std::uint8_t prio = 0; prio < 8; ++prio) pauses += sw->pfc_counters(p, prio).tx_pause;
            }
        for (const auto& n : _sim.nics()) {
            cnp_sent += n->counters().np_cnp_sent;
            cnp_handled += n->counters().rp_cnp_handled;
            for (std::uint64_t c : n->counters().rx_prio_pause) nic_pauses += c;
        }
        append_fixed3(_counters, microseconds_of(now));
        for (std::uint64_t c :
             {ecn, cnp_sent, cnp_handled, pauses, nic_pauses, drops[0], drops[1], drops[2], drops[3]}) {
            _counters += ',';
            append_decimal(_counters, c);
        }
        _counters += '\n';
        _last_sample = now;
    }

private:
    friend class simulation; // writes the tables out

    void start_tables() {
        _queues_header = "time_us";
        for (const auto& sw : _sim.switches())
            for (std::uint16_t p = 0; p < sw->port_count(); ++p) {
                _queues_header += "," + sw->name() + ":" + sw->spec().ports[p].name;
                _queue_names.push_back(sw->name() + ":" + sw->spec().ports[p].name);
            }
        _queue_used.assign(_queue_names.size(), false);
        _flows_header = "time_us";
        for (const auto& f : _sim.traffic().flows())
            _flows_header += "," + f.spec->name + "_rate_gbps," + f.spec->name + "_sent_gbps";
        _sent_psn.assign(_sim.traffic().flows().size(), 0);
    }

    std::string _queues_header, _queues, _flows_header, _flows, _counters;
    std::vector<std::string> _queue_names;
    std::vector<bool> _queue_used; // ever nonzero: plotted
    std::vector<std::uint32_t> _sent_psn;
    const simulation& _sim;
    sim_time _interval;
    sim_time _next = 0;
    sim_time _last_sample = never;
};

simulation::simulation(const scenario& s) : _scenario(s) {
    // One EAL and one pool a process, however many simulations it runs one after another.
    static std::string error;
    static rte_mempool* pool = [] {
        eal_options options;
        options.file_prefix = "rocefab-sim-" + std::to_string(::getpid());
        return start_eal(options, error) ? create_packet_pool("rocefab_sim_pool", 16383, error, pool_pages::populated,
                                                              pool_order::last_freed_first)
                                         : nullptr;
    }();
    if (!pool) throw std::runtime_error(error);

    const config::topology& topo = s.topology;
    // The traffic generator drives each host's first NIC; a cable on another would carry nothing.
    for (const config::link_config& l : topo.links)
        for (const config::endpoint& e : {l.a, l.b})
            if (e.kind == config::endpoint::host_nic && e.port != 0)
                throw std::runtime_error("rocefab sim uses each host's first NIC only");
    _fabric = std::make_unique<control::fabric_builder>(topo, control::clocking::virtual_time);
    for (const auto& host : _fabric->nics()) _nics.push_back(host.at(0).get());
    _traffic = std::make_unique<traffic_generator>(s, _nics);
    rocefab::wiring& w = _fabric->wiring();
    std::vector<node_id> nic_ids(_nics.size());
    for (node_id i = 0; i < w.node_count(); ++i) {
        const auto found = std::find(_nics.begin(), _nics.end(), &w.node_at(i));
        if (found != _nics.end()) nic_ids[static_cast<std::size_t>(found - _nics.begin())] = i;
    }
    // A host's traffic posts WRITEs to its NIC's send queues and reads its completion queues:
    // each side's work changes what the other's next_deadline() says.
    for (const auto& host : _traffic->hosts()) w.couple(w.add_node(*host), nic_ids[host->host()]);
    _recorder = std::make_unique<recorder>(*this, s);
    w.set_observer(w.add_node(*_recorder));
    w.attach_all(pool);
    _driver = std::make_unique<virtual_time_driver>(w);
    _driver->set_run_ahead(true);
}

simulation::~simulation() = default;

sim_time simulation::ideal_completion(const flow_spec& f) const {
    const config::topology& topo = _scenario.topology;
    const std::uint64_t speed = topo.links[topo.hosts[f.source].nics[0].link_index].params.speed_bps;
    const nic::nic_node& from = *_nics[f.source];
    const nic::nic_node& to = *_nics[f.destination];
    const std::uint32_t payload_per_packet =
        128u << std::min(from.port_attributes().active_mtu, to.port_attributes().active_mtu);
    const std::uint64_t packets = (f.bytes + payload_per_packet - 1) / payload_per_packet;
    const auto wire_bits = static_cast<unsigned __int128>(f.bytes + packets * framing_per_packet) * 8;
    return static_cast<sim_time>(wire_bits * 1'000'000'000u / speed);
}

void simulation::run(std::FILE* progress) {
    const sim_time limit = _scenario.duration ? _scenario.duration : milliseconds(1000);
    const auto wall_start = std::chrono::steady_clock::now();
    auto last_report = wall_start;
    auto report = [&](bool final) {
        const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
        std::fprintf(progress,
                     "\rrocefab sim: %.3f ms of %.3f ms simulated in %.4f s of wall time, %" PRIu64 " frames%s",
                     static_cast<double>(now()) / 1e6, static_cast<double>(limit) / 1e6, wall, frames_delivered(),
                     final ? "\n" : "");
        std::fflush(progress);
    };
    // In steps of one sample interval, so that the progress line and the end test run often.
    // Nothing here changes a node between steps, so after the first the driver carries on from
    // its calendar rather than asking every node and link again at each.
    for (bool first = true; now() < limit; first = false) {
        const sim_time step_end = std::min(limit, now() + _scenario.sample_interval);
        if (first)
            _driver->run_until(step_end);
        else
            _driver->continue_until(step_end);
        if (!_scenario.duration && _traffic->all_done()) break;
        const auto wall_now = std::chrono::steady_clock::now();
        if (progress && wall_now - last_report > std::chrono::milliseconds(500)) {
            report(false);
            last_report = wall_now;
        }
    }
    _recorder->sample(now()); // the last row: the state at the end
    if (progress) report(true);
}

std::string simulation::write_csv() const {
    std::error_code ec;
    std::filesystem::create_directories(_scenario.output, ec);
    if (ec) return "cannot create " + _scenario.output + ": " + ec.message();
    auto write = [&](const std::string& name, const std::string& header, const std::string& body) -> std::string {
        std::ofstream out(_scenario.output + "/" + name, std::ios::binary | std::ios::trunc);
        out << header << "\n" << body;
        return out ? "" : "cannot write " + _scenario.output + "/" + name;
    };
    std::string fct;
    for (const auto& f : _traffic->flows()) {
        const sim_time ideal = ideal_completion(*f.spec);
        const bool done = f.finished != never && !f.failed;
        const sim_time taken = done ? f.finished - f.spec->start : 0;
        std::string slowdown;
        if (done) append_fixed3(slowdown, static_cast<double>(taken) / static_cast<double>(ideal));
        fct += f.spec->name + "," + _scenario.topology.hosts[f.spec->source].name + "," +
               _scenario.topology.hosts[f.spec->destination].name + "," + std::to_string(f.spec->bytes) + "," +
               format_us(f.spec->start) + "," + (done ? format_us(f.finished) : "") + "," +
               (done ? format_us(taken) : "") + "," + format_us(ideal) + "," + slowdown + "," +
               (f.failed ? "failed"
                : done   ? "completed"
                         : "unfinished") +
               "\n";
    }
    for (const std::string& problem :
         {write("queues.csv", _recorder->_queues_header, _recorder->_queues),
          write("flows.csv", _recorder->_flows_header, _recorder->_flows),
          write("counters.csv",
                "time_us,ecn_marked,cnp_sent,cnp_handled,switch_pause_frames,nic_pause_frames_received,tail_drops,"
                "wred_drops,headroom_drops,watchdog_drops",
                _recorder->_counters),
          write("fct.csv", "flow,from,to,bytes,start_us,finish_us,fct_us,ideal_us,slowdown,status", fct)})
        if (!problem.empty()) return problem;
    return {};
}

std::string simulation::write_plots() const {
    std::ostringstream gp;
    gp << "# Written by rocefab sim; run `gnuplot plots.gp` in this directory to redraw.\n"
          "set datafile separator ','\nset key outside right top noenhanced\nset grid\nset xlabel 'time (us)'\n";
    auto both = [&](const std::string& name, const std::string& ylabel, const std::string& plot) {
        for (const char* kind : {"png", "svg"}) {
            gp << (std::string(kind) == "png" ? "set terminal pngcairo size 1200,600\n"
                                              : "set terminal svg size 1200,600\n");
            gp << "set output '" << name << "." << kind << "'\nset ylabel '" << ylabel << "'\n" << plot << "\n";
        }
    };
    std::string queues;
    for (std::size_t c = 0; c < _recorder->_queue_names.size(); ++c)
        if (_recorder->_queue_used[c])
            queues += std::string(queues.empty() ? "plot " : ", ") + "'queues.csv' using 1:" + std::to_string(c + 2) +
                      " with lines title '" + _recorder->_queue_names[c] + "'";
    if (!queues.empty()) both("queues", "egress queue (bytes)", queues);
    const std::size_t flows = _traffic->flows().size();
    std::string rates, sent;
    for (std::size_t i = 0; i < flows; ++i) {
        const std::string& name = _traffic->flows()[i].spec->name;
        rates += std::string(i ? ", " : "plot ") + "'flows.csv' using 1:" + std::to_string(2 + 2 * i) +
                 " with lines title '" + name + "'";
        sent += std::string(i ? ", " : "plot ") + "'flows.csv' using 1:" + std::to_string(3 + 2 * i) +
                " with lines title '" + name + "'";
    }
    if (flows) {
        both("rates", "DCQCN rate (Gb/s)", rates);
        both("sent", "sent (Gb/s)", sent);
    }
    both("counters", "count (cumulative)",
         "plot for [i=2:10] 'counters.csv' using 1:i with lines title columnheader(i)");
    const std::string script = _scenario.output + "/plots.gp";
    {
        std::ofstream out(script, std::ios::binary | std::ios::trunc);
        out << gp.str();
        if (!out) return "cannot write " + script;
    }
    const std::string command = "cd '" + _scenario.output + "' && gnuplot plots.gp 2>&1";
    std::FILE* pipe = ::popen(command.c_str(), "r");
    if (!pipe) return "cannot run gnuplot";
    std::string output;
    char buffer[256];
    while (std::fgets(buffer, sizeof buffer, pipe)) output += buffer;
    const int status = ::pclose(pipe);
    if (status != 0) return "gnuplot failed (is it installed? tools/setup installs gnuplot-nox): " + output;
    return {};
}

} // namespace rocefab::sim
