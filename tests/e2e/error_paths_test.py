#!/usr/bin/python3
"""End-to-end RC error paths: tools/integrity/rdma_error_paths.cpp (built against the system libibverbs, run
with ours by `rocefab run`) provokes each error from h1 (requester) to h2 (responder) on fresh QPs
and checks the completion status, opcode, wr_id and QP state hardware gives, then that a healthy
QP pair created alongside still moves data. Here we also check the daemon's counters moved as
they should for each case, and that every NIC resource is freed once the programs exit.

Run by meson (suite e2e) as:
  /usr/bin/python3 error_paths_test.py BUILD_DIR SOURCE_DIR [unittest args]
"""

import os
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fabric_e2e_test import BUILD, ROCEFAB, fabric_case, free_tcp_port  # noqa: E402

ERROR_PATHS = os.path.join(BUILD, "tools", "integrity", "rdma-error-paths")
COMMON = ["-d", "rfab0", "-g", "1"]

# Counter deltas each case must produce, per host: exact values. The requester is h1.
ACCESS_ERROR = {"h1": {"req_remote_access_errors": 1, "req_cqe_error": 1,
                       "req_cqe_flush_error": 1},  # the WR posted behind the failing one
                "h2": {"resp_remote_access_errors": 1,
                       "resp_cqe_flush_error": 1}}  # the responder's QP went to ERR with a receive posted
EXPECTED = {
    "wrong_rkey": ("IBV_WC_REM_ACCESS_ERR", ACCESS_ERROR),
    "out_of_bounds_write": ("IBV_WC_REM_ACCESS_ERR", ACCESS_ERROR),
    "read_without_access": ("IBV_WC_REM_ACCESS_ERR", ACCESS_ERROR),
    # rnr_retry 2: the first RNR NAK and two retries, each answered with an RNR NAK.
    "rnr_exhausted": ("IBV_WC_RNR_RETRY_EXC_ERR",
                      {"h1": {"rnr_nak_retry_err": 1, "rnr_nak_received": 3, "req_cqe_error": 1},
                       "h2": {"rnr_nak_sent": 3, "resp_remote_access_errors": 0}}),
    # Five SENDs (four outstanding, one posted in ERR) and two receives, all flushed.
    "flush_on_error": ("IBV_WC_WR_FLUSH_ERR",
                       {"h1": {"req_cqe_flush_error": 5, "resp_cqe_flush_error": 2, "req_cqe_error": 0,
                               "rnr_nak_retry_err": 0},
                        "h2": {"resp_cqe_flush_error": 0}}),
    # The server's MR lost its pages (or their write access) after registering: the write fails
    # when it is made, and is answered as an access error, never acknowledged.
    "write_to_unmapped": ("IBV_WC_REM_ACCESS_ERR",
                          {"h1": ACCESS_ERROR["h1"], "h2": dict(ACCESS_ERROR["h2"], memory_access_faults=1)}),
    "write_to_read_only": ("IBV_WC_REM_ACCESS_ERR",
                           {"h1": ACCESS_ERROR["h1"], "h2": dict(ACCESS_ERROR["h2"], memory_access_faults=1)}),
    "registration_refused": ("EFAULT", {"h1": {"req_cqe_error": 0}, "h2": {"resp_cqe_error": 0}}),
    # retry_cnt 3: the transport timer expires four times, the last ends the WR.
    "retry_exhausted": ("IBV_WC_RETRY_EXC_ERR",
                        {"h1": {"local_ack_timeout_err": 4, "req_cqe_error": 1, "req_cqe_flush_error": 0},
                         "h2": {"resp_remote_access_errors": 0, "resp_cqe_flush_error": 0}}),
}
# Counters that only grow with the flush case: at least one RNR NAK held the SENDs back.
AT_LEAST = {"flush_on_error": {"h1": {"rnr_nak_received": 1}, "h2": {"rnr_nak_sent": 1}}}


class error_paths_case(fabric_case):
    def nic_counters(self):
        return {n["host"]: n["counters"] for n in self.counters()["nics"]}

    def assert_resources_freed(self):
        deadline = time.monotonic() + 10
        while True:
            resources = {n["host"]: n["resources"] for n in self.counters()["nics"]}
            if all(sum(r.values()) == 0 for r in resources.values()) or time.monotonic() > deadline:
                break
            time.sleep(0.1)
        self.assertTrue(all(sum(r.values()) == 0 for r in resources.values()), resources)

    def assert_counters_moved(self, case, before, after):
        for host, deltas in EXPECTED[case][1].items():
            for key, delta in deltas.items():
                self.assertEqual(after[host].get(key, 0) - before[host].get(key, 0), delta, (case, host, key))
        for host, deltas in AT_LEAST.get(case, {}).items():
            for key, delta in deltas.items():
                self.assertGreaterEqual(after[host].get(key, 0) - before[host].get(key, 0), delta, (case, host, key))

    def start_server(self, port):
        return self.start_on("h2", ERROR_PATHS, "--server", *COMMON, "-p", port)

    def finish_server(self, server):
        try:
            out, err = server.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            server.kill()
            out, err = server.communicate()
        return server.returncode, out, err

    def run_cases(self, case):
        """Server on h2, client on h1; returns (server, client) as (returncode, stdout, stderr)."""
        port = str(free_tcp_port())
        server = self.start_server(port)
        # The client retries its TCP connection until the server listens.
        client = self.run_on("h1", ERROR_PATHS, self.address_of("h2"), *COMMON, "-p", port, "--case", case, timeout=120)
        return self.finish_server(server), (client.returncode, client.stdout, client.stderr)

    def assert_case_lines(self, cases, server, client):
        message = "client: " + client[1] + client[2] + "\nserver: " + server[1] + server[2]
        self.assertEqual(client[0], 0, message)
        self.assertEqual(server[0], 0, message)
        self.assertEqual([l for l in client[1].splitlines() if l.startswith("case ")],
                         ["case %s: ok (%s)" % (c, EXPECTED[c][0]) for c in cases], message)
        self.assertEqual(server[1].splitlines(), ["case %s: ok (responder side)" % c for c in cases], message)


class error_paths(error_paths_case):
    def test_each_error_ends_with_the_hardware_status_and_the_daemon_keeps_serving(self):
        for case in ("wrong_rkey", "out_of_bounds_write", "read_without_access", "rnr_exhausted", "flush_on_error"):
            with self.subTest(case=case):
                before = self.nic_counters()
                server, client = self.run_cases(case)
                self.assert_case_lines([case], server, client)
                self.assert_resources_freed()
                self.assert_counters_moved(case, before, self.nic_counters())

    def test_memory_a_program_took_away_fails_the_write_on_both_sides(self):
        for case in ("registration_refused", "write_to_unmapped", "write_to_read_only"):
            with self.subTest(case=case):
                before = self.nic_counters()
                server, client = self.run_cases(case)
                self.assert_case_lines([case], server, client)
                self.assert_resources_freed()
                self.assert_counters_moved(case, before, self.nic_counters())

    def test_all_cases_in_one_program_alongside_one_healthy_pair(self):
        cases = ["wrong_rkey", "out_of_bounds_write", "read_without_access", "rnr_exhausted", "flush_on_error"]
        server, client = self.run_cases("all")
        self.assert_case_lines(cases, server, client)
        self.assert_resources_freed()

    def test_an_unknown_case_is_a_one_line_error(self):
        out = subprocess.run([ERROR_PATHS, "127.0.0.1", "--case", "wrong_key"], capture_output=True, text=True,
                             timeout=20)
        self.assertEqual(out.returncode, 2)
        self.assertEqual(len(out.stderr.splitlines()), 1, out.stderr)
        self.assertIn("unknown case 'wrong_key'", out.stderr)


class error_paths_link_down(error_paths_case):
    def link(self, *args):
        out = self.rocefab("link", "--fabric", self.name, "h1/rfab0", *args)
        self.assertEqual(out.returncode, 0, out.stdout + out.stderr)

    def test_retry_exhaustion_with_the_cable_down_ends_with_retry_exc_err(self):
        before = self.nic_counters()
        port = str(free_tcp_port())
        server = self.start_server(port)
        client = subprocess.Popen([ROCEFAB, "run", "--fabric", self.name, "--host", "h1", "--", ERROR_PATHS,
                                   self.address_of("h2"), *COMMON, "-p", port, "--case", "retry_exhausted"],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                  env=self.env)
        try:
            self.assertEqual(client.stdout.readline(), "ready-for-link-down\n")
            self.link("--down")
            client.stdin.write("go\n")
            client.stdin.flush()
            self.assertEqual(client.stdout.readline(), "ready-for-link-up\n")
        finally:
            self.link("--up")
            try:
                client.stdin.write("go\n")
                client.stdin.flush()
            except BrokenPipeError:
                pass
        try:
            out, err = client.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            client.kill()
            out, err = client.communicate()
        server = self.finish_server(server)
        self.assert_case_lines(["retry_exhausted"], server, (client.returncode, out, err))
        self.assert_resources_freed()
        self.assert_counters_moved("retry_exhausted", before, self.nic_counters())


if __name__ == "__main__":
    unittest.main(argv=[sys.argv[0], *sys.argv[3:]], verbosity=2)
