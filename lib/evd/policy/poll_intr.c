/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The two extremes: poll (always busy) and intr (sleep as soon as idle).
 */
#include <errno.h>

#include <rte_common.h>

#include "evd_private.h"

static int
no_params(const char *name, const struct evd_policy_param *p, unsigned int n)
{
	if (n > 0) {
		EVD_LOG(ERR, "policy %s: unknown key '%s' (it takes no keys)", name, p[0].key);
		return -EINVAL;
	}
	return 0;
}

static int
poll_create(const struct evd_policy_param *p, unsigned int n, const struct evd_policy_env *env,
	    void **state)
{
	RTE_SET_USED(env);
	*state = NULL;
	return no_params("poll", p, n);
}

static enum evd_action
poll_decide(void *st, const struct evd_policy_input *in, uint64_t *arg)
{
	RTE_SET_USED(st);
	RTE_SET_USED(in);
	RTE_SET_USED(arg);
	return EVD_ACTION_POLL;
}

const struct evd_policy_ops evd__poll_policy = {
	.name = "poll",
	.create = poll_create,
	.decide = poll_decide,
};

static int
intr_create(const struct evd_policy_param *p, unsigned int n, const struct evd_policy_env *env,
	    void **state)
{
	RTE_SET_USED(env);
	*state = NULL;
	return no_params("intr", p, n);
}

static enum evd_action
intr_decide(void *st, const struct evd_policy_input *in, uint64_t *arg)
{
	RTE_SET_USED(st);
	RTE_SET_USED(in);
	*arg = 0;
	return EVD_ACTION_SLEEP;
}

const struct evd_policy_ops evd__intr_policy = {
	.name = "intr",
	.create = intr_create,
	.decide = intr_decide,
};
