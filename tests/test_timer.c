/* SPDX-License-Identifier: BSD-3-Clause */
/* Unit tests of timers, on a virtual clock and on the real one. */
#include <evd.h>

#include "evd_test.h"

struct log {
	int order[16];
	int n;
	struct evd_timer *cancel_me;
};

struct tag {
	struct log *log;
	int id;
};

static void
record(struct evd_loop *loop, struct evd_timer *t, void *arg)
{
	struct tag *g = arg;

	(void)loop;
	(void)t;
	if (g->log->n < 16)
		g->log->order[g->log->n++] = g->id;
}

static void
cancel_other(struct evd_loop *loop, struct evd_timer *t, void *arg)
{
	struct tag *g = arg;

	(void)t;
	record(loop, t, arg);
	CHECK_EQ(evd_timer_cancel(loop, g->log->cancel_me), 0);
}

/* Cancels itself: 0 for a one-shot (freed when the callback returns) and
 * for a periodic one (freed at once, never run again). */
static void
cancel_self(struct evd_loop *loop, struct evd_timer *t, void *arg)
{
	record(loop, t, arg);
	CHECK_EQ(evd_timer_cancel(loop, t), 0);
}

static struct evd_loop *
vloop(struct vclock *vc, struct evd_clock *clk)
{
	struct evd_loop_conf conf = { .policy = "poll", .clock = clk };
	struct evd_loop *loop;

	clk->now_ns = vclock_now;
	clk->arg = vc;
	CHECK_EQ(evd_loop_create(&conf, &loop), 0);
	return loop;
}

static void
test_order_and_cancel(void)
{
	struct vclock vc = { .now = 1000 };
	struct evd_clock clk;
	struct evd_loop *loop = vloop(&vc, &clk);
	struct log log = { 0 };
	struct tag a = { &log, 1 }, b = { &log, 2 }, c = { &log, 3 }, d = { &log, 4 };
	struct evd_timer *tc;

	CHECK_EQ(evd_timer_start(loop, 300, 0, record, &c, NULL), 0);
	CHECK_EQ(evd_timer_start(loop, 100, 0, record, &a, NULL), 0);
	CHECK_EQ(evd_timer_start(loop, 200, 0, cancel_other, &b, NULL), 0);
	CHECK_EQ(evd_timer_start(loop, 250, 0, record, &d, &tc), 0);
	log.cancel_me = tc;
	CHECK_EQ(evd_timer_start(NULL, 1, 0, record, &a, NULL), -EINVAL);
	CHECK_EQ(evd_timer_start(loop, 1, 0, NULL, &a, NULL), -EINVAL);
	CHECK_EQ(evd_timer_cancel(loop, NULL), -EINVAL);

	evd_loop_step(loop);
	CHECK_EQ(log.n, 0); /* nothing due yet */
	vclock_advance(&vc, 150);
	evd_loop_step(loop);
	CHECK_EQ(log.n, 1);
	CHECK_EQ(log.order[0], 1);
	vclock_advance(&vc, 1000); /* all due at once: fired in deadline order, d cancelled by b */
	evd_loop_step(loop);
	CHECK_EQ(log.n, 3);
	CHECK_EQ(log.order[1], 2);
	CHECK_EQ(log.order[2], 3);
	CHECK_EQ(evd_loop_destroy(loop), 0);
}

static void
test_periodic_no_drift(void)
{
	struct vclock vc = { .now = 0 };
	struct evd_clock clk;
	struct evd_loop *loop = vloop(&vc, &clk);
	struct log log = { 0 };
	struct tag a = { &log, 7 };
	struct evd_timer *t;
	struct evd_loop_stats st;

	CHECK_EQ(evd_timer_start(loop, 100, 100, record, &a, &t), 0);
	for (int i = 0; i < 5; i++) {
		vclock_advance(&vc, 100);
		evd_loop_step(loop);
	}
	CHECK_EQ(log.n, 5);
	vclock_advance(&vc, 350); /* 3.5 periods late: one call, missed periods skipped */
	evd_loop_step(loop);
	CHECK_EQ(log.n, 6);
	vclock_advance(&vc, 49); /* now 899: the next deadline stays on the grid (900) */
	evd_loop_step(loop);
	CHECK_EQ(log.n, 6);
	vclock_advance(&vc, 1);
	evd_loop_step(loop);
	CHECK_EQ(log.n, 7);
	CHECK_EQ(evd_loop_stats_get(loop, &st), 0);
	CHECK_EQ(st.timers_fired, 7);
	CHECK_EQ(evd_timer_cancel(loop, t), 0);
	vclock_advance(&vc, 1000);
	evd_loop_step(loop);
	CHECK_EQ(log.n, 7);
	CHECK_EQ(evd_loop_destroy(loop), 0);
}

static void
test_cancel_self(void)
{
	struct vclock vc = { .now = 0 };
	struct evd_clock clk;
	struct evd_loop *loop = vloop(&vc, &clk);
	struct log log = { 0 };
	struct tag one = { &log, 1 }, per = { &log, 2 };
	struct evd_timer *t1, *t2;

	CHECK_EQ(evd_timer_start(loop, 100, 0, cancel_self, &one, &t1), 0);
	CHECK_EQ(evd_timer_start(loop, 100, 50, cancel_self, &per, &t2), 0);
	vclock_advance(&vc, 100);
	evd_loop_step(loop);
	CHECK_EQ(log.n, 2);
	vclock_advance(&vc, 1000);
	evd_loop_step(loop);
	CHECK_EQ(log.n, 2); /* neither ran again; ASan: neither freed twice */
	CHECK_EQ(evd_loop_destroy(loop), 0);
}

static void
fired(struct evd_loop *loop, struct evd_timer *t, void *arg)
{
	(void)t;
	*(uint64_t *)arg = evd_loop_now_ns(loop);
}

/* A sleep ends at the timer's deadline, not at the loop's 10 s bound. The
 * 5 s check is a liveness bound (500 times the deadline), not a timing one. */
static void
test_sleep_stops_at_timer(void)
{
	struct evd_loop_conf conf = { .policy = "intr", .max_sleep_us = 10 * 1000 * 1000 };
	struct evd_loop *loop;
	struct evd_loop_stats st;
	uint64_t at = 0, t0;

	CHECK_EQ(evd_loop_create(&conf, &loop), 0);
	t0 = evd_loop_now_ns(loop);
	CHECK_EQ(evd_timer_start(loop, 10 * 1000 * 1000, 0, fired, &at, NULL), 0);
	CHECK_EQ(evd_loop_step(loop), 0);
	CHECK(at != 0);
	CHECK(at >= t0 + 10 * 1000 * 1000); /* never early */
	CHECK(at - t0 < 5ull * 1000 * 1000 * 1000);
	CHECK_EQ(evd_loop_stats_get(loop, &st), 0);
	CHECK_EQ(st.sleeps, 1);
	CHECK_EQ(st.sleep_timeouts, 1);
	CHECK_EQ(st.timers_fired, 1);
	CHECK_EQ(evd_loop_destroy(loop), 0);
}

/* Starts a timer due at once, which fires at @p arg[1]. */
static void
fired_then_now(struct evd_loop *loop, struct evd_timer *t, void *arg)
{
	uint64_t *at = arg;

	fired(loop, t, &at[0]);
	CHECK_EQ(evd_timer_start(loop, 0, 0, fired, &at[1], NULL), 0);
}

/* A pause ends at a timer's deadline: pmdmgmt pausing 1 ms at every empty
 * round leaves a 100 us timer on time, not 900 us late; a timer due at
 * once (started by the first's callback) takes no pause at all. */
static void
test_pause_stops_at_timer(void)
{
	struct vwait w = { .vc = { .now = 1000000 } };
	struct evd_clock clk = { .now_ns = vwait_now, .arg = &w, .wait_ns = vwait_wait };
	struct evd_loop_conf conf = { .policy = "pmdmgmt:empty_polls=0,pause_ns=1000000",
				      .clock = &clk };
	struct evd_loop *loop;
	uint64_t at[2] = { 0, 0 }, due;

	CHECK_EQ(evd_loop_create(&conf, &loop), 0);
	CHECK_EQ(evd_ring_create("r", 16, test_nop, NULL, &w.ring), 0);
	CHECK_EQ(evd_loop_add(loop, w.ring), 0);
	due = vwait_now(&w) + 100000;
	CHECK_EQ(evd_timer_start(loop, 100000, 0, fired_then_now, at, NULL), 0);
	for (int i = 0; i < 4 && at[1] == 0; i++)
		CHECK_EQ(evd_loop_step(loop), 0);
	printf("  a 100 us timer fired %" PRIu64 " ns late, one due at once %" PRIu64
	       " ns after it\n", at[0] - due, at[1] - at[0]);
	CHECK_EQ(w.mode, EVD_MODE_PAUSE);
	CHECK_EQ(at[0], due);
	CHECK_EQ(at[1], due);
	CHECK_EQ(evd_loop_remove(loop, w.ring), 0);
	CHECK_EQ(evd_source_destroy(w.ring), 0);
	CHECK_EQ(evd_loop_destroy(loop), 0);
}

int
main(void)
{
	TEST(test_order_and_cancel);
	TEST(test_cancel_self);
	TEST(test_periodic_no_drift);
	TEST(test_sleep_stops_at_timer);
	TEST(test_pause_stops_at_timer);
	return 0;
}
