/* SPDX-License-Identifier: BSD-3-Clause */
/* T(g), how late a timed wait of g ends: --score prices naps and timeouts
 * with it, eventfd wakes with the library's L(g). */
#ifndef TESTEVD_TIMER_LATE_H
#define TESTEVD_TIMER_LATE_H

#include <stdint.h>

struct evd_policy_env;

enum timer_late_from {
	TIMER_LATE_NONE,     /* not measured or given yet */
	TIMER_LATE_MEASURED, /* measured by this process */
	TIMER_LATE_GIVEN,    /* by --calibration */
	TIMER_LATE_FROM_L,   /* a --calibration without it: L stands in */
};

/* Measure T at the points of L on this thread; 0 or -1 (logged). */
int timer_late_measure(void);
void timer_late_set(const uint64_t ns[4]);
void timer_late_from_l(const struct evd_policy_env *env);
/* Where T came from; copies its 4 points into ns unless NULL. */
enum timer_late_from timer_late_get(uint64_t ns[4]);
/* T(g), interpolated on log g as L is. */
double timer_late_ns(uint64_t g);

#endif
