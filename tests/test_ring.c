/* SPDX-License-Identifier: BSD-3-Clause */
/* Unit tests of the software event ring. */
#include <dlfcn.h>
#include <poll.h>
#include <pthread.h>
#include <sys/epoll.h>
#include <unistd.h>

#include <evd.h>
#include <evd_source.h>

#include "evd_test.h"

struct sink {
	uint64_t n;
	uint64_t last;
	uint64_t out_of_order;
	uint16_t max_burst;
};

static void
sink_handler(struct evd_source *src, void *burst, uint16_t n, void *arg)
{
	struct sink *k = arg;
	struct evd_event *ev = burst;

	(void)src;
	for (uint16_t i = 0; i < n; i++) {
		if (ev[i].u64 != k->last + 1)
			k->out_of_order++;
		k->last = ev[i].u64;
	}
	k->n += n;
	if (n > k->max_burst)
		k->max_burst = n;
}

/* The loop's epoll fd is readable: its bell (or another fd) was written. */
static bool
readable(struct evd_loop *loop)
{
	struct pollfd p = { .fd = evd_loop_fd(loop), .events = POLLIN };

	return poll(&p, 1, 0) == 1;
}

static void
test_create_errors(void)
{
	struct evd_source *r = (void *)1;

	CHECK_EQ(evd_ring_create("r", 0, sink_handler, NULL, &r), -EINVAL);
	CHECK(r == NULL);
	CHECK_EQ(evd_ring_create("r", 1, sink_handler, NULL, &r), -EINVAL);
	CHECK_EQ(evd_ring_create("r", (1u << 24) + 1, sink_handler, NULL, &r), -EINVAL);
	CHECK_EQ(evd_ring_create("r", 8, NULL, NULL, &r), -EINVAL);
	CHECK_EQ(evd_ring_create("r", 8, sink_handler, NULL, NULL), -EINVAL);
	CHECK_EQ(evd_ring_post(NULL, NULL), -EINVAL);
}

static void
test_post_not_a_ring(void)
{
	struct evd_source *f;
	struct evd_event ev = { 0 };

	CHECK_EQ(evd_fd_create("fd", 0, 0, sink_handler, NULL, &f), 0);
	CHECK_EQ(evd_ring_post(f, &ev), -EINVAL);
	CHECK_EQ(evd_source_destroy(f), 0);
}

static void
test_fifo_full_and_burst(void)
{
	struct evd_loop_conf conf = { .policy = "poll", .burst = 4 };
	struct evd_loop *loop;
	struct evd_source *r;
	struct sink k = { 0 };
	struct evd_event ev[8];
	struct evd_source_stats ss;

	CHECK_EQ(evd_loop_create(&conf, &loop), 0);
	CHECK_EQ(evd_ring_create("r", 5, sink_handler, &k, &r), 0); /* rounds up to 8 */
	CHECK_EQ(evd_loop_add(loop, r), 0);
	for (int i = 0; i < 8; i++)
		ev[i].u64 = (uint64_t)i + 1;
	CHECK_EQ(evd_ring_post_burst(r, ev, 6), 6);
	CHECK_EQ(evd_ring_count(r), 6);
	CHECK_EQ(evd_ring_post_burst(r, ev + 6, 2), 2);
	CHECK_EQ(evd_ring_count(r), 8);
	/* full: refused, counted, nothing dropped */
	CHECK_EQ(evd_ring_post(r, &ev[0]), -ENOBUFS);
	CHECK_EQ(evd_source_stats_get(r, &ss), 0);
	CHECK_EQ(ss.full, 1);
	/* the loop takes at most its burst per poll */
	CHECK_EQ(evd_loop_step(loop), 4);
	CHECK_EQ(k.max_burst, 4);
	/* partial burst: 4 free slots, 6 offered */
	for (int i = 0; i < 6; i++)
		ev[i].u64 = (uint64_t)i + 9;
	CHECK_EQ(evd_ring_post_burst(r, ev, 6), 4);
	CHECK_EQ(evd_source_stats_get(r, &ss), 0);
	CHECK_EQ(ss.full, 2);
	CHECK_EQ(evd_ring_post_burst(r, ev + 4, 2), -ENOBUFS);
	while (evd_loop_step(loop) > 0)
		;
	CHECK_EQ(k.n, 12);
	CHECK_EQ(k.last, 12);
	CHECK_EQ(k.out_of_order, 0);
	CHECK_EQ(evd_ring_count(r), 0);
	CHECK_EQ(evd_source_destroy(r), -EBUSY);
	CHECK_EQ(evd_loop_destroy(loop), -EBUSY);
	CHECK_EQ(evd_loop_remove(loop, r), 0);
	CHECK_EQ(evd_source_destroy(r), 0);
	CHECK_EQ(evd_loop_destroy(loop), 0);
}

/* The doorbell (the loop's bell) rings only while the ring is armed, once
 * per arm, and writes the loop's fd only while the loop waits. */
static void
test_doorbell_only_when_armed(void)
{
	struct evd_loop_conf conf = { .policy = "intr" };
	struct evd_loop *loop;
	struct evd_source *r;
	struct evd_source_stats ss;
	struct sink k = { 0 };
	struct evd_event ev = { .u64 = 1 };
	uint64_t t;

	CHECK_EQ(evd_loop_create(&conf, &loop), 0);
	CHECK_EQ(evd_ring_create("r", 16, sink_handler, &k, &r), 0);
	CHECK_EQ(evd_loop_add(loop, r), 0);
	CHECK_EQ(evd_ring_post(r, &ev), 0);
	CHECK(!readable(loop));
	CHECK_EQ(evd_loop_arm(loop, &t), 1); /* the re-poll after the arm found it */
	CHECK_EQ(evd_loop_arm(loop, &t), 0); /* armed: the caller waits */
	CHECK(!readable(loop));              /* arming an empty ring raises nothing */
	ev.u64 = 2;
	CHECK_EQ(evd_ring_post(r, &ev), 0);
	CHECK(readable(loop));
	ev.u64 = 3;
	CHECK_EQ(evd_ring_post(r, &ev), 0); /* the first post took the arm */
	CHECK_EQ(evd_loop_step(loop), 2);   /* ends the wait */
	CHECK(!readable(loop));
	CHECK_EQ(evd_source_stats_get(r, &ss), 0);
	CHECK_EQ(ss.wakeups, 1);             /* one doorbell for two posts */
	ev.u64 = 4;
	CHECK_EQ(evd_ring_post(r, &ev), 0);
	CHECK(!readable(loop));              /* not armed: silent */
	CHECK_EQ(evd_loop_poll(loop, 0), 1);
	/* armed, then the loop is awake again: a post sets the bell's bits
	 * and writes no fd; the next round takes them */
	CHECK_EQ(evd_loop_arm(loop, &t), 0);
	CHECK_EQ(evd_loop_step(loop), 0);    /* the wait ends with nothing */
	ev.u64 = 5;
	CHECK_EQ(evd_ring_post(r, &ev), 0);
	CHECK(!readable(loop));
	CHECK_EQ(evd_loop_poll(loop, 0), 1);
	CHECK_EQ(evd_source_stats_get(r, &ss), 0);
	CHECK_EQ(ss.wakeups, 2);
	CHECK_EQ(k.n, 5);
	CHECK_EQ(k.out_of_order, 0);
	CHECK_EQ(evd_loop_remove(loop, r), 0);
	CHECK_EQ(evd_source_destroy(r), 0);
	CHECK_EQ(evd_loop_destroy(loop), 0);
}

struct mp {
	struct evd_source *r;
	uint32_t id;
	uint64_t count;
};

static void *
mp_producer(void *arg)
{
	struct mp *m = arg;
	struct evd_event ev = { .type = m->id };

	for (uint64_t i = 0; i < m->count;) {
		ev.u64 = i;
		if (evd_ring_post(m->r, &ev) == 0)
			i++;
	}
	return NULL;
}

struct mp_sink {
	uint64_t next[4];
	uint64_t bad;
	uint64_t n;
};

static void
mp_handler(struct evd_source *src, void *burst, uint16_t n, void *arg)
{
	struct mp_sink *k = arg;
	struct evd_event *ev = burst;

	(void)src;
	for (uint16_t i = 0; i < n; i++) {
		if (ev[i].type >= 4 || ev[i].u64 != k->next[ev[i].type])
			k->bad++;
		else
			k->next[ev[i].type]++;
	}
	k->n += n;
}

/* Four producers into a small ring: every event exactly once, in order per
 * producer, while the ring is full most of the time. */
static void
test_multi_producer(void)
{
	struct evd_source *r;
	struct mp_sink k = { 0 };
	struct mp m[4];
	pthread_t th[4];
	const uint64_t per = 100000;

	CHECK_EQ(evd_ring_create("mp", 64, mp_handler, &k, &r), 0);
	for (uint32_t i = 0; i < 4; i++) {
		m[i] = (struct mp){ .r = r, .id = i, .count = per };
		CHECK_EQ(pthread_create(&th[i], NULL, mp_producer, &m[i]), 0);
	}
	while (k.n < 4 * per)
		CHECK(r->ops->poll(r, 32) >= 0);
	for (int i = 0; i < 4; i++)
		pthread_join(th[i], NULL);
	CHECK_EQ(k.bad, 0);
	CHECK_EQ(k.n, 4 * per);
	for (int i = 0; i < 4; i++)
		CHECK_EQ(k.next[i], per);
	CHECK_EQ(r->ops->poll(r, 32), 0);
	CHECK_EQ(evd_source_destroy(r), 0);
}

/* ---- a doorbell rung while the ring leaves its loop ---- */

static void
post_and_remove_timer(struct evd_loop *l, struct evd_timer *t, void *arg)
{
	struct evd_event ev = { .u64 = 1 };

	(void)t;
	CHECK_EQ(evd_ring_post(arg, &ev), 0); /* takes the arm: rings l's bell */
	CHECK_EQ(evd_loop_remove(l, arg), 0);
}

/* A ring removed from loop a (by a timer, after a's sleep) right after a
 * producer took its arm and rang a's bell: the event stays in the ring for
 * the next loop, b, which a's bell does not wake; a's bit names no one. */
static void
test_remove_while_ringing(void)
{
	struct evd_loop_conf ca = { .name = "a", .policy = "intr", .max_sleep_us = 100000 };
	struct evd_loop_conf cb = { .name = "b", .policy = "intr", .max_sleep_us = 1000 };
	struct evd_loop *a, *b;
	struct evd_source *r;
	struct evd_loop_stats st;
	struct sink k = { 0 };

	CHECK_EQ(evd_loop_create(&ca, &a), 0);
	CHECK_EQ(evd_loop_create(&cb, &b), 0);
	CHECK_EQ(evd_ring_create("r", 8, sink_handler, &k, &r), 0);
	CHECK_EQ(evd_loop_add(a, r), 0);
	CHECK_EQ(evd_timer_start(a, 1000000, 0, post_and_remove_timer, r, NULL), 0);
	/* intr: arm, re-poll, sleep until the timer, which posts and removes */
	CHECK_EQ(evd_loop_step(a), 0);
	CHECK(r->loop == NULL);
	CHECK_EQ(evd_ring_count(r), 1);
	CHECK_EQ(evd_loop_poll(a, 0), 0); /* a takes its bell's bit: nobody's */
	CHECK_EQ(evd_loop_stats_get(a, &st), 0);
	CHECK_EQ(st.events, 0);

	/* the ring joins loop b: the event is there, then b sleeps its bound */
	CHECK_EQ(evd_loop_add(b, r), 0);
	CHECK_EQ(evd_loop_step(b), 1);
	CHECK_EQ(k.n, 1);
	CHECK_EQ(evd_loop_step(b), 0);
	CHECK_EQ(evd_loop_stats_get(b, &st), 0);
	CHECK_EQ(st.sleeps, 1);
	CHECK_EQ(st.spurious_wakeups, 0);
	CHECK_EQ(st.sleep_timeouts, 1);
	CHECK_EQ(evd_loop_remove(b, r), 0);
	CHECK_EQ(evd_source_destroy(r), 0);
	CHECK_EQ(evd_loop_destroy(a), 0);
	CHECK_EQ(evd_loop_destroy(b), 0);
}

/* write() interposed: the doorbell of the producer thread that sets
 * stall_me waits until the test lets it go, as if that producer were
 * descheduled between taking the doorbell (armed 1 -> 0) and ringing it. */
static __thread bool stall_me;
static bool stall_go, stalled;
static ssize_t (*real_write)(int, const void *, size_t);

ssize_t
write(int fd, const void *buf, size_t n)
{
	if (real_write == NULL)
		real_write = (ssize_t (*)(int, const void *, size_t))dlsym(RTLD_NEXT, "write");
	if (stall_me) {
		__atomic_store_n(&stalled, true, __ATOMIC_RELEASE);
		while (!__atomic_load_n(&stall_go, __ATOMIC_ACQUIRE))
			usleep(100);
	}
	return real_write(fd, buf, n);
}

static void *
stalled_producer(void *arg)
{
	struct evd_event ev = { .u64 = 1 };

	usleep(2000); /* into the loop's sleep: it armed at once (intr) */
	stall_me = true;
	CHECK_EQ(evd_ring_post(arg, &ev), 0);
	return NULL;
}

/* The loop's sleep times out while a producer is still in its doorbell's
 * write: the bell's bits are set already, so the timed-out wait finds the
 * event through them, not lost and not counted lost. The late write wakes
 * the next sleep at once, which drains it. */
static void
test_doorbell_owed(void)
{
	struct evd_loop_conf conf = { .policy = "intr", .max_sleep_us = 20000 };
	struct evd_loop *loop;
	struct evd_source *r;
	struct evd_loop_stats st;
	struct sink k = { 0 };
	int tries = 0;

	CHECK_EQ(evd_loop_create(&conf, &loop), 0);
	CHECK_EQ(evd_ring_create("r", 8, sink_handler, &k, &r), 0);
	CHECK_EQ(evd_loop_add(loop, r), 0);
	do { /* until the post came during the sleep (it rang: a write) */
		pthread_t th;

		__atomic_store_n(&stall_go, false, __ATOMIC_RELEASE);
		__atomic_store_n(&stalled, false, __ATOMIC_RELEASE);
		uint64_t before = k.n;

		CHECK_EQ(pthread_create(&th, NULL, stalled_producer, r), 0);
		/* (a doorbell owed: the sleep times out, its poll finds the post) */
		for (int i = 0; i < 1000 && k.n == before; i++)
			CHECK(evd_loop_step(loop) >= 0);
		CHECK_EQ(k.n, before + 1);
		__atomic_store_n(&stall_go, true, __ATOMIC_RELEASE);
		pthread_join(th, NULL);
		tries++;
	} while (!__atomic_load_n(&stalled, __ATOMIC_ACQUIRE) && tries < 100);
	CHECK(__atomic_load_n(&stalled, __ATOMIC_ACQUIRE));
	CHECK_EQ(evd_loop_stats_get(loop, &st), 0);
	printf("  %d tries; events %" PRIu64 ", lost wakeups %" PRIu64 ", timeouts %" PRIu64 "\n",
	       tries, k.n, st.lost_wakeups, st.sleep_timeouts);
	CHECK_EQ(st.lost_wakeups, 0);
	CHECK(st.sleep_timeouts >= 1);
	/* the late doorbell: the next sleep wakes at once and takes it */
	CHECK(readable(loop));
	CHECK_EQ(evd_loop_step(loop), 0);
	CHECK(!readable(loop));
	CHECK_EQ(evd_loop_remove(loop, r), 0);
	CHECK_EQ(evd_source_destroy(r), 0);
	CHECK_EQ(evd_loop_destroy(loop), 0);
}

int
main(void)
{
	TEST(test_create_errors);
	TEST(test_post_not_a_ring);
	TEST(test_fifo_full_and_burst);
	TEST(test_doorbell_only_when_armed);
	TEST(test_multi_producer);
	TEST(test_remove_while_ringing);
	TEST(test_doorbell_owed);
	return 0;
}
