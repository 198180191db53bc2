#!/usr/bin/python3
"""What a program sees inside `rocefab run`: its host's own network namespace (reachable by
the host's fabric address, isolated from other fabrics), the device as programs probe it
(/dev/infiniband, /sys/class/infiniband*, ibv_get_sysfs_path), nothing left on the machine
afterwards, and the one-line fallback for a runner that may not enter the host's namespace.

Needs root: it compares the machine's state as root sees it, and creates an unprivileged user
for the fallback and for a fabric started without root.

Run by meson (suite e2e) as:  /usr/bin/python3 host_view_test.py BUILD_DIR SOURCE_DIR CASE
"""

import contextlib
import ipaddress
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fabric_e2e_test import ROCEFAB, TWO_HOSTS, fabric_case  # noqa: E402
from security_test import (TEST_USER, as_test_user, install_for_test_user, remove_test_user,  # noqa: E402
                           shared_fabric, test_user)

FALLBACK = "runs on the machine's network"

# Listens on every address of its host, says "listening", answers one connection with a token.
LISTENER = """
import socket, sys
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("0.0.0.0", int(sys.argv[1])))
s.listen()
print("listening", flush=True)
c, peer = s.accept()
c.sendall(b"hello from h2 to " + peer[0].encode())
c.close()
"""

CONNECT = """
import socket, sys
try:
    with socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=5) as s:
        print(s.recv(100).decode())
except OSError as e:
    print("refused" if isinstance(e, ConnectionRefusedError) else "error " + str(e))
"""

PROBE_DEVICE = """
import ctypes, os, stat
for path in ("/dev/infiniband/uverbs0", "/dev/infiniband/rdma_cm"):
    st = os.stat(path)
    fd = os.open(path, os.O_RDWR)
    os.close(fd)
    print(path, "chr" if stat.S_ISCHR(st.st_mode) else "not-chr", "rw" if os.access(path, os.R_OK | os.W_OK) else "no-rw")
verbs = ctypes.CDLL("libibverbs.so.1")
verbs.ibv_get_sysfs_path.restype = ctypes.c_char_p
print("sysfs_path", verbs.ibv_get_sysfs_path().decode())
"""


def machine_state():
    """What a fabric must leave as it found it: the machine's /dev, /sys/class, named network
    namespaces and links."""
    def run(*command):
        return subprocess.run(command, capture_output=True, text=True, check=True).stdout

    links = sorted(line.split(":")[1].strip().split("@")[0] for line in run("ip", "-o", "link").splitlines())
    return {"dev": sorted(os.listdir("/dev")), "dev_infiniband": os.path.exists("/dev/infiniband"),
            "sys_class": sorted(os.listdir("/sys/class")),
            "sys_class_infiniband": os.path.exists("/sys/class/infiniband"),
            "netns": run("ip", "netns", "list"), "links": links, "mounts": mount_points()}


def mount_points():
    with open("/proc/self/mountinfo") as f:
        return sorted(line.split()[4] for line in f)


def net_namespaces_of(pid):
    """The network namespaces a process holds by descriptor, as inode numbers."""
    held = set()
    for fd in os.listdir("/proc/%d/fd" % pid):
        try:
            target = os.readlink("/proc/%d/fd/%s" % (pid, fd))
        except OSError:
            continue
        if target.startswith("net:["):
            held.add(target)
    return held


def live_namespaces_with(inodes, macs):
    """Of the network namespaces some process is in or holds a descriptor of, those numbered as
    one of `inodes` that still carry an interface with one of `macs`. The kernel hands a freed
    namespace's number to the next new namespace at once (other fabrics on the machine make
    them too), so a number alone does not say the namespace lived on: our MACs do."""
    found = set()
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            paths = ["/proc/%s/ns/net" % pid] + ["/proc/%s/fd/%s" % (pid, fd) for fd in os.listdir("/proc/%s/fd" % pid)]
        except OSError:
            continue
        for path in paths:
            try:
                target = os.readlink(path)
            except OSError:
                continue
            if target not in inodes:
                continue
            links = subprocess.run(["nsenter", "--net=" + path, "ip", "-o", "link"], capture_output=True, text=True)
            if any(mac in links.stdout for mac in macs):
                found.add(target)
    return found


@unittest.skipUnless(os.geteuid() == 0, "compares the machine's /dev, /sys and links as root sees them")
class host_view_case(fabric_case):
    @classmethod
    def setUpClass(cls):
        cls.before = machine_state()
        super().setUpClass()

    def daemon_pid(self):
        with open(os.path.join(self.runtime.name, self.name, "daemon.pid")) as f:
            return int(f.read())


class fabrics_side_by_side(host_view_case):
    def test_two_fabrics_each_run_rc_pingpong_on_the_default_port_at_once(self):
        other = self.name + "-b"
        up = self.rocefab("up", TWO_HOSTS, "--name", other)
        self.assertEqual(up.returncode, 0, up.stdout + up.stderr)
        try:
            args = ["ibv_rc_pingpong", "-d", "rfab0", "-g", "1", "-n", "200"]  # port 18515, the default
            servers = [subprocess.Popen([ROCEFAB, "run", "--fabric", f, "--host", "h2", "--", *args],
                                        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=self.env)
                       for f in (self.name, other)]
            clients = []
            deadline = time.monotonic() + 20
            for f in (self.name, other):
                while True:  # until that fabric's server listens
                    client = subprocess.Popen([ROCEFAB, "run", "--fabric", f, "--host", "h1", "--", *args,
                                               self.address_of("h2")],
                                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=self.env)
                    time.sleep(0.3)
                    if client.poll() is None or client.returncode == 0 or time.monotonic() > deadline:
                        break
                    client.communicate()
                clients.append(client)
            for f, p in zip((self.name, other, self.name, other), clients + servers):
                out, err = p.communicate(timeout=60)
                self.assertEqual(p.returncode, 0, out + err)
                self.assertIn("200 iters", out)
                self.assertNotIn("Couldn't listen", err)
                if p in clients:
                    print("\n  fabric %s: %s" % (f, " ".join(out.split("\n")[-3:]).strip()), file=sys.stderr)
        finally:
            self.rocefab("down", "--fabric", other)


class hosts_reachable_by_address(host_view_case):
    @contextlib.contextmanager
    def listener_on_h2(self, port):
        """LISTENER on h2, listening on `port` for the body of the with."""
        listener = subprocess.Popen([ROCEFAB, "run", "--fabric", self.name, "--host", "h2", "--", sys.executable, "-c",
                                     LISTENER, port], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                    env=self.env)
        try:
            if listener.stdout.readline().strip() != "listening":
                listener.kill()
                self.fail("the listener on h2 did not start: " + listener.communicate()[1])
            yield
        finally:
            listener.kill()
            listener.communicate()

    def test_a_tcp_connect_to_another_hosts_address_reaches_its_listener_and_loopback_does_not(self):
        port = "18600"
        with self.listener_on_h2(port):
            # h1's loopback is h1's own: nothing listens there.
            local = self.run_on("h1", sys.executable, "-c", CONNECT, "127.0.0.1", port)
            self.assertEqual(local.stdout.strip(), "refused", local.stdout + local.stderr)
            remote = self.run_on("h1", sys.executable, "-c", CONNECT, self.address_of("h2"), port)
            self.assertEqual(remote.stdout.strip(), "hello from h2 to " + self.address_of("h1"),
                             remote.stdout + remote.stderr)
            self.assertEqual(remote.stderr, "", "no fallback line when the host view is complete")

    def test_the_fabrics_host_names_resolve_to_their_addresses_and_the_machines_hosts_file_is_untouched(self):
        with open("/etc/hosts") as f:
            machine_hosts = f.read()
        port = "18601"
        with self.listener_on_h2(port):
            # As on a cluster whose nodes know each other's names (mpirun -H h1,h2; ib_write_bw h2).
            remote = self.run_on("h1", sys.executable, "-c", CONNECT, "h2", port)
            self.assertEqual(remote.stdout.strip(), "hello from h2 to " + self.address_of("h1"),
                             remote.stdout + remote.stderr)
        names = self.run_on("h2", "getent", "hosts", "h1", "h2-rfab0", "localhost")
        self.assertEqual(names.returncode, 0, names.stdout + names.stderr)
        self.assertRegex(names.stdout, r"(?m)^%s\s+h1\b" % re.escape(self.address_of("h1")))
        self.assertRegex(names.stdout, r"(?m)^%s\s+.*\bh2-rfab0\b" % re.escape(self.address_of("h2")))
        self.assertIn("localhost", names.stdout)  # the machine's own entries follow the fabric's
        with open("/etc/hosts") as f:
            self.assertEqual(f.read(), machine_hosts)


class device_view(host_view_case):
    def test_dev_infiniband_nodes_open_and_sysfs_path_is_slash_sys(self):
        out = self.run_on("h1", sys.executable, "-c", PROBE_DEVICE)
        self.assertEqual(out.returncode, 0, out.stdout + out.stderr)
        self.assertIn("/dev/infiniband/uverbs0 chr rw", out.stdout)
        self.assertIn("/dev/infiniband/rdma_cm chr rw", out.stdout)
        self.assertIn("sysfs_path /sys", out.stdout)

    def test_the_nics_interface_has_its_links_mtu_and_active_mtu_follows_from_it(self):
        # two-hosts.yaml: mtu 4200, the IP MTU at which a ConnectX host reports active_mtu 4096.
        out = self.run_on("h1", "sh", "-c", "cat /sys/class/net/rfab0/mtu; ibv_devinfo -d rfab0")
        self.assertEqual(out.returncode, 0, out.stdout + out.stderr)
        self.assertEqual(out.stdout.splitlines()[0], "4200")
        self.assertRegex(out.stdout, r"active_mtu:\s+4096")

    def test_sysfs_gids_and_types_agree_with_ibv_devinfo(self):
        port = "/sys/class/infiniband/rfab0/ports/1"
        script = ("cat %s/gids/0 %s/gids/1 %s/gid_attrs/types/0 %s/gid_attrs/types/1 %s/gid_attrs/ndevs/1 "
                  "%s/state %s/link_layer /sys/class/infiniband/rfab0/node_guid "
                  "/sys/class/infiniband_verbs/uverbs0/ibdev; ls /sys/class/net" % ((port,) * 7))
        sysfs = self.run_on("h1", "sh", "-c", script)
        self.assertEqual(sysfs.returncode, 0, sysfs.stdout + sysfs.stderr)
        lines = sysfs.stdout.splitlines()
        devinfo = self.run_on("h1", "ibv_devinfo", "-v", "-d", "rfab0")
        self.assertEqual(devinfo.returncode, 0, devinfo.stderr)
        rows = re.findall(r"GID\[\s*(\d+)\]:\s+(\S+), (\S+ v\d)", devinfo.stdout)
        gids = {i: g for i, g, _ in rows}
        types = {i: t for i, _, t in rows}
        self.assertEqual(ipaddress.IPv6Address(lines[0]), ipaddress.IPv6Address(gids["0"]))
        self.assertEqual(ipaddress.IPv6Address(lines[1]), ipaddress.IPv6Address(gids["1"]))
        self.assertEqual(ipaddress.IPv6Address(lines[1]).ipv4_mapped, ipaddress.IPv4Address(self.address_of("h1")))
        self.assertEqual(lines[2], types["0"])
        self.assertEqual(lines[3], types["1"])
        # The GID's netdev is an interface the host's /sys/class/net shows.
        self.assertIn(lines[4], lines[9:])
        self.assertIn("PORT_ACTIVE (4)", devinfo.stdout)
        self.assertEqual(lines[5], "4: ACTIVE")
        self.assertEqual(lines[6], "Ethernet")
        self.assertIn("node_guid:\t\t\t" + lines[7], devinfo.stdout)
        self.assertEqual(lines[8], "rfab0")

    def test_sysfs_counters_are_the_nics_counters_as_the_program_starts(self):
        self.pingpong(iterations=20)
        nic = [n for n in self.counters()["nics"] if n["host"] == "h1" and n["nic"] == "rfab0"][0]["counters"]
        port = "/sys/class/infiniband/rfab0/ports/1"
        out = self.run_on("h1", "cat", port + "/counters/port_xmit_packets", port + "/counters/port_xmit_data",
                          port + "/hw_counters/rdma_sends")
        self.assertEqual(out.returncode, 0, out.stderr)
        packets, words, sends = (int(v) for v in out.stdout.split())
        self.assertGreater(packets, 0)
        self.assertEqual(packets, nic["port_xmit_packets"])
        self.assertEqual(words, nic["port_xmit_data"] // 4, "PortXmitData counts 4-byte words")
        self.assertEqual(sends, nic["rdma_sends"])


class nothing_left_behind(host_view_case):
    # MACs no other fabric on the machine uses, to know its namespaces from ones that reuse
    # their numbers.
    tag = "02:5e:%02x:%02x" % (os.getpid() >> 8 & 0xff, os.getpid() & 0xff)
    macs = (tag + ":00:01", tag + ":00:02")

    @classmethod
    def setUpClass(cls):
        cls.scratch = tempfile.TemporaryDirectory(prefix="rocefab-left-behind-")
        cls.config = os.path.join(cls.scratch.name, "two-hosts-tagged.yaml")
        with open(TWO_HOSTS) as f:
            text = f.read()
        text = text.replace("address: 10.0.0.1/24 }", "address: 10.0.0.1/24, mac: \"%s\" }" % cls.macs[0])
        text = text.replace("address: 10.0.0.2/24 }", "address: 10.0.0.2/24, mac: \"%s\" }" % cls.macs[1])
        with open(cls.config, "w") as f:
            f.write(text)
        super().setUpClass()

    @classmethod
    def tearDownClass(cls):
        super().tearDownClass()
        cls.scratch.cleanup()

    def test_namespaces_die_with_the_daemon_and_the_machine_is_as_before(self):
        # A fabric of its own, killed outright: nothing may keep its hosts' namespaces alive.
        other = self.name + "-k"
        up = self.rocefab("up", self.config, "--name", other)
        self.assertEqual(up.returncode, 0, up.stdout + up.stderr)
        with open(os.path.join(self.runtime.name, other, "daemon.pid")) as f:
            pid = int(f.read())
        held = net_namespaces_of(pid)
        self.assertEqual(len(held), 3, "a namespace per host and the bridge's")
        self.assertEqual(len(live_namespaces_with(held, self.macs)), 2, "the check sees the hosts' namespaces")
        os.kill(pid, signal.SIGKILL)
        deadline = time.monotonic() + 10
        while os.path.exists("/proc/%d" % pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        self.assertFalse(live_namespaces_with(held, self.macs), "a host's namespace outlived its daemon")
        # And this class's own fabric, run and then taken down the ordinary way.
        run = self.run_on("h1", "ibv_devices")
        self.assertEqual(run.returncode, 0, run.stderr)
        held = net_namespaces_of(self.daemon_pid())
        self.assertEqual(len(held), 3)
        down = self.rocefab("down", "--fabric", self.name)
        self.assertEqual(down.returncode, 0, down.stderr)
        self.assertFalse(live_namespaces_with(held, self.macs), "a host's namespace outlived `rocefab down`")
        self.assertEqual(machine_state(), self.before)
        # tearDownClass takes it down again: bring it back so that it has something to do.
        up = self.rocefab("up", self.config, "--name", self.name)
        self.assertEqual(up.returncode, 0, up.stdout + up.stderr)


@unittest.skipUnless(os.geteuid() == 0, "needs root to create the unprivileged user and a root daemon")
class fallback_for_unprivileged_runner(shared_fabric):
    """A member of the fabric's attach-group may run programs, but may not enter a root
    daemon's namespaces: one line says so, and the program runs on the machine's network."""

    daemon_section = "daemon: { attach-group: %s }" % TEST_USER

    def test_one_line_says_so_and_the_program_still_runs(self):
        script = ("ibv_devices; if [ -c /dev/infiniband/uverbs0 ]; then echo uverbs0-chr; fi; "
                  "cat /sys/class/infiniband/rfab0/ports/1/gid_attrs/types/1 2>/dev/null")
        out = self.run_as_test_user("run", "--fabric", self.name, "--host", "h1", "--", "sh", "-c", script)
        self.assertEqual(out.returncode, 0, out.stdout + out.stderr)
        self.assertIn("rfab0", out.stdout)
        lines = out.stderr.splitlines()
        self.assertEqual(len(lines), 1, out.stderr)
        self.assertTrue(lines[0].startswith("rocefab: h1 " + FALLBACK), lines[0])
        if "no /dev/infiniband" in lines[0]:
            return  # no unprivileged user namespaces on this machine: the same line says that too
        # The device view needs no root: an unprivileged user namespace of the runner's own.
        self.assertIn("uverbs0-chr", out.stdout)
        self.assertIn("RoCE v2", out.stdout)


@unittest.skipUnless(os.geteuid() == 0, "needs root to create the unprivileged user")
class unprivileged_fabric(unittest.TestCase):
    """A fabric started without root: the daemon makes the hosts' namespaces inside a user
    namespace of its own, and its owner's programs enter them, with their own uid."""

    def test_hosts_have_their_own_network_and_device_view_without_root(self):
        uid, gid = test_user()
        if subprocess.run(as_test_user("unshare", "--user", "--net", "true"), capture_output=True).returncode != 0:
            self.skipTest("this machine does not allow unprivileged user namespaces")
        scratch = tempfile.mkdtemp(prefix="rocefab-unprivileged-")
        try:
            os.chmod(scratch, 0o755)
            rocefab, _ = install_for_test_user(os.path.join(scratch, "bin"))
            runtime = os.path.join(scratch, "run")
            os.mkdir(runtime)
            os.chown(runtime, uid, gid)
            config = os.path.join(scratch, "two-hosts.yaml")
            shutil.copy(TWO_HOSTS, config)
            os.chmod(config, 0o644)
            env = dict(os.environ, ROCEFAB_RUNTIME_DIR=runtime)

            def as_user(*args, timeout=60):
                return subprocess.run(as_test_user(rocefab, *args), capture_output=True, text=True, env=env,
                                      timeout=timeout, cwd=scratch)

            up = as_user("up", config, "--name", "unprivileged")
            self.assertEqual(up.returncode, 0, up.stdout + up.stderr)
            try:
                listener = subprocess.Popen(as_test_user(rocefab, "run", "--fabric", "unprivileged", "--host", "h2", "--",
                                                         sys.executable, "-c", LISTENER, "18515"),
                                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                                            cwd=scratch)
                try:
                    if listener.stdout.readline().strip() != "listening":
                        listener.kill()
                        self.fail("the listener on h2 did not start: " + listener.communicate()[1])
                    remote = as_user("run", "--fabric", "unprivileged", "--host", "h1", "--", sys.executable, "-c",
                                     CONNECT, "10.0.0.2", "18515")
                    self.assertEqual(remote.stdout.strip(), "hello from h2 to 10.0.0.1", remote.stdout + remote.stderr)
                    self.assertEqual(remote.stderr, "", "no fallback line: the owner may enter its own namespaces")
                finally:
                    listener.kill()
                    listener.communicate()
                probe = as_user("run", "--fabric", "unprivileged", "--host", "h1", "--", "sh", "-c",
                                "id -u; [ -c /dev/infiniband/uverbs0 ] && echo uverbs0-chr; "
                                "cat /sys/class/infiniband/rfab0/ports/1/gid_attrs/ndevs/1; ls /sys/class/net")
                self.assertEqual(probe.returncode, 0, probe.stdout + probe.stderr)
                lines = probe.stdout.split()
                self.assertEqual(lines[0], str(uid), "the program keeps its user's uid")
                self.assertIn("uverbs0-chr", lines)
                self.assertIn(lines[2], lines[3:], "the GID's netdev is in the host's /sys/class/net")
            finally:
                down = as_user("down", "--fabric", "unprivileged")
                self.assertEqual(down.returncode, 0, down.stdout + down.stderr)
        finally:
            subprocess.run(["pkill", "-KILL", "-u", TEST_USER], capture_output=True)
            shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    try:
        outcome = unittest.main(argv=[sys.argv[0], *sys.argv[3:]], verbosity=2, exit=False)
    finally:
        remove_test_user()
    result = outcome.result
    # 77: meson's "skipped", when nothing ran but skips.
    sys.exit(1 if not result.wasSuccessful() else 77 if result.testsRun == len(result.skipped) else 0)
