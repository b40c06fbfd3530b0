/* SPDX-License-Identifier: BSD-3-Clause */
/* What a source kind reports to its run, on the loop thread. */
#include <evd.h>

#include "clock.h"
#include "hist.h"
#include "source.h"

void
run_delivered(struct run *r, uint64_t stamp, uint64_t now)
{
	/* vCPUs' TSCs can differ by a few cycles: clamp, never wrap */
	uint64_t cyc = now > stamp ? now - stamp : 0;

	hist_add(r->lat, testevd_tsc_ns(cyc));
	__atomic_store_n(&r->delivered, r->delivered + 1, __ATOMIC_RELAXED);
}

void
run_started(struct run *r)
{
	if (r->started)
		return;
	evd_loop_stats_get(r->loop, &r->start_st);
	r->start_ns = testevd_now_ns();
	r->started = true;
}

uint64_t
run_in_flight(const struct run *r)
{
	return __atomic_load_n(&r->sent, __ATOMIC_RELAXED) -
	       __atomic_load_n(&r->delivered, __ATOMIC_RELAXED);
}
