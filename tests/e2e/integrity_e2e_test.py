#!/usr/bin/python3
"""End-to-end data integrity: rdma-integrity (tools/integrity/, built against the system libibverbs,
run with ours by `rocefab run`) moves mixed SEND / SEND with immediate / RDMA WRITE / RDMA WRITE with
immediate / RDMA READ / compare-and-swap / fetch-and-add operations of sizes 0 to 64 KiB between h1
and h2. The server checks every byte, length, immediate and the order of what it receives, and at
the end the value of every word the atomics changed; the client checks every byte READ returns,
the original value each atomic returns, and the opcode, order and byte_len of its completions.

Run by meson (suite e2e) as:
  /usr/bin/python3 integrity_e2e_test.py BUILD_DIR SOURCE_DIR [unittest args]
"""

import os
import re
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fabric_e2e_test import BUILD, TWO_HOSTS, fabric_case, free_tcp_port  # noqa: E402

INTEGRITY = os.path.join(BUILD, "tools", "integrity", "rdma-integrity")
SUMMARY = re.compile(r"^rdma-integrity: (\d+) messages, (\d+) bytes, 0 errors$", re.M)


class integrity_case(fabric_case):
    def integrity(self, *args, server_args=(), timeout=120):
        """Server on h2, client on h1; returns (server, client) as (returncode, stdout, stderr)."""
        port = str(free_tcp_port())
        common = ["-d", "rfab0", "-g", "1", "-p", port]
        server = self.start_on("h2", INTEGRITY, "--server", *common, *server_args)
        # The client retries its TCP connection until the server listens.
        client = self.run_on("h1", INTEGRITY, *common, *args, self.address_of("h2"), timeout=timeout)
        try:
            out, err = server.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            server.kill()
            out, err = server.communicate()
        return (server.returncode, out, err), (client.returncode, client.stdout, client.stderr)

    def responder_requests(self):
        """READ and atomic requests the NICs' responders have executed (duplicates not counted)."""
        totals = {"rx_read_requests": 0, "rx_atomic_requests": 0}
        for nic in self.counters()["nics"]:
            for key in totals:
                totals[key] += nic["counters"].get(key, 0)
        return totals

    def assert_intact(self, messages, *args, server_args=(),
                      executed=("rx_read_requests", "rx_atomic_requests")):
        before = self.responder_requests()
        server, client = self.integrity("-n", str(messages), *args, server_args=server_args)
        self.assertEqual(client[0], 0, "client: " + client[1] + client[2] + "\nserver: " + server[1] + server[2])
        self.assertEqual(server[0], 0, "server: " + server[1] + server[2])
        client_summary, server_summary = SUMMARY.search(client[1]), SUMMARY.search(server[1])
        self.assertIsNotNone(client_summary, client[1])
        self.assertIsNotNone(server_summary, server[1])
        self.assertEqual(client_summary.group(0), server_summary.group(0))
        self.assertEqual(int(client_summary.group(1)), messages)
        self.assertGreater(int(client_summary.group(2)), 0)
        after = self.responder_requests()  # the default mix has READs and atomics: the run really moved some
        for key in executed:
            self.assertGreater(after[key], before[key], (key, before, after))


class integrity(integrity_case):
    def test_mixed_opcodes_and_sizes_arrive_intact_at_path_mtu_1024(self):
        self.assert_intact(20000, "--mtu", "1024", "--max-size", "65536", "--seed", "1")

    def test_mixed_opcodes_and_sizes_arrive_intact_at_path_mtu_4096(self):
        self.assert_intact(20000, "--mtu", "4096", "--max-size", "65536", "--seed", "2")

    def test_with_completion_events_mixed_opcodes_arrive_intact(self):
        self.assert_intact(10000, "-e", "--mtu", "1024", "--max-size", "65536", "--seed", "3", server_args=("-e",))

    def test_small_messages_only_exercise_inline_and_scatter_gather(self):
        self.assert_intact(10000, "--max-size", "300", "--seed", "4")

    def test_reads_and_atomics_alone_return_what_the_server_holds(self):
        # Nothing but READ, compare-and-swap and fetch-and-add between the CHECKs, up to 16 of them
        # in flight (max_rd_atomic): READs scattered over several entries, atomics on 64 words.
        self.assert_intact(6000, "--ops", "read,cmp_swap,fetch_add", "--max-size", "20000", "--seed", "8")

    def test_atomics_between_sends_return_the_predicted_original_values(self):
        self.assert_intact(4000, "--ops", "cmp_swap,fetch_add,send", "--seed", "9", executed=("rx_atomic_requests",))


class integrity_detects_errors(integrity_case):
    """The checker itself: a byte flipped at the sender must be reported, not pass."""

    def test_a_flipped_byte_is_reported_with_its_sequence_and_offset(self):
        server, client = self.integrity("-n", "2000", "--seed", "5", "--inject-corruption", "700")
        self.assertEqual(server[0], 1, server[1] + server[2])
        self.assertEqual(client[0], 1, client[1] + client[2])
        match = re.search(r"error: seq (\d+) \((send|send_imm|write|write_imm), \d+ bytes[^)]*\): "
                          r"byte at offset 0: expected 0x([0-9a-f]{2}), got 0x([0-9a-f]{2})", server[2])
        self.assertIsNotNone(match, server[2])
        self.assertGreaterEqual(int(match.group(1)), 700)
        self.assertEqual(int(match.group(3), 16) ^ 0xFF, int(match.group(4), 16))
        self.assertNotRegex(server[1], SUMMARY)

    def test_bad_options_are_one_line_errors(self):
        for args, words in ((["--ops", "read,cmp_swap,sned"], "unknown opcode 'sned' (valid: send,send_imm,write,"
                                                              "write_imm,read,cmp_swap,fetch_add)"),
                            (["--ops", "sned"], "unknown opcode 'sned'"),
                            (["--mtu", "2048"], "--mtu: 2048 (valid: 1024, 4096)")):
            with self.subTest(args=args):
                out = subprocess.run([INTEGRITY, *args, "127.0.0.1"], capture_output=True, text=True, timeout=20)
                self.assertEqual(out.returncode, 2)
                self.assertIn(words, out.stderr)


FAULTS = "faults: { loss: 1%, corruption: 0.1%, reordering: 1% }"


class integrity_under_link_faults(integrity_case):
    """1 % loss, 0.1 % corruption and 1 % reordering on every link: go-back-N, the ICRC check, the
    transport timer, READ retries from the middle of a response and the responder's replay of
    atomic results must still deliver every byte exactly once and in order, and execute every
    atomic exactly once."""

    NIC = ""  # a topology nic: section to add, for the NICs' recovery modes

    @classmethod
    def setUpClass(cls):
        cls.config_dir = tempfile.TemporaryDirectory(prefix="rocefab-e2e-faults-")
        with open(TWO_HOSTS) as f:
            text = f.read()
        text, n = re.subn(r"(link: \{[^}]*)\}", r"\1, %s }" % FAULTS, text, count=1)
        assert n == 1, "configs/two-hosts.yaml has no defaults.link line to add faults to"
        text += cls.NIC
        cls.config = os.path.join(cls.config_dir.name, "two-hosts-faults.yaml")
        with open(cls.config, "w") as f:
            f.write(text)
        super().setUpClass()

    @classmethod
    def tearDownClass(cls):
        super().tearDownClass()
        cls.config_dir.cleanup()

    def fault_counters(self):
        totals = {"drops_loss": 0, "frames_corrupted": 0, "frames_reordered": 0}
        for link in self.counters()["links"]:
            for key in totals:
                totals[key] += link.get(key, 0)
        return totals

    def assert_faults_happened(self, before):
        after = self.fault_counters()
        for key in after:
            self.assertGreater(after[key], before[key], (key, before, after))

    def test_every_byte_arrives_once_and_in_order_despite_loss_corruption_and_reordering(self):
        before = self.fault_counters()
        self.assert_intact(3000, "--mtu", "1024", "--max-size", "16384", "--seed", "6")
        self.assert_faults_happened(before)

    def test_faults_set_live_with_rocefab_link_at_path_mtu_4096_with_events(self):
        # Heavier on h1's cable only, set while the fabric runs; the config's faults stay on h2's.
        change = self.rocefab("link", "--fabric", self.name, "h1/rfab0", "--loss", "2%", "--corruption", "0.5%",
                              "--reordering", "2%")
        self.assertEqual(change.returncode, 0, change.stderr)
        before = self.fault_counters()
        self.assert_intact(2000, "-e", "--mtu", "4096", "--max-size", "65536", "--seed", "7", server_args=("-e",))
        self.assert_faults_happened(before)


class integrity_with_adaptive_retransmission(integrity_under_link_faults):
    """The same faults with the NICs in selective repeat and adaptive retransmission (ConnectX's
    roce_adp_retrans_en, docs/retransmission.md), through the daemon: the transport timer then
    fires after tens of microseconds, often while an ACK is still on its way, and every byte must
    still arrive once and in order, every atomic execute once."""

    NIC = "\nnic: { retransmission: selective-repeat, adaptive-retransmission: enabled }\n"


if __name__ == "__main__":
    unittest.main(argv=[sys.argv[0], *sys.argv[3:]], verbosity=2)
