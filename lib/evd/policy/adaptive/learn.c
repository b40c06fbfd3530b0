/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Learning: the young threshold, then at each update every context's
 * threshold (and bound) from its histogram, and the decay.
 */

#include <string.h>

#include "adaptive.h"

/* Ski rental while the histogram is young, the price of buying being what a
 * sleep costs in this model (B and the least priced wake latency), not B
 * alone, so that gaps cheaper to spin than a priced sleep are spun; no
 * bound. Every rule, the pooled ones too (a new source's, slot_of). */
void
evd__young_threshold(struct adaptive *a)
{
	const struct evd_policy_env *env = a->env;
	/* bounded: a given environment may hold any B and L, lambda_pct goes to 10^6;
	 * under a target, the longest wake: a young loop knows no gap to count on */
	double buy = fmin((double)env->sleep_wake_ns +
				  a->lambda * priced(a, a->target_ns > 0 ? evd__wake_most(env)
									 : (double)env->wake_ns[0]),
			  1e12);
	struct rule y = { RTE_MIN((uint64_t)buy, a->cap_ns), UINT64_MAX, 0 };

	a->threshold_ns = y.t;
	a->pooled[0] = a->pooled[1] = y;
	for (int c = 0; c < CONTEXTS; c++)
		a->rule[c][0] = a->rule[c][1] = y;
}

/* Per context, from its own histogram once it has enough weight, else from
 * all contexts together. Then, if @p decay, age the histograms (halve them). */
static void
learn_threshold(struct adaptive *a, bool decay)
{
	double all[GAP_BINS] = { 0 }, n[CONTEXTS] = { 0 }, cls[GAP_CONTEXTS][GAP_BINS] = { { 0 } };
	double wc[CONTEXTS][GAP_BINS]; /* the sums are in double, the histograms float */
	double tot = 0, lng = 0;

	for (uint32_t c = 0; c < a->n_ctx_used; c++)
		for (int i = 0; i < GAP_BINS; i++) {
			wc[c][i] = a->w[c][i];
			all[i] += wc[c][i];
			cls[c % GAP_CONTEXTS][i] += wc[c][i];
			n[c] += wc[c][i];
		}
	if (a->target_ns > 0)
		evd__lambda_set(a, evd__target_lambda(a, all, wc, n));
	/* The window is weighed only where 1 % or more of the gaps a rule might
	 * sleep in (4 us or more, not a burst's, which would hide the few long
	 * gaps that shut it) outlast it: else the cold rules are the warm ones,
	 * and a loaded loop pays none of their sums (policies.md, "The host's
	 * halt window"). */
	for (int i = 0; i < GAP_BINS; i++) {
		tot += a->tab->bin_mid[i] >= 4000 ? all[i] : 0;
		lng += a->tab->bin_mid[i] > (double)a->env->window_ns ? all[i] : 0;
	}
	a->win_live = a->window && lng > 0.01 * tot;
	if (!a->win_live)
		memset(a->cold_cost, 0, sizeof(a->cold_cost));
	/* a cold start is priced with the last update's cold_cost: it comes
	 * from the thresholds, which come from it */
	a->pooled[0].t = evd__best_thresholds(a, all, &a->pooled[1].t, NULL, NULL);
	if (a->win_live)
		evd__window_learn(a, cls);
	/* every young context's, and a new source's (slot_of); at each update,
	 * since a target's price may have left the bounds no timeouts */
	evd__guards(a, all, a->pooled);
	for (uint32_t c = 0; c < a->n_ctx_used; c++) {
		bool own = n[c] >= YOUNG;

		if (own) {
			a->rule[c][0].t = evd__best_thresholds(a, wc[c], &a->rule[c][1].t, NULL, NULL);
			evd__guards(a, wc[c], a->rule[c]);
		} else {
			memcpy(a->rule[c], a->pooled, sizeof(a->pooled));
		}
		a->ctx_own = own ? a->ctx_own | 1u << c : a->ctx_own & ~(1u << c);
		for (int i = 0; decay && i < GAP_BINS; i++)
			a->w[c][i] = halve(a->w[c][i]);
	}
	evd__superpose_learn(a, decay);
	for (int c = 0; c < GAP_CONTEXTS; c++) /* slot 0's (-1: none) */
		EVD_LOG(DEBUG, "policy adaptive: %" PRIu64 " gaps; context %d (the gap before: 0 "
			"< 4 us, 1 < 64 us, 2 < 1 ms, 3 longer): spin %" PRId64 " ns, bound %" PRId64
			" ns; a cold start: spin %" PRId64 " ns, costs %.0f ns more", a->samples, c,
			shown_ns(a->rule[c][0].t), shown_ns(a->rule[c][0].guard),
			shown_ns(a->rule[c][1].t), a->cold_cost[c]);
}

/* Young (under YOUNG_GAPS gaps): the young rule, set at create. Then an
 * update at YOUNG_GAPS gaps and every LEARN_EARLY idle gaps until the
 * first decay, so that a short run does not live on what its first gaps taught,
 * and every LEARN_EVERY after, since each update sums every context's
 * histogram. Only idle gaps count (adaptive_decide counts them and brings
 * next_check forward): the threshold matters only there, so a saturated
 * loop pays nothing. */
void __attribute__((noinline))
evd__adaptive_update(struct adaptive *a)
{
	bool decay;

	if (a->gap_scored) {
		/* A gap evd__superpose_choose saw begin has ended (last_gap_ns):
		 * charge both rules here, not in adaptive_events, which runs
		 * at every streak of busy rounds. */
		double g = (double)a->last_gap_ns, *cost = a->rule_cost[a->gap_slot];

		cost[0] += evd__model_cost_at(a, g, (double)a->gap_t[0]);
		cost[1] += evd__model_cost_at(a, g, (double)a->gap_t[1]);
		a->gap_scored = false;
		if (a->samples >= YOUNG_GAPS(a) && a->idle_left != 0 && a->samples < a->next_decay) {
			a->next_check = a->next_decay; /* nothing else is due */
			return;
		}
	}
	if (a->samples < YOUNG_GAPS(a)) { /* (an idle gap's count ran out while young) */
		a->next_check = YOUNG_GAPS(a);
		return;
	}
	decay = a->samples >= a->next_decay;
	if (decay)
		a->next_decay += DECAY_EVERY;
	if (a->idle_left == 0)
		a->idle_left = a->samples < DECAY_EVERY ? LEARN_EARLY : LEARN_EVERY;
	learn_threshold(a, decay);
	evd__naps_retry(a);
	a->next_check = a->next_decay;
}
