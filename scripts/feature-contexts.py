#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""Would the packet that began a gap tell its length? (doc/guides/policies.md,
"Limits of the ratio".)

Scores, in testevd's cost model, the best spin threshold per context chosen
in hindsight, where the context is the previous gap (testevd's four bins)
and, beside it, a feature of the packet that began the gap: its TCP PSH
flag, its size (under 1,000 bytes of payload), its protocol, or all three.
The first two columns are testevd --score's own hindsight figures (one
threshold; one per previous gap) and must match them to the third decimal:
that is the check that this copy of the model is testevd's.

  scripts/feature-contexts.py CALIBRATION SPEEDUP CAPTURE...

CALIBRATION: a file testevd --save-calibration wrote (B, then L after
10 us, 100 us, 1 ms, 10 ms, in ns). Captures: pcap or pcapng, Ethernet.
"""
import math
import struct
import sys

TH = [0] + [256 * 2 ** (k / 4) for k in range(95)] + [math.inf]  # testevd's HS_T


def load_calibration(path):
    for line in open(path):
        if line.strip() and not line.startswith("#"):
            v = [float(x) for x in line.split()]
            if len(v) != 5:
                sys.exit(f"{path}: B and four L expected")
            return v[0], [10e3, 100e3, 1e6, 10e6], v[1:]
    sys.exit(f"{path}: no calibration line")


def packets(path):
    """(timestamp ns, link type, bytes) of each packet."""
    d = open(path, "rb").read()
    m = d[:4]
    if m in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1", b"\xa1\xb2\xc3\xd4", b"\xa1\xb2\x3c\x4d"):
        e = "<" if m in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1") else ">"
        nano = m in (b"\x4d\x3c\xb2\xa1", b"\xa1\xb2\x3c\x4d")
        lt = struct.unpack(e + "I", d[20:24])[0]
        o = 24
        while o + 16 <= len(d):
            s, frac, incl, _ = struct.unpack(e + "IIII", d[o:o + 16])
            yield s * 10**9 + (frac if nano else frac * 1000), lt, d[o + 16:o + 16 + incl]
            o += 16 + incl
        return
    if m != b"\x0a\x0d\x0d\x0a":
        sys.exit(f"{path}: not pcap or pcapng")
    o, e, ifs = 0, "<", []
    while o + 12 <= len(d):
        if d[o:o + 4] == b"\x0a\x0d\x0d\x0a":
            e = "<" if d[o + 8:o + 12] == b"\x4d\x3c\x2b\x1a" else ">"
            ifs = []
        bt, bl = struct.unpack(e + "II", d[o:o + 8])
        if bt == 1:  # interface: link type and if_tsresol
            lt, res, p = struct.unpack(e + "H", d[o + 8:o + 10])[0], 6, o + 16
            while p + 4 <= o + bl - 4:
                code, ln = struct.unpack(e + "HH", d[p:p + 4])
                if code == 0:
                    break
                if code == 9:
                    res = d[p + 4]
                p += 4 + (ln + 3) // 4 * 4
            if res & 0x80:
                sys.exit(f"{path}: power-of-two timestamp resolution not handled")
            ifs.append((lt, res))
        elif bt == 6:  # enhanced packet
            iid, hi, lo, incl, _ = struct.unpack(e + "IIIII", d[o + 8:o + 28])
            lt, res = ifs[iid]
            yield ((hi << 32) | lo) * 10**9 // 10**res, lt, d[o + 28:o + 28 + incl]
        o += bl


def features(lt, b):
    """(TCP PSH, small, protocol) of one Ethernet frame."""
    if lt != 1 or len(b) < 14:
        return (0, 1, None)
    et, off = struct.unpack(">H", b[12:14])[0], 14
    while et == 0x8100 and len(b) >= off + 4:
        et, off = struct.unpack(">H", b[off + 2:off + 4])[0], off + 4
    if et == 0x800 and len(b) >= off + 20:
        ihl = (b[off] & 15) * 4
        proto, plen, l4 = b[off + 9], struct.unpack(">H", b[off + 2:off + 4])[0] - ihl, off + ihl
    elif et == 0x86DD and len(b) >= off + 40:
        proto, plen, l4 = b[off + 6], struct.unpack(">H", b[off + 4:off + 6])[0], off + 40
    else:
        return (0, 1, None)
    if proto == 6 and len(b) >= l4 + 14:
        return ((b[l4 + 13] >> 3) & 1, int(plen - (b[l4 + 12] >> 4) * 4 < 1000), 6)
    return (0, 1, proto)


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    B, WP, WL = load_calibration(sys.argv[1])
    speed = float(sys.argv[2])

    def L(g):  # piecewise linear in log g, as evd_policy_env_wake_ns
        if g <= WP[0]:
            return WL[0]
        for k in range(3):
            if g <= WP[k + 1]:
                x = (math.log(g) - math.log(WP[k])) / (math.log(WP[k + 1]) - math.log(WP[k]))
                return WL[k] + x * (WL[k + 1] - WL[k])
        return WL[-1]

    def oracle(g):
        return min([g, B + L(g)] + [g - WP[k] + B + WL[k] for k in range(4) if WP[k] < g])

    def cost(g, t):
        return g if g <= t else t + B + L(g - t)

    def hindsight(gaps, ctx):
        by = {}
        for g, c in zip(gaps, ctx):
            by.setdefault(c, []).append(g)
        return sum(min(sum(cost(g, t) for g in gs) for t in TH) for gs in by.values())

    print("capture x speedup: gaps; hindsight ratio with one threshold, per previous gap, "
          "and per previous gap and the packet's PSH / size / protocol / all three")
    for path in sys.argv[3:]:
        pk = list(packets(path))
        gaps, last = [], pk[0][0]
        for ts, _, _ in pk[1:]:  # testevd: a packet stamped before the last has gap 0
            gaps.append(max(0, ts - last) / speed)
            last = max(last, ts)
        f = [features(lt, b) for _, lt, b in pk[:-1]]  # the packet each gap follows
        prev = [3] + [0 if g < 4e3 else 1 if g < 64e3 else 2 if g < 1e6 else 3 for g in gaps[:-1]]
        o = sum(oracle(g) for g in gaps)
        cols = [hindsight(gaps, [0] * len(gaps)), hindsight(gaps, prev)]
        cols += [hindsight(gaps, [(p, x[k]) for p, x in zip(prev, f)]) for k in range(3)]
        cols.append(hindsight(gaps, list(zip(prev, f))))
        print(f"{path.split('/')[-1]} x{speed:g}: {len(gaps)} gaps;",
              " ".join(f"{c / o:.3f}" for c in cols))


main()
