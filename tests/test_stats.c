/* SPDX-License-Identifier: BSD-3-Clause */
/* Unit tests of stats: exact counts, reset, and reads while the loop runs. */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <time.h>
#include <unistd.h>

#include <evd.h>
#include <evd_source.h>

#include "evd_test.h"

static void
test_exact_counts_and_reset(void)
{
	struct evd_loop_conf conf = { .policy = "poll", .burst = 8 };
	struct evd_event ev[20] = { 0 };
	struct evd_loop_stats st;
	struct evd_source_stats ss;
	struct evd_loop *loop;
	struct evd_source *a, *b;

	CHECK_EQ(evd_loop_create(&conf, &loop), 0);
	CHECK_EQ(evd_ring_create("a", 64, test_nop, NULL, &a), 0);
	CHECK_EQ(evd_ring_create("b", 64, test_nop, NULL, &b), 0);
	CHECK_EQ(evd_loop_add(loop, a), 0);
	CHECK_EQ(evd_loop_add(loop, b), 0);
	CHECK_EQ(evd_ring_post_burst(a, ev, 20), 20);
	CHECK_EQ(evd_loop_step(loop), 8);
	CHECK_EQ(evd_loop_step(loop), 8);
	CHECK_EQ(evd_loop_step(loop), 4);
	CHECK_EQ(evd_loop_step(loop), 0);
	CHECK_EQ(evd_loop_stats_get(loop, &st), 0);
	CHECK_EQ(st.polls, 8);        /* 4 rounds x 2 sources */
	CHECK_EQ(st.empty_polls, 1);  /* rounds that found nothing anywhere */
	CHECK_EQ(st.events, 20);
	CHECK_EQ(st.sleeps, 0);
	CHECK_EQ(evd_source_stats_get(a, &ss), 0);
	CHECK_EQ(ss.polls, 4);
	CHECK_EQ(ss.empty_polls, 1);
	CHECK_EQ(ss.events, 20);
	CHECK_EQ(evd_source_stats_get(b, &ss), 0);
	CHECK_EQ(ss.polls, 4);
	CHECK_EQ(ss.empty_polls, 4);
	CHECK_EQ(ss.events, 0);

	CHECK_EQ(evd_loop_stats_reset(loop), 0);
	CHECK_EQ(evd_source_stats_reset(a), 0);
	CHECK_EQ(evd_loop_stats_get(loop, &st), 0);
	CHECK_EQ(st.polls, 0);
	CHECK_EQ(st.events, 0);
	CHECK_EQ(evd_source_stats_get(a, &ss), 0);
	CHECK_EQ(ss.events, 0);
	CHECK_EQ(evd_ring_post_burst(a, ev, 3), 3);
	CHECK_EQ(evd_loop_step(loop), 3);
	CHECK_EQ(evd_loop_stats_get(loop, &st), 0);
	CHECK_EQ(st.events, 3);
	CHECK_EQ(st.polls, 2);
	CHECK_EQ(evd_source_stats_get(a, &ss), 0);
	CHECK_EQ(ss.events, 3);
	CHECK_EQ(evd_loop_stats_get(NULL, &st), -EINVAL);
	CHECK_EQ(evd_loop_stats_get(loop, NULL), -EINVAL);

	CHECK_EQ(evd_loop_remove(loop, a), 0);
	CHECK_EQ(evd_loop_remove(loop, b), 0);
	CHECK_EQ(evd_source_destroy(a), 0);
	CHECK_EQ(evd_source_destroy(b), 0);
	CHECK_EQ(evd_loop_destroy(loop), 0);
}

/* A source's polls through the round's list, counted by the pass: one
 * removed by another's handler before its turn is not polled (nor
 * counted), one added by a handler is polled in the same pass, and an
 * armed one's polls stop until its notification. */
struct churn {
	struct evd_loop *loop;
	struct evd_source *victim, *newcomer;
};

static void
churn_handler(struct evd_source *s, void *burst, uint16_t n, void *arg)
{
	struct churn *c = arg;

	RTE_SET_USED(s);
	RTE_SET_USED(burst);
	RTE_SET_USED(n);
	CHECK_EQ(evd_loop_remove(c->loop, c->victim), 0);
	CHECK_EQ(evd_loop_add(c->loop, c->newcomer), 0);
}

static uint64_t
polls_of(struct evd_source *s, uint64_t *empty)
{
	struct evd_source_stats ss;

	CHECK_EQ(evd_source_stats_get(s, &ss), 0);
	if (empty != NULL)
		*empty = ss.empty_polls;
	return ss.polls;
}

static void
test_polls_through_the_list(void)
{
	struct evd_loop_conf conf = { .policy = "poll" };
	struct evd_loop_conf iconf = { .policy = "intr", .max_sleep_us = 1000 };
	struct evd_event ev = { 0 };
	struct evd_loop_stats st;
	struct churn c = { 0 };
	struct evd_source *a, *e;
	uint64_t empty;

	CHECK_EQ(evd_loop_create(&conf, &c.loop), 0);
	CHECK_EQ(evd_ring_create("a", 64, churn_handler, &c, &a), 0);
	CHECK_EQ(evd_ring_create("b", 64, test_nop, NULL, &c.victim), 0);
	CHECK_EQ(evd_ring_create("d", 64, test_nop, NULL, &c.newcomer), 0);
	CHECK_EQ(evd_loop_add(c.loop, a), 0);
	CHECK_EQ(evd_loop_add(c.loop, c.victim), 0);
	CHECK_EQ(evd_ring_post(a, &ev), 0);
	CHECK_EQ(evd_loop_step(c.loop), 1);
	CHECK_EQ(polls_of(a, &empty), 1);
	CHECK_EQ(empty, 0);
	CHECK_EQ(polls_of(c.victim, NULL), 0);
	CHECK_EQ(polls_of(c.newcomer, NULL), 1);
	CHECK_EQ(evd_loop_stats_get(c.loop, &st), 0);
	CHECK_EQ(st.polls, 3); /* the list's entries, the removed one's too */
	CHECK_EQ(evd_loop_step(c.loop), 0);
	CHECK_EQ(polls_of(a, &empty), 2);
	CHECK_EQ(empty, 1);
	CHECK_EQ(polls_of(c.victim, NULL), 0);
	CHECK_EQ(polls_of(c.newcomer, NULL), 2);
	/* back on the loop, its count goes on from where it was */
	CHECK_EQ(evd_loop_add(c.loop, c.victim), 0);
	CHECK_EQ(evd_loop_step(c.loop), 0);
	CHECK_EQ(polls_of(c.victim, NULL), 1);
	CHECK_EQ(evd_source_stats_reset(c.victim), 0);
	CHECK_EQ(evd_loop_step(c.loop), 0);
	CHECK_EQ(polls_of(c.victim, NULL), 1);
	CHECK_EQ(evd_loop_remove(c.loop, c.victim), 0);
	CHECK_EQ(evd_loop_remove(c.loop, c.newcomer), 0);
	CHECK_EQ(polls_of(c.newcomer, NULL), 4);
	CHECK_EQ(evd_loop_remove(c.loop, a), 0);
	CHECK_EQ(evd_loop_destroy(c.loop), 0);

	/* intr: the round's poll, then the re-poll after the arm; armed, no
	 * poll until the bell; the look that finds it, then a round and a
	 * re-poll again */
	CHECK_EQ(evd_loop_create(&iconf, &c.loop), 0);
	CHECK_EQ(evd_ring_create("e", 64, test_nop, NULL, &e), 0);
	CHECK_EQ(evd_loop_add(c.loop, e), 0);
	CHECK_EQ(evd_loop_step(c.loop), 0);
	CHECK_EQ(polls_of(e, NULL), 2);
	CHECK_EQ(evd_loop_step(c.loop), 0);
	CHECK_EQ(polls_of(e, NULL), 2);
	CHECK_EQ(evd_ring_post(e, &ev), 0);
	CHECK_EQ(evd_loop_step(c.loop), 1);
	CHECK_EQ(polls_of(e, &empty), 3);
	CHECK_EQ(empty, 2);
	CHECK_EQ(evd_loop_step(c.loop), 0);
	CHECK_EQ(polls_of(e, NULL), 5);
	CHECK_EQ(evd_loop_remove(c.loop, e), 0);
	CHECK_EQ(polls_of(e, NULL), 5);
	CHECK_EQ(evd_source_destroy(e), 0);
	CHECK_EQ(evd_loop_destroy(c.loop), 0);
	CHECK_EQ(evd_source_destroy(a), 0);
	CHECK_EQ(evd_source_destroy(c.victim), 0);
	CHECK_EQ(evd_source_destroy(c.newcomer), 0);
}

struct live {
	struct evd_loop *loop;
	struct evd_source *ring;
	uint64_t posted;
	int stop;
};

static void *
feeder(void *arg)
{
	struct live *l = arg;
	struct evd_event ev = { 0 };

	while (!__atomic_load_n(&l->stop, __ATOMIC_ACQUIRE)) {
		if (evd_ring_post(l->ring, &ev) == 0)
			__atomic_fetch_add(&l->posted, 1, __ATOMIC_RELAXED);
		if (l->posted % 64 == 0)
			test_sleep_us(200);
	}
	return NULL;
}

static void *
runner(void *arg)
{
	CHECK_EQ(evd_loop_run(((struct live *)arg)->loop), 0);
	return NULL;
}

/* Stats read from another thread while the loop runs never go backwards,
 * and after the stop they add up. */
static void
test_read_while_running(void)
{
	struct evd_loop_conf conf = { .policy = "adaptive", .max_sleep_us = 1000000 };
	struct live l = { 0 };
	struct evd_loop_stats st, prev = { 0 };
	struct evd_source_stats ss, sprev = { 0 };
	pthread_t f, r;
	uint64_t t0, wall;

	CHECK_EQ(evd_loop_create(&conf, &l.loop), 0);
	CHECK_EQ(evd_ring_create("live", 1024, test_nop, NULL, &l.ring), 0);
	CHECK_EQ(evd_loop_add(l.loop, l.ring), 0);
	t0 = test_now_ns();
	CHECK_EQ(pthread_create(&r, NULL, runner, &l), 0);
	CHECK_EQ(pthread_create(&f, NULL, feeder, &l), 0);
	for (int i = 0; i < 200; i++) {
		CHECK_EQ(evd_loop_stats_get(l.loop, &st), 0);
		CHECK(st.polls >= prev.polls);
		CHECK(st.events >= prev.events);
		CHECK(st.sleeps >= prev.sleeps);
		CHECK(st.cpu_ns >= prev.cpu_ns);
		for (int m = 0; m < EVD_MODE_COUNT; m++)
			CHECK(st.mode_ns[m] >= prev.mode_ns[m]);
		CHECK(st.mode < EVD_MODE_COUNT);
		/* the ring's polls follow the loop's passes while it polls it,
		 * and stop while it is armed: read across both */
		CHECK_EQ(evd_source_stats_get(l.ring, &ss), 0);
		CHECK(ss.polls >= sprev.polls);
		CHECK(ss.polls >= ss.empty_polls + (ss.events > 0));
		CHECK(ss.polls < (1ull << 40));
		prev = st;
		sprev = ss;
		test_sleep_us(1000);
	}
	__atomic_store_n(&l.stop, 1, __ATOMIC_RELEASE);
	pthread_join(f, NULL);
	while (evd_ring_count(l.ring) > 0)
		test_sleep_us(1000);
	CHECK_EQ(evd_loop_stop(l.loop), 0);
	pthread_join(r, NULL);
	wall = test_now_ns() - t0;
	CHECK_EQ(evd_loop_stats_get(l.loop, &st), 0);
	CHECK_EQ(st.events, l.posted);
	CHECK(st.events > 0);
	CHECK(st.sleeps > 0);
	CHECK(st.cpu_ns > 0);
	CHECK(st.cpu_ns <= wall);
	CHECK(st.mode_ns[EVD_MODE_POLL] + st.mode_ns[EVD_MODE_PAUSE] + st.mode_ns[EVD_MODE_SLEEP] <= wall);
	CHECK(st.mode_ns[EVD_MODE_SLEEP] > 0);
	CHECK_EQ(st.lost_wakeups, 0);
	CHECK_EQ(evd_loop_remove(l.loop, l.ring), 0);
	CHECK_EQ(evd_source_destroy(l.ring), 0);
	CHECK_EQ(evd_loop_destroy(l.loop), 0);
}

/* A reset racing a read (telemetry reads on its own thread while the
 * application resets): each counter reads from before the reset or after
 * it, never below 0. Made to happen: one thread steps the loop and resets
 * after every step, so the baseline keeps passing what a reader on the
 * other CPU has just read; without the clamp a read wraps to about 2^64. */
struct resetter {
	struct evd_loop *loop;
	struct evd_source *ring;
	int stop;
};

static void *
step_and_reset(void *arg)
{
	struct resetter *r = arg;

	while (!__atomic_load_n(&r->stop, __ATOMIC_ACQUIRE)) {
		CHECK(evd_loop_step(r->loop) >= 0);
		CHECK_EQ(evd_loop_stats_reset(r->loop), 0);
		CHECK_EQ(evd_source_stats_reset(r->ring), 0);
	}
	return NULL;
}

static void
test_reset_races_read(void)
{
	struct evd_loop_conf conf = { .policy = "poll" };
	struct resetter r = { 0 };
	struct evd_loop_stats st;
	struct evd_source_stats ss;
	pthread_t t;

	CHECK_EQ(evd_loop_create(&conf, &r.loop), 0);
	CHECK_EQ(evd_ring_create("reset", 64, test_nop, NULL, &r.ring), 0);
	CHECK_EQ(evd_loop_add(r.loop, r.ring), 0);
	CHECK_EQ(pthread_create(&t, NULL, step_and_reset, &r), 0);
	for (int i = 0; i < 2000000; i++) {
		CHECK_EQ(evd_loop_stats_get(r.loop, &st), 0);
		CHECK_EQ(evd_source_stats_get(r.ring, &ss), 0);
		/* a few steps at most between a reset and a read, never 2^63 */
		CHECK(st.polls < (1ull << 32));
		CHECK(st.empty_polls < (1ull << 32));
		CHECK(st.mode_ns[EVD_MODE_POLL] < (1ull << 62));
		CHECK(ss.polls < (1ull << 32));
		CHECK(ss.empty_polls < (1ull << 32));
	}
	__atomic_store_n(&r.stop, 1, __ATOMIC_RELEASE);
	pthread_join(t, NULL);
	CHECK_EQ(evd_loop_stats_get(r.loop, &st), 0);
	CHECK_EQ(st.polls, 0); /* the last thing the thread did was reset */
	CHECK_EQ(evd_loop_remove(r.loop, r.ring), 0);
	CHECK_EQ(evd_source_destroy(r.ring), 0);
	CHECK_EQ(evd_loop_destroy(r.loop), 0);
}

/* A trace reader on another thread: evd_loop_trace_enable() frees the ring
 * it copies, so each refuses while the other is under way (-EBUSY). The
 * reader copies a full ring of 4096 all the time, so turning the trace off
 * finds it mid-copy on purpose (before the refusal, ASan saw the copy read
 * the freed ring). */
struct trace_reader {
	struct evd_loop *loop;
	int stop;
	long busy, copies;
};

static void *
read_trace(void *arg)
{
	static struct evd_mode_event ev[4096];
	struct trace_reader *t = arg;

	while (!__atomic_load_n(&t->stop, __ATOMIC_ACQUIRE)) {
		uint64_t cursor = 0;
		int rc = evd_loop_trace_read(t->loop, &cursor, ev, 4096, NULL);

		CHECK((rc >= 0 && rc <= 4096) || rc == -ENODATA || rc == -EBUSY);
		/* (atomic: the main thread reads busy while this one runs) */
		__atomic_fetch_add(&t->busy, rc == -EBUSY, __ATOMIC_RELAXED);
		__atomic_fetch_add(&t->copies, rc > 0, __ATOMIC_RELAXED);
	}
	return NULL;
}

/* Retries a refused resize; never anything but -EBUSY. */
static void
trace_set(struct evd_loop *loop, uint32_t entries, long *busy)
{
	int rc;

	for (long i = 0; (rc = evd_loop_trace_enable(loop, entries)) == -EBUSY; i++) {
		CHECK(i < 100000000);
		++*busy;
	}
	CHECK_EQ(rc, 0);
}

static void
test_trace_resize_races_read(void)
{
	struct evd_loop_conf conf = { .policy = "intr", .max_sleep_us = 1 };
	struct trace_reader t = { 0 };
	struct evd_source *r;
	long busy = 0;
	pthread_t th;

	CHECK_EQ(evd_loop_create(&conf, &t.loop), 0);
	CHECK_EQ(evd_ring_create("t", 64, test_nop, NULL, &r), 0);
	CHECK_EQ(evd_loop_add(t.loop, r), 0);
	/* each refusal logs its line, and both sides retry them by the thousand */
	rte_log_set_level_pattern("lib.evd", RTE_LOG_CRIT);
	CHECK_EQ(pthread_create(&th, NULL, read_trace, &t), 0);
	/* 20 rounds, then more until the two have met (at most 5,000: a reader
	 * mid-copy nearly all the time meets the first ones on two CPUs) */
	for (int round = 0; round < 20 || (busy + __atomic_load_n(&t.busy, __ATOMIC_RELAXED) == 0 &&
					   round < 5000); round++) {
		trace_set(t.loop, 4096, &busy);
		/* intr: each empty step sleeps 1 us and wakes, two transitions */
		for (int i = 0; i < 2048; i++)
			CHECK_EQ(evd_loop_step(t.loop), 0);
		trace_set(t.loop, 0, &busy);
	}
	__atomic_store_n(&t.stop, 1, __ATOMIC_RELEASE);
	pthread_join(th, NULL);
	rte_log_set_level_pattern("lib.evd", RTE_LOG_INFO); /* its registered level */
	printf("  %ld resizes refused, %ld reads refused, %ld copies\n", busy, t.busy,
	       t.copies);
	CHECK(t.copies > 0);
	CHECK(busy + t.busy > 0); /* the two met, and were kept apart */
	CHECK_EQ(evd_loop_remove(t.loop, r), 0);
	CHECK_EQ(evd_source_destroy(r), 0);
	CHECK_EQ(evd_loop_destroy(t.loop), 0);
}

/* Mode transitions: recorded one per switch, in order, with the events
 * count; a reader that falls behind loses the oldest and is told how many. */
static void
test_mode_trace(void)
{
	struct evd_loop_conf conf = { .policy = "intr", .max_sleep_us = 100 };
	struct evd_mode_event ev[128];
	struct evd_event e = { 0 };
	struct evd_loop_stats st;
	struct evd_loop *loop;
	struct evd_source *r;
	uint64_t cursor = 0, lost = 0;
	int n;

	CHECK_EQ(evd_loop_create(&conf, &loop), 0);
	CHECK_EQ(evd_loop_trace_read(loop, &cursor, ev, 1, NULL), -ENODATA);
	CHECK_EQ(evd_loop_trace_enable(loop, 100), -EINVAL);
	CHECK_EQ(evd_loop_trace_enable(loop, 32), -EINVAL);
	CHECK_EQ(evd_loop_trace_enable(loop, 64), 0);
	CHECK_EQ(evd_ring_create("t", 64, test_nop, NULL, &r), 0);
	CHECK_EQ(evd_loop_add(loop, r), 0);
	/* intr: an empty step sleeps (bounded, 100 us) and comes back: two
	 * transitions; a step with an event stays polling */
	for (int i = 0; i < 10; i++) {
		CHECK_EQ(evd_ring_post(r, &e), 0);
		CHECK_EQ(evd_loop_step(loop), 1);
		CHECK_EQ(evd_loop_step(loop), 0);
	}
	CHECK_EQ(evd_loop_stats_get(loop, &st), 0);
	CHECK(st.mode_switches >= 20 && st.mode_switches <= 64);
	n = evd_loop_trace_read(loop, &cursor, ev, 128, &lost);
	CHECK_EQ(n, st.mode_switches);
	CHECK_EQ(lost, 0);
	CHECK_EQ(cursor, (uint64_t)n);
	for (int i = 0; i < n; i++) {
		CHECK(ev[i].mode < EVD_MODE_COUNT);
		if (i > 0) {
			CHECK(ev[i].mode != ev[i - 1].mode);
			CHECK(ev[i].t_ns >= ev[i - 1].t_ns);
			CHECK(ev[i].events >= ev[i - 1].events);
		}
	}
	CHECK(ev[n - 1].events == 10);
	CHECK_EQ(evd_loop_trace_read(loop, &cursor, ev, 128, &lost), 0); /* nothing new */
	/* 60 more steps, unread: at least 120 transitions into a ring of 64 */
	{
		uint64_t before = cursor;

		for (int i = 0; i < 60; i++)
			CHECK_EQ(evd_loop_step(loop), 0);
		CHECK_EQ(evd_loop_stats_get(loop, &st), 0);
		CHECK(st.mode_switches - before >= 120);
		n = evd_loop_trace_read(loop, &cursor, ev, 128, &lost);
		CHECK_EQ(n, 64);
		CHECK_EQ(lost, st.mode_switches - before - 64);
		CHECK_EQ(cursor, st.mode_switches);
	}
	/* a ring made anew under a reader: its cursor from the old one gets
	 * every entry of the new one, and what it left unread in the old one
	 * counts as lost (it skipped the new ring's first entries unseen) */
	{
		uint64_t unread, fresh;

		CHECK_EQ(evd_loop_step(loop), 0);
		CHECK_EQ(evd_loop_stats_get(loop, &st), 0);
		unread = st.mode_switches - cursor;
		CHECK(unread >= 2);
		CHECK_EQ(evd_loop_trace_enable(loop, 128), 0);
		for (int i = 0; i < 3; i++)
			CHECK_EQ(evd_loop_step(loop), 0);
		CHECK_EQ(evd_loop_stats_get(loop, &st), 0);
		fresh = st.mode_switches - cursor - unread;
		CHECK(fresh >= 6);
		lost = 0;
		n = evd_loop_trace_read(loop, &cursor, ev, 128, &lost);
		CHECK_EQ((uint64_t)n, fresh);
		CHECK_EQ(lost, unread);
		CHECK_EQ(cursor, st.mode_switches);
	}
	CHECK_EQ(evd_loop_trace_enable(loop, 0), 0);
	CHECK_EQ(evd_loop_trace_read(loop, &cursor, ev, 1, NULL), -ENODATA);
	CHECK_EQ(evd_loop_remove(loop, r), 0);
	CHECK_EQ(evd_source_destroy(r), 0);
	CHECK_EQ(evd_loop_destroy(loop), 0);
}

static uint64_t
thread_cpu(void)
{
	struct timespec ts;

	CHECK_EQ(clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts), 0);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* One step that sleeps (intr, a pipe that never becomes readable, a 1 ms
 * bound): the loop samples its thread's CPU clock after the wait. */
static void *
sleeping_step(void *loop)
{
	CHECK_EQ(evd_loop_step(loop), 0);
	return NULL;
}

/* Steps from two threads, one at a time (evd.h allows it): the loop's
 * cpu_ns is never the difference of the two threads' CPU clocks. Thread A
 * has run 200 ms of CPU before its first step; B is fresh. A sample on A,
 * one on B, one on A again: the last used to add A's clock less B's, the
 * 200 ms A spent before the loop. */
static void
test_cpu_steps_two_threads(void)
{
	struct evd_loop_conf conf = { .policy = "intr", .max_sleep_us = 1000 };
	struct evd_loop_stats st;
	struct evd_loop *loop;
	struct evd_source *f;
	pthread_t b;
	uint64_t burn = thread_cpu() + 200000000ull, a0, a1;
	volatile uint64_t spin = 0;
	int fds[2];

	CHECK_EQ(pipe(fds), 0);
	CHECK_EQ(evd_loop_create(&conf, &loop), 0);
	CHECK_EQ(evd_fd_create("quiet", fds[0], 0, test_nop, NULL, &f), 0);
	CHECK_EQ(evd_loop_add(loop, f), 0);
	while (thread_cpu() < burn)
		spin++;
	a0 = thread_cpu();
	sleeping_step(loop);
	CHECK_EQ(pthread_create(&b, NULL, sleeping_step, loop), 0);
	CHECK_EQ(pthread_join(b, NULL), 0);
	sleeping_step(loop);
	a1 = thread_cpu();
	CHECK_EQ(evd_loop_stats_get(loop, &st), 0);
	printf("  cpu_ns %" PRIu64 " ns; thread A ran %" PRIu64 " ns in its steps, %" PRIu64
	       " ns before them\n", st.cpu_ns, a1 - a0, a0);
	CHECK(st.cpu_ns <= a1 - a0);
	CHECK_EQ(evd_loop_remove(loop, f), 0);
	CHECK_EQ(evd_source_destroy(f), 0);
	CHECK_EQ(evd_loop_destroy(loop), 0);
	close(fds[0]);
	close(fds[1]);
}

static pthread_t clock_watched; /* the thread whose CPU clock reads are counted */
static int watching;              /* atomic */
static int cpu_clock_reads;       /* atomic */

/* clock_gettime, its CPU clock reads by the watched thread counted */
int
clock_gettime(clockid_t id, struct timespec *ts)
{
	static int (*next)(clockid_t, struct timespec *);

	if (id == CLOCK_THREAD_CPUTIME_ID && __atomic_load_n(&watching, __ATOMIC_ACQUIRE) &&
	    pthread_equal(pthread_self(), clock_watched))
		__atomic_fetch_add(&cpu_clock_reads, 1, __ATOMIC_RELAXED);
	if (next == NULL)
		next = (int (*)(clockid_t, struct timespec *))dlsym(RTLD_NEXT, "clock_gettime");
	return next(id, ts);
}

struct one_by_one {
	struct evd_loop *loop;
	uint64_t handled; /* atomic */
};

static void
count_one(struct evd_source *s, void *burst, uint16_t n, void *arg)
{
	(void)s;
	(void)burst;
	__atomic_fetch_add(&((struct one_by_one *)arg)->handled, n, __ATOMIC_RELEASE);
}

static void *
run_watched(void *arg)
{
	CHECK_EQ(evd_loop_run(((struct one_by_one *)arg)->loop), 0);
	return NULL;
}

/* A loop under evd_loop_run sleeps and wakes without reading its thread's
 * CPU clock (a syscall where the vDSO has none): stats read that clock
 * live, from the reader's thread, and still see the loop's CPU grow. */
static void
test_sleeps_read_no_cpu_clock(void)
{
	struct evd_loop_conf conf = { .policy = "intr" };
	struct one_by_one o = { 0 };
	struct evd_loop_stats st, during;
	struct evd_source *ring;
	struct evd_event ev = { 0 };
	pthread_t th;

	CHECK_EQ(evd_loop_create(&conf, &o.loop), 0);
	CHECK_EQ(evd_ring_create("one", 16, count_one, &o, &ring), 0);
	CHECK_EQ(evd_loop_add(o.loop, ring), 0);
	CHECK_EQ(pthread_create(&th, NULL, run_watched, &o), 0);
	clock_watched = th;
	__atomic_store_n(&watching, 1, __ATOMIC_RELEASE);
	for (uint64_t i = 1; i <= 100; i++) {
		CHECK_EQ(evd_ring_post(ring, &ev), 0);
		while (__atomic_load_n(&o.handled, __ATOMIC_ACQUIRE) < i)
			test_sleep_us(50);
		test_sleep_us(200); /* the loop goes back to sleep */
	}
	CHECK_EQ(evd_loop_stats_get(o.loop, &during), 0);
	__atomic_store_n(&watching, 0, __ATOMIC_RELEASE);
	printf("  %" PRIu64 " sleeps, %d CPU clock reads on the loop's thread, cpu_ns %" PRIu64 "\n",
	       during.sleeps, __atomic_load_n(&cpu_clock_reads, __ATOMIC_RELAXED), during.cpu_ns);
	CHECK(during.sleeps >= 50);
	CHECK(__atomic_load_n(&cpu_clock_reads, __ATOMIC_RELAXED) <= 2); /* the run's start */
	CHECK(during.cpu_ns > 0);
	CHECK_EQ(evd_loop_stop(o.loop), 0);
	CHECK_EQ(pthread_join(th, NULL), 0);
	CHECK_EQ(evd_loop_stats_get(o.loop, &st), 0);
	CHECK(st.cpu_ns >= during.cpu_ns);
	CHECK_EQ(evd_loop_remove(o.loop, ring), 0);
	CHECK_EQ(evd_source_destroy(ring), 0);
	CHECK_EQ(evd_loop_destroy(o.loop), 0);
}

int
main(void)
{
	TEST(test_exact_counts_and_reset);
	TEST(test_polls_through_the_list);
	TEST(test_read_while_running);
	TEST(test_reset_races_read);
	TEST(test_mode_trace);
	TEST(test_trace_resize_races_read);
	TEST(test_cpu_steps_two_threads);
	TEST(test_sleeps_read_no_cpu_clock);
	return 0;
}
