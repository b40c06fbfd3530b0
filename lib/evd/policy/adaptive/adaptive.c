/* SPDX-License-Identifier: BSD-3-Clause */
#include <math.h>
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <rte_common.h>

#include "evd_costs_private.h"
#include "evd_private.h"

/*
 * adaptive learns the idle gaps the loop sees and spins exactly as long as
 * that pays off.
 *
 * Cost model (measured once per process, evd_policy_env): sleeping after t
 * of an idle gap g costs t of CPU, plus B (arm, syscalls, wake), plus the
 * wake latency L(g - t), priced at lambda ns of CPU per ns; spinning through
 * it costs g. With a latency budget (budget_us), latency up to the budget
 * is free and only what exceeds it is priced: cost = t + B + lambda x
 * max(0, L(g - t) - budget). The gaps go into a decayed histogram (two bins per octave,
 * 256 ns to about 3 s, halved every 4096 gaps); at 32 gaps and every 64
 * idle gaps (gaps with at least one empty round, counted from the first;
 * every 256 after the first 4096 gaps) it picks the spin threshold T (a
 * bin edge, 0 or "never") with the least expected cost over that
 * histogram, then polls while idle < T and sleeps after. While the
 * histogram is young (under 32 gaps) it uses the randomised ski-rental
 * threshold on [0, B + lambda L(10 us)], the price of a sleep
 * (e/(e-1)-competitive against that price). A busy period keeps it
 * polling by itself: its gaps are short, so T covers them. Gaps come in
 * runs (a burst, then a silence), so there is one histogram and one T per
 * context, the length of the previous gap (< 4 us, < 64 us, < 1 ms, more),
 * and in a loop of several sources the source whose completion began the
 * gap (the pre-wake slot it has: up to 8). In such a loop each source's own
 * gaps are learned too, and at each idle gap their superposition (the
 * chance that every source stays silent past its age + x) gives a second
 * threshold; each rule is charged what it would have cost on the gap, and
 * the cheaper so far decides (sup_choose).
 * Busy-period lock-in: after a round that found a burst, spin at least B.
 *
 * Pre-wake: the long gaps (over PW_MIN_NS) also feed a running mean and mean
 * deviation. When at least PW_RUN of them in a row stay within PW_CV of their
 * mean, the arrivals are periodic: the policy then sleeps with a timeout that
 * ends a margin (3 deviations plus the wake latency L) before the expected
 * arrival, and polls through the window around it, so the arrival finds the
 * core awake. It does so only where the model says it pays: spinning the
 * margin costs less than lambda x L, the latency the wake would add (with
 * lambda = 1 that is never the case, since the timer wake has a latency too;
 * it is for latency-priced loops, lambda_pct > 100).
 *
 * Naps (software interrupt moderation, under a latency budget): where the
 * budget leaves room for a nap S = budget - (how late naps end) longer than
 * 2 B, the first empty round of a gap naps S with nothing armed, instead of
 * spinning or arming, while the arrival rate (completions over the gap they
 * ended, averaged over the idle gaps) promises two arrivals a nap or more:
 * whatever arrives meanwhile waits at most S + L, within the budget, and is
 * polled in one round, so one wake serves a whole run of arrivals that
 * spinning would have met one by one (NAPI's deferred-IRQ timer and
 * gro_flush_timeout work the same way). A nap that finds nothing lowers the
 * rate; the gap goes on under the learned threshold, to an armed sleep.
 *
 * Keys: lambda_pct (lambda x 100; default 100), budget_us (the latency
 * budget: added latency up to it is free; with room for them, naps),
 * spin_max_us (a cap on T: the longest the core stays busy after the last
 * completion), nap (0 turns naps off; default 1), prewake (0 turns pre-wake
 * off; default 1), superpose (0: in loops of several sources, the context
 * rule alone; default 1), guard_us (while the last completion is under a second
 * old, bound every sleep at this; 0: never; unset: the model picks, guard_pick),
 * guard_for_us (with guard_us=N: how long after the last completion, instead
 * of a second),
 * learn=0 (the first
 * version: spin B, pause, sleep), spin_pct and pause_ns (for learn=0).
 */
#define GAP_BINS 48
#define GAP_CONTEXTS 4 /* the previous gap: < 4 us, < 64 us, < 1 ms, longer */
#define YOUNG 32
#define DECAY_EVERY 4096 /* gaps */
#define LEARN_EVERY 256 /* idle gaps */
#define LEARN_EARLY 64  /* idle gaps, until the first decay (DECAY_EVERY gaps) */
#define GUARD_AUTO UINT64_MAX /* guard_us unset: the model picks the bound (guard_pick)... */
#define GUARD_WINDOW_NS 1000000000ull /* ...recent: a completion in the last second */
#define PW_MIN_NS 50000 /* pre-wake: gaps shorter than this are not periods */
#define PW_RUN 8        /* periodic after this many long gaps in a row... */
#define PW_CV 0.125     /* ...each within this part of the mean */
#define PW_SLOTS 8      /* sources followed for pre-wake; more share the least recent slot */
#define NAP_STEP_NS 200.0 /* the nap's lateness: its 90th percentile moves by steps of this */
#define CONTEXTS (GAP_CONTEXTS * PW_SLOTS) /* x the source that ended the gap */

/* Pre-wake state of one source: its long gaps' running mean and mean
 * deviation, and, when it is periodic and waking early pays, the window
 * around its next expected arrival (absolute loop-clock times). */
struct pw_slot {
	uint32_t id;
	bool used;
	uint64_t last_ns;             /* its last completion */
	double mean, dev;
	uint32_t run;                 /* long gaps in a row within PW_CV of the mean */
	uint64_t wake_at, end_at;     /* 0: no pre-wake; else sleep until wake_at, poll to end_at */
};

/* The bounds guard_pick weighs, besides none (and the window's, W). */
static const uint64_t guard_try_ns[] = { 1000000, 2000000, 3000000, 5000000, 10000000 };
#define GUARD_TRIES (RTE_DIM(guard_try_ns) + 1)

/* A bound guard_pick weighs: G, its timeout's CPU C(G), its cycle G + T(G)
 * (the loop runs again T(G) after the timeout), and the timeouts a gap
 * gets: as many C as the priced L of the longest sleep, the most they can
 * save on it. */
struct guard_try {
	double G, c, cycle, wakes;
	double bs; /* a sleep under the bound that a notification ends: its CPU */
};

/*
 * The cost model's tables, per threshold j (edge j; 0: sleep at once;
 * GAP_BINS: never) and gap bin i, so that an update is sums only. They
 * depend on the calibration and the prices alone, so the loops priced alike
 * share one set, made once and read-only (tables_get; 48 KB, against a
 * loop's 4 KB: doc/guides/policies.md, "Adaptive's state").
 */
struct adaptive_tables {
	double lambda, lat_budget_ns; /* the prices they were made with */
	double cost[GAP_BINS + 1][GAP_BINS];
	double cost_cold[GAP_BINS + 1][GAP_BINS]; /* with a window: the sleep's wake cold */
	float past[GAP_BINS + 1][GAP_BINS]; /* with a window: bin_past() */
	uint64_t t_ns[GAP_BINS + 1];
	double bv[GAP_BINS];          /* bin_value(i) */
	int bcls[GAP_BINS];           /* gap_context(bin_value(i)) */
	double td[GAP_BINS + 1];      /* t_ns[j] as a double */
};

/*
 * Superposition (loops of several sources): each source's own gaps, from
 * one round that served it to the next, decayed with the rest; at each
 * update their survival P(own gap >= edge k); per slot that began a gap,
 * the cost each rule's threshold would have had on the idle gaps it began
 * (0: the context's, 1: the superposition's). Made when the loop names its
 * first source, so that a loop of one source does not hold it.
 */
struct adaptive_sources {
	float hs[PW_SLOTS][GAP_BINS];
	float surv[PW_SLOTS][GAP_BINS + 1];
	double rule_cost[PW_SLOTS][2];
};

struct adaptive {
	const struct evd_policy_env *env;
	const struct adaptive_tables *tab; /* shared, or own_tab */
	struct adaptive_tables *own_tab;   /* not shared: this instance's, freed with it */
	double log_at[EVD_ENV_WAKE_POINTS]; /* log of env->wake_at_ns: wake_lat reads it */
	double lambda;
	uint64_t cap_ns;      /* spin_max_us, or UINT64_MAX */
	double lat_budget_ns; /* budget_us: added latency up to this is free (0: none) */
	uint64_t nap_ns;      /* the nap the budget leaves room for (0: none) */
	double nap_late_ns;   /* how late a nap ends: its 90th percentile, learned */
	uint64_t last_gap_ns; /* the gap that ended at the last completion */
	bool napping;         /* the last action was a nap (on_wake: a nap's end) */
	double nap_gap, nap_burst; /* at the idle gaps: gap and completions, averaged (naps only) */
	bool naps_late;       /* naps stopped: they ended too late for the budget */
	bool lock_in_pays;    /* lambda > 0, L(B) over the budget: lock-in saves priced latency */
	uint64_t guard_ns;    /* the bound on a sleep while traffic is recent, or UINT64_MAX */
	bool guard_auto;      /* guard_us unset: the model's pick per context (ctx_guard)... */
	uint32_t guard_wakes; /* ...for at most this many timeouts a gap */
	bool learn;
	/* learn=0: the calibrated ski-rental rule */
	uint64_t budget_ns, spin_ns, pause_ns;
	/* learning: one histogram per context (the length of the previous gap),
	 * since gaps come in runs (bursts, then silence): n_ctx_used of them,
	 * GAP_CONTEXTS per slot in use, grown as sources take slots (w_room) */
	float (*w)[GAP_BINS];
	uint64_t samples;
	uint64_t last_event_ns;
	int ctx;                      /* the context of the gap under way */
	uint64_t threshold_ns;        /* for the gap under way */
	uint64_t ctx_threshold[CONTEXTS];
	uint64_t ctx_guard[CONTEXTS]; /* guard_us unset: the bound on its sleeps, or UINT64_MAX... */
	uint64_t ctx_guard_span[CONTEXTS]; /* ...for this long past the threshold */
	uint64_t guard_for_ns;        /* guard_us=N: bound the sleeps while idle under this... */
	uint32_t guard_off;           /* ...but not in these contexts (guard_reach) */
	uint32_t ctx_own;             /* contexts whose threshold is their own (not pooled) */
	uint64_t pooled_ns;           /* the threshold of all contexts together */
	uint64_t pooled_guard;        /* guard_us unset: the bound of all contexts together... */
	uint64_t pooled_guard_span;   /* ...and its span */
	/* the host's halt window (env->window_ns): a sleep within it after a
	 * longer one wakes in cold_wake_ns, not L */
	bool window;
	bool win_live;                /* window, and some gap of the histograms outlasts W */
	bool late_known;              /* env has T: a timeout's end is priced */
	bool c_known;                 /* env has C: a timer's CPU is priced */
	bool cold;                    /* the last halt outlasted W (on_wake) */
	bool been_cold;               /* the window was ever shut: the cold guards are weighed */
	bool cold_gap;                /* the gap under way began cold: the cold rules */
	uint64_t asked_ns;            /* the last sleep's or nap's bound (0: none) */
	double pen[GAP_CONTEXTS];     /* per class of a gap: what starting it cold adds */
	double (*cdf)[GAP_BINS];      /* with a window: per class, P(next gap < bin i's top) */
	uint64_t ctx_threshold_cold[CONTEXTS]; /* the contexts' rules for a cold start */
	uint64_t ctx_guard_cold[CONTEXTS], ctx_guard_span_cold[CONTEXTS];
	uint64_t pooled_cold_ns, pooled_guard_cold, pooled_guard_span_cold;
	uint32_t idle_left;           /* idle gaps (the loop had to decide) to the next update */
	uint64_t young_buy_ns;        /* while young: the price of a sleep, B + lambda L */
	uint64_t next_decay;          /* samples at the next halving: 4096, then +4096 */
	uint64_t next_check;          /* samples at the next update or halving */
	uint64_t rnd;
	bool lock_in;                 /* the last round found a burst: the loop is behind */
	/* pre-wake */
	bool prewake;
	bool superpose;               /* superpose=0: the context rule alone */
	bool per_source;              /* the loop tells which source each round served */
	uint32_t slot_ctx;            /* GAP_CONTEXTS x the slot of the source served last */
	uint32_t n_ctx_used;          /* contexts in use: GAP_CONTEXTS x (highest slot + 1) */
	uint32_t pw_active;           /* slots with a pre-wake set */
	struct pw_slot pw[PW_SLOTS];  /* per source (slot 0 only: the loop as one source) */
	struct adaptive_sources *src; /* loops of several sources: from the first source named */
	bool alone;                   /* no memory for src: the loop is learned as one source */
	uint32_t sup_mask;            /* slots in the superposition (at least 2, else 0) */
	uint64_t gap_t[2];            /* the gap under way: both rules' thresholds... */
	uint32_t gap_slot;            /* ...the slot that began it... */
	bool gap_scored;              /* ...and whether it was idle (both are scored) */
	uint64_t sup_gaps;            /* idle gaps on the superposition's threshold */
	/* the bounds guard_pick weighs (W first), taken once: they depend on
	 * the environment and the knobs only; gtry_ok: one timeout or more */
	struct guard_try gtry[GUARD_TRIES];
	bool gtry_ok[GUARD_TRIES];
};

static int
gap_context(uint64_t g)
{
	return g < 4000 ? 0 : g < 64000 ? 1 : g < 1000000 ? 2 : 3;
}

static double
bin_value(int i)
{
	return 256.0 * pow(2.0, (i + 0.5) / 2.0);
}

static double
bin_edge(int i)
{
	return 256.0 * pow(2.0, i / 2.0);
}

/* Two bins per octave above 256 ns, split where bin_edge() splits them (at
 * sqrt(2) times the octave's start), found by the gap's top bit: bin_base
 * is the octave's first bin, bin_split the least gap of its second,
 * ceil(2^(m + 1/2)) for top bit m (tests/test_gap_bin.c checks both
 * tables against the edges). Under 256 ns (m < 8) the split is never
 * reached; from 2^32 ns on it always is (bin 47). Two loads and no branch:
 * this runs at every round that finds work. adaptive_events went from 56
 * to 46 instructions a call with it (g^2 against 2^(2m + 1) before, and
 * a branch at each end); callgrind, the saturated ring, 8 runs each:
 * 55.51-55.81 instructions an event, 55.78-56.25 before (poll: 53.44). */
static const uint8_t bin_base[64] = {
	[0 ... 7] = 0,
	0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22,
	24, 26, 28, 30, 32, 34, 36, 38, 40, 42, 44, 46,
	[32 ... 63] = GAP_BINS - 2,
};

/* The decay's halving. A weight under 1e-30 (a gap's, about 100 halvings
 * ago) goes to 0: halved on, it would turn subnormal, whose arithmetic is
 * slow on x86 without flush-to-zero, for some 50 halvings more. */
static inline double
halve(double w)
{
	return w < 1e-30 ? 0 : w * 0.5;
}

static const uint64_t bin_split[64] = {
	[0 ... 7] = UINT64_MAX,
	363, 725, 1449, 2897, 5793, 11586, 23171, 46341,
	92682, 185364, 370728, 741456, 1482911, 2965821, 5931642, 11863284,
	23726567, 47453133, 94906266, 189812532, 379625063, 759250125, 1518500250, 3037000500,
	[32 ... 63] = 0,
};

static int
gap_bin(uint64_t g)
{
	int m = 63 - __builtin_clzll(g | 1);

	return bin_base[m] + (g >= bin_split[m]);
}

/* gap_bin for tests/test_gap_bin.c (internal, not exported) */
int
evd__gap_bin(uint64_t g)
{
	return gap_bin(g);
}

/* Ski rental while the histogram is young: the price of buying (a sleep)
 * is what a sleep costs in this model, B and the priced wake latency (the
 * least, L after the shortest sleep), not B alone: with latency priced,
 * [0, B] slept through gaps that were cheaper to spin. */
static void
young_threshold(struct adaptive *a)
{
	a->threshold_ns = RTE_MIN(evd__ski_rand_threshold(a->young_buy_ns, &a->rnd), a->cap_ns);
}

/* The priced part of an added latency: what exceeds the budget. */
static inline double
priced(const struct adaptive *a, double latency_ns)
{
	return fmax(latency_ns - a->lat_budget_ns, 0);
}

/* The policy's L: the points' logs were taken at create (one log() a
 * figure, not three; guard_pick takes up to six figures a bin). */
static double
wake_lat(const struct adaptive *a, uint64_t g)
{
	return evd__wake_interp(a->env, a->log_at, g);
}

/* L of a sleep of g after a halt of @p prev (the window's state). */
static double
wake_lat_after(const struct adaptive *a, double g, double prev)
{
	double l = wake_lat(a, (uint64_t)g);

	return a->window ? evd__wake_windowed(a->env, l, g, prev) : l;
}

/* The model's cost of a gap g under threshold t: spun through (g <= t),
 * or t spun, then a sleep (B) and its priced wake latency (cold: after a
 * halt past the window). */
static double
model_cost_at(const struct adaptive *a, double g, double t, bool cold)
{
	if (g <= t)
		return g;
	return t + (double)a->env->sleep_wake_ns +
	       a->lambda * priced(a, wake_lat_after(a, g - t, cold ? INFINITY : 0));
}

static double
model_cost(const struct adaptive *a, double g, double t)
{
	return model_cost_at(a, g, t, false);
}

/* With a window: the share of bin i's gaps whose sleep after threshold t
 * outlasts W (the bin's gaps spread evenly on log g). Its middle alone was
 * a step: a threshold of 11.6 us put all of the bin around 100 us under W,
 * so at Poisson 20k/s the model spun 11.6 us before every sleep to keep
 * them warm (scorer: ratio 1.739 against intr's 1.590). */
static double
bin_past(const struct adaptive *a, int i, double t)
{
	double lo = bin_edge(i), hi = bin_edge(i + 1), x = t + (double)a->env->window_ns;

	if (x <= lo)
		return 1;
	if (x >= hi)
		return 0;
	return log(hi / x) / log(hi / lo);
}

/* A bin's wake of a sleep s, priced: its share @p past (of W, bin_past)
 * wakes cold, at least Lc; the rest in L(s), or cold as well where the
 * halt before it was past W (@p prev_cold). */
static double
priced_wake_share(const struct adaptive *a, double s, double past, bool prev_cold)
{
	double l = wake_lat(a, (uint64_t)s), lc = fmax(l, (double)a->env->cold_wake_ns);

	return (1 - past) * priced(a, prev_cold ? lc : l) + past * priced(a, lc);
}

/* The model's cost of a gap of bin i (@p g, its middle) that starts warm
 * under threshold t, with a window: the bin's share that sleeps past W
 * wakes cold (*past). */
static double
bin_cost_warm(const struct adaptive *a, int i, double g, double t, double *past)
{
	*past = bin_past(a, i, t);
	if (g <= t)
		return g;
	return t + (double)a->env->sleep_wake_ns +
	       a->lambda * priced_wake_share(a, g - t, *past, false);
}

/* The cost tables of the model, for @p a's environment and prices. */
static void
cost_table(const struct adaptive *a, struct adaptive_tables *tb)
{
	tb->lambda = a->lambda;
	tb->lat_budget_ns = a->lat_budget_ns;
	for (int i = 0; i < GAP_BINS; i++) {
		tb->bv[i] = bin_value(i);
		tb->bcls[i] = gap_context((uint64_t)tb->bv[i]);
	}
	for (int j = 0; j <= GAP_BINS; j++) {
		double t = j == 0 ? 0 : j == GAP_BINS ? INFINITY : bin_edge(j);

		tb->t_ns[j] = j == GAP_BINS ? UINT64_MAX : (uint64_t)t;
		tb->td[j] = (double)tb->t_ns[j];
		for (int i = 0; i < GAP_BINS; i++) {
			double past;

			if (!a->window) {
				tb->cost[j][i] = model_cost(a, tb->bv[i], t);
				continue;
			}
			tb->cost[j][i] = bin_cost_warm(a, i, tb->bv[i], t, &past);
			tb->past[j][i] = (float)past;
			tb->cost_cold[j][i] = model_cost_at(a, tb->bv[i], t, true);
		}
	}
}

static struct adaptive_tables *
tables_make(const struct adaptive *a)
{
	struct adaptive_tables *tb = calloc(1, sizeof(*tb));

	if (tb != NULL)
		cost_table(a, tb);
	return tb;
}

/* Sets of tables shared: one per pair of prices in use, up to this many. */
#define SHARED_TABLES 8
static pthread_mutex_t tables_lock = PTHREAD_MUTEX_INITIALIZER;
static struct adaptive_tables *shared_tables[SHARED_TABLES]; /* under tables_lock */

/* The tables for @p a's prices. On the process's environment (measured or
 * given, fixed from then on) the instances priced alike share a set, made
 * by the first and kept for the process, since loops come and go on any
 * thread; past SHARED_TABLES sets of prices, or on another environment (a
 * spec validated without calibrating), the instance gets its own, in
 * *own, freed with it. NULL: no memory. */
static const struct adaptive_tables *
tables_get(const struct adaptive *a, struct adaptive_tables **own)
{
	struct adaptive_tables *tb = NULL;
	int k = SHARED_TABLES;

	*own = NULL;
	if (a->env == evd_policy_env_peek(NULL)) {
		pthread_mutex_lock(&tables_lock);
		for (k = 0; k < SHARED_TABLES && shared_tables[k] != NULL; k++)
			if (shared_tables[k]->lambda == a->lambda &&
			    shared_tables[k]->lat_budget_ns == a->lat_budget_ns)
				break;
		if (k < SHARED_TABLES) {
			if (shared_tables[k] == NULL)
				shared_tables[k] = tables_make(a);
			tb = shared_tables[k];
		}
		pthread_mutex_unlock(&tables_lock);
	}
	if (k == SHARED_TABLES) {
		tb = tables_make(a);
		*own = tb;
	}
	return tb;
}

/* The threshold with the least expected cost over a histogram, for a gap
 * that starts warm, and, with a window, one that starts cold (*cold_t), in
 * one pass; their expected costs in *least_w, *least_c if not NULL. With a
 * window, what the next gap pays for a cold start (pen) is added where
 * this one leaves the window shut: after a sleep past W, or, shut already,
 * after none (spinning does not open it; only a halt within it does). */
static uint64_t
best_thresholds(const struct adaptive *a, const double *w, uint64_t *cold_t, double *least_w,
		double *least_c)
{
	const struct adaptive_tables *tb = a->tab;
	double best = INFINITY, best_c = INFINITY;
	uint64_t best_t = 0, best_tc = 0;
	int nz[GAP_BINS] = { 0 }, n = 0, last = 0;

	/* a loaded loop's gaps fill few bins; thresholds above the longest gap
	 * all cost what spinning costs: the first of them (which the strict <
	 * below would keep) ends the search */
	for (int i = 0; i < GAP_BINS; i++)
		if (w[i] > 0) {
			nz[n++] = i;
			last = i + 1;
		}
	for (int j = 0; j <= last && tb->t_ns[j] <= a->cap_ns; j++) {
		double cost = 0;

		if (!a->win_live) {
			for (int k = 0; k < n; k++)
				cost += w[nz[k]] * tb->cost[j][nz[k]];
		} else {
			double cost_c = 0;

			for (int k = 0; k < n; k++) {
				int i = nz[k];
				double pen = a->pen[tb->bcls[i]], past = tb->past[j][i];

				cost += w[i] * (tb->cost[j][i] + past * pen);
				cost_c += w[i] * (tb->cost_cold[j][i] +
						  (tb->bv[i] <= tb->td[j] ? pen : past * pen));
			}
			if (cost_c < best_c) {
				best_c = cost_c;
				best_tc = tb->t_ns[j];
			}
		}
		if (cost < best) {
			best = cost;
			best_t = tb->t_ns[j];
		}
	}
	if (least_w != NULL)
		*least_w = best;
	if (least_c != NULL)
		*least_c = best_c;
	if (cold_t != NULL)
		*cold_t = a->win_live ? RTE_MIN(best_tc, a->cap_ns) : RTE_MIN(best_t, a->cap_ns);
	return RTE_MIN(best_t, a->cap_ns);
}

static uint64_t
best_threshold(const struct adaptive *a, const double *w)
{
	return best_thresholds(a, w, NULL, NULL, NULL);
}

/* P(gap >= y) for one source's own gaps, from its survival table (each
 * bin's weight spread evenly over the bin, whose edges are @p t_ns; the
 * last bin is open). */
static double
surv_at(const uint64_t *t_ns, const float *sv, uint64_t y)
{
	int k = gap_bin(y);
	double lo, hi;

	if (k == GAP_BINS - 1)
		return sv[k];
	lo = (double)t_ns[k]; /* t_ns[0] is 0: bin 0 starts there */
	hi = (double)t_ns[k + 1];
	return sv[k] - (sv[k] - sv[k + 1]) * ((double)y - lo) / (hi - lo);
}

/* The superposition: the loop's gap begun at @p start, when its sources
 * are independent, lasts past x with the product over the sources of the
 * chance that each stays silent past its age + x, given that it has been
 * silent for its age (a source already past all the gaps it has shown is
 * left out: nothing is known of when it comes). Those chances, per bin of
 * the loop's gap, go through the cost table like a histogram. */
static uint64_t
sup_threshold(const struct adaptive *a, uint64_t start)
{
	const uint64_t *t_ns = a->tab->t_ns;
	const struct adaptive_sources *src = a->src;
	double p[GAP_BINS], s0[PW_SLOTS], s_prev = 1.0;
	uint64_t age[PW_SLOTS];
	uint32_t in = 0;

	for (int s = 0; s < PW_SLOTS; s++)
		if (a->sup_mask & (1u << s)) {
			age[s] = start > a->pw[s].last_ns ? start - a->pw[s].last_ns : 0;
			s0[s] = surv_at(t_ns, src->surv[s], age[s]);
			if (s0[s] > 1e-9)
				in |= 1u << s;
		}
	for (int i = 0; i < GAP_BINS - 1; i++) {
		double sx = 1.0;

		for (int s = 0; s < PW_SLOTS; s++)
			if (in & (1u << s))
				sx *= surv_at(t_ns, src->surv[s], age[s] + t_ns[i + 1]) / s0[s];
		/* what is left in a bin after rounding is dropped */
		p[i] = s_prev - sx > 1e-6 ? s_prev - sx : 0;
		s_prev = sx;
	}
	p[GAP_BINS - 1] = s_prev;
	return best_threshold(a, p);
}

/* The sources the superposition takes: @p mask when it holds two or more
 * and superpose is on, else none. */
static void
sup_set(struct adaptive *a, uint32_t mask)
{
	a->sup_mask = a->superpose && __builtin_popcount(mask) >= 2 ? mask : 0;
}

/* At an update: the survival tables of the sources' own gaps, and which
 * sources the superposition takes: those followed (a slot with an id)
 * whose own histogram holds YOUNG gaps' weight (decayed, as the contexts'),
 * and only when there are two or more. A source under that (new, or
 * quiet for long) is left out: its next arrival is not predicted, which
 * biases the superposition towards sleeping, and the rules' costs tell
 * when that matters. Then, if @p decay, age the own-gap histograms and
 * the rules' costs. */
static void
sup_learn(struct adaptive *a, bool decay)
{
	struct adaptive_sources *src = a->src;
	uint32_t mask = 0;

	/* (a loop that has named no source has no own gaps to learn or age) */
	for (int s = 0; src != NULL && s < PW_SLOTS; s++) {
		double tot = 0;

		for (int i = 0; i < GAP_BINS; i++)
			tot += src->hs[s][i];
		if (a->per_source && a->pw[s].used && a->pw[s].id != UINT32_MAX && tot >= YOUNG) {
			double acc = 0;

			src->surv[s][GAP_BINS] = 0;
			for (int i = GAP_BINS - 1; i >= 0; i--) {
				acc += src->hs[s][i];
				src->surv[s][i] = acc / tot;
			}
			mask |= 1u << s;
		}
		for (int i = 0; decay && i < GAP_BINS; i++)
			src->hs[s][i] = halve(src->hs[s][i]);
		if (decay) {
			src->rule_cost[s][0] = halve(src->rule_cost[s][0]);
			src->rule_cost[s][1] = halve(src->rule_cost[s][1]);
		}
	}
	sup_set(a, mask);
	if (a->sup_mask != 0)
		EVD_LOG(DEBUG, "policy adaptive: superposition of %d sources (slots 0x%x); %" PRIu64
			" idle gaps on its threshold so far", __builtin_popcount(a->sup_mask),
			a->sup_mask, a->sup_gaps);
}

/* The first empty round of a gap, in a loop of several sources: both rules
 * give a threshold, the context's (learned on the loop's gaps that began
 * after this source) and the superposition's (the sources' own gaps and
 * how long each has been silent). Each is charged what it would have cost
 * on the gap once it ends (adaptive_events), per source that began the
 * gap, and the one that cost less so far decides: the context's where the
 * sources depend on each other (a request, then its completion), the
 * superposition's where they do not. */
static void __attribute__((noinline, cold))
sup_choose(struct adaptive *a)
{
	uint32_t s = a->slot_ctx / GAP_CONTEXTS;

	/* While the gap's context is young its threshold is all contexts'
	 * (pooled) and often off; charged then, the context rule would carry
	 * that for thousands of gaps after it has learned (a test of two
	 * dependent sources saw the superposition kept at 362 ns where its
	 * context had learned 0). The contexts decide until theirs is their own. */
	if (!(a->ctx_own >> a->ctx & 1))
		return;
	a->gap_t[0] = a->threshold_ns;
	a->gap_t[1] = sup_threshold(a, a->last_event_ns);
	a->gap_slot = s;
	a->gap_scored = true;
	a->next_check = 0; /* adaptive_update scores both at the gap's end */
	if (a->src->rule_cost[s][1] < a->src->rule_cost[s][0]) {
		a->threshold_ns = a->gap_t[1];
		a->sup_gaps++;
	}
}

static void
guard_try_at(const struct adaptive *a, uint64_t G, struct guard_try *g)
{
	g->G = (double)G;
	g->c = fmax(evd_policy_env_timeout_ns(a->env, G), 1.0);
	g->bs = evd_policy_env_bounded_sleep_ns(a->env, G);
	/* (an environment without T: the timeout's end is not priced, as
	 * before T was measured) */
	g->cycle = g->G + (a->late_known ? evd_policy_env_timeout_late_ns(a->env, G) : 0);
	g->wakes = fmin(floor(a->lambda * priced(a, evd__wake_most(a->env)) / g->c),
			(double)a->guard_wakes);
}

/* The priced wait of an arrival the loop serves x late (a timeout's
 * lateness) at the end of a gap g, and of those that come after it
 * meanwhile, each waiting about x / 2: the first with F1, the chance that
 * the gap after one like g is under x (the histogram of the gaps that
 * followed gaps of g's class), each next one with F0, the same after a
 * gap under 4 us (a burst): F1 / (1 - F0) of them (F0 at most 0.99). A
 * burst that lands in a timeout's lateness waits whole (apt-download-2 at
 * 100x: with F at most 0.9 for both the bound at W cost 1.63 against 1.18
 * without). (Without the window's figures, none: the arrival alone.) */
static double
late_cost(const struct adaptive *a, double g, double x)
{
	int i = gap_bin((uint64_t)x);
	double f1, f0;

	if (!a->window)
		return priced(a, x);
	f1 = a->cdf[gap_context((uint64_t)g)][i];
	f0 = fmin(a->cdf[0][i], 0.99);
	return priced(a, x) * (1 + 0.5 * f1 / (1 - f0));
}

/*
 * The model's cost of a gap g (t spun, then s = g - t asleep) when the
 * sleeps are bounded at G for at most g->wakes timeouts. Each timeout
 * costs C(G) and the loop runs again T(G) after it: k whole cycles of
 * G + T(G) pass, then the arrival comes either within the next sleep
 * (B, the wake latency of a sleep r after a halt of G: cold within the
 * window after a G past it) or during the next timeout's lateness (C, it
 * waits for the loop). After the last timeout the sleep is unbounded. A
 * last halt past the window adds the pen. With no timeout (s <= G)
 * that is the cost unbounded, @p none, which the caller has already; the
 * gap began @p cold or warm (the window's state before its first sleep).
 */
static double
guard_cost(const struct adaptive *a, int i, double t, const struct guard_try *b, double none,
	   bool cold)
{
	double g = a->tab->bv[i];
	double s = g - t, k = floor(s / b->cycle), r, w = (double)a->env->window_ns;
	double B = (double)a->env->sleep_wake_ns, pen = a->window ? a->pen[a->tab->bcls[i]] : 0;
	double bs = b->bs; /* a notified sleep under the bound: its timer's CPU too */

	if (s <= b->G)
		return none + bs - B; /* no timeout, but the timer was armed */
	if (k >= b->wakes)
		k = b->wakes;
	if (b->G <= w && k < b->wakes && b->cycle > b->G) {
		/* a bound within the window: its cycle (158 us here) is shorter
		 * than the bins (a half octave: 150 us wide at 440 us), so where
		 * in a cycle the arrival lands is spread: in a sleep (G of the
		 * cycle: woken warm, L at about G / 2; before the first timeout,
		 * as the gap began, warm or cold) or in a timeout's
		 * lateness (T of it: waits about T / 2, with what follows it).
		 * Taken at the bin's middle alone, a bin landed in one or the
		 * other: apt-download-2 at 100x, bound at W where it cost 1.63
		 * against 1.18 unbounded. */
		double pl = (b->cycle - b->G) / b->cycle;
		double in_sleep = t + k * b->c + bs +
				  a->lambda * priced(a, wake_lat_after(a, b->G / 2,
								       k == 0 ? (cold ? INFINITY : 0) : b->G));

		return (1 - pl) * in_sleep +
		       pl * (t + (k + 1) * b->c + a->lambda * late_cost(a, g, (b->cycle - b->G) / 2));
	}
	r = s - k * b->cycle;
	if (k == b->wakes || r <= b->G || b->cycle <= b->G) {
		/* the last sleep, r: past W it wakes cold and leaves the window
		 * shut (the pen). The bin's gaps spread on log g, as for the
		 * unbounded cost (bin_past): its share past t + k cycles + W,
		 * not its middle's side of W alone, which made a step; after a
		 * halt of G past W it wakes cold whatever its length */
		double p = a->window && (k == b->wakes || b->G > w) ? bin_past(a, i, t + k * b->cycle) : 0;

		return t + k * b->c + (k == b->wakes ? B : bs) +
		       a->lambda * priced_wake_share(a, r, p, a->window && b->G > w) + p * pen;
	}
	return t + (k + 1) * b->c + a->lambda * late_cost(a, g, b->cycle - r) +
	       (a->window && b->G > w ? pen : 0);
}

/*
 * guard_us unset: bound the sleeps or not, as the model says. Where the
 * wake latency grows with the time asleep (L of the calibration), a sleep
 * cut short by a timeout every G trades a C per timeout for the latency
 * of a shorter sleep; where the host has a halt window, a bound within it
 * (W) keeps every wake warm, the next gap's too. A gap gets at most
 * g->wakes timeouts: a gap far longer than the histogram foretold (a
 * silence) costs at most that, not a C every G for the loop's whole
 * window. Per context, over its histogram (or all contexts', while its
 * own is young), with its threshold, for a gap that starts @p cold or
 * warm, the expected cost of each bound and of none; the least wins, and
 * *span says how long past the threshold it bounds. Gaps too short for a
 * timeout cost the same under every bound and are left out.
 */
static uint64_t
guard_pick(const struct adaptive *a, const double *w, uint64_t thr, bool cold, uint64_t *span)
{
	double cost[GUARD_TRIES + 1] = { 0 }, least, t = (double)thr;
	const struct guard_try *b[GUARD_TRIES];
	int nb = 0, best = -1;

	*span = 0;
	/* (a bound whose timeout costs more than the priced L it could save
	 * gets no timeout: left out) */
	for (int k = a->win_live ? 0 : 1; k < (int)GUARD_TRIES; k++)
		if (a->gtry_ok[k])
			b[nb++] = &a->gtry[k];
	if (nb == 0)
		return UINT64_MAX;
	/* gaps shorter than the threshold have no sleep, the same cost under
	 * every bound; those shorter than the threshold and the least bound
	 * no timeout, but where a timer's CPU was measured a sleep with one
	 * armed costs more (evd_policy_env_bounded_sleep_ns): they count too
	 * (a threshold of never leaves none) */
	if (thr >= UINT64_MAX - (uint64_t)b[0]->G)
		return UINT64_MAX;
	for (int i = a->c_known ? gap_bin(thr) : gap_bin(thr + (uint64_t)b[0]->G); i < GAP_BINS; i++) {
		double g, none;

		/* a bin halved to under 1 % of a gap weighs nothing here (the
		 * halving empties one only after about 100 halvings): not worth
		 * a wake latency's log */
		if (w[i] < 0.01 || (g = a->tab->bv[i]) <= t || (!a->c_known && g <= t + b[0]->G))
			continue;
		if (!a->window) {
			none = model_cost_at(a, g, t, cold);
		} else {
			double past;

			if (cold) {
				none = model_cost_at(a, g, t, true);
				past = bin_past(a, i, t);
			} else {
				none = bin_cost_warm(a, i, g, t, &past);
			}
			none += past * a->pen[a->tab->bcls[i]];
		}
		cost[0] += w[i] * none;
		for (int k = 0; k < nb; k++)
			cost[k + 1] += w[i] * guard_cost(a, i, t, b[k], none, cold);
	}
	least = cost[0];
	for (int k = 0; k < nb; k++)
		if (cost[k + 1] < least) {
			least = cost[k + 1];
			best = k;
		}
	if (best < 0)
		return UINT64_MAX;
	*span = (uint64_t)(b[best]->wakes * b[best]->cycle);
	return (uint64_t)b[best]->G;
}

/* With a window: per class of gap (the context of the gap after it), what
 * starting cold adds to a gap: over the class's contexts together, the
 * least expected cost of a cold start less that of a warm one, each under
 * its best threshold and priced with the last update's figures (a cold
 * start that spins through leaves the next gap cold too: the figure feeds
 * itself, and an update's lag lets it settle). */
static void
window_learn(struct adaptive *a, double cls[][GAP_BINS])
{
	double pen[GAP_CONTEXTS];

	for (int c = 0; c < GAP_CONTEXTS; c++) {
		double m = 0, warm, cold;

		for (int i = 0; i < GAP_BINS; i++) {
			m += cls[c][i];
			a->cdf[c][i] = m;
		}
		for (int i = 0; i < GAP_BINS; i++)
			a->cdf[c][i] = m > 0 ? a->cdf[c][i] / m : 0;
		pen[c] = 0;
		if (m <= 0)
			continue;
		best_thresholds(a, cls[c], NULL, &warm, &cold);
		pen[c] = fmax((cold - warm) / m, 0);
	}
	memcpy(a->pen, pen, sizeof(pen));
}

/* A context's guards (warm and, with a window, cold): its own from its
 * histogram @p w, or the pooled ones (@p w NULL). */
static void
ctx_guards(struct adaptive *a, uint32_t c, const double *w)
{
	bool own = w != NULL;

	a->ctx_guard[c] = own ? guard_pick(a, w, a->ctx_threshold[c], false,
					   &a->ctx_guard_span[c])
			      : a->pooled_guard;
	if (!own)
		a->ctx_guard_span[c] = a->pooled_guard_span;
	if (!a->win_live || !a->been_cold) { /* the cold rules are the warm ones */
		a->ctx_guard_cold[c] = a->ctx_guard[c];
		a->ctx_guard_span_cold[c] = a->ctx_guard_span[c];
		return;
	}
	a->ctx_guard_cold[c] = own ? guard_pick(a, w, a->ctx_threshold_cold[c], true,
						&a->ctx_guard_span_cold[c])
				   : a->pooled_guard_cold;
	if (!own)
		a->ctx_guard_span_cold[c] = a->pooled_guard_span_cold;
}

/* guard_us=N within the host's halt window: whether the bound pays in a
 * context (@p w, its histogram; @p t, its threshold). Such a bound is for
 * latency (it keeps the wakes warm); a longer one is also a backstop (a
 * wake the platform loses costs at most N: troubleshooting.md) and always
 * applies. Every sleep then arms a timer N away, which costs
 * C(N) - B more CPU than a sleep bounded only by max_sleep_us (where C was
 * measured: on this VM 12 us, and more in a forwarder: guard_us=100 at
 * 50k/s spent 69 against 37 % CPU at the same p99). What it buys is in the
 * sleeps it cuts short, those in gaps longer than t + N: each wakes at
 * L(N) instead of the longest sleep's L or the cold wake (wake_most),
 * priced. Where the sleeps it cuts short are too few to pay for the
 * timers of all the sleeps (at Poisson 50k/s, 0.7 % of them outlast
 * 100 us), the bound stays off; with no C measured it costs nothing and
 * stays on, as before. */
static bool
guard_reach(const struct adaptive *a, const double *w, uint64_t t)
{
	double tot = 0, sleeps = 0, cut = 0, edge, cost, save;

	if (t == UINT64_MAX) /* it never sleeps */
		return false;
	cost = evd_policy_env_bounded_sleep_ns(a->env, a->guard_ns) - (double)a->env->sleep_wake_ns;
	edge = (double)t + (double)a->guard_ns;
	for (int i = 0; i < GAP_BINS; i++) {
		tot += w[i];
		sleeps += a->tab->bv[i] > (double)t ? w[i] : 0;
		cut += a->tab->bv[i] > edge ? w[i] : 0;
	}
	if (tot <= 0 || cost <= 0) /* nothing learned yet, or a timer that costs nothing */
		return true;
	save = a->lambda * priced(a, evd__wake_most(a->env) - wake_lat(a, a->guard_ns));
	return cut > 0 && cut * save >= sleeps * cost;
}

/* Per context, from its own histogram once it has enough weight, else from
 * all contexts together. Then, if @p decay, age the histograms (halving
 * every 4096 gaps is the decay). */
static void
learn_threshold(struct adaptive *a, bool decay)
{
	double all[GAP_BINS] = { 0 }, n[CONTEXTS] = { 0 }, cls[GAP_CONTEXTS][GAP_BINS] = { { 0 } };

	for (uint32_t c = 0; c < a->n_ctx_used; c++)
		for (int i = 0; i < GAP_BINS; i++) {
			all[i] += a->w[c][i];
			cls[c % GAP_CONTEXTS][i] += a->w[c][i];
			n[c] += a->w[c][i];
		}
	/* (with a window, on the last update's prices of a cold start: they
	 * come from thresholds, which come from them) */
	/* the window matters where 1 % or more of the gaps of 4 us or more
	 * (those a rule might sleep in) outlast it: else (a loaded loop; the
	 * halving changes no bin's share) none of its sums, the cold rules the
	 * warm ones (callgrind, the saturated ring: 59.8 instructions per
	 * event with them all, against 55.8 before the window). Counted
	 * against every gap, a burst's sub-4 us gaps hid the few long ones
	 * that shut the window before the sleeps that pay for it:
	 * apt-download-2 at 100x, 5 of 2,178 gaps past W, 5 of 100 over 4 us,
	 * scored 1.236 with the window ignored, 1.185 weighed */
	a->win_live = false;
	if (a->window) {
		double tot = 0, lng = 0;

		for (int i = 0; i < GAP_BINS; i++) {
			tot += a->tab->bv[i] >= 4000 ? all[i] : 0;
			lng += a->tab->bv[i] > (double)a->env->window_ns ? all[i] : 0;
		}
		a->win_live = lng > 0.01 * tot;
	}
	if (!a->win_live)
		memset(a->pen, 0, sizeof(a->pen));
	a->pooled_ns = best_thresholds(a, all, &a->pooled_cold_ns, NULL, NULL);
	if (a->win_live)
		window_learn(a, cls);
	/* every young context's, and a new source's (pw_slot_of) */
	if (a->guard_auto) {
		a->pooled_guard = guard_pick(a, all, a->pooled_ns, false, &a->pooled_guard_span);
		a->pooled_guard_cold = a->pooled_guard;
		a->pooled_guard_span_cold = a->pooled_guard_span;
		if (a->win_live && a->been_cold)
			a->pooled_guard_cold = guard_pick(a, all, a->pooled_cold_ns, true,
							  &a->pooled_guard_span_cold);
	}
	for (uint32_t c = 0; c < a->n_ctx_used; c++) {
		bool own = n[c] >= YOUNG;
		double wc[GAP_BINS]; /* the sums are in double, the histograms float */

		for (int i = 0; i < GAP_BINS; i++)
			wc[i] = a->w[c][i];
		if (own) {
			a->ctx_threshold[c] = best_thresholds(a, wc, &a->ctx_threshold_cold[c],
							      NULL, NULL);
		} else {
			a->ctx_threshold[c] = a->pooled_ns;
			a->ctx_threshold_cold[c] = a->pooled_cold_ns;
		}
		a->ctx_own = own ? a->ctx_own | 1u << c : a->ctx_own & ~(1u << c);
		if (a->guard_auto) {
			ctx_guards(a, c, own ? wc : NULL);
		} else if (a->guard_ns <= a->env->window_ns) {
			bool reach = own ? guard_reach(a, wc, a->ctx_threshold[c])
					 : guard_reach(a, all, a->pooled_ns);

			a->guard_off = reach ? a->guard_off & ~(1u << c) : a->guard_off | 1u << c;
		}
		for (int i = 0; decay && i < GAP_BINS; i++)
			a->w[c][i] = halve(a->w[c][i]);
	}
	sup_learn(a, decay);
	if (a->window)
		EVD_LOG(DEBUG, "policy adaptive: host window: a cold start costs %.0f %.0f %.0f %.0f ns "
			"more; cold thresholds %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 " ns; bounds "
			"warm %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 ", cold %" PRIu64 " %" PRIu64
			" %" PRIu64 " %" PRIu64 " ns (per context, slot 0; %" PRIu64 ": none)",
			a->pen[0], a->pen[1], a->pen[2], a->pen[3], a->ctx_threshold_cold[0],
			a->ctx_threshold_cold[1], a->ctx_threshold_cold[2], a->ctx_threshold_cold[3],
			a->ctx_guard[0], a->ctx_guard[1], a->ctx_guard[2], a->ctx_guard[3],
			a->ctx_guard_cold[0], a->ctx_guard_cold[1], a->ctx_guard_cold[2],
			a->ctx_guard_cold[3], UINT64_MAX);
	EVD_LOG(DEBUG, "policy adaptive: %" PRIu64 " gaps; spin thresholds per context "
		"(previous gap < 4 us, < 64 us, < 1 ms, longer; slot 0): %" PRId64 " %" PRId64 " %" PRId64
		" %" PRId64 " ns (-1: never sleep)", a->samples,
		a->ctx_threshold[0] == UINT64_MAX ? -1 : (int64_t)a->ctx_threshold[0],
		a->ctx_threshold[1] == UINT64_MAX ? -1 : (int64_t)a->ctx_threshold[1],
		a->ctx_threshold[2] == UINT64_MAX ? -1 : (int64_t)a->ctx_threshold[2],
		a->ctx_threshold[3] == UINT64_MAX ? -1 : (int64_t)a->ctx_threshold[3]);
}

/* The nap the budget leaves room for once a nap's lateness is paid: 0 when
 * that is not over 2 B (spinning through a nap of B costs no more than it). */
static void
nap_length(struct adaptive *a)
{
	double s = a->lat_budget_ns - a->nap_late_ns;

	a->nap_ns = s > 2.0 * (double)a->env->sleep_wake_ns ? (uint64_t)s : 0;
}

/* A key the rule chosen (learn=0 or 1) does not use, given anyway: refused
 * with the reason, not ignored. */
static int
unused_key(const struct evd_policy_param *p, unsigned int n, bool learn)
{
	/* (guard_us and guard_for_us bound the sleeps of both) */
	static const char *const learned[] = { "budget_us", "nap", "lambda_pct", "prewake",
					       "superpose" };
	static const char *const fixed[] = { "spin_pct", "pause_ns" };

	for (unsigned int i = 0; i < n; i++) {
		const char *const *set = learn ? fixed : learned;
		size_t k, len = learn ? RTE_DIM(fixed) : RTE_DIM(learned);

		for (k = 0; k < len && strcmp(p[i].key, set[k]) != 0; k++)
			;
		if (k == len)
			continue;
		if (learn)
			EVD_LOG(ERR, "policy adaptive: %s shapes the fixed rule (learn=0); the "
				"learned one does not use it", p[i].key);
		else
			EVD_LOG(ERR, "policy adaptive: %s shapes the learned rule, which learn=0 "
				"does not use (it spins for spin_max_us, or B)", p[i].key);
		return -EINVAL;
	}
	return 0;
}

static void
adaptive_destroy(void *st)
{
	struct adaptive *a = st;

	if (a == NULL)
		return;
	free(a->w);
	free(a->cdf);
	free(a->src);
	free(a->own_tab);
	free(a);
}

static int
adaptive_create(const struct evd_policy_param *p, unsigned int n, const struct evd_policy_env *env,
		void **state)
{
	uint64_t budget_us = 0, spin_max_us = UINT64_MAX, spin_pct = 50, pause_ns = 1000,
		 lambda_pct = 100, learn = 1, prewake = 1, guard_us = GUARD_AUTO, nap = 1,
		 superpose = 1, guard_for_us = UINT64_MAX;
	const struct evd__policy_key keys[] = {
		{ "budget_us", 0, 1000000, &budget_us },
		{ "spin_max_us", 0, 1000000, &spin_max_us },
		{ "nap", 0, 1, &nap },
		{ "spin_pct", 0, 100, &spin_pct },
		{ "pause_ns", 1, 1000000, &pause_ns },
		{ "lambda_pct", 0, 1000000, &lambda_pct },
		{ "learn", 0, 1, &learn },
		{ "prewake", 0, 1, &prewake },
		{ "guard_us", 0, 1000000, &guard_us },
		{ "guard_for_us", 1, 1000000, &guard_for_us },
		{ "superpose", 0, 1, &superpose },
	};
	struct adaptive *a;
	int rc = evd__policy_parse_keys("adaptive", p, n, keys, RTE_DIM(keys));

	if (rc == 0)
		rc = unused_key(p, n, learn != 0);
	if (rc < 0)
		return rc;
	if (guard_for_us != UINT64_MAX && (guard_us == GUARD_AUTO || guard_us == 0)) {
		EVD_LOG(ERR, "policy adaptive: guard_for_us bounds the sleeps guard_us=N bounds; "
			"without guard_us (the model's guard) or with guard_us=0 it has none");
		return -EINVAL;
	}
	a = calloc(1, sizeof(*a));
	if (a == NULL)
		return -ENOMEM;
	a->env = env;
	a->window = env->window_ns != 0 && env->cold_wake_ns != 0;
	a->late_known = evd__timeout_late_known(env);
	a->c_known = evd__timeout_cpu_known(env);
	for (int k = 0; k < EVD_ENV_WAKE_POINTS; k++)
		a->log_at[k] = log((double)env->wake_at_ns[k]);
	a->learn = learn != 0;
	a->prewake = prewake != 0;
	a->superpose = superpose != 0;
	a->pw[0].used = true;
	a->pw[0].id = UINT32_MAX; /* the loop, until a source is named */
	a->lambda = (double)lambda_pct / 100.0;
	a->cap_ns = spin_max_us != UINT64_MAX ? spin_max_us * 1000 : UINT64_MAX;
	a->lat_budget_ns = (double)budget_us * 1000;
	a->tab = tables_get(a, &a->own_tab); /* (the environment and prices set above) */
	a->w = calloc(GAP_CONTEXTS, sizeof(*a->w)); /* slot 0's: the loop as its one source */
	if (a->window)
		a->cdf = calloc(GAP_CONTEXTS, sizeof(*a->cdf));
	if (a->tab == NULL || a->w == NULL || (a->window && a->cdf == NULL)) {
		adaptive_destroy(a);
		return -ENOMEM;
	}
	/* as pre-wake and the guard: latency priced (lambda_pct=0: none is) */
	a->lock_in_pays = a->lambda * priced(a, evd_policy_env_wake_ns(env, env->sleep_wake_ns)) > 0;
	/* bounded: a given environment may hold any B and L, lambda_pct goes to 10^6 */
	a->young_buy_ns = (uint64_t)fmin((double)env->sleep_wake_ns +
					 a->lambda * priced(a, (double)env->wake_ns[0]), 1e12);
	if (nap && a->learn && budget_us != 0) {
		/* until naps tell how late they end, the eventfd's L */
		a->nap_late_ns = evd_policy_env_wake_ns(env, budget_us * 1000);
		nap_length(a);
		if (a->nap_ns == 0)
			EVD_LOG(INFO, "policy adaptive: budget_us=%" PRIu64 " leaves no room for naps "
				"(budget - L %.1f us, not over 2 B = %.1f us)", budget_us,
				(a->lat_budget_ns - a->nap_late_ns) / 1e3,
				2.0 * (double)env->sleep_wake_ns / 1e3);
	}
	a->guard_wakes = (uint32_t)fmin(a->lambda * priced(a, evd__wake_most(env)) /
					 fmax((double)env->sleep_wake_ns, 1.0), 1000.0);
	a->guard_auto = guard_us == GUARD_AUTO && a->learn && a->guard_wakes > 0;
	for (int k = 0; k < (int)GUARD_TRIES; k++) {
		guard_try_at(a, k == 0 ? env->window_ns : guard_try_ns[k - 1], &a->gtry[k]);
		a->gtry_ok[k] = a->gtry[k].wakes >= 1 && (k > 0 || a->window);
	}
	for (int c = 0; c < CONTEXTS; c++)
		a->ctx_guard[c] = a->ctx_guard_cold[c] = UINT64_MAX; /* none until the first update */
	a->pooled_guard = a->pooled_guard_cold = UINT64_MAX;
	a->guard_ns = guard_us != 0 && guard_us != GUARD_AUTO ? guard_us * 1000 : UINT64_MAX;
	a->guard_for_ns = guard_for_us != UINT64_MAX ? guard_for_us * 1000 : GUARD_WINDOW_NS;
	a->budget_ns = spin_max_us != UINT64_MAX ? spin_max_us * 1000 : env->sleep_wake_ns;
	a->spin_ns = a->budget_ns * spin_pct / 100;
	a->pause_ns = pause_ns;
	a->rnd = 0x9e3779b97f4a7c15ull;
	a->idle_left = LEARN_EARLY;
	a->next_decay = DECAY_EVERY;
	a->next_check = 0; /* young: adaptive_update at every gap until YOUNG */
	a->last_event_ns = UINT64_MAX;
	a->last_gap_ns = UINT64_MAX;
	a->n_ctx_used = GAP_CONTEXTS; /* slot 0: the loop as its one source */
	young_threshold(a);
	EVD_LOG(DEBUG, "policy adaptive: %s, B %" PRIu64 " ns, lambda %.2f, cap %" PRIu64 " ns, "
		"latency budget %.0f ns, nap %" PRIu64 " ns", a->learn ? "learning" : "fixed budget",
		env->sleep_wake_ns, a->lambda, a->cap_ns, a->lat_budget_ns, a->nap_ns);
	*state = a;
	return 0;
}

/* The bound on a sleep (UINT64_MAX: none): guard_ns while the last
 * completion is less than guard_for_ns old (GUARD_WINDOW_NS unless given),
 * in a context the bound reaches (guard_reach). */
static inline uint64_t
guard(const struct adaptive *a, const struct evd_policy_input *in)
{
	uint64_t g;

	if (!a->guard_auto)
		return in->idle_ns < a->guard_for_ns && !(a->guard_off >> a->ctx & 1u) ? a->guard_ns
										      : UINT64_MAX;
	g = a->cold_gap ? a->ctx_guard_cold[a->ctx] : a->ctx_guard[a->ctx];
	/* the threshold, then the bound's timeouts, each a cycle of G + T(G) */
	return g != UINT64_MAX &&
			       in->idle_ns < a->threshold_ns + (a->cold_gap ? a->ctx_guard_span_cold[a->ctx]
									    : a->ctx_guard_span[a->ctx])
		       ? g
		       : UINT64_MAX;
}

/* A sleep's *arg: the guard's bound, or 0 (unbounded: the loop's max_sleep_us). */
static inline uint64_t
sleep_arg(const struct adaptive *a, const struct evd_policy_input *in)
{
	uint64_t g = guard(a, in);

	return g == UINT64_MAX ? 0 : g;
}

static enum evd_action
adaptive_decide(void *st, const struct evd_policy_input *in, uint64_t *arg)
{
	struct adaptive *a = st;

	/* the first empty round of a gap: an idle gap (adaptive_events) */
	if (in->idle_rounds == 1 && a->idle_left != 0 && --a->idle_left == 0)
		a->next_check = 0;
	if (!a->learn) {
		if (in->idle_ns < a->spin_ns)
			return EVD_ACTION_POLL;
		if (in->idle_ns < a->budget_ns) {
			*arg = a->pause_ns;
			return EVD_ACTION_PAUSE;
		}
		*arg = sleep_arg(a, in); /* guard_us=N bounds these sleeps too */
		return EVD_ACTION_SLEEP;
	}
	if (in->idle_rounds == 1) {
		/* a gap that begins with the host's window shut: its own rules
		 * (a young context's are the pooled ones) */
		a->cold_gap = a->cold;
		if (a->cold_gap)
			a->threshold_ns = a->ctx_threshold_cold[a->ctx];
	}
	if (a->nap_ns != 0) {
		/* the first empty round after completions: the arrival rate,
		 * the completions a round found over the gap before it, each
		 * averaged over the idle gaps (1/8 each; a ratio of averages,
		 * since the mean of 1/gap is dominated by the short ones); nap
		 * where it promises two arrivals a nap or more (one is no better
		 * than a sleep, and waits longer) */
		if (in->idle_rounds == 1) {
			if (a->last_gap_ns == UINT64_MAX) {
				/* no gap yet */
			} else if (a->nap_burst == 0) { /* the first: as it is */
				a->nap_gap = (double)a->last_gap_ns;
				a->nap_burst = in->last_burst;
			} else {
				a->nap_gap += ((double)a->last_gap_ns - a->nap_gap) / 8;
				a->nap_burst += ((double)in->last_burst - a->nap_burst) / 8;
			}
			if (a->nap_burst > 0 && a->nap_burst * (double)a->nap_ns >= 2.0 * a->nap_gap) {
				a->napping = true;
				*arg = a->nap_ns;
				a->asked_ns = *arg;
				return EVD_ACTION_NAP;
			}
		}
	}
	a->napping = false;
	if (in->idle_rounds == 1 && a->sup_mask != 0)
		sup_choose(a);
	if (in->idle_ns < a->threshold_ns ||
	    (a->lock_in && a->lock_in_pays && in->idle_ns < a->env->sleep_wake_ns))
		return EVD_ACTION_POLL;
	if (a->pw_active != 0) {
		uint64_t wake = UINT64_MAX;

		for (int i = 0; i < PW_SLOTS; i++) {
			const struct pw_slot *sl = &a->pw[i];

			if (sl->wake_at == 0 || in->now_ns >= sl->end_at)
				continue;
			if (in->now_ns >= sl->wake_at)
				return EVD_ACTION_POLL; /* the window around its expected arrival */
			wake = RTE_MIN(wake, sl->wake_at);
		}
		if (wake != UINT64_MAX) {
			*arg = RTE_MIN(wake - in->now_ns, guard(a, in));
			a->asked_ns = *arg;
			return EVD_ACTION_SLEEP;
		}
	}
	*arg = sleep_arg(a, in);
	a->asked_ns = *arg;
	return EVD_ACTION_SLEEP;
}

/* A long gap g of one source, ending now: is the source periodic, and does
 * waking before its next arrival pay? Sets the slot's window (or clears it). */
static void
prewake_learn(struct adaptive *a, struct pw_slot *sl, uint64_t now, uint64_t g)
{
	double d = fabs((double)g - sl->mean);
	bool was = sl->wake_at != 0;

	sl->wake_at = 0;
	if (sl->run == 0 || d > PW_CV * sl->mean) { /* (re)start the run here */
		sl->run = 1;
		sl->mean = (double)g;
		sl->dev = 0;
	} else {
		sl->mean += ((double)g - sl->mean) / 8;
		sl->dev += (d - sl->dev) / 8;
		if (sl->run < PW_RUN)
			sl->run++;
	}
	if (sl->run >= PW_RUN) {
		/* what it saves, the wake, and how early it must wake, its
		 * timer's as late: cold past the window, both (priced cold on
		 * one side only, pre-wake paid at lambda 1 wherever Lc was over
		 * L(mean) by 3 deviations: test_adaptive_prewake on a machine
		 * that measured Lc over L(10 ms)) */
		double lat = wake_lat_after(a, sl->mean, 0);
		double margin = 3 * sl->dev + lat;

		if (margin < a->lambda * priced(a, lat) && sl->mean - margin > (double)a->threshold_ns &&
		    sl->mean - margin > (double)a->env->sleep_wake_ns) {
			sl->wake_at = now + (uint64_t)(sl->mean - margin);
			sl->end_at = now + (uint64_t)(sl->mean + 3 * sl->dev + margin);
		}
	}
	a->pw_active += (sl->wake_at != 0) - was;
}

/* Rows in w for the contexts of @p slot, a slot not yet used: slots are
 * taken in order, so they are the next GAP_CONTEXTS rows. False: no memory. */
static bool
w_room(struct adaptive *a, uint32_t slot)
{
	uint32_t rows = GAP_CONTEXTS * (slot + 1);
	float (*w)[GAP_BINS];

	if (rows <= a->n_ctx_used)
		return true;
	w = realloc(a->w, rows * sizeof(*w));
	if (w == NULL)
		return false;
	a->w = w;
	return true;
}

/* The slot of a source: its own, or a free one, or the least recent (whose
 * pre-wake and gap histograms start again); NULL where a free one has no
 * memory for its histograms and no other can be taken. */
static struct pw_slot *
pw_slot_of(struct adaptive *a, uint32_t id)
{
	struct pw_slot *oldest = NULL;
	uint32_t c0, slot, running = (uint32_t)a->ctx / GAP_CONTEXTS;

	for (int i = 0; i < PW_SLOTS; i++) {
		struct pw_slot *sl = &a->pw[i];

		if (sl->used && sl->id == id)
			return sl;
		/* never the slot whose source began the gap now ending: its
		 * sample is learned in that slot's contexts (adaptive_events,
		 * after this), and would land in a newcomer's. It is the most
		 * recent source, but sources served in one round tie, and the
		 * first of a tie went: a ninth source in a busy round took it */
		if (sl->used && (uint32_t)i == running)
			continue;
		if (oldest == NULL || (oldest->used && (!sl->used || sl->last_ns < oldest->last_ns)))
			oldest = sl; /* the first free slot, else the least recent */
	}
	if (!oldest->used && !w_room(a, (uint32_t)(oldest - a->pw))) {
		/* no memory for a new slot: the least recent goes, as when all are used */
		oldest = NULL;
		for (int i = 0; i < PW_SLOTS; i++) {
			struct pw_slot *sl = &a->pw[i];

			if (sl->used && (uint32_t)i != running &&
			    (oldest == NULL || sl->last_ns < oldest->last_ns))
				oldest = sl;
		}
		if (oldest == NULL)
			return NULL;
	}
	a->pw_active -= oldest->wake_at != 0;
	memset(oldest, 0, sizeof(*oldest));
	oldest->used = true;
	oldest->id = id;
	slot = (uint32_t)(oldest - a->pw);
	memset(a->src->hs[slot], 0, sizeof(a->src->hs[slot]));
	a->src->rule_cost[slot][0] = a->src->rule_cost[slot][1] = 0;
	sup_set(a, a->sup_mask & ~(1u << slot)); /* no longer a source it knows */
	if (a->gap_scored && a->gap_slot == slot)
		a->gap_scored = false; /* the gap its old source began: nobody's now */
	c0 = GAP_CONTEXTS * slot;
	memset(a->w[c0], 0, GAP_CONTEXTS * sizeof(a->w[0]));
	for (uint32_t c = c0; c < c0 + GAP_CONTEXTS; c++) {
		a->ctx_threshold[c] = a->pooled_ns; /* young: what all sources teach */
		a->ctx_threshold_cold[c] = a->pooled_cold_ns;
		if (a->guard_auto)
			ctx_guards(a, c, NULL); /* (not the bounds its old source taught) */
		a->ctx_own &= ~(1u << c);
	}
	a->n_ctx_used = RTE_MAX(a->n_ctx_used, c0 + GAP_CONTEXTS);
	return oldest;
}

/* For tests/test_policy_slots.c (internal): the weight adaptive's gap
 * histograms hold for source @p id (its slot's contexts); -ENOENT: no slot
 * holds it; -EINVAL: not adaptive. */
int
evd__adaptive_source_weight(const struct evd_policy *p, uint32_t id, double *w)
{
	const struct adaptive *a;

	if (p == NULL || strcmp(p->ops->name, "adaptive") != 0)
		return -EINVAL;
	a = p->state;
	for (int i = 0; i < PW_SLOTS; i++)
		if (a->pw[i].used && a->pw[i].id == id) {
			*w = 0;
			for (int c = i * GAP_CONTEXTS; c < (i + 1) * GAP_CONTEXTS; c++)
				for (int b = 0; b < GAP_BINS; b++)
					*w += a->w[c][b];
			return 0;
		}
	return -ENOENT;
}

/* A nap ended: how late (its timer's wake, this machine's and this load's)?
 * The 90th percentile, tracked by steps of NAP_STEP_NS (up 9 when later,
 * down 1 when sooner), sets the nap's length: the budget less it. A nap
 * that ended before its length was cut short (a loop timer, the loop's
 * sleep bound): no sample. When it leaves no room naps stop; every policy
 * update (64 or 256 idle gaps) they are tried again with the shortest nap
 * allowed, so one bad stretch does not end them for good. */
static void
adaptive_wake(void *st, uint64_t now, uint64_t slept, enum evd_wake_reason why)
{
	struct adaptive *a = st;

	RTE_SET_USED(now);
	/* the host's window: shut by a halt past it, open again after one
	 * within it (a wake that found work at once, slept 0, halted not). A
	 * timeout halted for the bound it was given, or less where the loop
	 * cut the wait short (slept adds its lateness); a notified sleep for
	 * slept less its wake latency: the cold wake where the window was
	 * shut, L at W where it was open */
	if (a->window && slept != 0) {
		double w = (double)a->env->window_ns, late = wake_lat_after(a, w, a->cold ? INFINITY : 0);

		a->cold = why == EVD_WAKE_TIMEOUT && a->asked_ns != 0
				  ? RTE_MIN(a->asked_ns, slept) > a->env->window_ns
				  : (double)slept - late > w;
		a->been_cold |= a->cold;
	}
	if (!a->napping || why != EVD_WAKE_TIMEOUT || a->nap_ns == 0 || slept < a->nap_ns)
		return;
	a->nap_late_ns += (double)(slept - a->nap_ns) > a->nap_late_ns ? 9 * NAP_STEP_NS
									 : -NAP_STEP_NS;
	if (a->nap_late_ns < 0)
		a->nap_late_ns = 0;
	nap_length(a);
	if (a->nap_ns == 0) {
		rte_log(a->naps_late ? RTE_LOG_DEBUG : RTE_LOG_NOTICE, evd__logtype,
			"EVD: policy adaptive: naps end %.1f us late (90th percentile): the latency "
			"budget %.1f us leaves no room for them, naps off (tried again at the next "
			"update)\n", a->nap_late_ns / 1e3, a->lat_budget_ns / 1e3);
		a->naps_late = true;
	}
}

/* Naps stopped by lateness: try again with the shortest nap allowed (3 B),
 * or the budget where that is less (no room then for lateness: the probe's) */
static void
naps_retry(struct adaptive *a)
{
	if (a->naps_late && a->nap_ns == 0) {
		a->nap_late_ns = fmax(0, a->lat_budget_ns - 3.0 * (double)a->env->sleep_wake_ns);
		nap_length(a);
	}
}

/* One source had completions at now (loops of several sources). */
static void
prewake_source(struct adaptive *a, struct pw_slot *sl, uint64_t now)
{
	if (sl->last_ns != 0 && now > sl->last_ns && now - sl->last_ns >= PW_MIN_NS)
		prewake_learn(a, sl, now, now - sl->last_ns);
	else if (sl->wake_at != 0 && now >= sl->wake_at) { /* it came: the window is done */
		sl->wake_at = 0;
		a->pw_active--;
	}
	sl->last_ns = now;
}

/* The loop named its first source: the state of several sources, once.
 * False: no memory (logged; the loop's gaps are then learned as one
 * source's, as before it named one). */
static bool __attribute__((noinline, cold))
sources_start(struct adaptive *a)
{
	if (a->alone)
		return false;
	a->src = calloc(1, sizeof(*a->src));
	if (a->src == NULL) {
		a->alone = true;
		EVD_LOG(WARNING, "policy adaptive: no memory to follow the loop's sources: their "
			"gaps are learned as one source's");
		return false;
	}
	return true;
}

static void
adaptive_source_events(void *st, uint64_t now, uint32_t id, uint32_t n)
{
	struct adaptive *a = st;
	struct pw_slot *sl;

	RTE_SET_USED(n);
	if (!a->learn || (unlikely(a->src == NULL) && !sources_start(a)))
		return;
	a->per_source = true;
	sl = pw_slot_of(a, id);
	if (sl == NULL)
		return; /* no memory for its histograms: not followed */
	if (sl->last_ns != 0 && now >= sl->last_ns) { /* its own gap (superposition) */
		uint32_t s = (uint32_t)(sl - a->pw);

		a->src->hs[s][gap_bin(now - sl->last_ns)] += 1.0;
	}
	/* the gap that ends at the next completion is learned in this
	 * source's contexts (a round that served several: the last one) */
	a->slot_ctx = GAP_CONTEXTS * (uint32_t)(sl - a->pw);
	if (a->prewake)
		prewake_source(a, sl, now);
	else
		sl->last_ns = now;
}

/* Young (under 32 gaps): a new randomised threshold for every gap. Then
 * learn at 32 gaps and every 64 idle gaps (counted from the first gap)
 * until the first decay, every 256 after (idle gaps: those in which the
 * loop had to decide; the threshold matters only there, and a saturated
 * loop, which has none, pays nothing; adaptive_decide counts them and
 * brings next_check forward), halving the histograms every 4096 gaps (the
 * decay). Every 4096 gaps alone was the first schedule: short captures
 * then ran on what 32 gaps had taught (reddit x100: ratio 1.53, then 1.45
 * with 256). 64 early, with the young price above: apt-download x100
 * 1.343 -> 1.161 (bench/results/score.md); later updates stay at 256:
 * each is sums over every context's histogram. */
static void __attribute__((noinline))
adaptive_update(struct adaptive *a)
{
	bool decay;

	if (a->gap_scored) {
		/* A gap sup_choose saw begin has ended (last_gap_ns): charge
		 * both rules; here, not in adaptive_events, which a saturated
		 * loop runs at every round. In a real loop a gap that ended in
		 * a wake is measured long by the wake latency (here as in the
		 * histograms): the rule that did not sleep is then charged a
		 * sleep for some gaps it would have spun through. The model
		 * (--score) starts the next gap at the arrival: no such lean. */
		double g = (double)a->last_gap_ns;

		a->src->rule_cost[a->gap_slot][0] += model_cost(a, g, (double)a->gap_t[0]);
		a->src->rule_cost[a->gap_slot][1] += model_cost(a, g, (double)a->gap_t[1]);
		a->gap_scored = false;
		if (a->samples >= YOUNG && a->idle_left != 0 && a->samples < a->next_decay) {
			a->next_check = a->next_decay; /* nothing else is due */
			return;
		}
	}
	if (a->samples < YOUNG) {
		young_threshold(a);
		a->next_check = a->samples + 1; /* YOUNG at the start: every gap until then */
		for (int c = 0; c < CONTEXTS; c++)
			a->ctx_threshold[c] = a->ctx_threshold_cold[c] = a->threshold_ns;
		return;
	}
	decay = a->samples >= a->next_decay;
	if (decay)
		a->next_decay += DECAY_EVERY;
	if (a->idle_left == 0)
		a->idle_left = a->samples < DECAY_EVERY ? LEARN_EARLY : LEARN_EVERY;
	learn_threshold(a, decay);
	naps_retry(a);
	a->next_check = a->next_decay;
}

/* adaptive_events' rare part, out of line (its tail call): a long gap the
 * loop's pre-wake learns from (g: 0 for none), then the update if one is
 * due, then the threshold of the gap's context again. */
static void __attribute__((noinline))
events_rare(struct adaptive *a, uint64_t now, uint64_t g)
{
	/* the loop as its one source: its long gaps are the source's */
	if (g >= PW_MIN_NS && a->prewake && !a->per_source)
		prewake_learn(a, &a->pw[0], now, g);
	if (a->samples >= a->next_check)
		adaptive_update(a);
	a->threshold_ns = a->ctx_threshold[a->ctx];
}

/* A round found completions: the idle gap before it is one sample. A round
 * that found a burst (more than one) means work queued while the loop was
 * busy: a sleep now would cost every queued completion its wake latency and
 * the producers their doorbells, so the loop locks in and spins at least B
 * (the ski-rental rule) before sleeping. */
static void
adaptive_events(void *st, uint64_t now, uint32_t n)
{
	struct adaptive *a = st;
	uint64_t last = a->last_event_ns, g = 0;

	if (!a->learn)
		return;
	a->lock_in = n > 1;
	a->last_event_ns = now;
	if (likely(now >= last)) { /* UINT64_MAX before the first */
		g = now - last;
		a->last_gap_ns = g;
		a->w[a->ctx][gap_bin(g)] += 1.0;
		a->samples++;
		a->ctx = gap_context(g) + (int)a->slot_ctx;
	}
	a->threshold_ns = a->ctx_threshold[a->ctx];
	/* the rare part (young thresholds, learning) out of line, and as a
	 * tail call, so the common path saves no registers (callgrind, the
	 * saturated ring: 55.41 instructions per event against 55.69 with
	 * the calls in line; poll 53.05) */
	if (unlikely(g >= PW_MIN_NS || a->samples >= a->next_check))
		events_rare(a, now, g);
}

/* Telemetry: what adaptive learned (read from another thread: a torn
 * value is possible and harmless, it is a report). */
static void
adaptive_describe(const void *st, char *buf, size_t len)
{
	const struct adaptive *a = st;
	uint64_t t[GAP_CONTEXTS], samples = __atomic_load_n(&a->samples, __ATOMIC_RELAXED);
	uint32_t pw = __atomic_load_n(&a->pw_active, __ATOMIC_RELAXED);
	uint32_t c0 = __atomic_load_n(&a->slot_ctx, __ATOMIC_RELAXED);

	if (!a->learn) {
		snprintf(buf, len, "fixed spin_budget_ns=%" PRIu64 " spin_ns=%" PRIu64, a->budget_ns,
			 a->spin_ns);
		return;
	}
	/* the contexts of the source served last (of the loop: one source) */
	for (int c = 0; c < GAP_CONTEXTS; c++)
		t[c] = __atomic_load_n(&a->ctx_threshold[c0 + c], __ATOMIC_RELAXED);
	if (samples < YOUNG) {
		snprintf(buf, len, "young gaps=%" PRIu64 " B_ns=%" PRIu64, samples,
			 a->env->sleep_wake_ns);
		return;
	}
#define T(x) ((x) == UINT64_MAX ? -1 : (int64_t)(x))
	snprintf(buf, len, "gaps=%" PRIu64 " spin_ns=%" PRId64 ",%" PRId64 ",%" PRId64 ",%" PRId64
		 " prewake_sources=%" PRIu32 " nap_ns=%" PRIu64 " B_ns=%" PRIu64, samples, T(t[0]),
		 T(t[1]), T(t[2]), T(t[3]), pw, a->nap_ns, a->env->sleep_wake_ns);
#undef T
}

const struct evd_policy_ops evd__adaptive_policy = {
	.name = "adaptive",
	.create = adaptive_create,
	.destroy = adaptive_destroy,
	.decide = adaptive_decide,
	.on_events = adaptive_events,
	.on_wake = adaptive_wake,
	.needs_env = 1,
	.describe = adaptive_describe,
	.on_source_events = adaptive_source_events,
};
