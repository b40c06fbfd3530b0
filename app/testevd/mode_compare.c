/* SPDX-License-Identifier: BSD-3-Clause */
/* --compare: the same pattern (same seed) under poll, intr and adaptive. */
#include <errno.h>
#include <string.h>

#include "testevd.h"

static int
compare(const struct opts *o)
{
	static const char *const policies[] = { "poll", "intr", "adaptive" };
	struct result r[3];
	int status = 0;

	printf("testevd: pattern %s for %.1f s on the ring source, policies poll, intr, adaptive\n",
	       o->pattern, o->duration_s);
	for (unsigned int i = 0; i < 3; i++) {
		/* adaptive takes its tuning from --policy when that names it */
		const char *p = i == 2 && strncmp(o->policy, "adaptive", 8) == 0 ? o->policy
										 : policies[i];
		int rc;

		printf("  running %s ...\n", p);
		fflush(stdout);
		rc = run_ring(o, p, &r[i]);
		if (rc < 0) {
			fprintf(stderr, "testevd: run %s failed: %s\n", p, strerror(-rc));
			return EXIT_RUNTIME;
		}
		if (r[i].events_lost > 0 || r[i].lost_wakeups > 0)
			status = EXIT_LOSS;
	}
	report_table(stdout, r, 3);
	if (r[0].events_per_s > 0 && r[0].cpu_pct > 0)
		printf("  adaptive vs poll: %.2f x the events/s at %.2f x the CPU\n\n",
		       r[2].events_per_s / r[0].events_per_s, r[2].cpu_pct / r[0].cpu_pct);
	if (o->json != NULL) {
		int rc = report_json(o->json, r, 3, true);

		if (rc < 0) {
			fprintf(stderr, "testevd: cannot write %s: %s\n", o->json, strerror(-rc));
			return EXIT_RUNTIME;
		}
	}
	if (status != 0)
		fprintf(stderr, "testevd: FAILED: events lost or lost wakeups counted\n");
	return status;
}

const struct mode mode_compare = { "compare", compare };
