/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * libFuzzer target: the text arrival-trace parser (testevd --trace FILE).
 * Any input: no crash, no leak, no hang; 0 with at least one arrival whose
 * gaps are within an hour, or -EINVAL with a message.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "trace.h"

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	if (freopen("/dev/null", "w", stdout) == NULL)
		abort();
	return 0;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct trace t;
	int rc;

	rc = trace_parse_text((const char *)data, size, "fuzz", &t);
	if (rc != 0 && rc != -EINVAL && rc != -E2BIG)
		abort();
	if (rc == 0) {
		if (t.n == 0)
			abort();
		for (size_t i = 0; i < t.n; i++)
			if (t.gap_ns[i] > UINT64_C(3600000000000))
				abort();
		trace_free(&t);
	}
	return 0;
}
