/* SPDX-License-Identifier: BSD-3-Clause */
/* testevd's clocks: CLOCK_MONOTONIC, and the TSC at the library's rate. */
#include <pthread.h>
#include <time.h>

#include <rte_cycles.h>

#include <evd.h>

#include "clock.h"

uint64_t
testevd_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static double tsc_hz;
static pthread_once_t tsc_once = PTHREAD_ONCE_INIT;

/* Producers stamp with the TSC even where the loops read CLOCK_MONOTONIC
 * (a TSC that is not invariant): EAL's rate is then the one there is. */
static void
tsc_hz_get(void)
{
	if (evd_clock_tsc_hz(&tsc_hz) < 0)
		tsc_hz = (double)rte_get_tsc_hz();
}

double
testevd_tsc_hz(void)
{
	pthread_once(&tsc_once, tsc_hz_get);
	return tsc_hz;
}
