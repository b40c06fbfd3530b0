/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The API where a caller gets it wrong, or does something unusual from a
 * callback: each made to happen on purpose, each answered as the header
 * says (found by a review that drove every exported function with misuse
 * under ASan/UBSan).
 *
 * - on_error removing the failing source: from the ack that evd_loop_remove()
 *   makes while it detaches (the source was detached twice: the table lost a
 *   healthy source, or with the notification left pending, on_error
 *   recursed until the stack overflowed), and from the arm pass (the last
 *   source moved into the freed slot, behind the pass: it slept unarmed).
 * - evd_loop_destroy() from a timer callback of evd_loop_step(): -EBUSY (it
 *   freed the loop under the step).
 * - evd_loop_step() while evd_loop_run() runs on another thread, and from a
 *   handler of a step under way: -EBUSY (two consumers wedged a ring).
 * - timers with delays or periods near 2^64: never due (the deadline
 *   wrapped into the past and fired at once, or at every step).
 * - evd_policy_env_set() with points distinct as integers but not as
 *   doubles: -EINVAL (L was interpolated by dividing by 0).
 * - two threads, each in a control call's on_error on an idle loop, each
 *   calling into the other's loop: -EDEADLK both (they waited for each
 *   other forever).
 * - a remove from on_error during a remove: done when it returns (it
 *   returned 0 and left the source on the loop).
 * - names with a control character: -EINVAL (a newline split the lines
 *   that printed them).
 */
#include <pthread.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <rte_log.h>

#include <evd.h>
#include <evd_policy.h>
#include <evd_source.h>

#include "bad_source.h"
#include "evd_test.h"

static int errors_seen;

static void
remove_on_error(struct evd_loop *l, struct evd_source *s, int err, void *arg)
{
	(void)arg;
	CHECK_EQ(err, -EIO);
	CHECK(++errors_seen < 100); /* not a recursion */
	CHECK_EQ(evd_loop_remove(l, s), 0);
}

static int delivered;

static void
count(struct evd_source *s, void *burst, uint16_t n, void *arg)
{
	(void)s;
	(void)burst;
	(void)arg;
	delivered += n;
}

/* remove(bad) with a notification pending: its ack fails, on_error removes
 * it again; it leaves once, the two rings stay and deliver */
static void
test_remove_in_detach(bool consume)
{
	struct evd_loop_conf c = { .name = "misuse", .policy = "poll", .on_error = remove_on_error };
	struct evd_source *r1, *r2;
	struct evd_event ev = { 0 };
	struct evd_loop *l;
	struct bad_source b = { .consume = consume };
	uint64_t one = 1;

	errors_seen = delivered = 0;
	b.efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	CHECK(b.efd >= 0);
	CHECK_EQ(evd_source_init(&b.src, &bad_ack_ops, "bad", count, NULL), 0);
	CHECK_EQ(evd_ring_create("r1", 8, count, NULL, &r1), 0);
	CHECK_EQ(evd_ring_create("r2", 8, count, NULL, &r2), 0);
	CHECK_EQ(evd_loop_create(&c, &l), 0);
	CHECK_EQ(evd_loop_add(l, &b.src), 0);
	CHECK_EQ(evd_loop_add(l, r1), 0);
	CHECK_EQ(evd_loop_add(l, r2), 0);
	CHECK_EQ(write(b.efd, &one, sizeof(one)), 8);
	CHECK_EQ(evd_loop_remove(l, &b.src), 0);
	CHECK_EQ(errors_seen, 1);
	CHECK(b.src.loop == NULL && r1->loop == l && r2->loop == l);
	CHECK_EQ(evd_ring_post(r1, &ev), 0);
	CHECK_EQ(evd_ring_post(r2, &ev), 0);
	CHECK_EQ(evd_loop_step(l), 2);
	CHECK_EQ(delivered, 2);
	CHECK_EQ(evd_loop_remove(l, r1), 0);
	CHECK_EQ(evd_loop_remove(l, r2), 0);
	CHECK_EQ(evd_loop_remove(l, r2), -EINVAL);
	CHECK_EQ(evd_loop_destroy(l), 0);
	CHECK_EQ(evd_source_destroy(r1), 0);
	CHECK_EQ(evd_source_destroy(r2), 0);
	close(b.efd);
}

static void
test_remove_in_detach_consumed(void)
{
	test_remove_in_detach(true);
}

static void
test_remove_in_detach_pending(void)
{
	test_remove_in_detach(false);
}

/* Loop @p c with bad (@p ops, on a new eventfd) added first and a ring of
 * 8, @p name, after it. */
static struct evd_loop *
bad_then_ring(const struct evd_loop_conf *c, struct bad_source *b,
	      const struct evd_source_ops *ops, const char *name, struct evd_source **r)
{
	struct evd_loop *l;

	b->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	CHECK(b->efd >= 0);
	CHECK_EQ(evd_source_init(&b->src, ops, "bad", count, NULL), 0);
	CHECK_EQ(evd_ring_create(name, 8, count, NULL, r), 0);
	CHECK_EQ(evd_loop_create(c, &l), 0);
	CHECK_EQ(evd_loop_add(l, &b->src), 0);
	CHECK_EQ(evd_loop_add(l, *r), 0);
	return l;
}

/* The arm pass: bad (arm fails, on_error removes it) first, the ring after
 * it. The ring is armed all the same, and bad leaves at the re-poll. */
static void
test_remove_in_arm_pass(void)
{
	struct evd_loop_conf c = { .name = "misuse", .policy = "intr", .on_error = remove_on_error,
				   .max_sleep_us = 1000 };
	struct evd_source_stats st;
	struct evd_source *r;
	struct evd_loop *l;
	struct bad_source b = { 0 };

	errors_seen = 0;
	l = bad_then_ring(&c, &b, &bad_arm_ops, "ring", &r);
	CHECK_EQ(evd_loop_step(l), 0); /* intr: arm, re-poll, sleep 1 ms */
	CHECK_EQ(errors_seen, 1);
	CHECK(b.src.loop == NULL);
	CHECK_EQ(evd_source_stats_get(r, &st), 0);
	CHECK_EQ(st.arms, 1);
	CHECK_EQ(evd_loop_remove(l, r), 0);
	CHECK_EQ(evd_loop_destroy(l), 0);
	CHECK_EQ(evd_source_destroy(r), 0);
	close(b.efd);
}

static uint64_t
frozen_now(void *arg)
{
	return *(const uint64_t *)arg;
}

static void
keep_on_error(struct evd_loop *l, struct evd_source *s, int err, void *arg)
{
	(void)l;
	(void)s;
	(void)err;
	(*(int *)arg)++;
}

/* A source whose arm fails at every sleep (a stopped port does): every
 * failure counted and given to on_error; the log says it once a second of
 * the loop's clock (here a frozen one), then how many it did not log. */
static void
test_error_log_quiet(void)
{
	uint64_t t = 1000000000ull;
	struct evd_clock clk = { .now_ns = frozen_now, .arg = &t };
	int seen = 0;
	struct evd_loop_conf c = { .name = "quiet", .policy = "intr", .on_error = keep_on_error,
				   .on_error_arg = &seen, .max_sleep_us = 1000, .clock = &clk };
	struct evd_loop_stats st;
	struct evd_loop *l;
	struct bad_source b = { 0 };
	static char buf[8192];
	FILE *f = fmemopen(buf, sizeof(buf) - 1, "w");
	int lines = 0;

	CHECK(f != NULL);
	setvbuf(f, NULL, _IONBF, 0);
	b.efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	CHECK(b.efd >= 0);
	CHECK_EQ(evd_source_init(&b.src, &bad_arm_ops, "bad", count, NULL), 0);
	CHECK_EQ(evd_loop_create(&c, &l), 0);
	CHECK_EQ(evd_loop_add(l, &b.src), 0);
	rte_openlog_stream(f);
	for (int i = 0; i < 20; i++)
		CHECK_EQ(evd_loop_step(l), 0);
	t += 1000000000ull; /* a second later */
	CHECK_EQ(evd_loop_step(l), 0);
	rte_openlog_stream(NULL);
	fclose(f);
	for (const char *p = buf; (p = strstr(p, "arm failed")) != NULL; p++)
		lines++;
	CHECK_EQ(evd_loop_stats_get(l, &st), 0);
	printf("  %" PRIu64 " errors, %d on_error calls, %d log lines:\n%s", st.errors, seen, lines, buf);
	CHECK_EQ(st.errors, 21);
	CHECK_EQ(seen, 21);
	CHECK_EQ(lines, 3); /* the first; then "19 times more", and the 21st */
	CHECK(strstr(buf, "arm failed 19 times more") != NULL);
	CHECK_EQ(evd_loop_remove(l, &b.src), 0);
	CHECK_EQ(evd_loop_destroy(l), 0);
	close(b.efd);
}

static int destroy_rc;

static void
destroy_from_timer(struct evd_loop *l, struct evd_timer *t, void *arg)
{
	(void)t;
	(void)arg;
	destroy_rc = evd_loop_destroy(l);
}

static int nested_rc;

static void
step_from_handler(struct evd_source *s, void *burst, uint16_t n, void *arg)
{
	(void)burst;
	(void)n;
	nested_rc = evd_loop_step((struct evd_loop *)arg);
	(void)s;
}

static void
test_step_callbacks(void)
{
	struct evd_loop_conf c = { .name = "misuse", .policy = "poll" };
	struct evd_event ev = { 0 };
	struct evd_source *r;
	struct evd_loop *l;

	CHECK_EQ(evd_loop_create(&c, &l), 0);
	destroy_rc = 1;
	CHECK_EQ(evd_timer_start(l, 0, 0, destroy_from_timer, NULL, NULL), 0);
	CHECK_EQ(evd_loop_step(l), 0);
	CHECK_EQ(destroy_rc, -EBUSY);
	CHECK_EQ(evd_ring_create("ring", 8, step_from_handler, l, &r), 0);
	CHECK_EQ(evd_loop_add(l, r), 0);
	nested_rc = 1;
	CHECK_EQ(evd_ring_post(r, &ev), 0);
	CHECK_EQ(evd_loop_step(l), 1);
	CHECK_EQ(nested_rc, -EBUSY);
	CHECK_EQ(evd_loop_remove(l, r), 0);
	CHECK_EQ(evd_loop_destroy(l), 0);
	CHECK_EQ(evd_source_destroy(r), 0);
}

static int in_run; /* atomic */

static void
mark_running(struct evd_loop *l, struct evd_timer *t, void *arg)
{
	(void)l;
	(void)t;
	(void)arg;
	__atomic_store_n(&in_run, 1, __ATOMIC_RELEASE);
}

static void *
runner(void *arg)
{
	return (void *)(intptr_t)evd_loop_run(arg);
}

/* evd_loop_run() on one thread, evd_loop_step() on another: refused for
 * as long as the run lasts (a timer callback of the run says it began) */
static void
test_step_beside_run(void)
{
	struct evd_loop_conf c = { .name = "misuse", .policy = "intr", .max_sleep_us = 1000 };
	struct evd_loop *l;
	pthread_t th;
	void *rc;

	CHECK_EQ(evd_loop_create(&c, &l), 0);
	CHECK_EQ(evd_timer_start(l, 0, 0, mark_running, NULL, NULL), 0);
	CHECK_EQ(pthread_create(&th, NULL, runner, l), 0);
	while (!__atomic_load_n(&in_run, __ATOMIC_ACQUIRE))
		usleep(100);
	for (int i = 0; i < 100; i++)
		CHECK_EQ(evd_loop_step(l), -EBUSY);
	CHECK_EQ(evd_loop_destroy(l), -EBUSY);
	CHECK_EQ(evd_loop_stop(l), 0);
	CHECK_EQ(pthread_join(th, &rc), 0);
	CHECK_EQ((intptr_t)rc, 0);
	CHECK_EQ(evd_loop_step(l), -ESHUTDOWN);
	CHECK_EQ(evd_loop_resume(l), 0);
	CHECK(evd_loop_step(l) >= 0);
	CHECK_EQ(evd_loop_destroy(l), 0);
}

static int fired;

static void
count_fire(struct evd_loop *l, struct evd_timer *t, void *arg)
{
	(void)l;
	(void)t;
	(void)arg;
	fired++;
}

static void
test_timer_far(void)
{
	struct evd_loop_conf c = { .name = "misuse", .policy = "poll" };
	struct evd_timer *t;
	struct evd_loop *l;

	CHECK_EQ(evd_loop_create(&c, &l), 0);
	fired = 0;
	CHECK_EQ(evd_timer_start(l, UINT64_MAX, 0, count_fire, NULL, &t), 0);
	for (int i = 0; i < 3; i++)
		CHECK(evd_loop_step(l) >= 0);
	CHECK_EQ(fired, 0);
	CHECK_EQ(evd_timer_cancel(l, t), 0);
	CHECK_EQ(evd_timer_start(l, 0, UINT64_MAX, count_fire, NULL, &t), 0);
	for (int i = 0; i < 5; i++)
		CHECK(evd_loop_step(l) >= 0);
	CHECK_EQ(fired, 1);
	CHECK_EQ(evd_timer_cancel(l, t), 0);
	CHECK_EQ(evd_timer_start(l, UINT64_MAX - 1, UINT64_MAX - 1, count_fire, NULL, &t), 0);
	for (int i = 0; i < 3; i++)
		CHECK(evd_loop_step(l) >= 0);
	CHECK_EQ(fired, 1);
	CHECK_EQ(evd_timer_cancel(l, t), 0);
	CHECK_EQ(evd_loop_destroy(l), 0);
}

static void
test_env_points_as_doubles(void)
{
	struct evd_policy_env e = { .sleep_wake_ns = 5000,
				    .wake_at_ns = { 1ull << 62, (1ull << 62) + 1, (1ull << 62) + 2,
						    (1ull << 62) + 3 },
				    .wake_ns = { 10000, 20000, 30000, 40000 } };
	double v;

	CHECK_EQ(evd_policy_env_set(&e), -EINVAL);
	for (int k = 0; k < EVD_ENV_WAKE_POINTS; k++)
		e.wake_at_ns[k] = 10000ull * (k + 1);
	CHECK_EQ(evd_policy_env_set(&e), 0);
	v = evd_policy_env_wake_ns(evd_policy_env_get(), 15000);
	CHECK(v >= 10000 && v <= 20000);
	/* distinct as doubles, equal as logs: L between them was 0/0 */
	e.wake_at_ns[1] = 1000000000000000ull;
	e.wake_at_ns[2] = e.wake_at_ns[1] + 1;
	e.wake_at_ns[3] = e.wake_at_ns[1] + 2;
	v = evd_policy_env_wake_ns(&e, e.wake_at_ns[2]);
	CHECK(v >= 20000 && v <= 30000); /* NaN fails both */
	CHECK_LOGGED(evd_policy_env_set(&e), -EALREADY, "EVD: ", "in place already");
}

/* Two threads add one source to two loops at once. The source's fd op holds
 * each adder until the other is inside evd_loop_add() too (or 1 s passes):
 * the add checked the source free and claimed it only at its end, so both
 * got in and both won on every run (the loser's loop could then never be
 * destroyed). One wins now; the other is refused before its fd op. */
static int adders_inside; /* atomic */

static int
rendezvous_fd(const struct evd_source *s)
{
	uint64_t end = test_now_ns() + 1000000000ull;

	(void)s;
	__atomic_add_fetch(&adders_inside, 1, __ATOMIC_SEQ_CST);
	while (__atomic_load_n(&adders_inside, __ATOMIC_SEQ_CST) < 2 && test_now_ns() < end)
		usleep(100);
	return -ENOTSUP; /* poll-only */
}

static const struct evd_source_ops rendezvous_ops = {
	.kind = "rendezvous", .poll = test_poll_none, .fd = rendezvous_fd
};

struct adder {
	struct evd_loop *loop;
	struct evd_source *src;
	int rc;
};

static void *
add_one(void *arg)
{
	struct adder *a = arg;

	a->rc = evd_loop_add(a->loop, a->src);
	return NULL;
}

static void
test_add_race(void)
{
	struct evd_loop_conf c = { .name = "adder", .policy = "poll" };
	struct evd_source src;
	struct adder a[2];
	pthread_t t[2];
	int lose;

	CHECK_EQ(evd_source_init(&src, &rendezvous_ops, "shared", count, NULL), 0);
	for (int i = 0; i < 2; i++) {
		CHECK_EQ(evd_loop_create(&c, &a[i].loop), 0);
		a[i].src = &src;
	}
	for (int i = 0; i < 2; i++)
		CHECK_EQ(pthread_create(&t[i], NULL, add_one, &a[i]), 0);
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	printf("  adds: %d, %d; adders inside at once: %d\n", a[0].rc, a[1].rc, adders_inside);
	CHECK_EQ((a[0].rc == 0) + (a[1].rc == 0), 1);
	/* (-EBUSY where the loser came between the winner's claim and its
	 * naming the loop, as evd.h says: rare, but a busy machine has it) */
	lose = a[0].rc == 0 ? a[1].rc : a[0].rc;
	CHECK(lose == -EINVAL || lose == -EBUSY);
	CHECK_EQ(evd_loop_remove(a[a[0].rc == 0 ? 0 : 1].loop, &src), 0);
	for (int i = 0; i < 2; i++)
		CHECK_EQ(evd_loop_destroy(a[i].loop), 0);
}

/* A bogus fd number is refused before the loop's fd table grows to it (to
 * INT_MAX it took 40 s and 8 GB, then epoll_ctl refused it). */
static void
test_add_bogus_fd(void)
{
	struct evd_loop *l;
	struct evd_source *f;

	CHECK_EQ(evd_loop_create(NULL, &l), 0);
	CHECK_EQ(evd_fd_create("bogus", 1 << 20, 0, count, NULL, &f), 0);
	CHECK_LOGGED(evd_loop_add(l, f), -EBADF, "EVD: ", "fd 1048576 is not open");
	CHECK_EQ(evd_source_destroy(f), 0);
	CHECK_LOGGED(evd_fd_create("flags", 0, EPOLLWAKEUP, count, NULL, &f), -EINVAL, "EVD: ",
		     "no event to watch");
	CHECK_EQ(evd_loop_destroy(l), 0);
}

/* A timer due at the end of a sleep removes a source and destroys it: the
 * removal takes effect at once, as from any timer (the timers ran inside
 * the wake's settle, where a removal waits: the destroy was -EBUSY). */
static struct evd_source *timer_ring;
static int timer_rm = 1, timer_destroy = 1;

static void
remove_from_timer(struct evd_loop *l, struct evd_timer *t, void *arg)
{
	(void)t;
	(void)arg;
	timer_rm = evd_loop_remove(l, timer_ring);
	timer_destroy = evd_source_destroy(timer_ring);
}

static void
test_timer_remove_after_sleep(void)
{
	struct evd_loop_conf c = { .name = "tsleep", .policy = "intr" };
	struct evd_loop_stats st;
	struct evd_loop *l;

	CHECK_EQ(evd_loop_create(&c, &l), 0);
	CHECK_EQ(evd_ring_create("r", 8, count, NULL, &timer_ring), 0);
	CHECK_EQ(evd_loop_add(l, timer_ring), 0);
	CHECK_EQ(evd_timer_start(l, 1000000, 0, remove_from_timer, NULL, NULL), 0);
	for (int i = 0; i < 1000 && timer_rm == 1; i++)
		CHECK(evd_loop_step(l) >= 0);
	CHECK_EQ(evd_loop_stats_get(l, &st), 0);
	printf("  sleeps %" PRIu64 ", remove %d, destroy %d\n", st.sleeps, timer_rm, timer_destroy);
	CHECK(st.sleeps >= 1); /* the timer ended a sleep */
	CHECK_EQ(timer_rm, 0);
	CHECK_EQ(timer_destroy, 0);
	CHECK_EQ(evd_loop_destroy(l), 0);
}

/* A reconnect from an fd source's handler, in the order evd_fd_create()
 * asks: remove the source, close its fd, then a new fd (the same number)
 * in a new source. The removal's detach waits for the round's end, so the
 * add found the number still held and logged the old source's fd "closed
 * while registered", an ERR; with no new fd, the detach logged a WARNING. */
static struct evd_source *old_src, *new_src;
static int old_fd, new_fd, new_delivered;
static bool readd;

static void
on_new(struct evd_source *s, void *burst, uint16_t n, void *arg)
{
	(void)s;
	(void)burst;
	(void)arg;
	new_delivered += n;
}

static void
reconnect(struct evd_source *s, void *burst, uint16_t n, void *arg)
{
	struct evd_loop *l = arg;

	(void)burst;
	(void)n;
	CHECK_EQ(evd_loop_remove(l, s), 0);
	close(old_fd);
	if (!readd)
		return;
	new_fd = eventfd(1, EFD_NONBLOCK | EFD_CLOEXEC); /* readable at once */
	CHECK(new_fd >= 0);
	CHECK_EQ(evd_fd_create("new", new_fd, 0, on_new, NULL, &new_src), 0);
	CHECK_EQ(evd_loop_add(l, new_src), 0);
}

static void
reconnect_case(bool with_new)
{
	struct evd_loop_conf c = { .name = "reconnect", .policy = "poll" };
	static char buf[8192];
	uint64_t one = 1;
	struct evd_loop *l;
	FILE *f = fmemopen(buf, sizeof(buf) - 1, "w");

	CHECK(f != NULL);
	setvbuf(f, NULL, _IONBF, 0);
	readd = with_new;
	new_delivered = 0;
	CHECK_EQ(evd_loop_create(&c, &l), 0);
	old_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	CHECK(old_fd >= 0);
	CHECK_EQ(evd_fd_create("old", old_fd, 0, reconnect, l, &old_src), 0);
	CHECK_EQ(evd_loop_add(l, old_src), 0);
	CHECK_EQ(write(old_fd, &one, sizeof(one)), (ssize_t)sizeof(one));
	rte_openlog_stream(f);
	for (int i = 0; i < 4; i++)
		CHECK(evd_loop_step(l) >= 0);
	rte_openlog_stream(NULL);
	fclose(f);
	printf("  %s: new fd %d (old %d), delivered %d; log: '%s'\n",
	       with_new ? "re-added" : "removed", with_new ? new_fd : -1, old_fd, new_delivered, buf);
	CHECK(strstr(buf, "closed while registered") == NULL);
	CHECK(strstr(buf, "names another file") == NULL);
	CHECK_EQ(evd_source_destroy(old_src), 0);
	if (with_new) {
		CHECK_EQ(new_fd, old_fd); /* the number reused: the case */
		CHECK(new_delivered >= 1);
		CHECK_EQ(evd_loop_remove(l, new_src), 0);
		CHECK_EQ(evd_source_destroy(new_src), 0);
		close(new_fd);
	}
	CHECK_EQ(evd_loop_destroy(l), 0);
}

static void
test_reconnect_from_handler(void)
{
	reconnect_case(true);
	reconnect_case(false);
}

/* Refusals that returned their errno without a word; and a NULL bell. */
static enum evd_action
decide_poll(void *st, const struct evd_policy_input *in, uint64_t *arg)
{
	(void)st;
	(void)in;
	(void)arg;
	return EVD_ACTION_POLL;
}

/* a registered policy whose create fails with an errno of its own */
static int
create_eperm(const struct evd_policy_param *p, unsigned int n, const struct evd_policy_env *env,
	     void **state)
{
	(void)p, (void)n, (void)env, (void)state;
	return -EPERM;
}

static void
test_refusals_logged(void)
{
	static const struct evd_policy_ops perm = { .name = "perm", .decide = decide_poll,
						    .create = create_eperm };
	struct evd_loop_conf conf = { .policy = "perm" };
	struct evd_loop *loop;
	static const struct evd_policy_ops upper = { .name = "Mine", .decide = decide_poll };
	static const struct evd_policy_ops taken = { .name = "poll", .decide = decide_poll };
	static const struct evd_policy_ops nodecide = { .name = "mine" };

	CHECK_LOGGED(evd_policy_env_set(NULL), -EINVAL, "EVD: ", "NULL environment");
	CHECK_LOGGED(evd_policy_register(NULL), -EINVAL, "EVD: ", "NULL ops");
	CHECK_LOGGED(evd_policy_register(&upper), -EINVAL, "EVD: ", "'Mine' is not");
	CHECK_LOGGED(evd_policy_register(&nodecide), -EINVAL, "EVD: ", "without decide");
	CHECK_LOGGED(evd_policy_register(&taken), -EEXIST, "EVD: ", "registered already");
	CHECK_LOGGED(evd_policy_create("poll", NULL), -EINVAL, "EVD: ", "NULL out");
	CHECK_LOGGED(evd_clock_tsc_hz(NULL), -EINVAL, "EVD: ", "NULL hz");
	CHECK_EQ(evd_policy_register(&perm), 0);
	CHECK_LOGGED(evd_policy_validate("perm"), -EINVAL, "EVD: ", "create refused the spec");
	CHECK_LOGGED(evd_loop_create(&conf, &loop), -EINVAL, "EVD: ", "create refused the spec");
	evd_source_ring_bell(NULL); /* async-signal-safe: ignored, not a crash */
}

/* evd_source_init on a source still on a loop is refused and leaves it
 * whole (it zeroed a source the loop still held). */
static void
test_init_on_loop(void)
{
	static const struct evd_source_ops ops = { .kind = "mine", .poll = test_poll_none };
	struct evd_loop *l;
	struct evd_source *r;

	CHECK_EQ(evd_loop_create(NULL, &l), 0);
	CHECK_EQ(evd_ring_create("live", 64, count, NULL, &r), 0);
	CHECK_EQ(evd_loop_add(l, r), 0);
	CHECK_LOGGED(evd_source_init(r, &ops, "again", count, NULL), -EBUSY, "EVD: ",
		     "still on a loop");
	CHECK(strcmp(evd_source_name(r), "live") == 0);
	CHECK_EQ(evd_loop_remove(l, r), 0);
	CHECK_EQ(evd_source_destroy(r), 0);
	CHECK_EQ(evd_loop_destroy(l), 0);
}

/* Two idle loops, each held by a thread in its on_error (an
 * evd_source_report_error()), each calling into the other's loop once both
 * hold theirs: each would wait for the other forever; both are refused. */
static struct evd_loop *crossed[2];
static pthread_barrier_t both_hold;
static int crossed_rc[2];

static void
start_on_other(struct evd_loop *l, struct evd_source *s, int err, void *arg)
{
	int me = l == crossed[1];

	(void)s;
	(void)err;
	(void)arg;
	pthread_barrier_wait(&both_hold);
	crossed_rc[me] = evd_timer_start(crossed[!me], 1000000000ull, 0, count_fire, NULL, NULL);
	pthread_barrier_wait(&both_hold); /* neither lets go before both have asked */
}

static void *
report_on(void *src)
{
	return (void *)(intptr_t)evd_source_report_error(src, -EIO);
}

static void
test_control_calls_crossed(void)
{
	struct evd_loop_conf c = { .policy = "intr", .on_error = start_on_other };
	struct evd_source *r[2];
	pthread_t t[2];
	void *rc;

	CHECK_EQ(pthread_barrier_init(&both_hold, NULL, 2), 0);
	for (int i = 0; i < 2; i++) {
		c.name = i ? "crossed-b" : "crossed-a";
		CHECK_EQ(evd_loop_create(&c, &crossed[i]), 0);
		CHECK_EQ(evd_ring_create(c.name, 8, count, NULL, &r[i]), 0);
		CHECK_EQ(evd_loop_add(crossed[i], r[i]), 0);
	}
	for (int i = 0; i < 2; i++)
		CHECK_EQ(pthread_create(&t[i], NULL, report_on, r[i]), 0);
	for (int i = 0; i < 2; i++) {
		CHECK_EQ(pthread_join(t[i], &rc), 0);
		CHECK_EQ((int)(intptr_t)rc, 0); /* the error was delivered */
		CHECK_EQ(crossed_rc[i], -EDEADLK);
	}
	/* each thread's hold ended with its call: a destroy on this thread,
	 * which takes and frees a loop, leaves no hold behind either, so a
	 * control call here still waits for another thread's (test below) */
	for (int i = 0; i < 2; i++) {
		CHECK_EQ(evd_loop_remove(crossed[i], r[i]), 0);
		CHECK_EQ(evd_source_destroy(r[i]), 0);
		CHECK_EQ(evd_loop_destroy(crossed[i]), 0);
	}
	CHECK_EQ(pthread_barrier_destroy(&both_hold), 0);
}

/* A thread that holds no loop waits for another thread's control call and
 * then acts, a destroy made on it before included (the destroy's hold ends
 * with the loop, never released). */
static sem_t holding, go_on;

static void
hold_until_told(struct evd_loop *l, struct evd_source *s, int err, void *arg)
{
	(void)l;
	(void)s;
	(void)err;
	(void)arg;
	CHECK_EQ(sem_post(&holding), 0);
	test_wait_sem(&go_on);
}

static void *
release_soon(void *arg)
{
	(void)arg;
	test_sleep_us(20000); /* an order, not a measure: main is most likely waiting by then */
	CHECK_EQ(sem_post(&go_on), 0);
	return NULL;
}

static void
test_control_call_waits(void)
{
	struct evd_loop_conf c = { .name = "held", .policy = "intr", .on_error = hold_until_told };
	struct evd_loop *l, *gone;
	struct evd_source *r;
	struct evd_timer *tm;
	pthread_t holder, releaser;

	CHECK_EQ(sem_init(&holding, 0, 0), 0);
	CHECK_EQ(sem_init(&go_on, 0, 0), 0);
	CHECK_EQ(evd_loop_create(NULL, &gone), 0);
	CHECK_EQ(evd_loop_destroy(gone), 0);
	CHECK_EQ(evd_loop_create(&c, &l), 0);
	CHECK_EQ(evd_ring_create("held", 8, count, NULL, &r), 0);
	CHECK_EQ(evd_loop_add(l, r), 0);
	CHECK_EQ(pthread_create(&holder, NULL, report_on, r), 0);
	test_wait_sem(&holding);
	CHECK_EQ(pthread_create(&releaser, NULL, release_soon, NULL), 0);
	CHECK_EQ(evd_timer_start(l, 1000000000ull, 0, count_fire, NULL, &tm), 0);
	CHECK_EQ(pthread_join(releaser, NULL), 0);
	CHECK_EQ(pthread_join(holder, NULL), 0);
	CHECK_EQ(evd_timer_cancel(l, tm), 0);
	CHECK_EQ(evd_loop_remove(l, r), 0);
	CHECK_EQ(evd_source_destroy(r), 0);
	CHECK_EQ(evd_loop_destroy(l), 0);
	sem_destroy(&holding);
	sem_destroy(&go_on);
}

/* remove(bad) on an idle loop: its ack fails and on_error removes another
 * source, which the remove's own detach cannot finish in a round that
 * never comes: gone when the remove returns. */
static struct evd_source *companion;
static int companion_rc;

static void
remove_companion(struct evd_loop *l, struct evd_source *s, int err, void *arg)
{
	(void)s;
	(void)err;
	(void)arg;
	if (companion != NULL)
		companion_rc = evd_loop_remove(l, companion);
	companion = NULL;
}

static void
test_remove_other_in_detach(void)
{
	struct evd_loop_conf c = { .name = "misuse", .policy = "poll", .on_error = remove_companion };
	struct bad_source b = { .consume = true };
	struct evd_source *r;
	struct evd_loop *l;
	uint64_t one = 1;

	l = bad_then_ring(&c, &b, &bad_ack_ops, "companion", &r);
	companion = r;
	companion_rc = 1;
	CHECK_EQ(write(b.efd, &one, sizeof(one)), 8);
	CHECK_EQ(evd_loop_remove(l, &b.src), 0);
	CHECK_EQ(companion_rc, 0);
	CHECK(b.src.loop == NULL && r->loop == NULL);
	CHECK_EQ(evd_source_destroy(r), 0);
	CHECK_EQ(evd_loop_destroy(l), 0);
	close(b.efd);
}

/* A name with a newline would put a line of its own in every log line that
 * prints it: refused, in one line, wherever a name is given. */
static void
test_name_control_char(void)
{
	static const struct evd_source_ops ops = { .kind = "mine", .poll = test_poll_none };
	static const char bad[] = "nl\nEVD: not a line of evd's";
	struct evd_loop_conf c = { .name = bad };
	struct evd_source mine = { 0 }, *r = NULL;
	struct evd_loop *l = NULL;
	int fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);

	CHECK(fd >= 0);
	CHECK_LOGGED(evd_loop_create(&c, &l), -EINVAL, "EVD: ", "control character 0x0a at byte 2");
	CHECK(l == NULL);
	/* first: the lines of the other refusals print the name */
	CHECK_LOGGED(evd_ring_create(bad, 0, NULL, NULL, &r), -EINVAL, "EVD: ", "control character");
	CHECK_LOGGED(evd_fd_create(bad, fd, 0, NULL, NULL, &r), -EINVAL, "EVD: ",
		     "control character");
	CHECK_LOGGED(evd_source_init(&mine, &ops, bad, NULL, NULL), -EINVAL, "EVD: ",
		     "control character");
	CHECK(r == NULL);
	c.name = "tab\there";
	CHECK_LOGGED(evd_loop_create(&c, &l), -EINVAL, "EVD: ", "0x09");
	close(fd);
}

/* test_misuse [NAME]: all, or the one test NAME (without test_) */
int
main(int argc, char **argv)
{
	TEST_NAMED(test_remove_in_detach_consumed);
	TEST_NAMED(test_remove_in_detach_pending);
	TEST_NAMED(test_remove_in_arm_pass);
	TEST_NAMED(test_error_log_quiet);
	TEST_NAMED(test_step_callbacks);
	TEST_NAMED(test_step_beside_run);
	TEST_NAMED(test_timer_far);
	TEST_NAMED(test_env_points_as_doubles);
	TEST_NAMED(test_add_race);
	TEST_NAMED(test_add_bogus_fd);
	TEST_NAMED(test_timer_remove_after_sleep);
	TEST_NAMED(test_refusals_logged);
	TEST_NAMED(test_reconnect_from_handler);
	TEST_NAMED(test_init_on_loop);
	TEST_NAMED(test_control_calls_crossed);
	TEST_NAMED(test_control_call_waits);
	TEST_NAMED(test_remove_other_in_detach);
	TEST_NAMED(test_name_control_char);
	return 0;
}
