/* SPDX-License-Identifier: BSD-3-Clause */
/* --timeline: a run's windows (events/s, CPU, time asleep) as CSV or SVG. */
#ifndef TESTEVD_TIMELINE_H
#define TESTEVD_TIMELINE_H

/* n windows; t_s holds their starts, then the last one's end (n + 1 times);
 * CSV, or SVG if path ends in .svg. 0 or a negative errno. */
int timeline_write(const char *path, const char *title, unsigned int n, const double *t_s,
		   const double *rate, const double *cpu_pct, const double *sleep_pct);

#endif
