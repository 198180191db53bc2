#!/usr/bin/python3
"""Unmodified rdma_cm programs (rdmacm-utils, perftest, qperf, librspreload) load against our
librdmacm.so.1 and libibverbs.so.1: `ldd -r` resolves every symbol and version node, and
librdmacm.so.1 comes from our folder. Outside `rocefab run` (no daemon), creating an event
channel fails with ENODEV, as rdma-core's does on a machine with no RDMA device.

Usage: load_rdmacm_test.py DIR_OF_OUR_LIBRDMACM DIR_OF_OUR_LIBIBVERBS
"""

import glob
import os
import subprocess
import sys

LOADER_ERRORS = ("symbol lookup error", "undefined symbol", "version `", "no version information",
                 "error while loading shared libraries", "=> not found")


def main():
    rdmacm_dir, verbs_dir = (os.path.abspath(d) for d in sys.argv[1:3])
    env = dict(os.environ, LD_LIBRARY_PATH=rdmacm_dir + ":" + verbs_dir, LD_BIND_NOW="1")
    env.pop("ROCEFAB_SOCKET", None)
    env.pop("ROCEFAB_CM_SOCKET", None)
    programs = [p for p in ["/usr/bin/rping", "/usr/bin/ucmatose", "/usr/bin/udaddy", "/usr/bin/rdma_server",
                            "/usr/bin/rdma_client", "/usr/bin/rstream", "/usr/bin/mckey", "/usr/bin/qperf",
                            "/usr/bin/ib_send_bw", "/usr/bin/ib_write_lat", "/usr/bin/ib_read_bw",
                            "/usr/lib/x86_64-linux-gnu/rsocket/librspreload.so.1"] if os.path.exists(p)]
    programs += glob.glob("/usr/lib/x86_64-linux-gnu/rsocket/*.so*")
    failures = []
    for p in sorted(set(programs)):
        out = subprocess.run(["ldd", "-r", p], capture_output=True, text=True, env=env)
        text = out.stdout + out.stderr
        if any(e in text for e in LOADER_ERRORS):
            failures.append("%s:\n%s" % (p, text))
        for line in text.splitlines():
            if "librdmacm.so.1 =>" in line and rdmacm_dir not in line:
                failures.append("%s loads %s" % (p, line.strip()))
    # A real start: rping's server creates its event channel first; with no fabric it must fail
    # cleanly (ENODEV), not crash or hang.
    out = subprocess.run(["/usr/bin/rping", "-s", "-a", "10.0.0.1", "-C", "1"], capture_output=True, text=True,
                         env=env, timeout=30)
    if out.returncode == 0 or out.returncode < 0 or any(e in out.stdout + out.stderr for e in LOADER_ERRORS):
        failures.append("rping outside a fabric: rc %d\n%s%s" % (out.returncode, out.stdout, out.stderr))
    if failures:
        print("\n".join(failures))
        return 1
    print("%d programs and libraries load against our librdmacm" % len(set(programs)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
