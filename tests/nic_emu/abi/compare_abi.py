#!/usr/bin/python3
"""Checks that our libibverbs.so.1, the one users load, exports rdma-core 44's ABI exactly.

The referee is `objdump -T` / `objdump -p` of the system libibverbs.so.1
(Debian libibverbs1 44.0).  Four properties:

1. Our library exports the same dynamic symbols as the real one: same names,
   same version node, same default (@@) or compat (@) binding, same kind
   (function or data object), and nothing more.
2. None of those names is an undefined reference in ours: each is defined
   there, not left for another library to provide at run time.
3. Both define the same version nodes with the same inheritance chain and the
   same SONAME, so references like `ibv_open_device@IBVERBS_1.1` bind.
4. The split of work is exact: the library built from unsupported.cpp +
   strings.cpp alone exports every real default symbol except those listed in
   implemented_symbols.txt (which verbs.cpp and its neighbours provide), plus
   every compat symbol.

Usage: compare_abi.py REAL_LIB OUR_LIB PARTIAL_LIB IMPLEMENTED_TXT
"""

import re
import subprocess
import sys

# addr, 7 flag columns, section, size, version, name
_SYMBOL_LINE = re.compile(r'^[0-9a-f]+ (.{7}) (\S+)\s+[0-9a-f]+\s+(\S+)\s+(\S+)$')


def exported_symbols(lib):
    """Return {(name, version, is_default, kind)} of the defined dynamic symbols."""
    out = subprocess.run(['objdump', '-T', lib], check=True, capture_output=True, text=True).stdout
    symbols = set()
    for line in out.splitlines():
        m = _SYMBOL_LINE.match(line)
        if not m:
            continue
        flags, section, version, name = m.groups()
        if section == '*UND*':
            continue
        is_default = not version.startswith('(')
        kind = 'object' if flags.endswith('O') else 'function' if flags.endswith('F') else flags.strip()
        symbols.add((name, version.strip('()'), is_default, kind))
    return symbols


def undefined_names(lib):
    """Return the names that `lib` imports (its *UND* dynamic symbols)."""
    out = subprocess.run(['objdump', '-T', lib], check=True, capture_output=True, text=True).stdout
    return {line.split()[-1] for line in out.splitlines() if ' *UND*' in line}


def version_definitions(lib):
    """Return ({node: parent-or-None}, soname) from `objdump -p`."""
    out = subprocess.run(['objdump', '-p', lib], check=True, capture_output=True, text=True).stdout
    soname = None
    nodes = {}
    in_defs = False
    last = None
    for line in out.splitlines():
        if line.strip().startswith('SONAME'):
            soname = line.split()[1]
        if line.startswith('Version definitions:'):
            in_defs = True
            continue
        if in_defs:
            if not line.strip() or line.startswith('Version References'):
                in_defs = False
                continue
            fields = line.split()
            if line[0].isdigit():
                last = fields[-1]
                nodes[last] = None
            else:
                nodes[last] = fields[0]
    return nodes, soname


def show(entries):
    return '\n'.join('  %s %s%s (%s)' % (n, '@@' if d else '@', v, k) for n, v, d, k in sorted(entries))


def main():
    real_lib, our_lib, partial_lib, implemented_txt = sys.argv[1:5]
    failures = []

    real = exported_symbols(real_lib)
    ours = exported_symbols(our_lib)
    if len(real) < 150:
        failures.append('suspiciously few symbols (%d) read from %s' % (len(real), real_lib))
    if real - ours:
        failures.append('missing from %s:\n%s' % (our_lib, show(real - ours)))
    if ours - real:
        failures.append('exported by %s but not by rdma-core 44:\n%s' % (our_lib, show(ours - real)))
    # A name the version script lists but nothing defines is simply not exported (caught above);
    # one that our code calls without defining would be bound to whatever else the program loaded.
    imported = {s[0] for s in real} & undefined_names(our_lib)
    if imported:
        failures.append('%s imports what it must define: %s' % (our_lib, sorted(imported)))

    real_nodes, real_soname = version_definitions(real_lib)
    our_nodes, our_soname = version_definitions(our_lib)
    # The first definition is the file's own name (libibverbs.so.1), not a node.
    if real_nodes != our_nodes:
        failures.append('version nodes differ:\n  rdma-core: %s\n  ours:      %s' % (real_nodes, our_nodes))
    if real_soname != our_soname:
        failures.append('SONAME differs: rdma-core %s, ours %s' % (real_soname, our_soname))

    with open(implemented_txt) as f:
        implemented = {line.strip() for line in f if line.strip() and not line.startswith('#')}
    real_defaults = {s for s in real if s[2] and s[0] != s[1]}  # skip the node-name markers
    unknown = implemented - {s[0] for s in real_defaults}
    if unknown:
        failures.append('implemented_symbols.txt names no rdma-core default symbol: %s' % sorted(unknown))
    expected_partial = {s for s in real if s[0] not in implemented or not s[2]}
    partial = exported_symbols(partial_lib)
    if expected_partial - partial:
        failures.append('unsupported.cpp/strings.cpp lack (and implemented_symbols.txt does not list):\n%s'
                        % show(expected_partial - partial))
    if partial - expected_partial:
        failures.append('unsupported.cpp/strings.cpp define what verbs.cpp implements:\n%s'
                        % show(partial - expected_partial))

    if failures:
        print('\n'.join(failures))
        return 1
    compat = sum(1 for s in real if not s[2])
    print('%s has rdma-core 44\'s ABI: %d dynamic symbols (%d compat), %d version nodes, SONAME %s'
          % (our_lib, len(real), compat, len(real_nodes) - 1, real_soname))
    return 0


if __name__ == '__main__':
    sys.exit(main())
