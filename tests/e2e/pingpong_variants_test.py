#!/usr/bin/python3
"""End-to-end: Debian's unmodified ibv_uc_pingpong, ibv_ud_pingpong and ibv_srq_pingpong
(ibverbs-utils) between h1 and h2 of the two-host fabric, each polling and with completion
events (-e), over RoCEv2/IPv4 (-g 1), checking the received buffers (-c); and tshark decodes
what they put on the cable.

Run by meson (suite e2e) as:
  /usr/bin/python3 pingpong_variants_test.py BUILD_DIR SOURCE_DIR [unittest args]
"""

import os
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fabric_e2e_test import fabric_case, free_tcp_port  # noqa: E402


class pingpong_variant(fabric_case):
    program = None
    options = ()
    wire_opcodes = set()  # BTH opcodes (as tshark prints them) the capture must show
    absent_opcodes = set()  # and those it must not

    def exchange(self, *extra):
        """Server on h2, client on h1, the same options on both; both must exit 0."""
        port = str(free_tcp_port())
        args = ["-d", "rfab0", "-g", "1", "-p", port, "-c", *self.options, *extra]
        server = self.start_on("h2", self.program, *args)
        client = None
        # The server listens once its QPs exist; retry the client until it connects.
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            client = self.run_on("h1", self.program, *args, self.address_of("h2"), timeout=300)
            if "Couldn't connect" not in client.stderr and "Couldn't connect" not in client.stdout:
                break
            time.sleep(0.2)
        try:
            server_out, server_err = server.communicate(timeout=300)
        except Exception:
            server.kill()
            server_out, server_err = server.communicate()
        self.assertEqual(client.returncode, 0, client.stdout + client.stderr)
        self.assertEqual(server.returncode, 0, server_out + server_err)
        self.assertRegex(client.stdout, r"bytes in [\d.]+ seconds = [\d.]+ Mbit/sec")
        return client

    def test_polling(self):
        self.exchange()

    def test_with_completion_events(self):
        self.exchange("-e")

    def test_every_frame_on_the_cable_decodes_as_rocev2_without_warnings(self):
        pcap = os.path.join(self.runtime.name, "%s.pcap" % self.program)
        start = self.rocefab("capture", "--fabric", self.name, "h1/rfab0", "-w", pcap)
        self.assertEqual(start.returncode, 0, start.stderr)
        self.exchange("-n", "10")
        stop = self.rocefab("capture", "--fabric", self.name, "h1/rfab0", "--stop")
        self.assertEqual(stop.returncode, 0, stop.stderr)
        fields = subprocess.run(["tshark", "-r", pcap, "-T", "fields", "-e", "frame.protocols", "-e",
                                 "infiniband.bth.opcode"], capture_output=True, text=True)
        self.assertEqual(fields.returncode, 0, fields.stderr)
        lines = [l for l in fields.stdout.splitlines() if l.strip()]
        self.assertGreater(len(lines), 10)
        for line in lines:
            self.assertIn("udp:infiniband", line)
        opcodes = {l.split("\t")[1] for l in lines}
        self.assertTrue(self.wire_opcodes <= opcodes, opcodes)
        self.assertFalse(self.absent_opcodes & opcodes, opcodes)
        verbose = subprocess.run(["tshark", "-r", pcap, "-V"], capture_output=True, text=True)
        self.assertNotIn("Malformed", verbose.stdout)
        self.assertNotIn("Expert Info (Error", verbose.stdout)
        self.assertNotIn("Expert Info (Warning", verbose.stdout)


class uc_pingpong(pingpong_variant):
    program = "ibv_uc_pingpong"
    options = ("-s", "4096", "-m", "1024", "-n", "200")
    wire_opcodes = {"32", "33", "34"}  # UC SEND first, middle, last
    absent_opcodes = {"17"}  # and never an acknowledgement


class ud_pingpong(pingpong_variant):
    # One datagram a message: at most the port's active MTU (4096 on the two-host fabric).
    program = "ibv_ud_pingpong"
    options = ("-s", "2048", "-n", "200")
    wire_opcodes = {"100"}  # UD SEND only


class srq_pingpong(pingpong_variant):
    # 16 RC QPs sharing one SRQ on each side.
    program = "ibv_srq_pingpong"
    options = ("-s", "4096", "-m", "1024", "-n", "50")
    wire_opcodes = {"0", "1", "2", "17"}


if __name__ == "__main__":
    unittest.main(argv=[sys.argv[0], *sys.argv[3:]], verbosity=2)
