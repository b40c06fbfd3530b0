#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Model-check evd.pml with spin: the model must verify with no error, and
# each mutant (re-poll removed, ring fences removed) must yield a
# counterexample, so the model is shown able to fail.
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
check() { # check NAME WANT_ERRORS DEFINES...
	local name=$1 want=$2
	shift 2
	rm -f pan pan.* evd.pml.trail
	if ! spin -a "$@" evd.pml >spin.log 2>&1; then
		echo "FAIL: $name: spin -a: $(cat spin.log)"; fail=1; return
	fi
	if ! cc -O2 -DSAFETY -o pan pan.c 2>cc.log; then
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
	if [ "$want" = some ] && [ "$errors" -eq 0 ]; then
		echo "FAIL: $name: the mutant verified: the model cannot see this bug"; fail=1; return
	fi
	if [ "$want" = some ]; then
		echo "ok: $name: counterexample of $steps steps ($(grep -m1 -oE 'invalid end state|assertion violated' pan.log)), $states states, ${secs}s"
	else
		echo "ok: $name: verified, $states states stored, ${secs}s"
	fi
}
check "model" none
check "mutant without the re-poll after arming" some -DNO_REPOLL
check "mutant without the ring's fences" some -DNO_FENCE
check "mutant ringing the stop eventfd before the flag" some -DSTOP_FD_FIRST
exit $fail
