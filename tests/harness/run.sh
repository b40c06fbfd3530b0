#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Runs tests/harness/scale_check (built by meson; this script builds nothing):
# instruction counts under callgrind, times natively, and prints one markdown
# table: measure | evd | baseline | ratio | goal | met.
#
#   tests/harness/run.sh [BUILD_DIR] [OUT_DIR]
#
# EVD_HARNESS_IDLE_S: seconds of the idle-CPU window (default 5).
set -euo pipefail
top=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=${1:-$top/build}
out=${2:-$(mktemp -d /tmp/evd-harness.XXXXXX)}
bin=$build/tests/harness/scale_check
idle_s=${EVD_HARNESS_IDLE_S:-5}
[ -x "$bin" ] || { echo "run.sh: $bin missing: ninja -C $build tests/harness/scale_check" >&2; exit 2; }
command -v valgrind >/dev/null || { echo "run.sh: valgrind missing (apt-get install -y valgrind)" >&2; exit 2; }
mkdir -p "$out"
nice=(nice -n 10)

# cg NAME FUNCTIONS ARGS...: instructions callgrind counted in FUNCTIONS
# (comma-separated), divided by the units the program says it did there
# (its line units=, or UNITS_KEY= when set).
cg() {
	local name=$1 fns=$2 fn toggles=()
	shift 2
	IFS=, read -ra fn <<<"$fns"
	for f in "${fn[@]}"; do toggles+=(--toggle-collect="$f"); done
	"${nice[@]}" valgrind --tool=callgrind "${toggles[@]}" \
		--callgrind-out-file="$out/cg.$name" "$bin" "$@" >"$out/$name.out" 2>"$out/$name.log" ||
		{ tail -20 "$out/$name.log" >&2; echo "run.sh: callgrind $name failed" >&2; exit 1; }
	local ir units
	ir=$(awk '/^totals:/ { print $2; exit }' "$out/cg.$name")
	units=$(sed -n "s/^${UNITS_KEY:-units}=//p" "$out/$name.out")
	awk -v i="$ir" -v u="$units" 'BEGIN { printf "%.1f", i / u }'
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }
met() { awk -v r="$1" -v g="$2" 'BEGIN { print (r <= g ? "yes" : "no") }'; }

rows=()
echo "harness: callgrind runs (output in $out)" >&2

# 1. instructions per wake: the loop thread's whole cycle, blocked to blocked
declare -A we wr
for n in 1 1024 8192; do
	we[$n]=$(cg wake-evd-$n count_wake_evd wake evd $n 100)
	wr[$n]=$(cg wake-raw-$n count_wake_raw wake raw $n 100)
done
rows+=("1. instructions per wake, 1 idle ring (side: evd vs raw epoll)|${we[1]}|${wr[1]}|$(ratio "${we[1]}" "${wr[1]}")x|-|-")
for n in 1024 8192; do
	r=$(ratio "${we[$n]}" "${we[1]}")
	rows+=("1. instructions per wake, $n idle rings vs 1|${we[$n]} / ${we[1]}|raw epoll: ${wr[$n]} / ${wr[1]} = $(ratio "${wr[$n]}" "${wr[1]}")x|${r}x|<= 1.5x|$(met "$r" 1.5)")
done

# 2. idle ring sweep in poll mode, 4096 rings: per ring per round
se=$(cg sweep-evd count_sweep_evd sweep evd 4096 50)
sr=$(cg sweep-raw count_sweep_raw sweep raw 4096 50)
r=$(ratio "$se" "$sr")
rows+=("2. idle ring sweep, 4096 rings, instructions/ring/round vs rte_ring_count loop|$se|$sr|${r}x|<= 1.5x|$(met "$r" 1.5)")

# 3. idle fd sweep, 1024 eventfds: per round (user space only; the time row has the kernel's)
fe=$(cg fdsweep-evd count_fdsweep_evd fdsweep evd 1024 1000)
fr=$(cg fdsweep-raw count_fdsweep_raw fdsweep raw 1024 1000)
r=$(ratio "$fe" "$fr")
rows+=("3. idle fd sweep, 1024 fds, user-space instructions/round vs epoll_wait(0) (the kernel's work: row 3t)|$fe|$fr|${r}x|<= 2x|$(met "$r" 2)")

# 4. add, RLIMIT_NOFILE 1024: instructions per add over 100k adds vs over 1k,
# and the last 1000 of the 100k vs the first 1000
all=count_add_first,count_add_mid,count_add_last
a100k=$(cg add-100k $all add evd 100000 1000)
a1k=$(cg add-1k $all add evd 1000 500)
af=$(UNITS_KEY=units_first cg add-first count_add_first add evd 100000 1000)
al=$(UNITS_KEY=units_last cg add-last count_add_last add evd 100000 1000)
r=$(ratio "$a100k" "$a1k")
rows+=("4. instructions per evd_loop_add, mean over 100k vs over 1k ($(sed -n 's/^fds=//p' "$out/add-100k.out") fds open at 100k)|$a100k|$a1k|${r}x|<= 1.5x|$(met "$r" 1.5)")
r=$(ratio "$al" "$af")
rows+=("4. instructions per evd_loop_add, adds 99k..100k vs 0..1k (side)|$al|$af|${r}x|<= 1.5x|$(met "$r" 1.5)")

# 5. consumer instructions per event, burst 32, saturated
ce=$(cg consume-evd count_consume_evd consume evd 32 2000)
cr=$(cg consume-raw32 count_consume_raw consume raw 32 2000)
cr24=$(cg consume-raw24 count_consume_raw consume raw 24 2000)
r=$(ratio "$ce" "$cr")
rows+=("5. consumer instructions/event, ring burst 32, vs rte_ring_dequeue_burst_elem (32 B) + handler|$ce|$cr|${r}x|<= 1.0x|$(met "$r" 1.0)")
r=$(ratio "$ce" "$cr24")
rows+=("5. the same vs 24 B elements (sizeof(struct evd_event): the same bytes)|$ce|$cr24|${r}x|(side)|$(met "$r" 1.0)")
cel=$(cg consume-evd-light count_consume_evd consume evd 32 2000 light)
crl=$(cg consume-raw24-light count_consume_raw consume raw 24 2000 light)
r=$(ratio "$cel" "$crl")
rows+=("5. the same, 24 B, handlers that read no event (delivery alone)|$cel|$crl|${r}x|(side)|$(met "$r" 1.0)")

echo "harness: timed runs" >&2
while IFS= read -r l; do rows+=("${l#ROW|}"); done < <("${nice[@]}" "$bin" time 2>"$out/time.log" | grep '^ROW|')
while IFS= read -r l; do rows+=("${l#ROW|}"); done < <("${nice[@]}" "$bin" addtime 2>"$out/addtime.log" | grep '^ROW|')
echo "harness: idle CPU, ${idle_s} s windows" >&2
while IFS= read -r l; do rows+=("${l#ROW|}"); done < <("$bin" idle "$idle_s" 2>"$out/idle.log" | grep '^ROW|')
while IFS= read -r l; do rows+=("${l#ROW|}"); done < <("$bin" mem 2>"$out/mem.log" | tee "$out/mem.out" | grep '^ROW|')

echo "| measure | evd | baseline | ratio | goal | met |"
echo "|---|---|---|---|---|---|"
for r in "${rows[@]}"; do echo "| ${r//|/ | } |"; done
