#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# scripts/ab-mechanisms patches each switch in after a line of adaptive's
# sources, which must be there exactly once: otherwise the A/B table of
# policies.md can no longer be measured again.
#   test_ab_switches.sh SOURCE_ROOT
set -u
top=$1 fail=0 n=0
switch() { # as the script's: FILE LINE NAME STATEMENT
	local c
	c=$(grep -cxF -- "$2" "$top/lib/evd/policy/adaptive/$1")
	n=$((n + 1))
	if [ "$c" = 1 ]; then
		echo "ok: the $3 switch's line in $1"
	else
		echo "FAIL: the $3 switch's line is in $1 $c times, not once"
		fail=1
	fi
}
eval "$(grep '^switch ' "$top/scripts/ab-mechanisms")"
[ "$n" -ge 2 ] || { echo "FAIL: $n switches read from scripts/ab-mechanisms"; fail=1; }
exit $fail
