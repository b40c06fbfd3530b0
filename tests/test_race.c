/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The lost-wakeup race, made to happen on purpose.
 *
 * A strict source gets an item exactly between the loop's last empty poll
 * and its arm. No notification will ever come for it. The loop must find it
 * with the re-poll after arming: repoll_hits rises, no sleep times out.
 * The companion drives the same source by hand without the re-poll and shows
 * the item stranded until the timeout, so the first test can fail.
 */
#include <poll.h>
#include <pthread.h>
#include <unistd.h>

#include <evd.h>
#include <evd_source.h>

#include "evd_test.h"
#include "strict_source.h"

static struct evd_loop *
make_loop(uint32_t max_sleep_us)
{
	struct evd_loop_conf conf = { .name = "race", .policy = "intr", .max_sleep_us = max_sleep_us };
	struct evd_loop *loop;

	CHECK_EQ(evd_loop_create(&conf, &loop), 0);
	return loop;
}

/* The loop's re-poll catches the item that landed before the arm. */
static void
test_repoll_catches_item_before_arm(void)
{
	struct evd_loop *loop = make_loop(5 * 1000 * 1000); /* 5 s: a timeout would be obvious */
	struct evd_loop_stats st;
	struct evd_source_stats ss;
	struct strict_source s;

	CHECK_EQ(strict_source_init(&s, "strict"), 0);
	CHECK_EQ(evd_loop_add(loop, &s.src), 0);
	s.inject_at_arm = 1;
	/* poll: empty; intr says sleep; arm (the item lands first); re-poll */
	CHECK_EQ(evd_loop_step(loop), 1);
	CHECK_EQ(s.delivered, 1);
	CHECK_EQ(s.notified, 0); /* strict: the arm raised nothing for it */
	CHECK_EQ(evd_loop_stats_get(loop, &st), 0);
	CHECK_EQ(st.repoll_hits, 1);
	CHECK_EQ(st.sleeps, 0);
	CHECK_EQ(st.sleep_timeouts, 0);
	CHECK_EQ(st.lost_wakeups, 0);
	CHECK_EQ(evd_source_stats_get(&s.src, &ss), 0);
	CHECK_EQ(ss.repoll_hits, 1);
	CHECK_EQ(ss.arms, 1);
	CHECK_EQ(evd_loop_remove(loop, &s.src), 0);
	CHECK_EQ(evd_loop_destroy(loop), 0);
	strict_source_fini(&s);
}

/* Without the re-poll (by hand, the bug of hand-written loops), the same
 * item waits until the wait times out. */
static void
test_without_repoll_item_waits_for_timeout(void)
{
	struct strict_source s;
	struct pollfd p;

	CHECK_EQ(strict_source_init(&s, "strict"), 0);
	CHECK_EQ(s.src.ops->poll(&s.src, 32), 0); /* last empty poll */
	s.inject_at_arm = 1;
	CHECK_EQ(s.src.ops->arm(&s.src), 0);      /* the item lands, then the arm */
	p.fd = s.src.ops->fd(&s.src);
	p.events = POLLIN;
	CHECK_EQ(poll(&p, 1, 200), 0);            /* sleep: only the timeout ends it */
	CHECK_EQ(s.notified, 0);
	CHECK_EQ(s.src.ops->poll(&s.src, 32), 1); /* the stranded item */
	strict_source_fini(&s);
}

struct adder {
	struct evd_loop *loop;
	struct strict_source *s;
};

/* Waits until the loop sleeps, then adds one item. */
static void *
add_while_asleep(void *arg)
{
	struct adder *a = arg;
	struct evd_loop_stats st;

	do {
		test_sleep_us(1000);
		CHECK_EQ(evd_loop_stats_get(a->loop, &st), 0);
	} while (st.sleeps == 0);
	test_sleep_us(5000); /* it is in epoll_wait, or about to be */
	strict_source_add(a->s, 1);
	return NULL;
}

/* never_notify 2: the notification comes, but only after the wait timed out
 * (a device's interrupt late through the kernel), written by hand before a
 * second step. never_notify 1: it never comes; a second step's timed-out
 * wait (300 ms, past the 2 ms the loop gives a late one) judges it lost. */
static void
sleep_then_add(int never_notify, struct evd_loop_stats *st, struct strict_source *s)
{
	struct evd_loop *loop = make_loop(never_notify ? 300 * 1000 : 5 * 1000 * 1000);
	struct adder a = { loop, s };
	pthread_t th;

	CHECK_EQ(strict_source_init(s, never_notify ? "broken" : "strict"), 0);
	s->never_notify = never_notify;
	CHECK_EQ(evd_loop_add(loop, &s->src), 0);
	CHECK_EQ(pthread_create(&th, NULL, add_while_asleep, &a), 0);
	CHECK_EQ(evd_loop_step(loop), 1); /* poll, arm, re-poll, wait, ack, poll */
	pthread_join(th, NULL);
	if (never_notify == 2) {
		uint64_t rec = 1;

		CHECK_EQ(write(s->pipe[1], &rec, sizeof(rec)), (ssize_t)sizeof(rec));
	}
	/* the late one: a round's look at epoll consumes it; a lost one: a
	 * second wait times out */
	if (never_notify == 2)
		CHECK_EQ(evd_loop_poll(loop, 0), 0);
	else if (never_notify)
		CHECK_EQ(evd_loop_step(loop), 0);
	CHECK_EQ(evd_loop_stats_get(loop, st), 0);
	CHECK_EQ(evd_loop_remove(loop, &s->src), 0);
	CHECK_EQ(evd_loop_destroy(loop), 0);
	strict_source_fini(s);
}

/* The normal path: the item added while armed raises one notification, the
 * loop wakes on it and acknowledges it once. */
static void
test_wake_on_notification(void)
{
	struct evd_loop_stats st;
	struct strict_source s;

	sleep_then_add(0, &st, &s);
	CHECK_EQ(st.sleeps, 1);
	CHECK_EQ(st.wakeups, 1);
	CHECK_EQ(st.sleep_timeouts, 0);
	CHECK_EQ(st.lost_wakeups, 0);
	CHECK_EQ(st.spurious_wakeups, 0);
	CHECK_EQ(s.notified, 1);
	CHECK_EQ(s.acked, 1);
}

/* The detector can fire: a source that never notifies leaves its item
 * behind a timeout, and the loop counts a lost wakeup. */
static void
test_lost_wakeup_is_counted(void)
{
	struct evd_loop_stats st;
	struct strict_source s;

	sleep_then_add(1, &st, &s);
	CHECK_EQ(st.sleeps, 2);
	CHECK_EQ(st.sleep_timeouts, 2);
	CHECK_EQ(st.lost_wakeups, 1);
	CHECK_EQ(s.notified, 0);
}

/* A notification that trails its completion past the timeout is not a lost
 * wakeup: the loop leaves the source armed and the notification, when it
 * comes, is consumed by the next round's look (spurious: nothing new). */
static void
test_late_notification_is_not_lost(void)
{
	struct evd_loop_stats st;
	struct strict_source s;

	sleep_then_add(2, &st, &s);
	CHECK_EQ(st.sleeps, 1);
	CHECK_EQ(st.sleep_timeouts, 1);
	CHECK_EQ(st.lost_wakeups, 0);
	CHECK_EQ(s.acked, 1);
}

static struct evd_source_ops fail_ops;
static int (*strict_arm_op)(struct evd_source *);

static int
arm_then_fail_repoll(struct evd_source *s)
{
	int rc = strict_arm_op(s);

	__atomic_store_n(&((struct strict_source *)s)->fail_poll, 1, __ATOMIC_RELEASE);
	return rc;
}

/* A completion lands before the arm (a strict device raises nothing for
 * it, rightly) and the re-poll after the arm fails: the source was not
 * checked, so it is polled every round again and its silence is not a lost
 * wakeup; the bounded wait finds the completion. */
static void
test_failed_repoll_is_not_lost(void)
{
	struct evd_loop_conf conf = { .policy = "intr" };
	struct evd_loop *loop;
	struct strict_source d;
	struct evd_loop_stats st;

	CHECK_EQ(evd_loop_create(&conf, &loop), 0);
	CHECK_EQ(strict_source_init(&d, "dev"), 0);
	fail_ops = *d.src.ops;
	strict_arm_op = fail_ops.arm;
	fail_ops.arm = arm_then_fail_repoll;
	d.src.ops = &fail_ops;
	CHECK_EQ(evd_loop_add(loop, &d.src), 0);
	d.inject_at_arm = 1;
	/* arm (+1 item), the re-poll fails, a bounded wait, the poll after it */
	CHECK(evd_loop_step(loop) >= 0);
	fail_ops.arm = strict_arm_op;
	for (int i = 0; i < 6 && d.delivered == 0; i++)
		CHECK(evd_loop_step(loop) >= 0);
	for (int i = 0; i < 4; i++) /* past the 2 ms a late notification gets */
		CHECK(evd_loop_step(loop) >= 0);
	CHECK_EQ(d.delivered, 1);
	CHECK_EQ(evd_loop_stats_get(loop, &st), 0);
	CHECK_EQ(st.errors, 1);
	CHECK_EQ(st.lost_wakeups, 0);
	CHECK_EQ(evd_loop_remove(loop, &d.src), 0);
	CHECK_EQ(evd_loop_destroy(loop), 0);
	strict_source_fini(&d);
}

int
main(void)
{
	TEST(test_repoll_catches_item_before_arm);
	TEST(test_without_repoll_item_waits_for_timeout);
	TEST(test_wake_on_notification);
	TEST(test_lost_wakeup_is_counted);
	TEST(test_late_notification_is_not_lost);
	TEST(test_failed_repoll_is_not_lost);
	return 0;
}
