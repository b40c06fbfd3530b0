/* SPDX-License-Identifier: BSD-3-Clause */
/* testevd's clocks: CLOCK_MONOTONIC for deadlines, the TSC for latencies. */
#ifndef TESTEVD_CLOCK_H
#define TESTEVD_CLOCK_H

#include <stdint.h>

/* CLOCK_MONOTONIC in ns (the producer's deadlines, and peer_down_ns's). */
uint64_t testevd_now_ns(void);
/* The TSC's rate in Hz: the library's loop clock's (evd_clock_tsc_hz()),
 * EAL's where the loops do not read the TSC. After rte_eal_init(); the
 * first call may take 15 ms, so make it before timing anything. */
double testevd_tsc_hz(void);

/* TSC ticks to ns at that rate. */
static inline uint64_t
testevd_tsc_ns(uint64_t ticks)
{
	return (uint64_t)((double)ticks * 1e9 / testevd_tsc_hz());
}

#endif
