#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Draw the benchmark plots as SVG, from scripts/bench's results (no
third-party modules).

  plots.py RESULTS_DIR

writes RESULTS_DIR/cpu-p99.svg (one panel per trace: every policy's CPU
against its added p99 latency, from score-*.json) and, for every
timeline-*.csv, timeline-*.svg (arrivals/s, CPU % and time asleep % over
the run)."""
import csv, glob, json, math, os, sys

COLORS = {"adaptive": "#d62728", "poll": "#7f7f7f", "intr": "#1f77b4", "l3fwd": "#2ca02c",
          "pmdmgmt": "#9467bd", "napi": "#8c564b", "haltpoll": "#e377c2", "ski2": "#bcbd22",
          "ski-rand": "#17becf"}


def esc(s):
    return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def logpos(v, lo, hi, a, b):
    v = min(max(v, lo), hi)
    return a + (b - a) * (math.log10(v) - math.log10(lo)) / (math.log10(hi) - math.log10(lo))


def cpu_p99(d):
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
    path = os.path.join(d, "cpu-p99.svg")
    open(path, "w").write("\n".join(out))
    return path


def timeline(f):
    rows, title = [], os.path.basename(f)
    with open(f) as fh:
        first = fh.readline()
        if first.startswith("#"):
            title += " (" + first[1:].strip() + ")"
        rows = list(csv.DictReader(fh))
    if not rows:
        return None
    t = [float(r["t_s"]) for r in rows]
    series = [("arrivals/s", [float(r["arrivals_per_s"]) for r in rows], "#1f77b4", True),
              ("CPU %", [float(r["cpu_pct"]) for r in rows], "#d62728", False),
              ("time asleep %", [float(r["sleep_pct"]) for r in rows], "#2ca02c", False)]
    W, ph, m = 900, 150, 60
    H = 40 + ph * len(series)
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" font-family="sans-serif" font-size="10">',
           f'<rect width="{W}" height="{H}" fill="white"/>',
           f'<text x="10" y="16" font-size="13">{esc(title)}: timeline of one run (x: trace time, s)</text>']
    tmax = t[-1] + (t[1] - t[0] if len(t) > 1 else 1)
    for k, (name, ys, c, log) in enumerate(series):
        oy = 30 + k * ph
        ax0, ax1, ay0, ay1 = m, W - 10, oy + ph - 25, oy + 10
        out.append(f'<rect x="{ax0}" y="{ay1}" width="{ax1 - ax0}" height="{ay0 - ay1}" fill="none" stroke="#999"/>')
        out.append(f'<text x="5" y="{(ay0 + ay1) / 2:.0f}" fill="{c}">{esc(name)}</text>')
        hi = max(ys) if max(ys) > 0 else 1
        lo = 0
        if log:
            lo = max(min(y for y in ys if y > 0) if any(y > 0 for y in ys) else 1, 1e-3)
            hi = max(hi, lo * 10)
        pts = []
        for x, y in zip(t, ys):
            px = ax0 + (ax1 - ax0) * x / tmax
            if log:
                py = logpos(max(y, lo), lo, hi, ay0, ay1)
            else:
                py = ay0 + (ay1 - ay0) * y / hi
            pts.append(f"{px:.1f},{py:.1f}")
        out.append(f'<polyline points="{" ".join(pts)}" fill="none" stroke="{c}" stroke-width="1.5"/>')
        out.append(f'<text x="{ax0 + 3}" y="{ay1 + 10}">{hi:.3g}</text><text x="{ax0 + 3}" y="{ay0 - 3}">{lo:.3g}</text>')
        if k == len(series) - 1:
            for i in range(6):
                x = tmax * i / 5
                out.append(f'<text x="{ax0 + (ax1 - ax0) * i / 5:.0f}" y="{ay0 + 13}" text-anchor="middle">{x:.3g}</text>')
    out.append("</svg>")
    path = f[:-4] + ".svg"
    open(path, "w").write("\n".join(out))
    return path


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    d = sys.argv[1]
    made = [cpu_p99(d)] + [timeline(f) for f in sorted(glob.glob(os.path.join(d, "timeline-*.csv")))]
    for p in made:
        if p:
            print("wrote", p)
