/* SPDX-License-Identifier: BSD-3-Clause */
/* SIGINT and SIGTERM end a run early, and it reports as if its duration had passed. */
#ifndef TESTEVD_STOP_H
#define TESTEVD_STOP_H

/* The signal that asked the run to end, or 0. Set by the handler on
 * whichever thread took the signal; read on the others. */
extern int testevd_stop;

static inline int
testevd_stopping(void)
{
	return __atomic_load_n(&testevd_stop, __ATOMIC_RELAXED);
}

/* From now on a SIGINT or SIGTERM sets testevd_stop; a second one kills. */
void stop_on_signals(void);

#endif
