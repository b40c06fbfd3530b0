#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# `meson install` gives headers, libraries and a libevd.pc with which a DPDK
# application builds (shared and static) and runs.
set -eu
build=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
meson install -C "$build" --destdir "$tmp/root" --no-rebuild >/dev/null
pc=$(dirname "$(find "$tmp/root" -name libevd.pc | head -1)")
[ -n "$pc" ] || { echo "FAIL: no libevd.pc installed"; exit 1; }
for h in evd.h evd_source.h evd_policy.h; do
	[ -n "$(find "$tmp/root" -path "*/include/evd/$h")" ] || { echo "FAIL: $h not installed"; exit 1; }
done
if [ -n "$(find "$tmp/root" -name testevd -type f)" ]; then
	[ -n "$(find "$tmp/root" -path "*/man1/testevd.1")" ] || { echo "FAIL: testevd installed without its man page"; exit 1; }
fi
cat >"$tmp/app.c" <<'C'
#include <stdio.h>
#include <rte_eal.h>
#include <evd.h>
static void h(struct evd_source *s, void *b, uint16_t n, void *a) { (void)s; (void)b; *(int *)a += n; }
int main(void) {
	struct evd_loop_conf conf = { .policy = "intr" };
	struct evd_loop *loop; struct evd_source *r; struct evd_event ev = { .u64 = 42 };
	int got = 0;
	if (evd_loop_create(&conf, &loop) < 0 || evd_ring_create("r", 8, h, &got, &r) < 0 ||
	    evd_loop_add(loop, r) < 0 || evd_ring_post(r, &ev) < 0 || evd_loop_step(loop) != 1)
		return 1;
	evd_loop_remove(loop, r); evd_source_destroy(r); evd_loop_destroy(loop);
	printf("delivered %d\n", got);
	return got == 1 ? 0 : 1;
}
C
# Point the staged .pc at the staging root (what DESTDIR packaging does).
prefix=$(sed -n 's/^prefix=//p' "$pc/libevd.pc")
sed -i "s|^prefix=.*|prefix=$tmp/root$prefix|" "$pc/libevd.pc"
export PKG_CONFIG_PATH="$pc"
libdir=$(pkg-config --variable=libdir libevd)
cc -Wall -Werror -o "$tmp/app" "$tmp/app.c" $(pkg-config --cflags --libs libevd)
LD_LIBRARY_PATH="$libdir" "$tmp/app"
# static: libevd.a, then its Libs.private (-pthread -lm) and DPDK's libraries
cc -Wall -Werror -o "$tmp/app_static" "$tmp/app.c" $(pkg-config --cflags libevd) \
	"$libdir/libevd.a" $(pkg-config --libs libdpdk) -pthread -lm
"$tmp/app_static"
# the examples, each with its own Makefile, against the staged packages
for pcf in "$pc"/libevd_*.pc; do
	[ -f "$pcf" ] && sed -i "s|^prefix=.*|prefix=$tmp/root$prefix|" "$pcf"
done
if [ -f "$pc/libevd_net_ethdev.pc" ]; then
	src=$(cd "$(dirname "$0")/.." && pwd)
	for ex in fwd-busy fwd-evd service-core nested multi-lcore; do
		cp -r "$src/examples/$ex" "$tmp/$ex"
		rm -rf "$tmp/$ex/build"
		make -s -C "$tmp/$ex" >/dev/null
		[ -x "$tmp/$ex/build/$ex" ] || { echo "FAIL: examples/$ex did not build out of tree"; exit 1; }
		LD_LIBRARY_PATH="$libdir" ldd "$tmp/$ex/build/$ex" | grep -q "not found" &&
			{ echo "FAIL: examples/$ex: unresolved libraries"; exit 1; }
	done
	echo "ok: examples/fwd-busy, fwd-evd, service-core, nested and multi-lcore build out of tree with their Makefiles"
fi
echo "ok: installed libevd builds and runs a DPDK app, shared and static"
