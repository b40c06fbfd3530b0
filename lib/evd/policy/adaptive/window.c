/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The host's halt window: a sleep past it wakes cold, and so does the next
 * short one; what a cold start costs per class of gap, and whether the
 * window is shut now.
 */
#include <string.h>

#include "adaptive.h"

/* With a window: per class of gap (the context of the gap after it), what
 * starting cold adds to a gap: over the class's contexts together, the
 * least expected cost of a cold start less that of a warm one, each under
 * its best threshold and priced with the last update's figures (a cold
 * start that spins through leaves the next gap cold too: the figure feeds
 * itself, and an update's lag lets it settle). */
void
evd__window_learn(struct adaptive *a, double cls[][GAP_BINS])
{
	double cold_cost[GAP_CONTEXTS];

	for (int c = 0; c < GAP_CONTEXTS; c++) {
		double m = 0, warm = 0, cold = 0;

		for (int i = 0; i < GAP_BINS; i++) {
			m += cls[c][i];
			a->cdf[c][i] = m;
		}
		for (int i = 0; i < GAP_BINS; i++)
			a->cdf[c][i] = m > 0 ? a->cdf[c][i] / m : 0;
		if (m > 0)
			evd__best_thresholds(a, cls[c], NULL, &warm, &cold);
		cold_cost[c] = m > 0 ? fmax((cold - warm) / m, 0) : 0;
	}
	memcpy(a->cold_cost, cold_cost, sizeof(cold_cost));
}

/* A wake: whether the host's window is shut now. */
void
evd__window_wake(struct adaptive *a, uint64_t slept, enum evd_wake_reason why)
{
	/* the host's window: shut by a halt past it, open again after one
	 * within it (a wake that found work at once, slept 0, halted not). A
	 * timeout halted for the bound it was given, or less where the loop
	 * cut the wait short (slept adds its lateness); a notified sleep for
	 * slept less its wake latency: the cold wake where the window was
	 * shut, L at W where it was open */
	double w = (double)a->env->window_ns;

	if (slept == 0)
		return;
	a->cold = why == EVD_WAKE_TIMEOUT && a->asked_ns != 0
			  ? RTE_MIN(a->asked_ns, slept) > a->env->window_ns
			  : (double)slept - wake_lat_after(a, w, a->cold ? INFINITY : 0) > w;
	a->been_cold |= a->cold;
}
