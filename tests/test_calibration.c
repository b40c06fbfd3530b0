/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The one-time calibration measures what the cost model means.
 *
 * - B is CPU: the sleeping thread's own run time. Every wait the calibration
 *   makes is delayed here by 20 ms of nanosleep before it starts (epoll_wait
 *   is interposed: this executable's definition comes before libc's), time
 *   in which the thread runs nothing. A B read off the wall clock grows by
 *   that 1 ms (it did, before B was measured on the thread's clock); B from
 *   the thread's CPU clock does not.
 * - L is wall time from the producer's write to the sleeper running: the
 *   same delay lands in L whole (in L(10 us) all of it, in L(10 ms) all but
 *   the 10 ms the producer waits first).
 * - The producer runs on another CPU than the sleeper, also when the caller
 *   is pinned to one CPU as DPDK's EAL pins its main lcore (a helper thread
 *   would otherwise inherit the pin, and every wake measured would be a
 *   same-CPU switch): the sleeper's CPU is recorded at each wait, the
 *   producer's at each eventfd write (write is interposed too).
 * - The caller's own affinity is left as it was.
 * - With "refused" (a cpuset that allows one CPU, made here by failing
 *   pthread_attr_setaffinity_np, also interposed), the producer falls back
 *   to the sleeper's CPU, where it must sleep, not spin, for the run to end:
 *   it ends, with every wake, and the producer on the sleeper's CPU.
 * - Stalls are left out of L, and a point over a longer one comes down to
 *   it: tests/test_cal_reduce.c, on wakes given (held wakes here would
 *   measure the machine's load as much as the rule).
 *   test_calibration [refused]
 */
#include <dlfcn.h>
#include <pthread.h>
#include <sched.h>
#include <sys/epoll.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <evd.h>
#include <evd_policy.h>

#include "evd_test.h"

#define DELAY_NS 20000000L
#define MAX_SEEN 64

static int delaying;               /* atomic: the calibration is running */
static pid_t sleeper_tid;          /* atomic: the thread that waits */
static int sleeper_cpu[MAX_SEEN], waker_cpu[MAX_SEEN];
static unsigned int nsleeps, nwrites; /* atomic */

static int (*real_epoll_wait)(int, struct epoll_event *, int, int);
static ssize_t (*real_write)(int, const void *, size_t);

static int (*real_setaffinity)(pthread_attr_t *, size_t, const cpu_set_t *);
static bool refuse_placement;

int
pthread_attr_setaffinity_np(pthread_attr_t *attr, size_t size, const cpu_set_t *set)
{
	if (refuse_placement)
		return EINVAL;
	return real_setaffinity(attr, size, set);
}

static void
record(int *cpus, unsigned int *n)
{
	unsigned int i = __atomic_fetch_add(n, 1, __ATOMIC_ACQ_REL);

	if (i < MAX_SEEN)
		cpus[i] = sched_getcpu();
}

int
epoll_wait(int epfd, struct epoll_event *ev, int maxevents, int timeout)
{
	if (__atomic_load_n(&delaying, __ATOMIC_ACQUIRE)) {
		struct timespec d = { .tv_sec = 0, .tv_nsec = DELAY_NS };

		__atomic_store_n(&sleeper_tid, (pid_t)syscall(SYS_gettid), __ATOMIC_RELEASE);
		record(sleeper_cpu, &nsleeps);
		nanosleep(&d, NULL);
	}
	return real_epoll_wait(epfd, ev, maxevents, timeout);
}

ssize_t
write(int fd, const void *buf, size_t count)
{
	/* an eventfd write from another thread than the sleeper: the producer */
	if (__atomic_load_n(&delaying, __ATOMIC_ACQUIRE) && count == 8 &&
	    (pid_t)syscall(SYS_gettid) != __atomic_load_n(&sleeper_tid, __ATOMIC_ACQUIRE))
		record(waker_cpu, &nwrites);
	return real_write(fd, buf, count);
}

static uint64_t
process_cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

int
main(int argc, char **argv)
{
	const struct evd_policy_env *env;
	cpu_set_t start, one, after;
	uint64_t cpu0, cpu1, wall0, wall1;
	unsigned int ns, nw;
	int first = -1;

	/* resolved before any thread can call them */
	real_epoll_wait = (int (*)(int, struct epoll_event *, int, int))dlsym(RTLD_NEXT,
									      "epoll_wait");
	real_write = (ssize_t (*)(int, const void *, size_t))dlsym(RTLD_NEXT, "write");
	real_setaffinity = (int (*)(pthread_attr_t *, size_t, const cpu_set_t *))dlsym(
		RTLD_NEXT, "pthread_attr_setaffinity_np");
	CHECK(real_epoll_wait != NULL && real_write != NULL && real_setaffinity != NULL);
	refuse_placement = argc > 1 && strcmp(argv[1], "refused") == 0;
	if (argc > 1 && !refuse_placement) {
		fprintf(stderr, "usage: %s [refused]\n", argv[0]);
		return 2;
	}
	/* pinned to one CPU, as EAL pins its main lcore: the first it may use */
	CHECK(sched_getaffinity(0, sizeof(start), &start) == 0);
	for (int c = 0; c < CPU_SETSIZE && first < 0; c++)
		if (CPU_ISSET(c, &start))
			first = c;
	CHECK(first >= 0);
	CPU_ZERO(&one);
	CPU_SET(first, &one);
	CHECK(sched_setaffinity(0, sizeof(one), &one) == 0);

	cpu0 = process_cpu_ns();
	wall0 = test_now_ns();
	__atomic_store_n(&delaying, 1, __ATOMIC_RELEASE);
	CHECK_EQ(evd_policy_env_calibrate(), 0);
	env = evd_policy_env_get();
	__atomic_store_n(&delaying, 0, __ATOMIC_RELEASE);
	cpu1 = process_cpu_ns();
	wall1 = test_now_ns();

	ns = __atomic_load_n(&nsleeps, __ATOMIC_ACQUIRE);
	nw = __atomic_load_n(&nwrites, __ATOMIC_ACQUIRE);
	printf("B %lu ns, L %lu %lu %lu %lu ns (each wait delayed %ld ns), %u waits, %u producer "
	       "writes, %d CPUs allowed, pinned to %d\n", (unsigned long)env->sleep_wake_ns,
	       (unsigned long)env->wake_ns[0], (unsigned long)env->wake_ns[1],
	       (unsigned long)env->wake_ns[2], (unsigned long)env->wake_ns[3], DELAY_NS, ns, nw,
	       CPU_COUNT(&start), first);
	/* the whole run: 14 + 14 + 12 + 8 wakes */
	CHECK(ns >= 48 && nw >= 48);
	/* B on the thread's clock: the delay, spent asleep, is not in it (a
	 * wall-clock B would be over the clamp) */
	CHECK(env->sleep_wake_ns < EVD_ENV_B_MAX_NS);
	/* L on the wall clock: the delay is in it, at every point (all but the
	 * 10 ms the producer waits in L(10 ms), to which the shorter points,
	 * 20 ms, come down; the same in every wake, none is a stall). A
	 * producer the scheduler runs late eats into L(10 ms): under load it
	 * read 4.4 ms; a wake without the delay is under 1 ms. */
	for (int k = 0; k < EVD_ENV_WAKE_POINTS; k++)
		CHECK(env->wake_ns[k] >= (uint64_t)DELAY_NS / 20);
	/* the sleeper on the caller's CPU, the producer on another */
	for (unsigned int i = 0; i < ns && i < MAX_SEEN; i++)
		CHECK_EQ(sleeper_cpu[i], first);
	if (refuse_placement) {
		for (unsigned int i = 0; i < nw && i < MAX_SEEN; i++)
			CHECK_EQ(waker_cpu[i], first);
		/* on a shared CPU the producer sleeps: a spinning one would burn
		 * about all of the run's time (the sleeper mostly sleeps in the
		 * 1 ms delays), a sleeping one a small part of it */
		printf("process CPU %" PRIu64 " ns over %" PRIu64 " ns of calibration\n",
		       cpu1 - cpu0, wall1 - wall0);
		CHECK(cpu1 - cpu0 < (wall1 - wall0) / 2);
	} else if (CPU_COUNT(&start) >= 2) {
		for (unsigned int i = 0; i < nw && i < MAX_SEEN; i++)
			CHECK(waker_cpu[i] != first);
	} else {
		printf("one CPU allowed: the producer's placement not checked\n");
	}
	/* the caller's affinity is as it was */
	CHECK(sched_getaffinity(0, sizeof(after), &after) == 0);
	CHECK(CPU_EQUAL(&after, &one));
	printf("ok\n");
	return 0;
}
