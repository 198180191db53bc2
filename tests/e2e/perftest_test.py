#!/usr/bin/python3
"""End-to-end: unmodified perftest binaries (Debian package perftest) between two emulated hosts.

Run by meson (suite e2e) as:  /usr/bin/python3 perftest_test.py BUILD_DIR SOURCE_DIR [unittest args]
"""

import os
import re
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fabric_e2e_test as base  # noqa: E402  (shares the fabric fixture and the argv handling)
from fabric_e2e_test import fabric_case  # noqa: E402

RESULT_ROW = re.compile(r"^\s*(\d+)\s+(\d+)\s+[\d.]+\s+[\d.]+", re.M)


class perftest_case(fabric_case):
    def perftest(self, program, *args, timeout=240, environment=()):
        """Server on h2, client on h1, both unmodified (perftest_pair); returns the client's stdout.
        `environment`: VAR=value settings for both programs."""
        launch = ["env", *environment, program] if environment else [program]
        (server_status, server_out, server_err), client = self.perftest_pair(
            [*launch, "-d", "rfab0", "-x", "1", *args], timeout=timeout)
        both = f"client:\n{client.stdout}{client.stderr}\nserver:\n{server_out}{server_err}"
        self.assertEqual(client.returncode, 0, both)
        self.assertEqual(server_status, 0, both)
        return client.stdout

    def sizes(self, output):
        return [int(m.group(1)) for m in RESULT_ROW.finditer(output)]


class rc_send_and_write(perftest_case):
    def test_ib_send_bw_over_all_sizes(self):
        out = self.perftest("ib_send_bw", "-a", "-n", "20")
        self.assertEqual(self.sizes(out), [2 ** k for k in range(1, 24)])

    def test_ib_write_bw_over_all_sizes(self):
        out = self.perftest("ib_write_bw", "-a", "-n", "20")
        self.assertEqual(self.sizes(out), [2 ** k for k in range(1, 24)])

    def test_ib_send_lat(self):
        out = self.perftest("ib_send_lat", "-n", "200")
        self.assertEqual(self.sizes(out), [2])

    def test_ib_write_lat(self):
        out = self.perftest("ib_write_lat", "-n", "200")
        self.assertEqual(self.sizes(out), [2])

    def dma_bytes(self):
        nics = {n["host"]: n["counters"] for n in self.counters()["nics"]}
        return {h: (c["dma_shared_bytes"], c["dma_proc_mem_bytes"]) for h, c in nics.items()}

    def test_registered_pages_are_moved_by_plain_copy_unless_turned_off(self):
        # ib_write_bw's buffers are page-aligned: the library moves them onto a memfd the NIC
        # maps, and every payload byte is read on h1 and written on h2 by memcpy.
        moved = 200 * 65536
        before = self.dma_bytes()
        self.perftest("ib_write_bw", "-s", "65536", "-n", "200")
        after = self.dma_bytes()
        self.assertGreaterEqual(after["h1"][0] - before["h1"][0], moved)
        self.assertGreaterEqual(after["h2"][0] - before["h2"][0], moved)
        self.assertLess(after["h1"][1] - before["h1"][1], moved // 100)
        # ROCEFAB_SHARED_MR=0: through /proc/self/mem, as before.
        self.perftest("ib_write_bw", "-s", "65536", "-n", "200", environment=["ROCEFAB_SHARED_MR=0"])
        off = self.dma_bytes()
        self.assertEqual(off["h1"][0], after["h1"][0])
        self.assertGreaterEqual(off["h1"][1] - after["h1"][1], moved)
        self.assertGreaterEqual(off["h2"][1] - after["h2"][1], moved)

    def test_ib_write_bw_with_inline_and_several_qps(self):
        out = self.perftest("ib_write_bw", "-s", "64", "-I", "64", "-q", "4", "-n", "500")
        self.assertEqual(self.sizes(out), [64])


class uc_and_ud(perftest_case):
    def test_ib_send_bw_over_ud_up_to_the_mtu(self):
        out = self.perftest("ib_send_bw", "-c", "UD", "-a", "-n", "20")
        self.assertEqual(self.sizes(out), [2 ** k for k in range(1, 13)])  # UD messages fit one MTU

    def test_ib_send_lat_over_ud(self):
        self.assertEqual(self.sizes(self.perftest("ib_send_lat", "-c", "UD", "-n", "200")), [2])

    def test_ib_write_bw_over_uc_over_all_sizes(self):
        out = self.perftest("ib_write_bw", "-c", "UC", "-a", "-n", "20")
        self.assertEqual(self.sizes(out), [2 ** k for k in range(1, 24)])

    def test_ib_send_bw_over_uc(self):
        self.assertEqual(self.sizes(self.perftest("ib_send_bw", "-c", "UC", "-n", "200")), [65536])

    def test_ib_send_lat_and_ib_write_lat_over_uc(self):
        self.assertEqual(self.sizes(self.perftest("ib_send_lat", "-c", "UC", "-n", "200")), [2])
        self.assertEqual(self.sizes(self.perftest("ib_write_lat", "-c", "UC", "-n", "200")), [2])


if __name__ == "__main__":
    unittest.main(argv=[sys.argv[0], *sys.argv[3:]], verbosity=2)
