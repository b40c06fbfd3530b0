#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Build a libFuzzer target with clang (ASan + UBSan) and run it from its
# committed seed corpus for a bounded time. Any crash, leak, hang or
# sanitizer report fails.
#   run.sh SRCDIR WORKDIR TARGET SECONDS
# Longer run (an hour): run.sh . /tmp/fuzz policy 3600
set -u
src=$(cd "$1" && pwd)
work=$2
target=$3
secs=$4
if ! command -v clang >/dev/null ||
	! compgen -G "/usr/lib/llvm-*/lib/clang/*/lib/linux/libclang_rt.fuzzer-x86_64.a" >/dev/null; then
	echo "SKIP: clang with libFuzzer is missing (Debian: apt-get install clang libclang-rt-14-dev)"
	exit 77
fi
mkdir -p "$work"
lib=("$src"/lib/evd/*.c "$src"/lib/evd/policy/*.c "$src"/lib/evd/policy/adaptive/*.c)
extra=()
case $target in
policy) files=("$src/tests/fuzz/fuzz_policy.c") ;;
opts) files=("$src/tests/fuzz/fuzz_opts.c" "$src/app/testevd/options.c" "$src/app/testevd/pattern.c"
	"$src/app/testevd/trace.c"); extra=(-lpcap) ;;
trace) files=("$src/tests/fuzz/fuzz_trace.c" "$src/app/testevd/trace.c"); lib=(); extra=(-lpcap) ;;
pcap) files=("$src/tests/fuzz/fuzz_pcap.c" "$src/app/testevd/trace.c"); lib=(); extra=(-lpcap) ;;
*) echo "unknown target $target"; exit 2 ;;
esac
bin=$work/fuzz_$target
clang -g -O1 -Wall -Werror -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all -D_GNU_SOURCE \
	-DTESTEVD_HAVE_VERBS $(pkg-config --cflags libdpdk) -I"$src/lib/evd" -I"$src/app/testevd" \
	"${files[@]}" "${lib[@]}" $(pkg-config --libs libdpdk) "${extra[@]}" -lpthread -lm -o "$bin" || exit 1
corpus=$work/corpus-$target
mkdir -p "$corpus"
cp -n "$src/tests/fuzz/corpus/$target"/* "$corpus"/ 2>/dev/null
"$bin" -max_total_time="$secs" -timeout=5 -rss_limit_mb=2048 -print_final_stats=1 \
	-artifact_prefix="$work/crash-$target-" "$corpus" >"$work/$target.log" 2>&1
rc=$?
grep -E "^#[0-9]+ *DONE|stat::number_of_executed_units|stat::new_units_added|cov:" "$work/$target.log" | tail -3
if [ $rc -ne 0 ]; then
	echo "FAIL: fuzz target $target (status $rc):"
	grep -A30 -E "ERROR|WARNING|Sanitizer|runtime error" "$work/$target.log" | head -60
	exit 1
fi
echo "ok: fuzz target $target, $(grep -oE 'Done [0-9]+ runs in [0-9]+ second' "$work/$target.log")"
