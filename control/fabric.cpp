#include "control/fabric.hpp"

#include "control/node_specs.hpp"

#include "dataplane/eal.hpp"
#include "dataplane/log.hpp"
#include "switch_emu/show.hpp"

#include <array>
#include <cerrno>
#include <fcntl.h>
#include <utility>
#include <cstdlib>
#include <cstring>
#include <new>
#include <stdexcept>
#include <system_error>
#include <sched.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

namespace rocefab::control {

namespace {

// Named as `rdma resource show qp` names them, plus the ring indices that show where work waits.
nlohmann::json qp_json(const nic::nic_node::qp_view& q) {
    return {
        {"lqpn", q.qpn},
        {"rqpn", q.dest_qpn},
        {"type", nic::qp_type_name(q.type)},
        {"state", nic::qp_state_name(q.state)},
        {"sq-psn", q.sq_psn},
        {"rq-psn", q.rq_psn},
        {"last-acked-psn", q.last_acked_psn},
        {"sq",
         {{"posted", q.sq_posted}, {"started", q.sq_started}, {"current", q.sq_current}, {"retired", q.sq_retired}}},
        {"port-busy-ns", q.port_busy_for},
        {"rq", {{"posted", q.rq_posted}, {"consumed", q.rq_consumed}}},
        {"send-cq", {{"produced", q.send_cq_produced}, {"consumed", q.send_cq_consumed}}},
        {"recv-cq", {{"produced", q.recv_cq_produced}, {"consumed", q.recv_cq_consumed}}},
        {"timer-armed", q.timer_armed},
        {"waiting-rnr", q.waiting_rnr},
        {"responses-pending", q.responses_pending},
        {"dcqcn",
         {{"rate-limited", q.rate_limited},
          {"current-rate-mbps", q.current_rate_bps / 1e6},
          {"target-rate-mbps", q.target_rate_bps / 1e6},
          {"alpha", q.alpha}}}};
}

nlohmann::json faults_json(const link_faults& f) {
    return {{"loss", f.loss},
            {"corruption", f.corruption},
            {"duplication", f.duplication},
            {"reordering", f.reordering},
            {"reorder_delay_ns", f.reorder_delay}};
}

} // namespace

std::string runtime_root() {
    if (const char* dir = std::getenv("ROCEFAB_RUNTIME_DIR"); dir && *dir) return dir;
    if (::geteuid() == 0) return "/run/rocefab";
    if (const char* xdg = std::getenv("XDG_RUNTIME_DIR"); xdg && *xdg) return std::string(xdg) + "/rocefab";
    return "/tmp/rocefab-" + std::to_string(::geteuid());
}

std::string runtime_directory(const std::string& name) { return runtime_root() + "/" + name; }

std::string secure_runtime_root() {
    const std::string root = runtime_root();
    if (::mkdir(root.c_str(), 0755) != 0 && errno != EEXIST)
        return "cannot create " + root + ": " + std::strerror(errno);
    struct stat s {};
    if (::lstat(root.c_str(), &s) != 0) return "cannot use " + root + ": " + std::strerror(errno);
    const char* fix = " (remove it, or choose another place with ROCEFAB_RUNTIME_DIR)";
    if (!S_ISDIR(s.st_mode)) return root + " is not a directory" + fix;
    if (s.st_uid != ::geteuid() && s.st_uid != 0)
        return root + " belongs to uid " + std::to_string(s.st_uid) + ", not to this user" + fix;
    if (s.st_mode & (S_IWGRP | S_IWOTH)) return root + " may be written by other users" + fix;
    return {};
}

fabric::fabric(config::topology topology) : _topology(std::move(topology)) {
    std::string error;
    eal_options options;
    options.file_prefix = "rocefab-" + _topology.name + "-" + std::to_string(::getpid());
    if (!start_eal(options, error)) throw std::runtime_error(error);
    // Two frames a link direction in flight plus what queues hold; 16k buffers of 9 KiB take
    // about 150 MB of ordinary memory (no hugepages).
    _pool = create_packet_pool("rocefab_pool", 16383, error);
    if (!_pool) throw std::runtime_error(error);

    _built = std::make_unique<fabric_builder>(_topology, clocking::realtime);
    _built->wiring().attach_all(_pool);
    // Every source of work rings a doorbell (programs posting WQEs, the mailbox) or is a known
    // time (frames in flight, node timers), so an idle fabric may sleep long: it costs no core.
    backoff_policy policy;
    policy.max_sleep = milliseconds(20);
    try {
        _driver = std::make_unique<realtime_driver>(_built->wiring(), policy);
    } catch (const std::system_error& e) {
        throw std::runtime_error(std::string("cannot set up the data plane's wake-up: ") + e.what());
    }
}

fabric::~fabric() {
    stop();
    while (!_captures.empty()) stop_capture(_captures.begin()->first);
    // Nodes hold mbufs in their queues; the pool itself lives as long as the EAL.
}

struct fabric::capture final : frame_tap {
    pcap_writer file;
    std::int64_t epoch_ns = 0;
    std::vector<link*> links;
    nic::nic_node* nic = nullptr; // a NIC's end: it also shows what the NIC loops back itself
    void on_frame(sim_time departure, std::span<const std::uint8_t> frame) override {
        file.write(epoch_ns + departure, frame);
    }
};

std::string fabric::start_capture(const std::string& endpoint, const std::string& path) {
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) return "cannot create " + path + ": " + std::strerror(errno);
    return start_capture(endpoint, fd, path);
}

std::string fabric::start_capture(const std::string& endpoint, int fd, const std::string& path) {
    if (_captures.count(endpoint)) {
        ::close(fd);
        return "a capture on " + endpoint + " is already running";
    }
    std::vector<std::string> known;
    for (std::size_t i = 0; i < _topology.links.size(); ++i) {
        const auto& l = _topology.links[i];
        for (const auto& end : {l.a, l.b}) {
            const std::string name = _topology.endpoint_name(end);
            known.push_back(name);
            if (name != endpoint) continue;
            auto c = std::make_unique<capture>();
            std::string error;
            if (!c->file.open(std::exchange(fd, -1), path, error)) return error;
            c->epoch_ns = _epoch_ns;
            const std::array<link*, 2> both = _built->cable(i);
            c->links.assign(both.begin(), both.end());
            if (end.kind == config::endpoint::host_nic) c->nic = _built->nics()[end.node][end.port].get();
            capture* raw = c.get();
            auto attach = [raw] {
                for (link* k : raw->links) k->set_tap(raw);
                if (raw->nic) raw->nic->set_loopback_tap(raw);
            };
            if (_thread.joinable())
                _driver->mail().call(attach);
            else
                attach();
            _captures[endpoint] = std::move(c);
            return {};
        }
    }
    ::close(fd);
    std::string list;
    for (const auto& k : known) list += (list.empty() ? "" : ", ") + k;
    return "no cable ends at '" + endpoint + "' (ends: " + list + ")";
}

std::int64_t fabric::stop_capture(const std::string& endpoint) {
    auto it = _captures.find(endpoint);
    if (it == _captures.end()) return -1;
    capture* raw = it->second.get();
    auto detach = [raw] {
        for (link* k : raw->links) k->set_tap(nullptr);
        if (raw->nic) raw->nic->set_loopback_tap(nullptr);
    };
    if (_thread.joinable())
        _driver->mail().call(detach);
    else
        detach();
    raw->file.close();
    const auto frames = static_cast<std::int64_t>(raw->file.frames_written());
    _captures.erase(it);
    return frames;
}

std::optional<std::size_t> fabric::cable_at(const std::string& endpoint, std::string& error) const {
    std::string known;
    for (std::size_t i = 0; i < _topology.links.size(); ++i) {
        const auto& l = _topology.links[i];
        for (const auto& end : {l.a, l.b}) {
            const std::string name = _topology.endpoint_name(end);
            if (name == endpoint) return i;
            known += (known.empty() ? "" : ", ") + name;
        }
    }
    error = "no cable ends at '" + endpoint + "' (ends: " + known + ")";
    return std::nullopt;
}

std::string fabric::set_link(const std::string& endpoint, const std::optional<fault_update>& faults,
                             std::optional<bool> up, nlohmann::json* state) {
    std::string error;
    const auto cable = cable_at(endpoint, error);
    if (!cable) return error;
    if (faults) {
        for (const auto& [name, value] :
             {std::pair{"loss", faults->loss}, std::pair{"corruption", faults->corruption},
              std::pair{"duplication", faults->duplication}, std::pair{"reordering", faults->reordering}})
            if (value && !(*value >= 0.0 && *value <= 1.0))
                return std::string(name) + " " + std::to_string(*value) + " is out of range; expected 0 to 1";
        if (faults->reorder_delay && *faults->reorder_delay < 0) return "reorder_delay must be >= 0";
    }
    const std::array<link*, 2> both = _built->cable(*cable);
    auto apply = [&] {
        for (link* k : both) {
            if (faults) {
                link_faults f = k->faults();
                f.loss = faults->loss.value_or(f.loss);
                f.corruption = faults->corruption.value_or(f.corruption);
                f.duplication = faults->duplication.value_or(f.duplication);
                f.reordering = faults->reordering.value_or(f.reordering);
                f.reorder_delay = faults->reorder_delay.value_or(f.reorder_delay);
                k->set_faults(f);
            }
            if (up) k->set_up(*up);
        }
        return nlohmann::json{{"link", endpoint}, {"up", both[0]->is_up()}, {"faults", faults_json(both[0]->faults())}};
    };
    const nlohmann::json after = _thread.joinable() ? _driver->mail().call(apply) : apply();
    if (state) *state = after;
    if (up) log::link().info("cable {} set {}", endpoint, *up ? "up" : "down");
    if (faults) log::link().info("cable {} faults now: {}", endpoint, after["faults"].dump());
    return {};
}

namespace {

// `setting`: a CPU number, or daemon_settings::dataplane_cpu_auto (the last CPU this process may
// use, when it may use two or more) or dataplane_cpu_none. -1 when nothing is chosen.
int choose_dataplane_cpu(int setting) {
    if (setting == config::daemon_settings::dataplane_cpu_none) return -1;
    cpu_set_t allowed;
    CPU_ZERO(&allowed);
    if (::sched_getaffinity(0, sizeof allowed, &allowed) != 0) return -1;
    if (setting >= 0) return setting < CPU_SETSIZE && CPU_ISSET(setting, &allowed) ? setting : -1;
    if (CPU_COUNT(&allowed) < 2) return -1;
    for (int cpu = CPU_SETSIZE - 1; cpu >= 0; --cpu)
        if (CPU_ISSET(cpu, &allowed)) return cpu;
    return -1;
}

} // namespace

void fabric::start() {
    _stop = false;
    // The data plane plays the hardware, and it busy-polls; so do most RDMA programs. Where they
    // share a CPU the scheduler gives each turns of milliseconds, and a program waiting on the
    // data plane (or the data plane on a program) waits that long: ib_write_lat's average was
    // 46-69 us on 2 cores against a median of 4. With a CPU of its own and the programs of
    // `rocefab run` kept off it, 5.6-7.7 us.
    _dataplane_cpu = choose_dataplane_cpu(_topology.daemon.dataplane_cpu);
    if (_topology.daemon.dataplane_cpu >= 0 && _dataplane_cpu < 0)
        log::daemon().warn("dataplane-cpu {} is not a CPU this daemon may run on: the data plane shares them all",
                           _topology.daemon.dataplane_cpu);
    timespec wall{};
    clock_gettime(CLOCK_REALTIME, &wall);
    _epoch_ns = std::int64_t(wall.tv_sec) * 1'000'000'000 + wall.tv_nsec;
    _thread = std::thread([this] {
        // The data plane plays the hardware: when a busy-polling program wakes it, it should get
        // the core before the program's next poll does. Raising the priority needs root
        // (CAP_SYS_NICE); without it the thread keeps the default.
        ::setpriority(PRIO_PROCESS, static_cast<id_t>(::gettid()), -10);
        // An lcore of its own: DPDK gives a mempool cache only to lcores, and without one every
        // packet buffer came from, and went back to, the pool's shared ring, first in, first
        // out, so each frame was built in the coldest of 16 k buffers. With it, the most
        // recently freed buffers, still in cache, are taken first.
        const bool registered = rte_thread_register() == 0;
        if (_dataplane_cpu >= 0) {
            cpu_set_t one;
            CPU_ZERO(&one);
            CPU_SET(_dataplane_cpu, &one);
            if (::sched_setaffinity(0, sizeof one, &one) != 0) _dataplane_cpu = -1;
        }
        _driver->run(_stop);
        if (registered) rte_thread_unregister();
    });
}

void fabric::stop() {
    if (!_thread.joinable()) return;
    _stop = true;
    _driver->mail().wake();
    _thread.join();
}

nic::nic_node* fabric::find_nic(const std::string& host, const std::string& nic_name) {
    for (std::size_t h = 0; h < _topology.hosts.size(); ++h) {
        if (_topology.hosts[h].name != host) continue;
        for (const auto& n : _built->nics()[h])
            if (n->spec().name == nic_name) return n.get();
    }
    return nullptr;
}

std::vector<nic::nic_node*> fabric::nics_of(const std::string& host) {
    std::vector<nic::nic_node*> out;
    for (std::size_t h = 0; h < _topology.hosts.size(); ++h)
        if (_topology.hosts[h].name == host)
            for (const auto& n : _built->nics()[h]) out.push_back(n.get());
    return out;
}

namespace {
// Everything `show` reports, as plain data: what the data-plane thread copies for it.
struct fabric_snapshot {
    struct nic_part {
        nic::nic_counters counters;
        nic::nic_node::resource_counts resources;
        std::vector<nic::nic_node::qp_view> qps;
    };
    std::vector<switch_emu::switch_node::snapshot_data> switches;
    std::vector<nic_part> nics; // hosts in order, their NICs in order
    std::vector<link_counters> links;
    std::vector<bool> links_up;
    std::vector<link_faults> faults;
};
} // namespace

nlohmann::json fabric::counters() {
    // On the data-plane thread only the copy: formatting, however large the fabric, is this
    // thread's, so reading the counters stalls forwarding for no more than a copy of them.
    fabric_snapshot s;
    auto copy = [this, &s] {
        const auto& switches = _built->switches();
        s.switches.resize(switches.size());
        for (std::size_t i = 0; i < switches.size(); ++i) switches[i]->snapshot(s.switches[i]);
        const sim_time now = _driver->now();
        for (const auto& host : _built->nics())
            for (const auto& n : host) s.nics.push_back({n->counters(), n->resources(), n->queue_pairs(now)});
        const wiring& w = _built->wiring();
        for (std::size_t l = 0; l < w.link_count(); ++l) {
            const link& k = w.link_at(l);
            s.links.push_back(k.counters());
            s.links_up.push_back(k.is_up());
            s.faults.push_back(k.faults());
        }
    };
    if (_thread.joinable())
        _driver->mail().call(copy);
    else
        copy();

    nlohmann::json out;
    out["fabric"] = _topology.name;
    nlohmann::json switches = nlohmann::json::array();
    for (std::size_t i = 0; i < _built->switches().size(); ++i) {
        const switch_emu::switch_node& sw = *_built->switches()[i];
        switches.push_back(switch_emu::to_json(sw.name(), sw.spec(), s.switches[i]));
    }
    out["switches"] = std::move(switches);
    nlohmann::json nics = nlohmann::json::array();
    std::size_t index = 0;
    for (const auto& host : _built->nics()) {
        for (const auto& n : host) {
            const fabric_snapshot::nic_part& part = s.nics[index++];
            nlohmann::json c;
            part.counters.for_each([&](const char* name, std::uint64_t value) { c[name] = value; });
            const auto& r = part.resources;
            nlohmann::json resources = {{"contexts", r.contexts}, {"pds", r.pds}, {"mrs", r.mrs},
                                        {"channels", r.channels}, {"cqs", r.cqs}, {"qps", r.qps}};
            nlohmann::json qps = nlohmann::json::array();
            for (const auto& q : part.qps) qps.push_back(qp_json(q));
            // The spec is fixed at construction: any thread may read it.
            nics.push_back({{"host", n->spec().host},
                            {"nic", n->spec().name},
                            {"counters", std::move(c)},
                            {"resources", std::move(resources)},
                            {"qps", std::move(qps)}});
        }
    }
    out["nics"] = std::move(nics);
    nlohmann::json links = nlohmann::json::array();
    for (std::size_t l = 0; l < s.links.size(); ++l) {
        const link_counters& c = s.links[l];
        links.push_back({{"link", _built->wiring().link_at(l).name()},
                         {"tx_frames", c.tx_frames},
                         {"tx_bytes", c.tx_bytes},
                         {"drops_link_down", c.drops_link_down},
                         {"drops_mtu", c.drops_mtu},
                         {"drops_queue_full", c.drops_queue_full},
                         {"drops_loss", c.drops_loss},
                         {"frames_corrupted", c.frames_corrupted},
                         {"frames_duplicated", c.frames_duplicated},
                         {"frames_reordered", c.frames_reordered},
                         {"duplicate_alloc_failures", c.duplicate_alloc_failures},
                         {"up", static_cast<bool>(s.links_up[l])},
                         {"faults", faults_json(s.faults[l])}});
    }
    out["links"] = std::move(links);
    // The loop's own counters are atomics, read from here. catch_up_steps moves only when the
    // loop was kept off its CPU long enough to miss time (realtime_driver.hpp).
    out["dataplane"] = {{"cpu", _dataplane_cpu},
                        {"iterations", _driver->iterations()},
                        {"sleeps", _driver->sleeps()},
                        {"catch_up_steps", _driver->catch_up_steps()}};
    return out;
}

} // namespace rocefab::control
