#!/usr/bin/python3
"""Checks that our librdmacm.so.1 exports rdma-core 44's ABI exactly, as compare_abi.py does for
libibverbs: the same names under the same version nodes (RDMACM_1.0 to 1.3), the same SONAME, and
an exact split between cma.cpp (implemented_symbols.txt) and unsupported.cpp (ENOSYS).

Usage: compare_rdmacm_abi.py REAL_LIB FULL_LIB PARTIAL_LIB IMPLEMENTED_TXT
"""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "abi"))
from compare_abi import exported_symbols, show, version_definitions  # noqa: E402


def main():
    real_lib, full_lib, partial_lib, implemented_txt = sys.argv[1:5]
    failures = []
    real = exported_symbols(real_lib)
    full = exported_symbols(full_lib)
    if len(real) < 60:
        failures.append("suspiciously few symbols (%d) read from %s" % (len(real), real_lib))
    if real - full:
        failures.append("missing from %s:\n%s" % (full_lib, show(real - full)))
    if full - real:
        failures.append("exported by %s but not by rdma-core 44:\n%s" % (full_lib, show(full - real)))
    real_nodes, real_soname = version_definitions(real_lib)
    full_nodes, full_soname = version_definitions(full_lib)
    if real_nodes != full_nodes:
        failures.append("version nodes differ:\n  rdma-core: %s\n  ours:      %s" % (real_nodes, full_nodes))
    if real_soname != full_soname:
        failures.append("SONAME differs: rdma-core %s, ours %s" % (real_soname, full_soname))
    with open(implemented_txt) as f:
        implemented = {line.strip() for line in f if line.strip() and not line.startswith("#")}
    real_defaults = {s for s in real if s[2] and s[0] != s[1]}
    unknown = implemented - {s[0] for s in real_defaults}
    if unknown:
        failures.append("implemented_symbols.txt names no rdma-core symbol: %s" % sorted(unknown))
    expected_partial = {s for s in real if s[0] not in implemented}
    partial = exported_symbols(partial_lib)
    if expected_partial - partial:
        failures.append("unsupported.cpp lacks (and implemented_symbols.txt does not list):\n%s"
                        % show(expected_partial - partial))
    if partial - expected_partial:
        failures.append("unsupported.cpp defines what cma.cpp implements:\n%s" % show(partial - expected_partial))
    if failures:
        print("\n".join(failures))
        return 1
    print("ABI matches rdma-core 44's librdmacm: %d dynamic symbols, %d version nodes, SONAME %s; %d implemented"
          % (len(real), len(real_nodes) - 1, real_soname, len(implemented)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
