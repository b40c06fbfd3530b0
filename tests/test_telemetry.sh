#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# rte_telemetry: a running testevd read with Debian's own client
# (dpdk-telemetry.py, package dpdk-dev): /evd/list, /evd/stats,<id>,
# /evd/sources,<id> while the loop runs (figures move, mode is a mode), then
# after the run (--linger) the figures equal testevd's JSON report. And the
# log switch: --log-level=lib.evd:debug shows the library's debug lines.
set -u
testevd=$1
client=$(command -v dpdk-telemetry.py) || { echo "SKIP: dpdk-telemetry.py not installed (Debian package dpdk-dev)"; exit 77; }
tmp=$(mktemp -d)
prefix=evd-tm$$
trap 'kill $pid 2>/dev/null; rm -rf "$tmp"' EXIT
"$testevd" --no-huge -m 128 --no-pci --file-prefix=$prefix -- --pattern demo --rate 20000 \
	--duration 3 --linger 6 --no-progress --json "$tmp/report.json" >"$tmp/out.log" 2>&1 &
pid=$!
ask() { # ask CMD...: one JSON line per command
	printf '%s\n' "$@" | python3 "$client" -f $prefix 2>&1
}
# mid-run: once the loop runs and has delivered something (startup, EAL and
# the calibration, take a while on a loaded machine), both in the
# /evd/stats,0 reply (the sources' reply, read after it, can have events
# where the loop's had none yet)
for _ in $(seq 100); do
	ask /evd/list /evd/stats,0 /evd/sources,0 /evd/stats,testevd /evd/stats,99 >"$tmp/mid.json"
	grep -F '{"/evd/stats": {"id": 0,' "$tmp/mid.json" | head -1 | grep '"running": 1' |
		grep -q '"events": [1-9]' && break
	sleep 0.1
done
for _ in $(seq 150); do grep -q "stays" "$tmp/out.log" && break; sleep 0.1; done
sleep 0.3
ask /evd/stats,0 /evd/sources,0 >"$tmp/end.json"
wait $pid
rc=$?
[ $rc -eq 0 ] || { echo "FAIL: testevd exited $rc"; cat "$tmp/out.log"; exit 1; }
dbg=$("$testevd" --log-level=lib.evd:debug -- --pattern idle --duration 0.2 --no-progress 2>&1)
quiet=$("$testevd" -- --pattern idle --duration 0.2 --no-progress 2>&1)
case $dbg in *"loop testevd (telemetry id 0) created"*) ;; *) echo "FAIL: no debug line with lib.evd:debug"; echo "$dbg"; exit 1 ;; esac
case $quiet in *"telemetry id"*) echo "FAIL: debug line at the default level"; exit 1 ;; esac
echo "ok: --log-level=lib.evd:debug shows the library's debug lines, the default level does not"
python3 - "$tmp/mid.json" "$tmp/end.json" "$tmp/report.json" <<'PY' || exit 1
import json, sys
mid = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
end = [json.loads(l) for l in open(sys.argv[2]) if l.startswith("{")]
rep = json.load(open(sys.argv[3]))
assert len(mid) == 5, f"expected 5 replies mid-run, got {mid}"
assert mid[0]["/evd/list"] == [0], mid[0]
s = mid[1]["/evd/stats"]
assert s["name"] == "testevd" and s["policy"] == "adaptive" and s["mode"] in ("poll", "pause", "sleep"), s
assert s["running"] == 1 and s["sources"] == 1 and s["events"] > 0, s
# the loop clock: the TSC where the CPU says it is invariant (x86: the
# kernel's nonstop_tsc flag, CPUID 0x80000007 EDX bit 8), else CLOCK_MONOTONIC
import platform
inv = platform.machine() not in ("x86_64", "i686") or \
      any("nonstop_tsc" in l.split() for l in open("/proc/cpuinfo") if l.startswith("flags"))
assert s["clock"] == ("tsc" if inv else "monotonic"), (s["clock"], inv)
# pauses use TPAUSE exactly where the CPU has it (x86: the waitpkg flag)
wp = any("waitpkg" in l.split() for l in open("/proc/cpuinfo") if l.startswith("flags"))
assert s["power_pause"] == (1 if wp else 0), (s["power_pause"], wp)
assert s["socket"] in (0, -1) or s["socket"] > 0, s
assert "policy_state" in s and s["policy_state"].startswith("gaps="), s
src = mid[2]["/evd/sources"]
assert len(src) == 1, src
name, one = next(iter(src.items()))
assert name.isdigit() and one["name"] == "events", src # keyed by the source's id
assert one["kind"] == "ring" and one["events"] > 0 and one["notify"] == "bell", src
assert mid[3]["/evd/stats"]["id"] == 0, "the loop by name"
assert mid[4]["/evd/stats"] is None, f"an unknown loop is an error: {mid[4]}"
e, es = end[0]["/evd/stats"], end[1]["/evd/sources"][name]
assert e["running"] == 0, e
assert e["events"] >= s["events"] > 0, "the figures only grow"
for k, j in (("events", "events_delivered"), ("sleeps", "sleeps"), ("wakeups", "wakeups"),
             ("repoll_hits", "repoll_hits"), ("lost_wakeups", "lost_wakeups"),
             ("spurious_wakeups", "spurious_wakeups"), ("sleep_timeouts", "sleep_timeouts"),
             ("mode_switches", "mode_switches"), ("naps", "naps")):
    assert e[k] == rep[j], f"{k}: telemetry {e[k]}, report {rep[j]}"
assert es["events"] == rep["events_delivered"], (es, rep["events_delivered"])
# the cost model adaptive prices with: the one the report names
c = rep["calibration"]
assert c is not None and e["cost_model_B_ns"] == c["b_ns"], (e.get("cost_model_B_ns"), c)
assert e["cost_model_L_ns"] == c["wake_ns"], (e.get("cost_model_L_ns"), c)
print(f"ok: telemetry mid-run events {s['events']} in mode {s['mode']}; after the run events {e['events']}, "
      f"sleeps {e['sleeps']}, wakeups {e['wakeups']} = the report; policy_state '{e['policy_state']}'")
PY
# Sources whose names telemetry would not take as keys ("events-1": keys
# are [A-Za-z0-9_/]; they went missing from /evd/sources), and loop ids
# that are digits only ("-0" is no loop's).
prefix=evd-tm2$$
"$testevd" --no-huge -m 128 --no-pci --file-prefix=$prefix -- --trace periodic:period_us=1000,jitter_us=1,sources=3 \
	--events 3000 --linger 4 --no-progress >"$tmp/out2.log" 2>&1 &
pid=$!
for _ in $(seq 150); do grep -q "stays" "$tmp/out2.log" && break; sleep 0.1; done
printf '%s\n' /evd/sources,0 /evd/stats,-0 /evd/stats,00 /evd/xstats,0 | python3 "$client" -f $prefix >"$tmp/three.json" 2>&1
wait $pid || { echo "FAIL: testevd (three sources) exited $?"; cat "$tmp/out2.log"; exit 1; }
python3 - "$tmp/three.json" <<'PY' || exit 1
import json, sys
r = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
assert len(r) == 4, r
names = sorted(v["name"] for v in r[0]["/evd/sources"].values())
assert names == ["events-1", "events-2", "events-3"], r[0]
assert r[1]["/evd/stats"] is None, f"'-0' is no loop's id: {r[1]}"
assert r[2]["/evd/stats"]["id"] == 0, r[2]
# the same counters flat, by xstats-style name (the loop lingers idle)
x = r[3]["/evd/xstats"]
for sid, v in r[0]["/evd/sources"].items():
    for k in ("polls", "events", "wakeups", "lost_wakeups", "full"):
        assert x[f"ring_{sid}_{k}"] == v[k], (sid, k, x, v)
assert len(x) == 3 * 10, sorted(x)
print(f"ok: /evd/sources lists {names}; '-0' names no loop, '00' loop 0; /evd/xstats has "
      f"{len(x)} names, e.g. ring_0_events = {x['ring_0_events']}")
PY
