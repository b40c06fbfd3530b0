/* SPDX-License-Identifier: BSD-3-Clause */
/* --source ring: the software event ring, posted by the producer thread. */
#include <string.h>

#include <rte_cycles.h>
#include <rte_pause.h>

#include "run.h"

#define RING_SIZE 16384

static void
consume(struct evd_source *src, void *burst, uint16_t n, void *arg)
{
	struct evd_event *ev = burst;
	uint64_t now = rte_rdtsc();

	(void)src;
	for (uint16_t i = 0; i < n; i++)
		run_delivered(arg, ev[i].stamp, now);
}

static int
ring_open(struct run *r)
{
	struct evd_source *ring;
	int rc = evd_ring_create("events", RING_SIZE, consume, r, &ring);

	if (rc < 0)
		return rc;
	rc = evd_loop_add(r->loop, ring);
	if (rc < 0) {
		evd_source_destroy(ring);
		return rc;
	}
	r->priv = ring;
	return 0;
}

static void
ring_post(struct run *r, uint32_t n, uint64_t stamp)
{
	struct evd_event ev[64];

	memset(ev, 0, sizeof(ev));
	for (uint32_t i = 0; i < RTE_DIM(ev); i++)
		ev[i].stamp = stamp;
	while (n > 0) {
		int rc = evd_ring_post_burst(r->priv, ev, RTE_MIN(n, (uint32_t)RTE_DIM(ev)));

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
	struct evd_source_stats ss;

	if (evd_source_stats_get(r->priv, &ss) == 0)
		res->ring_full = ss.full;
	evd_loop_remove(r->loop, r->priv);
	evd_source_destroy(r->priv);
}

const struct source_kind source_ring = {
	.name = "ring",
	.open = ring_open,
	.post = ring_post,
	.close = ring_close,
};
