/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * libFuzzer target: testevd's command line. The input is split at NUL bytes
 * and newlines into arguments. Any input: no crash, no leak, no hang; the
 * parser answers 0, EXIT_USAGE (with a message) or help shown, and on 0 the
 * options hold values within their documented ranges.
 */
#include <fcntl.h>
#include <stdint.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_log.h>

#include <evd_policy.h>

#include "options.h"
#include "pattern.h"
#include "testevd.h"

static int devnull = -1, saved_stderr = -1;

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	rte_log_set_global_level(RTE_LOG_EMERG);
	/* usage goes to stdout: drop it; libFuzzer reports on stderr, which is
	 * silenced only around each parse (the parser's messages) */
	if (freopen("/dev/null", "w", stdout) == NULL)
		abort();
	devnull = open("/dev/null", O_WRONLY);
	saved_stderr = dup(STDERR_FILENO);
	if (devnull < 0 || saved_stderr < 0)
		abort();
	return 0;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *buf = malloc(size + 1), *argv[65];
	struct opts o = {
		.source = "ring", .semantics = "strict", .policy = "adaptive", .pattern = "demo",
		.duration_s = 10, .rate = 20000, .seed = 1, .max_sleep_us = 100000, .rounds = 1,
		.queues = 1, .send_delay_s = 1,
	};
	int argc = 1, rc;

	if (buf == NULL)
		return 0;
	memcpy(buf, data, size);
	buf[size] = '\0';
	argv[0] = "testevd";
	for (char *p = buf, *start = buf; p <= buf + size && argc < 64; p++) {
		if (*p == '\0' || *p == '\n') {
			*p = '\0';
			argv[argc++] = start;
			start = p + 1;
		}
	}
	argv[argc] = NULL;
	fflush(stderr);
	dup2(devnull, STDERR_FILENO);
	rc = testevd_parse_opts(argc, argv, &o);
	fflush(stderr);
	dup2(saved_stderr, STDERR_FILENO);
	if (rc != 0 && rc != EXIT_USAGE && rc != TESTEVD_HELP_SHOWN)
		abort();
	if (rc == 0 && (o.duration_s < 0.1 || o.duration_s > 86400 || o.rate < 1 || o.rate > 1e8 ||
			o.rounds < 1 || o.rounds > 1000 || o.queues < 1 || o.queues > 16 ||
			o.max_sleep_us < 1 || pattern_find(o.pattern) == NULL ||
			evd_policy_validate(o.policy) != 0))
		abort();
	free(buf);
	return 0;
}
