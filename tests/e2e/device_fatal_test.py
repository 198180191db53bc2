#!/usr/bin/python3
"""The device dies under a running program (the daemon is killed): the program gets
IBV_EVENT_DEVICE_FATAL and its outstanding work completes with flush errors within a second,
however it was waiting (blocked on async events, blocked on a completion channel, busy-polling),
and its verbs fail afterwards (tests/e2e/programs/device_fatal_check.cpp).

Run by meson (suite e2e) as:  /usr/bin/python3 device_fatal_test.py BUILD_DIR SOURCE_DIR
"""

import os
import signal
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fabric_e2e_test import BUILD, ROCEFAB, TWO_HOSTS  # noqa: E402

CHECK = os.path.join(BUILD, "tests", "e2e", "programs", "device-fatal-check")


class device_fatal(unittest.TestCase):
    def run_case(self, wait):
        with tempfile.TemporaryDirectory(prefix="rocefab-fatal-") as runtime:
            env = dict(os.environ, ROCEFAB_RUNTIME_DIR=runtime)
            name = "fatal-%d" % os.getpid()
            up = subprocess.run([ROCEFAB, "up", TWO_HOSTS, "--name", name], capture_output=True, text=True,
                                env=env, timeout=120)
            self.assertEqual(up.returncode, 0, up.stderr)
            with open(os.path.join(runtime, name, "daemon.pid")) as f:
                daemon = int(f.read())
            program = subprocess.Popen(
                [ROCEFAB, "run", "--fabric", name, "--host", "h1", "--", CHECK, "--peer-socket",
                 os.path.join(runtime, name, "attach", "h2.sock"), "--wait", wait],
                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
            try:
                before = []
                while (line := program.stdout.readline()).startswith(("ok: ", "FAILED: ")):
                    before.append(line)
                ready = line
                if ready != "ready\n":
                    program.kill()
                    self.fail("the program did not get ready: " + "".join(before) + ready + program.stderr.read())
                time.sleep(0.2)  # the SEND is being answered with RNR NAKs by now
                killed_at = time.clock_gettime_ns(time.CLOCK_REALTIME)
                os.kill(daemon, signal.SIGKILL)
                out, err = program.communicate(timeout=30)
            finally:
                program.kill()
                try:
                    os.kill(daemon, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            out = "".join(before) + out
            self.assertEqual(program.returncode, 0, out + err)
            # qperf's server leaves its latency loop when its timer's signal interrupts the wait.
            self.assertIn("ok: ibv_get_cq_event interrupted by a signal returns -1 with EINTR", out)
            self.assertIn("ok: ibv_get_async_event interrupted by a signal returns -1 with EINTR", out)
            noticed = [int(l.split()[-1]) for l in out.splitlines() if l.startswith("noticed at ")]
            self.assertEqual(len(noticed), 1, out)
            self.assertLess((noticed[0] - killed_at) / 1e9, 1.0, "the program noticed the dead device late")
            self.assertIn("ok: IBV_EVENT_DEVICE_FATAL", out)
            self.assertIn("ok: 9 completions, 9 with IBV_WC_WR_FLUSH_ERR", out)
            self.assertTrue(out.endswith("all ok\n"), out)

    def test_a_program_blocked_on_async_events_gets_device_fatal(self):
        self.run_case("async")

    def test_a_program_blocked_on_a_completion_channel_gets_the_flush_completions(self):
        self.run_case("cq-event")

    def test_a_program_busy_polling_its_cq_gets_the_flush_completions(self):
        self.run_case("poll")


if __name__ == "__main__":
    unittest.main(argv=[sys.argv[0], *sys.argv[3:]], verbosity=2)
