/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The decision at an empty round: the fixed rule, or a nap, a spin under
 * the threshold, a pre-wake, then a sleep under the guard.
 */

#include "adaptive.h"

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

enum evd_action
evd__adaptive_decide(void *st, const struct evd_policy_input *in, uint64_t *arg)
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
		evd__superpose_choose(a);
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
