/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * --send: transmit the pattern on a port (e.g. the vhost side of a
 * vhost-user pair) for a testevd --source ethdev receiver. Each packet
 * carries a sequence number and the TSC; the last one (END) carries the
 * number sent. A full Tx ring is retried, never dropped.
 *
 * --send --echo: a forwarder (testevd --forward, DPDK's l3fwd-power) sends
 * every packet back on the same port; the sender spins between arrivals,
 * polling the port, and reports the round trips (its own TSC, so no clock
 * skew) and, with --peer-pid-file, the CPU the forwarder's threads used.
 */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rte_cycles.h>
#include <rte_ethdev.h>
#include <rte_ether.h>
#include <rte_pause.h>

#include "clock.h"
#include "ethdev_port.h"
#include "hist.h"
#include "pattern.h"
#include "replay.h"
#include "report.h"
#include "source.h"
#include "stop.h"
#include "testevd.h"

struct tx {
	uint16_t port;
	struct rte_mempool *pool;
	struct rte_ether_addr src;
	uint64_t seq;
	uint64_t retries;
	uint64_t unsent; /* given up on: the port took nothing for STALL_S seconds */
	bool failed;
	/* --echo */
	struct hist *rtt;
	uint64_t returned;
	uint64_t slow; /* round trips over 5 ms: a forwarder that overslept */
	uint64_t tsc_mhz;
	/* the sender's own stalls: gaps in its spin over 1 ms (the VM did not
	 * run it), to tell a stalled VM from a stalled forwarder */
	uint64_t last_spin, stalls, stall_max;
	/* round trips taken more than SENDER_LATE_US after the sender's poll
	 * before (its own delay is in them: counted), and the others (binned) */
	uint64_t late;
	struct hist *prompt;
};

/* A packet that came back between two polls this far apart may have
 * waited for the sender, not for the forwarder: its poll loop turns in
 * well under a microsecond, and one send takes a few. */
#define SENDER_LATE_US 50

/* Take what came back: round trips of the pattern's packets. */
static void
echo_poll(struct tx *t)
{
	struct rte_mbuf *pkts[32];
	uint16_t n = rte_eth_rx_burst(t->port, 0, pkts, RTE_DIM(pkts));
	uint64_t now = rte_rdtsc();
	uint64_t gap = t->last_spin != 0 ? now - t->last_spin : 0; /* since its poll before */
	bool late = gap > t->tsc_mhz * SENDER_LATE_US;

	if (gap > t->tsc_mhz * 1000) {
		t->stalls++;
		t->stall_max = RTE_MAX(t->stall_max, gap);
	}
	t->last_spin = now;

	for (uint16_t i = 0; i < n; i++) {
		const struct testevd_payload *p = testevd_payload_of(pkts[i]);

		if (p != NULL && p->flags == 0) {
			uint64_t ns = testevd_tsc_ns(now > p->tsc ? now - p->tsc : 0);

			hist_add(t->rtt, ns);
			if (late)
				t->late++;
			else
				hist_add(t->prompt, ns);
			t->slow += ns > 5000000;
			t->returned++;
		}
		rte_pktmbuf_free(pkts[i]);
	}
}

static void
echo_spin(struct run *r)
{
	echo_poll(r->priv);
}

/* CPU time (ns) all threads of a process have run, from schedstat; 0 if
 * it cannot be read. */
static uint64_t
proc_cpu_ns(long pid)
{
	char path[64];
	DIR *d;
	struct dirent *e;
	uint64_t sum = 0;

	snprintf(path, sizeof(path), "/proc/%ld/task", pid);
	d = opendir(path);
	if (d == NULL)
		return 0;
	while ((e = readdir(d)) != NULL) {
		char f[128];
		unsigned long long ns;
		FILE *fp;

		if (e->d_name[0] == '.')
			continue;
		snprintf(f, sizeof(f), "%s/%.20s/schedstat", path, e->d_name);
		fp = fopen(f, "r");
		if (fp == NULL)
			continue;
		if (fscanf(fp, "%llu", &ns) == 1)
			sum += ns;
		fclose(fp);
	}
	closedir(d);
	return sum;
}

static long
read_pid(const char *file)
{
	FILE *fp = fopen(file, "r");
	long pid = -1;

	if (fp == NULL)
		return -1;
	if (fscanf(fp, "%ld", &pid) != 1)
		pid = -1;
	fclose(fp);
	return pid;
}

static struct rte_mbuf *
build(struct tx *t, uint32_t flags, uint64_t tsc, uint64_t total)
{
	struct rte_mbuf *m = rte_pktmbuf_alloc(t->pool);
	struct testevd_payload *p;
	char *buf;

	if (m == NULL)
		return NULL;
	buf = rte_pktmbuf_append(m, TESTEVD_PKT_LEN);
	if (buf == NULL) {
		rte_pktmbuf_free(m);
		return NULL;
	}
	p = testevd_packet_init(buf, &t->src);
	p->magic = TESTEVD_MAGIC;
	p->flags = flags;
	p->seq = t->seq;
	p->tsc = tsc;
	p->total = total;
	return m;
}

/* Send all n, retrying a full Tx ring; after STALL_S seconds without
 * progress (the receiver went away) give up: the rest are freed and
 * counted unsent, and every later post is refused. */
#define STALL_S 5

/* Nothing moved (Tx ring full, or pool empty): take the echoes (they free
 * mbufs) or pause; after STALL_S seconds of that, fail the sender. */
static void
stalled(struct tx *t, uint64_t *since)
{
	uint64_t now = rte_rdtsc();

	if (*since == 0)
		*since = now;
	else if (now - *since > STALL_S * rte_get_tsc_hz())
		t->failed = true;
	if (t->rtt != NULL)
		echo_poll(t);
	else
		rte_pause();
}

static void
transmit(struct tx *t, struct rte_mbuf **m, uint16_t n)
{
	uint16_t done = 0;
	uint64_t stall_since = 0;

	while (done < n && !t->failed) {
		uint16_t k = rte_eth_tx_burst(t->port, 0, m + done, n - done);

		if (k == 0) {
			t->retries++;
			stalled(t, &stall_since);
		} else {
			stall_since = 0;
		}
		done += k;
	}
	if (done < n) {
		t->unsent += n - done;
		rte_pktmbuf_free_bulk(m + done, n - done);
	}
}

static void
send_post(struct run *r, uint32_t n, uint64_t stamp)
{
	struct tx *t = r->priv;
	struct rte_mbuf *m[64];

	while (n > 0 && !t->failed) {
		uint16_t k = 0;
		uint64_t stall_since = 0;

		while (k < n && k < RTE_DIM(m) && !t->failed) {
			m[k] = build(t, 0, stamp, 0);
			if (m[k] == NULL) { /* pool empty: the receiver is behind */
				stalled(t, &stall_since);
				continue;
			}
			t->seq++;
			k++;
		}
		transmit(t, m, k);
		n -= k;
	}
	t->unsent += n;
	if (t->rtt != NULL)
		echo_poll(t);
}

static const struct source_kind sink_ethdev = {
	.name = "ethdev-send",
	.post = send_post,
};

static int
send_mode(const struct opts *o)
{
	struct run *r = calloc(1, sizeof(*r));
	struct tx t = { .port = o->port };
	struct rte_mbuf *end;
	struct result *res;
	uint64_t t0, t1, peer0 = 0;
	long peer = -1;
	uint64_t r_lost;
	bool intr;
	int rc;

	res = calloc(1, sizeof(*res));
	if (r == NULL || res == NULL)
		return EXIT_RUNTIME;
	t.tsc_mhz = (uint64_t)(testevd_tsc_hz() / 1e6); /* thresholds only (stalls, late) */
	if (o->echo) {
		t.rtt = &res->lat;
		t.prompt = &res->lat_prompt;
		r->spin = echo_spin;
	}
	if (o->trace != NULL)
		printf("testevd: sending trace %s on port %u; waiting for the link\n", o->trace,
		       o->port);
	else
		printf("testevd: sending pattern %s for %.1f s on port %u; waiting for the link\n",
		       o->pattern, o->duration_s, o->port);
	fflush(stdout);
	rc = testevd_port_start(o->port, 1, &t.pool, &intr, 60.0);
	if (rc < 0) {
		fprintf(stderr, "testevd: port %u: %s\n", o->port, strerror(-rc));
		return EXIT_RUNTIME;
	}
	rte_eth_macaddr_get(o->port, &t.src);
	r->o = o;
	r->pat = pattern_find(o->pattern);
	r->kind = &sink_ethdev;
	r->priv = &t;
	/* Let the receiver reach its loop: packets sent before it polls would
	 * only wait in its ring, but the figures are about a running loop.
	 * Meanwhile a probe packet every 10 ms serves its arm probe. */
	for (double waited = 0; waited < o->send_delay_s && !testevd_stopping(); waited += 0.01) {
		struct rte_mbuf *probe = build(&t, TESTEVD_F_PROBE, rte_rdtsc(), 0);

		/* one try each: a probe the port does not take is not worth
		 * the pattern's retries (5 s, then the sender fails), nor a
		 * place in its counts (the receiver may not be there yet) */
		if (probe != NULL && rte_eth_tx_burst(t.port, 0, &probe, 1) == 0)
			rte_pktmbuf_free(probe);
		if (t.rtt != NULL)
			echo_poll(&t);
		usleep(10000);
	}
	t.seq = 0;
	t.retries = 0; /* the probes' (the receiver may start late): not the pattern's */
	if (o->echo) { /* what came back so far were probes: start clean */
		echo_poll(&t);
		t.returned = 0;
		t.slow = 0;
		t.stalls = 0;
		t.stall_max = 0;
		t.late = 0;
		memset(t.rtt, 0, sizeof(*t.rtt));
		memset(t.prompt, 0, sizeof(*t.prompt));
	}
	if (o->peer_pid_file != NULL) {
		peer = read_pid(o->peer_pid_file);
		peer0 = peer > 0 ? proc_cpu_ns(peer) : 0;
		if (peer0 == 0)
			fprintf(stderr, "testevd: cannot read the CPU time of the process in %s\n",
				o->peer_pid_file);
	}
	t0 = rte_get_tsc_cycles();
	run_replay(r);
	t1 = rte_get_tsc_cycles();
	if (peer0 != 0) {
		uint64_t peer1 = proc_cpu_ns(peer);

		res->has_peer_cpu = peer1 >= peer0;
		res->peer_cpu_pct = 100.0 * (double)(peer1 - peer0) /
				    (double)testevd_tsc_ns(t1 - t0);
	}
	if (o->echo) { /* the last ones are still on their way back */
		uint64_t until = rte_rdtsc() + rte_get_tsc_hz() / 2;

		while (t.returned < r->sent - t.unsent && rte_rdtsc() < until)
			echo_poll(&t);
	}
	end = NULL;
	for (int i = 0; end == NULL && !t.failed && i < STALL_S * 1000; i++) {
		end = build(&t, TESTEVD_F_END, rte_rdtsc(), r->sent - t.unsent);
		if (end == NULL)
			usleep(1000);
	}
	if (end != NULL)
		transmit(&t, &end, 1);
	if (t.failed || end == NULL) {
		fprintf(stderr, "testevd: port %u took no packet for %d s: the receiver is gone? "
			"%" PRIu64 " packets not sent\n", o->port, STALL_S, t.unsent);
		rc = -EPIPE;
	}
	snprintf(res->policy, sizeof(res->policy), "-");
	res->source = sink_ethdev.name;
	res->pattern = o->trace != NULL ? o->trace : o->pattern;
	res->events_sent = r->sent - t.unsent;
	if (o->echo) {
		res->events_delivered = t.returned;
		res->events_lost = res->events_sent - t.returned;
		res->echo = true;
		res->rtt_over_5ms = t.slow;
		res->sender_stalls = t.stalls;
		res->sender_stall_max_us = (double)testevd_tsc_ns(t.stall_max) / 1e3;
		res->rtt_sender_late = t.late;
	}
	res->stopped = testevd_stopping() != 0;
	res->wall_ns = testevd_tsc_ns(t1 - t0);
	res->runs = 1;
	result_finish(res);
	res->events_per_s = (double)res->events_sent / res->duration_s;
	printf("  sent %" PRIu64 " packets in %.2f s (%.0f/s), %" PRIu64 " Tx retries, %s\n",
	       res->events_sent, res->duration_s, res->events_per_s, t.retries,
	       rc == -EPIPE ? "no END (gave up)" : "then END");
	if (o->echo) {
		printf("  echo: %" PRIu64 " came back, %" PRIu64 " did not; round trip p50 %.1f us, "
		       "p99 %.1f us, p99.9 %.1f us, max %.1f us; %" PRIu64 " over 5 ms\n",
		       t.returned, res->events_lost, res->lat_us[0], res->lat_us[1],
		       res->lat_us[2], res->lat_us[3], t.slow);
		printf("  sender: %" PRIu64 " stalls over 1 ms in its own spin, longest %.0f us; "
		       "%" PRIu64 " round trips taken over %d us after its poll before (p99 of "
		       "the others %.1f us)\n", t.stalls, res->sender_stall_max_us, t.late,
		       SENDER_LATE_US, (double)hist_pct(t.prompt, 0.99) / 1e3);
		if (res->has_peer_cpu)
			printf("  forwarder (pid %ld) CPU over the run: %.2f %%\n", peer,
			       res->peer_cpu_pct);
	}
	if (o->json != NULL && report_json(o->json, res, 1, false) < 0)
		rc = -EIO;
	r_lost = res->events_lost;
	usleep(200000); /* let the END packet leave before the port closes */
	testevd_port_stop(o->port);
	rte_mempool_free(t.pool);
	free(res);
	free(r);
	if (rc < 0)
		return EXIT_RUNTIME;
	return o->echo && r_lost ? EXIT_LOSS : 0;
}

const struct mode mode_send = { "send", send_mode };
