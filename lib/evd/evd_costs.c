/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * B and L(g): the process's cost environment, measured once (the
 * calibration) or given (evd_policy_env_set), and the figures read from it.
 */
#include <math.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <rte_common.h>
#include <rte_pause.h>

#include "evd_costs_private.h"
#include "evd_private.h"

/*
 * B and L are measured the way the loop pays them, in one run of eventfd
 * wakes: a producer thread waits until the sleeper has slept g, writes the
 * eventfd and waits for the sleeper's ack. B is the sleeper's own CPU
 * (CLOCK_THREAD_CPUTIME_ID) for the epoll_wait and the read, L the wall
 * time from the write to epoll_wait returning. Only wakes that follow
 * others like them count, because on a VM the host learns from recent
 * wakes how long to poll a halted vCPU. The method and the figures it
 * gives: doc/guides/policies.md, "The choice at every empty round".
 */

static struct evd_policy_env env;

static const uint64_t cal_at[EVD_ENV_WAKE_POINTS] = { 10000, 100000, 1000000, 10000000 };
/* The costs a policy prices with until some are measured or given: a
 * KVM guest's order of magnitude (policies.md, "The choice at every empty
 * round", has what this project's VMs measure). */
const struct evd_policy_env evd__env_defaults = {
	.sleep_wake_ns = 10000,
	.wake_at_ns = { 10000, 100000, 1000000, 10000000 },
	.wake_ns = { 20000, 20000, 20000, 20000 },
};
/* Wakes per point of L, then the cold phase (sleeps of 2 ms and 100 us in
 * turn; its 100 us wakes give cold_wake_ns). The first CAL_WARM of a point
 * (pairs, in the cold phase) are not counted: they follow wakes of another
 * length, to which the host is still tuned. */
#define CAL_PHASES (EVD_ENV_WAKE_POINTS + 1)
#define CAL_COLD (CAL_PHASES - 1)
#define CAL_COLD_LONG_NS 2000000ull
/* (the most at 10 us, where wakes are cheap and a p99 target takes their
 * 99th percentile; L and B count the first CAL_L_WAKES there, as many as
 * at 100 us, so that a longer run of short wakes does not move them) */
static const int cal_wakes[CAL_PHASES] = { 103, 14, 12, 8, 18 };
#define CAL_WARM 3
#define CAL_L_WAKES (cal_wakes[1] - CAL_WARM)
#define CAL_P99_WAKES 50 /* the least left (stalls out) a 99th percentile is taken of */
/* Timed waits with nothing to wake them, per point of L, the first
 * cal_to_warm[k] not counted: few at 10 ms, where each takes 10 ms and
 * follows waits long enough to have cooled the host already. Their CPU C
 * counts at the points of timeout_at_ns (cal_to_c[k], -1: none). */
static const int cal_to_waits[EVD_ENV_WAKE_POINTS] = { 14, 14, 8, 4 };
static const int cal_to_warm[EVD_ENV_WAKE_POINTS] = { 3, 3, 3, 1 };
static const int cal_to_c[EVD_ENV_WAKE_POINTS] = { -1, 0, 1, -1 };

/* The producer's wait before the i-th wake of phase k. */
static uint64_t
cal_gap(int k, int i)
{
	if (k < EVD_ENV_WAKE_POINTS)
		return cal_at[k];
	return i % 2 == 0 ? CAL_COLD_LONG_NS : cal_at[1];
}
#define CAL_MAX_WAKES EVD__CAL_MAX_WAKES
#define CAL_WAIT_NS 100000000ull /* a wait this long: the other side gave up */
#define CAL_SLACK_NS 1000 /* the loop's timer slack (evd_loop_run) */

struct cal {
	int efd, ack_fd;
	bool spin;          /* the producer has a CPU of its own (its own field) */
	int stop;           /* atomic: the sleeper gave up */
	uint64_t asleep_at; /* atomic: the sleeper's clock before it waits; 0: not yet */
	uint64_t sent;      /* atomic: the write's time */
	int sleeper_cpu;
	int waker_cpu;      /* atomic: where the producer ran; -1: unknown */
	int nb;             /* B samples taken */
	int stalls;         /* wakes left out of L as stalls */
	int lowered;        /* points over twice a longer one's L, brought down */
};

/* Start a thread on the CPUs in @p set (or, where that is refused, as a
 * cpuset may, wherever it lands). */
static int
start_on(pthread_t *th, void *(*fn)(void *), void *arg, const cpu_set_t *set)
{
	pthread_attr_t attr;
	int rc = -1;

	if (CPU_COUNT(set) > 0 && pthread_attr_init(&attr) == 0) {
		if (pthread_attr_setaffinity_np(&attr, sizeof(*set), set) == 0)
			rc = pthread_create(th, &attr, fn, arg);
		pthread_attr_destroy(&attr);
	}
	if (rc != 0)
		rc = pthread_create(th, NULL, fn, arg);
	return rc;
}

/* only @p cpu, or every CPU but it (the kernel keeps those of our cpuset
 * that are online; none: the placement is refused) */
static void
cpus(cpu_set_t *set, int cpu, bool only)
{
	long conf = sysconf(_SC_NPROCESSORS_CONF);

	CPU_ZERO(set);
	if (cpu < 0 || cpu >= CPU_SETSIZE)
		return;
	for (long c = 0; c < conf && c < CPU_SETSIZE; c++)
		if ((c == cpu) == only)
			CPU_SET((int)c, set);
}

static uint64_t
thread_cpu_ns(void)
{
	struct timespec ts;

	if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0)
		return 0;
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t
voluntary_switches(void)
{
	struct rusage ru;

	return getrusage(RUSAGE_THREAD, &ru) == 0 ? (uint64_t)ru.ru_nvcsw : 0;
}

/* the producer waiting: spinning on a CPU of its own, sleeping on a shared one */
static void
cal_pause(const struct cal *c)
{
	struct timespec ts = { .tv_sec = 0, .tv_nsec = 5000 };

	if (c->spin)
		rte_pause();
	else
		nanosleep(&ts, NULL);
}

/* the producer: for every wake, wait until the sleeper has slept g, write,
 * then wait for its ack (CAL_WAIT_NS at most: it may have given up) */
static void *
cal_waker(void *arg)
{
	struct cal *c = arg;
	cpu_set_t mine;

	/* spin only on CPUs the sleeper does not use (placed, not fallen back);
	 * read by the sleeper after the join */
	c->spin = pthread_getaffinity_np(pthread_self(), sizeof(mine), &mine) == 0 &&
		  c->sleeper_cpu >= 0 && !CPU_ISSET(c->sleeper_cpu, &mine);
	__atomic_store_n(&c->waker_cpu, sched_getcpu(), __ATOMIC_RELAXED);
	for (int k = 0; k < CAL_PHASES; k++)
		for (int i = 0; i < cal_wakes[k]; i++) {
			uint64_t one = 1, v, t, deadline = evd__monotonic_ns(NULL) + CAL_WAIT_NS;
			struct timespec until;

			while ((t = __atomic_load_n(&c->asleep_at, __ATOMIC_ACQUIRE)) == 0) {
				if (__atomic_load_n(&c->stop, __ATOMIC_ACQUIRE) ||
				    evd__monotonic_ns(NULL) > deadline)
					return NULL;
				cal_pause(c);
			}
			__atomic_store_n(&c->asleep_at, 0, __ATOMIC_RELAXED);
			t += cal_gap(k, i);
			if (c->spin) {
				while (evd__monotonic_ns(NULL) < t)
					rte_pause();
			} else {
				until.tv_sec = (time_t)(t / 1000000000ull);
				until.tv_nsec = (long)(t % 1000000000ull);
				while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &until, NULL) ==
				       EINTR)
					;
			}
			__atomic_store_n(&c->sent, evd__monotonic_ns(NULL), __ATOMIC_RELEASE);
			if (write(c->efd, &one, sizeof(one)) < 0)
				return NULL;
			deadline = evd__monotonic_ns(NULL) + CAL_WAIT_NS;
			while (read(c->ack_fd, &v, sizeof(v)) < 0) {
				if (__atomic_load_n(&c->stop, __ATOMIC_ACQUIRE) ||
				    evd__monotonic_ns(NULL) > deadline)
					return NULL;
				cal_pause(c);
			}
		}
	return NULL;
}

static int
cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* The mean without the largest and the smallest sample (@p v sorted): L
 * enters the model as an expectation, and a VM's wakes are a mixture of
 * warm and cold ones, of which a median picks one mode or the other from
 * run to run where the mean weighs them by how often each came. */
static uint64_t
trimmed_mean(const uint64_t *v, int n)
{
	uint64_t sum = 0;

	for (int i = 1; i < n - 1; i++)
		sum += v[i];
	return sum / (uint64_t)(n - 2);
}

/* A wake this far over its point's lower quartile, and over
 * CAL_STALL_MIN_NS, is a stall (the VM stopped the sleeper's vCPU), not a
 * wake latency; the quartile, not the median, since a point of few wakes
 * can have a stalled median. Both bounds sit above the warm and cold
 * mixtures a VM really wakes in (policies.md, "The choice at every empty
 * round"). */
#define CAL_STALL_RATIO 16
#define CAL_STALL_MIN_NS 500000ull

/* How many of a point's counted wakes (sorted) are not stalls. */
static int
cal_kept(const uint64_t *lat, int n)
{
	uint64_t cut = RTE_MAX(lat[n / 4] * CAL_STALL_RATIO, CAL_STALL_MIN_NS);
	int keep = n;

	while (keep > 0 && lat[keep - 1] > cut)
		keep--;
	return keep;
}

/* One point's L from its counted wakes (sorted here): the trimmed mean of
 * those that are not stalls; 0 with fewer than 3 left. */
static uint64_t
cal_point(uint64_t *lat, int n, int *stalls)
{
	int keep;

	if (n < 3)
		return 0;
	qsort(lat, n, sizeof(lat[0]), cmp_u64);
	keep = cal_kept(lat, n);
	*stalls += n - keep;
	return keep >= 3 ? trimmed_mean(lat, keep) : 0;
}

/* L from each point's counted wakes (sorted here; a point with fewer than
 * 3 left keeps wake_ns[k], the fallback): stalls out, the trimmed mean, then
 * monotone in g. Where a point reads higher than a longer one, the shorter
 * is the suspect, since what delays a wake only adds to it: it comes down
 * to the longer one, not the longer one up to it. An unmeasured point
 * keeps its fallback between its neighbours, lowering none (it is no
 * reading). Internal, not static: tests/test_cal_reduce.c drives it. */
void
evd__cal_reduce(uint64_t lat[][CAL_MAX_WAKES], const int *n, uint64_t *wake_ns, int *stalls,
		int *lowered)
{
	bool measured[EVD_ENV_WAKE_POINTS] = { false };
	uint64_t above = UINT64_MAX; /* the next measured point's L */
	int k;

	for (k = 0; k < EVD_ENV_WAKE_POINTS; k++) {
		uint64_t l = cal_point(lat[k], n[k], stalls);

		if (l != 0) {
			wake_ns[k] = l;
			measured[k] = true;
		}
	}
	/* down from the longest: every point at most the next measured one */
	for (k = EVD_ENV_WAKE_POINTS - 1; k >= 0; k--) {
		if (measured[k] && above != UINT64_MAX)
			*lowered += wake_ns[k] > 2 * above;
		wake_ns[k] = RTE_MIN(wake_ns[k], above);
		if (measured[k])
			above = wake_ns[k];
	}
	/* up from the shortest: an unmeasured one at least the one before */
	for (k = 1; k < EVD_ENV_WAKE_POINTS; k++)
		if (!measured[k])
			wake_ns[k] = RTE_MAX(wake_ns[k], wake_ns[k - 1]);
}

/*
 * The host's halt window from the cold wakes (Lc: 100 us sleeps after 2 ms
 * ones): W is the 100 us point where Lc is over twice the lesser of
 * L(10 us) and L(100 us) (the lesser: the 100 us point may itself hold
 * wakes that found the window shut). L(100 us) then keeps only the point's
 * warm wakes (@p lat, sorted; those under the geometric mean of that L and
 * Lc), because the model prices the cold ones at W with Lc and, counted in
 * L too, they would raise L at every gap under 100 us; with fewer than 3
 * it stays. Returns W (0: no window); may lower wake_ns[1], never under
 * wake_ns[0]. Internal, not static: tests/test_cal_reduce.c drives it.
 */
uint64_t
evd__cal_window(const uint64_t *lat, int n, uint64_t *wake_ns, uint64_t cold_ns)
{
	uint64_t least = RTE_MIN(wake_ns[0], wake_ns[1]), cut;
	int warm = 0;

	if (cold_ns <= 2 * least)
		return 0;
	cut = (uint64_t)sqrt((double)least * (double)cold_ns);
	while (warm < n && lat[warm] < cut)
		warm++;
	if (warm >= 3)
		wake_ns[1] = RTE_MAX(RTE_MIN(wake_ns[1], trimmed_mean(lat, warm)), wake_ns[0]);
	return cal_at[1];
}

/* C(g) and T(g): the thread's CPU for a timed wait that ends by its
 * timeout, and how late it ends, measured the way the loop waits
 * (epoll_pwait2 with nothing ready; the loop's 1 us timer slack): C the
 * median of the counted waits that blocked, T the trimmed mean of all the
 * counted ones, since a wait preempted past its timeout is late all the
 * same. Each left 0 (B, L stand in) where epoll_pwait2 is missing or too
 * few waits counted at one of its points. */
static void
cal_timeouts(int epfd, uint64_t ovh)
{
	int slack = prctl(PR_GET_TIMERSLACK, 0, 0, 0, 0);

	if (slack > CAL_SLACK_NS)
		(void)prctl(PR_SET_TIMERSLACK, CAL_SLACK_NS, 0, 0, 0);
	for (int k = 0; k < EVD_ENV_WAKE_POINTS; k++) {
		uint64_t at = cal_at[k], cpu[CAL_MAX_WAKES], late[CAL_MAX_WAKES];
		struct timespec ts = { .tv_sec = 0, .tv_nsec = (long)at };
		int n = 0, nc = 0, c = cal_to_c[k];

		for (int i = 0; i < cal_to_waits[k]; i++) {
			struct epoll_event out;
			uint64_t t0 = thread_cpu_ns(), t1, sw0 = voluntary_switches();
			uint64_t w0 = evd__monotonic_ns(NULL), w1;

			if (epoll_pwait2(epfd, &out, 1, &ts, NULL) != 0)
				break; /* ENOSYS before Linux 5.11, or something ready */
			w1 = evd__monotonic_ns(NULL);
			t1 = thread_cpu_ns();
			if (i < cal_to_warm[k] || w1 < w0 + at)
				continue;
			late[n++] = w1 - w0 - at;
			if (voluntary_switches() > sw0 && t0 != 0 && t1 > t0 + ovh)
				cpu[nc++] = t1 - t0 - ovh;
		}
		if (n >= 3) {
			qsort(late, n, sizeof(late[0]), cmp_u64);
			env.timeout_late_ns[k] = RTE_MAX(trimmed_mean(late, n), 1ull);
		}
		if (c >= 0 && nc >= 3) {
			qsort(cpu, nc, sizeof(cpu[0]), cmp_u64);
			env.timeout_at_ns[c] = at;
			env.timeout_ns[c] = cpu[nc / 2];
		}
	}
	/* each at all its points or at none (evd_policy_env_set's rule): B
	 * and L stand in */
	if (env.timeout_ns[0] == 0 || env.timeout_ns[1] == 0) {
		memset(env.timeout_at_ns, 0, sizeof(env.timeout_at_ns));
		memset(env.timeout_ns, 0, sizeof(env.timeout_ns));
	}
	for (int k = 0; k < EVD_ENV_WAKE_POINTS; k++)
		if (env.timeout_late_ns[k] == 0)
			memset(env.timeout_late_ns, 0, sizeof(env.timeout_late_ns));
	if (slack > CAL_SLACK_NS)
		(void)prctl(PR_SET_TIMERSLACK, (unsigned long)slack, 0, 0, 0);
}

/* the sleeper, pinned to one CPU; it starts the producer on the others */
static void *
cal_sleeper(void *arg)
{
	struct cal *c = arg;
	struct epoll_event ev = { .events = EPOLLIN }, out;
	uint64_t cpu[2 * CAL_MAX_WAKES], lat[EVD_ENV_WAKE_POINTS][CAL_MAX_WAKES], ovh = UINT64_MAX;
	uint64_t cold[CAL_MAX_WAKES];
	/* nl: a point's counted wakes; nl_l: those of them that L counts */
	int epfd, nl[EVD_ENV_WAKE_POINTS] = { 0 }, nl_l[EVD_ENV_WAKE_POINTS] = { 0 }, nc = 0, k = 0;
	bool ok = true;
	cpu_set_t others;
	pthread_t th;

	c->sleeper_cpu = sched_getcpu();
	cpus(&others, c->sleeper_cpu, false);
	/* what reading the thread's clock costs, taken off each B sample */
	for (int i = 0; i < 5; i++) {
		uint64_t a = thread_cpu_ns(), b = thread_cpu_ns();

		ovh = RTE_MIN(ovh, b - a);
	}
	epfd = epoll_create1(EPOLL_CLOEXEC);
	c->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	c->ack_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (epfd < 0 || c->efd < 0 || c->ack_fd < 0 ||
	    epoll_ctl(epfd, EPOLL_CTL_ADD, c->efd, &ev) < 0 ||
	    start_on(&th, cal_waker, c, &others) != 0)
		goto out;
	for (k = 0; ok && k < CAL_PHASES; k++) {
		for (int i = 0; ok && i < cal_wakes[k]; i++) {
			uint64_t v, one = 1, t, t0, t1, sent, sw0, sw1;
			int n;

			sw0 = voluntary_switches();
			t0 = thread_cpu_ns();
			__atomic_store_n(&c->asleep_at, evd__monotonic_ns(NULL), __ATOMIC_RELEASE);
			do
				n = epoll_wait(epfd, &out, 1, (int)(CAL_WAIT_NS / 1000000));
			while (n < 0 && errno == EINTR);
			t = evd__monotonic_ns(NULL);
			ok = n == 1 && read(c->efd, &v, sizeof(v)) == 8;
			t1 = thread_cpu_ns();
			sw1 = voluntary_switches();
			if (!ok)
				break;
			sent = __atomic_load_n(&c->sent, __ATOMIC_ACQUIRE);
			if (k == CAL_COLD) {
				/* a 100 us sleep after a 2 ms one */
				if (sw1 > sw0 && i % 2 == 1 && i >= 2 * CAL_WARM && t >= sent &&
				    nc < CAL_MAX_WAKES)
					cold[nc++] = t - sent;
			} else if (sw1 > sw0 && i >= CAL_WARM) { /* it blocked: a real sleep */
				bool for_l = i < CAL_WARM + CAL_L_WAKES; /* else the 99th's alone */

				if (t >= sent)
					lat[k][nl[k]++] = t - sent;
				nl_l[k] = for_l ? nl[k] : nl_l[k];
				if (k < 2 && for_l && t0 != 0 && t1 > t0 + ovh)
					cpu[c->nb++] = t1 - t0 - ovh;
			}
			ok = write(c->ack_fd, &one, sizeof(one)) == 8;
		}
	}
	evd__cal_reduce(lat, nl_l, env.wake_ns, &c->stalls, &c->lowered);
	if (nl[0] >= CAL_P99_WAKES) {
		int keep;

		qsort(lat[0], nl[0], sizeof(lat[0][0]), cmp_u64);
		keep = cal_kept(lat[0], nl[0]);
		env.wake_p99_ns = keep >= CAL_P99_WAKES ? lat[0][(keep * 99 - 1) / 100] : 0;
	}
	__atomic_store_n(&c->stop, 1, __ATOMIC_RELEASE);
	pthread_join(th, NULL);
	if (ok) {
		env.cold_wake_ns = cal_point(cold, nc, &c->stalls);
		env.window_ns = evd__cal_window(lat[1], nl[1], env.wake_ns, env.cold_wake_ns);
		cal_timeouts(epfd, ovh);
	}
	if (c->nb >= 5) {
		qsort(cpu, c->nb, sizeof(cpu[0]), cmp_u64);
		env.sleep_wake_ns = cpu[c->nb / 2];
	}
out:
	if (epfd >= 0)
		close(epfd);
	if (c->efd >= 0)
		close(c->efd);
	if (c->ack_fd >= 0)
		close(c->ack_fd);
	return NULL;
}

/* The timeout's CPU and the host's window, as measured or given. */
static void
log_env_extra(const char *how)
{
	if (env.timeout_ns[0] != 0)
		EVD_LOG(INFO, "%s timeout CPU C(100us, 1ms): %" PRIu64 " %" PRIu64 " ns", how,
			env.timeout_ns[0], env.timeout_ns[1]);
	else
		EVD_LOG(INFO, "%s timeout CPU: none, B stands in", how);
	if (env.timeout_late_ns[0] != 0)
		EVD_LOG(INFO, "%s timer lateness T(10us, 100us, 1ms, 10ms): %" PRIu64 " %" PRIu64
			" %" PRIu64 " %" PRIu64 " ns", how, env.timeout_late_ns[0],
			env.timeout_late_ns[1], env.timeout_late_ns[2], env.timeout_late_ns[3]);
	else
		EVD_LOG(INFO, "%s timer lateness: none, L stands in", how);
	if (env.window_ns != 0)
		EVD_LOG(INFO, "%s host halt window: a sleep of up to %" PRIu64 " ns after a longer "
			"one wakes in %" PRIu64 " ns, not L", how, env.window_ns, env.cold_wake_ns);
	else
		EVD_LOG(INFO, "%s host halt window: none (a short sleep after a long one wakes in "
			"%" PRIu64 " ns)", how, env.cold_wake_ns);
	if (env.wake_p99_ns != 0)
		EVD_LOG(INFO, "%s wake after %" PRIu64 " ns: 99th percentile %" PRIu64 " ns", how,
			env.wake_at_ns[0], env.wake_p99_ns);
}

static void
calibrate(void)
{
	struct cal c = { .efd = -1, .ack_fd = -1, .sleeper_cpu = -1, .waker_cpu = -1 };
	cpu_set_t here;
	pthread_t th;

	env = evd__env_defaults; /* what a measurement that fails leaves */
	/* a sleeper of its own, pinned, with the producer on the other CPUs: a
	 * helper inherits its creator's affinity, and under EAL (one CPU) every
	 * wake would be a same-CPU switch; the caller's affinity stays as is */
	cpus(&here, sched_getcpu(), true);
	if (start_on(&th, cal_sleeper, &c, &here) == 0)
		pthread_join(th, NULL);
	/* Keep the figure in a sane band: a loaded VM can report outliers. */
	env.sleep_wake_ns = RTE_MAX(env.sleep_wake_ns, (uint64_t)EVD_ENV_B_MIN_NS);
	env.sleep_wake_ns = RTE_MIN(env.sleep_wake_ns, (uint64_t)EVD_ENV_B_MAX_NS);
	EVD_LOG(INFO, "calibrated sleep-and-wake cost B (CPU): %" PRIu64 " ns (%d samples; "
		"sleeper on CPU %d, producer on CPU %d)", env.sleep_wake_ns, c.nb, c.sleeper_cpu,
		__atomic_load_n(&c.waker_cpu, __ATOMIC_RELAXED));
	EVD_LOG(INFO, "calibrated wake latency L(10us, 100us, 1ms, 10ms): %" PRIu64 " %" PRIu64
		" %" PRIu64 " %" PRIu64 " ns", env.wake_ns[0], env.wake_ns[1], env.wake_ns[2],
		env.wake_ns[3]);
	log_env_extra("calibrated");
	if (c.stalls > 0 || c.lowered > 0)
		EVD_LOG(NOTICE, "calibration: %d wakes left out of L as stalls (over %d x their "
			"point's lower quartile and %llu us); %d points read over twice a longer sleep's "
			"and came down to it", c.stalls, CAL_STALL_RATIO,
			CAL_STALL_MIN_NS / 1000, c.lowered);
	if (c.nb < 5)
		EVD_LOG(NOTICE, "calibration: too few wakes measured, B and L are typical VM "
			"figures; give measured ones with evd_policy_env_set()");
	else if (!c.spin || c.waker_cpu == c.sleeper_cpu)
		EVD_LOG(NOTICE, "calibration: the producer ran on the sleeper's CPU (%d; no other "
			"CPU, or its placement refused): L is a same-CPU wake, shorter than one "
			"from a device or another core", c.sleeper_cpu);
}

double
evd_policy_env_wake_ns(const struct evd_policy_env *e, uint64_t g)
{
	return evd__wake_interp(e, NULL, g);
}

/* C, measured at the two timeout points, interpolated on log g (flat
 * outside them). */
static double
timeout_interp(const struct evd_policy_env *e, const uint64_t *v, uint64_t g)
{
	const uint64_t *at = e->timeout_at_ns;
	double f;

	if (g <= at[0])
		return (double)v[0];
	if (g >= at[1])
		return (double)v[1];
	f = (log((double)g) - log((double)at[0])) / (log((double)at[1]) - log((double)at[0]));
	return (double)v[0] + f * ((double)v[1] - (double)v[0]);
}

double
evd_policy_env_timeout_ns(const struct evd_policy_env *e, uint64_t g)
{
	if (!evd__timeout_cpu_known(e))
		return (double)e->sleep_wake_ns;
	return timeout_interp(e, e->timeout_ns, g);
}

double
evd_policy_env_bounded_sleep_ns(const struct evd_policy_env *e, uint64_t g)
{
	double b = (double)e->sleep_wake_ns, c1, f, hi;

	if (!evd__timeout_cpu_known(e))
		return b;
	if (g <= e->timeout_at_ns[1])
		return fmax(timeout_interp(e, e->timeout_ns, g), b);
	hi = 10.0 * (double)e->timeout_at_ns[1];
	if ((double)g >= hi)
		return b;
	c1 = fmax((double)e->timeout_ns[1], b);
	f = (log((double)g) - log((double)e->timeout_at_ns[1])) / log(10.0);
	return c1 + f * (b - c1);
}

double
evd_policy_env_timeout_late_ns(const struct evd_policy_env *e, uint64_t g)
{
	if (!evd__timeout_late_known(e))
		return evd__wake_interp(e, NULL, g);
	return evd__points_interp(e, e->timeout_late_ns, NULL, g);
}

double
evd_policy_env_wake_after_ns(const struct evd_policy_env *e, uint64_t g, uint64_t prev_ns)
{
	double l = evd__wake_interp(e, NULL, g);

	if (e->window_ns == 0)
		return l;
	return evd__wake_windowed(e, l, (double)g, prev_ns == UINT64_MAX ? 0 : (double)prev_ns);
}

static pthread_mutex_t env_lock = PTHREAD_MUTEX_INITIALIZER;
static bool env_ready; /* atomic: env is in place, fixed from then on */
static const char env_given[] = "given"; /* evd_policy_env_set()'s origin */
static const char *env_origin; /* set before env_ready */

const struct evd_policy_env *
evd_policy_env_get(void)
{
	if (!__atomic_load_n(&env_ready, __ATOMIC_ACQUIRE)) {
		pthread_mutex_lock(&env_lock);
		if (!env_ready) {
			env = evd__env_defaults;
			env_origin = "defaults";
			__atomic_store_n(&env_ready, true, __ATOMIC_RELEASE);
		}
		pthread_mutex_unlock(&env_lock);
	}
	return &env;
}

/* The costs are fixed once in place: a second setter is refused (under env_lock). */
static int
env_taken(const char *call)
{
	return EVD_ARG_ERR(-EALREADY, "%s: the costs are in place already (%s): call it before the "
			   "first policy that prices with them", call, env_origin);
}

int
evd_policy_env_calibrate(void)
{
	int rc = 0;

	pthread_mutex_lock(&env_lock);
	if (env_ready) {
		rc = env_taken("evd_policy_env_calibrate");
	} else {
		calibrate();
		env_origin = "measured";
		__atomic_store_n(&env_ready, true, __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&env_lock);
	return rc;
}

const char *
evd_policy_env_origin(void)
{
	return __atomic_load_n(&env_ready, __ATOMIC_ACQUIRE) ? env_origin : NULL;
}

const struct evd_policy_env *
evd_policy_env_peek(bool *given)
{
	if (!__atomic_load_n(&env_ready, __ATOMIC_ACQUIRE))
		return NULL;
	if (given != NULL)
		*given = env_origin == env_given;
	return &env;
}

int
evd_policy_env_set(const struct evd_policy_env *e)
{
	const char *why = NULL;
	int rc = 0;

	if (e == NULL)
		return EVD_ARG_ERR(-EINVAL, "evd_policy_env_set: NULL environment");
	if (e->sleep_wake_ns == 0 || e->sleep_wake_ns > EVD_ENV_GIVEN_MAX_NS)
		why = "B (sleep_wake_ns) of 0 or over EVD_ENV_GIVEN_MAX_NS";
	for (int k = 0; why == NULL && k < EVD_ENV_WAKE_POINTS; k++)
		if (e->wake_at_ns[k] == 0 ||
		    (k > 0 && (double)e->wake_at_ns[k] <= (double)e->wake_at_ns[k - 1]))
			why = "wake_at_ns not increasing from over 0 (L is interpolated between them)";
		else if (e->wake_ns[k] > EVD_ENV_GIVEN_MAX_NS)
			why = "an L (wake_ns) over EVD_ENV_GIVEN_MAX_NS";
		/* as measured ones are made: the rule takes the longest sleep's
		 * wake for the dearest (the guard's bounds) */
		else if (k > 0 && e->wake_ns[k] < e->wake_ns[k - 1])
			why = "L (wake_ns) falling as the time asleep grows (a longer sleep never "
			      "wakes faster)";
	/* the timeout's points both or neither, increasing; C at both or at
	 * none (0: B stands in), none without points */
	if (why == NULL &&
	    ((e->timeout_at_ns[0] == 0) != (e->timeout_at_ns[1] == 0) ||
	     (e->timeout_at_ns[0] != 0 &&
	      (double)e->timeout_at_ns[1] <= (double)e->timeout_at_ns[0])))
		why = "timeout_at_ns with one point set, or not increasing";
	if (why == NULL &&
	    ((e->timeout_ns[0] == 0) != (e->timeout_ns[1] == 0) ||
	     (e->timeout_at_ns[0] == 0 && e->timeout_ns[0] != 0)))
		why = "C (timeout_ns) at one point only, or without timeout_at_ns";
	/* T at every point of L or at none (0: L stands in), as a calibration
	 * makes it, so that no point falls back to L between measured ones */
	for (int k = 1; why == NULL && k < EVD_ENV_WAKE_POINTS; k++)
		if ((e->timeout_late_ns[k] == 0) != (e->timeout_late_ns[0] == 0))
			why = "T (timeout_late_ns) at some points of wake_at_ns only";
	for (int k = 0; why == NULL && k < EVD_ENV_WAKE_POINTS; k++)
		if (e->timeout_late_ns[k] > EVD_ENV_GIVEN_MAX_NS)
			why = "a T (timeout_late_ns) over EVD_ENV_GIVEN_MAX_NS";
	if (why == NULL &&
	    (e->timeout_ns[0] > EVD_ENV_GIVEN_MAX_NS || e->timeout_ns[1] > EVD_ENV_GIVEN_MAX_NS ||
	     e->window_ns > EVD_ENV_GIVEN_MAX_NS || e->cold_wake_ns > EVD_ENV_GIVEN_MAX_NS ||
	     e->wake_p99_ns > EVD_ENV_GIVEN_MAX_NS))
		why = "C, window_ns, cold_wake_ns or wake_p99_ns over EVD_ENV_GIVEN_MAX_NS";
	if (why == NULL && e->window_ns != 0 && e->cold_wake_ns == 0)
		why = "window_ns without cold_wake_ns";
	if (why != NULL) {
		EVD_LOG(ERR, "given environment refused: %s", why);
		return -EINVAL;
	}
	pthread_mutex_lock(&env_lock);
	if (env_ready) {
		rc = env_taken("evd_policy_env_set");
	} else {
		env = *e;
		env_origin = env_given;
		__atomic_store_n(&env_ready, true, __ATOMIC_RELEASE);
		EVD_LOG(INFO, "given environment: B %" PRIu64 " ns, L(%" PRIu64 ", %" PRIu64 ", %"
			PRIu64 ", %" PRIu64 " ns) %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 " ns",
			env.sleep_wake_ns, env.wake_at_ns[0], env.wake_at_ns[1], env.wake_at_ns[2],
			env.wake_at_ns[3], env.wake_ns[0], env.wake_ns[1], env.wake_ns[2], env.wake_ns[3]);
		log_env_extra("given");
	}
	pthread_mutex_unlock(&env_lock);
	return rc;
}
