// rocefab: start and stop fabrics, run programs on their emulated hosts, read their counters.
//
//   rocefab up [CONFIG] [--name NAME]      start a fabric in the background
//   rocefab down [--fabric NAME]           stop it
//   rocefab run [--fabric NAME] --host H -- PROGRAM ARGS...
//   rocefab show [--fabric NAME] [--json]  counters
//   rocefab link ENDPOINT [--loss P] [--corruption P] [--duplication P] [--reordering P]
//                [--reorder-delay D] [--down|--up]   fault injection on a cable (P: 0.01 or 1%)
//   rocefab list                           running fabrics
//   rocefab sim SCENARIO [--output DIR]    a scenario under virtual time: CSVs and plots

#include "control/config/topology.hpp"
#include "control/config/units.hpp"
#include "control/daemon.hpp"
#include "control/cm/cm_server.hpp"
#include "control/fabric.hpp"
#include "nic_emu/attach_protocol.hpp"
#include "nic_emu/verbs/command_channel.hpp"
#include "tools/host_view.hpp"
#include "sim/simulation.hpp"

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fcntl.h>
#include <iostream>
#include <poll.h>
#include <string>
#include <sys/stat.h>
#include <sys/wait.h>
#include <thread>
#include <sched.h>
#include <unistd.h>
#include <vector>

namespace fs = std::filesystem;
using namespace rocefab;
using nlohmann::json;

namespace {

[[noreturn]] void fail(const std::string& message, int status = 1) {
    std::cerr << "rocefab: " << message << "\n";
    std::exit(status);
}

fs::path executable_directory() {
    std::error_code error;
    const fs::path self = fs::read_symlink("/proc/self/exe", error);
    return error ? fs::current_path() : self.parent_path();
}

// The source tree the binary was built from: build/rocefab sits in build/ under it.
fs::path project_directory() { return executable_directory().parent_path(); }

// How long a request to a fabric may take: ROCEFAB_TIMEOUT seconds, 20 by default.
std::chrono::milliseconds request_timeout() {
    if (const char* text = std::getenv("ROCEFAB_TIMEOUT"); text && *text) {
        char* end = nullptr;
        const double seconds = std::strtod(text, &end);
        if (end && *end == '\0' && seconds > 0 && seconds < 86400)
            return std::chrono::milliseconds(static_cast<long long>(seconds * 1000));
    }
    return std::chrono::seconds(20);
}

std::vector<std::string> running_fabrics() {
    std::vector<std::string> names;
    std::error_code error;
    for (const auto& entry : fs::directory_iterator(control::runtime_root(), error)) {
        if (!entry.is_directory()) continue;
        const std::string name = entry.path().filename();
        // A short look: one stuck daemon must not hold up the list of the others.
        if (control::control_request(entry.path().string(), {{"op", "ping"}}, nullptr, std::chrono::seconds(2)))
            names.push_back(name);
    }
    std::sort(names.begin(), names.end());
    return names;
}

std::string join(const std::vector<std::string>& items) {
    std::string out;
    for (const auto& i : items) out += (out.empty() ? "" : ", ") + i;
    return out;
}

// The fabric a command is about: the one named, or the only one running.
std::string choose_fabric(const std::string& requested) {
    if (!requested.empty()) {
        std::string problem;
        if (!control::control_request(control::runtime_directory(requested), {{"op", "ping"}}, &problem,
                                      request_timeout())) {
            if (problem.rfind("no daemon listens", 0) == 0)
                fail("fabric '" + requested + "' is not running (start it with: rocefab up CONFIG --name " + requested +
                     ")");
            fail("fabric '" + requested + "' does not answer: " + problem);
        }
        return requested;
    }
    const auto names = running_fabrics();
    if (names.empty()) fail("no fabric is running (start one with: rocefab up [CONFIG])");
    if (names.size() > 1) fail("several fabrics are running (" + join(names) + "): choose one with --fabric NAME");
    return names.front();
}

json request_or_fail(const std::string& fabric, const json& request) {
    std::string problem;
    auto reply = control::control_request(control::runtime_directory(fabric), request, &problem, request_timeout());
    if (!reply) fail("fabric '" + fabric + "' does not answer: " + problem);
    if (!reply->value("ok", false)) fail(reply->value("error", std::string("request failed")));
    return *reply;
}

int command_up(const std::string& config_path, const std::string& name_option, bool foreground) {
    config::topology topology;
    config::config_error error;
    if (!config::load_topology(config_path, topology, error)) fail(error.to_string(), 2);
    if (!name_option.empty()) topology.name = name_option;
    const std::string dir = control::runtime_directory(topology.name);
    if (control::control_request(dir, {{"op", "ping"}}, nullptr, std::chrono::seconds(2)))
        fail("fabric '" + topology.name + "' is already up");
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (ec) fail("cannot create " + dir + ": " + ec.message());

    if (foreground) return control::run_daemon(std::move(topology), dir, -1);

    int ready[2];
    if (::pipe2(ready, O_CLOEXEC) != 0) fail(std::string("pipe: ") + std::strerror(errno));
    const pid_t child = ::fork();
    if (child < 0) fail(std::string("fork: ") + std::strerror(errno));
    if (child == 0) {
        ::close(ready[0]);
        ::setsid();
        const int null = ::open("/dev/null", O_RDONLY);
        const int log = ::open((dir + "/" + control::log_file_name).c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (null >= 0) ::dup2(null, 0);
        if (log >= 0) {
            ::dup2(log, 1);
            ::dup2(log, 2);
        }
        std::signal(SIGHUP, SIG_IGN);
        ::_exit(control::run_daemon(std::move(topology), dir, ready[1]));
    }
    ::close(ready[1]);
    std::string line;
    char c;
    pollfd p{ready[0], POLLIN, 0};
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (std::chrono::steady_clock::now() < deadline) {
        if (::poll(&p, 1, 200) > 0) {
            const ssize_t n = ::read(ready[0], &c, 1);
            if (n <= 0 || c == '\n') break;
            line += c;
        }
    }
    ::close(ready[0]);
    if (line != "ok") {
        int status;
        ::waitpid(child, &status, WNOHANG);
        fail(line.empty() ? "the fabric daemon did not start; see " + dir + "/" + control::log_file_name : line);
    }
    std::vector<std::string> hosts;
    for (const auto& h : topology.hosts) hosts.push_back(h.name);
    std::cout << "fabric " << topology.name << " is up: " << topology.hosts.size() << " hosts (" << join(hosts) << "), "
              << topology.switches.size() << " switch" << (topology.switches.size() == 1 ? "" : "es") << ", "
              << topology.links.size() << " links\n"
              << "  run programs with: rocefab run --host " << (hosts.empty() ? "H" : hosts.front())
              << " -- PROGRAM ARGS...\n";
    return 0;
}

int command_down(const std::string& fabric_option) {
    const std::string fabric = choose_fabric(fabric_option);
    const auto ping = request_or_fail(fabric, {{"op", "ping"}});
    const pid_t pid = ping.value("pid", 0);
    request_or_fail(fabric, {{"op", "down"}});
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (pid > 0 && ::kill(pid, 0) == 0 && std::chrono::steady_clock::now() < deadline) {
        ::waitpid(pid, nullptr, WNOHANG);
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    if (pid > 0 && ::kill(pid, 0) == 0)
        fail("fabric '" + fabric + "' did not stop within 20 s (pid " + std::to_string(pid) + ")");
    std::cout << "fabric " << fabric << " is down\n";
    return 0;
}

fs::path verbs_library_directory() {
    if (const char* dir = std::getenv("ROCEFAB_LIBDIR"); dir && *dir) return dir;
    return executable_directory() / "nic_emu" / "verbs";
}

int command_run(const std::string& fabric_option, const std::string& host, std::vector<std::string> program) {
    if (program.empty()) fail("run needs a program: rocefab run --host H -- PROGRAM ARGS...");
    const std::string fabric = choose_fabric(fabric_option);
    const auto reply = request_or_fail(fabric, {{"op", "topology"}});
    const auto& topo = reply["topology"];
    std::vector<std::string> hosts;
    tools::host_view_request view;
    view.host = host;
    view.host_network = reply.value("host_network", json());
    view.all_hosts = topo["hosts"];
    bool found = false;
    for (const auto& h : topo["hosts"]) {
        hosts.push_back(h["name"]);
        if (h["name"] == host) {
            found = true;
            view.host_entry = h;
        }
    }
    if (!found) fail("fabric " + fabric + " has no host '" + host + "' (hosts: " + join(hosts) + ")");
    const fs::path libdir = verbs_library_directory();
    if (!fs::exists(libdir / "libibverbs.so.1"))
        fail("the verbs library is missing from " + libdir.string() + " (build it, or set ROCEFAB_LIBDIR)");
    const std::string socket = control::attach_socket_path(control::runtime_directory(fabric), host);
    ::setenv(attach::socket_env, socket.c_str(), 1);
    ::setenv(attach::host_env, host.c_str(), 1);
    // What the program starts through rocefab-launch (mpirun's daemons) lands on this fabric.
    ::setenv("ROCEFAB_FABRIC", fabric.c_str(), 1);
    // librdmacm.so.1 (nic_emu/rdmacm, beside the verbs library's folder) reaches the CM here.
    ::setenv("ROCEFAB_CM_SOCKET", control::cm_socket_path(control::runtime_directory(fabric), host).c_str(), 1);
    std::string path = libdir.string();
    if (const fs::path rdmacm = libdir.parent_path() / "rdmacm"; fs::exists(rdmacm / "librdmacm.so.1"))
        path += ":" + rdmacm.string();
    if (const char* old = std::getenv("LD_LIBRARY_PATH"); old && *old) path += std::string(":") + old;
    ::setenv("LD_LIBRARY_PATH", path.c_str(), 1);
    {
        // The devices as the program's verbs library will list them: the same hello, so the
        // /sys files hold what ibv_query_device, _port and _gid return. A runner the daemon
        // refuses gets no devices here, and the program gets the daemon's refusal itself.
        verbs::command_channel channel;
        attach::reply hello{};
        if (channel.connect_and_hello(hello) == 0)
            for (std::uint32_t i = 0; i < std::min<std::uint32_t>(hello.hello.device_count, attach::max_devices); ++i)
                view.devices.push_back(hello.hello.devices[i]);
    }
    // Reading counters is for everyone who may attach; without them the view has no counters.
    if (const auto counters =
            control::control_request(control::runtime_directory(fabric), {{"op", "show"}}, nullptr, request_timeout());
        counters && counters->value("ok", false) && counters->contains("counters"))
        view.nic_counters = (*counters)["counters"].value("nics", json());
    std::string missing;
    try {
        missing = tools::enter_host_view(view);
    } catch (const std::exception& e) {
        // A reply of an unexpected shape: the program still runs, on the machine's view.
        missing = view.host + " runs without its host view: the daemon's reply was not understood (" + e.what() + ")";
    }
    if (!missing.empty()) std::cerr << "rocefab: " << missing << "\n";
    // Off the data plane's CPU (fabric::dataplane_cpu): a program busy-polling beside it would
    // take turns of milliseconds with the "hardware" it waits for. Kept when it is the only CPU
    // the program may use.
    if (const int busy = reply.value("dataplane_cpu", -1); busy >= 0 && busy < CPU_SETSIZE) {
        cpu_set_t allowed;
        CPU_ZERO(&allowed);
        if (::sched_getaffinity(0, sizeof allowed, &allowed) == 0 && CPU_ISSET(busy, &allowed) &&
            CPU_COUNT(&allowed) > 1) {
            CPU_CLR(busy, &allowed);
            ::sched_setaffinity(0, sizeof allowed, &allowed);
        }
    }
    std::vector<char*> argv;
    for (auto& a : program) argv.push_back(a.data());
    argv.push_back(nullptr);
    ::execvp(argv[0], argv.data());
    fail("cannot run " + program.front() + ": " + std::strerror(errno), 127);
}

unsigned long long number(const json& object, const char* key) {
    return static_cast<unsigned long long>(object.value(key, std::uint64_t{0}));
}

// A switch port's counters in the layout of Cumulus NVUE's counter commands: the port's nonzero
// counters, then `nv show interface swpN counters qos egress-queue-stats` and `... pfc-stats`
// with the rows that saw traffic.
void print_switch_port(const json& port) {
    const std::string name = port["port"].get<std::string>();
    std::vector<std::pair<std::string, unsigned long long>> nonzero;
    for (const auto& [key, value] : port.items())
        if (value.is_number_unsigned() && value.get<std::uint64_t>() != 0)
            nonzero.emplace_back(key, value.get<std::uint64_t>());
    if (nonzero.empty()) return;
    std::printf("\n%s\n", name.c_str());
    for (const auto& [key, value] : nonzero) std::printf("  %-32s %16llu\n", key.c_str(), value);

    bool header = false;
    for (const auto& q : port["queues"]) {
        if (!number(q, "tx_packets") && !number(q, "tail_drops") && !number(q, "wred_drops") &&
            !number(q, "watchdog_drops") && !number(q, "peak_bytes"))
            continue;
        if (!header) {
            std::printf("  Egress Queue Statistics\n  %-13s  %12s  %16s  %21s  %13s  %18s  %20s  %16s\n",
                        "Traffic Class", "Tx Frames", "Tx Bytes", "Tx Uc Buffer Discards", "Wred Discards",
                        "Ecn Marked Packets", "Current Buffer Usage", "Max Buffer Usage");
            header = true;
        }
        std::printf("  %-13llu  %12llu  %16llu  %21llu  %13llu  %18llu  %20llu  %16llu\n", number(q, "tc"),
                    number(q, "tx_packets"), number(q, "tx_bytes"), number(q, "tail_drops"),
                    number(q, "wred_drops") + number(q, "watchdog_drops"), number(q, "ecn_marked"),
                    number(q, "depth_bytes"), number(q, "peak_bytes"));
    }
    header = false;
    for (const auto& p : port["priorities"]) {
        if (!number(p, "rx_pause") && !number(p, "tx_pause")) continue;
        if (!header) {
            std::printf("  PFC Statistics\n  %-15s  %15s  %20s  %15s  %20s\n", "switch-priority", "Rx Pause Frames",
                        "Rx Pause Duration us", "Tx Pause Frames", "Tx Pause Duration us");
            header = true;
        }
        std::printf("  %-15llu  %15llu  %20llu  %15llu  %20llu\n", number(p, "priority"), number(p, "rx_pause"),
                    number(p, "rx_pause_duration"), number(p, "tx_pause"), number(p, "tx_pause_duration"));
    }
}

// The fabric's connection manager: its nonzero counters, then its ids in the manner of iproute2's
// `rdma resource show cm_id`.
void print_rdma_cm(const json& cm) {
    bool active = false;
    for (const auto& [key, value] : cm.items()) active |= value.is_number_unsigned() && value.get<std::uint64_t>() != 0;
    if (!active) return;
    std::printf("\nrdma_cm (nonzero counters)\n");
    for (const auto& [key, value] : cm.items())
        if (value.is_number_unsigned() && value.get<std::uint64_t>())
            std::printf("  %-30s %16llu\n", key.c_str(), static_cast<unsigned long long>(value.get<std::uint64_t>()));
    if (!cm.contains("cm_ids") || cm["cm_ids"].empty()) return;
    std::printf("  %-8s %-8s %8s  %-17s %-5s %-21s %-21s %8s\n", "host", "device", "pid", "state", "ps", "src-addr",
                "dst-addr", "qpn");
    for (const auto& id : cm["cm_ids"]) {
        const std::string source = id["src_addr"].get<std::string>() + ":" + std::to_string(number(id, "src_port"));
        const std::string destination =
            id["dst_addr"].get<std::string>() + ":" + std::to_string(number(id, "dst_port"));
        std::printf("  %-8s %-8s %8lld  %-17s %-5s %-21s %-21s %8llu\n", id["host"].get<std::string>().c_str(),
                    id["device"].get<std::string>().c_str(), static_cast<long long>(id.value("pid", 0)),
                    id["state"].get<std::string>().c_str(), id["ps"].get<std::string>().c_str(), source.c_str(),
                    destination.c_str(), number(id, "qpn"));
    }
}

void print_counters(const json& counters) {
    std::printf("fabric %s\n", counters.value("fabric", std::string()).c_str());
    if (counters.contains("dataplane")) {
        const json& loop = counters["dataplane"];
        std::printf("data plane: %llu iterations, %llu sleeps, %llu catch-up steps (time gone through late, "
                    "after the loop was off its CPU)\n",
                    number(loop, "iterations"), number(loop, "sleeps"), number(loop, "catch_up_steps"));
    }
    for (const auto& sw : counters["switches"]) {
        const json& buffer = sw["buffer"];
        std::printf("\nswitch %s: buffer %llu of %llu bytes in use, peak %llu", sw["name"].get<std::string>().c_str(),
                    number(buffer, "in_use_bytes"), number(buffer, "size_bytes"), number(buffer, "peak_bytes"));
        if (sw["adaptive_routing"].value("enabled", false))
            std::printf("; adaptive routing rerouted %llu packets", number(sw["adaptive_routing"], "rerouted"));
        std::printf("\n");
        for (const auto& port : sw["ports"]) print_switch_port(port);
    }
    for (const auto& nic : counters["nics"]) {
        bool active = false;
        for (const auto& [key, value] : nic["counters"].items()) active |= value.get<std::uint64_t>() != 0;
        if (!active) continue;
        std::printf("\nnic %s/%s (nonzero counters)\n", nic["host"].get<std::string>().c_str(),
                    nic["nic"].get<std::string>().c_str());
        for (const auto& [key, value] : nic["counters"].items())
            if (value.get<std::uint64_t>())
                std::printf("  %-30s %16llu\n", key.c_str(),
                            static_cast<unsigned long long>(value.get<std::uint64_t>()));
    }
    if (counters.contains("cm")) print_rdma_cm(counters["cm"]);
    std::printf("\nlinks\n  %-24s %12s %16s %10s %10s %10s %10s %10s\n", "link", "tx_frames", "tx_bytes", "drops",
                "lost", "corrupted", "duplicated", "reordered");
    for (const auto& l : counters["links"]) {
        const std::uint64_t drops = l["drops_link_down"].get<std::uint64_t>() + l["drops_mtu"].get<std::uint64_t>() +
                                    l["drops_queue_full"].get<std::uint64_t>();
        std::printf(
            "  %-24s %12llu %16llu %10llu %10llu %10llu %10llu %10llu%s\n", l["link"].get<std::string>().c_str(),
            static_cast<unsigned long long>(l["tx_frames"].get<std::uint64_t>()),
            static_cast<unsigned long long>(l["tx_bytes"].get<std::uint64_t>()), static_cast<unsigned long long>(drops),
            number(l, "drops_loss"), number(l, "frames_corrupted"), number(l, "frames_duplicated"),
            number(l, "frames_reordered"), l.value("up", true) ? "" : "  (down)");
    }
}

int command_sim(const std::string& path, const std::string& output) {
    sim::scenario scenario;
    config::config_error error;
    if (!sim::load_scenario(path, scenario, error)) fail(error.to_string(), 2);
    if (!output.empty()) scenario.output = output;
    try {
        sim::simulation run(scenario);
        run.run(stderr);
        if (std::string problem = run.write_csv(); !problem.empty()) fail(problem);
        if (std::string problem = run.write_plots(); !problem.empty()) fail(problem);
        std::size_t completed = 0;
        for (const auto& f : run.traffic().flows()) completed += f.finished != never && !f.failed;
        std::printf("%zu of %zu flows completed; CSVs and plots in %s\n", completed, run.traffic().flows().size(),
                    scenario.output.c_str());
    } catch (const std::exception& e) {
        fail(e.what());
    }
    return 0;
}

} // namespace

int main(int argc, char** argv) {
    CLI::App app{"rocefab: a software RoCEv2 fabric (switch, NIC and verbs) for unmodified RDMA programs"};
    app.require_subcommand(1);

    std::string config_path = (project_directory() / "configs" / "two-hosts.yaml").string();
    std::string name;
    auto* up = app.add_subcommand("up", "start a fabric in the background and return when it is ready");
    up->add_option("config", config_path, "topology file (default: configs/two-hosts.yaml)");
    up->add_option("--name", name, "fabric name (default: the config's `fabric:`, else its file name)");
    bool foreground = false;
    up->add_flag("--foreground", foreground, "run the daemon in this process, logging to the terminal");

    std::string fabric;
    auto* down = app.add_subcommand("down", "stop a fabric");
    down->add_option("--fabric,--name", fabric, "which fabric (default: the only one running)");

    std::string host;
    std::vector<std::string> program;
    auto* run = app.add_subcommand("run", "run an unmodified program on an emulated host");
    run->add_option("--fabric", fabric, "which fabric (default: the only one running)");
    run->add_option("--host", host, "the emulated host, e.g. h1")->required();
    run->add_option("program", program, "-- PROGRAM ARGS...")->required();
    run->prefix_command(false);

    bool as_json = false;
    auto* show = app.add_subcommand("show", "print switch, NIC and link counters");
    show->add_option("--fabric", fabric, "which fabric (default: the only one running)");
    show->add_flag("--json", as_json, "JSON for scripts");

    auto* list = app.add_subcommand("list", "list running fabrics");

    std::string endpoint, file;
    bool stop_capture = false;
    auto* capture = app.add_subcommand("capture", "capture a cable's frames (both directions) to a pcap file");
    capture->add_option("--fabric", fabric, "which fabric (default: the only one running)");
    capture->add_option("endpoint", endpoint, "one end of the cable, e.g. h1/rfab0 or sw1/swp2")->required();
    capture->add_option("--file,-w", file, "pcap file to write (nanosecond timestamps)");
    capture->add_flag("--stop", stop_capture, "stop the capture and close the file");

    std::string loss, corruption, duplication, reordering, reorder_delay;
    bool link_down = false, link_up = false;
    auto* link = app.add_subcommand("link", "fault injection on a cable (both directions): loss, corruption, "
                                            "duplication, reordering, down/up; with no option, print its state");
    link->add_option("--fabric", fabric, "which fabric (default: the only one running)");
    link->add_option("endpoint", endpoint, "one end of the cable, e.g. h1/rfab0 or sw1/swp2")->required();
    link->add_option("--loss", loss, "probability a frame is lost: 0.01 or 1%");
    link->add_option("--corruption", corruption, "probability a frame is corrupted (fails the ICRC check)");
    link->add_option("--duplication", duplication, "probability a frame is delivered twice");
    link->add_option("--reordering", reordering, "probability a frame is held back and overtaken");
    link->add_option("--reorder-delay", reorder_delay, "how long a reordered frame is held back, e.g. 10us");
    auto* down_flag = link->add_flag("--down", link_down, "take the cable down (new frames are dropped)");
    link->add_flag("--up", link_up, "bring the cable up")->excludes(down_flag);

    std::string scenario_path, output;
    auto* sim = app.add_subcommand("sim", "run a scenario under virtual time and write CSVs and plots");
    sim->add_option("scenario", scenario_path, "scenario file, e.g. configs/incast-16to1-dcqcn.yaml")->required();
    sim->add_option("--output", output,
                    "directory for the CSVs and plots (default: the scenario's, else sim-out/NAME)");

    CLI11_PARSE(app, argc, argv);

    if (*sim) return command_sim(scenario_path, output);
    if (const std::string problem = control::secure_runtime_root(); !problem.empty()) fail(problem);

    if (*up) return command_up(config_path, name, foreground);
    if (*down) return command_down(fabric);
    if (*run) return command_run(fabric, host, program);
    if (*show) {
        const auto reply = request_or_fail(choose_fabric(fabric), {{"op", "show"}});
        if (as_json)
            std::cout << reply["counters"].dump(2) << "\n";
        else
            print_counters(reply["counters"]);
        return 0;
    }
    if (*capture) {
        const std::string chosen = choose_fabric(fabric);
        if (stop_capture) {
            const auto reply = request_or_fail(chosen, {{"op", "capture"}, {"endpoint", endpoint}, {"stop", true}});
            std::cout << "capture on " << endpoint << " stopped: " << reply["frames"] << " frames\n";
            return 0;
        }
        if (file.empty()) fail("capture needs --file FILE (or --stop)");
        request_or_fail(chosen, {{"op", "capture"}, {"endpoint", endpoint}, {"file", fs::absolute(file).string()}});
        std::cout << "capturing " << endpoint << " to " << file << " (stop with: rocefab capture " << endpoint
                  << " --stop)\n";
        return 0;
    }
    if (*list) {
        for (const auto& f : running_fabrics()) std::cout << f << "\n";
        return 0;
    }
    if (*link) {
        json request = {{"op", "link"}, {"endpoint", endpoint}};
        json faults = json::object();
        for (const auto& [key, value] :
             {std::pair{"loss", &loss}, std::pair{"corruption", &corruption}, std::pair{"duplication", &duplication},
              std::pair{"reordering", &reordering}, std::pair{"reorder_delay", &reorder_delay}})
            if (!value->empty()) faults[key] = *value;
        if (!faults.empty()) request["faults"] = faults;
        if (link_down || link_up) request["up"] = link_up;
        const auto reply = request_or_fail(choose_fabric(fabric), request);
        const json& f = reply["faults"];
        std::printf("%s: %s, loss %s, corruption %s, duplication %s, reordering %s (held %s ns)\n", endpoint.c_str(),
                    reply.value("up", true) ? "up" : "down", config::format_probability(f.value("loss", 0.0)).c_str(),
                    config::format_probability(f.value("corruption", 0.0)).c_str(),
                    config::format_probability(f.value("duplication", 0.0)).c_str(),
                    config::format_probability(f.value("reordering", 0.0)).c_str(),
                    std::to_string(f.value("reorder_delay_ns", std::int64_t{0})).c_str());
        return 0;
    }
    return 0;
}
