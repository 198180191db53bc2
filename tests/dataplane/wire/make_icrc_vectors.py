#!/usr/bin/python3
"""Emit RoCEv2 frames with an ICRC computed independently of rocefab, as a C++ include file.

Made with (from the repository root; Debian's python3-scapy 2.5.0):
    /usr/bin/python3 tests/dataplane/wire/make_icrc_vectors.py > tests/dataplane/wire/icrc_vectors.inc

IPv4 frames take their ICRC from scapy.contrib.roce (BTH.compute_icrc). That module does not
support IPv6, so IPv6 frames use the small masking function below, written from IBA Annex
A17.3.3 with zlib.crc32; the script first checks that this function reproduces scapy's ICRC on
every IPv4 frame, so both paths agree with an outside implementation.
"""

import struct
import sys
import zlib

from scapy.all import Ether, IP, IPv6, UDP, Raw, Dot1Q
from scapy.contrib.roce import BTH

MAC_A = "02:fc:00:00:00:01"
MAC_B = "02:fc:00:00:00:02"


def ext_headers(opcode):
    """Extension headers after the BTH for the opcodes used below, as raw bytes (IBA 9.3)."""
    op = opcode & 0x1F
    reth = struct.pack("!QII", 0x00007F0012345678, 0xABCD1234, 4096)
    if opcode == 0x64:  # UD SEND_ONLY: DETH
        return struct.pack("!II", 0x11111111, 0x000123)
    if opcode == 0x65:  # UD SEND_ONLY_WITH_IMMEDIATE: DETH, ImmDt
        return struct.pack("!II", 0x11111111, 0x000123) + struct.pack("!I", 0xDEADBEEF)
    if op in (0x06, 0x0A, 0x0C):  # RDMA WRITE FIRST/ONLY, READ request: RETH
        return reth
    if op == 0x0B:  # RDMA WRITE ONLY with immediate: RETH, ImmDt
        return reth + struct.pack("!I", 0x01020304)
    if op in (0x03, 0x05, 0x09):  # ... with immediate: ImmDt
        return struct.pack("!I", 0xCAFEF00D)
    if op in (0x0D, 0x0F, 0x10, 0x11):  # read responses with AETH, ACK
        return struct.pack("!I", 0x1F000042)
    if op == 0x12:  # ATOMIC ACK: AETH, AtomicAckETH
        return struct.pack("!IQ", 0x00000007, 0x0123456789ABCDEF)
    if op in (0x13, 0x14):  # COMPARE_SWAP, FETCH_ADD: AtomicETH
        return struct.pack("!QIQQ", 0x1000, 0x2222, 5, 6)
    return b""


def payload_bytes(n):
    return bytes((i * 7 + 3) & 0xFF for i in range(n))


def icrc_from_annex(l3):
    """l3: IP header .. end of payload (pad included). Returns the CRC value (zlib convention)."""
    b = bytearray(l3)
    if b[0] >> 4 == 4:
        ihl = (b[0] & 0x0F) * 4
        b[1] = 0xFF                 # TOS
        b[8] = 0xFF                 # TTL
        b[10:12] = b"\xff\xff"      # header checksum
    else:
        ihl = 40
        b[0] |= 0x0F                # traffic class (high nibble) ...
        b[1:4] = b"\xff\xff\xff"    # ... traffic class (low nibble) and flow label
        b[7] = 0xFF                 # hop limit
    b[ihl + 6:ihl + 8] = b"\xff\xff"  # UDP checksum
    b[ihl + 8 + 4] = 0xFF             # BTH: FECN, BECN, reserved
    return zlib.crc32(b"\xff" * 8 + bytes(b)) & 0xFFFFFFFF


def frame(ipv6, opcode, payload_len, vlan=False, dscp=26, ecn=2, becn=0, psn=0x123456):
    pad = (4 - payload_len % 4) % 4
    body = ext_headers(opcode) + payload_bytes(payload_len) + b"\0" * pad
    bth = BTH(opcode=opcode, solicited=1 if opcode in (0x04, 0x05) else 0, padcount=pad, pkey=0xFFFF,
              becn=becn, dqpn=0x000ABC, ackreq=1, psn=psn)
    l2 = Ether(src=MAC_A, dst=MAC_B)
    if vlan:
        l2 = l2 / Dot1Q(prio=3, vlan=100)
    if not ipv6:
        pkt = l2 / IP(src="192.168.1.10", dst="192.168.1.20", tos=dscp << 2 | ecn, ttl=63, flags="DF") \
            / UDP(sport=0xC123, dport=4791) / bth / Raw(body)
        raw = bytes(pkt)  # scapy fills in the ICRC
        l3_at = 18 if vlan else 14
        ours = icrc_from_annex(raw[l3_at:-4])
        scapys = struct.unpack("<I", raw[-4:])[0]
        if ours != scapys:
            sys.exit(f"annex implementation disagrees with scapy: {ours:#x} != {scapys:#x}")
        return raw
    bth.icrc = 0  # zero while the ICRC is computed; the real value is set below
    pkt = l2 / IPv6(src="fd00::10", dst="fd00::20", tc=dscp << 2 | ecn, fl=0x12345, hlim=63) \
        / UDP(sport=0xC123, dport=4791) / bth / Raw(body)
    raw = bytearray(bytes(pkt))
    l3_at = 18 if vlan else 14
    raw[-4:] = struct.pack("<I", icrc_from_annex(bytes(raw[l3_at:-4])))
    return bytes(raw)


CASES = [
    ("ipv4_rc_send_only_0", False, 0x04, 0, False),
    ("ipv4_rc_send_only_5", False, 0x04, 5, False),
    ("ipv4_rc_write_first_256", False, 0x06, 256, False),
    ("ipv4_rc_write_only_imm_61", False, 0x0B, 61, True),
    ("ipv4_rc_read_request", False, 0x0C, 0, False),
    ("ipv4_rc_read_response_only_1024", False, 0x10, 1024, False),
    ("ipv4_rc_ack", False, 0x11, 0, False),
    ("ipv4_rc_atomic_ack", False, 0x12, 0, False),
    ("ipv4_rc_compare_swap", False, 0x13, 0, False),
    ("ipv4_uc_send_last_imm_3", False, 0x23, 3, False),
    ("ipv4_ud_send_only_imm_100", False, 0x65, 100, True),
    ("ipv6_rc_send_only_7", True, 0x04, 7, False),
    ("ipv6_rc_write_first_4096", True, 0x06, 4096, False),
    ("ipv6_rc_ack", True, 0x11, 0, True),
    ("ipv6_ud_send_only_33", True, 0x64, 33, False),
    ("ipv6_rc_fetch_add", True, 0x14, 0, False),
]


def main():
    out = sys.stdout
    out.write("// Generated by tests/dataplane/wire/make_icrc_vectors.py (scapy %s); do not edit.\n"
              % __import__("scapy").VERSION)
    out.write("// Each frame is a whole Ethernet frame ending with its ICRC (least significant byte first).\n")
    names = []
    for name, ipv6, opcode, n, vlan in CASES:
        raw = frame(ipv6, opcode, n, vlan)
        names.append(name)
        out.write("static const std::uint8_t icrc_vector_%s[] = {" % name)
        for i, byte in enumerate(raw):
            out.write(("\n    " if i % 16 == 0 else " ") + "0x%02x," % byte)
        out.write("\n};\n")
    out.write("struct icrc_vector { const char* name; const std::uint8_t* bytes; std::size_t length; };\n")
    out.write("static const icrc_vector icrc_vectors[] = {\n")
    for name in names:
        out.write('    {"%s", icrc_vector_%s, sizeof icrc_vector_%s},\n' % (name, name, name))
    out.write("};\n")


if __name__ == "__main__":
    main()
