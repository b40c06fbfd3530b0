/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * T(g): how late a timed wait of g ends, for --score's naps and timeouts.
 *
 * The library's L(g) is an eventfd wake: another CPU writes, the sleeper
 * returns. A nap or a bounded sleep ends by the sleeper's own timer
 * instead, and on a VM that is slower: here 45-55 us late after waits of
 * 10 us to 100 us, with the loop's 1 us timer slack, against an eventfd
 * wake's 11 us (doc/guides/testevd.md). The scorer priced both with L, so a
 * napping rule (napi's 20 us timer) looked 40 us quicker than it is.
 *
 * Measured the way the loop waits: epoll_pwait2 with nothing ready, the
 * thread's timer slack the loop's (evd_loop_run sets 1 us), on the calling
 * thread; at the points of L (10 us, 100 us, 1 ms, 10 ms), as many waits
 * as L takes, the first 3 of each a warm-up, the mean without the largest
 * and the smallest. Kept in an evd_policy_env of its own, so that the
 * library's interpolation (on log g, flat outside the points) serves.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#include <poll.h>

#include <evd_policy.h>

#include "clock.h"
#include "timer_late.h"

#define TL_SLACK_NS 1000ul /* the loop's timer slack (lib/evd/evd_loop.c) */
#define TL_WARM 3

static struct evd_policy_env tl = { .wake_at_ns = { 10000, 100000, 1000000, 10000000 } };
static enum timer_late_from tl_from = TIMER_LATE_NONE;

/* One timed wait of g ns with nothing to wake it: how long past g it took
 * (0 if it came back early: a signal). */
static uint64_t
wait_once(int epfd, uint64_t g, bool *pwait2)
{
	struct timespec ts = { .tv_sec = (time_t)(g / 1000000000ull), .tv_nsec = (long)(g % 1000000000ull) };
	struct epoll_event ev;
	uint64_t t0 = testevd_now_ns(), t;

	if (*pwait2 && epoll_pwait2(epfd, &ev, 1, &ts, NULL) < 0 && (errno == ENOSYS || errno == EPERM))
		*pwait2 = false; /* before Linux 5.11: ppoll keeps the nanoseconds */
	if (!*pwait2)
		(void)ppoll(NULL, 0, &ts, NULL);
	t = testevd_now_ns() - t0;
	return t > g ? t - g : 0;
}

int
timer_late_measure(void)
{
	static const int waits[EVD_ENV_WAKE_POINTS] = { 14, 14, 12, 8 }; /* as L's */
	int epfd = epoll_create1(EPOLL_CLOEXEC), slack = prctl(PR_GET_TIMERSLACK, 0, 0, 0, 0);
	bool pwait2 = true;

	if (epfd < 0) {
		fprintf(stderr, "testevd: timer lateness: epoll_create1: %s\n", strerror(errno));
		return -1;
	}
	if (slack > (int)TL_SLACK_NS)
		(void)prctl(PR_SET_TIMERSLACK, TL_SLACK_NS, 0, 0, 0);
	for (int k = 0; k < EVD_ENV_WAKE_POINTS; k++) {
		uint64_t sum = 0, lo = UINT64_MAX, hi = 0;

		for (int i = 0; i < waits[k]; i++) {
			uint64_t late = wait_once(epfd, tl.wake_at_ns[k], &pwait2);

			if (i < TL_WARM)
				continue;
			sum += late;
			lo = late < lo ? late : lo;
			hi = late > hi ? late : hi;
		}
		tl.wake_ns[k] = (sum - lo - hi) / (uint64_t)(waits[k] - TL_WARM - 2);
	}
	if (slack > (int)TL_SLACK_NS)
		(void)prctl(PR_SET_TIMERSLACK, (unsigned long)slack, 0, 0, 0);
	close(epfd);
	tl_from = TIMER_LATE_MEASURED;
	return 0;
}

void
timer_late_set(const uint64_t ns[EVD_ENV_WAKE_POINTS])
{
	memcpy(tl.wake_ns, ns, sizeof(tl.wake_ns));
	tl_from = TIMER_LATE_GIVEN;
}

enum timer_late_from
timer_late_get(uint64_t ns[EVD_ENV_WAKE_POINTS])
{
	if (ns != NULL)
		memcpy(ns, tl.wake_ns, sizeof(tl.wake_ns));
	return tl_from;
}

void
timer_late_from_l(const struct evd_policy_env *env)
{
	memcpy(tl.wake_ns, env->wake_ns, sizeof(tl.wake_ns));
	tl_from = TIMER_LATE_FROM_L;
}

double
timer_late_ns(uint64_t g)
{
	return evd_policy_env_wake_ns(&tl, g);
}
