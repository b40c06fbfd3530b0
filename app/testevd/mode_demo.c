/* SPDX-License-Identifier: BSD-3-Clause */
/* The default mode: one pattern through one source kind under one policy. */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "report.h"
#include "run.h"
#include "testevd.h"

static int
demo(const struct opts *o)
{
	struct result *r = calloc(1, sizeof(*r));
	int rc, status = 0;

	if (r == NULL)
		return EXIT_RUNTIME;
	if (strcmp(o->source, "ethdev") == 0) /* a remote sender plays the arrivals */
		printf("testevd: receiving on port %u (the ethdev source), policy %s, until the "
		       "sender's END or %.0f s (while its packets come, %.0f s after the last)\n",
		       o->port, o->policy,
		       o->duration_s + REMOTE_GRACE_S, REMOTE_GRACE_S);
	else if (o->trace != NULL)
		printf("testevd: trace %s on the %s source, policy %s\n", o->trace, o->source,
		       o->policy);
	else
		printf("testevd: pattern %s for %.1f s on the %s source, policy %s\n", o->pattern,
		       o->duration_s, o->source, o->policy);
	fflush(stdout); /* a script may wait for it (SIGINT is handled from here on) */
	rc = run_pattern(o, o->policy, r);
	if (rc < 0) {
		fprintf(stderr, "testevd: run failed: %s\n", strerror(-rc));
		free(r);
		return EXIT_RUNTIME;
	}
	report_table(stdout, r, 1);
	if (o->json != NULL && report_json(o->json, r, 1, false) < 0)
		status = EXIT_RUNTIME;
	if (r->timeline_failed)
		status = EXIT_RUNTIME;
	if (r->stopped)
		fprintf(stderr, "testevd: stopped by a signal after %.1f s%s\n", r->duration_s,
			r->incomplete ? "; no END packet came, so the sender's count is unknown" : "");
	if (r->incomplete && !r->stopped) {
		fprintf(stderr, "testevd: FAILED: the sender's END packet never arrived%s; what was "
			"sent is unknown\n",
			r->link_lost ? " (the link went down and stayed down: the sender is gone)" : "");
		status = EXIT_LOSS;
	}
	if (r->events_lost > 0 || r->lost_wakeups > 0) {
		fprintf(stderr, "testevd: FAILED: %" PRIu64 " events lost, %" PRIu64 " lost wakeups\n",
			r->events_lost, r->lost_wakeups);
		status = EXIT_LOSS;
	}
	free(r);
	return status;
}

const struct mode mode_demo = { "demo", demo };
