#!/usr/bin/python3
"""End-to-end tests: a real fabric daemon, and unmodified Debian binaries (ibverbs-utils, tshark)
running on its emulated hosts through `rocefab run`.

Run by meson (suite e2e) as:  /usr/bin/python3 fabric_e2e_test.py BUILD_DIR SOURCE_DIR [unittest args]
Each test class starts its own fabric under a private runtime directory, so the tests never
touch a fabric the user has running.
"""

import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import unittest

BUILD = os.path.abspath(sys.argv[1]) if len(sys.argv) > 1 else os.path.abspath("build")
SOURCE = os.path.abspath(sys.argv[2]) if len(sys.argv) > 2 else os.path.abspath(".")
ROCEFAB = os.path.join(BUILD, "rocefab")
TWO_HOSTS = os.path.join(SOURCE, "configs", "two-hosts.yaml")


def free_tcp_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class fabric_case(unittest.TestCase):
    """A fabric per test class, in a runtime directory of its own."""

    config = TWO_HOSTS

    @classmethod
    def setUpClass(cls):
        cls.runtime = tempfile.TemporaryDirectory(prefix="rocefab-e2e-")
        cls.env = dict(os.environ, ROCEFAB_RUNTIME_DIR=cls.runtime.name)
        cls.name = "e2e-%d" % os.getpid()
        up = cls.rocefab("up", cls.config, "--name", cls.name)
        if up.returncode != 0:
            raise RuntimeError("rocefab up failed: " + up.stdout + up.stderr)

    @classmethod
    def tearDownClass(cls):
        cls.rocefab("down", "--fabric", cls.name)
        cls.runtime.cleanup()

    @classmethod
    def rocefab(cls, *args, timeout=120, env=None):
        return subprocess.run([ROCEFAB, *args], capture_output=True, text=True, timeout=timeout,
                              env=env or cls.env)

    @classmethod
    def topology(cls):
        """The running fabric's topology, as the daemon's control socket gives it."""
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.settimeout(20)
            s.connect(os.path.join(cls.runtime.name, cls.name, "control.sock"))
            s.sendall(b'{"op":"topology"}\n')
            reply = b""
            while not reply.endswith(b"\n"):
                chunk = s.recv(65536)
                if not chunk:
                    break
                reply += chunk
        return json.loads(reply)["topology"]

    @classmethod
    def address_of(cls, host, nic=0):
        """The host's fabric address (without the prefix length): what a cluster script gives a
        client to reach a server on that host (`ib_write_bw 10.0.0.2`)."""
        for h in cls.topology()["hosts"]:
            if h["name"] == host:
                return h["nics"][nic]["address"].split("/")[0]
        raise KeyError(host)

    def run_on(self, host, *program, timeout=120):
        return self.rocefab("run", "--fabric", self.name, "--host", host, "--", *program, timeout=timeout)

    def start_on(self, host, *program):
        return subprocess.Popen([ROCEFAB, "run", "--fabric", self.name, "--host", host, "--", *program],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=self.env)

    def counters(self):
        out = self.rocefab("show", "--fabric", self.name, "--json")
        self.assertEqual(out.returncode, 0, out.stderr)
        return json.loads(out.stdout)

    def server_and_client(self, server_host, server_program, client_host, client_program, timeout=300):
        """Starts server_program on server_host, then client_program on client_host. The server
        listens only once its resources exist, so a client that finds nobody listening ("Couldn't
        connect", as ibverbs-utils and perftest say) is run again, for up to 20 s. Returns
        ((server returncode, stdout, stderr), the client's CompletedProcess)."""
        server = self.start_on(server_host, *server_program)
        deadline = time.monotonic() + 20
        while True:
            client = self.run_on(client_host, *client_program, timeout=timeout)
            if client.returncode == 0 or "Couldn't connect" not in client.stdout + client.stderr or \
                    time.monotonic() > deadline:
                break
            time.sleep(0.2)
        try:
            out, err = server.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            server.kill()
            out, err = server.communicate()
        return (server.returncode, out, err), client

    def perftest_pair(self, command, timeout=300):
        """A perftest server on h2 and its client on h1, `command` (program and options) with a
        port of their own; returns (server, client) as server_and_client does. perftest times its
        report with the CPU's cycle counter, whose rate it first fits against the wall clock over
        a few short sleeps; on a loaded 2-core machine that fit can fail ("Correlation coefficient
        r^2: ... < 0.9", then "Can't produce a report") after a run that moved every byte. A run
        whose client failed that way, and only that way, is run once more."""
        for attempt in (1, 2):
            program = [*command, "-p", str(free_tcp_port())]
            server, client = self.server_and_client("h2", program, "h1", [*program, self.address_of("h2")],
                                                    timeout=timeout)
            fit_failed = client.returncode != 0 and "Correlation coefficient r^2" in client.stdout + client.stderr
            if attempt == 2 or not fit_failed:
                return server, client

    def pingpong(self, kind="ibv_rc_pingpong", size=4096, mtu=1024, iterations=100, extra=()):
        """Server on h2, client on h1; returns (server, client) as server_and_client does."""
        port = str(free_tcp_port())
        args = ["-d", "rfab0", "-g", "1", "-s", str(size), "-m", str(mtu), "-n", str(iterations), "-p", port,
                *extra]
        return self.server_and_client("h2", [kind, *args], "h1", [kind, *args, self.address_of("h2")])


class devices_and_ports(fabric_case):
    def test_ibv_devices_lists_the_hosts_nic(self):
        for host in ("h1", "h2"):
            out = self.run_on(host, "ibv_devices")
            self.assertEqual(out.returncode, 0, out.stderr)
            self.assertRegex(out.stdout, r"rfab0\s+[0-9a-f]{16}")

    def test_ibv_devinfo_shows_an_active_roce_port_with_soft_roce_style_gids(self):
        out = self.run_on("h1", "ibv_devinfo", "-v")
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertIn("hca_id:\trfab0", out.stdout)
        self.assertRegex(out.stdout, r"state:\s+PORT_ACTIVE")
        self.assertRegex(out.stdout, r"link_layer:\s+Ethernet")
        self.assertRegex(out.stdout, r"active_mtu:\s+4096")
        self.assertRegex(out.stdout, r"GID\[\s*0\]:\s+fe80::1:ff:fe01:1, RoCE v2")
        self.assertRegex(out.stdout, r"GID\[\s*1\]:\s+::ffff:10\.0\.0\.1, RoCE v2")

    def test_each_host_sees_only_its_own_nic(self):
        h2 = self.run_on("h2", "ibv_devinfo", "-v")
        self.assertIn("::ffff:10.0.0.2", h2.stdout)
        self.assertNotIn("::ffff:10.0.0.1", h2.stdout)


class rc_pingpong(fabric_case):
    def check(self, size, mtu, iterations):
        (server_rc, server_out, server_err), client = self.pingpong(size=size, mtu=mtu, iterations=iterations,
                                                                     extra=("-c",))
        self.assertEqual(client.returncode, 0, client.stdout + client.stderr)
        self.assertEqual(server_rc, 0, server_out + server_err)
        self.assertRegex(client.stdout, r"bytes in [\d.]+ seconds = [\d.]+ Mbit/sec")
        self.assertRegex(client.stdout, r"%d iters in [\d.]+ seconds = [\d.]+ usec/iter" % iterations)

    def test_sizes_from_1_byte_to_1_mib_at_path_mtu_1024(self):
        for size, iterations in ((1, 200), (4096, 200), (65536, 50), (1 << 20, 5)):
            with self.subTest(size=size):
                self.check(size, 1024, iterations)

    def test_sizes_from_1_byte_to_1_mib_at_path_mtu_4096(self):
        for size, iterations in ((1, 200), (4096, 200), (65536, 50), (1 << 20, 5)):
            with self.subTest(size=size):
                self.check(size, 4096, iterations)

    def test_with_completion_events(self):
        self.check_events()

    def check_events(self):
        (server_rc, server_out, server_err), client = self.pingpong(size=4096, iterations=100, extra=("-e", "-c"))
        self.assertEqual(client.returncode, 0, client.stdout + client.stderr)
        self.assertEqual(server_rc, 0, server_out + server_err)


class extended_verbs(fabric_case):
    def test_cq_ex_qp_ex_and_wr_builders_move_data_between_hosts(self):
        program = os.path.join(BUILD, "tools", "integrity", "verbs-ex-check")
        port = str(free_tcp_port())
        server = self.start_on("h2", program, "--server", "-d", "rfab0", "-g", "1", "-p", port)
        client = self.run_on("h1", program, self.address_of("h2"), "-d", "rfab0", "-g", "1", "-p", port)
        server_out, server_err = server.communicate(timeout=60)
        self.assertEqual(client.returncode, 0, client.stdout + client.stderr)
        self.assertEqual(server.returncode, 0, server_out + server_err)
        self.assertEqual(client.stdout, "verbs-ex-check: ok\n")
        self.assertEqual(server_out, "verbs-ex-check: ok\n")


class capture_and_tshark(fabric_case):
    def test_every_frame_on_a_cable_decodes_as_rocev2_without_warnings(self):
        pcap = os.path.join(self.runtime.name, "h1.pcap")
        start = self.rocefab("capture", "--fabric", self.name, "h1/rfab0", "-w", pcap)
        self.assertEqual(start.returncode, 0, start.stderr)
        (server_rc, _, _), client = self.pingpong(size=5000, mtu=1024, iterations=20, extra=("-c",))
        self.assertEqual(client.returncode, 0, client.stderr)
        stop = self.rocefab("capture", "--fabric", self.name, "h1/rfab0", "--stop")
        self.assertEqual(stop.returncode, 0, stop.stderr)
        fields = subprocess.run(["tshark", "-r", pcap, "-T", "fields", "-e", "frame.protocols", "-e",
                                 "infiniband.bth.opcode"], capture_output=True, text=True)
        self.assertEqual(fields.returncode, 0, fields.stderr)
        lines = [l for l in fields.stdout.splitlines() if l.strip()]
        self.assertGreater(len(lines), 40)
        for line in lines:
            self.assertIn("udp:infiniband", line)
        opcodes = {l.split("\t")[1] for l in lines}
        # SEND first/middle/last (0, 1, 2) and ACK (17), as numbers tshark decoded from the BTH.
        self.assertTrue({"0", "1", "2", "17"} <= opcodes, opcodes)
        verbose = subprocess.run(["tshark", "-r", pcap, "-V"], capture_output=True, text=True)
        self.assertNotIn("Malformed", verbose.stdout)
        self.assertNotIn("Expert Info (Error", verbose.stdout)
        self.assertNotIn("Expert Info (Warning", verbose.stdout)


class leaf_spine(fabric_case):
    config = os.path.join(SOURCE, "configs", "leaf-spine.yaml")

    def test_rc_pingpong_crosses_leaf_spine_leaf_with_ecmp_between_the_spines(self):
        """h1 (leaf1) to h8 (leaf4): routed twice, the packets' TTL is the host route's, not the 1
        ibv_rc_pingpong asks for (as the kernel's RoCE address resolution does)."""
        port = str(free_tcp_port())
        args = ["-d", "rfab0", "-g", "1", "-n", "200", "-p", port]
        server = self.start_on("h8", "ibv_rc_pingpong", *args)
        client = None
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            client = self.run_on("h1", "ibv_rc_pingpong", *args, self.address_of("h8"))
            if "Couldn't connect" not in client.stderr + client.stdout:
                break
            time.sleep(0.2)
        server_out, server_err = server.communicate(timeout=120)
        self.assertEqual(client.returncode, 0, client.stdout + client.stderr)
        self.assertEqual(server.returncode, 0, server_out + server_err)
        switches = {s["name"]: {p["port"]: p for p in s["ports"]} for s in self.counters()["switches"]}
        self.assertGreater(switches["leaf1"]["swp31"]["tx_packets"] + switches["leaf1"]["swp32"]["tx_packets"], 0)
        for name, ports in switches.items():
            for port_name, p in ports.items():
                self.assertEqual(p["drops_ttl_expired"], 0, name + "/" + port_name)
        # The two directions of the connection hash onto the spines independently; across the
        # spines together every packet crossed one.
        spines = sum(p["tx_packets"] for s in ("spine1", "spine2") for p in switches[s].values())
        self.assertGreaterEqual(spines, 2 * 200)


class robustness(fabric_case):
    def test_a_program_killed_mid_transfer_leaves_the_daemon_serving_and_frees_its_objects(self):
        port = str(free_tcp_port())
        args = ["-d", "rfab0", "-g", "1", "-s", "65536", "-n", "1000000", "-p", port]
        server = self.start_on("h2", "ibv_rc_pingpong", *args)
        time.sleep(0.5)
        client = self.start_on("h1", "ibv_rc_pingpong", *args, self.address_of("h2"))
        # Wait until data moves, then kill both ends without warning.
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            sends = {n["host"]: n["counters"]["rdma_sends"] for n in self.counters()["nics"]}
            if sends.get("h1", 0) > 100 and sends.get("h2", 0) > 100:
                break
            time.sleep(0.1)
        # Each end's QP is listed as `rdma resource show qp` lists it: RTS, connected to the other.
        qps = {n["host"]: n["qps"] for n in self.counters()["nics"]}
        self.assertEqual([q["state"] for q in qps["h1"]], ["RTS"], qps)
        self.assertEqual([q["state"] for q in qps["h2"]], ["RTS"], qps)
        self.assertEqual(qps["h1"][0]["rqpn"], qps["h2"][0]["lqpn"])
        self.assertEqual(qps["h2"][0]["rqpn"], qps["h1"][0]["lqpn"])
        self.assertEqual(qps["h1"][0]["type"], "RC")
        client.send_signal(signal.SIGKILL)
        server.send_signal(signal.SIGKILL)
        client.communicate()
        server.communicate()
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            resources = [n["resources"] for n in self.counters()["nics"]]
            if all(sum(r.values()) == 0 for r in resources):
                break
            time.sleep(0.1)
        self.assertTrue(all(sum(r.values()) == 0 for r in resources), resources)
        # And the fabric still carries traffic.
        (server_rc, _, _), again = self.pingpong(size=4096, iterations=20, extra=("-c",))
        self.assertEqual(again.returncode, 0, again.stderr)
        self.assertEqual(server_rc, 0)


class idle_fabric(fabric_case):
    def test_an_idle_fabric_does_not_need_a_core(self):
        with open(os.path.join(self.runtime.name, self.name, "daemon.pid")) as f:
            pid = int(f.read())

        def cpu_ticks():
            with open("/proc/%d/stat" % pid) as f:
                fields = f.read().rsplit(")", 1)[1].split()
            return int(fields[11]) + int(fields[12])  # utime + stime

        time.sleep(0.5)
        loop_before = self.counters()["dataplane"]
        before = cpu_ticks()
        time.sleep(3)
        used = (cpu_ticks() - before) / os.sysconf("SC_CLK_TCK") / 3
        # A poll-mode data plane would use a whole core (1.0); sleeping on its doorbell, it
        # uses about 1 %. The bound leaves room for a loaded CI machine.
        self.assertLess(used, 0.10)
        # `rocefab show` reports the loop's own counters: it went on and slept between looks.
        loop_after = self.counters()["dataplane"]
        self.assertGreater(loop_after["iterations"], loop_before["iterations"])
        self.assertGreater(loop_after["sleeps"], loop_before["sleeps"])
        self.assertGreaterEqual(loop_after["catch_up_steps"], loop_before["catch_up_steps"])
        text = self.rocefab("show", "--fabric", self.name)
        self.assertEqual(text.returncode, 0, text.stderr)
        self.assertRegex(text.stdout, r"data plane: \d+ iterations, \d+ sleeps, \d+ catch-up steps")


class command_line_errors(unittest.TestCase):
    """What a user sees when something is wrong: one clear line, no traceback, no crash."""

    def setUp(self):
        self.runtime = tempfile.TemporaryDirectory(prefix="rocefab-e2e-")
        self.env = dict(os.environ, ROCEFAB_RUNTIME_DIR=self.runtime.name)

    def tearDown(self):
        self.runtime.cleanup()

    def rocefab(self, *args):
        return subprocess.run([ROCEFAB, *args], capture_output=True, text=True, timeout=60, env=self.env)

    def test_bad_configs_name_file_line_and_key(self):
        cases = {
            "unknown-key.yaml": ("unknown key 'sped'", "links[1].sped"),
            "duplicate-address.yaml": ("duplicate address 10.0.0.1", "hosts[1].nics[0].address"),
            "dangling-link.yaml": ("unknown node 'h3'", "links[1].a"),
        }
        for name, (words, key) in cases.items():
            with self.subTest(config=name):
                path = os.path.join(SOURCE, "configs", "bad", name)
                out = self.rocefab("up", path)
                self.assertEqual(out.returncode, 2)
                self.assertEqual(out.stdout, "")
                lines = out.stderr.strip().splitlines()
                self.assertEqual(len(lines), 1, out.stderr)
                self.assertRegex(lines[0], r"^rocefab: .*%s:\d+:\d+: " % name)
                self.assertIn(key, lines[0])
                self.assertIn(words, lines[0])

    def test_run_with_no_fabric_running_says_so_in_one_line(self):
        out = self.rocefab("run", "--host", "h1", "--", "ibv_devices")
        self.assertNotEqual(out.returncode, 0)
        self.assertEqual(out.stderr, "rocefab: no fabric is running (start one with: rocefab up [CONFIG])\n")

    def test_run_on_a_host_that_does_not_exist_names_the_hosts_there_are(self):
        name = "e2e-hosts-%d" % os.getpid()
        self.assertEqual(self.rocefab("up", TWO_HOSTS, "--name", name).returncode, 0)
        try:
            out = self.rocefab("run", "--host", "h3", "--", "ibv_devices")
            self.assertNotEqual(out.returncode, 0)
            self.assertEqual(out.stderr, "rocefab: fabric %s has no host 'h3' (hosts: h1, h2)\n" % name)
        finally:
            self.rocefab("down", "--fabric", name)

    def test_down_with_a_program_still_attached_stops_promptly(self):
        name = "e2e-down-%d" % os.getpid()
        self.assertEqual(self.rocefab("up", TWO_HOSTS, "--name", name).returncode, 0)
        program = subprocess.Popen([ROCEFAB, "run", "--fabric", name, "--host", "h2", "--", "ibv_rc_pingpong", "-d",
                                    "rfab0", "-g", "1", "-p", str(free_tcp_port())],
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=self.env)
        try:
            time.sleep(0.5)  # the program holds a context, a PD, an MR, CQs and a QP
            started = time.monotonic()
            out = self.rocefab("down", "--fabric", name)
            self.assertEqual(out.returncode, 0, out.stderr)
            self.assertLess(time.monotonic() - started, 10)
            self.assertEqual(self.rocefab("list").stdout, "")
        finally:
            program.kill()
            program.communicate()

    def test_two_fabrics_run_side_by_side(self):
        names = ["e2e-a-%d" % os.getpid(), "e2e-b-%d" % os.getpid()]
        try:
            for n in names:
                out = self.rocefab("up", TWO_HOSTS, "--name", n)
                self.assertEqual(out.returncode, 0, out.stderr)
            listed = self.rocefab("list").stdout.split()
            self.assertEqual(sorted(listed), sorted(names))
            ambiguous = self.rocefab("run", "--host", "h1", "--", "ibv_devices")
            self.assertIn("several fabrics are running", ambiguous.stderr)
            for n in names:
                out = self.rocefab("run", "--fabric", n, "--host", "h1", "--", "ibv_devices")
                self.assertEqual(out.returncode, 0, out.stderr)
        finally:
            for n in names:
                self.rocefab("down", "--fabric", n)


if __name__ == "__main__":
    unittest.main(argv=[sys.argv[0], *sys.argv[3:]], verbosity=2)
