#!/usr/bin/python3
"""rdma-core 44's own test suite (pyverbs), unmodified, on one emulated host.

The suite is rdma-core's conformance test for verbs providers; most of its traffic tests put both
QPs on one device (NIC loopback). Every test must pass or be skipped for a capability the device
reports absent: the skip reasons allowed are the ones below, each a capability the README lists
as absent. A new skip reason, an error, a failure or a hang fails this test, and so does a drop
in the number that pass.

Run by meson (suite e2e) as:
  /usr/bin/python3 rdma_core_suite_test.py BUILD_DIR SOURCE_DIR SUITE_DIR [unittest args]
When SUITE_DIR/tests/run_tests.py is absent the test exits 77, which meson reports as a skip.
"""

import os
import re
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fabric_e2e_test import fabric_case  # noqa: E402

SUITE = os.path.abspath(sys.argv[3]) if len(sys.argv) > 3 else ""
RUN_TESTS = os.path.join(SUITE, "tests", "run_tests.py")

# Skips for what this device does not have, as rdma-core's suite words them (README, "What the
# device does not have"). Vendor tests (mlx5, EFA), GPU memory and huge pages are not the device's.
ABSENT = [
    r"Can not run the test over non (MLX5|EFA) device",
    r"Could not open mlx5 context \(This is not an MLX5 device\)",
    r"ODP is not supported",
    r"Device memory is not supported",
    r"Allocating dmabuf is not supported",
    r"Create XRCD is not supported",
    r"Reg MR with MW access is not supported",
    r"Create memory window of type \d is not supported",
    r"Create QP type 8 is not supported",                       # IBV_QPT_RAW_PACKET
    r"Create Raw Packet QP .*is not supported",
    r"Parent Domain is not supported on this device",
    r"Multicast is not supported on this device",               # max_mcast_grp 0
    r"Create Extended CQ is not supported",                     # with completion timestamps
    r"Extended CQ is not supported",
    r"Extended QP is not supported on this device",             # send ops beyond RC/UC/UD's
    r"Rereg MR is not supported",
    r"Resize CQ is not supported",
    r"Query device real time is not supported",
    r"Importing a device is not supported",
    r"Create custom mr with additional access flags \d+ is not supported",
    r"There are no huge pages of size 2M allocated",
    r"cuda-python 12\.0\+ must be installed to run CUDA tests",
    r"PCI device must be passed by the user",
    r"All gid indices populated, cannot check bad flow",
]
# rdma-core 44 on this device: 83 pass, test_rdmacm's included. Fewer means something that
# worked stopped working.
AT_LEAST_PASSING = 83


@unittest.skipUnless(os.path.exists(RUN_TESTS), "rdma-core's suite is not at " + RUN_TESTS)
class rdma_core_suite(fabric_case):
    def test_every_test_passes_or_is_skipped_for_a_capability_the_device_reports_absent(self):
        run = self.run_on("h1", "/usr/bin/python3", RUN_TESTS, "--dev", "rfab0", "--gid", "1", "-v", timeout=900)
        out = run.stdout + run.stderr
        # unittest's own summary says how many ran and whether any failed or erred; -v ends each
        # skipped test's line with its reason.
        ran = re.search(r"^Ran (\d+) tests? in", out, re.M)
        self.assertTrue(ran, out[-4000:])
        verdict = re.search(r"^(OK|FAILED)( \((.*)\))?$", out, re.M)
        self.assertTrue(verdict, out[-4000:])
        self.assertEqual(verdict.group(1), "OK", out[-6000:])
        skipped = int(re.search(r"skipped=(\d+)", verdict.group(3) or "skipped=0").group(1))
        reasons = [m.group(2) for m in re.finditer(r" \.\.\. skipped (['\"])(.*)\1$", out, re.M)]
        self.assertEqual(len(reasons), skipped)
        unexplained = sorted({r for r in reasons if not any(re.search(a, r) for a in ABSENT)})
        self.assertEqual(unexplained, [], "skips for something the device does not report absent")
        passed = int(ran.group(1)) - skipped
        self.assertGreaterEqual(passed, AT_LEAST_PASSING, out[-4000:])
        self.assertEqual(run.returncode, 0, out[-4000:])
        print("\nrdma-core 44 suite: %s tests, %d passed, %d skipped" % (ran.group(1), passed, skipped),
              file=sys.stderr)


if __name__ == "__main__":
    if not os.path.exists(RUN_TESTS):
        print("SKIP: rdma-core's suite is not at %s (meson -Drdma_core_suite=PATH)" % RUN_TESTS)
        sys.exit(77)
    unittest.main(argv=[sys.argv[0], *sys.argv[4:]], verbosity=2)
