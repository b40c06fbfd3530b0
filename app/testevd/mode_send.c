/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * --send: transmit the pattern on a port (e.g. the vhost side of a
 * vhost-user pair) for a testevd --source ethdev receiver. Each packet
 * carries a sequence number and the TSC; the last one (END) carries the
 * number sent. A full Tx ring is retried, never dropped.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rte_cycles.h>
#include <rte_ethdev.h>
#include <rte_ether.h>
#include <rte_pause.h>

#include "ethdev_port.h"
#include "run.h"

struct tx {
	uint16_t port;
	struct rte_mempool *pool;
	struct rte_ether_addr src;
	uint64_t seq;
	uint64_t retries;
};

static struct rte_mbuf *
build(struct tx *t, uint32_t flags, uint64_t tsc, uint64_t total)
{
	struct rte_mbuf *m = rte_pktmbuf_alloc(t->pool);
	struct rte_ether_hdr *eh;
	struct testevd_payload *p;
	char *buf;

	if (m == NULL)
		return NULL;
	buf = rte_pktmbuf_append(m, TESTEVD_PKT_LEN);
	if (buf == NULL) {
		rte_pktmbuf_free(m);
		return NULL;
	}
	memset(buf, 0, TESTEVD_PKT_LEN);
	eh = (struct rte_ether_hdr *)buf;
	memset(&eh->dst_addr, 0xff, sizeof(eh->dst_addr));
	eh->src_addr = t->src;
	eh->ether_type = rte_cpu_to_be_16(TESTEVD_ETHERTYPE);
	p = (struct testevd_payload *)(eh + 1);
	p->magic = TESTEVD_MAGIC;
	p->flags = flags;
	p->seq = t->seq;
	p->tsc = tsc;
	p->total = total;
	return m;
}

static void
transmit(struct tx *t, struct rte_mbuf **m, uint16_t n)
{
	uint16_t done = 0;

	while (done < n) {
		uint16_t k = rte_eth_tx_burst(t->port, 0, m + done, n - done);

		if (k == 0) {
			t->retries++;
			rte_pause();
		}
		done += k;
	}
}

static void
send_post(struct run *r, uint32_t n, uint64_t stamp)
{
	struct tx *t = r->priv;
	struct rte_mbuf *m[64];

	while (n > 0) {
		uint16_t k = 0;

		while (k < n && k < RTE_DIM(m)) {
			m[k] = build(t, 0, stamp, 0);
			if (m[k] == NULL) { /* pool empty: the receiver is behind */
				rte_pause();
				continue;
			}
			t->seq++;
			k++;
		}
		transmit(t, m, k);
		n -= k;
	}
}

const struct source_kind sink_ethdev = {
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
	uint64_t t0, t1;
	bool intr;
	int rc;

	res = calloc(1, sizeof(*res));
	if (r == NULL || res == NULL)
		return EXIT_RUNTIME;
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
	for (double waited = 0; waited < o->send_delay_s; waited += 0.01) {
		struct rte_mbuf *probe = build(&t, TESTEVD_F_PROBE, rte_rdtsc(), 0);

		if (probe != NULL)
			transmit(&t, &probe, 1);
		usleep(10000);
	}
	t.seq = 0;
	t0 = rte_get_tsc_cycles();
	run_replay(r);
	t1 = rte_get_tsc_cycles();
	end = NULL;
	while (end == NULL) {
		end = build(&t, TESTEVD_F_END, rte_rdtsc(), r->sent);
		if (end == NULL)
			usleep(1000);
	}
	transmit(&t, &end, 1);
	snprintf(res->policy, sizeof(res->policy), "-");
	res->source = sink_ethdev.name;
	res->pattern = o->pattern;
	res->events_sent = r->sent;
	res->wall_ns = (t1 - t0) * 1000 / (rte_get_tsc_hz() / 1000000);
	res->runs = 1;
	result_finish(res);
	res->events_per_s = (double)r->sent / res->duration_s;
	printf("  sent %" PRIu64 " packets in %.2f s (%.0f/s), %" PRIu64 " Tx retries, then END\n",
	       r->sent, res->duration_s, res->events_per_s, t.retries);
	if (o->json != NULL && report_json(o->json, res, 1, false) < 0)
		rc = -EIO;
	usleep(200000); /* let the END packet leave before the port closes */
	testevd_port_stop(o->port);
	rte_mempool_free(t.pool);
	free(res);
	free(r);
	return rc < 0 ? EXIT_RUNTIME : 0;
}

const struct mode mode_send = { "send", send_mode };
