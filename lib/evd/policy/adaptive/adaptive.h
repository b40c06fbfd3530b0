/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The adaptive policy's state and the calls between its files, one file per
 * mechanism (ops.c has the ops table; doc/guides/policies.md the model).
 * Calls go down, never up: ops.c; then decide.c, sources.c, learn.c; then
 * window.c, guard.c, superpose.c, nap.c, pace.c; then model.c.
 */
#ifndef EVD_POLICY_ADAPTIVE_H
#define EVD_POLICY_ADAPTIVE_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>

#include <rte_common.h>

#include "evd_costs_private.h"
#include "evd_private.h"

/* The gap histograms: two bins per octave from 256 ns, one set per context. */
#define GAP_BINS 48
#define GAP_CONTEXTS 4 /* the previous gap: < 4 us, < 64 us, < 1 ms, longer */
#define SLOTS 8        /* sources followed one by one; more share the least recent slot */
#define CONTEXTS (GAP_CONTEXTS * SLOTS) /* x the source that ended the gap */

/* When the histograms are learned (learn.c; the scores that set the
 * schedule: doc/guides/policies.md, "The early schedule"). */
#define YOUNG 32         /* gaps' weight for a context's own rule (else the pooled one) */
#define DECAY_EVERY 4096 /* gaps */
#define LEARN_EVERY 256 /* idle gaps */
#define LEARN_EARLY 8   /* idle gaps, until the first decay (and gaps to the first update) */
/* gaps to the first update: under a target YOUNG, since the young rule
 * spins there and a p99 is not foretold by 8 gaps (policies.md, "The early
 * schedule") */
#define YOUNG_GAPS(a) ((a)->target_ns > 0 ? YOUNG : LEARN_EARLY)

/* The bounds guard_pick weighs: the window's, W, then guard.c's list. */
#define GUARD_BOUNDS 6

#define PACE_ARMS 3  /* the pauses a comparison weighs (pace.c) */
/* A context's rule: spin t, then sleep, each sleep bounded at guard
 * (UINT64_MAX: none) until span past t. */
struct rule {
	uint64_t t, guard, span;
};

/* One source the policy follows (sources.c). */
struct source_slot {
	uint32_t id;
	bool used;
	uint64_t last_ns;             /* its last completion */
};

/* A bound guard_pick weighs: G, its timeout's CPU C(G), its cycle G + T(G)
 * (the loop runs again T(G) after the timeout), and the timeouts a gap
 * gets: as many C as the priced L of the longest sleep, the most they can
 * save on it. */
struct guard_bound {
	double G, c, cycle, wakes;
	double bs; /* a sleep under the bound that a notification ends: its CPU */
};

/*
 * The cost model's tables, per threshold j (edge j; 0: sleep at once;
 * GAP_BINS: never) and gap bin i, so that an update is sums only. They
 * depend on the calibration and the prices alone, so the loops priced alike
 * share one read-only set (tables_get), which outweighs a loop's own state
 * many times (doc/guides/policies.md, "Adaptive's state").
 */
struct adaptive_tables {
	double target_ns; /* the latency price they were made with */
	double cpu[GAP_BINS + 1][GAP_BINS], lat[GAP_BINS + 1][GAP_BINS]; /* cost: cpu + lambda lat */
	double lat_cold[GAP_BINS + 1][GAP_BINS]; /* with a window: the sleep's wake cold */
	float past[GAP_BINS + 1][GAP_BINS]; /* with a window: the share past t + W */
	uint64_t t_ns[GAP_BINS + 1];
	double bin_mid[GAP_BINS];          /* BIN_AT(i + 0.5) */
	int bin_ctx[GAP_BINS];           /* gap_context(bin_mid[i]) */
};

struct adaptive {
	struct evd__mem mem; /* the loop's: its socket's memory, or libc's */
	const struct evd_policy_env *env;
	const struct adaptive_tables *tab; /* shared, or own_tab */
	struct adaptive_tables *own_tab;   /* not shared: this instance's, freed with it */
	/* log of env->wake_at_ns, taken once: L is interpolated on log g, and
	 * guard_pick takes up to six a bin */
	double log_at[EVD_ENV_WAKE_POINTS];
	double lambda;
	uint64_t cap_ns;      /* spin_max_us, or UINT64_MAX */
	double target_ns;     /* p99_us: a completion later than this costs lambda, one earlier
			       * nothing; lambda then learned (target.c); naps fit within it
			       * (0: none; latency priced by the ns) */
	uint64_t nap_ns;      /* the nap the target leaves room for (0: none) */
	double nap_late_ns;   /* how late a nap ends: its 99th percentile, learned */
	uint64_t last_gap_ns; /* the gap that ended at the last completion */
	uint64_t wake_late_ns; /* a notified wake's expected latency, owed by the gap it ends... */
	uint64_t wake_at_ns;   /* ...if the wake's round (at this time) finds it */
	bool napping;         /* the last action was a nap (on_wake: a nap's end) */
	double nap_gap, nap_burst; /* at the idle gaps: gap and completions, averaged (naps only) */
	double nap_need;      /* the arrivals it must promise (nap.c) */
	uint64_t nap_spin_ns; /* a spin with more than this left naps (nap.c; UINT64_MAX: none) */
	bool naps_late;       /* naps stopped: they ended too late for the target */
	/* under a target, the loop's stalls (stall_seen): when the next round
	 * is due, and the share of the time polled that rounds came more than N
	 * after it */
	uint64_t resume_ns;
	double stalled;
	uint64_t samples;
	uint64_t completions;         /* over the samples: a p99 is of completions, not gaps */
	uint64_t pace_end;            /* pacing's epoch ends (pace.c; 0: none under way) */
	uint64_t last_event_ns;
	bool busy;                    /* no decision since it: the gap under way is no sample */
	int ctx;                      /* the context of the gap under way */
	uint64_t threshold_ns;        /* for the gap under way */
	/* per context, and all together (a young context's), the rule for a gap
	 * that starts warm [0] or, with a window, cold [1] */
	struct rule rule[CONTEXTS][2], pooled[2];
	uint32_t ctx_own;             /* contexts whose rule is their own (not pooled) */
	/* the host's halt window (env->window_ns): a sleep within it after a
	 * longer one wakes in cold_wake_ns, not L */
	bool window;
	bool win_live;                /* window, and some gap of the histograms outlasts W */
	bool cold;                    /* the last halt outlasted W (on_wake) */
	bool been_cold;               /* the window was ever shut: the cold guards are weighed */
	bool cold_gap;                /* the gap under way began cold: the cold rules */
	uint64_t asked_ns;            /* the last sleep's or nap's bound (0: none) */
	double cold_cost[GAP_CONTEXTS];     /* per class of a gap: what starting it cold adds */
	uint32_t idle_left;           /* idle gaps (the loop had to decide) to the next update */
	uint64_t next_decay;          /* samples at the next halving (every DECAY_EVERY) */
	uint64_t next_check;          /* samples at the next update or halving */
	bool superpose;               /* superpose=0: the context rule alone */
	uint32_t slot_ctx;            /* GAP_CONTEXTS x the slot of the source served last */
	uint32_t n_ctx_used;          /* contexts in use: GAP_CONTEXTS x (highest slot + 1) */
	struct source_slot slots[SLOTS]; /* per source (slot 0 only: the loop as one source) */
	uint32_t superposed;            /* slots in the superposition (at least 2, else 0) */
	uint64_t gap_t[2];            /* the gap under way: both rules' thresholds... */
	uint32_t gap_slot;            /* ...the slot that began it... */
	bool gap_scored;              /* ...and whether it was idle (both are scored) */
	uint64_t superposed_gaps;            /* idle gaps on the superposition's threshold */
	/* the bounds guard_pick weighs (W first), taken at each price of
	 * latency: they depend on it, the environment and the knobs only */
	struct guard_bound bounds[GUARD_BOUNDS];
	/* one histogram per context (the length of the previous gap), since
	 * gaps come in runs (bursts, then silence): n_ctx_used of them,
	 * GAP_CONTEXTS per slot in use */
	float w[CONTEXTS][GAP_BINS];
	double cdf[GAP_CONTEXTS][GAP_BINS]; /* with a window: per class, P(next gap < bin i's top) */
	/* Superposition: each source's own gaps, from one round that served it
	 * to the next, decayed with the rest; at each update their survival
	 * P(own gap >= edge k); per slot that began a gap, the cost each rule's
	 * threshold would have had on the idle gaps it began (0: the context's,
	 * 1: the superposition's). */
	float own_gaps[SLOTS][GAP_BINS];
	float survival[SLOTS][GAP_BINS + 1];
	double rule_cost[SLOTS][2];
	/* pace.c: the pause between busy polls, and the epochs that measure it */
	uint32_t pace_step, pace_arm;  /* the pause in force, the epoch's (pace.c's list) */
	uint64_t pace_ns;              /* ...the epoch's in ns: what decide asks for */
	/* epochs into the comparison; epochs left with pace_step alone (0: comparing) */
	uint32_t pace_turn, pace_hold;
	/* comparisons in a row that kept it; busy epochs to see, unpaused, before pausing */
	uint32_t pace_stays, pace_watch;
	uint64_t pace_from;            /* completions when the epoch began */
	double pace_rate[PACE_ARMS];   /* the turn's, per pause: completions a ns */
	int32_t pace_score[PACE_ARMS]; /* per longer pause, its sign test's (pace.c) */
};

static inline int
gap_context(uint64_t g)
{
	return g < 4000 ? 0 : g < 64000 ? 1 : g < 1000000 ? 2 : 3;
}

/* A gap's bin by its top bit m, with no branch and no table, since this
 * runs at every busy streak, and a round per source in a loop of several
 * (sources.c; its cost: doc/guides/policies.md, "Adaptive's state"): the
 * octave's first bin, and its second from ceil(2^(m + 1/2)) on, which is
 * floor(sqrt(2) x 2^63) shifted, plus one; clamped to 0 under 256 ns and to
 * the last bin from 2^32 ns (tests/test_gap_bin.c checks every edge). */
static inline int
gap_bin(uint64_t g)
{
	int m = 63 - __builtin_clzll(g | 1);
	int b = 2 * m - 16 + (g > 0xB504F333F9DE6484ull >> (63 - m));

	return RTE_MIN(RTE_MAX(b, 0), GAP_BINS - 1);
}

/* A threshold or bound as the logs show it: -1 for none (UINT64_MAX). */
static inline int64_t
shown_ns(uint64_t x)
{
	return x == UINT64_MAX ? -1 : (int64_t)x;
}

/* The decay's halving. A weight under 1e-30 (a gap about 100 halvings
 * old) goes to 0: halved on, it would turn subnormal, whose arithmetic is
 * slow on x86 without flush-to-zero. */
static inline double
halve(double w)
{
	return w < 1e-30 ? 0 : w * 0.5;
}

/* The priced part of an added latency: all of it; under a p99 target, the
 * chance that it exceeds the target (lambda is then per completion): 1 for
 * a mean past it, 0 where the mean plus the tail of the wakes' spread (their
 * 99th percentile over their mean) is within it, and between, from a half
 * down to 1 %, log-linear in the room the tail has: a p99 counts the wakes
 * of an on-time mean that come late, and a loop sleeps thousands of times.
 * (No tail measured: x is +-inf, or NaN at N itself, which is on time.) */
static inline double
priced(const struct adaptive *a, double latency_ns)
{
	double x = a->target_ns > 0 ? (a->target_ns - latency_ns) /
					      fdim(a->env->wake_p99_ns, a->env->wake_ns[0]) : 0;

	return a->target_ns <= 0 ? latency_ns : x < 0 ? 1 : x < 1 ? 0.5 * pow(0.02, x) : 0;
}

/* The gap from last to a completion seen at now: a completion that woke
 * the loop came the wake's latency before it was seen, and learned long a
 * gap after a sleep would teach the loop to sleep. */
static inline uint64_t
seen_gap(const struct adaptive *a, uint64_t now, uint64_t last)
{
	uint64_t g = now - last, late = now == a->wake_at_ns ? a->wake_late_ns : 0;

	return g > late ? g - late : 0;
}

/* The time polled over which the share of stalls is taken (134 ms); a
 * round later than this is a loop run again after a stop. */
#define STALL_SPAN_NS 0x1p27

/* A round at @p now after a poll that was due at resume_ns (set under a
 * target only; 0: none, the last action a wait, or a round came since): a
 * round more than N late was a stall of the loop (the thread descheduled,
 * the vCPU taken, the application's own work between rounds), and what
 * arrives in one is late whatever the policy does, so its share is not the
 * policy's (target.c). The share moves by d / STALL_SPAN_NS of the way to
 * this round's, (d - N)+ / d, with no division: it runs at every empty
 * round (and, out of line, at a busy streak's first: adaptive_rare).
 * Without a target, a load and a branch. */
static inline void
stall_seen(struct adaptive *a, uint64_t now)
{
	if (a->resume_ns != 0) {
		/* (now before it: past the span; no fmax: a libm call, registers saved) */
		double d = (double)(now - a->resume_ns), late = d > a->target_ns ? d - a->target_ns : 0;

		a->stalled += d < STALL_SPAN_NS ? (late - d * a->stalled) / STALL_SPAN_NS : 0;
		a->resume_ns = 0;
	}
}

/* L of a sleep of g after a halt of @p prev (the window's state); L is flat
 * past its last point, and a g of 2^64 would overflow the cast. */
static inline double
wake_lat_after(const struct adaptive *a, double g, double prev)
{
	double l = evd__wake_interp(a->env, a->log_at, (uint64_t)fmin(g, 1e18));

	return a->window ? evd__wake_windowed(a->env, l, g, prev) : l;
}

/* model.c: the cost of a gap under a threshold, the tables, the cheapest threshold */
double evd__model_cost_at(const struct adaptive *a, double g, double t);
double evd__bin_above(int i, double x);
double evd__priced_wake_share(const struct adaptive *a, double s, double past, bool prev_cold);
const struct adaptive_tables *evd__tables_get(const struct adaptive *a,
					      struct adaptive_tables **own);
/* The bins of @p w that hold gaps, in @p nz (their number returned), and
 * *@p last one past the longest: a loaded loop's gaps fill few bins, and
 * thresholds above the longest gap all cost what spinning costs, so the
 * first of them (which a strict < keeps) ends a search. */
int evd__bins_held(const double *w, int *nz, int *last);
uint64_t evd__best_thresholds(const struct adaptive *a, const double *w, uint64_t *cold_t,
			      double *least_w, double *least_c);

/* window.c, guard.c (and the price of latency), superpose.c: what the update learns beside
 * the thresholds */
void evd__window_learn(struct adaptive *a, double cls[][GAP_BINS]);
void evd__window_wake(struct adaptive *a, uint64_t slept, enum evd_wake_reason why);
void evd__lambda_set(struct adaptive *a, double lambda);
void evd__guards(struct adaptive *a, const double *w, struct rule *r);
void evd__superpose_learn(struct adaptive *a, bool decay);
void evd__superpose_choose(struct adaptive *a) __attribute__((cold));

/* nap.c */
void evd__nap_length(struct adaptive *a);
void evd__naps_retry(struct adaptive *a);
void evd__nap_wake(struct adaptive *a, uint64_t slept, enum evd_wake_reason why);

/* pace.c */
void evd__pace_epoch(struct adaptive *a, uint64_t now);
/* target.c */
double evd__target_lambda(const struct adaptive *a, const double *all, double wc[][GAP_BINS],
			  const double *n);

/* learn.c */
void evd__young_threshold(struct adaptive *a);
void evd__adaptive_update(struct adaptive *a);

/* the ops ops.c's table names from decide.c and sources.c */
enum evd_action evd__adaptive_decide(void *st, const struct evd_policy_input *in, uint64_t *arg);
void evd__adaptive_source_events(void *st, uint64_t now, uint32_t id, uint32_t n);

#endif /* EVD_POLICY_ADAPTIVE_H */
