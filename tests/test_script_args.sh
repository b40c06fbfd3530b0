#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The benchmark scripts check their arguments before anything is installed
# or built: each bad one exits 2 with a line naming it (numbers too large
# for bash's tests gave its own error and a wrong message; values testevd
# refuses ran a whole build and a section first).
#   test_script_args.sh SOURCE_ROOT
set -u
top=$1 fail=0
check() { # check WANT_IN_STDERR CMD...: exit 2, the line says WANT
	local want=$1 err
	shift
	err=$("$@" 2>&1 >/dev/null)
	local got=$?
	if [ "$got" -ne 2 ] || [[ $err != *"$want"* ]] || [[ $err == *"integer expression"* ]]; then
		echo "FAIL: $*: status $got, stderr '$err', wanted 2 and '$want'"
		fail=1
	else
		echo "ok: $*"
	fi
}
# a copy of the scripts alone: one that let a bad value through would stop
# at its build (no meson.build here, exit 3), not build and run a bench
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cp -r "$top/scripts" "$tmp/"
cd "$tmp"
check "EVD_TARGET_US='0': 1 or more" env EVD_TARGET_US=0 ./scripts/bench target
check "at most 1000000" env EVD_TARGET_US=1000001 ./scripts/bench target
check "under 10^9" env EVD_SCALE_ROUNDS=99999999999999999999 ./scripts/bench scale
check "no section 'nope'" ./scripts/bench nope
check "under 10^9" ./scripts/fwd-pair fwd-evd 99999999999999999999 1 x.json
check "at most 86400" ./scripts/fwd-pair fwd-evd 100 100000 x.json
check "at most 86400" ./scripts/fwd-pair fwd-evd 100 99999999999999999999 x.json
check "not empty" ./scripts/fwd-pair fwd-evd 100 1 ''
check "unknown forwarder" ./scripts/fwd-pair nope 100 1 x.json
check "RATE 0" ./scripts/fwd-pair fwd-evd 0 1 x.json
exit $fail
