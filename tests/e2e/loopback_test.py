#!/usr/bin/python3
"""End-to-end NIC loopback: two unmodified programs on one emulated host talk through its one NIC,
as they would through a ConnectX, which turns frames for its own address around inside itself.
The port counts every frame both ways, a capture on the NIC's cable end shows them, and the
switch sees none of them.

Run by meson (suite e2e) as:  /usr/bin/python3 loopback_test.py BUILD_DIR SOURCE_DIR [unittest args]
"""

import os
import re
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fabric_e2e_test import fabric_case, free_tcp_port  # noqa: E402


class nic_loopback(fabric_case):
    def both_on_h1(self, program, *args, timeout=120):
        """Server and client of `program` on h1; returns the client's stdout after both exit 0."""
        port = str(free_tcp_port())
        server = self.start_on("h1", program, *args, "-p", port)
        deadline = time.monotonic() + 20
        while True:
            client = self.run_on("h1", program, *args, "-p", port, "127.0.0.1", timeout=timeout)
            text = client.stdout + client.stderr
            if client.returncode == 0 or "Couldn't connect" not in text or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        try:
            out, err = server.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            server.kill()
            out, err = server.communicate()
        self.assertEqual(client.returncode, 0, client.stdout + client.stderr)
        self.assertEqual(server.returncode, 0, out + err)
        return client.stdout

    def h1_and_switch(self):
        shown = self.counters()
        nic = next(n["counters"] for n in shown["nics"] if n["host"] == "h1")
        switch_rx = sum(p["rx_packets"] for p in shown["switches"][0]["ports"])
        return nic, switch_rx

    def check_looped_back(self, before, after, at_least):
        (nic0, switch0), (nic1, switch1) = before, after
        looped = nic1["loopback_packets"] - nic0["loopback_packets"]
        self.assertGreaterEqual(looped, at_least)
        self.assertEqual(nic1["loopback_discards"], 0)
        self.assertGreaterEqual(nic1["port_xmit_packets"] - nic0["port_xmit_packets"], looped)
        self.assertGreaterEqual(nic1["port_rcv_packets"] - nic0["port_rcv_packets"], looped)
        self.assertEqual(switch1, switch0)  # nothing went out on the cable

    def test_rc_uc_and_ud_pingpong_between_two_programs_on_one_nic(self):
        for program, size in (("ibv_rc_pingpong", 65536), ("ibv_uc_pingpong", 4096), ("ibv_ud_pingpong", 1024)):
            with self.subTest(program=program):
                before = self.h1_and_switch()
                out = self.both_on_h1(program, "-d", "rfab0", "-g", "1", "-s", str(size), "-n", "200")
                self.assertRegex(out, r"200 iters in [\d.]+ seconds")
                self.check_looped_back(before, self.h1_and_switch(), 400)

    def test_read_and_atomics_between_two_programs_on_one_nic(self):
        for program, args in (("ib_read_bw", ("-s", "65536", "-n", "200")),
                              ("ib_atomic_bw", ("-n", "1000"))):
            with self.subTest(program=program):
                before = self.h1_and_switch()
                out = self.both_on_h1(program, "-d", "rfab0", "-x", "1", *args)
                self.assertRegex(out, re.compile(r"^\s*\d+\s+\d+\s+[\d.]+\s+[\d.]+", re.M))
                self.check_looped_back(before, self.h1_and_switch(), 1000)

    def test_a_capture_on_the_nic_shows_looped_back_frames_and_tshark_decodes_them(self):
        pcap = os.path.join(self.runtime.name, "loopback.pcap")
        start = self.rocefab("capture", "--fabric", self.name, "h1/rfab0", "-w", pcap)
        self.assertEqual(start.returncode, 0, start.stderr)
        self.both_on_h1("ibv_rc_pingpong", "-d", "rfab0", "-g", "1", "-s", "5000", "-n", "20")
        stop = self.rocefab("capture", "--fabric", self.name, "h1/rfab0", "--stop")
        self.assertEqual(stop.returncode, 0, stop.stderr)
        fields = subprocess.run(["tshark", "-r", pcap, "-T", "fields", "-e", "ip.src", "-e", "ip.dst", "-e",
                                 "infiniband.bth.opcode"], capture_output=True, text=True)
        self.assertEqual(fields.returncode, 0, fields.stderr)
        rows = [l.split("\t") for l in fields.stdout.splitlines() if l.strip()]
        self.assertGreater(len(rows), 40)
        for src, dst, _ in rows:
            self.assertEqual((src, dst), ("10.0.0.1", "10.0.0.1"))
        self.assertTrue({"0", "1", "2", "17"} <= {r[2] for r in rows})
        verbose = subprocess.run(["tshark", "-r", pcap, "-V"], capture_output=True, text=True)
        self.assertNotIn("Malformed", verbose.stdout)
        self.assertNotIn("Expert Info (Error", verbose.stdout)


TWO_NICS_ON_H1 = """
fabric: two-nics
defaults:
  link: { speed: 100G, delay: 1us, mtu: 4200 }
switches:
  - name: sw1
hosts:
  - name: h1
    nics:
      - { name: rfab0, address: 10.0.0.1/24 }
      - { name: rfab1, address: 10.0.0.11/24 }
links:
  - { a: h1/rfab0, b: sw1/swp1 }
  - { a: h1/rfab1, b: sw1/swp2 }
"""


class two_nics_of_one_host(nic_loopback):
    """Two NICs of one host are two ports on the switch: between them, frames go over the cables
    as wired, through the switch, and neither NIC loops anything back."""

    @classmethod
    def setUpClass(cls):
        cls.scratch = tempfile.TemporaryDirectory(prefix="rocefab-two-nics-")
        cls.config = os.path.join(cls.scratch.name, "two-nics.yaml")
        with open(cls.config, "w") as f:
            f.write(TWO_NICS_ON_H1)
        super().setUpClass()

    @classmethod
    def tearDownClass(cls):
        super().tearDownClass()
        cls.scratch.cleanup()

    # Only this class's own test runs here, not the loopback ones it inherits the helpers of.
    test_rc_uc_and_ud_pingpong_between_two_programs_on_one_nic = None
    test_read_and_atomics_between_two_programs_on_one_nic = None
    test_a_capture_on_the_nic_shows_looped_back_frames_and_tshark_decodes_them = None

    def test_rc_pingpong_from_one_nic_to_the_other_crosses_the_switch(self):
        shown = self.counters()
        switch_before = sum(p["rx_packets"] for p in shown["switches"][0]["ports"])
        port = str(free_tcp_port())
        server = self.start_on("h1", "ibv_rc_pingpong", "-d", "rfab1", "-g", "1", "-n", "200", "-p", port)
        deadline = time.monotonic() + 20
        while True:
            client = self.run_on("h1", "ibv_rc_pingpong", "-d", "rfab0", "-g", "1", "-n", "200", "-p", port,
                                 "127.0.0.1")
            if client.returncode == 0 or "Couldn't connect" not in client.stderr or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        out, err = server.communicate(timeout=120)
        self.assertEqual(client.returncode, 0, client.stdout + client.stderr)
        self.assertEqual(server.returncode, 0, out + err)
        shown = self.counters()
        nics = {n["nic"]: n["counters"] for n in shown["nics"] if n["host"] == "h1"}
        self.assertEqual(nics["rfab0"]["loopback_packets"], 0)
        self.assertEqual(nics["rfab1"]["loopback_packets"], 0)
        self.assertGreaterEqual(nics["rfab1"]["port_rcv_packets"], 200)
        switch_after = sum(p["rx_packets"] for p in shown["switches"][0]["ports"])
        self.assertGreaterEqual(switch_after - switch_before, 400)


if __name__ == "__main__":
    unittest.main(argv=[sys.argv[0], *sys.argv[3:]], verbosity=2)
