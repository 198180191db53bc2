#!/usr/bin/python3
"""End-to-end: the stacks real deployments are built on, unmodified Debian binaries over the fabric.
UCX 1.13 (ucx-utils: ucx_info, ucx_perftest), Open MPI 4.1 with the UCX PML (openmpi-bin, ranks
placed on emulated hosts by build/rocefab-launch as mpirun's rsh agent), libfabric 1.17
(libfabric-bin: fi_pingpong).

Every transfer test also reads the NIC counters before and after, and asserts that the bytes the
program reports moving crossed the emulated NICs: UCX_TLS never names tcp or shared memory, and
the counters show it did not fall back to them anyway.

Run by meson (suite e2e) as:  /usr/bin/python3 stacks_test.py BUILD_DIR SOURCE_DIR [unittest args]
"""

import os
import re
import shutil
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fabric_e2e_test as base  # noqa: E402  (shares the fabric fixture and the argv handling)
from fabric_e2e_test import fabric_case, free_tcp_port  # noqa: E402

LEAF_SPINE = os.path.join(base.SOURCE, "configs", "leaf-spine.yaml")
LAUNCHER = os.path.join(base.BUILD, "rocefab-launch")
MPI_PROGRAM = os.path.join(base.BUILD, "tests", "e2e", "programs", "mpi-pingpong-allreduce")

# ucx_perftest's last row: Final: ITERATIONS  overhead(50%, avg, overall)  MB/s(avg, overall)  msg/s(avg, overall)
UCX_FINAL = re.compile(r"^Final:\s+(\d+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+(\d+)\s+(\d+)", re.M)


def require_program(name, package):
    if shutil.which(name) is None:
        raise unittest.SkipTest("%s is not installed (Debian package %s)" % (name, package))


class stacks_case(fabric_case):
    """A fabric whose hosts reach each other's sockets at their fabric addresses (address_of)."""

    def nic_counters(self):
        return {n["host"] + "/" + n["nic"]: n["counters"] for n in self.counters()["nics"]}

    def moved(self, before, after, nic, counter):
        return after[nic][counter] - before[nic][counter]


class ucx(stacks_case):
    """UCX finds the emulated device as it finds a ConnectX and moves data over it."""

    @classmethod
    def setUpClass(cls):
        require_program("ucx_perftest", "ucx-utils")
        super().setUpClass()

    def test_ucx_info_lists_rfab0_with_rc_verbs_and_ud_verbs(self):
        out = self.run_on("h1", "ucx_info", "-d", timeout=60)
        self.assertEqual(out.returncode, 0, out.stdout + out.stderr)
        self.assertIn("# Memory domain: rfab0", out.stdout)
        for transport in ("rc_verbs", "ud_verbs"):
            self.assertRegex(out.stdout, r"#\s+Transport: %s\n#\s+Device: rfab0:1\n" % transport)

    def perftest(self, transports, test, size, iterations):
        """ucx_perftest's server on h2 and client on h1 with UCX_TLS=transports; returns the
        client's Final row as numbers and the NIC counters before and after."""
        port = str(free_tcp_port())
        env = ("env", "UCX_TLS=" + transports, "UCX_NET_DEVICES=rfab0:1", "UCX_WARN_UNUSED_ENV_VARS=n")
        before = self.nic_counters()
        server = self.start_on("h2", *env, "ucx_perftest", "-p", port)
        client = None
        try:
            for _ in range(100):  # the server listens once UCX is up
                client = self.run_on("h1", *env, "ucx_perftest", "-p", port, self.address_of("h2"), "-t", test,
                                     "-s", str(size), "-n", str(iterations), timeout=60)
                if client.returncode == 0 or "Connection refused" not in client.stdout + client.stderr:
                    break
                time.sleep(0.2)
            try:
                server_out, server_err = server.communicate(timeout=60)
            except subprocess.TimeoutExpired:
                server.kill()
                server_out, server_err = server.communicate()
                self.fail("ucx_perftest's server did not finish: %s%s\nclient: %s%s"
                          % (server_out, server_err, client.stdout, client.stderr))
        finally:
            if server.poll() is None:
                server.kill()
                server.communicate()
        after = self.nic_counters()
        self.assertEqual(client.returncode, 0, client.stdout + client.stderr)
        self.assertEqual(server.returncode, 0, server_out + server_err)
        final = UCX_FINAL.search(client.stdout)
        self.assertIsNotNone(final, client.stdout)
        print("\n  UCX_TLS=%s %s %d B: %s" % (transports, test, size, final.group(0)), file=sys.stderr)
        figures = [float(x) for x in final.groups()]
        self.assertEqual(int(figures[0]), iterations)
        return figures, before, after

    def check_bandwidth(self, transports, test):
        size, iterations = 65536, 500
        figures, before, after = self.perftest(transports, test, size, iterations)
        self.assertGreater(figures[4], 0.0)  # MB/s, average
        # The payload crossed h1's cable out and h2's in (plus headers, acks and UCX's own messages).
        self.assertGreaterEqual(self.moved(before, after, "h1/rfab0", "port_xmit_data"), size * iterations)
        self.assertGreaterEqual(self.moved(before, after, "h2/rfab0", "port_rcv_data"), size * iterations)

    def check_latency(self, transports):
        iterations = 1000
        figures, before, after = self.perftest(transports, "ucp_am_lat", 8, iterations)
        self.assertGreater(figures[2], 0.0)  # usec, average
        # Each iteration is a message each way: at least one frame each, on both cables.
        for nic in ("h1/rfab0", "h2/rfab0"):
            self.assertGreaterEqual(self.moved(before, after, nic, "port_xmit_packets"), iterations)
            self.assertGreaterEqual(self.moved(before, after, nic, "port_rcv_packets"), iterations)

    def test_tag_bw_over_rc_verbs_and_ud_verbs(self):
        self.check_bandwidth("rc_verbs,ud_verbs", "tag_bw")

    def test_ucp_put_bw_over_rc_verbs_and_ud_verbs(self):
        self.check_bandwidth("rc_verbs,ud_verbs", "ucp_put_bw")

    def test_ucp_am_lat_over_rc_verbs_and_ud_verbs(self):
        self.check_latency("rc_verbs,ud_verbs")

    def test_tag_bw_over_ud_verbs(self):
        self.check_bandwidth("ud_verbs", "tag_bw")

    def test_ucp_put_bw_over_ud_verbs(self):
        self.check_bandwidth("ud_verbs", "ucp_put_bw")

    def test_ucp_am_lat_over_ud_verbs(self):
        self.check_latency("ud_verbs")


class launcher(stacks_case):
    """build/rocefab-launch takes what an rsh/ssh agent takes and runs it on the emulated host."""

    def launch(self, *args, env=None):
        return subprocess.run([LAUNCHER, *args], capture_output=True, text=True, timeout=60,
                              env=env or self.env)

    def test_runs_the_command_line_through_a_shell_on_the_named_host(self):
        # As ssh does, the words are joined and a shell reads them: quotes and $ are the shell's.
        out = self.launch("h2", "echo", '"$ROCEFAB_HOST sees"', "$(ibv_devices | grep -c rfab0)", "nic")
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertEqual(out.stdout, "h2 sees 1 nic\n")

    def test_the_command_runs_under_the_hosts_name(self):
        # Launchers key per-node state on the node's name (Open MPI's session directories); as root
        # the launcher can always give the command a UTS namespace of its own.
        out = self.launch("h2", "hostname")
        self.assertEqual(out.returncode, 0, out.stderr)
        if os.geteuid() == 0:
            self.assertEqual(out.stdout, "h2\n")
        else:
            self.assertIn(out.stdout.strip(), ("h2", os.uname().nodename))
        self.assertEqual(subprocess.run(["hostname"], capture_output=True, text=True).stdout.strip(),
                         os.uname().nodename)

    def test_ignores_ssh_options_before_the_host(self):
        out = self.launch("-x", "-o", "BatchMode=yes", "-T", "h1", "echo", "$ROCEFAB_HOST")
        self.assertEqual((out.returncode, out.stdout), (0, "h1\n"), out.stderr)

    def test_passes_the_commands_exit_status_back(self):
        self.assertEqual(self.launch("h1", "exit", "7").returncode, 7)

    def test_lands_on_the_fabric_its_caller_runs_on(self):
        # Another fabric is up as well: ROCEFAB_FABRIC, which rocefab run exports, chooses.
        other = "e2e-other-%d" % os.getpid()
        up = self.rocefab("up", base.TWO_HOSTS, "--name", other)
        self.assertEqual(up.returncode, 0, up.stdout + up.stderr)
        try:
            out = self.run_on("h1", LAUNCHER, "h2", "echo", "$ROCEFAB_FABRIC")
            self.assertEqual((out.returncode, out.stdout), (0, self.name + "\n"), out.stderr)
            alone = self.launch("h2", "true")
            self.assertNotEqual(alone.returncode, 0)
            self.assertIn("several fabrics are running", alone.stderr)
        finally:
            self.rocefab("down", "--fabric", other)

    def test_an_unknown_host_fails_with_the_hosts_the_fabric_has(self):
        out = self.launch("h9", "true")
        self.assertNotEqual(out.returncode, 0)
        self.assertIn("has no host 'h9' (hosts: h1, h2)", out.stderr)

    def test_without_a_command_it_fails_as_ssh_does(self):
        out = self.launch("h1")
        self.assertEqual(out.returncode, 255)
        self.assertIn("usage: rocefab-launch", out.stderr)


class open_mpi(stacks_case):
    """Stock mpirun places 4 ranks on 4 hosts of leaf-spine through rocefab-launch; the UCX PML
    carries a checked ping-pong and allreduce of 1 MiB over the fabric."""

    config = LEAF_SPINE

    @classmethod
    def setUpClass(cls):
        require_program("mpirun", "openmpi-bin")
        if not os.path.exists(MPI_PROGRAM):
            raise unittest.SkipTest("the MPI test program was not built: mpicc is missing (Debian package libopenmpi-dev)")
        super().setUpClass()

    def test_ping_pong_and_allreduce_of_1_mib_on_four_hosts(self):
        env = dict(self.env, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
                   OMPI_MCA_plm_rsh_agent=LAUNCHER)
        before = self.nic_counters()
        spine_before = self.spine_bytes()
        out = self.rocefab("run", "--fabric", self.name, "--host", "h1", "--",
                           "mpirun", "-H", "h1,h2,h3,h4", "--mca", "pml", "ucx", "--mca", "btl", "self",
                           "-x", "UCX_TLS=rc_verbs,ud_verbs,self", "-x", "UCX_WARN_UNUSED_ENV_VARS=n",
                           MPI_PROGRAM, str(1 << 20), "20", timeout=120, env=env)
        after = self.nic_counters()
        self.assertEqual(out.returncode, 0, out.stdout + out.stderr)
        for rank, host in enumerate(("h1", "h2", "h3", "h4")):
            self.assertIn("rank %d of 4 on " % rank, out.stdout)
            self.assertRegex(out.stdout, r"rank \d of 4 on \S+ \(emulated host %s\)" % host)
        pingpong = re.search(r"^ping-pong ok: rank 0 <-> rank 3, 20 round trips of 1048576 bytes checked, "
                             r"[\d.]+ us a round trip, ([\d.]+) MB/s$", out.stdout, re.M)
        allreduce = re.search(r"^allreduce ok: 4 ranks, 1048576 bytes of MPI_INT32_T summed and every element "
                              r"checked on every rank, [\d.]+ ms$", out.stdout, re.M)
        self.assertIsNotNone(pingpong, out.stdout + out.stderr)
        self.assertIsNotNone(allreduce, out.stdout + out.stderr)
        print("\n  " + pingpong.group(0) + "\n  " + allreduce.group(0), file=sys.stderr)
        mib = 1 << 20
        # Rank 0 (h1) and rank 3 (h4) sent each other 20 MiB, through both leaves and a spine.
        for nic in ("h1/rfab0", "h4/rfab0"):
            self.assertGreaterEqual(self.moved(before, after, nic, "port_xmit_data"), 20 * mib)
            self.assertGreaterEqual(self.moved(before, after, nic, "port_rcv_data"), 20 * mib)
        self.assertGreaterEqual(self.spine_bytes() - spine_before, 40 * mib)
        # An allreduce of 1 MiB on 4 ranks has each rank send and receive at least 1.5 MiB (a ring's
        # 2 (p-1)/p of the buffer; other algorithms move more).
        for nic in ("h2/rfab0", "h3/rfab0"):
            self.assertGreaterEqual(self.moved(before, after, nic, "port_xmit_data"), 3 * mib // 2)
            self.assertGreaterEqual(self.moved(before, after, nic, "port_rcv_data"), 3 * mib // 2)

    def spine_bytes(self):
        """Bytes the spines forwarded: what crossed from one leaf to another."""
        total = 0
        for switch in self.counters()["switches"]:
            if switch["name"].startswith("spine"):
                total += sum(p.get("tx_bytes", 0) for p in switch["ports"])
        return total


# fi_pingpong's result row: size  #sent  =#ack  total  time  MB/sec  usec/xfer  Mxfers/sec
FI_ROW = re.compile(r"^(\S+)\s+(\d+)\s+=(\d+)\s+(\S+)\s+([\d.]+)s\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)$", re.M)


class fi_pingpong_case(stacks_case):
    """libfabric's verbs provider over the emulated device, with fabtests' fi_pingpong checking
    every byte (-c)."""

    @classmethod
    def setUpClass(cls):
        require_program("fi_pingpong", "libfabric-bin")
        super().setUpClass()

    def pingpong(self, provider, endpoint, size=65536, iterations=100):
        port = str(free_tcp_port())
        args = ("fi_pingpong", "-p", provider, "-e", endpoint, "-I", str(iterations), "-S", str(size), "-c")
        before = self.nic_counters()
        server = self.start_on("h2", *args, "-B", port)
        client = None
        try:
            for _ in range(100):  # the server listens once its endpoint exists
                client = self.run_on("h1", *args, "-P", port, self.address_of("h2"), timeout=60)
                if client.returncode == 0 or "Connection refused" not in client.stdout + client.stderr:
                    break
                time.sleep(0.2)
            server_out, server_err = server.communicate(timeout=60)
        finally:
            if server.poll() is None:
                server.kill()
                server.communicate()
        after = self.nic_counters()
        self.assertEqual(client.returncode, 0, client.stdout + client.stderr)
        self.assertEqual(server.returncode, 0, server_out + server_err)
        row = FI_ROW.search(client.stdout)
        self.assertIsNotNone(row, client.stdout)
        print("\n  fi_pingpong -p '%s' -e %s: %s" % (provider, endpoint, row.group(0)), file=sys.stderr)
        self.assertEqual((int(row.group(2)), int(row.group(3))), (iterations, iterations))
        self.assertGreater(float(row.group(6)), 0.0)
        # Each iteration is a message each way.
        for nic in ("h1/rfab0", "h2/rfab0"):
            self.assertGreaterEqual(self.moved(before, after, nic, "port_xmit_data"), size * iterations)



class libfabric(fi_pingpong_case):
    """The verbs provider's UD endpoints under ofi_rxd, and what ofi_rxm asks of the device."""

    def test_fi_pingpong_rdm_over_verbs_ofi_rxd(self):
        self.pingpong("verbs;ofi_rxd", "rdm")

    def test_completion_queues_as_deep_as_ofi_rxm_asks(self):
        # ofi_rxm sizes its CQ for a universe of peers (262144 entries) and fails its endpoint
        # when the device refuses; a ConnectX reports max_cqe 4194303 and accepts up to it.
        if subprocess.run(["/usr/bin/python3", "-c", "import pyverbs"], capture_output=True).returncode != 0:
            self.skipTest("pyverbs is not installed (Debian package python3-pyverbs)")
        script = """
import errno
from pyverbs.device import Context
from pyverbs.cq import CQ
from pyverbs.pyverbs_error import PyverbsRDMAError
ctx = Context(name='rfab0')
max_cqe = ctx.query_device().max_cqe
print('max_cqe', max_cqe)
for depth in (262144, max_cqe):
    cq = CQ(ctx, depth)
    print('created', depth)
    cq.close()
try:
    CQ(ctx, max_cqe + 1)
    print('created beyond max_cqe')
except PyverbsRDMAError as e:
    print('beyond max_cqe', errno.errorcode.get(e.error_code, e.error_code))
"""
        out = self.run_on("h1", "/usr/bin/python3", "-c", script)
        self.assertEqual(out.returncode, 0, out.stdout + out.stderr)
        self.assertEqual(out.stdout.split("\n"), ["max_cqe 4194303", "created 262144", "created 4194303",
                                                   "beyond max_cqe EINVAL", ""])



class libfabric_rdma_cm(fi_pingpong_case):
    """libfabric's verbs provider over rdma_cm: MSG endpoints, and ofi_rxm's RDM endpoints on top
    of them. The server names no address: the provider binds a passive id to localhost, finds no
    device behind it and listens on the device's own address, which the client connects to."""

    def test_fi_pingpong_msg_over_verbs(self):
        self.pingpong("verbs", "msg")

    def test_fi_pingpong_rdm_over_verbs_ofi_rxm(self):
        self.pingpong("verbs;ofi_rxm", "rdm")

if __name__ == "__main__":
    unittest.main(argv=[sys.argv[0], *sys.argv[3:]], verbosity=2)
