/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * adaptive learns the idle gaps the loop sees and spins exactly as long as
 * that pays: per context (the previous gap's length, and the source that
 * began the gap), the threshold of least expected cost, CPU + lambda x the
 * priced wake latency, over a decayed histogram of the context's gaps.
 * adaptive.h says where each mechanism around it lives; the model, its keys
 * and the measurements behind its constants are in doc/guides/policies.md.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "adaptive.h"

/* Why the retired keys went: learn=0's fixed rule is ski2's, the hand-set
 * budget and guard are what a p99 target picks. */
static const char fixed_rule[] = "adaptive always learns; learn=0's fixed rule is ski2 (spin B, "
				 "then sleep), or ski2:b_ns=N to spin N ns";
static const char by_target[] = "adaptive:p99_us=N asks for the least CPU with at most 1 % of "
				"completions later than N us, and picks the naps and sleep bounds "
				"that takes";

static void
adaptive_destroy(void *st)
{
	struct adaptive *a = st;

	if (a == NULL)
		return;
	free(a->own_tab);
	evd__free(&a->mem, a);
}

static int
adaptive_create(const struct evd_policy_param *p, unsigned int n, const struct evd_policy_env *env,
		void **state)
{
	uint64_t spin_max_us = UINT64_MAX, lambda_pct = UINT64_MAX, nap = 1, superpose = 1, p99_us = 0;
	const struct evd__policy_key keys[] = {
		{ "p99_us", 1, 1000000, &p99_us, NULL },
		{ "spin_max_us", 0, 1000000, &spin_max_us, NULL },
		{ "nap", 0, 1, &nap, NULL },
		{ "lambda_pct", 0, 1000000, &lambda_pct, NULL },
		{ "superpose", 0, 1, &superpose, NULL },
		{ "learn", .retired = fixed_rule },
		{ "spin_pct", .retired = fixed_rule },
		{ "pause_ns", .retired = fixed_rule },
		{ "prewake", .retired = "waking before a periodic source's next arrival did not pay "
					"(doc/guides/policies.md; drop the key)" },
		{ "budget_us", .retired = by_target },
		{ "guard_us", .retired = by_target },
		{ "guard_for_us", .retired = by_target },
	};
	struct evd__mem mem = evd__policy_mem();
	struct adaptive *a;
	int rc = evd__policy_parse_keys("adaptive", p, n, keys, RTE_DIM(keys));

	if (rc < 0)
		return rc;
	if (p99_us != 0 && lambda_pct != UINT64_MAX)
		return EVD_ARG_ERR(-EINVAL, "policy adaptive: p99_us=N prices latency itself (a "
				   "completion later than N us against the CPU, the price "
				   "learned): drop lambda_pct");
	a = evd__zalloc(&mem, sizeof(*a), 0);
	if (a == NULL)
		return -ENOMEM;
	a->mem = mem;
	a->env = env;
	a->window = env->window_ns != 0 && env->cold_wake_ns != 0;
	for (int k = 0; k < EVD_ENV_WAKE_POINTS; k++)
		a->log_at[k] = log((double)env->wake_at_ns[k]);
	/* under a target the context rules alone, whose late gaps target.c counts */
	a->superpose = superpose != 0 && p99_us == 0;
	/* slot 0: the loop, until a source is named */
	a->slots[0] = (struct source_slot){ .id = UINT32_MAX, .used = true };
	a->cap_ns = spin_max_us != UINT64_MAX ? spin_max_us * 1000 : UINT64_MAX;
	a->target_ns = (double)p99_us * 1000;
	a->tab = evd__tables_get(a, &a->own_tab); /* (the environment and prices set above) */
	if (a->tab == NULL) {
		adaptive_destroy(a);
		return -ENOMEM;
	}
	/* a target's price, until the histograms tell one: the dearest */
	evd__lambda_set(a, p99_us != 0 ? evd__target_lambda(a, NULL, NULL, NULL)
				       : (double)(lambda_pct != UINT64_MAX ? lambda_pct : 100) / 100.0);
	if (nap && p99_us != 0) {
		/* until naps tell how late they end, a timed wait's T (L where
		 * not measured): a nap ends by its timer, and on a VM that is
		 * several times an eventfd's wake */
		a->nap_late_ns = evd_policy_env_timeout_late_ns(env, p99_us * 1000);
		evd__nap_length(a);
		if (a->nap_ns == 0)
			EVD_LOG(INFO, "policy adaptive: p99_us=%" PRIu64 " leaves no room for naps "
				"(N - T %.1f us, not over 2 B = %.1f us)", p99_us,
				(a->target_ns - a->nap_late_ns) / 1e3,
				2.0 * (double)env->sleep_wake_ns / 1e3);
	}
	a->idle_left = LEARN_EARLY;
	a->next_decay = DECAY_EVERY;
	a->next_check = YOUNG_GAPS(a); /* the first update; until then the young rule */
	a->last_event_ns = UINT64_MAX;
	a->last_gap_ns = UINT64_MAX;
	a->n_ctx_used = GAP_CONTEXTS; /* slot 0: the loop as its one source */
	evd__young_threshold(a);
	*state = a;
	return 0;
}

/* What a round's completions rarely call for: the end of pacing's epoch,
 * an update; under a target, the stall an arrival ended (this round's). */
static void __attribute__((noinline))
adaptive_rare(struct adaptive *a, uint64_t now)
{
	stall_seen(a, now);
	if (now >= a->pace_end)
		evd__pace_epoch(a, now);
	if (a->samples >= a->next_check)
		evd__adaptive_update(a);
}

/* A round found completions (or a busy streak's later rounds did): the
 * idle gap before it is one sample. */
static void
adaptive_events(void *st, uint64_t now, uint32_t n)
{
	struct adaptive *a = st;
	uint64_t last = a->last_event_ns;

	a->completions += n;
	a->last_event_ns = now;
	if (likely(now >= last)) { /* UINT64_MAX before the first */
		uint64_t g = 0;

		/* a gap with no empty round ran no rule: it costs its length
		 * whatever the threshold, so it is no sample (a saturated loop
		 * makes millions); the next gap's context is the shortest (the
		 * loop may tell a busy streak's rounds at once: evd_policy.h) */
		if (!a->busy) {
			g = seen_gap(a, now, last);
			a->last_gap_ns = g;
			a->w[a->ctx][gap_bin(g)] += 1.0;
			a->samples++;
		}
		a->ctx = gap_context(g) + (int)a->slot_ctx;
	}
	a->busy = true;
	/* the rare parts (an epoch's end, young thresholds, learning) out of
	 * line, and as a tail call, so that the common path saves no registers
	 * (its cost: doc/guides/policies.md, "Adaptive's state"); the gap's
	 * rule is taken at its first empty round (decide.c) */
	if (unlikely(a->samples >= a->next_check || now >= a->pace_end || a->resume_ns != 0))
		adaptive_rare(a, now);
}

/* A wake: the host's window, and a nap's lateness. */
static void
adaptive_wake(void *st, uint64_t now, uint64_t slept, enum evd_wake_reason why)
{
	struct adaptive *a = st;

	/* before the window's update: a->cold is the halt's before this sleep */
	a->wake_late_ns = why == EVD_WAKE_NOTIFY
				  ? (uint64_t)wake_lat_after(a, (double)slept, a->cold ? INFINITY : 0) : 0;
	a->wake_at_ns = now;
	a->resume_ns = 0; /* a wait's end, no stall (one done outside the loop's round too) */
	if (a->window)
		evd__window_wake(a, slept, why);
	evd__nap_wake(a, slept, why);
}

/* Telemetry: what adaptive learned (read from another thread: a torn
 * value is possible and harmless, it is a report). */
static void
adaptive_describe(const void *st, char *buf, size_t len)
{
	const struct adaptive *a = st;
	uint64_t t[GAP_CONTEXTS], samples = __atomic_load_n(&a->samples, __ATOMIC_RELAXED);
	uint32_t c0 = __atomic_load_n(&a->slot_ctx, __ATOMIC_RELAXED);

	/* the contexts of the source served last (of the loop: one source) */
	for (int c = 0; c < GAP_CONTEXTS; c++)
		t[c] = __atomic_load_n(&a->rule[c0 + c][0].t, __ATOMIC_RELAXED);
	snprintf(buf, len, "gaps=%" PRIu64 " spin_ns=%" PRId64 ",%" PRId64 ",%" PRId64 ",%" PRId64
		 " nap_ns=%" PRIu64 " busy_pause_ns=%" PRIu64 " stalled_ppm=%.0f B_ns=%" PRIu64,
		 samples, shown_ns(t[0]), shown_ns(t[1]), shown_ns(t[2]), shown_ns(t[3]), a->nap_ns,
		 __atomic_load_n(&a->pace_ns, __ATOMIC_RELAXED),
		 1e6 * a->stalled, a->env->sleep_wake_ns);
}

const struct evd_policy_ops evd__adaptive_policy = {
	.name = "adaptive",
	.create = adaptive_create,
	.destroy = adaptive_destroy,
	.decide = evd__adaptive_decide,
	.on_events = adaptive_events,
	.on_wake = adaptive_wake,
	.needs_env = 1,
	.describe = adaptive_describe,
	.on_source_events = evd__adaptive_source_events,
};
