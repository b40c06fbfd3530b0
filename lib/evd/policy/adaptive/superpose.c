/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Superposition, in loops of several sources: a second threshold from each
 * source's own gaps and how long each has been silent; the rule that cost
 * less so far decides.
 */
#include <string.h>

#include "adaptive.h"

/* P(gap >= y) for one source's own gaps, from its survival table (each
 * bin's weight spread evenly over the bin, whose edges are @p t_ns: bin 0
 * starts at 0, and the last, open, ends at 2^64, which spreads it so thin
 * that it is flat). */
static double
survival_at(const uint64_t *t_ns, const float *sv, uint64_t y)
{
	int k = gap_bin(y);
	double lo = (double)t_ns[k], hi = (double)t_ns[k + 1];

	return sv[k] - (sv[k] - sv[k + 1]) * ((double)y - lo) / (hi - lo);
}

/* The superposition: the loop's gap begun at @p start, when its sources
 * are independent, lasts past x with the product over the sources of the
 * chance that each stays silent past its age + x, given that it has been
 * silent for its age (a source already past all the gaps it has shown is
 * left out: nothing is known of when it comes). Those chances, per bin of
 * the loop's gap, go through the cost table like a histogram. */
static uint64_t
superpose_threshold(const struct adaptive *a, uint64_t start)
{
	const uint64_t *t_ns = a->tab->t_ns;
	double p[GAP_BINS], s0[SLOTS], s_prev = 1.0;
	uint64_t age[SLOTS];
	uint32_t in = 0;

	for (int s = 0; s < SLOTS; s++)
		if (a->superposed & (1u << s)) {
			age[s] = start > a->slots[s].last_ns ? start - a->slots[s].last_ns : 0;
			s0[s] = survival_at(t_ns, a->survival[s], age[s]);
			if (s0[s] > 1e-9)
				in |= 1u << s;
		}
	for (int i = 0; i < GAP_BINS - 1; i++) {
		double sx = 1.0;

		for (int s = 0; s < SLOTS; s++)
			if (in & (1u << s))
				sx *= survival_at(t_ns, a->survival[s], age[s] + t_ns[i + 1]) /
				      s0[s];
		/* what is left in a bin after rounding is dropped */
		p[i] = s_prev - sx > 1e-6 ? s_prev - sx : 0;
		s_prev = sx;
	}
	p[GAP_BINS - 1] = s_prev;
	return evd__best_thresholds(a, p, NULL, NULL, NULL);
}

/* At an update: the survival tables of the sources' own gaps, and which
 * sources the superposition takes: those followed (a slot with an id)
 * whose own histogram holds YOUNG gaps' weight (decayed, as the contexts'),
 * and only when there are two or more. A source under that (new, or
 * quiet for long) is left out: its next arrival is not predicted, which
 * biases the superposition towards sleeping, and the rules' costs tell
 * when that matters. Then, if @p decay, age the own-gap histograms and
 * the rules' costs. */
void
evd__superpose_learn(struct adaptive *a, bool decay)
{
	uint32_t mask = 0;

	for (int s = 0; s < SLOTS; s++) {
		double tot = 0;

		for (int i = 0; i < GAP_BINS; i++)
			tot += a->own_gaps[s][i];
		if (a->slots[s].used && a->slots[s].id != UINT32_MAX && tot >= YOUNG) {
			double acc = 0;

			a->survival[s][GAP_BINS] = 0;
			for (int i = GAP_BINS - 1; i >= 0; i--) {
				acc += a->own_gaps[s][i];
				a->survival[s][i] = acc / tot;
			}
			mask |= 1u << s;
		}
		for (int i = 0; decay && i < GAP_BINS; i++)
			a->own_gaps[s][i] = halve(a->own_gaps[s][i]);
		for (int r = 0; decay && r < 2; r++)
			a->rule_cost[s][r] = halve(a->rule_cost[s][r]);
	}
	a->superposed = a->superpose && __builtin_popcount(mask) >= 2 ? mask : 0;
	if (a->superposed != 0)
		EVD_LOG(DEBUG, "policy adaptive: superposition of %d sources (slots 0x%x); %" PRIu64
			" idle gaps on its threshold so far", __builtin_popcount(a->superposed),
			a->superposed, a->superposed_gaps);
}

/* The first empty round of a gap, in a loop of several sources: both rules
 * give a threshold, the context's (learned on the loop's gaps that began
 * after this source) and the superposition's (the sources' own gaps and
 * how long each has been silent). Each is charged what it would have cost
 * on the gap once it ends (adaptive_events), per source that began the
 * gap, and the one that cost less so far decides: the context's where the
 * sources depend on each other (a request, then its completion), the
 * superposition's where they do not. */
void __attribute__((noinline, cold))
evd__superpose_choose(struct adaptive *a)
{
	uint32_t s = a->slot_ctx / GAP_CONTEXTS;

	/* A young context's threshold is the pooled one, often off: charged
	 * for it, the context rule would carry that for thousands of gaps
	 * after it has learned. The contexts decide until theirs is their own. */
	if (!(a->ctx_own >> a->ctx & 1))
		return;
	a->gap_t[0] = a->threshold_ns;
	a->gap_t[1] = superpose_threshold(a, a->last_event_ns);
	a->gap_slot = s;
	a->gap_scored = true;
	a->next_check = 0; /* adaptive_update scores both at the gap's end */
	if (a->rule_cost[s][1] < a->rule_cost[s][0]) {
		a->threshold_ns = a->gap_t[1];
		a->superposed_gaps++;
	}
}
