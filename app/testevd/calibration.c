/* SPDX-License-Identifier: BSD-3-Clause */
/* --calibration and --save-calibration: the cost model in a file. */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_common.h>

#include <evd_policy.h>

#include "calibration.h"
#include "testevd.h"

/* --calibration FILE: a line "B L(10us) L(100us) L(1ms) L(10ms)" in ns, and
 * optionally a second "T(10us) T(100us) T(1ms) T(10ms)" (how late a timed
 * wait ends: naps and timeouts; without it, or all 0, L stands in), and
 * after it optionally a third "C(100us) C(1ms) Lc W" (a timeout's CPU, 0 0
 * for B; the host's halt window W, a sleep past it or within it after a
 * longer one waking in at least Lc, 0 0 for none: evd_policy_env), and
 * after it optionally a fourth "P99", the 99th percentile of the wakes after
 * 10 us (0: none), with '#' comments and blank lines, as --save-calibration
 * writes them. Anything else is refused, with the line: a fifth line of
 * numbers, a sign, a value out of range (B 1 ns
 * to 10 ms, the others up to 1 s: the most a machine's sleep or wake can
 * plausibly cost; beyond, the model's figures overflow), a T at some points
 * only, a C at one point only, a W without its Lc. */
#define CAL_B_MAX_NS 10000000ull
#define CAL_L_MAX_NS 1000000000ull
#define CAL_FORMAT "a line of 5 numbers in ns, B L(10us) L(100us) L(1ms) L(10ms), then " \
	"optionally one of 4, T(10us) T(100us) T(1ms) T(10ms), then optionally one of 4, " \
	"C(100us) C(1ms) Lc W, then optionally one of 1, P99"

/* The numbers on each line of the file, in order. */
static const int cal_line_numbers[] = { 5, 4, 4, 1 };

/* The @p line-th line's numbers, in ns, from p into v (the first line's
 * first is B); NULL or why not (in a buffer of its own: one file at a time). */
static const char *
calibration_numbers(const char *p, int line, unsigned long long *v)
{
	static char why[48];
	int n = cal_line_numbers[line];
	const char *s = n > 1 ? "s" : "";
	char *end;

	for (int k = 0; k < n; k++) {
		bool b = line == 0 && k == 0;

		p += strspn(p, " \t");
		errno = 0;
		v[k] = strtoull(p, &end, 10);
		/* a sign or no digit; "0x10", "5e3" */
		if (*p < '0' || *p > '9' || strchr(" \t\r\n", *end) == NULL) {
			snprintf(why, sizeof(why), "expected %d unsigned number%s in ns", n, s);
			return why;
		}
		if (errno != 0 || v[k] > (b ? CAL_B_MAX_NS : CAL_L_MAX_NS) || (b && v[k] == 0))
			return "a value out of range (B from 1 ns to 10 ms, the others up to 1 s)";
		p = end;
	}
	if (p[strspn(p, " \t\r\n")] == '\0')
		return NULL;
	snprintf(why, sizeof(why), "more than %d number%s, or text after %s", n, s,
		 n > 1 ? "them" : "it");
	return why;
}

int
calibration_load(const char *path)
{
	struct evd_policy_env e = { .wake_at_ns = { 10000, 100000, 1000000, 10000000 } };
	/* each line's numbers: B and L, T, C C Lc W, P99 */
	unsigned long long num[RTE_DIM(cal_line_numbers)][5];
	const unsigned long long *v = num[0], *tv = num[1], *xv = num[2];
	char *line = NULL;
	size_t cap = 0, lineno = 0;
	FILE *f = fopen(path, "r");
	int got = 0, rc;
	const char *why = NULL;
	ssize_t len;

	if (f == NULL) {
		fprintf(stderr, "testevd: --calibration %s: %s\n", path, strerror(errno));
		return EXIT_USAGE;
	}
	while (why == NULL && (len = getline(&line, &cap, f)) > 0) {
		char *p = line + strspn(line, " \t\r\n");

		lineno++;
		if (memchr(line, '\0', (size_t)len) != NULL) {
			why = "a NUL byte";
			break;
		}
		if (*p == '#' || *p == '\0')
			continue;
		if (got == (int)RTE_DIM(cal_line_numbers)) {
			why = "a fifth line of numbers (B and the 4 L, then the 4 T, then C C Lc W, then P99)";
			break;
		}
		why = calibration_numbers(p, got, num[got]);
		if (why == NULL && got == 0 && (v[2] < v[1] || v[3] < v[2] || v[4] < v[3]))
			why = "L falling as the time asleep grows (a longer sleep never wakes faster)";
		if (why == NULL && got == 1 &&
		    ((tv[1] == 0) != (tv[0] == 0) || (tv[2] == 0) != (tv[0] == 0) ||
		     (tv[3] == 0) != (tv[0] == 0)))
			why = "T at some points only (all 4, or 0 0 0 0 for L's)";
		if (why == NULL && got == 2 && ((xv[0] == 0) != (xv[1] == 0) || (xv[3] != 0 && xv[2] == 0)))
			why = "C(100us) and C(1ms) both 0 or neither, and W only with its Lc";
		got += why == NULL;
	}
	free(line);
	if (why == NULL && ferror(f)) { /* a directory, an I/O error: not an empty file */
		int e = errno ? errno : EIO;

		fclose(f);
		fprintf(stderr, "testevd: --calibration %s: %s\n", path, strerror(e));
		return EXIT_USAGE;
	}
	fclose(f);
	if (why != NULL || !got) {
		char at[32] = ""; /* the line at fault, if one is */

		if (why != NULL)
			snprintf(at, sizeof(at), "line %zu: ", lineno);
		fprintf(stderr, "testevd: --calibration %s: %s%s; the file is " CAL_FORMAT "\n", path,
			at, why != NULL ? why : "no line of numbers");
		return EXIT_USAGE;
	}
	e.sleep_wake_ns = v[0];
	for (int k = 0; k < EVD_ENV_WAKE_POINTS; k++)
		e.wake_ns[k] = v[k + 1];
	for (int k = 0; got >= 2 && k < EVD_ENV_WAKE_POINTS; k++)
		e.timeout_late_ns[k] = tv[k];
	if (got >= 3) { /* C (0 0: B stands in) */
		e.timeout_at_ns[0] = 100000;
		e.timeout_at_ns[1] = 1000000;
		e.timeout_ns[0] = xv[0];
		e.timeout_ns[1] = xv[1];
		e.cold_wake_ns = xv[2];
		e.window_ns = xv[3];
	}
	if (got == 4)
		e.wake_p99_ns = num[3][0];
	rc = evd_policy_env_set(&e);
	if (rc < 0) {
		fprintf(stderr, "testevd: --calibration %s: %s\n", path, strerror(-rc));
		return EXIT_RUNTIME;
	}
	return 0;
}

int
calibration_save(const char *path)
{
	const struct evd_policy_env *e;
	FILE *f;

	if (evd_policy_env_calibrate() < 0)
		return EXIT_RUNTIME;
	e = evd_policy_env_get();
	f = fopen(path, "w");
	if (f == NULL) {
		fprintf(stderr, "testevd: --save-calibration %s: %s\n", path, strerror(errno));
		return EXIT_USAGE;
	}
	fprintf(f, "# evd calibration (ns): B, then the wake latency L after 10 us, 100 us, 1 ms, 10 ms\n"
		"%" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 "\n"
		"# how late a timed wait ends, T, after 10 us, 100 us, 1 ms, 10 ms (naps, timeouts;\n"
		"# 0 0 0 0: L stands in)\n"
		"%" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 "\n"
		"# a timeout's CPU C after 100 us, 1 ms (0 0: B stands in); a sleep past the host's\n"
		"# halt window W, or within it after a longer one, wakes in at least Lc (W 0: no window)\n"
		"%" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 "\n"
		"# the 99th percentile of the wakes after 10 us (0: not measured)\n"
		"%" PRIu64 "\n", e->sleep_wake_ns,
		e->wake_ns[0], e->wake_ns[1], e->wake_ns[2], e->wake_ns[3], e->timeout_late_ns[0],
		e->timeout_late_ns[1], e->timeout_late_ns[2], e->timeout_late_ns[3],
		e->timeout_ns[0], e->timeout_ns[1], e->cold_wake_ns, e->window_ns, e->wake_p99_ns);
	if (fclose(f) != 0) {
		fprintf(stderr, "testevd: --save-calibration %s: %s\n", path, strerror(errno));
		return EXIT_RUNTIME;
	}
	return 0;
}
