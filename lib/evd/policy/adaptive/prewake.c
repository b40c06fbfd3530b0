/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Pre-wake: a periodic source's next arrival, and the window around it in
 * which the loop polls instead of sleeping.
 */

#include "adaptive.h"

/* A source is periodic after PREWAKE_RUN long gaps in a row, each within
 * PREWAKE_CV of their mean (doc/guides/policies.md, "adaptive (the default)"). */
#define PREWAKE_RUN 8
#define PREWAKE_CV 0.125

/* A long gap g of one source, ending now: is the source periodic, and does
 * waking before its next arrival pay? Sets the slot's window (or clears it). */
void
evd__prewake_learn(struct adaptive *a, struct source_slot *sl, uint64_t now, uint64_t g)
{
	double d = fabs((double)g - sl->mean);
	bool was = sl->wake_at != 0;

	sl->wake_at = 0;
	if (sl->run == 0 || d > PREWAKE_CV * sl->mean) { /* (re)start the run here */
		sl->run = 1;
		sl->mean = (double)g;
		sl->dev = 0;
	} else {
		sl->mean += ((double)g - sl->mean) / 8;
		sl->dev += (d - sl->dev) / 8;
		if (sl->run < PREWAKE_RUN)
			sl->run++;
	}
	if (sl->run >= PREWAKE_RUN) {
		/* The wake it saves and its own timer's lateness are the same L,
		 * cold past the window on both sides: priced cold on one side
		 * only, pre-wake would pay at lambda 1. */
		double lat = wake_lat_after(a, sl->mean, 0);
		double margin = 3 * sl->dev + lat;

		if (margin < a->lambda * priced(a, lat) && sl->mean - margin > (double)a->threshold_ns &&
		    sl->mean - margin > (double)a->env->sleep_wake_ns) {
			sl->wake_at = now + (uint64_t)(sl->mean - margin);
			sl->end_at = now + (uint64_t)(sl->mean + 3 * sl->dev + margin);
		}
	}
	a->prewakes += (sl->wake_at != 0) - was;
}

/* One source had completions at now (loops of several sources). */
void
evd__prewake_source(struct adaptive *a, struct source_slot *sl, uint64_t now)
{
	if (sl->last_ns != 0 && now > sl->last_ns && now - sl->last_ns >= PREWAKE_MIN_NS)
		evd__prewake_learn(a, sl, now, now - sl->last_ns);
	else if (sl->wake_at != 0 && now >= sl->wake_at) { /* it came: the window is done */
		sl->wake_at = 0;
		a->prewakes--;
	}
	sl->last_ns = now;
}
