#!/usr/bin/python3
"""End-to-end: an incast through the emulated switch in real time, with unmodified ib_write_bw.

Three clients on h1-h3 write to three servers on h9 across configs/incast.yaml, whose 10G links make
the switch, not the CPU, the bottleneck. With NVIDIA's lossless RoCE profile the switch pauses the
senders (PFC on priority 3, which the NICs' DSCP 26 travels in), drops nothing, and marks ECN on the
congested port, as the same incast does under virtual time.

Run by meson (suite e2e) as:  /usr/bin/python3 lossless_incast_test.py BUILD_DIR SOURCE_DIR [unittest args]
"""

import os
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fabric_e2e_test as base  # noqa: E402  (shares the fabric fixture and the argv handling)
from fabric_e2e_test import fabric_case, free_tcp_port  # noqa: E402

class incast_case(fabric_case):
    clients = ("h1", "h2", "h3")

    def run_incast(self):
        """An ib_write_bw client on each of self.clients into a server each on h9; returns sw1's ports and
        the NICs' counters afterwards. Every program must exit 0."""
        ports = [str(free_tcp_port()) for _ in self.clients]
        common = ["-d", "rfab0", "-x", "1", "-s", "65536", "-D", "3"]
        servers = [self.start_on("h9", "ib_write_bw", *common, "-p", port) for port in ports]
        time.sleep(1)
        clients = []
        for host, port in zip(self.clients, ports):
            clients.append(subprocess.Popen(
                [base.ROCEFAB, "run", "--fabric", self.name, "--host", host, "--", "ib_write_bw", *common, "-p", port,
                 self.address_of("h9")], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=self.env))
        # Mid-run, the senders' QPs as `rocefab show --json` lists them, DCQCN rates included, looked
        # at several times: a rate a CNP cut climbs back to the line within milliseconds once the
        # marks pause, so a single look can land on a moment at full rate.
        self.qps_mid_run = []
        time.sleep(1)
        end = time.monotonic() + 1.5
        while time.monotonic() < end:
            self.qps_mid_run.append({n["host"]: n["qps"] for n in self.counters()["nics"]})
            time.sleep(0.1)
        for p in clients + servers:
            out, err = p.communicate(timeout=120)
            self.assertEqual(p.returncode, 0, out + err)
        counters = self.counters()
        return ({p["port"]: p for p in counters["switches"][0]["ports"]},
                {n["host"]: n["counters"] for n in counters["nics"]})


class lossless_incast(incast_case):
    """configs/incast.yaml with h9's cable at 1G and DCQCN off: PFC alone.

    A switch pauses an ingress only while that ingress holds more than its share of the congested
    queue, so a sender slower than its fair share of the bottleneck is rightly never paused. Three
    software senders on two cores reach about 10G between them on a fast machine and much less on a
    slow CI runner; at 1G each one's fair share (333M) is far below what the slowest of them sends.
    DCQCN stays off because it may cut a sender below that share, which is its purpose, not PFC's
    (the dcqcn_incast case below covers it)."""

    @classmethod
    def setUpClass(cls):
        cls.scratch = tempfile.TemporaryDirectory(prefix="rocefab-incast-")
        with open(os.path.join(base.SOURCE, "configs", "incast.yaml")) as f:
            text = f.read()
        narrow = "{ a: h9/rfab0, b: sw1/swp9 }"
        assert narrow in text and "\nnic:" not in text
        cls.config = os.path.join(cls.scratch.name, "incast-1g-pfc.yaml")
        with open(cls.config, "w") as f:
            f.write(text.replace(narrow, "{ a: h9/rfab0, b: sw1/swp9, speed: 1G }"))
            f.write("\nnic:\n  dcqcn: { state: disabled }\n")
        super().setUpClass()

    @classmethod
    def tearDownClass(cls):
        super().tearDownClass()
        cls.scratch.cleanup()

    def test_three_ib_write_bw_clients_into_one_host_are_paused_not_dropped(self):
        ports_of_sw1, nics = self.run_incast()
        for i, host in enumerate(self.clients):
            port = ports_of_sw1["swp%d" % (i + 1)]
            self.assertGreater(port["tx_prio3_pause"], 0, host)          # the switch paused the sender
            self.assertGreater(nics[host]["rx_prio3_pause"], 0, host)    # and the NIC heard it
        for name, port in ports_of_sw1.items():
            self.assertEqual(port["tail_drops"], 0, name)
            self.assertEqual(port["headroom_drops"], 0, name)
        self.assertGreater(ports_of_sw1["swp9"]["ecn_marked"], 0)


class dcqcn_incast(incast_case):
    """The 2:1 incast of configs/incast-2to1-dcqcn.yaml, with real programs on configs/incast.yaml's 10G."""
    config = os.path.join(base.SOURCE, "configs", "incast.yaml")
    clients = ("h1", "h2")

    def test_two_ib_write_bw_clients_bring_cnps_and_both_senders_slow_down(self):
        ports_of_sw1, nics = self.run_incast()
        self.assertGreater(ports_of_sw1["swp9"]["ecn_marked"], 0)
        # DCQCN (on by default, as on ConnectX): the receiver answers the marks with CNPs and
        # the senders' NICs act on them.
        self.assertGreater(nics["h9"]["np_ecn_marked_roce_packets"], 0)
        self.assertGreater(nics["h9"]["np_cnp_sent"], 0)
        for host in self.clients:
            self.assertGreater(nics[host]["rp_cnp_handled"], 0, host)
            self.assertEqual(nics[host]["rp_cnp_ignored"], 0, host)
        # Mid-run both senders' QPs were held below the 10G line: the rates moved the same way,
        # down, as in the virtual-time 2:1 incast.
        for host in self.clients:
            rates = [q["dcqcn"]["current-rate-mbps"] for look in self.qps_mid_run for q in look[host]
                     if q["state"] == "RTS"]
            self.assertTrue(rates, host)
            self.assertLess(min(rates), 10000, host)


class misconfigured_incast(incast_case):
    """configs/misconfig-lossy-dscp.yaml: PFC on priority 3, but DSCP 26 mapped to lossy priority 0.

    DCQCN is off, as in lossless_incast: with it on, senders fast enough to react to the marks
    keep the lossy queue below its tail-drop threshold (two ib_write_bw clients at 10G do, since
    the NIC copies with memcpy and has a CPU of its own), and whether anything drops then depends on
    the machine. Off, the class is protected by nothing: the drops and retransmissions are certain."""

    @classmethod
    def setUpClass(cls):
        cls.scratch = tempfile.TemporaryDirectory(prefix="rocefab-misconfig-")
        with open(os.path.join(base.SOURCE, "configs", "misconfig-lossy-dscp.yaml")) as f:
            text = f.read()
        assert "\nnic:" not in text
        cls.config = os.path.join(cls.scratch.name, "misconfig-lossy-dscp-no-dcqcn.yaml")
        with open(cls.config, "w") as f:
            f.write(text + "\nnic:\n  dcqcn: { state: disabled }\n")
        super().setUpClass()

    @classmethod
    def tearDownClass(cls):
        super().tearDownClass()
        cls.scratch.cleanup()

    def test_roce_in_a_lossy_class_is_dropped_not_paused_and_rc_recovers(self):
        ports_of_sw1, nics = self.run_incast()
        self.assertGreater(ports_of_sw1["swp9"]["tail_drops"], 0)
        for name, port in ports_of_sw1.items():
            self.assertEqual(port["tx_prio3_pause"], 0, name)
            self.assertEqual(port["tx_prio0_pause"], 0, name)
        resent = sum(nics[h]["retransmitted_packets"] for h in self.clients)
        self.assertGreater(resent, 0)
        self.assertGreater(nics["h9"]["out_of_sequence"], 0)


if __name__ == "__main__":
    unittest.main(argv=[sys.argv[0]] + sys.argv[3:], verbosity=2)
