#!/usr/bin/python3
"""Differential test of the enum-to-string and rate functions against rdma-core.

Each library is loaded in its own child process (both are libibverbs.so.1;
keeping them apart avoids any doubt about which copy answered), asked for every
enum value in and around the defined range, and every integer from -3 up past the highest
rate for the rate conversions; the answers must be identical.

Usage: compare_strings.py REAL_LIB OUR_LIB
"""

import ctypes
import subprocess
import sys

STRING_FUNCTIONS = ['ibv_wc_status_str', 'ibv_node_type_str', 'ibv_port_state_str', 'ibv_event_type_str']
INT_FUNCTIONS = [
    ('ibv_rate_to_mult', range(-3, 64)),
    ('ibv_rate_to_mbps', range(-3, 64)),
    ('mult_to_ibv_rate', range(-3, 4096)),
    ('mbps_to_ibv_rate', range(-3, 2_000_001)),  # 1200 Gb/s is 1 275 000 Mb/s
]


def dump(lib_path):
    lib = ctypes.CDLL(lib_path)
    lines = []
    for name in STRING_FUNCTIONS:
        fn = getattr(lib, name)
        fn.restype, fn.argtypes = ctypes.c_char_p, [ctypes.c_int]
        for v in range(-3, 64):
            lines.append('%s(%d) = %r' % (name, v, fn(v)))
    # The int functions are swept over their whole useful domain; only the
    # points where the answer changes are printed, so the dump stays short.
    for name, domain in INT_FUNCTIONS:
        fn = getattr(lib, name)
        fn.restype, fn.argtypes = ctypes.c_int, [ctypes.c_int]
        previous = None
        for v in domain:
            answer = fn(v)
            if answer != previous:
                lines.append('%s(%d) = %d' % (name, v, answer))
                previous = answer
    return '\n'.join(lines)


def main():
    if sys.argv[1] == '--dump':
        print(dump(sys.argv[2]))
        return 0
    real_lib, our_lib = sys.argv[1:3]
    real = subprocess.run([sys.executable, __file__, '--dump', real_lib], check=True,
                          capture_output=True, text=True).stdout.splitlines()
    ours = subprocess.run([sys.executable, __file__, '--dump', our_lib], check=True,
                          capture_output=True, text=True).stdout.splitlines()
    diffs = ['rdma-core: %s\n     ours: %s' % (r, o) for r, o in zip(real, ours) if r != o]
    if len(real) != len(ours) or diffs:
        print('\n'.join(diffs[:40]) or 'different number of answers')
        return 1
    print('%d answers identical to rdma-core' % len(real))
    return 0


if __name__ == '__main__':
    sys.exit(main())
