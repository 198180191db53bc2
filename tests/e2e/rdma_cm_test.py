#!/usr/bin/python3
"""rdma_cm end to end: unmodified Debian binaries (rdmacm-utils, perftest -R) linked against
librdmacm.so.1 run between two emulated hosts with our librdmacm and the daemon's CM; the CM's
MADs cross the fabric on QP1 and decode in tshark.

Run by meson (suite e2e) as:  /usr/bin/python3 rdma_cm_test.py BUILD_DIR SOURCE_DIR CASE
"""

import os
import re
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fabric_e2e_test as fx  # noqa: E402  (reads BUILD and SOURCE from argv too)

CM_CHECK = os.path.join(fx.BUILD, "tests", "e2e", "programs", "cm-connect-check")
# The programs' default ports (rdmacm-utils 44).
RPING_PORT, CMATOSE_PORT, UDADDY_PORT, RDMA_SERVER_PORT = 7174, 7471, 7174, 7471


class cm_case(fx.fabric_case):
    def wait_for_listener(self, host, port, server, timeout=60):
        """Waits until `server` (a Popen) listens on `port` of `host`, as the daemon's CM lists its
        ids (`rocefab show`, like iproute2's `rdma resource show cm_id`). A client started earlier
        is rejected (no listener, reason 8, as on hardware), and not every program survives that:
        perftest 4.5's connect retry uses the ids it has just destroyed."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for cm_id in self.counters()["cm"]["cm_ids"]:
                if cm_id["host"] == host and cm_id["state"] == "listening" and cm_id["src_port"] == int(port):
                    return
            if server.poll() is not None:
                self.fail("the server exited before it listened: %s%s" % server.communicate())
            time.sleep(0.1)
        self.fail("nobody listens on %s port %s after %d s" % (host, port, timeout))

    def pair(self, server_args, client_args, port, timeout=60, server_host="h1", client_host="h2"):
        """Starts the server, waits for it to listen on `port`, then runs the client; returns
        (server (rc, out, err), client CompletedProcess)."""
        server = self.start_on(server_host, *server_args)
        try:
            self.wait_for_listener(server_host, port, server)
            client = self.run_on(client_host, *client_args, timeout=timeout)
        finally:
            try:
                out, err = server.communicate(timeout=timeout)
            except subprocess.TimeoutExpired:
                server.kill()
                out, err = server.communicate()
        return (server.returncode, out, err), client


class rping(cm_case):
    def test_rping_1000_verified_pings_between_two_hosts(self):
        (rc, out, err), client = self.pair(["rping", "-s", "-a", "10.0.0.1", "-C", "1000"],
                                           ["rping", "-c", "-a", "10.0.0.1", "-C", "1000", "-v", "-V"], RPING_PORT)
        self.assertEqual(client.returncode, 0, client.stdout + client.stderr)
        self.assertEqual(rc, 0, out + err)
        pings = re.findall(r"rdma-ping-(\d+): ", client.stdout)
        self.assertEqual(len(pings), 1000, client.stdout[-500:])
        self.assertEqual(pings[-1], "999")
        self.assertNotIn("data verification failed", client.stdout + client.stderr)
        self.assertIn("DISCONNECT EVENT", client.stdout + client.stderr)
        counters = self.counters()
        gsi = [n["counters"].get("gsi_rx_mads", 0) for n in counters["nics"]]
        self.assertTrue(all(g >= 2 for g in gsi), gsi)  # REQ/RTU/DREQ one way, REP/DREP the other
        # Each QP was ready before its peer could send to it: the passive side reaches RTS
        # before its REP goes, the active side before its RTU.
        self.assertEqual([n["counters"]["rx_qp_state_drops"] for n in counters["nics"]], [0, 0])
        cm = counters["cm"]
        self.assertEqual(cm["connections_established"], 2)  # one per side
        self.assertEqual(cm["mads_malformed"], 0)
        self.assertEqual(cm["mads_retransmitted"], 0)
        self.assertEqual(cm["ids"], 0)  # both programs destroyed theirs


class ucmatose(cm_case):
    def test_ucmatose_connects_exchanges_and_disconnects(self):
        (rc, out, err), client = self.pair(["ucmatose", "-b", "10.0.0.1"], ["ucmatose", "-s", "10.0.0.1"], CMATOSE_PORT)
        self.assertEqual(client.returncode, 0, client.stdout + client.stderr)
        self.assertEqual(rc, 0, out + err)
        self.assertIn("data transfers complete", client.stdout)
        self.assertIn("return status 0", client.stdout)
        self.assertIn("disconnected", out)

    def test_ucmatose_several_connections(self):
        (rc, out, err), client = self.pair(["ucmatose", "-b", "10.0.0.1", "-c", "4", "-C", "20"],
                                           ["ucmatose", "-s", "10.0.0.1", "-c", "4", "-C", "20"], CMATOSE_PORT)
        self.assertEqual(client.returncode, 0, client.stdout + client.stderr)
        self.assertEqual(rc, 0, out + err)
        self.assertIn("return status 0", out)


class udaddy(cm_case):
    def test_udaddy_resolves_the_servers_qp_by_sidr_and_exchanges_datagrams(self):
        (rc, out, err), client = self.pair(["udaddy", "-b", "10.0.0.1"], ["udaddy", "-s", "10.0.0.1"], UDADDY_PORT)
        self.assertEqual(client.returncode, 0, client.stdout + client.stderr)
        self.assertEqual(rc, 0, out + err)
        self.assertIn("data transfers complete", client.stdout)
        self.assertIn("sending replies", out)  # the server answers through AHs made from the datagrams
        self.assertIn("return status 0", out)


class rdma_server_client(cm_case):
    def test_rdma_getaddrinfo_create_ep_and_the_rdma_verbs_helpers(self):
        (rc, out, err), client = self.pair(["rdma_server", "-s", "10.0.0.1"], ["rdma_client", "-s", "10.0.0.1"], RDMA_SERVER_PORT)
        self.assertEqual(client.returncode, 0, client.stdout + client.stderr)
        self.assertEqual(rc, 0, out + err)
        self.assertIn("rdma_client: end 0", client.stdout)
        self.assertIn("rdma_server: end 0", out)


class qperf_cm(cm_case):
    """qperf finds its server over TCP by the fabric address (each host has its own network
    namespace), then connects its RC QPs with rdma_cm (-cm1): the CM's MADs and the RDMA traffic
    cross the fabric."""

    def test_qperf_rc_bw_and_rc_lat_with_rdma_cm(self):
        port = str(fx.free_tcp_port())
        server = self.start_on("h1", "qperf", "-lp", port)
        try:
            deadline = time.monotonic() + 20
            while True:
                out = self.run_on("h2", "qperf", "-lp", port, self.address_of("h1"), "-cm1", "-t", "1", "rc_bw",
                                  "rc_lat", timeout=120)
                if out.returncode == 0 or "failed to connect" not in out.stderr or time.monotonic() > deadline:
                    break
                time.sleep(0.2)
        finally:
            server.kill()
            server.communicate()
        self.assertEqual(out.returncode, 0, out.stdout + out.stderr)
        self.assertRegex(out.stdout, r"rc_bw:\s+bw\s+=\s+[\d.]+ [MG]B/sec")
        self.assertRegex(out.stdout, r"rc_lat:\s+latency\s+=\s+[\d.]+ us")
        counters = self.counters()
        self.assertTrue(all(n["counters"]["port_xmit_data"] > 10**6 for n in counters["nics"]))


class cm_errors(cm_case):
    def test_connect_to_a_port_nobody_listens_on_is_rejected_invalid_service_id(self):
        # The peer's CM answers a REQ for an unknown service ID with REJ reason 8 (IBA 12.6.7.2,
        # cm.c cm_match_req); rdma_cm reports REJECTED with the reason as status.
        out = self.run_on("h1", CM_CHECK, "10.0.0.2", "4999", "RDMA_CM_EVENT_REJECTED")
        self.assertEqual(out.returncode, 0, out.stdout + out.stderr)
        self.assertIn("interrupted: -1 EINTR", out.stdout)  # a signal ends a blocked rdma_get_cm_event
        self.assertIn("event RDMA_CM_EVENT_ADDR_RESOLVED status 0", out.stdout)
        self.assertIn("event RDMA_CM_EVENT_ROUTE_RESOLVED status 0", out.stdout)
        self.assertIn("event RDMA_CM_EVENT_REJECTED status 8", out.stdout)

    def test_a_sidr_request_for_a_port_nobody_listens_on_is_unreachable_with_the_sidr_status(self):
        # SIDR_REP status 1, "service ID not supported" (IBA 12.11.2), as the kernel's cma passes it on.
        out = self.run_on("h1", CM_CHECK, "10.0.0.2", "4999", "RDMA_CM_EVENT_UNREACHABLE", "2000", "udp")
        self.assertEqual(out.returncode, 0, out.stdout + out.stderr)
        self.assertIn("event RDMA_CM_EVENT_UNREACHABLE status 1", out.stdout)

    def test_an_address_nobody_has_on_the_subnet_is_an_address_error(self):
        # No neighbour answers: ADDR_ERROR with -ETIMEDOUT once the resolve timeout passes.
        start = time.monotonic()
        out = self.run_on("h1", CM_CHECK, "10.0.0.77", "4999", "RDMA_CM_EVENT_ADDR_ERROR", "500")
        self.assertEqual(out.returncode, 0, out.stdout + out.stderr)
        self.assertIn("event RDMA_CM_EVENT_ADDR_ERROR status -110", out.stdout)
        self.assertGreaterEqual(time.monotonic() - start, 0.5)

    def test_rping_to_a_port_without_listener_fails(self):
        out = self.run_on("h2", "rping", "-c", "-a", "10.0.0.1", "-p", "4998", "-C", "1")
        self.assertNotEqual(out.returncode, 0)
        self.assertIn("RDMA_CM_EVENT_REJECTED", out.stdout + out.stderr)


class cm_unreachable(cm_case):
    """The CM's timeouts are the kernel's (a REQ is tried 16 times, 4.8 s apart); this fabric's
    daemon gets short ones through its environment, so retries run out within a second."""

    @classmethod
    def setUpClass(cls):
        os.environ["ROCEFAB_CM_RESPONSE_TIMEOUT"] = "15"   # 134 ms
        os.environ["ROCEFAB_CM_PACKET_LIFE_TIME"] = "10"   # 4 ms
        os.environ["ROCEFAB_CM_MAX_RETRIES"] = "3"
        try:
            super().setUpClass()
        finally:
            for k in ("ROCEFAB_CM_RESPONSE_TIMEOUT", "ROCEFAB_CM_PACKET_LIFE_TIME", "ROCEFAB_CM_MAX_RETRIES"):
                del os.environ[k]

    def test_a_req_nobody_answers_is_unreachable_after_the_retries(self):
        # Off the subnet, the gateway (the switch) takes the frames, and nobody has the address.
        out = self.run_on("h1", CM_CHECK, "10.9.9.9", "4999", "RDMA_CM_EVENT_UNREACHABLE")
        self.assertEqual(out.returncode, 0, out.stdout + out.stderr)
        self.assertIn("event RDMA_CM_EVENT_UNREACHABLE status -110", out.stdout)

    def test_a_connect_over_a_down_link_is_unreachable(self):
        down = self.rocefab("link", "--fabric", self.name, "h2/rfab0", "--down")
        self.assertEqual(down.returncode, 0, down.stderr)
        try:
            out = self.run_on("h1", CM_CHECK, "10.0.0.2", "4999", "RDMA_CM_EVENT_UNREACHABLE")
        finally:
            self.rocefab("link", "--fabric", self.name, "h2/rfab0", "--up")
        self.assertEqual(out.returncode, 0, out.stdout + out.stderr)
        self.assertIn("event RDMA_CM_EVENT_UNREACHABLE status -110", out.stdout)


    def test_a_link_down_for_a_while_delays_the_connect_until_a_retried_req_gets_through(self):
        before = self.counters()["cm"]  # the class's other tests share the fabric
        server = self.start_on("h1", "rping", "-s", "-a", "10.0.0.1", "-C", "10")
        self.wait_for_listener("h1", RPING_PORT, server)
        down = self.rocefab("link", "--fabric", self.name, "h2/rfab0", "--down")
        self.assertEqual(down.returncode, 0, down.stderr)
        start = time.monotonic()
        client = self.start_on("h2", "rping", "-c", "-a", "10.0.0.1", "-C", "10", "-v", "-V")
        time.sleep(0.4)  # the first REQ (and maybe a retry) is lost on the way
        up = self.rocefab("link", "--fabric", self.name, "h2/rfab0", "--up")
        self.assertEqual(up.returncode, 0, up.stderr)
        out, err = client.communicate(timeout=60)
        elapsed = time.monotonic() - start
        server_out, server_err = server.communicate(timeout=60)
        self.assertEqual(client.returncode, 0, out + err)
        self.assertEqual(server.returncode, 0, server_out + server_err)
        self.assertEqual(len(re.findall(r"rdma-ping-\d+: ", out)), 10)
        self.assertGreaterEqual(elapsed, 0.4)
        cm = self.counters()["cm"]
        self.assertGreaterEqual(cm["mads_retransmitted"] - before["mads_retransmitted"], 1)
        self.assertEqual(cm["connect_timeouts"], before["connect_timeouts"])
        self.assertEqual(cm["connections_established"] - before["connections_established"], 2)


class cm_capture(cm_case):
    def test_the_cm_handshake_decodes_in_tshark_as_cm_mads(self):
        pcap = os.path.join(self.runtime.name, "cm.pcap")
        start = self.rocefab("capture", "--fabric", self.name, "h2/rfab0", "-w", pcap)
        self.assertEqual(start.returncode, 0, start.stderr)
        (rc, out, err), client = self.pair(["rping", "-s", "-a", "10.0.0.1", "-C", "3"],
                                           ["rping", "-c", "-a", "10.0.0.1", "-C", "3", "-V"], RPING_PORT)
        self.assertEqual(client.returncode, 0, client.stdout + client.stderr)
        stop = self.rocefab("capture", "--fabric", self.name, "h2/rfab0", "--stop")
        self.assertEqual(stop.returncode, 0, stop.stderr)
        fields = subprocess.run(["tshark", "-r", pcap, "-Y", "infiniband.mad", "-T", "fields",
                                 "-e", "infiniband.mad.attributeid", "-e", "infiniband.bth.destqp"],
                                capture_output=True, text=True)
        self.assertEqual(fields.returncode, 0, fields.stderr)
        attributes = [l.split("\t")[0] for l in fields.stdout.splitlines() if l.strip()]
        # REQ 0x10, MRA 0x11 (the kernel's cma sends one as soon as the program has the request),
        # REP 0x13, RTU 0x14, DREQ 0x15, DREP 0x16 (IBA 12.6.2), in that order of first sight.
        seen = []
        for a in attributes:
            value = int(a, 0)
            if value not in seen:
                seen.append(value)
        self.assertEqual(seen[:4], [0x10, 0x11, 0x13, 0x14], attributes)
        self.assertIn(0x15, seen)
        self.assertIn(0x16, seen)
        for line in fields.stdout.splitlines():
            if line.strip():
                self.assertEqual(int(line.split("\t")[1], 0), 1)  # to QP1, the GSI
        verbose = subprocess.run(["tshark", "-r", pcap, "-V", "-Y", "infiniband.mad"], capture_output=True, text=True)
        for message in ("CM ConnectRequest", "CM ConnectReply", "CM ReadyToUse", "CM DisconnectRequest",
                        "CM DisconnectReply"):
            self.assertIn(message, verbose.stdout)
        self.assertNotIn("Malformed", verbose.stdout)
        self.assertNotIn("Expert Info (Error", verbose.stdout)
        self.assertNotIn("Expert Info (Warning", verbose.stdout)


class perftest_cm(cm_case):
    """perftest -R connects twice on one port: first the QP it exchanges keys over, then, once the
    server listens again, the QPs under test. perftest 4.5 (Debian 12) races there: a client whose
    second REQ arrives before the server's second rdma_listen is rejected (no listener, reason 8, as
    on hardware), and its retry then uses the ids and event channel it has just destroyed (fixed
    upstream in perftest 25), so it crashes or hangs. A run that lost that race, as the CM's
    req_rejected_no_listener counter shows, is run again; a connection refused three times fails."""

    def perftest(self, program, *extra):
        for _ in range(3):
            port = str(fx.free_tcp_port())
            args = [program, "-R", "-d", "rfab0", "-p", port, *extra]
            rejected_before = self.counters()["cm"]["req_rejected_no_listener"]
            server = self.start_on("h1", *args)
            client = None
            try:
                self.wait_for_listener("h1", port, server)
                client = self.start_on("h2", *args, "10.0.0.1")
                deadline = time.monotonic() + 120
                while True:
                    raced = self.counters()["cm"]["req_rejected_no_listener"] > rejected_before
                    if raced or client.poll() is not None or time.monotonic() > deadline:
                        break
                    time.sleep(0.2)
                if client.poll() is None:
                    client.kill()
                client_out, client_err = client.communicate()
                if raced:
                    print("\n  %s -R: the client lost perftest's race for the second listen; again" % program,
                          file=sys.stderr)
                    continue
                try:
                    out, err = server.communicate(timeout=120)
                except subprocess.TimeoutExpired:
                    server.kill()
                    out, err = server.communicate()
                self.assertEqual(client.returncode, 0, client_out + client_err)
                self.assertEqual(server.returncode, 0, out + err)
                return client_out
            finally:
                for p in (server, client):
                    if p is not None and p.poll() is None:
                        p.kill()
                        p.communicate()
        self.fail("%s -R: the client was rejected (no listener) in three runs out of three" % program)

    def test_ib_send_bw_over_rdma_cm(self):
        out = self.perftest("ib_send_bw", "-n", "200")
        self.assertRegex(out, r"\n\s*65536\s+200\s+[\d.]+\s+[\d.]+")

    def test_ib_write_lat_over_rdma_cm(self):
        out = self.perftest("ib_write_lat", "-n", "200")
        self.assertRegex(out, r"\n\s*2\s+200\s+[\d.]+")

    def test_ib_read_bw_over_rdma_cm(self):
        out = self.perftest("ib_read_bw", "-n", "200")
        self.assertRegex(out, r"\n\s*65536\s+200\s+[\d.]+\s+[\d.]+")



PYVERBS_CHECK = os.path.join(fx.SOURCE, "tests", "e2e", "programs", "cm_pyverbs_check.py")


@unittest.skipUnless(subprocess.run(["/usr/bin/python3", "-c", "import pyverbs.cmid"],
                                    capture_output=True).returncode == 0, "pyverbs (python3-pyverbs) is not installed")
class pyverbs_cm(cm_case):
    """The flows of rdma-core's test_rdmacm that no rdmacm-utils program takes, both ends on h1."""

    def test_an_external_qp_moved_by_rdma_init_qp_attr_connects_through_rdma_establish(self):
        out = self.run_on("h1", "/usr/bin/python3", PYVERBS_CHECK, "ext_qp", "10.0.0.1", "7481")
        self.assertEqual(out.returncode, 0, out.stdout + out.stderr)
        self.assertIn("ok", out.stdout)

    def test_a_udp_id_has_its_devices_pd_for_the_ah_of_its_sidr_reply(self):
        out = self.run_on("h1", "/usr/bin/python3", PYVERBS_CHECK, "udp", "10.0.0.1", "7482")
        self.assertEqual(out.returncode, 0, out.stdout + out.stderr)
        self.assertIn("ok", out.stdout)

if __name__ == "__main__":
    unittest.main(argv=[sys.argv[0], *sys.argv[3:]], verbosity=2)
