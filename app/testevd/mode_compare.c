/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * --compare: the same pattern (same seed) under poll, intr and adaptive.
 * With --rounds N the three runs are interleaved N times and summed, so that
 * a shared VM's drift hits every policy alike; the order turns each round,
 * so that no policy always runs first, or right after the same one.
 */
#include <stdlib.h>
#include <string.h>

#include "report.h"
#include "run.h"
#include "stop.h"
#include "testevd.h"

#define N_POLICIES 3

static int
cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* Each round's adaptive / poll events/s: the median and the range. A round
 * pairs two runs seconds apart, so a stall of the VM that hits one run moves
 * one ratio, where it moves the sums' ratio in proportion to its length. */
static void
round_ratios(const double *a, const double *p, unsigned int n)
{
	double *r = malloc((n ? n : 1) * sizeof(*r));
	unsigned int m = 0;

	if (r == NULL)
		return;
	for (unsigned int k = 0; k < n; k++)
		if (p[k] > 0)
			r[m++] = a[k] / p[k];
	if (m < 2) {
		free(r);
		return;
	}
	qsort(r, m, sizeof(r[0]), cmp_double);
	printf("  adaptive / poll by round: median %.3f, %.3f to %.3f over %u rounds\n",
	       m % 2 ? r[m / 2] : (r[m / 2 - 1] + r[m / 2]) / 2, r[0], r[m - 1], m);
	free(r);
}

static int
compare(const struct opts *o)
{
	static const char *const policies[N_POLICIES] = { "poll", "intr", "adaptive" };
	struct result *acc, *one;
	double *eps; /* each run's events/s, by policy then round */
	unsigned int n = 0, done[N_POLICIES] = { 0 };
	int status = 0;

	acc = calloc(N_POLICIES + 1, sizeof(*acc));
	eps = calloc((size_t)N_POLICIES * o->rounds, sizeof(*eps));
	if (acc == NULL || eps == NULL) {
		free(acc);
		free(eps);
		return EXIT_RUNTIME;
	}
	one = &acc[N_POLICIES];
	if (o->trace != NULL)
		printf("testevd: trace %s on the %s source, policies poll, intr, %s, %u round(s)\n",
		       o->trace, o->source, o->policy, o->rounds);
	else
		printf("testevd: pattern %s for %.1f s on the %s source, policies poll, intr, %s,"
		       " %u round(s)\n", o->pattern, o->duration_s, o->source, o->policy, o->rounds);
	for (unsigned int k = 0; k < o->rounds; k++) {
		for (unsigned int j = 0; j < N_POLICIES; j++) {
			unsigned int i = (j + k) % N_POLICIES;
			/* adaptive takes its tuning from --policy when that names it */
			const char *p = i == 2 ? o->policy : policies[i]; /* adaptive's spec (options.c) */
			int rc;

			printf("  round %u: %s ...\n", k + 1, p);
			fflush(stdout);
			rc = run_pattern(o, p, one);
			if (rc < 0) {
				fprintf(stderr, "testevd: run %s failed: %s\n", p, strerror(-rc));
				free(acc);
				free(eps);
				return EXIT_RUNTIME;
			}
			result_merge(&acc[i], one);
			eps[i * o->rounds + done[i]++] = one->events_per_s; /* run_pattern finished it */
			if (testevd_stopping())
				break;
		}
		if (testevd_stopping()) {
			fprintf(stderr, "testevd: stopped by a signal: the comparison is incomplete "
				"(the policies did not run for the same time)\n");
			break;
		}
	}
	for (unsigned int i = 0; i < N_POLICIES; i++) {
		acc[i].round_events_per_s = &eps[i * o->rounds];
		acc[i].n_rounds = done[i];
	}
	/* a stop may leave policies that never ran: report the others */
	for (unsigned int i = 0; i < N_POLICIES; i++)
		if (acc[i].runs > 0)
			acc[n++] = acc[i];
	for (unsigned int i = 0; i < n; i++) {
		result_finish(&acc[i]);
		if (acc[i].events_lost > 0 || acc[i].lost_wakeups > 0)
			status = EXIT_LOSS;
	}
	report_table(stdout, acc, n);
	if (n == N_POLICIES && acc[0].events_per_s > 0 && acc[0].cpu_pct > 0) {
		printf("  adaptive / poll: %.3f x the events/s at %.3f x the CPU\n",
		       acc[2].events_per_s / acc[0].events_per_s, acc[2].cpu_pct / acc[0].cpu_pct);
		round_ratios(&eps[2 * o->rounds], &eps[0], done[0] < done[2] ? done[0] : done[2]);
		putchar('\n');
	}
	if (o->json != NULL && report_json(o->json, acc, n, true) < 0)
		status = EXIT_RUNTIME;
	if (status == EXIT_LOSS)
		fprintf(stderr, "testevd: FAILED: events lost or lost wakeups counted\n");
	free(acc);
	free(eps);
	return status;
}

const struct mode mode_compare = { "compare", compare };
