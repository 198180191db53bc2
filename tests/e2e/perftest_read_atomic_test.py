#!/usr/bin/python3
"""End-to-end RDMA READ and atomics: Debian's unmodified perftest (ib_read_bw, ib_read_lat,
ib_atomic_bw, ib_atomic_lat) between h1 and h2 over RC, through `rocefab run`.

Run by meson (suite e2e) as:
  /usr/bin/python3 perftest_read_atomic_test.py BUILD_DIR SOURCE_DIR [unittest args]
"""

import os
import re
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fabric_e2e_test import fabric_case  # noqa: E402

BW_LINE = re.compile(r"^\s*(\d+)\s+(\d+)\s+[\d.]+\s+[\d.]+\s+[\d.]+\s*$", re.M)
LAT_LINE = re.compile(r"^\s*(\d+)\s+(\d+)\s+[\d.]+\s+[\d.]+\s+[\d.]+\s+[\d.]+", re.M)


class perftest_read_atomic(fabric_case):
    def perftest(self, program, *args, timeout=300):
        """Server on h2, client on h1 (RC, RoCEv2 GID 1; perftest_pair); returns (server, client)
        as (returncode, stdout, stderr)."""
        server, client = self.perftest_pair([program, "-d", "rfab0", "-x", "1", "-c", "RC", *args], timeout=timeout)
        return server, (client.returncode, client.stdout, client.stderr)

    def check(self, program, *args, line=BW_LINE):
        (server_rc, server_out, server_err), (client_rc, client_out, client_err) = self.perftest(program, *args)
        self.assertEqual(client_rc, 0, client_out + client_err)
        self.assertEqual(server_rc, 0, server_out + server_err)
        rows = line.findall(client_out)
        self.assertTrue(rows, client_out)
        return [int(size) for size, _ in rows]

    def nic_counter(self, host, name):
        return next(n["counters"][name] for n in self.counters()["nics"] if n["host"] == host)

    def test_ib_read_bw_all_sizes(self):
        # -a: every size from 2 B to 8 MiB; 50 iterations each keeps it to seconds.
        sizes = self.check("ib_read_bw", "-a", "-n", "50", "--report_gbits")
        self.assertEqual(sizes, [1 << k for k in range(1, 24)])
        self.assertGreater(self.nic_counter("h2", "rx_read_requests"), 0)

    def test_ib_read_lat(self):
        self.assertEqual(self.check("ib_read_lat", "-n", "500", line=LAT_LINE), [2])

    def test_ib_atomic_bw(self):
        before = self.nic_counter("h2", "rx_atomic_requests")
        self.assertEqual(self.check("ib_atomic_bw", "-n", "1000"), [8])
        self.assertGreaterEqual(self.nic_counter("h2", "rx_atomic_requests") - before, 1000)

    def test_ib_atomic_lat_compare_and_swap(self):
        self.assertEqual(self.check("ib_atomic_lat", "-n", "500", "-A", "CMP_AND_SWAP", line=LAT_LINE), [8])

    def test_ib_atomic_lat_fetch_and_add(self):
        self.assertEqual(self.check("ib_atomic_lat", "-n", "500", "-A", "FETCH_AND_ADD", line=LAT_LINE), [8])


if __name__ == "__main__":
    unittest.main(argv=[sys.argv[0], *sys.argv[3:]], verbosity=2)
