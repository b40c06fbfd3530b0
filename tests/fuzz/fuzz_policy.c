/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * libFuzzer target: the policy spec string (evd_policy_validate() and
 * evd_loop_create() with conf.policy). Any input: no crash, no leak, no
 * hang; the answer is 0, -EINVAL or -ENOENT, and a loop is created exactly
 * when the spec validates.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_log.h>

#include <evd.h>
#include <evd_policy.h>

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	rte_log_set_global_level(RTE_LOG_EMERG); /* bad specs are logged: keep quiet */
	return 0;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *spec = malloc(size + 1);
	struct evd_loop_conf conf = { .max_sleep_us = 1 };
	struct evd_loop *loop = NULL;
	int v, c;

	if (spec == NULL)
		return 0;
	memcpy(spec, data, size);
	spec[size] = '\0';
	v = evd_policy_validate(spec);
	if (v != 0 && v != -EINVAL && v != -ENOENT)
		abort();
	conf.policy = spec;
	c = evd_loop_create(&conf, &loop);
	/* a spec that validates creates a loop; one that does not, does not */
	if ((v == 0) != (c == 0) || (c == 0) != (loop != NULL))
		abort();
	if (loop != NULL && evd_loop_destroy(loop) != 0)
		abort();
	free(spec);
	return 0;
}
