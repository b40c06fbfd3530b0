/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * --source ethdev: receive on a port's Rx queues (EAL --vdev or -a gives the
 * port), one net-ethdev source per queue. A remote sender (testevd --send)
 * plays the pattern; its packets carry a sequence number and its TSC, and
 * its last one the number it sent.
 */
#include <inttypes.h>
#include <poll.h>
#include <stdlib.h>
#include <unistd.h>

#include <rte_cycles.h>
#include <rte_ethdev.h>

#include <evd_ethdev.h>
#include <evd_source.h>

#include "clock.h"
#include "ethdev_port.h"
#include "report.h"
#include "source.h"
#include "testevd.h"

#define MAX_QUEUES 16

struct veth {
	uint16_t port, nq;
	bool intr;
	struct rte_mempool *pool;
	struct evd_source *q[MAX_QUEUES];
	uint64_t next_seq[MAX_QUEUES];
	uint64_t out_of_order; /* loop thread */
	uint64_t foreign;      /* packets that are not testevd's */
	uint64_t probes;       /* the sender's probe packets */
	uint64_t fwd_drops;    /* --forward: Tx queue full */
	uint64_t forwarded;    /* --forward: sent back, testevd's or not */
	const char *arm_probe;
	int removed;
	struct run *run;
};

static void
on_port_event(struct evd_source *src, enum rte_eth_event_type type, void *arg)
{
	struct veth *v = arg;

	if (type == RTE_ETH_EVENT_INTR_LSC) {
		struct rte_eth_link link;

		if (rte_eth_link_get_nowait(v->port, &link) == 0) {
			fprintf(stderr, "\ntestevd: %s: link %s\n", evd_source_name(src),
				link.link_status ? "up" : "down");
			/* down: the sender may be gone (run.c ends the run if it stays so) */
			__atomic_store_n(&v->run->peer_down_ns,
					 link.link_status ? 0 : RTE_MAX(testevd_now_ns(), 1ull),
					 __ATOMIC_RELEASE);
		}
	} else {
		fprintf(stderr, "\ntestevd: %s: port removed\n", evd_source_name(src));
		v->removed = 1;
		/* no sender can reach it now: run.c ends the run as for a link
		 * down that stays down */
		__atomic_store_n(&v->run->peer_down_ns, RTE_MAX(testevd_now_ns(), 1ull), __ATOMIC_RELEASE);
	}
}

static void
consume(struct evd_source *src, void *burst, uint16_t n, void *arg)
{
	struct run *r = arg;
	struct veth *v = r->priv;
	struct rte_mbuf **pkts = burst;
	uint64_t now = rte_rdtsc();
	unsigned int qi = 0;
	bool ours = false; /* a packet of the sender's (probes too) */

	while (qi < v->nq && v->q[qi] != src)
		qi++;
	for (uint16_t i = 0; i < n; i++) {
		const struct testevd_payload *p = testevd_payload_of(pkts[i]);

		ours |= p != NULL;
		if (p == NULL) {
			v->foreign++;
		} else if (p->flags & TESTEVD_F_PROBE) {
			v->probes++;
		} else if (p->flags & TESTEVD_F_END) {
			r->remote_total = p->total;
			/* (after remote_total: the producer reads it once this is set) */
			__atomic_store_n(&r->end_ns, testevd_now_ns(), __ATOMIC_RELEASE);
		} else {
			run_started(r); /* the first: the figures start here */
			if (qi < v->nq) {
				if (p->seq < v->next_seq[qi])
					v->out_of_order++;
				v->next_seq[qi] = p->seq + 1;
			}
			run_delivered(r, p->tsc, now);
		}
		if (!r->o->forward)
			rte_pktmbuf_free(pkts[i]);
	}
	if (r->o->forward) {
		/* the burst goes back as it came: held for a later round, a
		 * closed loop's packets would wait for one that finds nothing */
		uint16_t sent = v->removed ? 0 : rte_eth_tx_burst(v->port, 0, pkts, n);

		v->forwarded += sent;
		if (sent < n) {
			v->fwd_drops += n - sent;
			rte_pktmbuf_free_bulk(pkts + sent, n - sent);
		}
	}
	if (ours) /* (not a tap's own traffic: the kernel's IPv6 chatter) */
		__atomic_store_n(&r->last_rx_tsc, now, __ATOMIC_RELAXED);
	/* END came (its total may be 0: the sender drew no arrival) and
	 * everything it counted is here; else the producer ends the run
	 * END_GRACE_NS after END, counting the rest lost */
	if (__atomic_load_n(&r->end_ns, __ATOMIC_RELAXED) != 0 && r->delivered >= r->remote_total &&
	    !__atomic_load_n(&r->remote_done, __ATOMIC_RELAXED)) {
		__atomic_store_n(&r->remote_done, 1, __ATOMIC_RELEASE);
		/* the run ends here, not when the producer next looks (10 ms) */
		evd_loop_stop(r->loop);
	}
}

static void veth_close(struct run *r, struct result *res);

/*
 * Does enabling the Rx interrupt fire for packets already queued? Packets
 * queue while the interrupt is off (the sender probes every 10 ms); then the
 * source is armed and its fd watched for 2 ms; then polled. Queued packets
 * and a silent fd: arming is strict (virtio/vhost, IBTA), the race the
 * loop's re-poll closes is real here. The fd firing is either considerate
 * hardware or a probe that landed during the 2 ms: try again.
 */
static const char *
probe_arm(struct evd_source *src, struct veth *v)
{
	for (int attempt = 0; attempt < 100; attempt++) {
		struct pollfd pfd = { .fd = src->ops->fd(src), .events = POLLIN };
		uint64_t before = v->probes;
		bool fired;

		usleep(25000);
		if (src->ops->arm(src) < 0)
			return "no-arm";
		fired = poll(&pfd, 1, 2) == 1;
		if (fired)
			src->ops->ack(src);
		while (src->ops->poll(src, 32) > 0)
			;
		src->ops->disarm(src);
		if (!fired && v->probes > before)
			return "strict";
	}
	return "inconclusive";
}

static int
veth_open(struct run *r)
{
	struct veth *v = calloc(1, sizeof(*v));
	struct evd_ethdev_conf conf = { .on_port_event = on_port_event };
	int rc;

	if (v == NULL)
		return -ENOMEM;
	r->priv = v;
	v->run = r;
	v->port = r->o->port;
	v->nq = r->o->queues;
	conf.event_arg = v;
	if (v->nq > MAX_QUEUES)
		rc = -EINVAL;
	else
		rc = testevd_port_start(v->port, v->nq, &v->pool, &v->intr, 30.0);
	for (uint16_t q = 0; rc == 0 && q < v->nq; q++) {
		rc = evd_ethdev_rxq_create(v->port, q, NULL, &conf, consume, r, &v->q[q]);
		if (rc == 0)
			rc = evd_loop_add(r->loop, v->q[q]);
	}
	if (rc < 0) {
		fprintf(stderr, "testevd: receiving on port %u: %s\n", v->port, strerror(-rc));
		veth_close(r, NULL);
		return rc;
	}
	if (r->o->probe_arm && evd_ethdev_rxq_has_interrupt(v->q[0])) {
		v->arm_probe = probe_arm(v->q[0], v);
		printf("  arm probe: %s (%" PRIu64 " probe packets)\n", v->arm_probe, v->probes);
	}
	printf("  port %u: %u Rx queue(s), %s\n", v->port, v->nq,
	       evd_ethdev_rxq_has_interrupt(v->q[0]) ? "Rx interrupts armed when idle"
						     : "no Rx interrupt: poll-only, bounded sleeps");
	fflush(stdout); /* the port is ready: say so now, to a file or a pipe too */
	return 0;
}

static void
veth_close(struct run *r, struct result *res)
{
	struct veth *v = r->priv;

	if (res != NULL) {
		res->errors += v->out_of_order;
		res->arm_probe = v->arm_probe;
		res->errors += v->fwd_drops;
		if (v->fwd_drops)
			printf("  %" PRIu64 " packets not forwarded: Tx queue full\n", v->fwd_drops);
		res->forwarded = v->forwarded;
		if (r->o->forward)
			printf("  %" PRIu64 " packets forwarded, %" PRIu64 " of them not testevd's "
			       "(not timed)\n", v->forwarded, v->foreign);
		else if (v->foreign)
			printf("  %" PRIu64 " packets that were not testevd's were ignored\n",
			       v->foreign);
	}
	for (uint16_t q = 0; q < v->nq && q < MAX_QUEUES; q++) {
		if (v->q[q] == NULL)
			continue;
		if (v->q[q]->loop != NULL)
			evd_loop_remove(r->loop, v->q[q]);
		evd_source_destroy(v->q[q]);
	}
	if (!v->removed)
		testevd_port_stop(v->port);
	rte_mempool_free(v->pool);
	free(v);
	r->priv = NULL;
}

const struct source_kind source_ethdev = {
	.name = "ethdev",
	.open = veth_open,
	.post = NULL, /* a remote sender plays the pattern */
	.close = veth_close,
};
