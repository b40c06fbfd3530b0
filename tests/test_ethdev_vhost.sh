#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Real Rx-interrupt arming without a NIC: two testevd processes over
# vhost-user. The vhost side (started first, it creates the socket) sends;
# the virtio-user side receives through net-ethdev with its Rx interrupt
# armed whenever it sleeps. Sparse traffic (every packet lands while the
# receiver sleeps) and dense traffic (the re-poll after arming catches
# packets): every packet counted, lost wakeups 0. Then forwarding: the
# receiver sends every packet back and the sender times the round trips.
set -u
testevd=$1
tmp=$(mktemp -d)
sock=$tmp/vhost.sock
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
	rm -rf "$tmp"
	rmdir /var/run/dpdk/evd-tx$$ /var/run/dpdk/evd-rx$$ 2>/dev/null
}
trap cleanup EXIT
eal="--no-huge --no-pci -m 256 --no-shconf --log-level=lib.vhost.config:warning --log-level=pmd.net.vhost:warning"
fail=0
# Each process's main thread is pinned to its first lcore (0 by default).
tx_cpu="" rx_cpu=""
if [ "$(nproc)" -ge 2 ]; then tx_cpu="-l 1" rx_cpu="-l 0"; fi

# run NAME POLICY PATTERN RATE DURATION
run() {
	local name=$1 policy=$2 pattern=$3 rate=$4 dur=$5
	rm -f "$sock"
	"$testevd" $eal $tx_cpu --file-prefix=evd-tx$$ --vdev "net_vhost0,iface=$sock,queues=1" -- \
		--send --pattern "$pattern" --rate "$rate" --duration "$dur" --send-delay 3 \
		--json "$tmp/$name-tx.json" >"$tmp/$name-tx.log" 2>&1 &
	local tx=$!
	pids+=("$tx")
	for _ in $(seq 100); do [ -S "$sock" ] && break; sleep 0.1; done
	if [ ! -S "$sock" ]; then
		echo "FAIL: $name: the vhost side did not create $sock"; cat "$tmp/$name-tx.log"; fail=1; return
	fi
	timeout 120 "$testevd" $eal $rx_cpu --file-prefix=evd-rx$$ --vdev "net_virtio_user0,path=$sock,queues=1" -- \
		--source ethdev --policy "$policy" --duration "$dur" --no-progress --probe-arm \
		--json "$tmp/$name-rx.json" >"$tmp/$name-rx.log" 2>&1
	local rrc=$?
	wait "$tx"
	local trc=$?
	if [ $rrc -ne 0 ] || [ $trc -ne 0 ]; then
		echo "FAIL: $name: receiver status $rrc, sender status $trc"
		cat "$tmp/$name-tx.log" "$tmp/$name-rx.log"; fail=1; return
	fi
	python3 - "$name" "$tmp/$name-tx.json" "$tmp/$name-rx.json" "$dur" <<'PY' || { fail=1; cat "$tmp/$name-rx.log"; }
import json, sys
name, tx, rx = sys.argv[1], json.load(open(sys.argv[2])), json.load(open(sys.argv[3]))
sent = tx["events_sent"]
# The sender times the pattern on the TSC: it plays it on CLOCK_MONOTONIC
# for --duration, so its TSC-timed span cannot be shorter (at EAL's nominal
# TSC rate, 0.19 % off on KVM guests, a 2 s pattern read 1.996 s)
dur = float(sys.argv[4])
# (above: less than its --send-delay of 3 s, which it must not count; a
# host stall can stretch the last gap)
assert dur - 0.001 <= tx["duration_s"] < dur + 1.5, f"{name}: a {dur} s pattern timed {tx['duration_s']} s"
assert sent > 0, "the sender sent nothing"
assert rx["events_delivered"] == sent, f"{name}: sent {sent}, delivered {rx['events_delivered']}"
assert rx["events_lost"] == 0 and rx["lost_wakeups"] == 0 and rx["errors"] == 0, rx
assert rx["sleeps"] > 0 and rx["wakeups"] > 0, f"{name}: the receiver never slept on its Rx interrupt: {rx}"
if name.startswith("sparse"):
    # gaps of ~10 ms under intr: nearly every packet wakes the receiver
    assert rx["wakeups"] >= sent // 2, f"{name}: {rx['wakeups']} wakeups for {sent} packets"
    # ...and only the packets: the sender's probes during its --send-delay
    # (one every 10 ms, 3 s) are not the pattern's, nor its wakes
    assert rx["wakeups"] <= sent + 20, f"{name}: {rx['wakeups']} wakeups for {sent} packets"
# The receiver's figures span the pattern (its first packet to the END),
# not the sender's --send-delay (3 s) before it: the same time as the
# sender's within a gap or two, where a host stall may add to either side;
# a span that counted the delay would be 3 s over (and its rate, the same
# packets over that span, a third or more lower)
assert abs(rx["duration_s"] - tx["duration_s"]) < 1.0, \
    f"{name}: receiver over {rx['duration_s']} s, sender {tx['duration_s']} s"
# The race the re-poll closes: a re-poll hit, or the probe showing that
# arming does not fire for a packet already queued (virtio/vhost is strict).
assert rx["repoll_hits"] >= 1 or rx.get("arm_probe") == "strict", \
    f"{name}: neither a re-poll hit nor a strict arm probe: {rx}"
print(f"ok: {name}: {sent} sent, {rx['events_delivered']} delivered, sleeps {rx['sleeps']}, "
      f"wakeups {rx['wakeups']}, re-poll hits {rx['repoll_hits']}, spurious {rx['spurious_wakeups']}, "
      f"arm probe {rx.get('arm_probe')}, p50 {rx['latency_us']['p50']} us, cpu {rx['cpu_pct']:.2f} %")
PY
}

# forward NAME POLICY RATE|TRACE DURATION [PACKETS]: the sender (--echo)
# gets every packet back from testevd --forward and reads the forwarder's
# CPU time. A trace (file) is played once; PACKETS: how many it holds.
forward() {
	local name=$1 policy=$2 rate=$3 dur=$4 expect=${5:-0} traffic
	case $rate in
	*[!0-9]*) traffic="--trace $rate" ;;
	*) traffic="--pattern steady --rate $rate --duration $dur" ;;
	esac
	rm -f "$sock"
	"$testevd" $eal $tx_cpu --file-prefix=evd-tx$$ --vdev "net_vhost0,iface=$sock,queues=1" -- \
		--send --echo $traffic --send-delay 2 \
		--peer-pid-file "$tmp/$name.pid" --json "$tmp/$name-tx.json" >"$tmp/$name-tx.log" 2>&1 &
	local tx=$!
	pids+=("$tx")
	for _ in $(seq 100); do [ -S "$sock" ] && break; sleep 0.1; done
	if [ ! -S "$sock" ]; then
		echo "FAIL: $name: the vhost side did not create $sock"; cat "$tmp/$name-tx.log"; fail=1; return
	fi
	# no timeout(1) wrapper: the pid must be testevd's (meson's timeout applies)
	"$testevd" $eal $rx_cpu --file-prefix=evd-rx$$ --vdev "net_virtio_user0,path=$sock,queues=1" -- \
		--source ethdev --forward --policy "$policy" --no-progress \
		--json "$tmp/$name-rx.json" >"$tmp/$name-rx.log" 2>&1 &
	local rx=$!
	pids+=("$rx")
	echo $rx >"$tmp/$name.pid"
	wait "$rx"
	local rrc=$?
	wait "$tx"
	local trc=$?
	if [ $rrc -ne 0 ] || [ $trc -ne 0 ]; then
		echo "FAIL: $name: forwarder status $rrc, sender status $trc"
		cat "$tmp/$name-tx.log" "$tmp/$name-rx.log"; fail=1; return
	fi
	python3 - "$name" "$tmp/$name-tx.json" "$tmp/$name-rx.json" "$expect" <<'PY' || { fail=1; cat "$tmp/$name-tx.log" "$tmp/$name-rx.log"; }
import json, sys
name, tx, rx = sys.argv[1], json.load(open(sys.argv[2])), json.load(open(sys.argv[3]))
sent, expect = tx["events_sent"], int(sys.argv[4])
assert sent > 0, "the sender sent nothing"
assert expect == 0 or sent == expect, f"{name}: the trace holds {expect} packets, {sent} sent"
assert tx["events_delivered"] == sent and tx["events_lost"] == 0, f"{name}: sent {sent}, back {tx['events_delivered']}"
assert rx["events_delivered"] == sent and rx["errors"] == 0, f"{name}: forwarder: {rx}"
# it also sent back the sender's probes and its END packet
assert rx.get("forwarded", 0) > sent, f"{name}: forwarded {rx.get('forwarded')} of {sent} and more"
assert rx["sleeps"] > 0, f"{name}: the forwarder never slept: {rx}"
assert 0 < tx["latency_us"]["p50"] <= tx["latency_us"]["max"], tx["latency_us"]
# the histogram holds every round trip, in increasing bins, and its bins
# give back the percentiles the report printed
assert tx["sender_stalls"] >= 0 and (tx["sender_stalls"] == 0) == (tx["sender_stall_max_us"] == 0), tx
h = tx["rtt_histogram_ns"]
assert sum(c for _, c in h) == sent, f"{name}: histogram holds {sum(c for _, c in h)} of {sent}"
assert all(a[0] < b[0] for a, b in zip(h, h[1:])), h
# the round trips the sender took promptly are the histogram's but the
# late ones, which are counted (bin by bin: a subset)
hp, late = dict(tx["rtt_prompt_histogram_ns"]), tx["rtt_sender_late"]
assert late >= 0 and sum(hp.values()) + late == sent, f"{name}: {sum(hp.values())} prompt + {late} late of {sent}"
assert all(c <= dict(h).get(top, 0) for top, c in hp.items()), (hp, h)
def pct(p):
    want, seen = min(int(p * sent), sent - 1), 0
    for top, c in h:
        seen += c
        if seen > want:
            return min(top / 1e3, tx["latency_us"]["max"])
for p, k in ((0.5, "p50"), (0.99, "p99")):
    assert abs(pct(p) - tx["latency_us"][k]) < 0.01, (k, pct(p), tx["latency_us"])
# the forwarder's CPU as the sender read it from /proc, and as the forwarder
# measured it itself (its first packet to the END): both under 100 %, both > 0
assert 0 < tx["peer_cpu_pct"] < 100 and 0 < rx["cpu_pct"] < 100, (tx["peer_cpu_pct"], rx["cpu_pct"])
# ...over the pattern's time, not the sender's --send-delay (2 s) before it
# (a span that counted it would be 2 s over; a host stall may add to either)
assert abs(rx["duration_s"] - tx["duration_s"]) < 1.0, \
    f"{name}: forwarder over {rx['duration_s']} s, sender {tx['duration_s']} s"
print(f"ok: {name}: {sent} sent, {tx['events_delivered']} back, round trip p50 "
      f"{tx['latency_us']['p50']} us, forwarder cpu {tx['peer_cpu_pct']:.2f} % (own {rx['cpu_pct']:.2f} %)")
PY
}

run sparse-intr intr steady 100 2
run dense-intr intr demo 20000 2
run dense-adaptive adaptive demo 20000 2
forward forward-adaptive adaptive 2000 2
# sparse pairs (as bench fwd plays them): 15 ms of silence, A, then B
# 1 to 200 us later, while the forwarder spins, arms or sleeps: the trace
# played whole, every packet back, no lost wakeup (testevd's status)
python3 -c "
for i in range(60):
    print(15000000); print(1000 + i * 3300)" >"$tmp/pairs.txt"
forward forward-pairs intr "$tmp/pairs.txt" 0 120

# The sender dies (SIGKILL) while the receiver sleeps between its packets.
# virtio-user's next write to the dead backend's socket raises SIGPIPE; the
# link event reaches the receiver's on_port_event; the receiver must not be
# killed, must say the link went down, and must end (the link stayed down:
# no END packet will come) reporting what it got, status 1 (the sender's
# count unknown), its JSON written. Without the link it would wait out the
# pattern and a 30 s grace.
rm -f "$sock"
"$testevd" $eal $tx_cpu --file-prefix=evd-tx$$ --vdev "net_vhost0,iface=$sock,queues=1" -- \
	--send --pattern steady --rate 200 --duration 60 --send-delay 2 >"$tmp/gone-tx.log" 2>&1 &
tx=$!
pids+=("$tx")
for _ in $(seq 100); do [ -S "$sock" ] && break; sleep 0.1; done
"$testevd" $eal $rx_cpu --file-prefix=evd-rx$$ --vdev "net_virtio_user0,path=$sock,queues=1" -- \
	--source ethdev --policy adaptive --duration 60 --no-progress \
	--json "$tmp/gone-rx.json" >"$tmp/gone-rx.log" 2>&1 &
rx=$!
pids+=("$rx")
# the sender starts its pattern 2 s after the link comes up, probing it
# meanwhile: once the receiver's loop has taken a packet (a probe, read
# through telemetry), the link is up; kill the sender a second into the
# pattern (not a fixed time from the start: two EALs and the receiver's
# calibration can take seconds on a loaded machine, or under ASan)
if client=$(command -v dpdk-telemetry.py); then
	for _ in $(seq 600); do
		kill -0 "$rx" 2>/dev/null || break # the receiver ended: its status says why, below
		echo /evd/stats,0 | python3 "$client" -f evd-rx$$ 2>/dev/null | grep -q '"events": [1-9]' && break
		sleep 0.1
	done
	sleep 3
else
	sleep 8 # no client (Debian's dpdk-dev, which the scripts install): a guess
fi
kill -9 "$tx"
wait "$rx"
rrc=$?
if [ $rrc -ne 1 ]; then
	echo "FAIL: sender gone: receiver status $rrc (want 1; 141 is SIGPIPE)"; cat "$tmp/gone-rx.log"; fail=1
elif ! grep -q "link down" "$tmp/gone-rx.log" || ! grep -q "the sender is gone" "$tmp/gone-rx.log"; then
	echo "FAIL: sender gone: the receiver did not say the link went down"; cat "$tmp/gone-rx.log"; fail=1
else
	python3 - "$tmp/gone-rx.json" <<'PY' || { fail=1; cat "$tmp/gone-rx.log"; }
import json, sys
rx = json.load(open(sys.argv[1]))
assert rx["link_lost"] is True and rx["stopped_by_signal"] is False, rx
assert rx["events_delivered"] > 0 and rx["lost_wakeups"] == 0, rx
# it ended on the link: a run that waited for the sender's END (or out
# the pattern) cannot be shorter than the pattern's 60 s
assert rx["duration_s"] < 60, rx["duration_s"]
print(f"ok: sender gone: the receiver saw the link go down and ended after {rx['duration_s']:.1f} s "
      f"with {rx['events_delivered']} packets, status 1")
PY
fi
exit $fail
