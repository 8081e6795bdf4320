#!/usr/bin/env python3
"""Prints the constant tables used by src/hash/ (CRC-16/XMODEM, CRC-32, MD5 sines) as C arrays.

The tables in src/hash/crc.c and src/hash/md5.c were produced by this script; the unit tests
recompute them bit by bit, so a damaged table fails `make check`.
Usage: python3 scripts/gen_hash_tables.py {crc16|crc32|md5}
"""
import math
import sys


def crc16_table():
    """MSB-first CRC-16, polynomial 0x1021 (XMODEM / CCITT, as used by Redis Cluster)."""
    out = []
    for byte in range(256):
        r = byte << 8
        for _ in range(8):
            r = ((r << 1) ^ 0x1021) if r & 0x8000 else (r << 1)
            r &= 0xffff
        out.append(r)
    return out


def crc32_table():
    """LSB-first (reflected) CRC-32, polynomial 0xEDB88320 (IEEE 802.3, zlib)."""
    out = []
    for byte in range(256):
        r = byte
        for _ in range(8):
            r = (r >> 1) ^ 0xEDB88320 if r & 1 else r >> 1
        out.append(r)
    return out


def md5_sines():
    """RFC 1321 section 3.4: T[i] = floor(2^32 * abs(sin(i))) for i = 1..64."""
    return [int(abs(math.sin(i)) * 4294967296) & 0xffffffff for i in range(1, 65)]


def emit(values, width, per_line):
    for i in range(0, len(values), per_line):
        row = values[i:i + per_line]
        print("    " + ", ".join("0x%0*x" % (width, v) for v in row) + ",")


def main():
    what = sys.argv[1] if len(sys.argv) > 1 else ""
    if what == "crc16":
        emit(crc16_table(), 4, 8)
    elif what == "crc32":
        emit(crc32_table(), 8, 6)
    elif what == "md5":
        emit(md5_sines(), 8, 4)
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
