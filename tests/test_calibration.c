/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The one-time calibration measures what the cost model means.
 *
 * - B is CPU: the sleeping thread's own run time. Every wait the calibration
 *   makes is delayed here by 2 ms of nanosleep before it starts (epoll_wait
 *   is interposed: this executable's definition comes before libc's), time
 *   in which the thread runs nothing. A B read off the wall clock grows by
 *   those 2 ms (it did, before B was measured on the thread's clock); B from
 *   the thread's CPU clock does not.
 * - L is wall time from the producer's write to the sleeper running: the
 *   same 2 ms delay before the 10 us wait lands in L(10 us) whole.
 * - The producer runs on another CPU than the sleeper, also when the caller
 *   is pinned to one CPU as DPDK's EAL pins its main lcore (a helper thread
 *   would otherwise inherit the pin, and every wake measured would be a
 *   same-CPU switch): the sleeper's CPU is recorded at each wait, the
 *   producer's at each eventfd write (write is interposed too).
 * - The caller's own affinity is left as it was.
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

#define DELAY_NS 2000000L
#define MAX_SEEN 64

static int delaying;               /* atomic: the calibration is running */
static pid_t sleeper_tid;          /* atomic: the thread that waits */
static int sleeper_cpu[MAX_SEEN], waker_cpu[MAX_SEEN];
static unsigned int nsleeps, nwrites; /* atomic */

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
	static int (*real)(int, struct epoll_event *, int, int);

	if (real == NULL)
		real = (int (*)(int, struct epoll_event *, int, int))dlsym(RTLD_NEXT, "epoll_wait");
	if (__atomic_load_n(&delaying, __ATOMIC_ACQUIRE)) {
		struct timespec d = { .tv_sec = 0, .tv_nsec = DELAY_NS };

		__atomic_store_n(&sleeper_tid, (pid_t)syscall(SYS_gettid), __ATOMIC_RELEASE);
		record(sleeper_cpu, &nsleeps);
		nanosleep(&d, NULL);
	}
	return real(epfd, ev, maxevents, timeout);
}

ssize_t
write(int fd, const void *buf, size_t count)
{
	static ssize_t (*real)(int, const void *, size_t);

	if (real == NULL)
		real = (ssize_t (*)(int, const void *, size_t))dlsym(RTLD_NEXT, "write");
	/* an eventfd write from another thread than the sleeper: the producer */
	if (__atomic_load_n(&delaying, __ATOMIC_ACQUIRE) && count == 8 &&
	    (pid_t)syscall(SYS_gettid) != __atomic_load_n(&sleeper_tid, __ATOMIC_ACQUIRE))
		record(waker_cpu, &nwrites);
	return real(fd, buf, count);
}

int
main(void)
{
	const struct evd_policy_env *env;
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	cpu_set_t one, after;
	unsigned int ns, nw;

	/* as EAL pins its main lcore */
	CPU_ZERO(&one);
	CPU_SET(0, &one);
	CHECK(sched_setaffinity(0, sizeof(one), &one) == 0);

	__atomic_store_n(&delaying, 1, __ATOMIC_RELEASE);
	env = evd_policy_env_get();
	__atomic_store_n(&delaying, 0, __ATOMIC_RELEASE);

	ns = __atomic_load_n(&nsleeps, __ATOMIC_ACQUIRE);
	nw = __atomic_load_n(&nwrites, __ATOMIC_ACQUIRE);
	printf("B %lu ns, L(10us) %lu ns (each wait delayed %ld ns), %u waits, %u producer "
	       "writes, %ld CPUs\n", (unsigned long)env->sleep_wake_ns,
	       (unsigned long)env->wake_ns[0], DELAY_NS, ns, nw, ncpu);
	/* B on the thread's clock: the delay, spent asleep, is not in it */
	CHECK(env->sleep_wake_ns < EVD_ENV_B_MAX_NS / 2);
	/* L on the wall clock: the delay before the 10 us wait is */
	CHECK(env->wake_ns[0] >= (uint64_t)DELAY_NS - 100000);
	CHECK(ns >= 5 && nw >= 5);
	if (ncpu >= 2) {
		for (unsigned int i = 0; i < ns && i < MAX_SEEN; i++)
			CHECK_EQ(sleeper_cpu[i], sleeper_cpu[0]); /* pinned */
		for (unsigned int i = 0; i < nw && i < MAX_SEEN; i++)
			CHECK(waker_cpu[i] != sleeper_cpu[0]);
	} else {
		printf("one CPU online: the producer's placement not checked\n");
	}
	/* the caller's affinity is as it was */
	CHECK(sched_getaffinity(0, sizeof(after), &after) == 0);
	CHECK(CPU_EQUAL(&after, &one));
	printf("ok\n");
	return 0;
}
