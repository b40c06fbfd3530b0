/* SPDX-License-Identifier: BSD-3-Clause */
/* evd_loop_stop() from another thread ends a sleeping loop. */
#include <pthread.h>

#include <evd.h>

#include "evd_test.h"

struct runner {
	struct evd_loop *loop;
	int rc;
	int done;
};

static void *
run(void *arg)
{
	struct runner *r = arg;

	r->rc = evd_loop_run(r->loop);
	__atomic_store_n(&r->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

/* The loop sleeps with a 60 s bound and one idle ring; stop must end it.
 * The join is bounded so that a missed wake fails instead of hanging. */
static void
stop_sleeping_loop(const char *policy)
{
	struct evd_loop_conf conf = { .policy = policy, .max_sleep_us = 60u * 1000 * 1000 };
	struct runner r = { 0 };
	struct evd_loop_stats st;
	struct evd_source *ring;
	struct timespec deadline;
	pthread_t th;

	CHECK_EQ(evd_loop_create(&conf, &r.loop), 0);
	CHECK_EQ(evd_ring_create("idle", 16, test_nop, NULL, &ring), 0);
	CHECK_EQ(evd_loop_add(r.loop, ring), 0);
	CHECK_EQ(pthread_create(&th, NULL, run, &r), 0);
	test_wait_asleep(r.loop, 1000);
	test_sleep_us(10000); /* in epoll_wait by now, almost surely */
	CHECK_EQ(evd_loop_run(r.loop), -EBUSY);
	CHECK_EQ(evd_loop_stop(r.loop), 0);
	clock_gettime(CLOCK_REALTIME, &deadline);
	deadline.tv_sec += 30;
	CHECK_EQ(pthread_timedjoin_np(th, NULL, &deadline), 0);
	CHECK_EQ(r.rc, 0);
	CHECK_EQ(evd_loop_stats_get(r.loop, &st), 0);
	CHECK_EQ(st.sleep_timeouts, 0);
	CHECK(st.sleeps >= 1);
	/* stopped: a step says so; resume makes it runnable again */
	CHECK_EQ(evd_loop_step(r.loop), -ESHUTDOWN);
	CHECK_EQ(evd_loop_resume(r.loop), 0);
	{
		struct evd_event ev = { .u64 = 1 };

		CHECK_EQ(evd_ring_post(ring, &ev), 0);
		CHECK_EQ(evd_loop_step(r.loop), 1);
	}
	CHECK_EQ(evd_loop_remove(r.loop, ring), 0);
	CHECK_EQ(evd_source_destroy(ring), 0);
	CHECK_EQ(evd_loop_destroy(r.loop), 0);
}

static void
test_stop_intr(void)
{
	stop_sleeping_loop("intr");
}

static void
test_stop_adaptive(void)
{
	stop_sleeping_loop("adaptive");
}

/* A stop requested before run makes run return at once. */
static void
test_stop_before_run(void)
{
	struct evd_loop *loop;

	CHECK_EQ(evd_loop_create(NULL, &loop), 0);
	CHECK_EQ(evd_loop_stop(loop), 0);
	CHECK_EQ(evd_loop_run(loop), 0);
	CHECK_EQ(evd_loop_stop(NULL), -EINVAL);
	CHECK_EQ(evd_loop_destroy(loop), 0);
}

int
main(void)
{
	TEST(test_stop_intr);
	TEST(test_stop_adaptive);
	TEST(test_stop_before_run);
	return 0;
}
