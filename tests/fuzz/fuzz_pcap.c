/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * libFuzzer target: the pcap/pcapng arrival-trace loader (testevd --trace
 * FILE.pcap), through libpcap, from memory. Any input: no crash, no leak,
 * no hang; 0 with 2 or more arrivals whose gaps are within an hour (a
 * longer one made --score step through it for ever), or a negative errno
 * with a message.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "trace.h"

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	return 0;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct trace t;
	FILE *f;
	int rc;

	if (size == 0)
		return 0; /* fmemopen refuses an empty buffer */
	f = fmemopen((void *)(uintptr_t)data, size, "rb");
	if (f == NULL)
		abort();
	rc = trace_load_pcap(f, "fuzz", &t);
	if (rc != 0 && rc != -EINVAL && rc != -E2BIG && rc != -ENOMEM)
		abort();
	if (rc == 0) {
		if (t.n < 2)
			abort();
		for (size_t i = 0; i < t.n; i++)
			if (t.gap_ns[i] > TRACE_MAX_GAP_NS)
				abort();
		trace_free(&t);
	}
	return 0;
}
