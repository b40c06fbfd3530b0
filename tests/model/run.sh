#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Model-check evd.pml with spin: the model must verify with no error (with
# one ring, and with two rings on one bell), and each mutant must yield a
# counterexample of the kind named, so the model is shown able to fail: a
# deadlock (a loop asleep for good in an unbounded wait), the oracle of an
# armed ring's event nothing announces (assert(!stranded)), the devices'
# lost-wakeup verdict after a timeout (assert(!lost)), or any of them.
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
check() { # check NAME WANT DEFINES...   WANT: none, some, deadlock, stranded or lost
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
	   { [ "$want" = stranded ] && [ "$kind" != "assertion violated !(stranded)" ]; } ||
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
two="-DTWO_RINGS -DNO_STOP"
check "model" none
check "model, two rings on one bell (no stopper)" none $two
check "model, a solicited-only CQ (its arm says -ENOTSUP) kept in the round's list" none \
	-DSOLICITED -DLEVEL_IN_LIST
check "mutant taking that CQ out of the round's list" some -DSOLICITED
check "mutant without the re-poll after arming" some -DNO_REPOLL
check "  the same, every sleep unbounded: a deadlock" deadlock -DNO_REPOLL -DUNTIMED_ONLY
check "  the same, every sleep bounded: the oracle sees the event stranded" stranded -DNO_REPOLL -DTIMED_ONLY
check "mutant without the fence after the arm pass" some -DNO_ARM_FENCE
check "  the same, every sleep bounded" stranded -DNO_ARM_FENCE -DTIMED_ONLY
check "mutant without the post's fence" some -DNO_POST_FENCE
check "  the same, every sleep bounded" stranded -DNO_POST_FENCE -DTIMED_ONLY
check "mutant reading rung before storing sleeping" deadlock -DRUNG_BEFORE_SLEEPING
check "mutant reading sleeping before raising rung" deadlock -DSLEEPING_BEFORE_RUNG
check "mutant raising rung before setting the bit" some -DRUNG_BEFORE_BIT
check "mutant taking the bits before clearing rung" some $two -DBITS_BEFORE_RUNG
check "mutant setting the word's bit after its summaries" some $two -DWORD_AFTER_SUMMARY
check "mutant leaving a notified ring armed" some -DNOTIFIED_STAYS_ARMED
check "mutant judging rings after a timeout" lost -DJUDGE_RINGS
check "mutant ringing the stop eventfd before the flag" deadlock -DSTOP_FD_FIRST
exit $fail
