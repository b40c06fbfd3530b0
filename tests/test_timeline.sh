#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# testevd --timeline, a real run and --score: the windows cover the run and
# no more (the last one holds the run's end, not zeros past it, and the
# events in them add up to those delivered); the SVG draws the same values,
# its text boxes neither overlap each other nor sit in a plot, and its x
# axis has round, increasing ticks where the times fall.
set -u
testevd=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
run() { # run DESCRIPTION CMD...
	local what=$1
	shift
	if "$@" >"$tmp/out" 2>"$tmp/err"; then
		echo "ok: $what"
	else
		echo "FAIL: $what: status $?"; cat "$tmp/out" "$tmp/err"; fail=1
	fi
}
# a fixed cost model: no calibration, and --score the same on every run
printf '# evd calibration (ns): B, then L after 10 us, 100 us, 1 ms, 10 ms\n5000 16000 16000 19000 25000\n' \
	>"$tmp/cal.txt"

# A real run with arrivals up to its end: 0.4 s is four windows of 100 ms
# and the loop stops between two of the monitor's samples.
for ext in csv svg; do
	run "real run, --timeline .$ext" "$testevd" --policy intr --pattern steady --rate 2000 --duration 0.4 \
		--no-progress --calibration "$tmp/cal.txt" --timeline "$tmp/real.$ext" --json "$tmp/real-$ext.json"
done
# --score on ten arrivals 1 us apart (200 windows of 50 ns, the last
# arrival closing the last one), and on a periodic trace of 2000 arrivals,
# each twice (CSV, then SVG)
python3 -c 'print("1000\n" * 10, end="")' >"$tmp/tiny.txt"
for ext in csv svg; do
	run "score, tiny trace, --timeline .$ext" "$testevd" --score --policy poll --calibration "$tmp/cal.txt" \
		--trace "$tmp/tiny.txt" --timeline "$tmp/tiny.$ext"
	run "score, periodic trace, --timeline .$ext" "$testevd" --score --policy adaptive \
		--calibration "$tmp/cal.txt" --trace periodic:period_us=1000,jitter_us=50 --events 2000 \
		--timeline "$tmp/per.$ext"
done

python3 - "$tmp" <<'PY' || fail=1
import json, re, sys
import xml.etree.ElementTree as ET

tmp = sys.argv[1]
NS = "{http://www.w3.org/2000/svg}"
bad = []

def check(ok, what):
    print(("ok: " if ok else "FAIL: ") + what)
    if not ok:
        bad.append(what)

def csv_rows(path):
    """Each window: (start s, events/s, CPU %, asleep %, length s)."""
    lines = [l for l in open(path) if not l.startswith("#")]
    rows = [[float(v) for v in l.split(",")] for l in lines[1:] if l.strip()]
    check("window_s" in lines[0].strip().split(","), f"{path}: a window_s column gives each window's length")
    if "window_s" not in lines[0] and rows:  # from the starts, the last as long as the one before
        for r, n in zip(rows, rows[1:]):
            r.append(n[0] - r[0])
        rows[-1].append(rows[-2][4] if len(rows) > 1 else 0)
    return [tuple(r) for r in rows]

def svg_parse(path):
    root = ET.parse(path).getroot()
    size = float(root.get("font-size", "11"))
    texts = []
    for t in root.iter(NS + "text"):
        s = "".join(t.itertext())
        fs = float(t.get("font-size", size))
        w = len(s) * 6.5 * fs / 11
        x, y = float(t.get("x")), float(t.get("y"))
        x0 = {"middle": x - w / 2, "end": x - w}.get(t.get("text-anchor", "start"), x)
        texts.append({"s": s, "x": x, "y": y, "box": (x0, y - fs, x0 + w, y + fs / 4), "fill": t.get("fill")})
    plots = [tuple(float(r.get(k)) for k in ("x", "y", "width", "height")) for r in root.iter(NS + "rect")
             if r.get("stroke") is not None]
    plots = [(x, y, x + w, y + h) for x, y, w, h in plots]
    lines = [[tuple(map(float, p.split(","))) for p in l.get("points").split()]
             for l in root.iter(NS + "polyline")]
    names = [[t for t in texts if t["fill"] == l.get("stroke")] for l in root.iter(NS + "polyline")]
    return float(root.get("width")), float(root.get("height")), texts, plots, lines, names

def overlap(a, b):
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]

def number(s):
    try:
        return float(s)
    except ValueError:
        return None

def layout(path, tmax):
    """Text boxes apart and out of the plots, x ticks round and in place."""
    W, H, texts, plots, _, names = svg_parse(path)
    check(len(plots) == 3, f"{path}: three panels ({len(plots)})")
    if len(plots) != 3:
        return
    clash = [(a["s"], b["s"]) for i, a in enumerate(texts) for b in texts[i + 1:] if overlap(a["box"], b["box"])]
    check(not clash, f"{path}: no two text boxes overlap {clash[:3]}")
    inside = [(t["s"], p) for t in texts for p in plots if overlap(t["box"], p)]
    check(not inside, f"{path}: no text inside a plot {inside[:3]}")
    above = [len(n) == 1 and n[0]["box"][3] <= p[1] and p[0] <= n[0]["box"][0] and n[0]["box"][2] <= p[2]
             for n, p in zip(names, plots)]
    check(len(above) == 3 and all(above), f"{path}: each series' name above its panel {[n[0]['s'] for n in names if n]}")
    out = [t["s"] for t in texts if t["box"][0] < 0 or t["box"][2] > W or t["box"][1] < 0 or t["box"][3] > H]
    check(not out, f"{path}: every text inside the image {out}")
    x0, x1, bottom = plots[-1][0], plots[-1][2], plots[-1][3]
    ticks = sorted((t["x"], number(t["s"])) for t in texts
                   if t["y"] > bottom and number(t["s"]) is not None)
    axis = [re.search(r"\((s|ms|us)\)", t["s"]) for t in texts if t["y"] > bottom and "time" in t["s"]]
    check(len(ticks) >= 3 and len(axis) == 1 and axis[0] is not None,
          f"{path}: x ticks under the plot ({len(ticks)}) and an x axis label in s, ms or us")
    if len(ticks) < 3 or len(axis) != 1 or axis[0] is None:
        return
    scale = {"s": 1, "ms": 1e3, "us": 1e6}[axis[0].group(1)]
    vals = [v for _, v in ticks]
    step = vals[1] - vals[0]
    check(all(b > a for a, b in zip(vals, vals[1:])) and vals[0] == 0, f"{path}: x tick labels increase from 0 {vals}")
    check(all(abs(v / step - round(v / step)) < 1e-6 for v in vals)
          and re.fullmatch(r"[125]0*|0\.0*[125]", f"{step:g}") is not None, f"{path}: x ticks are round ({step:g})")
    check(all(x0 - 0.5 <= x <= x1 + 0.5 for x, _ in ticks), f"{path}: x ticks within the plot")
    if tmax is None:  # no CSV of the same run: evenly spaced from the plot's left edge
        tmax = (x1 - x0) * vals[-1] / scale / (ticks[-1][0] - x0)
    where = [abs(x - (x0 + (x1 - x0) * v / scale / tmax)) for x, v in ticks]
    check(max(where) < 1.5, f"{path}: each x tick where its time falls (off by up to {max(where):.1f} px)")

def last_values(path):
    """The last window's value in each panel, read back from the line."""
    _, _, texts, plots, lines, _ = svg_parse(path)
    vals = []
    for (x0, top, x1, bottom), pts in zip(plots, lines):
        ymax = [number(t["s"]) for t in texts if t["x"] <= x0 + 10 and abs(t["y"] - top) < 15
                and number(t["s"]) is not None]
        vals.append((bottom - pts[-1][1]) / (bottom - top) * ymax[0])
    return vals, [pts[-1][0] for pts in lines], [p[2] for p in plots]

def same(a, b):
    return abs(a - b) <= 0.01 * max(abs(a), abs(b)) + 0.01

# A real run: the last window holds the run's end.
rows = csv_rows(f"{tmp}/real.csv")
js = json.load(open(f"{tmp}/real-csv.json"))
if rows:
    last = rows[-1]
    check(last[1] > 0 and last[2] > 0,
          f"real run: arrivals up to the end show in the last window ({last[1]:.0f} events/s, CPU {last[2]:.2f} %)")
    got = sum(r[1] * r[4] for r in rows)
    want = js["events_delivered"]
    # events delivered before the monitor's first sample are not in it
    check(want * 0.95 - 5 <= got <= want * 1.001 + 1,
          f"real run: the windows hold the events delivered ({got:.0f} of {want})")
    end = rows[-1][0] + rows[-1][4]
    check(js["duration_s"] - 0.05 <= end <= js["duration_s"] + 0.005,
          f"real run: the windows end as the run did ({end:.4f} s, the run {js['duration_s']:.4f} s)")
    check(all(r[4] > 0 and abs(r[0] + r[4] - n[0]) < 2e-6 for r, n in zip(rows, rows[1:])),
          "real run: each window starts where the one before ends")
vals, xs, x1s = last_values(f"{tmp}/real.svg")
check(vals[0] > 0 and vals[1] > 0, f"real run SVG: the last window is not zeros ({vals[0]:.0f} events/s, CPU {vals[1]:.2f} %)")
check(all(abs(x - e) < 0.5 for x, e in zip(xs, x1s)), "real run SVG: the last window reaches the plot's right edge")
layout(f"{tmp}/real.svg", None)

# --score: windows of the trace's time, the last arrival in the last one.
for name, events in (("tiny", 10), ("per", 2000)):
    rows = csv_rows(f"{tmp}/{name}.csv")
    if not rows:
        continue
    total = sum(r[1] * r[4] for r in rows)
    check(abs(total - events) < 0.01 * events, f"score {name}: the windows hold every arrival ({total:.2f} of {events})")
    check(rows[-1][1] > 0, f"score {name}: the last arrival is in the last window ({rows[-1][1]:.0f} events/s)")
    vals, xs, x1s = last_values(f"{tmp}/{name}.svg")
    check(all(same(v, c) for v, c in zip(vals, rows[-1][1:4])),
          f"score {name}: the SVG's last window is the CSV's ({[round(v, 3) for v in vals]} vs {list(rows[-1][1:4])})")
    check(all(abs(x - e) < 0.5 for x, e in zip(xs, x1s)), f"score {name}: the last window reaches the plot's right edge")
    layout(f"{tmp}/{name}.svg", rows[-1][0] + rows[-1][4])
sys.exit(1 if bad else 0)
PY
exit $fail
