/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The cost model: what a gap costs under a spin threshold (B, the priced
 * wake latency L, the host's window), in tables made once per pair of
 * prices, and the threshold with the least expected cost over a histogram.
 */
#include <pthread.h>
#include <stdlib.h>

#include "adaptive.h"

/* The gap at x bins from 256 ns (two bins an octave): bin i spans
 * [BIN_AT(i), BIN_AT(i + 1)), its middle BIN_AT(i + 0.5) on log g. */
#define BIN_AT(x) (256.0 * pow(2.0, (x) / 2.0))

/* The model's cost of a gap g under threshold t, as it starts warm: spun
 * through (g <= t), or t spun, then a sleep (B) and its priced wake. */
double
evd__model_cost_at(const struct adaptive *a, double g, double t)
{
	return g <= t ? g
		      : t + (double)a->env->sleep_wake_ns +
				a->lambda * priced(a, wake_lat_after(a, g - t, 0));
}

/* The share of bin i's gaps longer than x, the bin's gaps spread evenly on
 * log g, since the bin's middle alone makes a step: past W, one that a
 * threshold can buy a whole bin's warm wakes with (x: the threshold + W;
 * doc/guides/policies.md, "The host's halt window"), and past a bound's
 * cycle, one that puts a whole bin in a sleep or in a timeout's lateness. */
double
evd__bin_above(int i, double x)
{
	/* log(BIN_AT(i + 1) / x) over a bin's width, half an octave, is
	 * i + 17 - 2 log2(x): one log, where the bin's edges took two pow */
	return fmin(fmax(i + 17 - 2 * log2(x), 0), 1);
}

/* A bin's wake of a sleep s, priced: its share @p past (past W: bin_above)
 * wakes cold, at least Lc; the rest in L(s). All of it cold where the halt
 * before it was past W (@p prev_cold). */
double
evd__priced_wake_share(const struct adaptive *a, double s, double past, bool prev_cold)
{
	double l = evd__wake_interp(a->env, a->log_at, (uint64_t)s);
	double lc = fmax(l, (double)a->env->cold_wake_ns);

	return prev_cold ? priced(a, lc) : (1 - past) * priced(a, l) + past * priced(a, lc);
}

/* Under a target, a bin's late wakes are its share of gaps past the length
 * whose sleep wakes later than the target, which its middle alone would make
 * all or none: the mean over this many points of the bin, spread on log g. */
#define TARGET_POINTS 8

/* Bin i's priced wake under threshold t: at its middle, or under a target
 * over its points; with a window, the bin's share past W (@p past) cold, or
 * all of it @p cold. */
static double
bin_lat(const struct adaptive *a, int i, double t, double past, bool cold)
{
	int points = a->target_ns > 0 ? TARGET_POINTS : 1;
	double sum = 0;

	for (int k = 0; k < points; k++) {
		double g = BIN_AT(i + (k + 0.5) / points);

		if (g > t)
			sum += evd__priced_wake_share(a, g - t, past, cold);
	}
	return sum / points;
}

/* The cost tables of the model, for @p a's environment and latency prices
 * (lambda apart, so that one set serves every lambda); NULL: no memory. */
static struct adaptive_tables *
tables_make(const struct adaptive *a)
{
	struct adaptive_tables *tb = calloc(1, sizeof(*tb));

	if (tb == NULL)
		return NULL;
	tb->target_ns = a->target_ns;
	for (int i = 0; i < GAP_BINS; i++) {
		tb->bin_mid[i] = BIN_AT(i + 0.5);
		tb->bin_ctx[i] = gap_context((uint64_t)tb->bin_mid[i]);
	}
	for (int j = 0; j <= GAP_BINS; j++) {
		double t = j == 0 ? 0 : j == GAP_BINS ? INFINITY : BIN_AT(j);

		tb->t_ns[j] = j == GAP_BINS ? UINT64_MAX : (uint64_t)t;
		for (int i = 0; i < GAP_BINS; i++) {
			/* the CPU is the same warm or cold: spun through, or t and B */
			double g = tb->bin_mid[i], w = (double)a->env->window_ns;
			double past = a->window ? evd__bin_above(i, t + w) : 0;

			tb->cpu[j][i] = g <= t ? g : t + (double)a->env->sleep_wake_ns;
			tb->lat[j][i] = bin_lat(a, i, t, past, false);
			if (a->window) {
				tb->past[j][i] = (float)past;
				tb->lat_cold[j][i] = bin_lat(a, i, t, 0, true);
			}
		}
	}
	return tb;
}

/* Sets of tables shared: one per latency price in use, up to this many. */
#define SHARED_TABLES 8
static pthread_mutex_t tables_lock = PTHREAD_MUTEX_INITIALIZER;
static struct adaptive_tables *shared_tables[SHARED_TABLES]; /* under tables_lock */

/* The tables for @p a's prices. On the process's environment (measured or
 * given, fixed from then on) the instances priced alike share a set, made
 * by the first and kept for the process, since loops come and go on any
 * thread; past SHARED_TABLES sets of prices, or on another environment (a
 * spec validated without calibrating), the instance gets its own, in
 * *own, freed with it. NULL: no memory. */
const struct adaptive_tables *
evd__tables_get(const struct adaptive *a, struct adaptive_tables **own)
{
	const struct adaptive_tables *tb = NULL;
	int k = SHARED_TABLES;

	*own = NULL;
	if (a->env == evd_policy_env_peek(NULL)) {
		pthread_mutex_lock(&tables_lock);
		/* slots fill in order and stay: past the first free one none is
		 * used, so it ends the search, made or not (no memory) */
		for (k = 0; k < SHARED_TABLES; k++) {
			if (shared_tables[k] == NULL)
				shared_tables[k] = tables_make(a);
			if (shared_tables[k] == NULL || shared_tables[k]->target_ns == a->target_ns)
				break;
		}
		tb = k < SHARED_TABLES ? shared_tables[k] : NULL;
		pthread_mutex_unlock(&tables_lock);
	}
	return k < SHARED_TABLES ? tb : (*own = tables_make(a));
}

int
evd__bins_held(const double *w, int *nz, int *last)
{
	int n = 0;

	for (int i = *last = 0; i < GAP_BINS; i++)
		if (w[i] > 0)
			*last = (nz[n++] = i) + 1;
	return n;
}

/* The threshold with the least expected cost over a histogram, for a gap
 * that starts warm, and, with a window, one that starts cold (*cold_t), in
 * one pass; their expected costs in *least_w, *least_c if not NULL. With a
 * window, what the next gap pays for a cold start (cold_cost) is added where
 * this one leaves the window shut: after a sleep past W, or, shut already,
 * after none (spinning does not open it; only a halt within it does). */
uint64_t
evd__best_thresholds(const struct adaptive *a, const double *w, uint64_t *cold_t, double *least_w,
		double *least_c)
{
	const struct adaptive_tables *tb = a->tab;
	double best = INFINITY, best_c = INFINITY, lambda = a->lambda;
	uint64_t best_t = 0, best_tc = 0;
	int nz[GAP_BINS], last, n = evd__bins_held(w, nz, &last);

	for (int j = 0; j <= last && tb->t_ns[j] <= a->cap_ns; j++) {
		/* (cold_cost is 0 unless the window is live: the warm sum's term
		 * adds nothing then, and the cold sum is not made) */
		double cost = 0, cost_c = a->win_live ? 0 : INFINITY;

		for (int k = 0; k < n; k++) {
			int i = nz[k];
			double cold_cost = a->cold_cost[tb->bin_ctx[i]], past = tb->past[j][i];

			cost += w[i] * (tb->cpu[j][i] + lambda * tb->lat[j][i] + past * cold_cost);
			if (a->win_live)
				cost_c += w[i] * (tb->cpu[j][i] + lambda * tb->lat_cold[j][i] +
						  (tb->bin_mid[i] <= (double)tb->t_ns[j]
							   ? cold_cost
							   : past * cold_cost));
		}
		/* the first of equal costs (no fmin: a libm call per threshold) */
		best_tc = cost_c < best_c ? tb->t_ns[j] : best_tc;
		best_c = cost_c < best_c ? cost_c : best_c;
		best_t = cost < best ? tb->t_ns[j] : best_t;
		best = cost < best ? cost : best;
	}
	if (least_w != NULL)
		*least_w = best;
	if (least_c != NULL)
		*least_c = best_c;
	if (cold_t != NULL)
		*cold_t = a->win_live ? RTE_MIN(best_tc, a->cap_ns) : RTE_MIN(best_t, a->cap_ns);
	return RTE_MIN(best_t, a->cap_ns);
}
