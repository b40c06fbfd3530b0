/* SPDX-License-Identifier: BSD-3-Clause */
/* --source ring: the software event ring, posted by the producer thread;
 * a --trace with source ids gets one ring per id, so the loop has that
 * many sources. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_cycles.h>
#include <rte_pause.h>

#include "report.h"
#include "source.h"
#include "testevd.h"
#include "trace.h"

#define RING_SIZE 16384

struct rings {
	uint32_t n;
	uint32_t id[TESTEVD_RINGS_MAX];
	struct evd_source *ring[TESTEVD_RINGS_MAX];
};

static void
consume(struct evd_source *src, void *burst, uint16_t n, void *arg)
{
	struct evd_event *ev = burst;
	uint64_t now = rte_rdtsc();

	(void)src;
	for (uint16_t i = 0; i < n; i++)
		run_delivered(arg, ev[i].stamp, now);
}

/* loop NULL: the rings are in none */
static void
rings_close(struct evd_loop *loop, struct rings *rs)
{
	for (uint32_t k = 0; k < rs->n; k++)
		if (rs->ring[k] != NULL) {
			if (loop != NULL)
				evd_loop_remove(loop, rs->ring[k]);
			/* what the drain left is already counted lost (sent - delivered) */
			evd_ring_discard(rs->ring[k]);
			evd_source_destroy(rs->ring[k]);
		}
	free(rs);
}

static int
ring_prepare(struct run *r)
{
	struct rings *rs = calloc(1, sizeof(*rs));
	int rc;

	if (rs == NULL)
		return -ENOMEM;
	/* one ring per source id of the trace (main checked there are at
	 * most TESTEVD_RINGS_MAX); none: one ring */
	rs->n = 1;
	rc = 0;
	if (r->o->trace_data != NULL)
		rc = trace_source_ids(r->o->trace_data, rs->id, TESTEVD_RINGS_MAX);
	if (rc > 0) { /* ascending: ring k is the k-th id */
		rs->n = (uint32_t)rc;
		rc = 0;
	}
	for (uint32_t k = 0; rc == 0 && k < rs->n; k++) {
		char name[32];

		if (rs->n == 1)
			snprintf(name, sizeof(name), "events");
		else
			snprintf(name, sizeof(name), "events-%" PRIu32, rs->id[k]);
		rc = evd_ring_create(name, RING_SIZE, consume, r, &rs->ring[k]);
	}
	if (rc < 0) {
		rings_close(NULL, rs);
		return rc;
	}
	r->priv = rs;
	return 0;
}

static int
ring_open(struct run *r)
{
	struct rings *rs = r->priv;

	for (uint32_t k = 0; k < rs->n; k++) {
		int rc = evd_loop_add(r->loop, rs->ring[k]);

		if (rc < 0) {
			for (uint32_t j = 0; j < k; j++)
				evd_loop_remove(r->loop, rs->ring[j]);
			rings_close(NULL, rs);
			r->priv = NULL;
			return rc;
		}
	}
	return 0;
}

static void
ring_post(struct run *r, uint32_t n, uint64_t stamp)
{
	struct rings *rs = r->priv;
	struct evd_event ev[64];
	struct evd_source *ring = rs->ring[0];

	for (uint32_t k = 1; k < rs->n; k++)
		if (rs->id[k] == r->post_id)
			ring = rs->ring[k];
	memset(ev, 0, sizeof(ev));
	for (uint32_t i = 0; i < RTE_DIM(ev); i++)
		ev[i].stamp = stamp;
	while (n > 0) {
		int rc = evd_ring_post_burst(ring, ev, RTE_MIN(n, (uint32_t)RTE_DIM(ev)));

		if (rc < 0) { /* -ENOBUFS (counted by the ring): retry, never drop */
			rte_pause();
			continue;
		}
		n -= (uint32_t)rc;
	}
}

static void
ring_close(struct run *r, struct result *res)
{
	struct rings *rs = r->priv;
	struct evd_source_stats ss;

	res->rings = rs->n;
	for (uint32_t k = 0; k < rs->n; k++)
		if (evd_source_stats_get(rs->ring[k], &ss) == 0) {
			res->ring_full += ss.full;
			res->ring_events[k] = ss.events;
		}
	rings_close(r->loop, rs);
	r->priv = NULL;
}

const struct source_kind source_ring = {
	.name = "ring",
	.prepare = ring_prepare,
	.open = ring_open,
	.post = ring_post,
	.close = ring_close,
};
