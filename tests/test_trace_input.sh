#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# testevd --score on damaged or extreme input: each is refused with status 2
# and a message that names the trouble, or used with a warning that says
# what was kept; none hangs, none is taken silently. (Found by a review
# that fuzzed the command line: a gap of 10^19 ns from a flipped pcap byte
# made --score step through it for ever; a pcap cut short lost its tail
# without a word; a negative calibration wrapped to 2^64.)
#   test_trace_input.sh TESTEVD
set -u
testevd=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
printf '# B, L\n5000 16000 16000 19000 25000\n' >"$tmp/cal.txt"
score() { # score ARGS...: a short --score run on the fixed calibration; 60 s at most
	timeout 60 "$testevd" --no-progress --score --calibration "$tmp/cal.txt" "$@" \
		>"$tmp/out" 2>"$tmp/err"
}
expect() { # expect DESCRIPTION STATUS MESSAGE-REGEX ARGS...
	local what=$1 want=$2 msg=$3
	shift 3
	score "$@"
	local got=$?
	if [ "$got" -ne "$want" ]; then
		echo "FAIL: $what: status $got, wanted $want"; tail -5 "$tmp/err"; fail=1
	elif [ -n "$msg" ] && ! grep -Eq "$msg" "$tmp/err"; then
		echo "FAIL: $what: no message matching '$msg'"; tail -5 "$tmp/err"; fail=1
	else
		echo "ok: $what"
	fi
}

# ---- pcap: records made here (24-byte header, 16-byte record headers) ----
mkpcap() { # mkpcap FILE MAGIC "SEC FRAC" ... (each record 20 bytes of zeros)
	python3 - "$@" <<'PY'
import struct, sys
path, magic = sys.argv[1], int(sys.argv[2], 16)
out = struct.pack('<IHHiIII', magic, 2, 4, 0, 0, 64, 1)
for r in sys.argv[3:]:
    sec, frac = (int(x) for x in r.split())
    out += struct.pack('<iiII', sec, frac, 20, 20) + bytes(20)
open(path, 'wb').write(out)
PY
}
US=a1b2c3d4 NS=a1b23c4d
mkpcap "$tmp/hour.pcap" $US "0 0" "7200 0"
expect "pcap, a gap of 2 hours" 2 "packet 2: 7200.0 s after.*at most an hour" --policy poll --trace "$tmp/hour.pcap"
mkpcap "$tmp/neg.pcap" $US "100 0" "-5 0"
expect "pcap, a negative time" 2 "packet 2: timestamp -5 s.*not a time" --trace "$tmp/neg.pcap"
mkpcap "$tmp/frac.pcap" $NS "100 0" "100 2000000000"
expect "pcap (ns), a fraction of 2 s" 2 "packet 2: .*not a time" --trace "$tmp/frac.pcap"
mkpcap "$tmp/one.pcap" $US "100 0"
expect "pcap, one packet" 2 "1 packets.*2 or more" --trace "$tmp/one.pcap"
# ten records, the file cut in the 6th: the 5 before it, with a warning
mkpcap "$tmp/ten.pcap" $US "100 0" "100 10" "100 20" "100 30" "100 40" "100 50" "100 60" "100 70" "100 80" "100 90"
head -c $((24 + 5 * 36 + 20)) "$tmp/ten.pcap" >"$tmp/cut.pcap"
expect "pcap cut short" 0 "warning: .*truncated.*the 5 packets before it" \
	--policy poll --trace "$tmp/cut.pcap" --json "$tmp/cut.json"
python3 -c "import json,sys; r=json.load(open(sys.argv[1]))[0]; assert r['events'] == 5, r" \
	"$tmp/cut.json" || fail=1
# one packet stamped 1 s early, in a capture 2 ms long: it arrives with the
# one before it and the next gap runs from the latest time, so the trace
# is 2 ms long (poll spins through all of it: its cost); counted from the
# early stamp, as before, it was 1.003 s
mkpcap "$tmp/back.pcap" $US "100 0" "100 1000" "99 0" "100 2000"
expect "pcap, a packet stamped early" 0 "warning: 1 packets are stamped before" \
	--policy poll --trace "$tmp/back.pcap" --json "$tmp/back.json"
python3 -c "import json,sys; r=json.load(open(sys.argv[1]))[0]; assert r['events'] == 4 and r['cost'] == 2000000, r" \
	"$tmp/back.json" || fail=1

# ---- text traces ----
printf '1000\n2000\0junk\n3000\n' >"$tmp/nul.txt"
expect "text trace with a NUL byte" 2 "line 2: a NUL byte" --trace "$tmp/nul.txt"
printf '\n\r\n1000\n2000\n' >"$tmp/lfcr.txt" # its first bytes half a pcapng magic
expect "text trace starting with LF CR" 0 "" --trace "$tmp/lfcr.txt"
printf '0\n0\n0\n' >"$tmp/zeros.txt"
expect "all-zero gaps" 0 "" --compare --trace "$tmp/zeros.txt"
if grep -qi nan "$tmp/out"; then echo "FAIL: all-zero gaps print nan"; fail=1; fi

# ---- generators ----
expect "generator gap over an hour" 2 "a gap of .* at most an hour" --trace poisson:rate=1e-9 --events 10
expect "generator gap of inf" 2 "a gap of inf s" --trace poisson:rate=1e-300 --events 10
expect "generator rate over 1e9" 2 "rate at most 1e9" --trace poisson:rate=1e300
expect "generator key it does not take" 2 "poisson: no key 'alpha'" --trace poisson:alpha=3
expect "day takes no keys" 2 "takes none" --trace day:rate=5
expect "generator key twice" 2 "rate given twice" --trace poisson:rate=5,rate=100000
expect "generator empty item" 2 "'' is not KEY=VALUE" --trace "poisson:,rate=10"
expect "generator spec too long" 2 "a spec of [0-9]+ characters, the most is 127" \
	--trace "poisson:rate=1$(printf '0%.0s' $(seq 199))"

# ---- --calibration ----
cal() { printf -- "$2" >"$tmp/$1.cal"; }
cal neg '-1 20000 20000 20000 20000\n'
cal hex '0x1388 20000 20000 20000 20000\n'
cal big '5000 20000 20000 20000 18446744073709551615\n'
cal two '5000 20000 20000 20000 20000\n5000 1 1 1 1\n'
cal four '5000 20000 20000 20000 20000\n1 1 1 1\n0 0 0 0\n1 1 1 1\n'
cal onec '5000 20000 20000 20000 20000\n1 1 1 1\n17000 0 0 0\n'
cal wnolc '5000 20000 20000 20000 20000\n1 1 1 1\n0 0 0 100000\n'
cal tbig '5000 20000 20000 20000 20000\n1 1 1 1000000001\n'
cal tsome '5000 20000 20000 20000 20000\n50000 50000 0 0\n'
cal nul '5000 20000 20000 20000 20000\0junk\n'
cal zero '0 20000 20000 20000 20000\n'
cal lfalls '5000 20000 20000 19999 20000\n'
for c in neg hex big two four onec wnolc tbig tsome nul zero lfalls; do
	timeout 60 "$testevd" --no-progress --score --calibration "$tmp/$c.cal" --trace poisson --events 10 \
		>"$tmp/out" 2>"$tmp/err"
	rc=$?
	if [ $rc -ne 2 ] || ! grep -q "calibration .*line [1-4]:" "$tmp/err"; then
		echo "FAIL: calibration '$c': status $rc"; cat "$tmp/err"; fail=1
	else
		echo "ok: calibration '$c' refused: $(grep -o 'line [1-4]: [^;]*' "$tmp/err")"
	fi
done
# a comment line longer than any buffer, ending in numbers: still a comment
{ printf '# '; printf 'x%.0s' $(seq 300); printf ' 9 9 9 9 9\n5000 20000 20000 20000 20000\n'; } >"$tmp/long.cal"
timeout 60 "$testevd" --no-progress --score --calibration "$tmp/long.cal" --trace poisson --events 10 \
	--json "$tmp/long.json" >/dev/null 2>&1 &&
python3 -c "import json,sys; c=json.load(open(sys.argv[1]))[0]['calibration']; assert c['b_ns'] == 5000, c" \
	"$tmp/long.json" && echo "ok: a long comment stays a comment" || { echo "FAIL: long comment"; fail=1; }
# ...in a text trace too: a comment may be any length, a gap's line may not
{ printf '# '; printf 'x%.0s' $(seq 300); printf '\n1000\n2000\n3000\n'; } >"$tmp/longc.txt"
score --trace "$tmp/longc.txt" --json "$tmp/longc.json" &&
python3 -c "import json,sys; e=json.load(open(sys.argv[1]))[0]['events']; assert e == 3, e" \
	"$tmp/longc.json" && echo "ok: a long comment in a trace" || { echo "FAIL: long comment in a trace"; fail=1; }
{ printf '1000\n'; printf '0%.0s' $(seq 300); printf '2000\n'; } >"$tmp/longl.txt"
expect "a gap's line past 127 bytes" 2 "longer than 127 bytes" --trace "$tmp/longl.txt"

# ---- options a trace makes meaningless: refused, not ignored ----
# (--duration beside a 100 s --trace used to be dropped without a word)
expect "--duration with --trace" 2 "a --trace has its own arrivals" --trace poisson --duration 2
expect "--rate with --trace" 2 "a --trace has its own arrivals" --trace poisson --rate 5000
expect "--pattern with --trace" 2 "a --trace has its own arrivals" --pattern steady --trace poisson

# ---- --json ----
echo '{"kept": true}' >"$tmp/keep.json"
expect "refused input keeps an existing report" 2 "" --trace "$tmp/nul.txt" --json "$tmp/keep.json"
grep -q kept "$tmp/keep.json" || { echo "FAIL: the report was emptied"; fail=1; }
score --trace "$tmp/nul.txt" --json "$tmp/new.json"
[ ! -e "$tmp/new.json" ] || { echo "FAIL: a refused run left an empty report"; fail=1; }
cp "$tmp/lfcr.txt" "$tmp/q\"uo\\te.txt"
expect "a trace name with a quote and a backslash" 0 "" --trace "$tmp/q\"uo\\te.txt" --json "$tmp/q.json"
python3 -c "import json,sys; r=json.load(open(sys.argv[1]))[0]; assert r['trace'] == 'q\"uo\\\\te.txt', r['trace']" \
	"$tmp/q.json" || fail=1
long_spec="adaptive:lambda_pct=000000000000000000000000000000000000000000000000000000000000100,spin_max_us=0000000000001000000,superpose=1,nap=1"
expect "a 133-character policy spec" 0 "" --policy "$long_spec" --trace poisson --events 100 --json "$tmp/p.json"
python3 -c "import json,sys; r=json.load(open(sys.argv[1]))[0]; assert r['policy'] == sys.argv[2], r['policy']" \
	"$tmp/p.json" "$long_spec" || fail=1
timeout 60 "$testevd" --no-progress --score --calibration "$tmp/cal.txt" --trace poisson --events 100 \
	--json - >"$tmp/stdout.json" 2>/dev/null &&
python3 -c "import json,sys; json.load(open(sys.argv[1]))" "$tmp/stdout.json" &&
echo "ok: --json - leaves stdout to the JSON" || { echo "FAIL: --json -: stdout is not JSON"; head -3 "$tmp/stdout.json"; fail=1; }

# ---- a trace on a pipe, a directory, a slow-down past an hour ----
# (a pipe lost its first 4 bytes to the format check's rewind: 123456789
# was read as 56789; a directory read as an empty trace; --speedup under 1
# stretched gaps past the hour every trace keeps)
printf '123456789\n2000\n' | timeout 60 "$testevd" --no-progress --score --calibration "$tmp/cal.txt" \
	--policy intr --trace /dev/stdin --json "$tmp/pipe.json" >/dev/null 2>&1 &&
python3 -c "import json,sys; r=json.load(open(sys.argv[1]))[0]; assert r['events'] == 2, r" "$tmp/pipe.json" &&
grep -q '"trace": "stdin"' "$tmp/pipe.json" && echo "ok: a text trace on a pipe" ||
	{ echo "FAIL: a text trace on a pipe"; fail=1; }
mkpcap "$tmp/pipe.pcap" a1b2c3d4 "1 0" "1 500000" "2 0"
cat "$tmp/pipe.pcap" | timeout 60 "$testevd" --no-progress --score --calibration "$tmp/cal.txt" \
	--policy intr --trace /dev/stdin --json "$tmp/pipep.json" >/dev/null 2>&1 &&
python3 -c "import json,sys; r=json.load(open(sys.argv[1]))[0]; assert r['events'] == 3, r" "$tmp/pipep.json" &&
echo "ok: a pcap on a pipe" || { echo "FAIL: a pcap on a pipe"; fail=1; }
mkdir "$tmp/adir"
expect "a directory" 2 "Is a directory" --trace "$tmp/adir"
printf '3600000000000\n3600000000000\n' >"$tmp/hours.txt"
expect "hour-long gaps at 1x" 0 "" --policy intr --trace "$tmp/hours.txt"
expect "hour-long gaps slowed down" 2 "at most an hour" --policy intr --trace "$tmp/hours.txt" --speedup 0.5
exit $fail
