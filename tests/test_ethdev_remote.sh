#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The ends of a remote run. The receiver, on a recorded sender: testevd --send
# writes its packets (probes, the pattern, END) to a pcap through DPDK's
# net_pcap; the receiver (--source ethdev) reads them back from it.
# - One data packet cut from the recording: the receiver ends at END (not
#   at --duration + 30 s) and counts that packet lost (exit 1), where it
#   used to wait out the deadline, say END never came, and count 0 lost.
# - A sender that drew no arrival (pattern idle: END with a total of 0):
#   a complete run of 0 packets (exit 0), where it used to fail.
# And the sender's probes (every 10 ms of --send-delay) into a port nobody
# reads (net_ring, about 1,000 slots): a probe the port does not take is
# dropped, where it used to stall the sender 5 s, fail it before the
# pattern, and wrap its count of packets sent below 0.
set -u
testevd=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"; rmdir /var/run/dpdk/evd-remote$$ 2>/dev/null' EXIT
eal="--no-huge --no-pci -m 256 --no-shconf --file-prefix=evd-remote$$"
fail=0
/usr/bin/python3 - "$tmp/empty.pcap" <<'PY'
import struct, sys
open(sys.argv[1], 'wb').write(struct.pack('<IHHiIII', 0xa1b2c3d4, 2, 4, 0, 0, 65535, 1))
PY

# record PATTERN FILE: a sender's packets, written to FILE
record() {
	local rate=(--rate 2000)
	[ "$1" != idle ] || rate=() # (no timed phase: it takes no --rate)
	timeout 60 "$testevd" $eal --vdev "net_pcap0,rx_pcap=$tmp/empty.pcap,tx_pcap=$2" -- \
		--send --pattern "$1" "${rate[@]}" --duration 0.1 --send-delay 0.05 --no-progress \
		>"$tmp/send.log" 2>&1 || { echo "FAIL: recording $1"; cat "$tmp/send.log"; exit 1; }
}
# receive FILE NAME: the receiver on FILE; its status in rc, its JSON in NAME.json
receive() {
	timeout 120 "$testevd" $eal --vdev "net_pcap0,rx_pcap=$1,tx_pcap=$tmp/out-$2.pcap" -- \
		--source ethdev --duration 1 --no-progress --json "$tmp/$2.json" >"$tmp/$2.log" 2>&1
	rc=$?
}
# field NAME KEY
field() {
	/usr/bin/python3 -c "import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])" \
		"$tmp/$1.json" "$2"
}

record steady "$tmp/sent.pcap"
# cut the tenth packet from the end (the pattern's: END is the last)
/usr/bin/python3 - "$tmp/sent.pcap" "$tmp/cut.pcap" <<'PY'
import struct, sys
b = open(sys.argv[1], 'rb').read()
recs, off = [], 24
while off < len(b):
    n = struct.unpack_from('<IIII', b, off)[2]
    recs.append(b[off:off + 16 + n])
    off += 16 + n
assert len(recs) > 20, len(recs)
del recs[-10]
open(sys.argv[2], 'wb').write(b[:24] + b''.join(recs))
PY
receive "$tmp/sent.pcap" whole
if [ $rc -ne 0 ] || [ "$(field whole events_lost)" != 0 ] || [ "$(field whole events_sent)" = 0 ]; then
	echo "FAIL: the whole recording: status $rc"; cat "$tmp/whole.log"; fail=1
else
	echo "ok: the whole recording: $(field whole events_sent) sent, 0 lost"
fi
receive "$tmp/cut.pcap" cut
sent=$(field whole events_sent)
if [ $rc -ne 1 ] || [ "$(field cut events_lost)" != 1 ] || [ "$(field cut events_sent)" != "$sent" ] ||
	grep -q "never arrived" "$tmp/cut.log"; then
	echo "FAIL: one packet cut: status $rc (want 1), sent $(field cut events_sent) (want $sent)," \
		"lost $(field cut events_lost) (want 1)"; cat "$tmp/cut.log"; fail=1
else
	echo "ok: one packet cut: END taken, $sent sent, 1 lost, status 1"
fi

record idle "$tmp/idle.pcap"
receive "$tmp/idle.pcap" idle
if [ $rc -ne 0 ] || [ "$(field idle events_sent)" != 0 ] || grep -q "never arrived" "$tmp/idle.log"; then
	echo "FAIL: a sender that sent nothing: status $rc"; cat "$tmp/idle.log"; fail=1
else
	echo "ok: a sender that sent nothing: END with 0, status 0"
fi
timeout 120 "$testevd" $eal --vdev net_ring0 -- --send --send-delay 11 --pattern steady --rate 1000 \
	--duration 0.2 --no-progress --json "$tmp/ring.json" >"$tmp/ring.log" 2>&1
rc=$?
sent=$(field ring events_sent)
# the ring fills with probes, then the pattern finds it full: the sender
# fails (3) after 5 s, having sent none of it
if [ $rc -ne 3 ] || [ "$sent" != 0 ] || ! grep -q "took no packet" "$tmp/ring.log"; then
	echo "FAIL: probes into a full port: status $rc (want 3), sent $sent (want 0)"; cat "$tmp/ring.log"
	fail=1
else
	echo "ok: probes into a full port: dropped; the pattern found the port full: status 3, 0 sent"
fi
# A receiver with two Rx queues on net_tap (which wants as many Tx queues:
# port setup configured one, and the port failed with EPERM). No sender:
# it is stopped by SIGINT once it has reported its port.
if [ -c /dev/net/tun ]; then
	"$testevd" $eal --vdev "net_tap0,iface=evdrq$$" -- --source ethdev --queues 2 --duration 60 \
		--no-progress >"$tmp/tap.log" 2>&1 &
	pid=$!
	for _ in $(seq 600); do
		grep -q "Rx queue(s)" "$tmp/tap.log" && break
		kill -0 $pid 2>/dev/null || break
		sleep 0.1
	done
	kill -INT $pid 2>/dev/null
	wait $pid
	if grep -q "port 0: 2 Rx queue(s)" "$tmp/tap.log"; then
		echo "ok: net_tap with 2 Rx queues: $(grep -o 'port 0: 2 Rx queue(s)[^,]*' "$tmp/tap.log")"
	else
		echo "FAIL: net_tap with 2 Rx queues"; cat "$tmp/tap.log"; fail=1
	fi
else
	echo "(no /dev/net/tun: the net_tap check is left out)"
fi
exit $fail
