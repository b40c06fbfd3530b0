/* SPDX-License-Identifier: BSD-3-Clause */
/* SIGINT and SIGTERM: end the run and report. */
#include <signal.h>
#include <stddef.h>

#include "stop.h"

int testevd_stop;

static void
stop_signals(void (*handler)(int))
{
	struct sigaction sa = { .sa_handler = handler };

	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
}

/* A second signal kills: both go back to the default here (sigaction is
 * async-signal-safe). */
static void
on_stop_signal(int sig)
{
	__atomic_store_n(&testevd_stop, sig, __ATOMIC_RELAXED);
	stop_signals(SIG_DFL);
}

void
stop_on_signals(void)
{
	stop_signals(on_stop_signal);
}
