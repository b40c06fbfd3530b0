/* SPDX-License-Identifier: BSD-3-Clause */
/* Unit tests of the loop: registration, poll-only bound, removal, errors. */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <evd.h>
#include <evd_source.h>

#include "evd_test.h"
#include "strict_source.h"

/* A poll-only source: a counter, no fd. */
struct counter_source {
	struct evd_source src;
	uint64_t items;
	int fail;
};

static int
counter_poll(struct evd_source *src, uint16_t budget)
{
	struct counter_source *c = (struct counter_source *)src;
	uint64_t n = __atomic_exchange_n(&c->items, 0, __ATOMIC_ACQ_REL);

	(void)budget;
	if (c->fail)
		return -EIO;
	if (n)
		evd_source_deliver(src, NULL, (uint16_t)n);
	return (int)n;
}

static const struct evd_source_ops counter_ops = { .kind = "counter", .poll = counter_poll };
static const struct evd_source_ops no_poll_ops = { .kind = "broken" };

static void
test_create_and_add_errors(void)
{
	struct evd_loop_conf conf = { .name = "0123456789012345678901234567890123456789" };
	struct evd_loop *loop = (void *)1;
	struct counter_source c;
	struct evd_source bad;

	CHECK_EQ(evd_loop_create(&conf, &loop), -EINVAL);
	CHECK(loop == NULL);
	CHECK_EQ(evd_loop_create(NULL, NULL), -EINVAL);
	conf.name = "ok";
	conf.burst = 1000;
	CHECK_EQ(evd_loop_create(&conf, &loop), -EINVAL);
	CHECK_EQ(evd_loop_create(NULL, &loop), 0);
	CHECK_EQ(strcmp(evd_loop_name(loop), "evd"), 0);
	CHECK_EQ(strcmp(evd_loop_policy_name(loop), "adaptive"), 0);

	/* a source without a poll op is refused at registration */
	CHECK_EQ(evd_source_init(&bad, &no_poll_ops, "bad", test_nop, NULL), -EINVAL);
	memset(&bad, 0, sizeof(bad));
	bad.ops = &no_poll_ops;
	bad.handler = test_nop;
	CHECK_EQ(evd_loop_add(loop, &bad), -EINVAL);
	CHECK_EQ(evd_loop_add(loop, NULL), -EINVAL);

	CHECK_EQ(evd_source_init(&c.src, &counter_ops, "c", test_nop, NULL), 0);
	CHECK_EQ(evd_loop_add(loop, &c.src), 0);
	CHECK_EQ(evd_loop_add(loop, &c.src), -EINVAL); /* already on a loop */
	CHECK_EQ(evd_loop_remove(loop, &c.src), 0);
	CHECK_EQ(evd_loop_remove(loop, &c.src), -EINVAL);
	CHECK_EQ(evd_loop_destroy(loop), 0);
}

/* While a poll-only source is registered, a sleep is bounded by
 * poll_only_bound_us (1 ms) even though max_sleep_us is 10 s. The 5 s check
 * is liveness (5000 times the bound), not timing. */
static void
test_poll_only_bound(void)
{
	struct evd_loop_conf conf = {
		.policy = "intr", .max_sleep_us = 10 * 1000 * 1000, .poll_only_bound_us = 1000,
	};
	struct evd_loop *loop;
	struct evd_loop_stats st;
	struct counter_source c = { 0 };
	struct evd_source *ring;
	uint64_t t0;

	CHECK_EQ(evd_loop_create(&conf, &loop), 0);
	CHECK_EQ(evd_ring_create("ring", 16, test_nop, NULL, &ring), 0);
	CHECK_EQ(evd_loop_add(loop, ring), 0);
	CHECK_EQ(evd_source_init(&c.src, &counter_ops, "c", test_nop, NULL), 0);
	CHECK_EQ(evd_loop_add(loop, &c.src), 0);
	t0 = test_now_ns();
	for (int i = 0; i < 20; i++)
		CHECK_EQ(evd_loop_step(loop), 0);
	CHECK(test_now_ns() - t0 < 5ull * 1000 * 1000 * 1000);
	CHECK_EQ(evd_loop_stats_get(loop, &st), 0);
	CHECK_EQ(st.sleeps, 20);
	CHECK_EQ(st.sleep_timeouts, 20);
	CHECK_EQ(st.lost_wakeups, 0);
	/* an item in the poll-only source is found after the bounded sleep,
	 * and that is not a lost wakeup: it never promised one */
	c.items = 3;
	CHECK_EQ(evd_loop_step(loop), 3);
	CHECK_EQ(evd_loop_stats_get(loop, &st), 0);
	CHECK_EQ(st.lost_wakeups, 0);
	CHECK_EQ(evd_loop_remove(loop, &c.src), 0);
	CHECK_EQ(evd_loop_remove(loop, ring), 0);
	CHECK_EQ(evd_source_destroy(ring), 0);
	CHECK_EQ(evd_loop_destroy(loop), 0);
}

struct remover {
	struct evd_loop *loop;
	struct evd_source *victim;
	uint64_t calls;
};

static void
remove_in_handler(struct evd_source *s, void *b, uint16_t n, void *a)
{
	struct remover *r = a;

	(void)s;
	(void)b;
	r->calls += n;
	CHECK_EQ(evd_loop_remove(r->loop, r->victim), 0);
	/* it leaves when the round ends: until then neither removed nor added again */
	CHECK_EQ(evd_loop_remove(r->loop, r->victim), -EINVAL);
	CHECK_EQ(evd_loop_add(r->loop, r->victim), -EINVAL);
}

/* A handler may remove sources (its own, or another) during a round; the
 * removed source is not polled again and its pending notification is
 * consumed. */
static void
test_remove_from_handler(void)
{
	struct evd_loop_conf conf = { .policy = "poll" };
	struct evd_loop *loop;
	struct evd_source *a, *b;
	struct remover ra, rb;
	struct evd_event ev = { 0 };
	struct evd_source_stats sb;

	CHECK_EQ(evd_loop_create(&conf, &loop), 0);
	CHECK_EQ(evd_ring_create("a", 16, remove_in_handler, &ra, &a), 0);
	CHECK_EQ(evd_ring_create("b", 16, remove_in_handler, &rb, &b), 0);
	ra = (struct remover){ loop, b, 0 };
	rb = (struct remover){ loop, b, 0 };
	CHECK_EQ(evd_loop_add(loop, a), 0);
	CHECK_EQ(evd_loop_add(loop, b), 0);
	CHECK_EQ(evd_ring_post(a, &ev), 0);
	CHECK_EQ(evd_ring_post(b, &ev), 0);
	CHECK_EQ(b->ops->arm(b), 0); /* b's next post rings the bell */
	ev.u64 = 2;
	CHECK_EQ(evd_ring_post(b, &ev), 0);
	CHECK_EQ(evd_loop_step(loop), 1); /* a's handler removes b before b is polled */
	CHECK_EQ(ra.calls, 1);
	CHECK_EQ(rb.calls, 0);
	CHECK(b->loop == NULL);
	CHECK_EQ(evd_loop_poll(loop, 0), 0); /* b's bell bit names no one now */
	CHECK_EQ(evd_source_stats_get(b, &sb), 0);
	CHECK_EQ(sb.polls, 0);
	CHECK_EQ(evd_ring_count(b), 2); /* nothing dropped: still in the ring */
	ra.victim = a;                  /* now a removes itself */
	CHECK_EQ(evd_ring_post(a, &ev), 0);
	CHECK_EQ(evd_loop_step(loop), 1);
	CHECK(a->loop == NULL);
	CHECK_EQ(evd_loop_destroy(loop), 0);
	CHECK_EQ(evd_source_destroy(a), 0);
	/* b still holds its two events: destroy refuses to drop them unseen */
	CHECK_EQ(evd_source_destroy(b), -EBUSY);
	CHECK_EQ(evd_ring_discard(b), 2);
	CHECK_EQ(evd_source_destroy(b), 0);
}

struct errs {
	int n;
	int last;
	struct evd_source *src;
};

static void
on_error(struct evd_loop *loop, struct evd_source *src, int err, void *arg)
{
	struct errs *e = arg;

	(void)loop;
	e->n++;
	e->last = err;
	e->src = src;
}

static void
remove_on_error(struct evd_loop *loop, struct evd_source *src, int err, void *arg)
{
	(void)err;
	(void)arg;
	CHECK_EQ(evd_loop_remove(loop, src), 0);
}

/* An error reported while no thread runs the loop: on_error runs on the
 * caller's thread, and a removal there takes effect at once, as from any
 * callback outside a round (no round would come to finish it). */
static void
test_error_report_outside_round(void)
{
	struct evd_loop_conf conf = { .policy = "poll", .on_error = remove_on_error };
	struct evd_loop *loop;
	struct evd_source *r;

	CHECK_EQ(evd_loop_create(&conf, &loop), 0);
	CHECK_EQ(evd_ring_create("r", 16, test_nop, NULL, &r), 0);
	CHECK_EQ(evd_loop_add(loop, r), 0);
	CHECK_EQ(evd_source_report_error(r, -EIO), 0);
	CHECK(r->loop == NULL);
	CHECK_EQ(evd_source_destroy(r), 0);
	CHECK_EQ(evd_loop_destroy(loop), 0);
}

/* A failing source is reported through on_error and the stats; the loop
 * goes on serving the others. */
static void
test_error_callback(void)
{
	struct errs e = { 0 };
	struct evd_loop_conf conf = { .policy = "poll", .on_error = on_error, .on_error_arg = &e };
	struct evd_loop *loop;
	struct counter_source bad = { 0 }, good = { 0 };
	struct evd_loop_stats st;
	struct evd_source_stats ss;

	CHECK_EQ(evd_loop_create(&conf, &loop), 0);
	CHECK_EQ(evd_source_init(&bad.src, &counter_ops, "bad", test_nop, NULL), 0);
	CHECK_EQ(evd_source_init(&good.src, &counter_ops, "good", test_nop, NULL), 0);
	bad.fail = 1;
	good.items = 5;
	CHECK_EQ(evd_loop_add(loop, &bad.src), 0);
	CHECK_EQ(evd_loop_add(loop, &good.src), 0);
	CHECK_EQ(evd_loop_step(loop), 5);
	CHECK_EQ(e.n, 1);
	CHECK_EQ(e.last, -EIO);
	CHECK(e.src == &bad.src);
	CHECK_EQ(evd_loop_stats_get(loop, &st), 0);
	CHECK_EQ(st.errors, 1);
	CHECK_EQ(evd_source_stats_get(&bad.src, &ss), 0);
	CHECK_EQ(ss.errors, 1);
	CHECK_EQ(evd_source_report_error(&good.src, -ENODEV), 0);
	CHECK_EQ(e.n, 2);
	CHECK_EQ(e.last, -ENODEV);
	CHECK_EQ(evd_loop_remove(loop, &bad.src), 0);
	CHECK_EQ(evd_loop_remove(loop, &good.src), 0);
	CHECK_EQ(evd_loop_destroy(loop), 0);
}

/* on_idle: a handler batches (here: it holds what it got), the idle
 * callback flushes. It runs on every round that found nothing and never on
 * one that found something, and before the policy decides: what its flush
 * causes is found by that round's re-poll, not after a sleep. */
struct idle_state {
	struct strict_source *s;
	int calls;
	int held;       /* batched by the handler, not yet flushed */
	int flushed;
	int add_on_flush; /* the flush makes this many new completions */
};

static void
batch_handler(struct evd_source *src, void *burst, uint16_t n, void *arg)
{
	struct idle_state *st = arg;

	(void)src;
	(void)burst;
	st->held += n;
}

static void
on_idle_flush(struct evd_loop *loop, void *arg)
{
	struct idle_state *st = arg;

	(void)loop;
	st->calls++;
	st->flushed += st->held;
	st->held = 0;
	if (st->add_on_flush > 0) {
		strict_source_add(st->s, (uint64_t)st->add_on_flush);
		st->add_on_flush = 0;
	}
}

static void
test_idle_callback(void)
{
	struct strict_source s;
	struct idle_state st = { .s = &s };
	struct evd_loop_conf conf = { .policy = "intr", .on_idle = on_idle_flush, .on_idle_arg = &st };
	struct evd_loop *loop;
	struct evd_loop_stats ls;

	CHECK_EQ(strict_source_init(&s, "batched"), 0);
	s.src.handler = batch_handler;
	s.src.handler_arg = &st;
	CHECK_EQ(evd_loop_create(&conf, &loop), 0);
	CHECK_EQ(evd_loop_add(loop, &s.src), 0);
	strict_source_add(&s, 3);
	CHECK_EQ(evd_loop_step(loop), 3); /* found work: no idle call */
	CHECK_EQ(st.calls, 0);
	CHECK_EQ(st.held, 3);
	/* nothing queued, intr sleeps at once; the flush adds 2 completions
	 * before the arm: the re-poll finds them, no sleep happens */
	st.add_on_flush = 2;
	CHECK_EQ(evd_loop_step(loop), 2);
	CHECK_EQ(st.calls, 1);
	CHECK_EQ(st.flushed, 3);
	CHECK_EQ(evd_loop_stats_get(loop, &ls), 0);
	CHECK_EQ(ls.repoll_hits, 1);
	CHECK_EQ(ls.sleeps, 0);
	CHECK_EQ(evd_loop_remove(loop, &s.src), 0);
	CHECK_EQ(evd_loop_destroy(loop), 0);
	strict_source_fini(&s);
}

static void *
run_loop(void *arg)
{
	CHECK_EQ(evd_loop_run(arg), 0);
	return NULL;
}

/* Idle for 300 ms with the default bound: a loop of rings never wakes (the
 * ring says when a notification is in flight: nothing to back up); with a
 * device-like source armed (strict: no such op) it wakes at its 100 ms
 * backstop. */
static void
idle_for(bool with_device, uint64_t *timeouts)
{
	struct evd_loop_conf conf = { .policy = "intr" };
	struct evd_loop *loop;
	struct evd_source *ring;
	struct strict_source dev;
	struct evd_loop_stats st;
	pthread_t t;

	CHECK_EQ(evd_loop_create(&conf, &loop), 0);
	CHECK_EQ(evd_ring_create("ring", 16, test_nop, NULL, &ring), 0);
	CHECK_EQ(evd_loop_add(loop, ring), 0);
	if (with_device) {
		CHECK_EQ(strict_source_init(&dev, "dev"), 0);
		CHECK_EQ(evd_loop_add(loop, &dev.src), 0);
	}
	CHECK_EQ(pthread_create(&t, NULL, run_loop, loop), 0);
	test_sleep_us(300 * 1000);
	CHECK_EQ(evd_loop_stop(loop), 0);
	CHECK_EQ(pthread_join(t, NULL), 0);
	CHECK_EQ(evd_loop_stats_get(loop, &st), 0);
	*timeouts = st.sleep_timeouts;
	CHECK_EQ(evd_loop_remove(loop, ring), 0);
	CHECK_EQ(evd_source_destroy(ring), 0);
	if (with_device) {
		CHECK_EQ(evd_loop_remove(loop, &dev.src), 0);
		strict_source_fini(&dev);
	}
	CHECK_EQ(evd_loop_destroy(loop), 0);
}

static void
test_idle_rings_never_wake(void)
{
	uint64_t rings, device;

	idle_for(false, &rings);
	idle_for(true, &device);
	CHECK_EQ(rings, 0);
	CHECK(device >= 1);
}

static int nested_rc;

static void
poll_from_handler(struct evd_source *src, void *burst, uint16_t n, void *arg)
{
	(void)src;
	(void)burst;
	(void)n;
	nested_rc = evd_loop_poll(arg, 0);
}

/* evd_loop_poll: one round, never a sleep, whatever the policy says */
static void
test_poll_never_blocks(void)
{
	struct evd_loop_conf conf = { .policy = "intr", .max_sleep_us = 10000000 };
	struct evd_loop *loop;
	struct evd_source *ring, *nest;
	struct evd_loop_stats st;
	struct evd_event ev[3] = { { 0 } };

	CHECK_EQ(evd_loop_create(&conf, &loop), 0);
	CHECK_EQ(evd_ring_create("ring", 16, test_nop, NULL, &ring), 0);
	CHECK_EQ(evd_loop_add(loop, ring), 0);
	CHECK_EQ(evd_loop_poll(loop, 0), 0);      /* empty: intr would sleep 10 s */
	CHECK_EQ(evd_ring_post_burst(ring, ev, 3), 3);
	CHECK_EQ(evd_loop_poll(loop, 1), 1);      /* the budget */
	CHECK_EQ(evd_loop_poll(loop, 0), 2);
	CHECK_EQ(evd_loop_poll(loop, 257), -EINVAL);
	CHECK_EQ(evd_loop_stats_get(loop, &st), 0);
	CHECK_EQ(st.sleeps, 0);
	CHECK_EQ(st.events, 3);
	CHECK_EQ(st.empty_polls, 1);
	CHECK_EQ(evd_ring_create("nest", 16, poll_from_handler, loop, &nest), 0);
	CHECK_EQ(evd_loop_add(loop, nest), 0);
	CHECK_EQ(evd_ring_post(nest, ev), 0);
	CHECK_EQ(evd_loop_poll(loop, 0), 1);
	CHECK_EQ(nested_rc, -EBUSY);              /* no nested rounds */
	CHECK_EQ(evd_loop_stop(loop), 0);
	CHECK_EQ(evd_loop_poll(loop, 0), -ESHUTDOWN);
	CHECK_EQ(evd_loop_remove(loop, nest), 0);
	CHECK_EQ(evd_loop_remove(loop, ring), 0);
	CHECK_EQ(evd_source_destroy(nest), 0);
	CHECK_EQ(evd_source_destroy(ring), 0);
	CHECK_EQ(evd_loop_destroy(loop), 0);
}

struct poster {
	struct evd_source *ring;
	int fd;
};

/* waits until the outer wait is under way (the fd polled), then posts */
static void *
post_later(void *arg)
{
	struct poster *p = arg;
	struct evd_event ev = { 0 };

	test_sleep_us(20 * 1000);
	CHECK_EQ(evd_ring_post(p->ring, &ev), 0);
	return NULL;
}

/* Nesting: another loop waits on evd_loop_fd() after evd_loop_arm() */
static void
test_nested_wait(void)
{
	struct evd_loop_conf conf = { .policy = "intr" };
	struct evd_loop *loop;
	struct evd_source *ring;
	struct strict_source dev;
	struct evd_loop_stats st;
	struct poster p;
	struct pollfd pfd;
	uint64_t tmo;
	pthread_t t;

	CHECK_EQ(evd_loop_create(&conf, &loop), 0);
	CHECK_EQ(evd_ring_create("ring", 16, test_nop, NULL, &ring), 0);
	CHECK_EQ(evd_loop_add(loop, ring), 0);
	pfd = (struct pollfd){ .fd = evd_loop_fd(loop), .events = POLLIN };
	CHECK(pfd.fd >= 0);
	CHECK_EQ(evd_loop_arm(loop, NULL), -EINVAL);

	/* armed with nothing to come: the fd stays quiet, no bound (rings) */
	CHECK_EQ(evd_loop_arm(loop, &tmo), 0);
	CHECK_EQ(tmo, UINT64_MAX);
	CHECK_EQ(poll(&pfd, 1, 0), 0);
	/* a post during the outer wait makes the fd readable; the next poll
	 * takes the wake and dispatches */
	p = (struct poster){ ring, pfd.fd };
	CHECK_EQ(pthread_create(&t, NULL, post_later, &p), 0);
	CHECK_EQ(poll(&pfd, 1, 10000), 1);
	CHECK_EQ(pthread_join(t, NULL), 0);
	CHECK_EQ(evd_loop_poll(loop, 0), 1);
	CHECK_EQ(poll(&pfd, 1, 0), 0); /* acknowledged, disarmed */
	CHECK_EQ(evd_loop_stats_get(loop, &st), 0);
	CHECK_EQ(st.sleeps, 1);
	CHECK_EQ(st.wakeups, 1);
	CHECK_EQ(st.lost_wakeups, 0);

	/* what lands between the last empty poll and the arm: the arm's
	 * re-poll finds it (a strict source raises nothing for it) */
	CHECK_EQ(strict_source_init(&dev, "dev"), 0);
	CHECK_EQ(evd_loop_add(loop, &dev.src), 0);
	CHECK_EQ(evd_loop_poll(loop, 0), 0);
	dev.inject_at_arm = 1;
	CHECK_EQ(evd_loop_arm(loop, &tmo), 1);
	CHECK_EQ(dev.delivered, 1);
	CHECK_EQ(evd_loop_arm(loop, &tmo), 0);
	CHECK(tmo != UINT64_MAX); /* a device's backstop */
	CHECK_EQ(evd_loop_stop(loop), 0);
	CHECK_EQ(poll(&pfd, 1, 0), 1); /* a stop wakes the outer wait too */
	CHECK_EQ(evd_loop_remove(loop, &dev.src), 0);
	strict_source_fini(&dev);
	CHECK_EQ(evd_loop_remove(loop, ring), 0);
	CHECK_EQ(evd_source_destroy(ring), 0);
	CHECK_EQ(evd_loop_destroy(loop), 0);
}

/* A ring added while the loop is armed for an outside wait is armed by the
 * next evd_loop_arm(): its post makes the loop's fd readable at once. */
static void
test_nested_add_is_armed(void)
{
	struct evd_loop_conf conf = { .policy = "intr" };
	struct evd_loop *loop;
	struct evd_source *r1, *r2;
	struct evd_event ev = { 0 };
	struct pollfd pfd;
	uint64_t tmo;

	CHECK_EQ(evd_loop_create(&conf, &loop), 0);
	CHECK_EQ(evd_ring_create("r1", 16, test_nop, NULL, &r1), 0);
	CHECK_EQ(evd_ring_create("r2", 16, test_nop, NULL, &r2), 0);
	CHECK_EQ(evd_loop_add(loop, r1), 0);
	CHECK_EQ(evd_loop_arm(loop, &tmo), 0);
	CHECK_EQ(evd_loop_add(loop, r2), 0); /* the loop is not held: at once */
	CHECK_EQ(evd_loop_arm(loop, &tmo), 0);
	CHECK_EQ(tmo, UINT64_MAX);
	pfd = (struct pollfd){ .fd = evd_loop_fd(loop), .events = POLLIN };
	CHECK_EQ(poll(&pfd, 1, 0), 0);
	CHECK_EQ(evd_ring_post(r2, &ev), 0);
	CHECK_EQ(poll(&pfd, 1, 0), 1); /* r2 was armed: its post rang the bell */
	CHECK_EQ(evd_loop_poll(loop, 0), 1);
	CHECK_EQ(evd_loop_remove(loop, r1), 0);
	CHECK_EQ(evd_loop_remove(loop, r2), 0);
	CHECK_EQ(evd_source_destroy(r1), 0);
	CHECK_EQ(evd_source_destroy(r2), 0);
	CHECK_EQ(evd_loop_destroy(loop), 0);
}

static int
ebadf_poll(struct evd_source *s, uint16_t budget)
{
	(void)s;
	(void)budget;
	return -EBADF;
}

/* A poll-only source whose poll failed (EBADF: given up) bounds no sleep
 * once removed: a loop of rings alone waits without bound again. */
static void
test_failed_poll_only_unbounds(void)
{
	static const struct evd_source_ops ops = { .kind = "bad", .poll = ebadf_poll };
	struct evd_loop_conf conf = { .policy = "intr" };
	struct evd_loop *loop;
	struct evd_source *r, bad;
	uint64_t tmo;

	CHECK_EQ(evd_loop_create(&conf, &loop), 0);
	CHECK_EQ(evd_ring_create("r", 16, test_nop, NULL, &r), 0);
	CHECK_EQ(evd_loop_add(loop, r), 0);
	CHECK_EQ(evd_source_init(&bad, &ops, "bad", test_nop, NULL), 0);
	CHECK_EQ(evd_loop_add(loop, &bad), 0);
	CHECK_EQ(evd_loop_poll(loop, 0), 0); /* -EBADF: failed, logged */
	CHECK_EQ(evd_loop_remove(loop, &bad), 0);
	CHECK_EQ(evd_loop_arm(loop, &tmo), 0);
	CHECK_EQ(tmo, UINT64_MAX); /* not poll_only_bound_us */
	CHECK_EQ(evd_loop_poll(loop, 0), 0);
	CHECK_EQ(evd_loop_remove(loop, r), 0);
	CHECK_EQ(evd_source_destroy(r), 0);
	CHECK_EQ(evd_loop_destroy(loop), 0);
}

/* The loop's polls are its sources' polls, each one: a level fd polled
 * after its wake and a ring's re-polls after an arm count as the round's. */
static void
read_efd(struct evd_source *src, void *burst, uint16_t n, void *arg)
{
	uint64_t v;

	(void)src, (void)burst, (void)n;
	CHECK_EQ(read(*(int *)arg, &v, sizeof(v)), (ssize_t)sizeof(v));
}

static void
test_loop_polls_are_the_sources(void)
{
	static const char *const policies[] = { "poll", "intr" };
	const struct evd_event ev = { 0 };
	const uint64_t one = 1;

	for (int k = 0; k < 2; k++) {
		struct evd_loop_conf conf = { .policy = policies[k], .max_sleep_us = 200 };
		struct evd_loop_stats ls;
		struct evd_source_stats fs, rs;
		struct evd_source *f, *r;
		struct evd_loop *loop;
		int efd = eventfd(0, EFD_NONBLOCK);

		CHECK(efd >= 0);
		CHECK_EQ(evd_loop_create(&conf, &loop), 0);
		CHECK_EQ(evd_fd_create("efd", efd, 0, read_efd, &efd, &f), 0);
		CHECK_EQ(evd_ring_create("r", 64, test_nop, NULL, &r), 0);
		CHECK_EQ(evd_loop_add(loop, f), 0);
		CHECK_EQ(evd_loop_add(loop, r), 0);
		for (int i = 0; i < 200; i++) {
			if (i % 2 == 0)
				CHECK_EQ(write(efd, &one, sizeof(one)), (ssize_t)sizeof(one));
			if (i % 3 == 0)
				CHECK_EQ(evd_ring_post(r, &ev), 0);
			CHECK(evd_loop_step(loop) >= 0);
		}
		CHECK_EQ(evd_loop_stats_get(loop, &ls), 0);
		CHECK_EQ(evd_source_stats_get(f, &fs), 0);
		CHECK_EQ(evd_source_stats_get(r, &rs), 0);
		CHECK(fs.polls > 0 && rs.polls > 0);
		CHECK_EQ(ls.polls, fs.polls + rs.polls);
		CHECK_EQ(evd_loop_remove(loop, f), 0);
		CHECK_EQ(evd_loop_remove(loop, r), 0);
		CHECK_EQ(evd_source_destroy(f), 0);
		CHECK_EQ(evd_source_destroy(r), 0);
		CHECK_EQ(evd_loop_destroy(loop), 0);
		close(efd);
	}
}

int
main(void)
{
	TEST(test_create_and_add_errors);
	TEST(test_poll_only_bound);
	TEST(test_remove_from_handler);
	TEST(test_error_report_outside_round);
	TEST(test_error_callback);
	TEST(test_idle_callback);
	TEST(test_idle_rings_never_wake);
	TEST(test_poll_never_blocks);
	TEST(test_nested_wait);
	TEST(test_nested_add_is_armed);
	TEST(test_failed_poll_only_unbounds);
	TEST(test_loop_polls_are_the_sources);
	return 0;
}
