/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Baseline policies: the rules the field uses today, copied from their
 * published form, for side-by-side comparison with adaptive.
 *
 * l3fwd     DPDK l3fwd-power: the first 10 empty polls poll on; then each empty
 *           poll waits 1 us (rte_delay_us(1)); at 300 empty polls, enable the
 *           Rx interrupt and sleep with a 10 ms timeout.
 * pmdmgmt   rte_power_pmd_mgmt, PAUSE mode: after 512 empty polls each empty
 *           poll pauses (rte_pause loop, 1 us); it never sleeps.
 * napi      Linux NAPI with deferred IRQs: keep polling for `defer` empty
 *           polls (napi_defer_hard_irqs, default 2) and `timeout_us` (like
 *           gro_flush_timeout, default 20), then re-enable the interrupt.
 * haltpoll  KVM halt polling: poll for a window before halting; the window
 *           grows x2 from 10 us (up to 200 us) when a halt was woken within
 *           the limit, and shrinks /2 when a halt outlasted it.
 * ski2      spin for B (the measured sleep-and-wake cost), then sleep:
 *           2-competitive.
 * ski-rand  spin for a random threshold drawn on [0, B] with density
 *           e^(x/B) / (B (e - 1)) per idle gap: e/(e-1)-competitive.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <rte_common.h>

#include "evd_private.h"

/* A policy whose state is a few numbers. */
struct params {
	uint64_t a, b, c;
	uint64_t window; /* haltpoll */
	uint64_t threshold; /* ski-rand */
	uint64_t rnd;
};

static int
alloc_state(const struct params *init, void **state)
{
	struct params *p = malloc(sizeof(*p));

	if (p == NULL)
		return -ENOMEM;
	*p = *init;
	*state = p;
	return 0;
}

static void
free_state(void *st)
{
	free(st);
}

/* ---- l3fwd ---- */

static int
l3fwd_create(const struct evd_policy_param *p, unsigned int n, const struct evd_policy_env *env,
	     void **state)
{
	struct params s = { .a = 10, .b = 300, .c = 10 }; /* min zero polls, suspend, timeout ms */
	const struct evd__policy_key kv[] = {
		{ "min_zero_polls", 0, 1000000, &s.a, NULL },
		{ "suspend_threshold", 1, 1000000, &s.b, NULL },
		{ "timeout_ms", 1, 10000, &s.c, NULL },
	};
	int rc = evd__policy_parse_keys("l3fwd", p, n, kv, RTE_DIM(kv));

	RTE_SET_USED(env);
	return rc < 0 ? rc : alloc_state(&s, state);
}

static enum evd_action
l3fwd_decide(void *st, const struct evd_policy_input *in, uint64_t *arg)
{
	const struct params *s = st;

	if (in->idle_rounds <= s->a)
		return EVD_ACTION_POLL;
	if (in->idle_rounds < s->b) {
		*arg = 1000; /* rte_delay_us(MINIMUM_SLEEP_TIME = 1) */
		return EVD_ACTION_PAUSE;
	}
	*arg = s->c * 1000000; /* epoll timeout 10 ms */
	return EVD_ACTION_SLEEP;
}

static const struct evd_policy_ops l3fwd_ops = {
	.name = "l3fwd", .create = l3fwd_create, .destroy = free_state, .decide = l3fwd_decide,
};

/* ---- pmdmgmt ---- */

static int
pmdmgmt_create(const struct evd_policy_param *p, unsigned int n, const struct evd_policy_env *env,
	       void **state)
{
	struct params s = { .a = 512, .b = 1000 }; /* EMPTYPOLL_MAX, pause ns */
	const struct evd__policy_key kv[] = {
		{ "empty_polls", 0, 1000000, &s.a, NULL },
		{ "pause_ns", 1, 1000000, &s.b, NULL },
	};
	int rc = evd__policy_parse_keys("pmdmgmt", p, n, kv, RTE_DIM(kv));

	RTE_SET_USED(env);
	return rc < 0 ? rc : alloc_state(&s, state);
}

static enum evd_action
pmdmgmt_decide(void *st, const struct evd_policy_input *in, uint64_t *arg)
{
	const struct params *s = st;

	if (in->idle_rounds <= s->a)
		return EVD_ACTION_POLL;
	*arg = s->b;
	return EVD_ACTION_PAUSE;
}

static const struct evd_policy_ops pmdmgmt_ops = {
	.name = "pmdmgmt", .create = pmdmgmt_create, .destroy = free_state, .decide = pmdmgmt_decide,
};

/* ---- napi ---- */

static int
napi_create(const struct evd_policy_param *p, unsigned int n, const struct evd_policy_env *env,
	    void **state)
{
	struct params s = { .a = 2, .b = 20 }; /* defer polls, timeout us */
	const struct evd__policy_key kv[] = {
		{ "defer", 0, 1000000, &s.a, NULL },
		{ "timeout_us", 0, 1000000, &s.b, NULL },
	};
	int rc = evd__policy_parse_keys("napi", p, n, kv, RTE_DIM(kv));

	RTE_SET_USED(env);
	return rc < 0 ? rc : alloc_state(&s, state);
}

/*
 * Linux NAPI with napi_defer_hard_irqs = defer and gro_flush_timeout =
 * timeout_us (net/core/dev.c, napi_complete_done): a poll that finds less
 * than its budget leaves the IRQ masked while deferrals remain and starts
 * the gro_flush_timeout timer, whose expiry polls again; nothing runs in
 * between. A poll that found work restores the count. After `defer` such
 * timed polls the IRQ is re-enabled. With no timeout (the kernel's default)
 * nothing is deferred: the IRQ is re-enabled at once. So: nap timeout_us
 * after each of the first `defer` empty rounds, then arm and sleep.
 */
static enum evd_action
napi_decide(void *st, const struct evd_policy_input *in, uint64_t *arg)
{
	const struct params *s = st;

	if (s->b != 0 && in->idle_rounds <= s->a) {
		*arg = s->b * 1000;
		return EVD_ACTION_NAP;
	}
	*arg = 0;
	return EVD_ACTION_SLEEP;
}

static const struct evd_policy_ops napi_ops = {
	.name = "napi", .create = napi_create, .destroy = free_state, .decide = napi_decide,
};

/* ---- haltpoll ---- */

static int
haltpoll_create(const struct evd_policy_param *p, unsigned int n, const struct evd_policy_env *env,
		void **state)
{
	struct params s = { .a = 10000, .b = 200000 }; /* grow start, max (ns) */
	const struct evd__policy_key kv[] = {
		{ "start_ns", 1, 1000000, &s.a, NULL },
		{ "max_ns", 1, 10000000, &s.b, NULL },
	};
	int rc = evd__policy_parse_keys("haltpoll", p, n, kv, RTE_DIM(kv));

	RTE_SET_USED(env);
	if (rc == 0 && s.a > s.b) {
		EVD_LOG(ERR, "policy haltpoll: start_ns=%" PRIu64 " over max_ns=%" PRIu64 ": the "
			"window grows from the one to the other", s.a, s.b);
		return -EINVAL;
	}
	s.window = 0;
	return rc < 0 ? rc : alloc_state(&s, state);
}

static enum evd_action
haltpoll_decide(void *st, const struct evd_policy_input *in, uint64_t *arg)
{
	struct params *s = st;

	if (in->idle_ns < s->window)
		return EVD_ACTION_POLL;
	s->c = in->idle_ns; /* the halt began this long ago: its polling */
	*arg = 0;
	return EVD_ACTION_SLEEP;
}

/*
 * KVM's kvm_vcpu_halt (virt/kvm/kvm_main.c) judges a halt by its whole
 * length, polling included: longer than max_ns with a window open, shrink
 * it (halve, and close it below start_ns: shrink_halt_poll_ns); shorter
 * than max_ns with the window under it, grow it (double, from start_ns, up
 * to max_ns: grow_halt_poll_ns). A halt the polling caught leaves it as it
 * is (no sleep, no call here).
 */
static void
haltpoll_wake(void *st, uint64_t now, uint64_t slept, enum evd_wake_reason why)
{
	struct params *s = st;
	uint64_t halt = s->c + slept;

	RTE_SET_USED(now);
	if (why == EVD_WAKE_REPOLL)
		return;
	if (halt < s->c)
		halt = UINT64_MAX;
	if (s->window != 0 && halt > s->b) {
		s->window /= 2;
		if (s->window < s->a)
			s->window = 0;
	} else if (s->window < s->b && halt < s->b) {
		s->window = RTE_MIN(RTE_MAX(s->window * 2, s->a), s->b);
	}
}

static const struct evd_policy_ops haltpoll_ops = {
	.name = "haltpoll", .create = haltpoll_create, .destroy = free_state,
	.decide = haltpoll_decide, .on_wake = haltpoll_wake,
};

/* ---- ski2 ---- */

static int
ski2_create(const struct evd_policy_param *p, unsigned int n, const struct evd_policy_env *env,
	    void **state)
{
	struct params s = { .a = 0 };
	const struct evd__policy_key kv[] = { { "b_ns", 1, 100000000, &s.a, NULL } };
	int rc = evd__policy_parse_keys("ski2", p, n, kv, RTE_DIM(kv));

	if (rc == 0 && s.a == 0)
		s.a = env->sleep_wake_ns;
	return rc < 0 ? rc : alloc_state(&s, state);
}

static enum evd_action
ski2_decide(void *st, const struct evd_policy_input *in, uint64_t *arg)
{
	const struct params *s = st;

	if (in->idle_ns < s->a)
		return EVD_ACTION_POLL;
	*arg = 0;
	return EVD_ACTION_SLEEP;
}

static const struct evd_policy_ops ski2_ops = {
	.name = "ski2", .create = ski2_create, .destroy = free_state, .decide = ski2_decide,
	.needs_env = 1,
};

/* ---- ski-rand ---- */

uint64_t
evd__ski_rand_threshold(uint64_t b, uint64_t *rnd)
{
	/* inverse of the CDF (e^(x/b) - 1) / (e - 1) */
	double u = (double)(evd__xorshift(rnd) >> 11) / 9007199254740992.0;

	return (uint64_t)((double)b * log1p(u * (M_E - 1.0)));
}

static void
draw(struct params *s)
{
	s->threshold = evd__ski_rand_threshold(s->a, &s->rnd);
}

static int
skirand_create(const struct evd_policy_param *p, unsigned int n, const struct evd_policy_env *env,
	       void **state)
{
	struct params s = { .a = 0, .rnd = 0x9e3779b97f4a7c15ull };
	uint64_t seed = 1;
	const struct evd__policy_key kv[] = {
		{ "b_ns", 1, 100000000, &s.a, NULL },
		{ "seed", 0, UINT64_MAX, &seed, NULL },
	};
	int rc = evd__policy_parse_keys("ski-rand", p, n, kv, RTE_DIM(kv));

	if (rc < 0)
		return rc;
	if (s.a == 0)
		s.a = env->sleep_wake_ns;
	s.rnd ^= seed * 0xbf58476d1ce4e5b9ull;
	if (s.rnd == 0)
		s.rnd = 1;
	draw(&s);
	return alloc_state(&s, state);
}

static enum evd_action
skirand_decide(void *st, const struct evd_policy_input *in, uint64_t *arg)
{
	const struct params *s = st;

	if (in->idle_ns < s->threshold)
		return EVD_ACTION_POLL;
	*arg = 0;
	return EVD_ACTION_SLEEP;
}

static void
skirand_events(void *st, uint64_t now, uint32_t n)
{
	RTE_SET_USED(now);
	RTE_SET_USED(n);
	draw(st); /* a new idle gap starts: a new threshold */
}

static const struct evd_policy_ops skirand_ops = {
	.name = "ski-rand", .create = skirand_create, .destroy = free_state,
	.decide = skirand_decide, .on_events = skirand_events, .needs_env = 1,
};

const struct evd_policy_ops *const evd__baseline_policies[] = {
	&l3fwd_ops, &pmdmgmt_ops, &napi_ops, &haltpoll_ops, &ski2_ops, &skirand_ops, NULL,
};
