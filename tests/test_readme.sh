#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The README's sample output is today's demo's: every row label the demo
# prints (1 s here) is in the README's block, and the block has no row the
# demo no longer prints. Numbers differ run to run and are not compared;
# scripts/readme-sample regenerates the block.
#   test_readme.sh TESTEVD README
set -u
testevd=$1 readme=$2
out=$(mktemp)
trap 'rm -f "$out"' EXIT
"$testevd" --no-progress --duration 1 >"$out" 2>&1 || { echo "FAIL: testevd exited $?"; cat "$out"; exit 1; }
python3 - "$readme" "$out" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
head = text.index("## Sample output")
a = text.index("```\n", head) + 4
block = text[a:text.index("```", a)]
demo = open(sys.argv[2]).read()
def rows(s):
    # a report row: a label, two spaces or more, a value; and the lines
    # that begin with a word and a colon (log lines, the cost model)
    r = set()
    for line in s.splitlines():
        m = re.match(r"^  (\S.*?)\s{2,}\S+$", line)
        if m:
            r.add(m.group(1))
        m = re.match(r"^(EVD: calibrated [a-z -]+|testevd: pattern \S+)", line)
        if m:
            r.add(m.group(1))
    return r
want, have = rows(demo), rows(block)
missing, stale = sorted(want - have), sorted(have - want)
assert not missing and not stale, \
    f"README sample output differs from today's demo (run scripts/readme-sample): " \
    f"missing {missing}, not printed any more {stale}"
print(f"ok: the README's sample output has the demo's {len(want)} rows")
PY
