/* SPDX-License-Identifier: BSD-3-Clause */
#include <sys/prctl.h>

#include "evd_test.h"
#include "napper_policy.h"

struct test_napper test_napper;

static int
napper_create(const struct evd_policy_param *p, unsigned int n, const struct evd_policy_env *env,
	      void **state)
{
	(void)p;
	(void)n;
	(void)env;
	*state = &test_napper;
	return 0;
}

static enum evd_action
napper_decide(void *st, const struct evd_policy_input *in, uint64_t *arg)
{
	struct test_napper *c = st;
	struct evd_event ev[3] = { 0 };

	(void)in;
	c->slack_seen = prctl(PR_GET_TIMERSLACK, 0, 0, 0, 0);
	if (c->ring != NULL)
		CHECK_EQ(evd_ring_post_burst(c->ring, ev, 3), 3);
	*arg = c->nap_ns;
	return EVD_ACTION_NAP;
}

static void
napper_wake(void *st, uint64_t now, uint64_t slept, enum evd_wake_reason why)
{
	struct test_napper *c = st;

	(void)now;
	c->slept_ns = slept;
	c->why = why;
}

const struct evd_policy_ops test_napper_ops = {
	.name = "napper",
	.create = napper_create,
	.decide = napper_decide,
	.on_wake = napper_wake,
};
