/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The loop's default clock: CLOCK_MONOTONIC before rte_eal_init(), the TSC
 * after it where the TSC is invariant. Either way its nanoseconds are
 * CLOCK_MONOTONIC's: they start there and run at its rate (checked against
 * CLOCK_MONOTONIC over the same interval, read on both sides, so a
 * preempted thread widens the bracket rather than failing it), and a timer
 * on it does not fire early by CLOCK_MONOTONIC.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <unistd.h>

#include <rte_cpuflags.h>
#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_log.h>

#include "evd_test.h"

#define RATE_ERR 1e-3 /* the TSC's rate as the library measured it: tolerated error */

static uint64_t
mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Create a loop and return which clock its debug line names. */
static struct evd_loop *
loop_with_clock(char *clock, size_t len, uint64_t *created_ns)
{
	char *buf = NULL, *p;
	size_t n = 0;
	FILE *log = open_memstream(&buf, &n);
	struct evd_loop_conf conf = { .name = "clk", .policy = "intr" };
	struct evd_loop *loop;

	CHECK(log != NULL);
	CHECK_EQ(rte_openlog_stream(log), 0);
	*created_ns = mono_ns();
	CHECK_EQ(evd_loop_create(&conf, &loop), 0);
	rte_openlog_stream(NULL);
	fclose(log);
	p = buf != NULL ? strstr(buf, ", clock ") : NULL;
	CHECK(p != NULL);
	CHECK_EQ(sscanf(p, ", clock %31s", clock), 1);
	clock[len - 1] = '\0';
	free(buf);
	return loop;
}

/* Starts at CLOCK_MONOTONIC and runs at its rate over 50 ms. */
static void
check_rate(struct evd_loop *loop, uint64_t created_ns)
{
	uint64_t a = mono_ns(), t0 = evd_loop_now_ns(loop), b = mono_ns();
	uint64_t c, t1, d;
	double slack = 1000 + RATE_ERR * (double)(b - created_ns);

	CHECK((double)t0 >= (double)a - slack && (double)t0 <= (double)b + slack);
	usleep(50000);
	c = mono_ns();
	t1 = evd_loop_now_ns(loop);
	d = mono_ns();
	printf("  50 ms: loop clock %.6f ms, CLOCK_MONOTONIC %.6f to %.6f ms\n", (t1 - t0) / 1e6,
	       (c - b) / 1e6, (d - a) / 1e6);
	CHECK((double)(t1 - t0) >= (double)(c - b) * (1 - RATE_ERR));
	CHECK((double)(t1 - t0) <= (double)(d - a) * (1 + RATE_ERR));
}

static void
fired(struct evd_loop *loop, struct evd_timer *t, void *arg)
{
	RTE_SET_USED(t);
	*(uint64_t *)arg = mono_ns();
	evd_loop_stop(loop);
}

/* A 20 ms timer, the loop asleep meanwhile, fires no earlier by CLOCK_MONOTONIC. */
static void
check_timer(struct evd_loop *loop)
{
	struct evd_timer *t;
	uint64_t at = 0, start = mono_ns();

	CHECK_EQ(evd_timer_start(loop, 20000000, 0, fired, &at, &t), 0);
	CHECK_EQ(evd_loop_run(loop), 0);
	printf("  a 20 ms timer fired after %.3f ms\n", (at - start) / 1e6);
	CHECK(at != 0 && (double)(at - start) >= 20e6 * (1 - RATE_ERR));
}

static void
test_before_eal(void)
{
	char clock[32];
	uint64_t created;
	struct evd_loop *loop = loop_with_clock(clock, sizeof(clock), &created);

	double hz;

	printf("  before rte_eal_init: %s\n", clock);
	CHECK(strcmp(clock, "monotonic") == 0);
	CHECK_EQ(evd_clock_tsc_hz(&hz), -EAGAIN);
	CHECK_EQ(evd_clock_tsc_hz(NULL), -EINVAL);
	check_rate(loop, created);
	check_timer(loop);
	CHECK_EQ(evd_loop_destroy(loop), 0);
}

static void
test_after_eal(void)
{
	char clock[32];
	uint64_t created;
	struct evd_loop *loop = loop_with_clock(clock, sizeof(clock), &created);
#ifdef RTE_ARCH_X86
	const char *want = rte_cpu_get_flag_enabled(RTE_CPUFLAG_INVTSC) > 0 ? "tsc" : "monotonic";
#else
	const char *want = "tsc";
#endif

	double hz = 0;
	int rc = evd_clock_tsc_hz(&hz);

	printf("  after rte_eal_init: %s (TSC %" PRIu64 " Hz, measured %.0f), expected %s\n",
	       clock, rte_get_tsc_hz(), hz, want);
	CHECK(strcmp(clock, want) == 0);
	/* the rate the application is told is the loop clock's, within EAL's 1 % */
	if (strcmp(clock, "tsc") == 0)
		CHECK(rc == 0 && fabs(hz / (double)rte_get_tsc_hz() - 1) < 0.01);
	else
		CHECK_EQ(rc, -ENOTSUP);
	check_rate(loop, created);
	check_timer(loop);
	CHECK_EQ(evd_loop_destroy(loop), 0);
}

int
main(void)
{
	char prefix[64];
	char *argv[] = { "test_clock", "--no-huge", "--no-pci", "-m", "64", "--no-shconf",
			 prefix, "--log-level=lib.eal:warning", NULL };

	snprintf(prefix, sizeof(prefix), "--file-prefix=evd-clock-%d", (int)getpid());
	rte_log_set_level_pattern("lib.evd", RTE_LOG_DEBUG);
	TEST(test_before_eal);
	CHECK(rte_eal_init((int)RTE_DIM(argv) - 1, argv) >= 0);
	rte_log_set_level_pattern("lib.evd", RTE_LOG_DEBUG);
	TEST(test_after_eal);
	rte_eal_cleanup();
	return 0;
}
