/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Naps: under a p99 target, a short wait with nothing armed where the
 * arrival rate promises the arrivals a nap must find to pay; its length
 * is the target less how late naps end.
 */

#include "adaptive.h"

/* The naps' lateness is tracked at its 99th percentile, since every
 * arrival within a nap waits for its end: a nap that ends later than the
 * tracked figure makes most of its arrivals late. */
#define NAP_STEP_NS 20.0 /* down when a nap ends sooner; up 99 steps when later */

/* The nap the target leaves room for once a nap's lateness is paid: 0 when
 * that is not over 2 B (spinning through a nap of B costs no more than it);
 * and the arrivals it must promise: two (one is no better than a sleep,
 * and waits longer), or as many as sleep at B for its own wake's C where
 * that is more (a nap ends in a timeout). A spin with a nap and its
 * lateness (the target) still ahead naps instead where C(nap) is less than
 * the target: what arrives waits no more than N, which costs nothing. */
void
evd__nap_length(struct adaptive *a)
{
	double s = a->target_ns - a->nap_late_ns, b = (double)a->env->sleep_wake_ns; /* B >= 1 */

	a->nap_ns = s > 2.0 * b ? (uint64_t)s : 0;
	a->nap_need = fmax(2.0, evd_policy_env_timeout_ns(a->env, a->nap_ns) / b);
	/* (with a nap the target is over 2 B: this is C(nap) under it) */
	a->nap_spin_ns = a->nap_need * b < a->target_ns ? (uint64_t)a->target_ns - 1 : UINT64_MAX;
}

/* Naps stopped by lateness: try again with the shortest nap allowed (3 B),
 * or the target where that is less (no room then for lateness: the probe's) */
void
evd__naps_retry(struct adaptive *a)
{
	if (a->naps_late && a->nap_ns == 0) {
		a->nap_late_ns = fmax(0, a->target_ns - 3.0 * (double)a->env->sleep_wake_ns);
		evd__nap_length(a);
	}
}

/* A nap ended: how late, on this machine and at this load? The tracked
 * lateness sets the nap's length, the target less it; a nap cut short (a
 * loop timer, the loop's sleep bound) is no sample. When it leaves no room
 * naps stop, and each update tries them again (evd__naps_retry) so that
 * one bad stretch does not end them for good. */
void
evd__nap_wake(struct adaptive *a, uint64_t slept, enum evd_wake_reason why)
{
	if (!a->napping || why != EVD_WAKE_TIMEOUT || a->nap_ns == 0 || slept < a->nap_ns)
		return;
	double late = (double)(slept - a->nap_ns);

	a->nap_late_ns = fmax(0, a->nap_late_ns + (late > a->nap_late_ns ? 99 : -1) * NAP_STEP_NS);
	evd__nap_length(a);
	if (a->nap_ns == 0) {
		EVD_LOG_AT(a->naps_late ? RTE_LOG_DEBUG : RTE_LOG_NOTICE,
			   "policy adaptive: naps end %.1f us late (99th percentile): the latency "
			   "p99 target %.1f us leaves no room for them, naps off (tried again at the "
			   "next update)", a->nap_late_ns / 1e3, a->target_ns / 1e3);
		a->naps_late = true;
	}
}
