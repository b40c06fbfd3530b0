#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Model-check evd.pml with spin: the model must verify with no error, and
# each mutant must yield a counterexample of the kind named, so the model is
# shown able to fail: a deadlock (a loop asleep for good in an unbounded
# wait), the lost-wakeup verdict after a timeout (assert(!lost)), or either.
#   run.sh MODEL.pml [WORKDIR]
set -u
model=$1
work=${2:-$(mktemp -d)}
if ! command -v spin >/dev/null || ! command -v cc >/dev/null; then
	echo "SKIP: spin or a C compiler is missing (Debian: apt-get install spin gcc)"
	exit 77
fi
mkdir -p "$work"
cp "$model" "$work/evd.pml"
cd "$work" || exit 1
fail=0
check() { # check NAME WANT DEFINES...   WANT: none, some, deadlock or lost
	local name=$1 want=$2
	shift 2
	rm -f pan pan.* evd.pml.trail
	if ! spin -a "$@" evd.pml >spin.log 2>&1; then
		echo "FAIL: $name: spin -a: $(cat spin.log)"; fail=1; return
	fi
	# the mutants stop within a few thousand states: compile them unoptimised
	local opt=-O0
	[ "$want" = none ] && opt=-O2
	if ! cc $opt -DSAFETY -o pan pan.c 2>cc.log; then
		echo "FAIL: $name: cc: $(head -3 cc.log)"; fail=1; return
	fi
	./pan -m100000 >pan.log 2>&1
	local errors states secs steps
	errors=$(sed -n 's/.*errors: \([0-9]*\).*/\1/p' pan.log)
	states=$(sed -n 's/^ *\([0-9.e+]*\) states, stored.*/\1/p' pan.log)
	secs=$(sed -n 's/^pan: elapsed time \([0-9.e+]*\) seconds.*/\1/p' pan.log)
	steps=0
	[ -f evd.pml.trail ] && steps=$(wc -l < evd.pml.trail)
	if [ -z "$errors" ]; then
		echo "FAIL: $name: pan did not finish"; tail -5 pan.log; fail=1; return
	fi
	if [ "$want" = none ] && [ "$errors" -ne 0 ]; then
		echo "FAIL: $name: $errors error(s):"; grep -E "pan:|violated|invalid" pan.log
		spin -t -p "$@" evd.pml | tail -40
		fail=1; return
	fi
	if [ "$want" != none ] && [ "$errors" -eq 0 ]; then
		echo "FAIL: $name: the mutant verified: the model cannot see this bug"; fail=1; return
	fi
	local kind
	kind=$(grep -m1 -oE 'invalid end state|assertion violated +[^ ]+' pan.log | tr -s ' ')
	if { [ "$want" = deadlock ] && [ "$kind" != "invalid end state" ]; } ||
	   { [ "$want" = lost ] && [ "$kind" != "assertion violated !(lost)" ]; }; then
		echo "FAIL: $name: wanted a counterexample by $want, got: $kind"
		spin -t -p "$@" evd.pml | tail -40
		fail=1; return
	fi
	if [ "$want" != none ]; then
		echo "ok: $name: counterexample of $steps steps ($kind), $states states, ${secs}s"
	else
		echo "ok: $name: verified, $states states stored, ${secs}s"
	fi
}
check "model" none
check "mutant without the re-poll after arming" some -DNO_REPOLL
check "  the same, every sleep unbounded: a deadlock" deadlock -DNO_REPOLL -DUNTIMED_ONLY
check "  the same, every sleep bounded: the verdict sees the loss" lost -DNO_REPOLL -DTIMED_ONLY
check "mutant without the ring's fences" some -DNO_FENCE
check "  the same, every sleep bounded: the verdict sees the loss" lost -DNO_FENCE -DTIMED_ONLY
check "mutant ringing the stop eventfd before the flag" deadlock -DSTOP_FD_FIRST
check "mutant calling a post in flight only if armed is 0" lost -DOLD_DOORBELL_OWED
check "mutant adding to done before the doorbell step" lost -DDONE_EARLY
check "mutant reading head before done" lost -DHEAD_FIRST
exit $fail
