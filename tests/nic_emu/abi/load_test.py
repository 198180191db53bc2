#!/usr/bin/python3
"""Checks that unmodified rdma-core / perftest binaries load against our libibverbs.so.1.

perftest is linked with BIND_NOW and pulls in librdmacm, libmlx5 and libefa,
whose constructors call verbs_register_driver_34; one missing symbol or version
node and the dynamic linker refuses to start the program.  Two checks:

1. `ldd -r` (resolve every symbol, data and functions, without running the
   program) on every ibverbs-utils / perftest binary and on rdma-core's own
   libraries that import libibverbs: no "undefined symbol", no "version ... not
   found", and libibverbs.so.1 resolves to our directory, not the system one.
2. Actually start a few programs (LD_BIND_NOW=1) so that the providers'
   constructors run against our library.  --help may exit non-zero; only the
   loader's complaints matter.  No daemon is named (ROCEFAB_SOCKET is removed),
   so ibv_devices and ibv_devinfo find no device and the library stays local.

Usage: load_test.py DIR_OF_OUR_LIBIBVERBS (build/nic_emu/verbs, the library users load)
"""

import glob
import os
import subprocess
import sys

# What ld.so and ldd print when binding fails ("version `IBVERBS_1.14' not
# found", "undefined symbol: ...", "libfoo.so.1 => not found").
LOADER_ERRORS = ('symbol lookup error', 'undefined symbol', 'version `', 'no version information',
                 'error while loading shared libraries', '=> not found')

RUN = [
    ['/usr/bin/ib_write_bw', '--help'],
    ['/usr/bin/ib_read_lat', '--help'],
    ['/usr/bin/ib_atomic_bw', '--help'],
    ['/usr/bin/ib_send_bw', '-h'],
    ['/usr/bin/ibv_devices'],
    ['/usr/bin/ibv_devinfo'],
]


def main():
    lib_dir = os.path.abspath(sys.argv[1])
    our_lib = os.path.join(lib_dir, 'libibverbs.so.1')
    if not os.path.exists(our_lib):
        print('no %s' % our_lib)
        return 1
    env = dict(os.environ, LD_LIBRARY_PATH=lib_dir, LD_BIND_NOW='1')
    env.pop('ROCEFAB_SOCKET', None)
    env.pop('ROCEFAB_HOST', None)
    failures = []

    objects = sorted(glob.glob('/usr/bin/ibv_*') + glob.glob('/usr/bin/ib_*_*') + glob.glob('/usr/bin/raw_ethernet_*'))
    objects += sorted(glob.glob('/usr/lib/x86_64-linux-gnu/lib*.so.1') + glob.glob('/usr/lib/x86_64-linux-gnu/libibverbs/*.so'))
    checked = 0
    for path in objects:
        needed = subprocess.run(['objdump', '-p', path], capture_output=True, text=True).stdout
        if 'NEEDED               libibverbs.so.1' not in needed:
            continue
        checked += 1
        r = subprocess.run(['ldd', '-r', path], env=env, capture_output=True, text=True, timeout=60)
        out = r.stdout + r.stderr
        bad = [l.strip() for l in out.splitlines() if any(e in l for e in LOADER_ERRORS)]
        if bad:
            failures.append('%s:\n    %s' % (path, '\n    '.join(bad)))
        resolved = [l for l in out.splitlines() if l.strip().startswith('libibverbs.so.1 =>')]
        if not resolved or our_lib not in resolved[0] and os.path.realpath(our_lib) not in resolved[0]:
            failures.append('%s: libibverbs.so.1 did not resolve to %s: %s' % (path, our_lib, resolved))
    if checked < 10:
        failures.append('only %d objects linked against libibverbs found; ibverbs-utils/perftest missing?' % checked)

    for argv in RUN:
        try:
            r = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=30)
        except subprocess.TimeoutExpired:
            failures.append('%s: timed out' % ' '.join(argv))
            continue
        out = r.stdout + r.stderr
        bad = [l.strip() for l in out.splitlines() if any(e in l for e in LOADER_ERRORS)]
        if bad or r.returncode < 0 or r.returncode == 127:
            failures.append('%s (exit %d):\n    %s' % (' '.join(argv), r.returncode, '\n    '.join(bad or out.splitlines()[:5])))

    if failures:
        print('\n'.join(failures))
        return 1
    print('%d objects resolve every symbol against %s; %d programs started' % (checked, our_lib, len(RUN)))
    return 0


if __name__ == '__main__':
    sys.exit(main())
