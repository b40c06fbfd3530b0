/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The decision at an empty round: a nap, a spin under the threshold (paced
 * while the loop is busy: pace.c), then a sleep under the guard.
 */

#include "adaptive.h"

/* Nap where the arrival rate promises the arrivals a nap needs (nap.c,
 * evd__nap_length: the larger of two and C(nap) / B). The rate is a ratio of averages
 * over the idle gaps (completions, and the gap before them; 1/8 each, the
 * first whole), since the mean of 1/gap is dominated by the short gaps. */
static inline bool
nap_pays(struct adaptive *a, const struct evd_policy_input *in)
{
	double k = a->nap_burst == 0 ? 1 : 0.125;

	if (a->last_gap_ns != UINT64_MAX) { /* (none before the first gap) */
		a->nap_gap += ((double)a->last_gap_ns - a->nap_gap) * k;
		a->nap_burst += ((double)in->last_burst - a->nap_burst) * k;
	}
	return a->nap_burst > 0 && a->nap_burst * (double)a->nap_ns >= a->nap_need * a->nap_gap;
}

/* The decision at an empty round, in its steps: at a gap's first empty
 * round its cold rules, a nap, the superposition's threshold; then a nap
 * where the spin has room for one, spin, or sleep under the guard. */
enum evd_action
evd__adaptive_decide(void *st, const struct evd_policy_input *in, uint64_t *arg)
{
	struct adaptive *a = st;
	const struct rule *r;

	a->busy = false; /* (at any empty round: the first may have been evd_loop_poll()'s) */
	stall_seen(a, in->now_ns); /* an empty round's (one that finds work: adaptive_events) */
	if (in->idle_rounds == 1) { /* the first empty round of a gap: an idle gap */
		if (a->idle_left != 0 && --a->idle_left == 0)
			a->next_check = 0;
		/* the gap's rule, here (a saturated loop never pays for it): its
		 * context's, cold where it begins with the host's window shut (a
		 * young context's are the pooled ones) */
		a->cold_gap = a->cold;
		a->threshold_ns = a->rule[a->ctx][a->cold_gap].t;
		if (a->superposed != 0)
			evd__superpose_choose(a);
	}
	/* naps, a target's (which has no superposition: ops.c): at a gap's
	 * first round where the rate pays, or where the spin has room for one
	 * (nap.c); without a target, one branch, off the default's path */
	a->napping = unlikely(a->nap_ns != 0) && ((in->idle_rounds == 1 && nap_pays(a, in)) ||
		a->threshold_ns - RTE_MIN(in->idle_ns, a->threshold_ns) > a->nap_spin_ns);
	if (a->napping) {
		*arg = a->asked_ns = a->nap_ns;
		return EVD_ACTION_NAP;
	}
	if (in->idle_ns < a->threshold_ns) {
		/* no pause past the threshold: the sleep it ends in is the model's */
		*arg = RTE_MIN(a->pace_ns, a->threshold_ns - in->idle_ns);
		a->resume_ns = a->target_ns > 0 ? in->now_ns + *arg : 0; /* stall_seen's due time */
		return *arg != 0 ? EVD_ACTION_PAUSE : EVD_ACTION_POLL;
	}
	/* bounded for the rule's span past the threshold (its timeouts, each a
	 * cycle of G + T(G)), then not (0: the loop's max_sleep_us) */
	r = &a->rule[a->ctx][a->cold_gap];
	*arg = r->guard != UINT64_MAX && in->idle_ns < a->threshold_ns + r->span ? r->guard : 0;
	a->asked_ns = *arg;
	return EVD_ACTION_SLEEP;
}
