#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Draw the plot that needs every scored trace at once, as SVG, from
scripts/bench's runs (no third-party modules). Timelines of one run
testevd draws itself (--timeline FILE.svg).

  plots.py RUNS_DIR [OUT_DIR]

writes OUT_DIR/cpu-p99.svg (OUT_DIR: RUNS_DIR where not given): one panel
per trace, every policy's CPU against its added p99 latency, from
RUNS_DIR/score-*.json."""
import glob, json, math, os, sys

COLORS = {"adaptive": "#d62728", "poll": "#7f7f7f", "intr": "#1f77b4", "l3fwd": "#2ca02c",
          "pmdmgmt": "#9467bd", "napi": "#8c564b", "haltpoll": "#e377c2", "ski2": "#bcbd22",
          "ski-rand": "#17becf"}


def esc(s):
    return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def logpos(v, lo, hi, a, b):
    v = min(max(v, lo), hi)
    return a + (b - a) * (math.log10(v) - math.log10(lo)) / (math.log10(hi) - math.log10(lo))


def cpu_p99(d, outdir):
    files = sorted(glob.glob(os.path.join(d, "score-*.json")))
    if not files:
        return None
    cols, pw, ph, m = 4, 300, 230, 45
    rows = (len(files) + cols - 1) // cols
    W, H = cols * pw, rows * ph + 60
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" font-family="sans-serif" font-size="10">',
           f'<rect width="{W}" height="{H}" fill="white"/>',
           '<text x="10" y="16" font-size="13">CPU % (y, log) against added p99 latency in us (x, log), '
           'every policy on every trace; lower-left is better (testevd --score, virtual time)</text>']
    x0 = 10
    for p, c in COLORS.items():
        out.append(f'<circle cx="{x0 + 5}" cy="32" r="4" fill="{c}"/><text x="{x0 + 12}" y="36">{p}</text>')
        x0 += 12 + 7 * len(p) + 18
    for k, f in enumerate(files):
        rs = json.load(open(f))
        ox, oy = (k % cols) * pw, 50 + (k // cols) * ph
        ax0, ax1, ay0, ay1 = ox + m, ox + pw - 10, oy + ph - 30, oy + 20
        xs = [max(r["latency_us"]["p99"], 0.01) for r in rs]
        ys = [max(r["cpu_pct"], 0.001) for r in rs]
        xlo, xhi = 10 ** math.floor(math.log10(min(xs))), 10 ** math.ceil(math.log10(max(xs)) + 1e-9)
        ylo, yhi = 10 ** math.floor(math.log10(min(ys))), 10 ** math.ceil(math.log10(max(ys)) + 1e-9)
        if xhi <= xlo: xhi = xlo * 10
        if yhi <= ylo: yhi = ylo * 10
        name = rs[0]["trace"]
        out.append(f'<text x="{ox + m}" y="{oy + 12}" font-weight="bold">{esc(name[:46])}</text>')
        out.append(f'<rect x="{ax0}" y="{ay1}" width="{ax1 - ax0}" height="{ay0 - ay1}" fill="none" stroke="#999"/>')
        e = xlo
        while e <= xhi * 1.001:
            x = logpos(e, xlo, xhi, ax0, ax1)
            out.append(f'<line x1="{x:.1f}" y1="{ay0}" x2="{x:.1f}" y2="{ay0 + 3}" stroke="#999"/>'
                       f'<text x="{x:.1f}" y="{ay0 + 13}" text-anchor="middle">{e:g}</text>')
            e *= 10
        e = ylo
        while e <= yhi * 1.001:
            y = logpos(e, ylo, yhi, ay0, ay1)
            out.append(f'<text x="{ax0 - 3}" y="{y + 3:.1f}" text-anchor="end">{e:g}</text>')
            e *= 10
        for r, x, y in zip(rs, xs, ys):
            c = COLORS.get(r["policy"].split(":")[0], "#000")
            px, py = logpos(x, xlo, xhi, ax0, ax1), logpos(y, ylo, yhi, ay0, ay1)
            rad = 5 if r["policy"] == "adaptive" else 3.5
            out.append(f'<circle cx="{px:.1f}" cy="{py:.1f}" r="{rad}" fill="{c}" fill-opacity="0.8">'
                       f'<title>{esc(r["policy"])}: ratio {r["competitive_ratio"]:.3f}, CPU {r["cpu_pct"]:.2f} %, '
                       f'p99 {r["latency_us"]["p99"]:.1f} us</title></circle>')
    out.append("</svg>")
    path = os.path.join(outdir, "cpu-p99.svg")
    open(path, "w").write("\n".join(out))
    return path


if __name__ == "__main__":
    if len(sys.argv) not in (2, 3) or sys.argv[1] in ("-h", "--help"):
        sys.exit(__doc__)
    d = sys.argv[1]
    outdir = sys.argv[2] if len(sys.argv) == 3 else d
    for x in (d, outdir):
        if not os.path.isdir(x):
            sys.exit(f"plots.py: {x}: not a directory")
    p = cpu_p99(d, outdir)
    if p:
        print("wrote", p)
    else:
        sys.exit(f"plots.py: {d}: no score-*.json to draw")
