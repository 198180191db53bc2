#!/usr/bin/python3
"""Thousands of RC QPs between two programs (tests/e2e/programs/many_qps.cpp): all connect, each
carries a message, and with ConnectX's default transport timers no timer expires and nothing is
sent twice, however many idle QPs the NIC holds. How long it took is printed (bench/many_qps
measures it); it is not asserted here.

Run by meson (suite e2e) as:  /usr/bin/python3 many_qps_test.py BUILD_DIR SOURCE_DIR
"""

import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fabric_e2e_test import BUILD, fabric_case, free_tcp_port  # noqa: E402

MANY_QPS = os.path.join(BUILD, "tests", "e2e", "programs", "many-qps")


class many_qps(fabric_case):
    def test_two_thousand_qps_connect_and_carry_a_message_each_without_a_false_timeout(self):
        port = str(free_tcp_port())
        server = self.start_on("h2", MANY_QPS, "--server", "-n", "2000", "-p", port)
        client = self.run_on("h1", MANY_QPS, self.address_of("h2"), "-n", "2000", "-p", port, timeout=300)
        server_out, server_err = server.communicate(timeout=300)
        self.assertEqual(client.returncode, 0, client.stdout + client.stderr)
        self.assertEqual(server.returncode, 0, server_out + server_err)
        for out in (client.stdout, server_out):
            self.assertRegex(out, r"^qps 2000: created in [\d.]+ s, connected in [\d.]+ s .*; 0 failed\n$")
        print("\n" + client.stdout + server_out, file=sys.stderr)
        for nic in self.counters()["nics"]:
            c = nic["counters"]
            for key in ("local_ack_timeout_err", "retransmitted_packets", "packet_seq_err", "implied_nak_seq_err",
                        "rnr_nak_retry_err", "req_cqe_error", "resp_cqe_error"):
                self.assertEqual(c.get(key, 0), 0, (nic["host"], key))
            self.assertGreaterEqual(c["rdma_sends"] if nic["host"] == "h1" else c["port_rcv_packets"], 2000)


if __name__ == "__main__":
    unittest.main(argv=[sys.argv[0], *sys.argv[3:]], verbosity=2)
