/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The sleep protocol's edges, each made to happen (found by a review of the
 * loop; each test fails on the loop before the fix):
 * - a source added by on_error during the re-poll: it was polled but never
 *   armed, and the loop slept its whole bound while it had work;
 * - a re-poll that fails: the loop slept its whole bound on a source it
 *   could not check, although an arm failure bounds the sleep;
 * - a removal asked for after the round's poll (an ack that fails): it was
 *   still pending when the step returned, so the source could not be
 *   destroyed "after the step" as the header says;
 * - the mode trace's oldest slot, copied while the loop overwrote it: a
 *   reader a whole window behind got a newer entry in its place.
 * (evd_loop_stop's last access to the loop: test_stop_destroy.c.)
 */
#include <pthread.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <evd.h>
#include <evd_policy.h>
#include <evd_source.h>

#include "bad_source.h"
#include "evd_test.h"
#include "strict_source.h"

static int delivered;

static void
count(struct evd_source *s, void *b, uint16_t n, void *a)
{
	(void)s; (void)b; (void)a;
	__atomic_fetch_add(&delivered, n, __ATOMIC_RELAXED);
}

/* ---- a source that joins during the re-poll ---- */

/* An fd source whose poll fails once, right after its first arm: the
 * re-poll. */
struct flaky {
	struct evd_source src;
	int efd;
	int fail_next;
	int arms;
};

static int
flaky_poll(struct evd_source *s, uint16_t n)
{
	struct flaky *f = (struct flaky *)s;

	(void)n;
	if (f->fail_next) {
		f->fail_next = 0;
		return -EIO;
	}
	return 0;
}

static int
flaky_arm(struct evd_source *s)
{
	struct flaky *f = (struct flaky *)s;

	f->fail_next = f->arms++ == 0;
	return 0;
}

static int
flaky_fd(const struct evd_source *s)
{
	return ((const struct flaky *)s)->efd;
}

static const struct evd_source_ops flaky_ops = { .kind = "flaky", .poll = flaky_poll,
						 .arm = flaky_arm, .fd = flaky_fd };

static struct evd_source *backup; /* a ring on_error adds when flaky fails */

static void
add_backup(struct evd_loop *l, struct evd_source *s, int err, void *arg)
{
	(void)s; (void)err; (void)arg;
	if (backup->loop == NULL)
		CHECK_EQ(evd_loop_add(l, backup), 0);
}

static void *
post_when_asleep(void *arg)
{
	struct evd_event ev = { .type = 1 };

	test_wait_asleep(arg, 1000);
	CHECK_EQ(evd_ring_post(backup, &ev), 0);
	return NULL;
}

static void
test_add_in_repoll(void)
{
	struct evd_loop_conf c = { .name = "add", .policy = "intr", .max_sleep_us = 10000000,
				   .on_error = add_backup };
	struct evd_loop_stats st;
	struct evd_source_stats rs;
	struct evd_loop *l;
	struct flaky f = { 0 };
	pthread_t th;
	uint64_t t0 = test_now_ns();

	delivered = 0;
	f.efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	CHECK(f.efd >= 0);
	CHECK_EQ(evd_source_init(&f.src, &flaky_ops, "flaky", count, NULL), 0);
	CHECK_EQ(evd_ring_create("backup", 64, count, NULL, &backup), 0);
	CHECK_EQ(evd_loop_create(&c, &l), 0);
	CHECK_EQ(evd_loop_add(l, &f.src), 0);
	CHECK_EQ(pthread_create(&th, NULL, post_when_asleep, l), 0);
	/* poll, arm, re-poll (error: backup added), then the step starts over
	 * and arms it; the post wakes the sleep */
	while (__atomic_load_n(&delivered, __ATOMIC_RELAXED) == 0)
		CHECK(evd_loop_step(l) >= 0);
	pthread_join(th, NULL);
	CHECK_EQ(evd_loop_stats_get(l, &st), 0);
	CHECK_EQ(evd_source_stats_get(backup, &rs), 0);
	printf("  loop: sleeps %" PRIu64 ", wakeups %" PRIu64 ", timeouts %" PRIu64
	       "; the ring: arms %" PRIu64 ", events %" PRIu64 "\n", st.sleeps, st.wakeups,
	       st.sleep_timeouts, rs.arms, rs.events);
	CHECK_EQ(st.sleep_timeouts, 0); /* it was: the ring's post rang no doorbell */
	CHECK(test_now_ns() - t0 < 5000000000ull); /* liveness: 10 s was the bound */
	CHECK_EQ(evd_loop_remove(l, &f.src), 0);
	CHECK_EQ(evd_loop_remove(l, backup), 0);
	CHECK_EQ(evd_loop_destroy(l), 0);
	CHECK_EQ(evd_source_destroy(backup), 0);
	close(f.efd);
}

/* ---- a re-poll that fails ---- */

static struct strict_source strict;

static void
fail_next_repoll(struct evd_loop *l, void *arg)
{
	(void)l; (void)arg;
	/* after the round's empty poll, before the arm: the re-poll fails
	 * once, and an item lands just before the arm (no notification) */
	__atomic_store_n(&strict.fail_poll, 1, __ATOMIC_RELEASE);
	strict.inject_at_arm = 1;
}

static void
test_repoll_error(void)
{
	struct evd_loop_conf c = { .name = "repoll", .policy = "intr", .max_sleep_us = 10000000,
				   .poll_only_bound_us = 1000, .on_idle = fail_next_repoll };
	struct evd_loop_stats st;
	struct evd_loop *l;
	uint64_t t0;
	int n;

	CHECK_EQ(strict_source_init(&strict, "strict"), 0);
	CHECK_EQ(evd_loop_create(&c, &l), 0);
	CHECK_EQ(evd_loop_add(l, &strict.src), 0);
	t0 = test_now_ns();
	n = evd_loop_step(l);
	CHECK_EQ(evd_loop_stats_get(l, &st), 0);
	printf("  step %d after %.1f ms: sleeps %" PRIu64 ", timeouts %" PRIu64 ", errors %" PRIu64
	       "\n", n, (double)(test_now_ns() - t0) / 1e6, st.sleeps, st.sleep_timeouts, st.errors);
	CHECK_EQ(n, 1);         /* the item, found after the bounded wait */
	CHECK_EQ(st.errors, 1);
	/* liveness: the poll-only bound (1 ms), not max_sleep_us (10 s) */
	CHECK(test_now_ns() - t0 < 5000000000ull);
	CHECK_EQ(evd_loop_remove(l, &strict.src), 0);
	CHECK_EQ(evd_loop_destroy(l), 0);
	strict_source_fini(&strict);
}

/* ---- a removal asked for after the round's poll ---- */

static void
remove_on_error(struct evd_loop *l, struct evd_source *s, int err, void *arg)
{
	(void)err; (void)arg;
	CHECK_EQ(evd_loop_remove(l, s), 0);
}

static void
test_remove_after_poll(void)
{
	struct evd_loop_conf c = { .name = "ack", .policy = "intr", .max_sleep_us = 10000000,
				   .on_error = remove_on_error };
	struct evd_loop *l;
	struct bad_source b = { .consume = true }; /* its ack reads, then fails */
	uint64_t one = 1;

	b.efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	CHECK(b.efd >= 0);
	CHECK_EQ(evd_source_init(&b.src, &bad_ack_ops, "bad", count, NULL), 0);
	CHECK_EQ(evd_loop_create(&c, &l), 0);
	CHECK_EQ(evd_loop_add(l, &b.src), 0);
	CHECK_EQ(write(b.efd, &one, sizeof(one)), 8); /* wakes the sleep; its ack fails */
	CHECK(evd_loop_step(l) >= 0);
	CHECK(b.src.loop == NULL);                  /* removed by the end of the step */
	CHECK_EQ(evd_source_destroy(&b.src), 0);    /* was -EBUSY */
	CHECK_EQ(evd_loop_destroy(l), 0);
	close(b.efd);
}

/* ---- the trace's oldest slot ---- */

static uint64_t ticks;

static uint64_t
tick(void *a)
{
	(void)a;
	return ++ticks; /* the loop thread's clock: every entry a later time */
}

static int flip;

static enum evd_action
flip_decide(void *st, const struct evd_policy_input *in, uint64_t *arg)
{
	(void)st; (void)in;
	*arg = 1;
	return (flip ^= 1) ? EVD_ACTION_PAUSE : EVD_ACTION_POLL; /* a switch a step */
}

static int
flip_create(const struct evd_policy_param *p, unsigned int n, const struct evd_policy_env *e,
	    void **st)
{
	(void)p; (void)n; (void)e;
	*st = NULL;
	return 0;
}

static const struct evd_policy_ops flip_ops = { .name = "flip", .create = flip_create,
						.decide = flip_decide };

static int trace_done;

/* Always a whole window behind (cursor 0): the oldest entry it copies is
 * the slot the loop writes next. */
static void *
lagging_reader(void *arg)
{
	struct evd_mode_event out[64];
	uint64_t reads = 0, bad = 0;

	while (!__atomic_load_n(&trace_done, __ATOMIC_ACQUIRE)) {
		uint64_t cur = 0;
		int n = evd_loop_trace_read(arg, &cur, out, 64, NULL);

		reads++;
		for (int i = 1; i < n; i++)
			bad += out[i].t_ns <= out[i - 1].t_ns || out[i].mode == out[i - 1].mode;
	}
	printf("  %" PRIu64 " reads, %" PRIu64 " entries out of order\n", reads, bad);
	return (void *)(uintptr_t)bad;
}

static void
test_trace_oldest_slot(void)
{
	struct evd_clock ck = { .now_ns = tick };
	struct evd_loop_conf c = { .name = "trace", .policy = "flip", .clock = &ck };
	struct evd_source *r;
	struct evd_loop *l;
	pthread_t th;
	void *bad;

	CHECK_EQ(evd_policy_register(&flip_ops), 0);
	CHECK_EQ(evd_loop_create(&c, &l), 0);
	CHECK_EQ(evd_ring_create("r", 8, count, NULL, &r), 0);
	CHECK_EQ(evd_loop_add(l, r), 0);
	CHECK_EQ(evd_loop_trace_enable(l, 64), 0);
	CHECK_EQ(pthread_create(&th, NULL, lagging_reader, l), 0);
	for (int i = 0; i < 2000000; i++)
		CHECK(evd_loop_step(l) >= 0);
	__atomic_store_n(&trace_done, 1, __ATOMIC_RELEASE);
	pthread_join(th, &bad);
	CHECK(bad == NULL);
	CHECK_EQ(evd_loop_remove(l, r), 0);
	CHECK_EQ(evd_loop_destroy(l), 0);
	CHECK_EQ(evd_source_destroy(r), 0);
}

/* test_protocol [NAME]: all, or the one test NAME (without test_) */
int
main(int argc, char **argv)
{
	TEST_NAMED(test_add_in_repoll);
	TEST_NAMED(test_repoll_error);
	TEST_NAMED(test_remove_after_poll);
	TEST_NAMED(test_trace_oldest_slot);
	return 0;
}
