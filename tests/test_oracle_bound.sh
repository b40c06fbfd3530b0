#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The oracle bounds every policy: on every built-in generator and every
# capture in bench/captures (x1 and x100), on both committed calibrations
# (without and with a timeout's CPU and the host's halt window), no policy
# scores under 1.0 (1e-9): the registered ones, adaptive with latency
# priced 10x and under p99 targets (its naps and bounds), scored with and
# without a latency budget.
set -u
testevd=$1
top=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
n=0
gens="poisson:rate=2000 poisson:rate=20000 poisson:rate=200000 onoff:rate=100000,on_ms=5,off_ms=50
pareto:alpha=1.5,mean_us=200 periodic:period_us=1000,jitter_us=50 periodic:period_us=1000,jitter_us=2
day periodic:period_us=60,jitter_us=1,sources=2 periodic:period_us=40,jitter_us=1,sources=3"
# one run a CPU: the runs are arithmetic on a virtual clock, and the
# suite's longest test otherwise
par=$(nproc)
score() { # score JSON ARGS...: one --score run, its JSON kept for the check
	local out=$1
	shift
	n=$((n + 1))
	# a failed run's message waits in its own file, shown once all have run
	{
		"$testevd" --no-progress --score "$@" --json "$tmp/$n-$out.json" >"$tmp/$n.out" 2>&1 ||
			{ echo "FAIL: testevd --score $*"; cat "$tmp/$n.out"; } >"$tmp/$n.fail"
	} &
	while [ "$(jobs -rp | wc -l)" -ge "$par" ]; do wait -n; done
}
for cal in "$top"/bench/results/calibration-score.txt "$top"/bench/results/calibration-score-window.txt; do
	c="--calibration $cal"
	traces=()
	for g in $gens; do traces+=("--trace $g --events 4000"); done
	for f in "$top"/bench/captures/*.pcap*; do
		[ -f "$f" ] || continue
		traces+=("--trace $f --speedup 1" "--trace $f --speedup 100")
	done
	for tr in "${traces[@]}"; do
		# shellcheck disable=SC2086
		{
			score cmp $c $tr --compare
			score bud $c $tr --compare --budget-us 50
			score lambda10 $c $tr --policy adaptive:lambda_pct=1000 --lambda 10
			score p99 $c $tr --policy adaptive:p99_us=50 --p99-us 50
			score nap $c $tr --policy adaptive:p99_us=200
		}
	done
done
wait
if compgen -G "$tmp/*.fail" >/dev/null; then
	cat "$tmp"/*.fail
	fail=1
fi
python3 - "$tmp" <<'PY' || fail=1
import glob, json, os, sys
low, runs = None, 0
under = []
for f in glob.glob(os.path.join(sys.argv[1], "*.json")):
    d = json.load(open(f))
    for r in d if isinstance(d, list) else [d]:
        runs += 1
        c = r["calibration"] or {}
        key = (r["cost"] / r["oracle_cost"] if r["oracle_cost"] > 0 else 1.0, r["policy"], r["trace"], r["budget_us"], "window" if c.get("window_ns") else "no window")
        low = key if low is None or key < low else low
        if r["cost"] < r["oracle_cost"] * (1 - 1e-9):
            under.append(key)
for u in sorted(under)[:10]:
    print("FAIL: under the oracle: ratio %.4f, %s on %s, budget %g us, %s" % u)
print(f"{runs} scored runs, {len(under)} under the oracle; the lowest ratio %.4f: %s on %s, budget %g us, %s" % low)
sys.exit(1 if under else 0)
PY
exit $fail
