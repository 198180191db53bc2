#!/usr/bin/python3
"""End-to-end: `rocefab sim` as a user runs it: a progress line, the CSVs, the plots, and a clear error
for a bad scenario.

Run by meson (suite e2e) as:  /usr/bin/python3 sim_cli_test.py BUILD_DIR SOURCE_DIR [unittest args]
"""

import csv
import os
import subprocess
import sys
import tempfile
import unittest

BUILD, SOURCE = sys.argv[1], sys.argv[2]
ROCEFAB = os.path.join(BUILD, "rocefab")


class sim_cli(unittest.TestCase):
    def test_a_scenario_leaves_csvs_and_plots_and_reports_progress(self):
        with tempfile.TemporaryDirectory() as out:
            run = subprocess.run([ROCEFAB, "sim", os.path.join(SOURCE, "configs", "incast-16to1-dcqcn.yaml"),
                                  "--output", out], capture_output=True, text=True, timeout=300)
            self.assertEqual(run.returncode, 0, run.stderr)
            self.assertIn("10.000 ms of 10.000 ms simulated", run.stderr)  # the progress line, finished
            self.assertIn("16 of 16 flows completed", run.stdout)
            for name in ("queues", "flows", "counters", "fct"):
                self.assertGreater(os.path.getsize(os.path.join(out, name + ".csv")), 0, name)
            for name in ("queues", "rates", "sent", "counters"):
                with open(os.path.join(out, name + ".png"), "rb") as f:
                    self.assertEqual(f.read(8), b"\x89PNG\r\n\x1a\n", name)
                with open(os.path.join(out, name + ".svg")) as f:
                    self.assertIn("<svg", f.read(), name)
            with open(os.path.join(out, "fct.csv")) as f:
                rows = list(csv.DictReader(f))
            self.assertEqual(len(rows), 16)
            self.assertTrue(all(r["status"] == "completed" and float(r["slowdown"]) >= 1 for r in rows))

    def test_a_bad_scenario_names_its_file_line_and_key(self):
        with tempfile.NamedTemporaryFile("w", suffix=".yaml") as bad:
            bad.write("hosts:\n  - { name: h1, nics: [ { name: rfab0, address: 10.0.0.1/24 } ] }\n"
                      "  - { name: h2, nics: [ { name: rfab0, address: 10.0.0.2/24 } ] }\n"
                      "links: [ { a: h1/rfab0, b: h2/rfab0 } ]\n"
                      "traffic: [ { from: h1, to: h3, size: 1MB } ]\n")
            bad.flush()
            run = subprocess.run([ROCEFAB, "sim", bad.name], capture_output=True, text=True, timeout=60)
            self.assertEqual(run.returncode, 2)
            self.assertIn(bad.name + ":5:", run.stderr)
            self.assertIn("traffic[0].to: unknown host 'h3' (hosts: h1, h2)", run.stderr)


if __name__ == "__main__":
    unittest.main(argv=[sys.argv[0]] + sys.argv[3:], verbosity=2)
