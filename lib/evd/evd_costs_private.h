/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The costs the policies price: B, L(g), C(g), T(g) and the host's halt
 * window, read from an evd_policy_env (evd_costs.c measures or takes one).
 * Inline, so that a policy's model pays no call for a figure.
 */
#ifndef EVD_COSTS_PRIVATE_H
#define EVD_COSTS_PRIVATE_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>

#include "evd_policy.h"

/* The costs a policy prices with until some are measured or given. */
extern const struct evd_policy_env evd__env_defaults;

/* A figure known at L's points (@p v: L's wake_ns, or T's), interpolated
 * on log g between them (flat outside them); @p log_at: the points' logs,
 * taken once, or NULL to take them here. Either way the same arithmetic,
 * so the same figure. */
static inline double
evd__points_interp(const struct evd_policy_env *e, const uint64_t *v, const double *log_at,
		   uint64_t g)
{
	if (g <= e->wake_at_ns[0])
		return (double)v[0];
	for (int k = 1; k < EVD_ENV_WAKE_POINTS; k++)
		if (g <= e->wake_at_ns[k]) {
			double lo = log_at ? log_at[k - 1] : log((double)e->wake_at_ns[k - 1]);
			double hi = log_at ? log_at[k] : log((double)e->wake_at_ns[k]);
			double f = hi > lo ? (log((double)g) - lo) / (hi - lo) : 1;

			return (double)v[k - 1] + f * ((double)v[k] - (double)v[k - 1]);
		}
	return (double)v[EVD_ENV_WAKE_POINTS - 1];
}

/* L(g), interpolated as above. */
static inline double
evd__wake_interp(const struct evd_policy_env *e, const double *log_at, uint64_t g)
{
	return evd__points_interp(e, e->wake_ns, log_at, g);
}

/* Whether the environment has C (a given one may not: B stands in). */
static inline bool
evd__timeout_cpu_known(const struct evd_policy_env *e)
{
	return e->timeout_at_ns[0] != 0 && e->timeout_ns[0] != 0 && e->timeout_ns[1] != 0;
}

/* Whether it has T (a given one may not: L stands in); given or measured,
 * T is at every point or at none. */
static inline bool
evd__timeout_late_known(const struct evd_policy_env *e)
{
	return e->timeout_late_ns[0] != 0;
}

/* L where the host has a halt window: a halt past W wakes cold (the host
 * stopped polling the vCPU and descheduled it), and so does a halt within
 * W right after one past it (the host shrank its window). Cold is at least
 * cold_wake_ns, since L(g) interpolated between its points misses the step
 * at W (policies.md, "The host's halt window"). */
static inline double
evd__wake_windowed(const struct evd_policy_env *e, double l, double g, double prev)
{
	double w = (double)e->window_ns;

	return g > w || prev > w ? fmax(l, (double)e->cold_wake_ns) : l;
}

/* The most a wake can be late: L at the calibration's last point, or the
 * cold wake where a window makes every sleep past it cold (what a
 * timeout can save at most). */
static inline double
evd__wake_most(const struct evd_policy_env *e)
{
	double l = (double)e->wake_ns[EVD_ENV_WAKE_POINTS - 1];

	return e->window_ns != 0 ? fmax(l, (double)e->cold_wake_ns) : l;
}

#endif /* EVD_COSTS_PRIVATE_H */
