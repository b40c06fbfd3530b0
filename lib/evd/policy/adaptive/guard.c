/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The guard: a bound on a sleep while traffic is recent, picked by the
 * model per context.
 */
#include <assert.h>

#include "adaptive.h"

/* The bounds guard_pick weighs besides none and W: a few steps over the
 * range where L grows (doc/guides/policies.md, "The guard"). */
static const uint64_t guard_bound_ns[] = { 1000000, 2000000, 3000000, 5000000, 10000000 };
static_assert(GUARD_BOUNDS == RTE_DIM(guard_bound_ns) + 1, "W, then the list");

/* The price of latency, and the bounds guard_pick weighs, which depend on
 * it, the environment and the keys only. A gap gets at most as many
 * timeouts as the priced L of the longest sleep buys B's, and per bound as
 * many C as it buys, the most they can save on it. */
void
evd__lambda_set(struct adaptive *a, double lambda)
{
	double most = lambda * priced(a, evd__wake_most(a->env));
	double wakes = floor(fmin(most / fmax((double)a->env->sleep_wake_ns, 1.0), 1000.0));

	a->lambda = lambda;
	for (int k = 0; k < (int)GUARD_BOUNDS; k++) {
		uint64_t G = k == 0 ? a->env->window_ns : guard_bound_ns[k - 1];
		struct guard_bound *g = &a->bounds[k];

		g->G = (double)G;
		g->c = fmax(evd_policy_env_timeout_ns(a->env, G), 1.0);
		g->bs = evd_policy_env_bounded_sleep_ns(a->env, G);
		/* (an environment without T: the timeout's end is not priced) */
		g->cycle = g->G + (evd__timeout_late_known(a->env)
					   ? evd_policy_env_timeout_late_ns(a->env, G) : 0);
		g->wakes = fmin(floor(most / g->c), wakes);
	}
}

/* The priced wait of an arrival that comes in a timeout's lateness at the
 * end of a gap g and waits anywhere from 0 to 2 x for the loop (x, or under
 * a target the share of those waits past it), and of those that come after
 * it meanwhile: the first with F1, the chance that the gap after one like g
 * is under x, each next one with F0, the same after a gap under 4 us (a
 * burst): F1 / (1 - F0) of them. Each waits about as long as the arrival it
 * follows, since what comes within a lateness comes in bursts a few us
 * apart (the measurement: policies.md, "The host's halt window"). F0 is
 * capped at 0.99 only, against a division by 0: a burst that lands in a
 * timeout's lateness waits whole, and a lower cap underpriced it. Without
 * a window cdf stays 0: the arrival alone. */
static double
late_cost(const struct adaptive *a, double g, double x)
{
	int i = gap_bin((uint64_t)x);
	double first = a->target_ns > 0 ? fmax(2 * x - a->target_ns, 0) / fmax(2 * x, 1) : x;

	return first * (1 + a->cdf[gap_context((uint64_t)g)][i] / (1 - fmin(a->cdf[0][i], 0.99)));
}

/* The model's cost of a gap of bin i (@p g, its middle) under threshold t,
 * its sleep unbounded, that starts @p cold or warm; with a window, the bin's
 * share that sleeps past W wakes cold, and leaves the next gap a cold start
 * (cold_cost). */
static double
bin_cost(const struct adaptive *a, int i, double g, double t, bool cold)
{
	double past = a->window ? evd__bin_above(i, t + (double)a->env->window_ns) : 0;

	return (g <= t ? g : t + (double)a->env->sleep_wake_ns +
				     a->lambda * evd__priced_wake_share(a, g - t, past, cold)) +
	       past * a->cold_cost[a->tab->bin_ctx[i]];
}

/*
 * The model's cost of a gap of bin i (t spun, then s asleep) under sleeps
 * bounded at G, for at most b->wakes timeouts: k cycles of G + T(G) pass,
 * a C(G) each, then the arrival comes within the next sleep (B, or C where
 * it is bounded, and the wake latency of what is left of it) or in the next
 * timeout's lateness (it waits for the loop); after the last timeout the
 * sleep is unbounded. @p none is the unbounded cost, which the caller has;
 * the gap began @p cold or warm (the window's state before its first
 * sleep). A halt of G past W shuts the window: the wake after it is cold,
 * and so is the next gap's start where the arrival comes in a lateness; a
 * last sleep past W leaves it shut too (cold_cost).
 */
static double
guard_cost(const struct adaptive *a, int i, double t, const struct guard_bound *b, double none,
	   bool cold)
{
	double g = a->tab->bin_mid[i], w = (double)a->env->window_ns;
	double s = g - t, k = fmin(floor(s / b->cycle), b->wakes), pl = 0, p, in_sleep;
	double r = s - k * b->cycle; /* what is left of the sleep the middle ends in */
	double cold_cost = a->cold_cost[a->tab->bin_ctx[i]]; /* 0 without a window */
	bool last = k == b->wakes;

	if (s <= b->G)
		return none + b->bs - (double)a->env->sleep_wake_ns; /* no timeout, a timer armed */
	if (!last && b->cycle > b->G) {
		/* The arrival is not placed by the bin's middle, which would put
		 * the whole bin in a sleep or in a lateness: the share of the
		 * bin's gaps, spread on log g, that ends in a timeout's lateness
		 * (pl) waits about T / 2, with what follows it; a bin within W
		 * spans several cycles, and one past it a share of one
		 * (policies.md, "The guard"). The cycles whose lateness ends
		 * before the bin's first edge add nothing: the sum starts at the
		 * last of them. */
		double c0 = fmax(floor(((double)a->tab->t_ns[i] - t) / b->cycle) - 1, 0);
		double above = evd__bin_above(i, t);

		for (int c = (int)fmin(c0, b->wakes); c < (int)b->wakes; c++) {
			double in = evd__bin_above(i, t + c * b->cycle + b->G);

			if (in == 0)
				break; /* this lateness and the next begin past the bin */
			pl += in - evd__bin_above(i, t + (c + 1) * b->cycle);
		}
		pl = above > 0 ? pl / above : 0;
	}
	/* the rest wakes from the sleep it ends, which a halt of G past W
	 * before it (or the gap's start) makes cold; the share of the bin
	 * whose sleep outlasts W (last, or bounds past W) wakes cold and
	 * leaves the window shut */
	p = a->window && (last || b->G > w) ? evd__bin_above(i, t + k * b->cycle + w) : 0;
	in_sleep = t + k * b->c + (last ? (double)a->env->sleep_wake_ns : b->bs) + p * cold_cost +
		   a->lambda * evd__priced_wake_share(a, last ? r : fmin(r, b->G), p,
						      a->window && (k == 0 ? cold : b->G > w));
	return (1 - pl) * in_sleep +
	       pl * (t + (k + 1) * b->c + a->lambda * late_cost(a, g, (b->cycle - b->G) / 2) +
		     (b->G > w ? cold_cost : 0));
}

/*
 * Bound the sleeps or not, as the model says. A timeout
 * every G trades a C(G) for the wake latency of a shorter sleep (and a
 * bound at W keeps every wake warm, the next gap's too), for at most
 * b->wakes timeouts a gap, so that a silence far longer than the histogram
 * foretold costs no more. Per context, with its threshold, for a gap that
 * starts @p cold or warm, the bound (or none) of least expected cost wins;
 * *span says how long past the threshold it bounds.
 */
static uint64_t
guard_pick(const struct adaptive *a, const double *w, uint64_t thr, bool cold, uint64_t *span)
{
	double cost[GUARD_BOUNDS + 1] = { 0 }, t = (double)thr;
	const struct guard_bound *b[GUARD_BOUNDS];
	int nb = 0, best = 0;

	*span = 0;
	/* (a bound whose timeout costs more than the priced L it could save
	 * gets no timeout: left out) */
	for (int k = a->win_live ? 0 : 1; k < (int)GUARD_BOUNDS; k++)
		if (a->bounds[k].wakes >= 1)
			b[nb++] = &a->bounds[k];
	/* gaps shorter than the threshold have no sleep, the same cost under
	 * every bound; those shorter than the threshold and the least bound
	 * no timeout, but a sleep with a timer armed costs more
	 * (evd_policy_env_bounded_sleep_ns; B where C is not known): they
	 * count too (a threshold of never leaves none) */
	if (nb == 0 || thr >= UINT64_MAX - (uint64_t)b[0]->G)
		return UINT64_MAX;
	for (int i = gap_bin(thr); i < GAP_BINS; i++) {
		double g, none;

		/* a bin halved to under 1 % of a gap weighs nothing here (the
		 * halving empties one only after about 100 halvings): not worth
		 * a wake latency's log */
		if (w[i] < 0.01 || (g = a->tab->bin_mid[i]) <= t)
			continue;
		none = bin_cost(a, i, g, t, cold);
		cost[0] += w[i] * none;
		for (int k = 0; k < nb; k++)
			cost[k + 1] += w[i] * guard_cost(a, i, t, b[k], none, cold);
	}
	for (int k = 1; k <= nb; k++) /* (cost[0]: none) */
		best = cost[k] < cost[best] ? k : best;
	if (best == 0)
		return UINT64_MAX;
	*span = (uint64_t)(b[best - 1]->wakes * b[best - 1]->cycle);
	return (uint64_t)b[best - 1]->G;
}

/* The bounds of a warm and a cold rule (r[0], r[1], their thresholds set) on
 * histogram @p w: the cold one's is weighed once the window has been shut,
 * else it is the warm one's. */
void
evd__guards(struct adaptive *a, const double *w, struct rule *r)
{
	r[0].guard = guard_pick(a, w, r[0].t, false, &r[0].span);
	if (a->win_live && a->been_cold)
		r[1].guard = guard_pick(a, w, r[1].t, true, &r[1].span);
	else
		r[1] = (struct rule){ r[1].t, r[0].guard, r[0].span };
}
