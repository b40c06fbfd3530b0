#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# examples/fwd-busy and examples/fwd-evd on the vhost-user pair: testevd
# --send --echo (vhost side) plays 2,000 packets/s for 2 s and expects each
# one back; the example forwards on the virtio-user side until SIGINT.
# Every packet must come back, and the example's own count must match. The
# forwarders' CPU (read by the sender) is printed, not asserted.
#   test_examples.sh TESTEVD FWD_BUSY FWD_EVD
set -u
testevd=$1
shift
tmp=$(mktemp -d)
pids=()
trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done; rm -rf "$tmp"' EXIT
eal="--no-huge --no-pci -m 256 --no-shconf --log-level=lib.vhost.config:warning --log-level=pmd.net.vhost:warning"
tx_cpu="" rx_cpu=""
if [ "$(nproc)" -ge 2 ]; then tx_cpu="-l 1" rx_cpu="-l 0"; fi
fail=0
for app in "$@"; do
	name=$(basename "$app")
	sock=$tmp/$name.sock
	"$testevd" $eal $tx_cpu --file-prefix=evd-ex-tx$$ --vdev "net_vhost0,iface=$sock,queues=1" -- \
		--send --echo --pattern steady --rate 2000 --duration 2 --send-delay 2 \
		--peer-pid-file "$tmp/$name.pid" --json "$tmp/$name.json" >"$tmp/$name-tx.log" 2>&1 &
	tx=$!
	pids+=("$tx")
	for _ in $(seq 100); do [ -S "$sock" ] && break; sleep 0.1; done
	[ -S "$sock" ] || { echo "FAIL: $name: the vhost side did not start"; cat "$tmp/$name-tx.log"; fail=1; continue; }
	"$app" $eal $rx_cpu --file-prefix=evd-ex-rx$$ --vdev "net_virtio_user0,path=$sock,queues=1" \
		>"$tmp/$name.log" 2>&1 &
	fwd=$!
	pids+=("$fwd")
	echo $fwd >"$tmp/$name.pid"
	wait $tx
	trc=$?
	kill -INT $fwd
	wait $fwd
	frc=$?
	if [ $trc -ne 0 ] || [ $frc -ne 0 ]; then
		echo "FAIL: $name: sender status $trc, forwarder status $frc"
		cat "$tmp/$name-tx.log" "$tmp/$name.log"; fail=1; continue
	fi
	python3 - "$name" "$tmp/$name.json" "$tmp/$name.log" <<'PY' || { fail=1; cat "$tmp/$name.log"; }
import json, re, sys
name, tx, log = sys.argv[1], json.load(open(sys.argv[2])), open(sys.argv[3]).read()
sent = tx["events_sent"]
assert sent > 0 and tx["events_delivered"] == sent and tx["events_lost"] == 0, \
    f"{name}: sent {sent}, back {tx['events_delivered']}"
m = re.search(r"fwd: (\d+) received, (\d+) sent back, (\d+) dropped", log)
assert m, f"{name}: no final count in its output:\n{log}"
rx, back, dropped = map(int, m.groups())
# the example also forwarded the sender's probes and END packet
assert rx == back and dropped == 0 and rx >= sent, (rx, back, dropped, sent)
print(f"ok: {name}: {sent} sent, {tx['events_delivered']} back (it forwarded {rx} in all), round trip p50 "
      f"{tx['latency_us']['p50']:.1f} us, p99 {tx['latency_us']['p99']:.1f} us; its CPU {tx['peer_cpu_pct']:.1f} %")
PY
done
exit $fail
