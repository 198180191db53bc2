#!/usr/bin/python3
"""A fabric on a machine others use (docs/security.md): who may attach and change it, the
confused deputy (exec of a setuid binary, pid reuse), and a daemon that keeps serving while
someone holds thousands of connections or starves it of descriptors.

Needs root: the tests create a user of their own (and remove it), a setuid copy of a probe, and
choose which pid a process gets.

Run by meson (suite e2e) as:  /usr/bin/python3 security_test.py BUILD_DIR SOURCE_DIR CASE
"""

import os
import pwd
import resource
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fabric_e2e_test import BUILD, ROCEFAB, TWO_HOSTS, fabric_case, free_tcp_port  # noqa: E402

DEPUTY_PROBE = os.path.join(BUILD, "tests", "e2e", "programs", "deputy-probe")
ABUSE = os.path.join(BUILD, "tests", "e2e", "programs", "shared-memory-abuse")
TEST_USER = "rocefab-e2e"
# Far from where the kernel puts anything by itself: both the probe and the holder map here.
FIXED_ADDRESS = "0x200000000000"


def test_user():
    """The user the tests act as (created once, with a group of its own): (uid, gid)."""
    try:
        entry = pwd.getpwnam(TEST_USER)
    except KeyError:
        subprocess.run(["useradd", "--system", "--no-create-home", "--user-group", "--shell", "/usr/sbin/nologin",
                        TEST_USER], check=True)
        entry = pwd.getpwnam(TEST_USER)
    return entry.pw_uid, entry.pw_gid


def remove_test_user():
    subprocess.run(["userdel", TEST_USER], capture_output=True)
    subprocess.run(["groupdel", TEST_USER], capture_output=True)


def as_test_user(*command):
    return ["setpriv", "--reuid", TEST_USER, "--regid", TEST_USER, "--init-groups", "--", *command]


def install_for_test_user(directory):
    """Copies what the test user runs into `directory` (which it can reach: the build tree may sit
    under a directory only its owner can enter) with the layout `rocefab run` expects: the verbs
    library in nic_emu/verbs beside the rocefab binary. Returns (rocefab, deputy-probe)."""
    verbs = os.path.join(directory, "nic_emu", "verbs")
    os.makedirs(verbs)
    shutil.copy(ROCEFAB, directory)
    shutil.copy(os.path.join(BUILD, "nic_emu", "verbs", "libibverbs.so.1"), verbs)
    shutil.copy(DEPUTY_PROBE, directory)
    for root, dirs, files in os.walk(directory):
        for name in dirs + files:
            os.chmod(os.path.join(root, name), 0o755)
    return os.path.join(directory, "rocefab"), os.path.join(directory, "deputy-probe")


class shared_fabric(fabric_case):
    """A fabric whose runtime directory other users can reach (the sockets' own modes decide)."""

    daemon_section = ""

    @classmethod
    def setUpClass(cls):
        test_user()
        cls.scratch = tempfile.TemporaryDirectory(prefix="rocefab-security-")
        os.chmod(cls.scratch.name, 0o755)
        with open(TWO_HOSTS) as f:
            text = f.read()
        cls.config = os.path.join(cls.scratch.name, "two-hosts-shared.yaml")
        with open(cls.config, "w") as f:
            f.write(text + "\n" + cls.daemon_section + "\n")
        cls.user_rocefab, cls.user_probe = install_for_test_user(os.path.join(cls.scratch.name, "bin"))
        super().setUpClass()
        os.chmod(cls.runtime.name, 0o755)

    @classmethod
    def tearDownClass(cls):
        super().tearDownClass()
        cls.scratch.cleanup()

    def fabric_dir(self):
        return os.path.join(self.runtime.name, self.name)

    def attach_socket(self, host):
        return os.path.join(self.fabric_dir(), "attach", host + ".sock")

    def cm_socket(self, host):
        return os.path.join(self.fabric_dir(), "cm", host + ".sock")

    def run_as_test_user(self, *args, timeout=60):
        return subprocess.run(as_test_user(self.user_rocefab, *args), capture_output=True, text=True, timeout=timeout,
                              env=self.env)

    def daemon_log(self):
        with open(os.path.join(self.fabric_dir(), "daemon.log")) as f:
            return f.read()


class owner_only(shared_fabric):
    def test_another_user_can_neither_attach_nor_read_the_fabric(self):
        out = self.run_as_test_user("run", "--fabric", self.name, "--host", "h1", "--", "ibv_devices")
        self.assertNotEqual(out.returncode, 0)
        self.assertIn("may not use it", out.stderr)
        out = self.run_as_test_user("show", "--fabric", self.name)
        self.assertNotEqual(out.returncode, 0)
        self.assertIn("may not use it", out.stderr)
        # Around `rocefab run`: the verbs library pointed straight at the host's socket.
        env = dict(self.env, ROCEFAB_SOCKET=self.attach_socket("h1"), ROCEFAB_HOST="h1",
                   LD_LIBRARY_PATH=os.path.dirname(self.user_rocefab) + "/nic_emu/verbs")
        direct = subprocess.run(as_test_user("ibv_devinfo"), capture_output=True, text=True, env=env, timeout=60)
        self.assertNotIn("rfab0", direct.stdout)
        # The owner still can.
        mine = self.run_on("h1", "ibv_devices")
        self.assertEqual(mine.returncode, 0, mine.stderr)
        self.assertIn("rfab0", mine.stdout)

    def test_a_runtime_directory_others_may_write_is_refused(self):
        """Another user could put a socket of their own where programs look for the daemon's."""
        with tempfile.TemporaryDirectory(prefix="rocefab-open-") as open_dir:
            os.chmod(open_dir, 0o777)
            out = subprocess.run([ROCEFAB, "up", TWO_HOSTS, "--name", "open"], capture_output=True, text=True,
                                 env=dict(self.env, ROCEFAB_RUNTIME_DIR=open_dir), timeout=60)
            self.assertEqual(out.returncode, 1)
            self.assertEqual(out.stderr, "rocefab: %s may be written by other users (remove it, or choose another "
                                         "place with ROCEFAB_RUNTIME_DIR)\n" % open_dir)
            self.assertEqual(os.listdir(open_dir), [])

    def test_the_sockets_belong_to_the_owner_alone(self):
        for path in (self.attach_socket("h1"), self.attach_socket("h2"), os.path.join(self.fabric_dir(), "control.sock")):
            mode = os.stat(path).st_mode & 0o777
            self.assertEqual(mode, 0o600, path)


class attach_group(shared_fabric):
    daemon_section = "daemon: { attach-group: %s, log: 'info,attach=debug' }" % TEST_USER

    def test_a_member_may_run_programs_and_read_counters(self):
        out = self.run_as_test_user("run", "--fabric", self.name, "--host", "h1", "--", "ibv_devices")
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertIn("rfab0", out.stdout)
        show = self.run_as_test_user("show", "--fabric", self.name, "--json")
        self.assertEqual(show.returncode, 0, show.stderr)

    def test_a_member_may_not_change_the_fabric(self):
        for args in (("link", "h1/rfab0", "--down"), ("down",),
                     ("capture", "h1/rfab0", "-w", os.path.join(self.scratch.name, "x.pcap"))):
            with self.subTest(args=args):
                out = self.run_as_test_user(*args[:1], "--fabric", self.name, *args[1:])
                self.assertNotEqual(out.returncode, 0)
                self.assertIn("is for the fabric's owner", out.stderr)
        self.assertIn("may not down", self.daemon_log())
        self.assertEqual(self.rocefab("show", "--fabric", self.name).returncode, 0)

    def test_a_capture_file_is_created_with_the_rights_of_whoever_asked(self):
        """The owner asks through a root daemon (sudo) for a file root could write and the owner
        could not: the daemon refuses, as the owner would have been refused."""
        # Root is the owner here; a daemon started through sudo by the test user is the case the
        # daemon must not turn into root's rights. Started as that user's sudo would start it:
        name = "e2e-sudo-%d" % os.getpid()
        env = dict(self.env, SUDO_UID=str(test_user()[0]))
        up = subprocess.run([ROCEFAB, "up", TWO_HOSTS, "--name", name], capture_output=True, text=True, env=env,
                            timeout=120)
        self.assertEqual(up.returncode, 0, up.stderr)
        try:
            os.chmod(os.path.join(self.runtime.name, name), 0o755)
            forbidden = os.path.join(self.scratch.name, "root-only")
            os.mkdir(forbidden, 0o700)
            out = subprocess.run(as_test_user(self.user_rocefab, "capture", "--fabric", name, "h1/rfab0", "-w",
                                              os.path.join(forbidden, "x.pcap")),
                                 capture_output=True, text=True, env=self.env, timeout=60)
            self.assertNotEqual(out.returncode, 0)
            self.assertIn("Permission denied", out.stderr)
            self.assertFalse(os.path.exists(os.path.join(forbidden, "x.pcap")))
            allowed = os.path.join(self.scratch.name, "mine")
            os.mkdir(allowed, 0o755)
            os.chown(allowed, test_user()[0], test_user()[1])
            out = subprocess.run(as_test_user(self.user_rocefab, "capture", "--fabric", name, "h1/rfab0", "-w",
                                              os.path.join(allowed, "x.pcap")),
                                 capture_output=True, text=True, env=self.env, timeout=60)
            self.assertEqual(out.returncode, 0, out.stderr)
            self.assertEqual(os.stat(os.path.join(allowed, "x.pcap")).st_uid, test_user()[0])
        finally:
            subprocess.run([ROCEFAB, "down", "--fabric", name], capture_output=True, env=self.env, timeout=60)


class confused_deputy(shared_fabric):
    """The two ways a pid number stops naming the process that attached: the process execs a
    setuid-root binary, or exits and a root process gets its pid. A child that kept the device
    context tries to read and write the root process's memory through the daemon."""

    daemon_section = "daemon: { attach-group: %s }" % TEST_USER

    def setUp(self):
        self.work = tempfile.TemporaryDirectory(prefix="rocefab-deputy-")
        os.chmod(self.work.name, 0o755)
        self.ready = os.path.join(self.work.name, "ready")
        self.done = os.path.join(self.work.name, "done")
        for fifo in (self.ready, self.done):
            os.mkfifo(fifo)
            os.chmod(fifo, 0o666)
        # The root process's secret: in a file the test user cannot read.
        self.private = tempfile.TemporaryDirectory(prefix="rocefab-secret-")
        os.chmod(self.private.name, 0o700)
        self.secret_file = os.path.join(self.private.name, "secret")
        self.secret = os.urandom(4096)
        with open(self.secret_file, "wb") as f:
            f.write(self.secret)
        os.chmod(self.secret_file, 0o600)

    def tearDown(self):
        # A probe whose attack went wrong waits on a FIFO for ever: nothing of the user's may
        # outlive the test.
        subprocess.run(["pkill", "-KILL", "-u", TEST_USER], capture_output=True)
        self.work.cleanup()
        self.private.cleanup()

    def start_probe(self, mode, *extra, through_rocefab_run=True, shared_mr=False):
        """shared_mr: whether the probe's verbs library hands its registered pages over on a
        memfd (ROCEFAB_SHARED_MR, nic_emu/verbs/shared_pages.hpp) or leaves them to be reached
        through its /proc/self/mem."""
        probe = [self.user_probe, mode, "--address", FIXED_ADDRESS, "--peer-socket", self.attach_socket("h2"),
                 "--ready", self.ready, "--done", self.done, *extra]
        shared = dict(self.env, ROCEFAB_SHARED_MR="1" if shared_mr else "0")
        if through_rocefab_run:
            command = as_test_user(self.user_rocefab, "run", "--fabric", self.name, "--host", "h1", "--", *probe)
            return subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=shared)
        # What `rocefab run` sets, set by hand: an attacker needs no `rocefab run` to attach.
        env = dict(shared, ROCEFAB_SOCKET=self.attach_socket("h1"), ROCEFAB_HOST="h1",
                   LD_LIBRARY_PATH=os.path.join(os.path.dirname(self.user_rocefab), "nic_emu", "verbs"))
        return subprocess.Popen(as_test_user(*probe), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                env=env)

    def read_lines(self, stream, until):
        lines = []
        for line in stream:
            lines.append(line.rstrip("\n"))
            if line.startswith(until):
                break
        return lines

    def check_nothing_reached_the_holder(self, lines, shared_mr=False):
        """Through /proc/self/mem the old rkey reaches nothing at all. With the pages handed over
        on a memfd it reaches those pages, the probe's own, which outlive its exec as pinned pages
        do on a ConnectX: a READ then returns the probe's bytes and a WRITE lands there, but
        neither ever touches the process that took the pid or the address."""
        text = "\n".join(lines)
        self.assertIn("sanity: read own page: success", text)
        # Registering the root process's page fails as registering unmapped memory does.
        self.assertIn("reg_mr: failed: Bad address", text)
        read = [l for l in lines if l.startswith("read: ")]
        self.assertEqual(len(read), 1, text)
        status, data = read[0][len("read: "):].rsplit(" ", 1)
        if shared_mr:
            self.assertEqual(status, "success", text)  # the probe's own pages, handed over
        else:
            self.assertNotEqual(status, "success", text)
        self.assertNotIn(data, self.secret.hex())
        for i in range(0, 64 - 8, 8):
            self.assertNotIn(self.secret[i:i + 8].hex(), data, "secret bytes were read")
        write = [l for l in lines if l.startswith("write: ")]
        self.assertEqual(len(write), 1, text)
        if not shared_mr:
            self.assertNotEqual(write[0], "write: success", "a write that went nowhere was acknowledged")
        self.assertIn("holder: intact", text)

    def test_exec_of_a_setuid_binary_does_not_hand_its_memory_to_the_child(self):
        self.exec_of_a_setuid_binary(shared_mr=False)

    def test_exec_of_a_setuid_binary_does_not_hand_its_memory_to_the_child_with_shared_pages(self):
        self.exec_of_a_setuid_binary(shared_mr=True)

    def test_a_recycled_pid_does_not_hand_the_new_process_memory_to_the_child(self):
        self.recycled_pid(shared_mr=False)

    def test_a_recycled_pid_does_not_hand_the_new_process_memory_to_the_child_with_shared_pages(self):
        self.recycled_pid(shared_mr=True)

    def exec_of_a_setuid_binary(self, shared_mr):
        holder = os.path.join(self.work.name, "holder")
        shutil.copy(self.user_probe, holder)
        os.chown(holder, 0, 0)
        os.chmod(holder, 0o4755)
        # Not through `rocefab run`: an unprivileged run is in a user namespace of its own, where
        # the kernel ignores the set-uid bit of a root-owned file, so the attack could not even
        # be staged there. Attached directly, as an attacker may, the exec does make it root.
        probe = self.start_probe("exec", "--holder", holder, "--secret", self.secret_file, through_rocefab_run=False,
                                 shared_mr=shared_mr)
        try:
            out, err = probe.communicate(timeout=120)
        finally:
            probe.kill()
        lines = out.splitlines()
        self.assertIn("holder: pid %d uid 0" % probe.pid, lines, out + err)
        self.check_nothing_reached_the_holder(lines, shared_mr)

    def recycled_pid(self, shared_mr):
        probe = self.start_probe("reuse", shared_mr=shared_mr)
        lines = self.read_lines(probe.stdout, "victim pid ")
        self.assertTrue(lines and lines[-1].startswith("victim pid "), "\n".join(lines))
        victim = int(lines[-1].split()[-1])
        probe.wait(timeout=30)  # reaped: its pid is free
        holder = None
        for _ in range(500):
            with open("/proc/sys/kernel/ns_last_pid", "w") as f:
                f.write(str(victim - 1))
            candidate = subprocess.Popen([self.user_probe, "holder", "--address", FIXED_ADDRESS, "--secret",
                                          self.secret_file, "--ready", self.ready, "--done", self.done, "--start",
                                          "stdin"],
                                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                         text=True)
            if candidate.pid == victim:
                holder = candidate
                break
            candidate.kill()
            candidate.wait()
        if holder is None:
            probe.kill()
        self.assertIsNotNone(holder, "no process got pid %d back" % victim)
        try:
            holder_out, holder_err = holder.communicate(input="go\n", timeout=120)
            child_out, child_err = probe.communicate(timeout=60)
        finally:
            holder.kill()
            probe.kill()
        self.assertIn("holder: pid %d uid 0" % victim, holder_out.splitlines(), holder_err + child_err)
        self.check_nothing_reached_the_holder(lines + child_out.splitlines() + holder_out.splitlines(), shared_mr)


class shared_memory(shared_fabric):
    def test_truncating_or_scribbling_shared_memory_harms_neither_the_daemon_nor_another_program(self):
        port = str(free_tcp_port())
        args = ["-d", "rfab0", "-g", "1", "-s", "4096", "-n", "3000", "-p", port, "-c"]
        server = self.start_on("h2", "ibv_rc_pingpong", *args)
        time.sleep(0.5)
        client = self.start_on("h1", "ibv_rc_pingpong", *args, self.address_of("h2"))
        abuser = self.start_on("h1", ABUSE, "--seconds", "3")
        try:
            out, err = abuser.communicate(timeout=120)
        except subprocess.TimeoutExpired:
            # Say where it was stuck before failing.
            with open("/proc/%d/wchan" % abuser.pid) as f:
                where = f.read()
            abuser.kill()
            out, err = abuser.communicate()
            self.fail("the abuse program did not finish; it waited in %s\n%s%s\ndaemon log:\n%s" %
                      (where, out, err, self.daemon_log()[-3000:]))
        abuse = subprocess.CompletedProcess(abuser.args, abuser.returncode, out, err)
        client_out, client_err = client.communicate(timeout=300)
        server_out, server_err = server.communicate(timeout=300)
        self.assertEqual(abuse.returncode, 0, abuse.stdout + abuse.stderr)
        # Rings, CQs, the doorbell queue and the wake page: none can be resized, and the wake
        # page cannot be written.
        for name in ("rocefab-qp", "rocefab-cq", "rocefab-doorbells", "rocefab-wake"):
            self.assertRegex(abuse.stdout, name + r".*shrink refused \(EPERM\), grow refused \(EPERM\)")
        self.assertRegex(abuse.stdout, r"rocefab-wake.*made writable refused.*mapped writable refused.*written refused")
        self.assertIn("all refused", abuse.stdout)
        self.assertEqual(client.returncode, 0, client_out + client_err)
        self.assertEqual(server.returncode, 0, server_out + server_err)
        self.assertIn("3000 iters", client_out)
        with open(os.path.join(self.fabric_dir(), "daemon.pid")) as f:
            os.kill(int(f.read()), 0)  # still there
        self.assertEqual(self.rocefab("show", "--fabric", self.name).returncode, 0)


# Connects COUNT times to PATH and holds the connections until its standard input closes.
HOLD_CONNECTIONS = """
import resource, socket, sys
path, count = sys.argv[1], int(sys.argv[2])
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
held = []
for _ in range(count):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    s.settimeout(5)
    try:
        s.connect(path)
    except OSError:
        pass
    held.append(s)
print(len(held), flush=True)
sys.stdin.read()
"""


class exhaustion(shared_fabric):
    def test_twenty_thousand_connections_leave_the_fabric_answering(self):
        # Two processes of 10 000 each: one process may hold no more than 20 000 descriptors here.
        holders = [subprocess.Popen([sys.executable, "-c", HOLD_CONNECTIONS, self.attach_socket("h1"), "10000"],
                                    stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True) for _ in range(2)]
        try:
            for h in holders:
                self.assertEqual(h.stdout.readline().strip(), "10000")
            show = self.rocefab("show", "--fabric", self.name, timeout=60)
            self.assertEqual(show.returncode, 0, show.stderr)
            with open(os.path.join(self.fabric_dir(), "daemon.pid")) as f:
                daemon = int(f.read())
            # Sessions over the per-user limit were refused at once, not held.
            self.assertLess(len(os.listdir("/proc/%d/fd" % daemon)), 2000)
            self.assertIn("sessions open", self.daemon_log())
        finally:
            for h in holders:
                h.stdin.close()
                h.wait(timeout=60)
        (server_rc, _, _), client = self.pingpong(size=4096, iterations=20, extra=("-c",))
        self.assertEqual(client.returncode, 0, client.stdout + client.stderr)
        self.assertEqual(server_rc, 0)

    def test_a_daemon_out_of_descriptors_keeps_accepting_once_they_are_back(self):
        with open(os.path.join(self.fabric_dir(), "daemon.pid")) as f:
            daemon = int(f.read())
        in_use = len(os.listdir("/proc/%d/fd" % daemon))
        limit = in_use + 40
        # The soft limit only: raising it back needs no privilege.
        subprocess.run(["prlimit", "--pid", str(daemon), "--nofile=%d:" % limit], check=True)
        held = []
        try:
            # Both doors programs use: the verbs library's and librdmacm's.
            for door in (self.attach_socket("h1"), self.cm_socket("h1")):
                for _ in range(100):
                    s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
                    s.setblocking(False)
                    try:
                        s.connect(door)
                    except OSError:
                        pass
                    held.append(s)
            time.sleep(0.5)
            # While it has no descriptor to spare it answers nothing, but says so in time, and it
            # does not spin: it pauses between tries.
            env = dict(self.env, ROCEFAB_TIMEOUT="2")
            busy = subprocess.run([ROCEFAB, "show", "--fabric", self.name], capture_output=True, text=True, env=env,
                                  timeout=30)
            self.assertNotEqual(busy.returncode, 0)
            self.assertRegex(busy.stderr, r"^rocefab: fabric '\S+' does not answer: .*\n$")

            def cpu():
                with open("/proc/%d/stat" % daemon) as f:
                    fields = f.read().rsplit(")", 1)[1].split()
                return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
            before = cpu()
            time.sleep(1)
            self.assertLess(cpu() - before, 0.5)
            self.assertIn("pausing 100 ms", self.daemon_log())
        finally:
            for s in held:
                s.close()
            subprocess.run(["prlimit", "--pid", str(daemon), "--nofile=%d:" % resource.getrlimit(resource.RLIMIT_NOFILE)[1]],
                           check=True)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            show = self.rocefab("show", "--fabric", self.name)
            if show.returncode == 0:
                break
            time.sleep(0.2)
        self.assertEqual(show.returncode, 0, show.stderr)
        mine = self.run_on("h1", "ibv_devices")
        self.assertIn("rfab0", mine.stdout, mine.stderr)


if __name__ == "__main__":
    try:
        outcome = unittest.main(argv=[sys.argv[0], *sys.argv[3:]], verbosity=2, exit=False)
    finally:
        remove_test_user()
    sys.exit(0 if outcome.result.wasSuccessful() else 1)
