#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The exported ABI: each library's SONAME carries the ABI version, it exports
# exactly the symbols of its version map, all in the version node EVD_<abi>,
# the map lists exactly the functions its installed headers declare, and
# nothing internal (evd__*) is exported, and no symbol of tests/abi/<lib>.txt
# (what was exported when the list was last extended) is gone.
#   test_abi.sh ABI_VERSION SRCDIR LIB.so...
set -u
abi=$1 src=$2
shift 2
fail=0
for so in "$@"; do
	name=$(basename "$so")
	soname=$(readelf -d "$so" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
	case $soname in
	*.so."$abi") ;;
	*) echo "FAIL: $name: SONAME '$soname' does not end in .so.$abi"; fail=1 ;;
	esac
	case $name in
	libevd.so*) map=$src/lib/evd/version.map headers=("$src"/lib/evd/evd.h "$src"/lib/evd/evd_source.h "$src"/lib/evd/evd_policy.h) ;;
	libevd_net_ib.so*) map=$src/drivers/net-ib/version.map headers=("$src"/drivers/net-ib/*.h) ;;
	libevd_net_ethdev.so*) map=$src/drivers/net-ethdev/version.map headers=("$src"/drivers/net-ethdev/*.h) ;;
	*) echo "FAIL: $name: no version map known"; fail=1; continue ;;
	esac
	want=$(sed -n 's/^[[:space:]]*\([a-z_0-9]*\);$/\1/p' "$map" | sort)
	# objdump -T: symbol with its version; only defined ones (not *UND*)
	got=$(objdump -T "$so" | awk '$0 !~ /\*UND\*/ && NF >= 7 {print $(NF-1), $NF}' | sort -k2)
	names=$(echo "$got" | awk '{print $2}' | grep -v '^EVD_' | sort)
	if [ "$names" != "$want" ]; then
		echo "FAIL: $name: exported symbols differ from $map:"
		diff <(echo "$want") <(echo "$names") | sed 's/^/  /'
		fail=1
	fi
	bad=$(echo "$got" | awk -v v="EVD_$abi" '$2 !~ /^EVD_/ && $1 != v {print $2 " (" $1 ")"}')
	if [ -n "$bad" ]; then echo "FAIL: $name: not in version node EVD_$abi: $bad"; fail=1; fi
	# and every function the headers declare is in the map
	decl=$(grep -hE '^[a-z].*[ *](evd_[a-z0-9_]+)\(' "${headers[@]}" | grep -v '^static' |
		sed -E 's/.*[ *](evd_[a-z0-9_]+)\(.*/\1/' | sort -u)
	if [ "$decl" != "$want" ]; then
		echo "FAIL: $name: the headers declare other functions than $map exports:"
		diff <(echo "$decl") <(echo "$want") | sed 's/^/  /'
		fail=1
	fi
	# the symbols once exported stay: the list only grows within EVD_<abi>
	base=$src/tests/abi/$(dirname "${map#$src/}" | tr / -).txt
	gone=$(comm -23 "$base" <(echo "$want"))
	if [ -n "$gone" ]; then
		echo "FAIL: $name: exported before (${base#$src/}), not now: $gone"
		fail=1
	fi
	for s in $want; do
		case $s in evd__*) echo "FAIL: $name: internal symbol $s in the map"; fail=1 ;; esac
		grep -qw "$s" "${headers[@]}" || { echo "FAIL: $name: $s is exported but no header declares it"; fail=1; }
	done
	[ $fail -eq 0 ] && echo "ok: $name: SONAME $soname, $(echo "$want" | wc -l) symbols, all EVD_$abi"
done
exit $fail
