/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The loop's contract where a two-lcore application trips over it: each
 * misuse answered by an errno and one log line, never a crash, never a
 * silent loss. One test per way it broke:
 * - control calls from a thread that does not run the loop (they raced the
 *   loop: the source table was reallocated under it);
 * - an fd closed while registered, with a dup alive elsewhere (its epoll
 *   entry outlived the source and fired with a freed pointer);
 * - cancel of a one-shot timer that already fired (it had been freed);
 * - destroy of a ring holding events (they were dropped unseen);
 * - a source destroyed twice (its close ran twice);
 * - a discard racing an add or another discard (both took the same events);
 * - bad arguments (some failed without a word).
 * The held producer's false lost wakeups are test_contract_stress's and
 * test_race's.
 */
#include <limits.h>
#include <pthread.h>
#include <rte_log.h>
#include <sched.h>
#include <semaphore.h>
#include <stdio.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include <evd.h>
#include <evd_source.h>

#include "evd_test.h"
#include "strict_source.h"

static void
count_events(struct evd_source *s, void *burst, uint16_t n, void *arg)
{
	(void)s;
	(void)burst;
	__atomic_fetch_add((uint64_t *)arg, n, __ATOMIC_RELAXED); /* read by another thread */
}

/* rc of a refused call, and the one line it logged naming what was wrong */
#define REFUSED(call, err, word) CHECK_LOGGED(call, err, "EVD: ", word)

static void
test_bad_arguments(void)
{
	struct evd_loop_conf conf = { .policy = "intr" };
	struct evd_loop *loop, *other, *scratch;
	struct evd_source *ring, *fd;
	struct evd_event ev = { 0 };
	struct evd_loop_stats st;
	uint64_t got = 0, cursor = 0;
	char long_name[EVD_NAME_MAX + 8];

	memset(long_name, 'x', sizeof(long_name) - 1);
	long_name[sizeof(long_name) - 1] = '\0';
	CHECK_EQ(evd_loop_create(&conf, &loop), 0);
	CHECK_EQ(evd_loop_create(&conf, &other), 0);
	CHECK_EQ(evd_ring_create("r", 8, count_events, &got, &ring), 0);

	REFUSED(evd_loop_create(&conf, NULL), -EINVAL, "out");
	REFUSED(evd_loop_create(&(struct evd_loop_conf){ .name = long_name }, &scratch), -EINVAL,
		"name");
	REFUSED(evd_loop_create(&(struct evd_loop_conf){ .burst = 257 }, &scratch), -EINVAL,
		"burst");
	REFUSED(evd_loop_add(NULL, ring), -EINVAL, "loop");
	REFUSED(evd_loop_add(loop, NULL), -EINVAL, "source");
	REFUSED(evd_loop_remove(loop, ring), -EINVAL, "not on it");
	REFUSED(evd_loop_run(NULL), -EINVAL, "loop");
	REFUSED(evd_loop_step(NULL), -EINVAL, "loop");
	REFUSED(evd_loop_destroy(NULL), -EINVAL, "loop");
	REFUSED(evd_loop_resume(NULL), -EINVAL, "loop");
	REFUSED(evd_loop_call(loop, NULL, NULL), -EINVAL, "fn");
	REFUSED(evd_loop_stats_get(loop, NULL), -EINVAL, "st");
	REFUSED(evd_loop_stats_get(NULL, &st), -EINVAL, "loop");
	REFUSED(evd_loop_trace_enable(loop, 100), -EINVAL, "entries");
	REFUSED(evd_loop_trace_read(loop, NULL, NULL, 0, NULL), -EINVAL, "cursor");
	REFUSED(evd_loop_trace_read(NULL, &cursor, NULL, 0, NULL), -EINVAL, "loop");
	REFUSED(evd_ring_create(long_name, 8, count_events, NULL, &fd), -EINVAL, "name");
	REFUSED(evd_ring_create("r", 8, NULL, NULL, &fd), -EINVAL, "handler");
	REFUSED(evd_ring_create("r", 8, count_events, NULL, NULL), -EINVAL, "out");
	REFUSED(evd_ring_create("r", 1, count_events, NULL, &fd), -EINVAL, "size");
	REFUSED(evd_ring_post(NULL, &ev), -EINVAL, "ring");
	REFUSED(evd_ring_post(ring, NULL), -EINVAL, "event");
	REFUSED(evd_ring_post_burst(ring, &ev, 0), -EINVAL, "n is 0");
	REFUSED(evd_fd_create("f", -1, 0, count_events, NULL, &fd), -EINVAL, "fd -1");
	REFUSED(evd_fd_create("f", 0, 0, NULL, NULL, &fd), -EINVAL, "handler");
	REFUSED(evd_fd_create("f", 0, 0, count_events, NULL, NULL), -EINVAL, "out");
	REFUSED(evd_fd_create(long_name, 0, 0, count_events, NULL, &fd), -EINVAL, "name");
	REFUSED(evd_timer_start(NULL, 0, 0, NULL, NULL, NULL), -EINVAL, "loop");
	REFUSED(evd_timer_start(loop, 0, 0, NULL, NULL, NULL), -EINVAL, "cb");
	REFUSED(evd_timer_cancel(loop, NULL), -EINVAL, "timer");
	REFUSED(evd_source_destroy(NULL), -EINVAL, "source");
	REFUSED(evd_source_stats_get(ring, NULL), -EINVAL, "st");
	REFUSED(evd_ring_discard(NULL), -EINVAL, "not a ring");
	REFUSED(evd_loop_create(&(struct evd_loop_conf){ .max_sources = EVD_MAX_SOURCES + 1 },
				&scratch), -EINVAL, "max_sources");
	CHECK_EQ(evd_loop_create(&(struct evd_loop_conf){ .max_sources = 1 }, &scratch), 0);
	CHECK_EQ(evd_loop_add(scratch, ring), 0);
	CHECK_EQ(evd_ring_create("r2", 8, count_events, &got, &fd), 0);
	REFUSED(evd_loop_add(scratch, fd), -ENOSPC, "max_sources");
	CHECK_EQ(evd_source_destroy(fd), 0);
	CHECK_EQ(evd_loop_remove(scratch, ring), 0);
	CHECK_EQ(evd_loop_destroy(scratch), 0);
	CHECK_EQ(evd_loop_add(loop, ring), 0);
	REFUSED(evd_loop_add(other, ring), -EINVAL, "already on loop");
	REFUSED(evd_source_destroy(ring), -EBUSY, "still on loop");
	REFUSED(evd_ring_discard(ring), -EBUSY, "still on loop");
	REFUSED(evd_loop_destroy(loop), -EBUSY, "sources");
	/* the names, and what an fd's wait saw, asked of nothing or off the loop */
	REFUSED(evd_loop_name(NULL), 0, "loop is NULL");
	REFUSED(evd_loop_policy_name(NULL), 0, "loop is NULL");
	REFUSED(evd_source_name(NULL), 0, "source is NULL");
	REFUSED(evd_fd_revents(NULL), 0, "source is NULL");
	REFUSED(evd_fd_revents(ring), 0, "not an fd source");
	{
		int efd = eventfd(1, EFD_NONBLOCK | EFD_CLOEXEC);
		struct evd_source *f;

		CHECK(efd >= 0);
		CHECK_EQ(evd_fd_create("f", efd, EPOLLIN, count_events, NULL, &f), 0);
		CHECK_EQ(evd_loop_add(loop, f), 0);
		REFUSED(evd_fd_revents(f), 0, "not in its handler");
		CHECK_EQ(evd_loop_remove(loop, f), 0);
		CHECK_EQ(evd_source_destroy(f), 0);
		close(efd);
	}
	/* a driver's error report: a negative errno, of a source on a loop */
	REFUSED(evd_source_report_error(NULL, -EIO), -EINVAL, "source is NULL");
	REFUSED(evd_source_report_error(ring, 0), -EINVAL, "not a negative errno");
	REFUSED(evd_source_report_error(ring, 5), -EINVAL, "not a negative errno");
	REFUSED(evd_source_report_error(ring, INT_MIN), -EINVAL, "not a negative errno");
	CHECK_EQ(evd_source_report_error(ring, -EIO), 0); /* no thread runs the loop */

	CHECK_EQ(evd_loop_remove(loop, ring), 0);
	REFUSED(evd_source_report_error(ring, -EIO), -ENOENT, "on no loop");
	CHECK_EQ(evd_source_destroy(ring), 0);
	CHECK_EQ(evd_loop_destroy(loop), 0);
	CHECK_EQ(evd_loop_destroy(other), 0);
}

/* ---- control calls from a thread that does not run the loop ------------- */

struct runner {
	struct evd_loop *loop;
	pthread_t thread;
};

static void *
run_loop(void *arg)
{
	struct runner *r = arg;

	CHECK_EQ(evd_loop_run(r->loop), 0);
	return NULL;
}

static void
on_timer(struct evd_loop *loop, struct evd_timer *t, void *arg)
{
	(void)loop;
	(void)t;
	(*(int *)arg)++;
}

struct call {
	struct evd_source *src;
	struct evd_timer *timer;
	pthread_t ran_on;
	int fired;
	int done; /* atomic */
	int rc_add, rc_timer;
};

static void
add_on_loop(struct evd_loop *loop, void *arg)
{
	struct call *c = arg;

	c->ran_on = pthread_self();
	c->rc_add = evd_loop_add(loop, c->src);
	c->rc_timer = evd_timer_start(loop, 1000, 0, on_timer, &c->fired, &c->timer);
	__atomic_store_n(&c->done, 1, __ATOMIC_RELEASE);
}

static void
remove_on_loop(struct evd_loop *loop, void *arg)
{
	struct call *c = arg;

	c->rc_add = evd_loop_remove(loop, c->src);
	c->rc_timer = evd_timer_cancel(loop, c->timer);
	__atomic_store_n(&c->done, 2, __ATOMIC_RELEASE);
}

static void
test_control_from_another_thread(void)
{
	/* sleeps of up to 100 s: only evd_loop_call's doorbell ends them early */
	struct evd_loop_conf conf = { .policy = "intr", .max_sleep_us = 100000000 };
	struct runner r;
	struct evd_source *a, *b;
	struct evd_timer *t = NULL;
	struct evd_event ev = { 0 };
	struct call c = { 0 };
	uint64_t got = 0;
	int fired = 0;

	CHECK_EQ(evd_loop_create(&conf, &r.loop), 0);
	CHECK_EQ(evd_ring_create("a", 64, count_events, &got, &a), 0);
	CHECK_EQ(evd_ring_create("b", 64, count_events, &got, &b), 0);
	CHECK_EQ(evd_loop_add(r.loop, a), 0); /* not running: at once */
	CHECK_EQ(evd_timer_start(r.loop, 1000ull * 1000 * 1000 * 1000, 0, on_timer, &fired, &t), 0);
	CHECK_EQ(pthread_create(&r.thread, NULL, run_loop, &r), 0);
	test_wait_asleep(r.loop, 1000);

	/* refused, not raced */
	CHECK_EQ(evd_loop_add(r.loop, b), -EBUSY);
	CHECK_EQ(evd_loop_remove(r.loop, a), -EBUSY);
	CHECK_EQ(evd_timer_cancel(r.loop, t), -EBUSY);
	CHECK_EQ(evd_timer_start(r.loop, 0, 0, on_timer, &fired, NULL), -EBUSY);
	CHECK_EQ(evd_loop_destroy(r.loop), -EBUSY);
	/* a driver reports from its ops, on the loop's thread */
	CHECK_EQ(evd_source_report_error(a, -EIO), -EBUSY);
	CHECK(b->loop == NULL);

	/* handed over: run on the loop's thread, the sleeping loop woken */
	c.src = b;
	CHECK_EQ(evd_loop_call(r.loop, add_on_loop, &c), 0);
	while (__atomic_load_n(&c.done, __ATOMIC_ACQUIRE) != 1)
		test_sleep_us(100);
	CHECK(pthread_equal(c.ran_on, r.thread));
	CHECK_EQ(c.rc_add, 0);
	CHECK_EQ(c.rc_timer, 0);
	CHECK(b->loop == r.loop);
	CHECK_EQ(evd_ring_post(b, &ev), 0);
	while (__atomic_load_n(&got, __ATOMIC_RELAXED) != 1)
		test_sleep_us(100);
	CHECK_EQ(evd_loop_call(r.loop, remove_on_loop, &c), 0);
	while (__atomic_load_n(&c.done, __ATOMIC_ACQUIRE) != 2)
		test_sleep_us(100);
	CHECK_EQ(c.rc_add, 0);
	CHECK_EQ(c.rc_timer, 0); /* fired or not: its handle was valid */
	CHECK(b->loop == NULL);

	CHECK_EQ(evd_loop_stop(r.loop), 0);
	CHECK_EQ(pthread_join(r.thread, NULL), 0);
	CHECK_EQ(evd_timer_cancel(r.loop, t), 0); /* not running: at once */
	CHECK_EQ(evd_loop_remove(r.loop, a), 0);
	CHECK_EQ(evd_loop_destroy(r.loop), 0);
	CHECK_EQ(evd_source_destroy(a), 0);
	CHECK_EQ(evd_source_destroy(b), 0);
}

/* A call queued while no thread runs the loop runs in evd_loop_destroy(). */
static void
note_call(struct evd_loop *loop, void *arg)
{
	(void)loop;
	(*(int *)arg)++;
}

/* a call that queues another: both run, at the step or at destroy */
static void
call_again(struct evd_loop *loop, void *arg)
{
	(*(int *)arg)++;
	CHECK_EQ(evd_loop_call(loop, note_call, arg), 0);
}

static void
test_call_runs_at_destroy(void)
{
	struct evd_loop *loop;
	struct evd_source *ring;
	uint64_t got = 0;
	int ran = 0;

	CHECK_EQ(evd_loop_create(NULL, &loop), 0);
	CHECK_EQ(evd_ring_create("r", 8, count_events, &got, &ring), 0);
	CHECK_EQ(evd_loop_add(loop, ring), 0);
	CHECK_EQ(evd_loop_call(loop, note_call, &ran), 0);
	CHECK_EQ(evd_loop_call(loop, call_again, &ran), 0);
	CHECK_EQ(ran, 0);
	CHECK_EQ(evd_loop_destroy(loop), -EBUSY); /* refused: changes nothing */
	CHECK_EQ(ran, 0);
	CHECK_EQ(evd_loop_remove(loop, ring), 0);
	CHECK_EQ(evd_source_destroy(ring), 0);
	CHECK_EQ(evd_loop_destroy(loop), 0);
	CHECK_EQ(ran, 3);
}

/* ---- an fd closed while registered, a dup of it open elsewhere ----------- */

struct drained {
	int fd;
	uint64_t got; /* atomic */
};

/* a level fd's handler: read what made it ready */
static void
drain_fd(struct evd_source *s, void *burst, uint16_t n, void *arg)
{
	struct drained *d = arg;
	char buf[64];

	(void)s;
	(void)burst;
	if (read(d->fd, buf, sizeof(buf)) > 0)
		__atomic_fetch_add(&d->got, n, __ATOMIC_RELAXED);
}

static void
test_fd_closed_while_registered(void)
{
	struct evd_loop_conf conf = { .policy = "intr", .max_sleep_us = 2000 };
	struct evd_loop *loop;
	struct evd_source *f, *ring;
	struct evd_loop_stats st;
	uint64_t got = 0, one = 1;
	int efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC), keep;

	CHECK(efd >= 0);
	keep = dup(efd); /* a fork's or another library's copy: the file lives on */
	CHECK(keep >= 0);
	CHECK_EQ(evd_loop_create(&conf, &loop), 0);
	CHECK_EQ(evd_ring_create("r", 8, count_events, &got, &ring), 0);
	CHECK_EQ(evd_fd_create("f", efd, 0, count_events, &got, &f), 0);
	CHECK_EQ(evd_loop_add(loop, ring), 0);
	CHECK_EQ(evd_loop_add(loop, f), 0);
	close(efd); /* the application's mistake */
	CHECK_EQ(evd_loop_remove(loop, f), 0);
	CHECK_EQ(evd_source_destroy(f), 0);
	/* the file becomes readable: an entry left in the epoll set would wake
	 * the loop on every wait, with the freed source's pointer */
	CHECK_EQ(write(keep, &one, sizeof(one)), (ssize_t)sizeof(one));
	CHECK_EQ(evd_loop_stats_reset(loop), 0);
	for (int i = 0; i < 5; i++)
		CHECK_EQ(evd_loop_step(loop), 0);
	CHECK_EQ(evd_loop_stats_get(loop, &st), 0);
	CHECK_EQ(st.sleeps, 5);
	CHECK_EQ(st.wakeups, 0);
	CHECK_EQ(st.sleep_timeouts, 5);
	CHECK_EQ(got, 0);
	/* the loop goes on serving what stayed */
	{
		struct evd_event ev = { 0 };

		CHECK_EQ(evd_ring_post(ring, &ev), 0);
		CHECK_EQ(evd_loop_step(loop), 1);
	}
	CHECK_EQ(evd_loop_remove(loop, ring), 0);
	CHECK_EQ(evd_source_destroy(ring), 0);
	CHECK_EQ(evd_loop_destroy(loop), 0);
	close(keep);
}

/* The closed fd's number reused by the next registered source: removing the
 * first must leave the second watched (EPOLL_CTL_DEL on the number took the
 * new file's entry: its data waited for the sleep's timeout). */
static void
test_fd_number_reused(void)
{
	struct evd_loop_conf conf = { .policy = "intr", .max_sleep_us = 30000000 };
	struct runner r;
	struct evd_source *a, *b;
	struct evd_loop_stats st;
	struct drained da, db;
	int pa[2], pb[2], keep;

	CHECK_EQ(pipe(pa), 0);
	keep = dup(pa[0]);
	da = (struct drained){ pa[0], 0 };
	CHECK_EQ(evd_loop_create(&conf, &r.loop), 0);
	CHECK_EQ(evd_fd_create("a", pa[0], 0, drain_fd, &da, &a), 0);
	CHECK_EQ(evd_loop_add(r.loop, a), 0);
	close(pa[0]);                    /* the application's mistake... */
	CHECK_EQ(pipe(pb), 0);
	CHECK_EQ(pb[0], pa[0]);          /* ...and the number comes back */
	db = (struct drained){ pb[0], 0 };
	CHECK_EQ(evd_fd_create("b", pb[0], 0, drain_fd, &db, &b), 0);
	/* a is found stale: unwatched, one line */
	CHECK_LOGGED(evd_loop_add(r.loop, b), 0, "EVD: ", "now names another file");
	CHECK_EQ(evd_loop_remove(r.loop, a), 0);
	CHECK_EQ(evd_source_destroy(a), 0);
	CHECK_EQ(pthread_create(&r.thread, NULL, run_loop, &r), 0);
	test_wait_asleep(r.loop, 1000);
	CHECK_EQ(write(pb[1], "x", 1), 1);
	while (__atomic_load_n(&db.got, __ATOMIC_RELAXED) == 0)
		test_sleep_us(100);
	CHECK_EQ(evd_loop_stop(r.loop), 0);
	CHECK_EQ(pthread_join(r.thread, NULL), 0);
	CHECK_EQ(evd_loop_stats_get(r.loop, &st), 0);
	CHECK_EQ(st.sleep_timeouts, 0); /* b's data woke the loop */
	CHECK_EQ(da.got, 0);
	CHECK_EQ(evd_loop_remove(r.loop, b), 0);
	CHECK_EQ(evd_source_destroy(b), 0);
	CHECK_EQ(evd_loop_destroy(r.loop), 0);
	close(pb[0]);
	close(pb[1]);
	close(pa[1]);
	close(keep);
}

/* An fd closed under a registered level source (no dup): epoll drops the
 * closed file, so the source is never polled again (it costs no round a
 * syscall), and its removal says what happened, in one line. */
static void
test_fd_closed_is_dropped(void)
{
	struct evd_loop_conf conf = { .policy = "poll" };
	struct evd_loop *loop;
	struct evd_source *f;
	struct evd_source_stats ss;
	uint64_t got = 0;
	int efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);

	CHECK_EQ(evd_loop_create(&conf, &loop), 0);
	CHECK_EQ(evd_fd_create("f", efd, 0, count_events, &got, &f), 0);
	CHECK_EQ(evd_loop_add(loop, f), 0);
	CHECK_EQ(eventfd_write(efd, 1), 0);
	CHECK_EQ(evd_loop_step(loop), 1);
	close(efd);
	for (int i = 0; i < 100; i++)
		CHECK_EQ(evd_loop_step(loop), 0);
	CHECK_EQ(evd_source_stats_get(f, &ss), 0);
	CHECK_EQ(ss.errors, 0);
	CHECK_EQ(ss.polls, 1);
	CHECK_LOGGED(evd_loop_remove(loop, f), 0, "EVD: ", "was closed while registered");
	CHECK_EQ(evd_source_destroy(f), 0);
	CHECK_EQ(evd_loop_destroy(loop), 0);
}

/* ---- a one-shot timer cancelled after it fired --------------------------- */

static void
test_cancel_fired_one_shot(void)
{
	struct evd_loop_conf conf = { .policy = "intr", .max_sleep_us = 1000 };
	struct evd_loop *loop;
	struct evd_timer *t, *t2;
	int fired = 0;

	CHECK_EQ(evd_loop_create(&conf, &loop), 0);
	CHECK_EQ(evd_timer_start(loop, 0, 0, on_timer, &fired, &t), 0);
	CHECK_EQ(evd_loop_step(loop), 0);
	CHECK_EQ(fired, 1);
	CHECK_EQ(evd_timer_cancel(loop, t), 0); /* the handle was still valid */
	/* one left fired and never cancelled is freed with the loop */
	CHECK_EQ(evd_timer_start(loop, 0, 0, on_timer, &fired, &t2), 0);
	CHECK_EQ(evd_loop_step(loop), 0);
	CHECK_EQ(fired, 2);
	CHECK_EQ(evd_loop_destroy(loop), 0);
}

/* ---- a ring destroyed while it holds events ------------------------------ */

static void
test_destroy_ring_with_events(void)
{
	struct evd_source *ring;
	struct evd_event ev = { 0 };
	uint64_t got = 0;

	CHECK_EQ(evd_ring_create("r", 8, count_events, &got, &ring), 0);
	CHECK_EQ(evd_ring_post(ring, &ev), 0);
	CHECK_EQ(evd_ring_post(ring, &ev), 0);
	CHECK_EQ(evd_ring_post(ring, &ev), 0);
	CHECK_EQ(evd_source_destroy(ring), -EBUSY); /* not dropped unseen */
	CHECK_EQ(evd_ring_count(ring), 3);
	CHECK_EQ(evd_ring_discard(ring), 3); /* dropped, and told how many */
	CHECK_EQ(evd_ring_discard(ring), 0);
	CHECK_EQ(evd_source_destroy(ring), 0);
	CHECK_EQ(got, 0);
}

/* ---- discards racing each other and an add ------------------------------- */

/* Two threads take one ring's consumer side again and again while the main
 * thread posts: one discards, the other adds it to a loop, polls the loop
 * and removes it, or discards too. Every event counts once, delivered or
 * discarded; before the claim, a discard and the loop (or two discards)
 * both took the same events: the sum passed what was posted, or a discard
 * never returned (the ring's tail past its head: meson's timeout). */
struct discard_racer {
	struct evd_source *ring;
	struct evd_loop *loop; /* NULL: discards only */
	uint64_t dropped, refused, rounds;
	int *stop;
};

static void *
discard_race(void *arg)
{
	struct discard_racer *d = arg;
	int rc;

	while (!__atomic_load_n(d->stop, __ATOMIC_ACQUIRE)) {
		d->rounds++;
		if (d->loop != NULL && (d->rounds & 1) != 0) {
			rc = evd_loop_add(d->loop, d->ring);
			if (rc == 0) {
				CHECK(evd_loop_poll(d->loop, 0) >= 0);
				CHECK_EQ(evd_loop_remove(d->loop, d->ring), 0);
			}
		} else {
			rc = evd_ring_discard(d->ring);
			if (rc > 0)
				d->dropped += (uint64_t)rc;
		}
		CHECK(rc >= 0 || rc == -EBUSY);
		if (rc == -EBUSY) /* the poster reads it */
			__atomic_fetch_add(&d->refused, 1, __ATOMIC_RELAXED);
	}
	return NULL;
}

static void
test_discard_races_add(void)
{
	struct evd_loop_conf conf = { .policy = "poll" };
	struct evd_event ev = { 0 };
	struct discard_racer d[2] = { { 0 } };
	uint64_t got = 0, posted = 0;
	struct evd_source *ring;
	struct evd_loop *loop;
	uint32_t level = rte_log_get_global_level();
	pthread_t t[2];
	int stop = 0, rc;

	CHECK_EQ(evd_loop_create(&conf, &loop), 0);
	CHECK_EQ(evd_ring_create("raced", 64, count_events, &got, &ring), 0);
	rte_log_set_global_level(RTE_LOG_CRIT); /* thousands of refusals and discards */
	for (int i = 0; i < 2; i++) {
		d[i] = (struct discard_racer){ .ring = ring, .loop = i ? loop : NULL, .stop = &stop };
		CHECK_EQ(pthread_create(&t[i], NULL, discard_race, &d[i]), 0);
	}
	/* a full ring yields to the consumers (three threads on two CPUs: the
	 * one holding the ring may be waiting for one); full for a million
	 * yields in a row, it lost them: two at once can leave it so for good */
	for (long full = 0; full < 1000000 &&
	     (posted < 200000 || __atomic_load_n(&d[0].refused, __ATOMIC_RELAXED) == 0 ||
	      __atomic_load_n(&d[1].refused, __ATOMIC_RELAXED) == 0);) {
		if (evd_ring_post(ring, &ev) == 0) {
			posted++;
			full = 0;
		} else {
			full++;
			sched_yield();
		}
	}
	__atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
	for (int i = 0; i < 2; i++)
		CHECK_EQ(pthread_join(t[i], NULL), 0);
	rte_log_set_global_level(level);
	rc = evd_ring_discard(ring);
	CHECK(rc >= 0);
	CHECK(posted >= 200000);
	CHECK_EQ(got + d[0].dropped + d[1].dropped + (uint64_t)rc, posted);
	CHECK(got > 0);
	printf("  posted %" PRIu64 ": delivered %" PRIu64 ", discarded %" PRIu64 " + %" PRIu64
	       " + %d; refused %" PRIu64 " and %" PRIu64 " times\n", posted, got, d[0].dropped,
	       d[1].dropped, rc, d[0].refused, d[1].refused);
	CHECK_EQ(evd_source_destroy(ring), 0);
	CHECK_EQ(evd_loop_destroy(loop), 0);
}

/* ---- a remove on the loop's thread while another thread's add is refused -- */

/* An add claims its source before it asks for the loop; refused (the loop
 * runs on another thread), it lets go. A remove on the loop's thread in
 * between must not take the source for one of the loop's: it named the
 * loop from the claim on, and the handler's remove detached a source the
 * table did not hold (another's slot, its key). Made to happen: a ring's
 * handler reposts to itself and removes S each time, while a thread tries
 * to add S again and again. */
struct remover {
	struct evd_loop *loop;
	struct evd_source *s;
	uint64_t calls, left;
	int stop;
};

static void
remove_other(struct evd_source *self, void *burst, uint16_t n, void *arg)
{
	struct remover *rm = arg;
	struct evd_event ev = { 0 };

	(void)burst;
	for (uint16_t i = 0; i < n; i++) {
		CHECK_EQ(evd_loop_remove(rm->loop, rm->s), -EINVAL); /* never on it */
		__atomic_fetch_add(&rm->calls, 1, __ATOMIC_RELAXED); /* the adder reads it */
	}
	if (__atomic_load_n(&rm->stop, __ATOMIC_ACQUIRE))
		CHECK_EQ(evd_loop_stop(rm->loop), 0);
	else
		CHECK_EQ(evd_ring_post(self, &ev), 0);
}

static void
test_remove_during_refused_add(void)
{
	struct evd_loop_conf conf = { .policy = "poll" };
	struct evd_event ev = { 0 };
	struct remover rm = { 0 };
	struct evd_source *ring;
	struct runner r;
	uint32_t level = rte_log_get_global_level();
	uint64_t got = 0, refused = 0;

	CHECK_EQ(evd_loop_create(&conf, &r.loop), 0);
	rm.loop = r.loop;
	CHECK_EQ(evd_ring_create("remover", 64, remove_other, &rm, &ring), 0);
	CHECK_EQ(evd_ring_create("S", 64, count_events, &got, &rm.s), 0);
	CHECK_EQ(evd_loop_add(r.loop, ring), 0);
	CHECK_EQ(evd_ring_post(ring, &ev), 0);
	rte_log_set_global_level(RTE_LOG_CRIT); /* a refusal per call, both sides */
	CHECK_EQ(pthread_create(&r.thread, NULL, run_loop, &r), 0);
	while (__atomic_load_n(&rm.calls, __ATOMIC_RELAXED) == 0) /* until it runs */
		sched_yield();
	while (refused < 300000 || __atomic_load_n(&rm.calls, __ATOMIC_RELAXED) < 300000) {
		CHECK_EQ(evd_loop_add(r.loop, rm.s), -EBUSY);
		refused++;
	}
	__atomic_store_n(&rm.stop, 1, __ATOMIC_RELEASE);
	CHECK_EQ(pthread_join(r.thread, NULL), 0);
	rte_log_set_global_level(level);
	printf("  %" PRIu64 " adds refused, %" PRIu64 " removes on the loop's thread refused\n",
	       refused, rm.calls);
	CHECK_EQ(evd_loop_remove(r.loop, ring), 0);
	CHECK_EQ(evd_ring_discard(ring), 0);
	CHECK_EQ(evd_source_destroy(ring), 0);
	CHECK_EQ(evd_source_destroy(rm.s), 0); /* on no loop, as every call said */
	CHECK_EQ(evd_loop_destroy(r.loop), 0);
}

/* ---- a call queued while the loop goes to sleep ---------------------------- */

/* A call queued after the round looked for calls, while the round's look at
 * epoll drained the eventfd that told of it, was left queued by a sleep with
 * no bound (a loop whose only source is an idle fd): lost until some other
 * wake. Made to happen: calls one after another, each waited for, to a loop
 * that sleeps at once (intr); before the check before each wait, about one
 * in four stayed queued. */
static void
post_sem(struct evd_loop *loop, void *arg)
{
	(void)loop;
	CHECK_EQ(sem_post(arg), 0);
}

static void
test_call_while_falling_asleep(void)
{
	struct evd_loop_conf conf = { .policy = "intr" };
	struct evd_source *fs;
	struct runner r;
	sem_t ran;
	int p[2];

	CHECK_EQ(sem_init(&ran, 0, 0), 0);
	CHECK_EQ(pipe(p), 0);
	CHECK_EQ(evd_loop_create(&conf, &r.loop), 0);
	CHECK_EQ(evd_fd_create("idle", p[0], EPOLLIN, count_events, NULL, &fs), 0);
	CHECK_EQ(evd_loop_add(r.loop, fs), 0);
	CHECK_EQ(pthread_create(&r.thread, NULL, run_loop, &r), 0);
	for (int i = 0; i < 2000; i++) {
		struct timespec until;

		CHECK_EQ(evd_loop_call(r.loop, post_sem, &ran), 0);
		/* a bound on liveness, not on speed: a lost call never runs */
		CHECK_EQ(clock_gettime(CLOCK_REALTIME, &until), 0);
		until.tv_sec += 10;
		CHECK_EQ(sem_timedwait(&ran, &until), 0);
	}
	CHECK_EQ(evd_loop_stop(r.loop), 0);
	CHECK_EQ(pthread_join(r.thread, NULL), 0);
	CHECK_EQ(evd_loop_remove(r.loop, fs), 0);
	CHECK_EQ(evd_source_destroy(fs), 0);
	CHECK_EQ(evd_loop_destroy(r.loop), 0);
	CHECK_EQ(close(p[0]), 0);
	CHECK_EQ(close(p[1]), 0);
	CHECK_EQ(sem_destroy(&ran), 0);
}

/* The same for a wait outside: a resume drains the eventfd a call rang,
 * and evd_loop_arm() said to wait without a bound, the call queued. */
static void
test_arm_with_call_queued(void)
{
	struct evd_loop_conf conf = { .policy = "intr" };
	struct evd_loop *loop;
	uint64_t timeout_ns = 1;
	int ran = 0;

	CHECK_EQ(evd_loop_create(&conf, &loop), 0);
	CHECK_EQ(evd_loop_stop(loop), 0);
	CHECK_EQ(evd_loop_call(loop, note_call, &ran), 0);
	CHECK_EQ(evd_loop_resume(loop), 0);
	CHECK_EQ(evd_loop_arm(loop, &timeout_ns), 0);
	CHECK_EQ(timeout_ns, 0); /* not UINT64_MAX: the call waits for the next poll */
	CHECK_EQ(ran, 0);
	CHECK(evd_loop_poll(loop, 0) >= 0);
	CHECK_EQ(ran, 1);
	CHECK_EQ(evd_loop_destroy(loop), 0);
}

/* ---- an error report beside an add and a remove ------------------------- */

/* evd_source_report_error() from a thread that does not run the loop takes
 * it under the registry's lock (its destroy frees it only after taking
 * that lock); an add or a remove holds the loop and then takes that lock.
 * The report used to wait there for the loop while holding the lock: the
 * two threads blocked each other for good. Made to happen: one thread
 * reports errors of Y, another adds and removes X, on one idle loop; a
 * deadlock is meson's timeout. */
struct reporter {
	struct evd_source *y;
	uint64_t n;
	int stop;
};

static void *
report_errors(void *arg)
{
	struct reporter *rp = arg;

	while (!__atomic_load_n(&rp->stop, __ATOMIC_ACQUIRE)) {
		CHECK_EQ(evd_source_report_error(rp->y, -EIO), 0);
		__atomic_fetch_add(&rp->n, 1, __ATOMIC_RELAXED); /* the adder reads it */
	}
	return NULL;
}

static void
test_report_beside_add_remove(void)
{
	struct evd_loop_conf conf = { .policy = "poll" };
	struct evd_source *x;
	struct reporter rp = { 0 };
	struct evd_loop *loop;
	uint32_t level = rte_log_get_global_level();
	uint64_t got = 0;
	pthread_t t;
	int turns = 0;

	CHECK_EQ(evd_loop_create(&conf, &loop), 0);
	CHECK_EQ(evd_ring_create("X", 8, count_events, &got, &x), 0);
	CHECK_EQ(evd_ring_create("Y", 8, count_events, &got, &rp.y), 0);
	CHECK_EQ(evd_loop_add(loop, rp.y), 0);
	rte_log_set_global_level(RTE_LOG_CRIT); /* a line a second of Y's error */
	CHECK_EQ(pthread_create(&t, NULL, report_errors, &rp), 0);
	while (__atomic_load_n(&rp.n, __ATOMIC_RELAXED) == 0)
		sched_yield();
	for (; turns < 200000; turns++) {
		CHECK_EQ(evd_loop_add(loop, x), 0); /* a report holds the loop a moment: it waits */
		CHECK_EQ(evd_loop_remove(loop, x), 0);
	}
	__atomic_store_n(&rp.stop, 1, __ATOMIC_RELEASE);
	CHECK_EQ(pthread_join(t, NULL), 0);
	rte_log_set_global_level(level);
	printf("  %d adds and removes beside %" PRIu64 " reports\n", turns,
	       __atomic_load_n(&rp.n, __ATOMIC_RELAXED));
	CHECK(rp.n > 1000);
	CHECK_EQ(evd_loop_remove(loop, rp.y), 0);
	CHECK_EQ(evd_source_destroy(x), 0);
	CHECK_EQ(evd_source_destroy(rp.y), 0);
	CHECK_EQ(evd_loop_destroy(loop), 0);
}

/* ---- a source destroyed twice -------------------------------------------- */

static int closes;

static void
count_close(struct evd_source *s)
{
	CHECK(s->loop == NULL); /* a driver's close finds it on no loop */
	closes++;
}

static const struct evd_source_ops twice_ops = {
	.kind = "twice",
	.poll = test_poll_none,
	.close = count_close,
};

static void
test_destroy_twice(void)
{
	/* the driver's memory stays (its close does not free it), so the second
	 * call reads no freed memory: the poison answers it */
	struct evd_source s;

	struct evd_loop *loop;

	CHECK_EQ(evd_source_init(&s, &twice_ops, "twice", count_events, NULL), 0);
	CHECK_EQ(evd_loop_create(&(struct evd_loop_conf){ .policy = "poll" }, &loop), 0);
	CHECK_EQ(evd_loop_add(loop, &s), 0); /* a loop named it once */
	CHECK_EQ(evd_loop_remove(loop, &s), 0);
	CHECK_EQ(evd_loop_destroy(loop), 0);
	CHECK_EQ(evd_source_destroy(&s), 0);
	CHECK_EQ(evd_source_destroy(&s), -EINVAL);
	CHECK_EQ(closes, 1);
	CHECK_EQ(evd_source_stats_reset(&s), -EINVAL);
}

static void
test_loop_lookup(void)
{
	struct evd_loop *a, *b;

	CHECK_EQ(evd_loop_create(&(struct evd_loop_conf){ .name = "lookup-a" }, &a), 0);
	CHECK_EQ(evd_loop_create(&(struct evd_loop_conf){ .name = "lookup-b" }, &b), 0);
	CHECK(evd_loop_lookup("lookup-a") == a);
	CHECK(evd_loop_lookup("lookup-b") == b);
	CHECK(evd_loop_lookup("lookup-c") == NULL);
	REFUSED(evd_loop_lookup(NULL) == NULL, 1, "name");
	CHECK_EQ(evd_loop_destroy(a), 0);
	CHECK(evd_loop_lookup("lookup-a") == NULL);
	CHECK_EQ(evd_loop_destroy(b), 0);
}

int
main(int argc, char **argv)
{
	TEST_NAMED(test_bad_arguments);
	TEST_NAMED(test_control_from_another_thread);
	TEST_NAMED(test_call_runs_at_destroy);
	TEST_NAMED(test_fd_closed_while_registered);
	TEST_NAMED(test_fd_number_reused);
	TEST_NAMED(test_fd_closed_is_dropped);
	TEST_NAMED(test_cancel_fired_one_shot);
	TEST_NAMED(test_destroy_ring_with_events);
	TEST_NAMED(test_discard_races_add);
	TEST_NAMED(test_remove_during_refused_add);
	TEST_NAMED(test_call_while_falling_asleep);
	TEST_NAMED(test_arm_with_call_queued);
	TEST_NAMED(test_report_beside_add_remove);
	TEST_NAMED(test_destroy_twice);
	TEST_NAMED(test_loop_lookup);
	return 0;
}
