/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The header's contract under load, one test per argument:
 *
 * - held-producer: producers are held (a signal whose handler sleeps 10x the
 *   loop's sleep bound) at random instants, some of them inside
 *   evd_ring_post(), between its publish and its doorbell; the loop must
 *   lose no wakeup, deliver every event exactly once and in order, and never
 *   block longer than its bound (its waits are interposed: the timeouts it
 *   asks for are recorded, no clock is read).
 * - cross-thread-churn: while a loop runs and rings carry traffic, two
 *   control threads add and remove rings and fd sources and start and
 *   cancel timers, directly (-EBUSY, every time) and through
 *   evd_loop_call() (done on the loop's thread, must succeed); every event
 *   is delivered once or counted by evd_ring_discard().
 * - random-api: three threads make random calls over the whole public API,
 *   valid and invalid (never undefined by the header's rules), on objects
 *   they share; every refusal is a negative errno, the one the header names.
 * - stats-readers: while a loop runs busy on a ring, is stopped and run
 *   again (its thread busy in between, outside the loop), two threads read
 *   the loop's and the ring's counters: none may go back, nor the ring's
 *   empty polls exceed its polls; nor those of an idle ring since a reset
 *   that a third thread takes over and over.
 *
 * --events N scales the counts (the stress_events option: 1000000 gives the
 * full counts, sanitizer builds pass less).
 */
#include <dlfcn.h>
#include <getopt.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <stddef.h>
#include <unistd.h>

#include <rte_log.h>

#include <evd.h>

#include "evd_test.h"

static uint64_t opt_events = 1000000; /* --events: 1000000 is the full size */
static uint64_t opt_seed = 1;

/* n scaled by --events (at least lo) */
static uint64_t
scaled(uint64_t n, uint64_t lo)
{
	uint64_t v = (uint64_t)((double)n * (double)opt_events / 1e6);

	return v < lo ? lo : v;
}

/* ---- the loop thread's waits, interposed ------------------------------------
 *
 * This executable's definitions come before libc's (and a sanitizer's): the
 * library's waits land here first. On the thread that runs the loop, each
 * records the longest timeout it was given; the loop must never be given
 * one past its sleep bound, and poll() (its readiness checks) only 0. */

static __thread bool on_loop_thread;

struct loop_waits {
	uint64_t pwait2_n;      /* epoll_pwait2 calls */
	uint64_t pwait2_max_ns; /* their longest timeout */
	uint64_t pwait2_inf;    /* with no timeout at all */
	uint64_t ewait_n;       /* epoll_wait / epoll_pwait calls */
	int64_t ewait_max_ms;   /* their longest timeout (a negative one: INT64_MAX) */
	uint64_t poll_n;        /* poll calls */
	uint64_t poll_timed;    /* with a timeout other than 0 */
	uint64_t ppoll_n;       /* ppoll calls */
	uint64_t ppoll_max_ns;  /* their longest (NULL: UINT64_MAX) */
};

static struct loop_waits lw;

#define LW_ADD(f, v) __atomic_fetch_add(&lw.f, (v), __ATOMIC_RELAXED)

static void
lw_max_u(uint64_t *m, uint64_t v)
{
	uint64_t cur = __atomic_load_n(m, __ATOMIC_RELAXED);

	while (v > cur && !__atomic_compare_exchange_n(m, &cur, v, true, __ATOMIC_RELAXED,
						       __ATOMIC_RELAXED))
		;
}

static void
lw_max_s(int64_t *m, int64_t v)
{
	int64_t cur = __atomic_load_n(m, __ATOMIC_RELAXED);

	while (v > cur && !__atomic_compare_exchange_n(m, &cur, v, true, __ATOMIC_RELAXED,
						       __ATOMIC_RELAXED))
		;
}

static void
lw_reset(void)
{
	memset(&lw, 0, sizeof(lw));
	lw.ewait_max_ms = -1;
}

static void *
real_fn(void **slot, const char *name)
{
	void *f = __atomic_load_n(slot, __ATOMIC_ACQUIRE);

	if (f == NULL) {
		f = dlsym(RTLD_NEXT, name);
		if (f == NULL)
			abort();
		__atomic_store_n(slot, f, __ATOMIC_RELEASE);
	}
	return f;
}

static uint64_t
ts_ns(const struct timespec *ts)
{
	return ts == NULL ? UINT64_MAX
			  : (uint64_t)ts->tv_sec * 1000000000ull + (uint64_t)ts->tv_nsec;
}

int
epoll_pwait2(int epfd, struct epoll_event *evs, int max, const struct timespec *ts,
	     const sigset_t *mask)
{
	static void *real;
	int (*fn)(int, struct epoll_event *, int, const struct timespec *, const sigset_t *) =
		(int (*)(int, struct epoll_event *, int, const struct timespec *,
			 const sigset_t *))real_fn(&real, "epoll_pwait2");

	if (on_loop_thread) {
		LW_ADD(pwait2_n, 1);
		if (ts == NULL)
			LW_ADD(pwait2_inf, 1);
		else
			lw_max_u(&lw.pwait2_max_ns, ts_ns(ts));
	}
	return fn(epfd, evs, max, ts, mask);
}

static void
note_ewait(int timeout)
{
	if (on_loop_thread) {
		LW_ADD(ewait_n, 1);
		lw_max_s(&lw.ewait_max_ms, timeout < 0 ? INT64_MAX : timeout);
	}
}

int
epoll_wait(int epfd, struct epoll_event *evs, int max, int timeout)
{
	static void *real;
	int (*fn)(int, struct epoll_event *, int, int) =
		(int (*)(int, struct epoll_event *, int, int))real_fn(&real, "epoll_wait");

	note_ewait(timeout);
	return fn(epfd, evs, max, timeout);
}

int
epoll_pwait(int epfd, struct epoll_event *evs, int max, int timeout, const sigset_t *mask)
{
	static void *real;
	int (*fn)(int, struct epoll_event *, int, int, const sigset_t *) =
		(int (*)(int, struct epoll_event *, int, int, const sigset_t *))real_fn(&real,
											 "epoll_pwait");

	note_ewait(timeout);
	return fn(epfd, evs, max, timeout, mask);
}

int
poll(struct pollfd *fds, nfds_t n, int timeout)
{
	static void *real;
	int (*fn)(struct pollfd *, nfds_t, int) =
		(int (*)(struct pollfd *, nfds_t, int))real_fn(&real, "poll");

	if (on_loop_thread) {
		LW_ADD(poll_n, 1);
		if (timeout != 0)
			LW_ADD(poll_timed, 1);
	}
	return fn(fds, n, timeout);
}

int
ppoll(struct pollfd *fds, nfds_t n, const struct timespec *ts, const sigset_t *mask)
{
	static void *real;
	int (*fn)(struct pollfd *, nfds_t, const struct timespec *, const sigset_t *) =
		(int (*)(struct pollfd *, nfds_t, const struct timespec *,
			 const sigset_t *))real_fn(&real, "ppoll");

	if (on_loop_thread) {
		LW_ADD(ppoll_n, 1);
		lw_max_u(&lw.ppoll_max_ns, ts_ns(ts));
	}
	return fn(fds, n, ts, mask);
}

/* What the loop, run on this thread with sleep bound bound_us, waited:
 * never longer than its bound, poll() never with a timeout, and (when it
 * slept or napped) each wait seen here. */
static void
check_loop_waits(uint32_t bound_us, const struct evd_loop_stats *st)
{
	printf("  loop-thread waits: epoll_pwait2 %" PRIu64 " (longest %" PRIu64 " ns), "
	       "epoll_wait %" PRIu64 ", ppoll %" PRIu64 ", poll %" PRIu64 " (timed %" PRIu64 ")\n",
	       lw.pwait2_n, lw.pwait2_max_ns, lw.ewait_n, lw.ppoll_n, lw.poll_n, lw.poll_timed);
	CHECK_EQ(lw.poll_timed, 0);
	CHECK_EQ(lw.pwait2_inf, 0);
	CHECK(lw.pwait2_max_ns <= 1000ull * bound_us);
	CHECK(lw.ppoll_n == 0 || lw.ppoll_max_ns <= 1000ull * bound_us);
	CHECK(lw.ewait_max_ms <= (int64_t)((bound_us + 999) / 1000));
	/* every sleep and nap is one epoll_pwait2 (or its ppoll fallback, or an
	 * epoll_wait without timeout where the bell had rung before it): the
	 * interposition saw them all */
	CHECK(lw.pwait2_n + lw.ppoll_n + lw.ewait_n >= st->sleeps + st->naps);
}

/* ---- 1. held-producer ---------------------------------------------------- */

#define HP_PRODUCERS 2
#define HP_MAX_RINGS 4
#define HP_SLEEP_US 1000                           /* the loop's max_sleep_us */
#define HP_HOLD_NS (10ull * HP_SLEEP_US * 1000)    /* a hold: 10x the bound */
#define HP_MIN_HOLDS 20                            /* required holds inside a post, per run */
#define HP_MIN_DOORBELL 10                         /* of them, at the doorbell */
#define HP_END 1u                                  /* flags: a producer's last event on a ring */

/*
 * Where a signal lands. Signals come at random instants; a producer takes
 * them at once (SIGUSR1 open: at any instruction of a post, or outside one),
 * or, after a pause it made with SIGUSR1 blocked, at the first of two points:
 * its post's doorbell, if the post rings one (write() is interposed below:
 * that is after the publish and the bell's bits, before the eventfd write),
 * or the end of the post. A hold at the doorbell leaves the loop asleep on
 * an event whose fd write has not come, for 10x its bound: it times out and
 * must find the event through the bell's bits, not count it lost. At random
 * instants few holds land there (about 50 ns of a post that takes a few us
 * with its eventfd write): the doorbell point makes them many.
 */
static __thread volatile sig_atomic_t in_post;        /* in evd_ring_post() */
static __thread volatile sig_atomic_t held_this_post; /* held in this post already */
static __thread volatile sig_atomic_t at_doorbell;    /* in its doorbell's write() */
static __thread bool deferring;                       /* SIGUSR1 blocked since a pause */
/* Holds inside a post (of them, at the doorbell); signals that landed
 * elsewhere, or in a post held already (they return at once: a signal sent
 * while the handler sleeps would otherwise hold the same post again) */
static uint64_t holds_in_post, holds_at_doorbell, signals_passed;

static void
on_hold_signal(int sig)
{
	int saved = errno;

	(void)sig;
	if (in_post && !held_this_post) {
		struct timespec ts = { .tv_sec = 0, .tv_nsec = (long)HP_HOLD_NS }, rem;

		held_this_post = 1;
		__atomic_fetch_add(&holds_in_post, 1, __ATOMIC_RELAXED);
		if (at_doorbell)
			__atomic_fetch_add(&holds_at_doorbell, 1, __ATOMIC_RELAXED);
		while (nanosleep(&ts, &rem) < 0 && errno == EINTR)
			ts = rem;
	} else {
		__atomic_fetch_add(&signals_passed, 1, __ATOMIC_RELAXED);
	}
	errno = saved;
}

static void
hold_signal_mask(int how)
{
	sigset_t set;

	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	CHECK_EQ(pthread_sigmask(how, &set, NULL), 0);
}

/* Inside a post, write() is its doorbell: a producer that blocked SIGUSR1
 * takes a pending one here. */
ssize_t
write(int fd, const void *buf, size_t n)
{
	static void *real;
	ssize_t (*fn)(int, const void *, size_t) =
		(ssize_t (*)(int, const void *, size_t))real_fn(&real, "write");

	if (in_post && deferring) {
		at_doorbell = 1;
		hold_signal_mask(SIG_UNBLOCK);
		hold_signal_mask(SIG_BLOCK);
		at_doorbell = 0;
	}
	return fn(fd, buf, n);
}

struct hp;

struct hp_ring {
	struct hp *h;
	struct evd_source *src;
	uint64_t next_seq[HP_PRODUCERS]; /* loop thread */
};

struct hp_producer {
	struct hp *h;
	uint32_t id;
	pthread_t th;
	uint64_t posted;                 /* read after the join */
	uint64_t last_seq[HP_MAX_RINGS]; /* the END event's sequence number, per ring */
	uint64_t full_retries;
};

struct hp {
	struct evd_loop *loop;
	struct hp_ring ring[HP_MAX_RINGS];
	struct hp_producer prod[HP_PRODUCERS];
	uint32_t nrings;
	uint64_t min_events, max_events; /* per producer */
	/* the loop thread's */
	uint64_t delivered, bad_order, ends;
	/* the signaller's */
	int stop_signals;
	uint64_t signals;
};

/* A pause of us microseconds, whole (a signal cuts a nanosleep short). */
static void
pause_us(uint64_t us)
{
	struct timespec ts = { .tv_sec = (time_t)(us / 1000000),
			       .tv_nsec = (long)(us % 1000000) * 1000 };

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

/* One post, flagged for the signal handler; a full ring is retried, the
 * wait outside the post. */
static void
hp_post(struct hp_producer *p, struct evd_source *ring, const struct evd_event *ev)
{
	for (;;) {
		int rc;

		held_this_post = 0;
		in_post = 1;
		rc = evd_ring_post(ring, ev);
		in_post = 0;
		if (deferring) {
			/* a signal still pending lands here, outside the post */
			deferring = false;
			hold_signal_mask(SIG_UNBLOCK);
		}
		if (rc == 0)
			return;
		CHECK_EQ(rc, -ENOBUFS);
		p->full_retries++;
		test_sleep_us(20);
	}
}

static void *
hp_produce(void *arg)
{
	struct hp_producer *p = arg;
	struct hp *h = p->h;
	uint64_t rnd = 0x9e3779b97f4a7c15ull * (p->id + 1) + opt_seed;
	uint64_t seq[HP_MAX_RINGS] = { 0 }, n = 0;

	/* past min_events, on until the holds wanted were seen (twice as many:
	 * the assertions below leave room), at most max_events */
	while (n < h->max_events &&
	       (n < h->min_events ||
		__atomic_load_n(&holds_in_post, __ATOMIC_RELAXED) < 2 * HP_MIN_HOLDS ||
		__atomic_load_n(&holds_at_doorbell, __ATOMIC_RELAXED) < 2 * HP_MIN_DOORBELL)) {
		uint32_t k = (uint32_t)(test_xorshift(&rnd) % h->nrings);
		struct evd_event ev = { .type = p->id, .u64 = seq[k] };
		uint64_t r = test_xorshift(&rnd) % 16;

		hp_post(p, h->ring[k].src, &ev);
		seq[k]++;
		n++;
		/* a quarter of the posts are followed by a pause up to 1.5 ms:
		 * the loop goes to sleep, armed, and the next post rings; one
		 * pause in 16 is made with SIGUSR1 blocked (see write()) */
		if (r < 4) {
			if (test_xorshift(&rnd) % 16 == 0) {
				deferring = true;
				hold_signal_mask(SIG_BLOCK);
			}
			pause_us(test_xorshift(&rnd) % 1500);
		}
	}
	for (uint32_t k = 0; k < h->nrings; k++) {
		struct evd_event ev = { .type = p->id, .flags = HP_END, .u64 = seq[k] };

		hp_post(p, h->ring[k].src, &ev);
		p->last_seq[k] = seq[k];
		n++;
	}
	p->posted = n;
	return NULL;
}

static void
hp_consume(struct evd_source *src, void *burst, uint16_t n, void *arg)
{
	struct hp_ring *r = arg;
	struct hp *h = r->h;
	struct evd_event *ev = burst;

	(void)src;
	for (uint16_t i = 0; i < n; i++) {
		uint32_t id = ev[i].type;

		CHECK(id < HP_PRODUCERS);
		if (ev[i].u64 != r->next_seq[id])
			h->bad_order++;
		r->next_seq[id] = ev[i].u64 + 1;
		if (ev[i].flags & HP_END)
			h->ends++;
	}
	h->delivered += n;
	if (h->ends == (uint64_t)h->nrings * HP_PRODUCERS)
		evd_loop_stop(h->loop);
}

static void *
hp_signal(void *arg)
{
	struct hp *h = arg;
	uint64_t rnd = 0x2545f4914f6cdd1dull + opt_seed;

	while (!__atomic_load_n(&h->stop_signals, __ATOMIC_ACQUIRE)) {
		int rc;

		test_sleep_us(test_xorshift(&rnd) % 2000);
		/* a producer that returned (not yet joined) may be gone */
		rc = pthread_kill(h->prod[test_xorshift(&rnd) % HP_PRODUCERS].th, SIGUSR1);
		CHECK(rc == 0 || rc == ESRCH);
		h->signals++;
	}
	return NULL;
}

static void
held_producer_run(const char *policy, uint32_t nrings)
{
	struct evd_loop_conf conf = { .name = "held", .policy = policy,
				      .max_sleep_us = HP_SLEEP_US };
	struct hp *h = calloc(1, sizeof(*h));
	struct evd_loop_stats st;
	uint64_t posted = 0;
	pthread_t sig_th;

	CHECK(h != NULL);
	h->nrings = nrings;
	h->min_events = scaled(10000, 2000);
	h->max_events = 20 * h->min_events;
	__atomic_store_n(&holds_in_post, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&signals_passed, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&holds_at_doorbell, 0, __ATOMIC_RELAXED);
	CHECK_EQ(evd_loop_create(&conf, &h->loop), 0);
	for (uint32_t k = 0; k < nrings; k++) {
		char name[16];

		snprintf(name, sizeof(name), "held%u", k);
		h->ring[k].h = h;
		CHECK_EQ(evd_ring_create(name, 1024, hp_consume, &h->ring[k], &h->ring[k].src), 0);
		CHECK_EQ(evd_loop_add(h->loop, h->ring[k].src), 0);
	}
	for (uint32_t i = 0; i < HP_PRODUCERS; i++) {
		h->prod[i].h = h;
		h->prod[i].id = i;
		CHECK_EQ(pthread_create(&h->prod[i].th, NULL, hp_produce, &h->prod[i]), 0);
	}
	CHECK_EQ(pthread_create(&sig_th, NULL, hp_signal, h), 0);

	lw_reset();
	on_loop_thread = true;
	CHECK_EQ(evd_loop_run(h->loop), 0);
	on_loop_thread = false;

	__atomic_store_n(&h->stop_signals, 1, __ATOMIC_RELEASE);
	pthread_join(sig_th, NULL); /* before the producers: it names them */
	for (uint32_t i = 0; i < HP_PRODUCERS; i++) {
		pthread_join(h->prod[i].th, NULL);
		posted += h->prod[i].posted;
	}
	CHECK_EQ(evd_loop_stats_get(h->loop, &st), 0);
	printf("  %s, %u ring(s): %" PRIu64 " events; signals %" PRIu64 ": holds in a post %" PRIu64
	       " (at the doorbell %" PRIu64 "), passed %" PRIu64 "; sleeps %" PRIu64
	       " wakeups %" PRIu64 " timeouts %" PRIu64 " repoll_hits %" PRIu64 " naps %" PRIu64
	       " lost %" PRIu64 "\n",
	       policy, nrings, h->delivered, h->signals, holds_in_post, holds_at_doorbell,
	       signals_passed, st.sleeps, st.wakeups, st.sleep_timeouts, st.repoll_hits, st.naps,
	       st.lost_wakeups);
	check_loop_waits(HP_SLEEP_US, &st);

	CHECK_EQ(st.lost_wakeups, 0);
	CHECK_EQ(h->bad_order, 0);
	CHECK_EQ(h->delivered, posted);
	CHECK_EQ(st.events, posted);
	for (uint32_t k = 0; k < nrings; k++)
		for (uint32_t i = 0; i < HP_PRODUCERS; i++)
			CHECK_EQ(h->ring[k].next_seq[i], h->prod[i].last_seq[k] + 1);
	CHECK(__atomic_load_n(&holds_in_post, __ATOMIC_RELAXED) >= HP_MIN_HOLDS);
	CHECK(__atomic_load_n(&holds_at_doorbell, __ATOMIC_RELAXED) >= HP_MIN_DOORBELL);
	CHECK(st.sleeps > 0);

	for (uint32_t k = 0; k < nrings; k++) {
		CHECK_EQ(evd_ring_count(h->ring[k].src), 0);
		CHECK_EQ(evd_loop_remove(h->loop, h->ring[k].src), 0);
		CHECK_EQ(evd_source_destroy(h->ring[k].src), 0);
	}
	CHECK_EQ(evd_loop_destroy(h->loop), 0);
	free(h);
}

static void
test_held_producer(void)
{
	struct sigaction sa = { .sa_handler = on_hold_signal, .sa_flags = SA_RESTART }, old;
	uint64_t rnd = 0x5851f42d4c957f2dull + opt_seed;
	uint32_t nrings;

	sigemptyset(&sa.sa_mask);
	CHECK_EQ(sigaction(SIGUSR1, &sa, &old), 0);
	/* "adaptive" with its spin capped (as the stress tests run it), so that
	 * it sleeps between the producers' pauses and the arm protocol runs */
	nrings = 1 + (uint32_t)(test_xorshift(&rnd) % HP_MAX_RINGS);
	held_producer_run("intr", nrings);
	held_producer_run("adaptive:spin_max_us=50", 1 + nrings % HP_MAX_RINGS);
	CHECK_EQ(sigaction(SIGUSR1, &old, NULL), 0);
}

/* ---- 2. cross-thread-churn ------------------------------------------------ */

#define CC_PRODUCERS 2
#define CC_CONTROLS 2
#define CC_BASE_RINGS 4
#define CC_XRINGS 4  /* extra ring slots per control thread */
#define CC_FDS 2     /* fd source slots per control thread */
#define CC_TIMERS 4  /* timer slots per control thread */
#define CC_SLEEP_US 1000

struct cc;

/* A base ring: on the loop from start to end; the producers' sequences. */
struct cc_base {
	struct cc *c;
	struct evd_source *src;
	uint64_t next_seq[CC_PRODUCERS]; /* loop thread */
	uint64_t bad;                    /* loop thread */
};

/* One extra ring, from its creation to its destruction by its control
 * thread. Producers post to it while it is published in its slot. */
struct cc_inst {
	struct evd_source *src;
	uint64_t next_post[CC_PRODUCERS]; /* producer p's posts that were taken */
	uint64_t next_seq[CC_PRODUCERS];  /* loop thread: the next one expected */
	uint64_t delivered, bad;          /* loop thread */
};

struct cc_xslot {
	struct cc_inst *inst; /* the control thread's */
	bool on_loop;         /* the control thread's view */
	struct cc_inst *pub;  /* what producers may post to (NULL: nothing) */
	uint32_t users;       /* producers between reading pub and their post's return */
};

struct cc_fd {
	int efd;
	struct evd_source *src; /* NULL: free */
	bool on_loop;
	uint64_t written;         /* the control thread's eventfd writes */
	uint64_t consumed, calls; /* loop thread: what the handler read */
};

enum cc_timer_kind { TK_PERIODIC, TK_ONESHOT, TK_SELF, TK_ANON, TK_KINDS };

struct cc_timer {
	struct cc *c;
	enum cc_timer_kind kind;
	bool active;         /* the control thread's */
	struct evd_timer *t; /* the handle (written by the call that started it) */
	bool self_done;      /* loop thread: a TK_SELF that cancelled itself */
};

enum cc_op_kind { OP_ADD, OP_REMOVE, OP_TIMER_START, OP_TIMER_CANCEL, OP_ANON_TIMER };

struct cc_ctl {
	struct cc *c;
	uint32_t id;
	pthread_t th;
	uint64_t rnd;
	uint64_t ops, target;
	uint64_t direct_busy; /* direct control calls refused with -EBUSY */
	uint64_t via_call;    /* control calls done through evd_loop_call() */
	sem_t done;           /* posted by the call when it ran */
	struct {              /* the call under way: one at a time */
		enum cc_op_kind kind;
		struct evd_source *src;
		struct cc_timer *tm;
		uint64_t after_ns, period_ns;
		bool defer; /* queue itself again once, from the loop thread */
	} op;
	struct cc_xslot x[CC_XRINGS];
	struct cc_fd fd[CC_FDS];
	struct cc_timer tm[CC_TIMERS];
};

struct cc {
	struct evd_loop *loop;
	pthread_t loop_th;
	int run_rc;
	sem_t started;
	struct cc_base base[CC_BASE_RINGS];
	struct cc_ctl ctl[CC_CONTROLS];
	int stop_producers;
	uint64_t base_posted[CC_PRODUCERS]; /* read after the producers' join */
	uint64_t base_seq[CC_PRODUCERS][CC_BASE_RINGS]; /* the same, per ring */
	uint64_t base_delivered;            /* atomic: the loop thread adds */
	uint64_t x_full;                    /* extra posts refused: full (atomic) */
	/* the loop thread's */
	uint64_t timer_fires, fd_calls;
	/* totals of the extra rings retired (atomic: control threads and main) */
	uint64_t x_posted, x_delivered, x_discarded, x_instances;
};

static void
cc_base_consume(struct evd_source *src, void *burst, uint16_t n, void *arg)
{
	struct cc_base *b = arg;
	struct evd_event *ev = burst;

	(void)src;
	for (uint16_t i = 0; i < n; i++) {
		CHECK(ev[i].type < CC_PRODUCERS);
		if (ev[i].u64 != b->next_seq[ev[i].type])
			b->bad++;
		b->next_seq[ev[i].type] = ev[i].u64 + 1;
	}
	__atomic_fetch_add(&b->c->base_delivered, n, __ATOMIC_RELAXED);
}

static void
cc_x_consume(struct evd_source *src, void *burst, uint16_t n, void *arg)
{
	struct cc_inst *in = arg;
	struct evd_event *ev = burst;

	(void)src;
	for (uint16_t i = 0; i < n; i++) {
		CHECK(ev[i].type < CC_PRODUCERS);
		if (ev[i].u64 != in->next_seq[ev[i].type])
			in->bad++;
		in->next_seq[ev[i].type] = ev[i].u64 + 1;
	}
	in->delivered += n;
}

static void
cc_fd_ready(struct evd_source *src, void *burst, uint16_t n, void *arg)
{
	struct cc_fd *f = arg;
	uint64_t v;

	(void)burst;
	CHECK_EQ(n, 1);
	CHECK(evd_fd_revents(src) & EPOLLIN);
	if (read(f->efd, &v, sizeof(v)) == (ssize_t)sizeof(v))
		f->consumed += v;
	else
		CHECK(errno == EAGAIN);
	f->calls++;
}

static void
cc_timer_cb(struct evd_loop *loop, struct evd_timer *t, void *arg)
{
	struct cc_timer *tm = arg;

	CHECK(on_loop_thread);
	tm->c->timer_fires++;
	if (tm->kind == TK_SELF) {
		CHECK(t == tm->t);
		CHECK_EQ(evd_timer_cancel(loop, t), 0); /* its own, from its callback */
		tm->self_done = true;
	}
}

static void
cc_anon_cb(struct evd_loop *loop, struct evd_timer *t, void *arg)
{
	struct cc *c = arg;

	(void)loop;
	(void)t;
	CHECK(on_loop_thread);
	c->timer_fires++;
}

/* The calls: the control call of ctl->op, on the loop's thread. */
static void
cc_call(struct evd_loop *loop, void *arg)
{
	struct cc_ctl *t = arg;
	struct cc_timer *tm = t->op.tm;

	CHECK(on_loop_thread);
	CHECK(loop == t->c->loop);
	if (t->op.defer) {
		t->op.defer = false;
		CHECK_EQ(evd_loop_call(loop, cc_call, t), 0);
		return;
	}
	switch (t->op.kind) {
	case OP_ADD:
		CHECK_EQ(evd_loop_add(loop, t->op.src), 0);
		break;
	case OP_REMOVE:
		CHECK_EQ(evd_loop_remove(loop, t->op.src), 0);
		break;
	case OP_TIMER_START:
		CHECK_EQ(evd_timer_start(loop, t->op.after_ns, t->op.period_ns, cc_timer_cb, tm, &tm->t),
			 0);
		CHECK(tm->t != NULL);
		break;
	case OP_TIMER_CANCEL:
		if (!(tm->kind == TK_SELF && tm->self_done))
			CHECK_EQ(evd_timer_cancel(loop, tm->t), 0);
		break;
	case OP_ANON_TIMER:
		CHECK_EQ(evd_timer_start(loop, t->op.after_ns, 0, cc_anon_cb, t->c, NULL), 0);
		break;
	}
	CHECK_EQ(sem_post(&t->done), 0);
}

/* Run ctl->op on the loop's thread and wait for it (a quarter of the calls
 * queue themselves once more from there first). */
static void
cc_via_call(struct cc_ctl *t)
{
	t->op.defer = test_xorshift(&t->rnd) % 4 == 0;
	CHECK_EQ(evd_loop_call(t->c->loop, cc_call, t), 0);
	test_wait_sem(&t->done);
	t->via_call++;
	t->ops++;
}

/* A direct control call from this thread while the loop runs: refused. */
#define CC_DIRECT_BUSY(t, call)                                                           \
	do {                                                                              \
		CHECK_EQ(call, -EBUSY);                                                   \
		(t)->direct_busy++;                                                       \
		(t)->ops++;                                                               \
	} while (0)

static void
cc_add(struct cc_ctl *t, struct evd_source *src)
{
	CC_DIRECT_BUSY(t, evd_loop_add(t->c->loop, src));
	t->op.kind = OP_ADD;
	t->op.src = src;
	cc_via_call(t);
}

static void
cc_remove(struct cc_ctl *t, struct evd_source *src)
{
	CC_DIRECT_BUSY(t, evd_loop_remove(t->c->loop, src));
	t->op.kind = OP_REMOVE;
	t->op.src = src;
	cc_via_call(t);
}

static void
cc_unpublish(struct cc_xslot *x)
{
	__atomic_store_n(&x->pub, NULL, __ATOMIC_SEQ_CST);
	for (uint64_t i = 0; __atomic_load_n(&x->users, __ATOMIC_SEQ_CST) != 0; i++) {
		CHECK(i < 100000000);
		sched_yield();
	}
}

/* An extra ring off the loop and unpublished: what it still holds is
 * dropped, and every post taken was delivered once (in order per producer)
 * or dropped. On any thread that saw its removal (or after the loop's). */
static void
cc_inst_finish(struct cc *c, struct cc_inst *in)
{
	uint64_t posted = 0;
	int n = evd_ring_discard(in->src);

	CHECK(n >= 0);
	CHECK_EQ(in->bad, 0);
	for (uint32_t p = 0; p < CC_PRODUCERS; p++) {
		CHECK(in->next_seq[p] <= in->next_post[p]);
		posted += in->next_post[p];
	}
	CHECK_EQ(in->delivered + (uint64_t)n, posted);
	CHECK_EQ(evd_ring_count(in->src), 0);
	CHECK_EQ(evd_source_destroy(in->src), 0);
	__atomic_fetch_add(&c->x_posted, posted, __ATOMIC_RELAXED);
	__atomic_fetch_add(&c->x_delivered, in->delivered, __ATOMIC_RELAXED);
	__atomic_fetch_add(&c->x_discarded, (uint64_t)n, __ATOMIC_RELAXED);
	__atomic_fetch_add(&c->x_instances, 1, __ATOMIC_RELAXED);
	free(in);
}

static void
cc_xring_op(struct cc_ctl *t, struct cc_xslot *x)
{
	uint64_t r = test_xorshift(&t->rnd);

	if (x->inst == NULL) { /* a new ring, published before or after its add */
		struct cc_inst *in = calloc(1, sizeof(*in));
		char name[24];

		CHECK(in != NULL);
		snprintf(name, sizeof(name), "x%u.%u", t->id, (unsigned int)(x - t->x));
		CHECK_EQ(evd_ring_create(name, 16u << (r % 6), cc_x_consume, in, &in->src), 0);
		x->inst = in;
		if (r & 64)
			__atomic_store_n(&x->pub, in, __ATOMIC_SEQ_CST);
		cc_add(t, in->src);
		x->on_loop = true;
		__atomic_store_n(&x->pub, in, __ATOMIC_SEQ_CST);
	} else if (r % 3 == 0) { /* off the loop and back (or back on) */
		if (x->on_loop)
			cc_remove(t, x->inst->src);
		cc_add(t, x->inst->src);
		x->on_loop = true;
	} else if (r % 3 == 1 && x->on_loop) { /* off the loop; producers go on posting */
		cc_remove(t, x->inst->src);
		x->on_loop = false;
	} else { /* retired: unpublished before or after its removal */
		if (r & 64)
			cc_unpublish(x);
		if (x->on_loop)
			cc_remove(t, x->inst->src);
		x->on_loop = false;
		cc_unpublish(x);
		cc_inst_finish(t->c, x->inst);
		x->inst = NULL;
	}
}

static void
cc_fd_finish(struct cc_fd *f)
{
	uint64_t v = 0;

	if (read(f->efd, &v, sizeof(v)) != (ssize_t)sizeof(v)) {
		CHECK(errno == EAGAIN);
		v = 0;
	}
	CHECK_EQ(f->written, f->consumed + v);
	CHECK_EQ(evd_source_destroy(f->src), 0);
	CHECK_EQ(close(f->efd), 0);
	f->src = NULL;
}

static void
cc_fd_op(struct cc_ctl *t, struct cc_fd *f)
{
	uint64_t r = test_xorshift(&t->rnd);

	if (f->src == NULL) {
		f->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
		CHECK(f->efd >= 0);
		f->written = f->consumed = f->calls = 0;
		CHECK_EQ(evd_fd_create("xfd", f->efd, 0, cc_fd_ready, f, &f->src), 0);
		cc_add(t, f->src);
		f->on_loop = true;
	} else if (r % 4 != 0) { /* a write for its handler */
		uint64_t v = 1 + r % 3;

		CHECK_EQ(write(f->efd, &v, sizeof(v)), (ssize_t)sizeof(v));
		f->written += v;
	} else {
		if (f->on_loop)
			cc_remove(t, f->src);
		f->on_loop = false;
		__atomic_fetch_add(&t->c->fd_calls, f->calls, __ATOMIC_RELAXED);
		cc_fd_finish(f);
	}
}

static void
cc_timer_op(struct cc_ctl *t, struct cc_timer *tm)
{
	uint64_t r = test_xorshift(&t->rnd);
	struct evd_timer *out = (void *)&out;

	if (!tm->active) {
		tm->kind = (enum cc_timer_kind)(r % TK_KINDS);
		t->op.after_ns = (r >> 8) % 2000000;
		t->op.period_ns = tm->kind == TK_PERIODIC ? 50000 + (r >> 24) % 450000 : 0;
		CC_DIRECT_BUSY(t, evd_timer_start(t->c->loop, t->op.after_ns, t->op.period_ns,
						  cc_timer_cb, tm, &out));
		CHECK(out == NULL);
		if (tm->kind == TK_ANON) { /* no handle: freed when it fires */
			t->op.kind = OP_ANON_TIMER;
			cc_via_call(t);
			return;
		}
		tm->self_done = false;
		tm->t = NULL;
		t->op.kind = OP_TIMER_START;
		t->op.tm = tm;
		cc_via_call(t);
		tm->active = true;
	} else {
		/* a TK_SELF handle may be freed already: not given to a call
		 * that could not tell (cancelling twice is undefined) */
		if (tm->kind != TK_SELF)
			CC_DIRECT_BUSY(t, evd_timer_cancel(t->c->loop, tm->t));
		t->op.kind = OP_TIMER_CANCEL;
		t->op.tm = tm;
		cc_via_call(t);
		tm->active = false;
	}
}

/* The calls that need the loop to themselves: refused while it runs. */
static void
cc_misc_op(struct cc_ctl *t)
{
	struct evd_loop *loop = t->c->loop;

	switch (test_xorshift(&t->rnd) % 6) {
	case 0: CC_DIRECT_BUSY(t, evd_loop_step(loop)); break;
	case 1: CC_DIRECT_BUSY(t, evd_loop_run(loop)); break;
	case 2: CC_DIRECT_BUSY(t, evd_loop_destroy(loop)); break;
	case 3: CC_DIRECT_BUSY(t, evd_loop_resume(loop)); break;
	case 4: CC_DIRECT_BUSY(t, evd_loop_trace_enable(loop, 64)); break;
	case 5: /* a base ring: on the loop all along */
		CC_DIRECT_BUSY(t, evd_loop_remove(loop, t->c->base[t->rnd % CC_BASE_RINGS].src));
		break;
	}
}

static void *
cc_control(void *arg)
{
	struct cc_ctl *t = arg;

	while (t->ops < t->target) {
		uint64_t r = test_xorshift(&t->rnd) % 10;

		if (r < 3)
			cc_xring_op(t, &t->x[test_xorshift(&t->rnd) % CC_XRINGS]);
		else if (r < 5)
			cc_fd_op(t, &t->fd[test_xorshift(&t->rnd) % CC_FDS]);
		else if (r < 9)
			cc_timer_op(t, &t->tm[test_xorshift(&t->rnd) % CC_TIMERS]);
		else
			cc_misc_op(t);
	}
	return NULL; /* what is left, main takes down after the stop */
}

struct cc_prod {
	struct cc *c;
	uint32_t id;
	pthread_t th;
	uint64_t x_posted; /* posts to extra rings taken */
};

static void *
cc_produce(void *arg)
{
	struct cc_prod *p = arg;
	struct cc *c = p->c;
	uint64_t rnd = 0x94d049bb133111ebull * (p->id + 1) + opt_seed;
	uint64_t seq[CC_BASE_RINGS] = { 0 };

	while (!__atomic_load_n(&c->stop_producers, __ATOMIC_ACQUIRE)) {
		uint64_t r = test_xorshift(&rnd);

		if (r % 4 == 0) { /* an extra ring, if its slot has one */
			struct cc_ctl *t = &c->ctl[(r >> 8) % CC_CONTROLS];
			struct cc_xslot *x = &t->x[(r >> 16) % CC_XRINGS];
			struct cc_inst *in;

			__atomic_fetch_add(&x->users, 1, __ATOMIC_SEQ_CST);
			in = __atomic_load_n(&x->pub, __ATOMIC_SEQ_CST);
			if (in != NULL) {
				struct evd_event ev = { .type = p->id, .u64 = in->next_post[p->id] };
				int rc = evd_ring_post(in->src, &ev);

				if (rc == 0) {
					in->next_post[p->id]++;
					p->x_posted++;
				} else {
					CHECK_EQ(rc, -ENOBUFS); /* off the loop, it fills */
					__atomic_fetch_add(&c->x_full, 1, __ATOMIC_RELAXED);
				}
			}
			__atomic_fetch_sub(&x->users, 1, __ATOMIC_RELEASE);
		} else {
			uint32_t k = (uint32_t)((r >> 8) % CC_BASE_RINGS);
			struct evd_event ev = { .type = p->id, .u64 = seq[k] };
			int rc;

			while ((rc = evd_ring_post(c->base[k].src, &ev)) == -ENOBUFS)
				test_sleep_us(20);
			CHECK_EQ(rc, 0);
			seq[k]++;
			c->base_posted[p->id]++;
		}
		if ((r >> 32) % 8 == 0) /* pauses: the loop sleeps, calls wake it */
			test_sleep_us((r >> 40) % 300);
	}
	memcpy(c->base_seq[p->id], seq, sizeof(seq));
	return NULL;
}

static void *
cc_run_loop(void *arg)
{
	struct cc *c = arg;

	on_loop_thread = true;
	c->run_rc = evd_loop_run(c->loop);
	on_loop_thread = false;
	return NULL;
}

static void
cc_started(struct evd_loop *loop, void *arg)
{
	(void)loop;
	CHECK(on_loop_thread);
	CHECK_EQ(sem_post(&((struct cc *)arg)->started), 0);
}

static void
test_cross_thread_churn(void)
{
	struct evd_loop_conf conf = { .name = "churn", .policy = "adaptive",
				      .max_sleep_us = CC_SLEEP_US };
	struct cc *c = calloc(1, sizeof(*c));
	struct cc_prod prod[CC_PRODUCERS];
	struct evd_loop_stats st;
	uint64_t total_ops = scaled(100000, 2000), base_posted = 0, busy = 0, via = 0;
	uint64_t x_posted_p = 0;

	CHECK(c != NULL);
	CHECK_EQ(evd_loop_create(&conf, &c->loop), 0);
	CHECK_EQ(sem_init(&c->started, 0, 0), 0);
	for (uint32_t k = 0; k < CC_BASE_RINGS; k++) {
		c->base[k].c = c;
		CHECK_EQ(evd_ring_create("base", 512, cc_base_consume, &c->base[k], &c->base[k].src),
			 0);
		CHECK_EQ(evd_loop_add(c->loop, c->base[k].src), 0);
	}
	lw_reset();
	CHECK_EQ(pthread_create(&c->loop_th, NULL, cc_run_loop, c), 0);
	/* the loop runs once its first call ran: direct calls are refused from now */
	CHECK_EQ(evd_loop_call(c->loop, cc_started, c), 0);
	test_wait_sem(&c->started);
	for (uint32_t i = 0; i < CC_PRODUCERS; i++) {
		prod[i] = (struct cc_prod){ .c = c, .id = i };
		CHECK_EQ(pthread_create(&prod[i].th, NULL, cc_produce, &prod[i]), 0);
	}
	for (uint32_t i = 0; i < CC_CONTROLS; i++) {
		struct cc_ctl *t = &c->ctl[i];

		t->c = c;
		t->id = i;
		t->rnd = 0xbf58476d1ce4e5b9ull * (i + 1) + opt_seed;
		t->target = total_ops / CC_CONTROLS;
		for (uint32_t j = 0; j < CC_TIMERS; j++)
			t->tm[j].c = c;
		CHECK_EQ(sem_init(&t->done, 0, 0), 0);
		CHECK_EQ(pthread_create(&t->th, NULL, cc_control, t), 0);
	}
	for (uint32_t i = 0; i < CC_CONTROLS; i++) {
		pthread_join(c->ctl[i].th, NULL);
		busy += c->ctl[i].direct_busy;
		via += c->ctl[i].via_call;
	}
	__atomic_store_n(&c->stop_producers, 1, __ATOMIC_RELEASE);
	for (uint32_t i = 0; i < CC_PRODUCERS; i++) {
		pthread_join(prod[i].th, NULL);
		base_posted += c->base_posted[i];
		x_posted_p += prod[i].x_posted;
	}
	/* the base rings' events all arrive while it runs (bounded wait) */
	for (uint64_t i = 0;
	     __atomic_load_n(&c->base_delivered, __ATOMIC_RELAXED) != base_posted; i++) {
		CHECK(i < 600000);
		test_sleep_us(100);
	}
	CHECK_EQ(evd_loop_stop(c->loop), 0);
	pthread_join(c->loop_th, NULL);
	CHECK_EQ(c->run_rc, 0);

	/* The loop stopped: the control calls act at once on this thread. */
	for (uint32_t i = 0; i < CC_CONTROLS; i++) {
		struct cc_ctl *t = &c->ctl[i];

		for (uint32_t j = 0; j < CC_XRINGS; j++) {
			struct cc_xslot *x = &t->x[j];

			if (x->inst == NULL)
				continue;
			if (x->on_loop)
				CHECK_EQ(evd_loop_remove(c->loop, x->inst->src), 0);
			cc_unpublish(x);
			cc_inst_finish(c, x->inst);
			x->inst = NULL;
		}
		for (uint32_t j = 0; j < CC_FDS; j++) {
			struct cc_fd *f = &t->fd[j];

			if (f->src == NULL)
				continue;
			if (f->on_loop)
				CHECK_EQ(evd_loop_remove(c->loop, f->src), 0);
			c->fd_calls += f->calls;
			cc_fd_finish(f);
		}
		/* half the timers cancelled here, the others freed with the loop */
		for (uint32_t j = 0; j < CC_TIMERS; j += 2) {
			struct cc_timer *tm = &t->tm[j];

			if (tm->active && !(tm->kind == TK_SELF && tm->self_done))
				CHECK_EQ(evd_timer_cancel(c->loop, tm->t), 0);
			tm->active = false;
		}
		CHECK_EQ(sem_destroy(&t->done), 0);
	}
	CHECK_EQ(evd_loop_stats_get(c->loop, &st), 0);
	printf("  %" PRIu64 " control calls: %" PRIu64 " direct (-EBUSY), %" PRIu64
	       " through evd_loop_call; extra rings %" PRIu64 ": posted %" PRIu64 ", delivered %" PRIu64
	       ", discarded %" PRIu64 " (full %" PRIu64 "); base events %" PRIu64 "; fd calls %" PRIu64
	       "; timers fired %" PRIu64 "; sleeps %" PRIu64 " wakeups %" PRIu64 " lost %" PRIu64 "\n",
	       busy + via, busy, via, c->x_instances, c->x_posted, c->x_delivered, c->x_discarded,
	       c->x_full, base_posted, c->fd_calls, st.timers_fired, st.sleeps, st.wakeups,
	       st.lost_wakeups);
	check_loop_waits(CC_SLEEP_US, &st);

	CHECK(busy + via >= total_ops / CC_CONTROLS * CC_CONTROLS);
	CHECK_EQ(st.lost_wakeups, 0);
	CHECK_EQ(c->x_posted, x_posted_p);
	CHECK_EQ(c->x_delivered + c->x_discarded, c->x_posted);
	for (uint32_t k = 0; k < CC_BASE_RINGS; k++) {
		CHECK_EQ(c->base[k].bad, 0);
		CHECK_EQ(evd_ring_count(c->base[k].src), 0);
		for (uint32_t p = 0; p < CC_PRODUCERS; p++)
			CHECK_EQ(c->base[k].next_seq[p], c->base_seq[p][k]);
		CHECK_EQ(evd_loop_remove(c->loop, c->base[k].src), 0);
		CHECK_EQ(evd_source_destroy(c->base[k].src), 0);
	}
	CHECK_EQ(c->base_delivered, base_posted);
	CHECK_EQ(st.events, base_posted + c->x_delivered + c->fd_calls);
	CHECK_EQ(st.timers_fired, c->timer_fires);
	CHECK_EQ(evd_loop_destroy(c->loop), 0);
	CHECK_EQ(sem_destroy(&c->started), 0);
	free(c);
}

/* ---- 3. random-api ---------------------------------------------------------- */

#define RA_THREADS 3
#define RA_SHARED 3  /* shared loops: g[0] runs on its own thread, g[1] g[2] are stepped */
#define RA_SRC 4     /* sources a thread owns: RA_SRC - 1 rings and an fd source */
#define RA_TMR 3     /* timers a thread owns */
#define RA_BOUND 100000 /* a bound on the waits (each a yield or a step) */

/* 32 characters: one too many for a name; 31: the longest */
#define NAME_32 "abcdefghijklmnopqrstuvwxyz012345"
#define NAME_31 "abcdefghijklmnopqrstuvwxyz01234"

struct ra;
struct ra_thr;

/* A ring on a shared loop, from start to end; every thread posts to it. */
struct ra_shared_ring {
	struct evd_source *src;
	uint64_t next_seq[RA_THREADS]; /* the consumer's: whoever runs or steps its loop */
	uint64_t bad;
	uint64_t delivered; /* atomic */
};

/* RC_REMOVE_SELF: the ring's handler removes it (the removal takes effect
 * when the round's poll ends), then queues a call that marks it done */
enum ra_call_kind { RC_ADD, RC_REMOVE, RC_TSTART, RC_TCANCEL, RC_REMOVE_SELF };

/* A source a thread owns: only it creates, adds, removes, posts to and
 * destroys it; its handler runs wherever its loop runs. */
struct ra_src {
	struct ra_thr *owner;
	struct evd_source *src; /* NULL: none */
	bool ring;
	int efd;                /* an fd source's eventfd */
	struct evd_loop *on;    /* the loop it is on (set by the call that moved it) */
	int pending;            /* atomic: a call on it is under way */
	enum ra_call_kind kind; /* the call's */
	struct evd_loop *target;
	uint64_t seq;           /* the owner's: posts taken, fd writes */
	uint64_t next_seq, bad; /* the consumer's (one loop at a time) */
	uint64_t got;           /* atomic: events delivered, or fd counts read */
};

struct ra_tmr {
	struct ra_thr *owner;
	struct evd_timer *t; /* NULL: none */
	struct evd_loop *on;
	int pending;
	enum ra_call_kind kind;
	struct evd_loop *target;
	uint64_t after_ns, period_ns;
};

struct ra_thr {
	struct ra *r;
	uint32_t id;
	pthread_t th;
	uint64_t rnd;
	uint64_t calls, target;
	uint64_t refused; /* calls refused, each with its errno checked */
	uint64_t via_call, self_removed; /* control calls through evd_loop_call(); by a handler */
	struct evd_loop *priv; /* a loop of its own (NULL: none now) */
	uint64_t priv_made;
	uint64_t trace_cursor, g0_cursor, g0_lost, last_now;
	struct ra_src src[RA_SRC];
	struct ra_tmr tmr[RA_TMR];
	uint64_t sr_seq[RA_SHARED];
	uint64_t sf_written;
};

struct ra {
	struct evd_loop *g[RA_SHARED];
	pthread_t runner;
	int run_rc;
	sem_t started;
	struct ra_shared_ring sr[RA_SHARED];
	struct evd_source *sf; /* an fd source on g[0]; every thread writes its eventfd */
	int sf_efd;
	uint64_t sf_consumed; /* g[0]'s thread */
	struct ra_thr thr[RA_THREADS];
	uint64_t timer_fires; /* atomic */
};

/* A refusal: rc is the errno the header names (or one of two, where a race
 * between threads decides which applies). */
#define RA_REFUSED(t, rc, e)                                                              \
	do {                                                                              \
		CHECK_EQ(rc, e);                                                          \
		(t)->refused++;                                                           \
	} while (0)
#define RA_REFUSED2(t, rc, e1, e2)                                                        \
	do {                                                                              \
		int _rc = (rc);                                                           \
		if (_rc != (e1) && _rc != (e2)) {                                         \
			fprintf(stderr, "FAIL %s:%d: %s gave %d, not %d or %d\n", __FILE__, \
				__LINE__, #rc, _rc, e1, e2);                              \
			exit(1);                                                          \
		}                                                                         \
		if (_rc < 0)                                                              \
			(t)->refused++;                                                   \
	} while (0)

static void
ra_sr_consume(struct evd_source *src, void *burst, uint16_t n, void *arg)
{
	struct ra_shared_ring *sr = arg;
	struct evd_event *ev = burst;

	(void)src;
	for (uint16_t i = 0; i < n; i++) {
		CHECK(ev[i].type < RA_THREADS);
		if (ev[i].u64 != sr->next_seq[ev[i].type])
			sr->bad++;
		sr->next_seq[ev[i].type] = ev[i].u64 + 1;
	}
	__atomic_fetch_add(&sr->delivered, n, __ATOMIC_RELAXED);
}

static void
ra_sf_ready(struct evd_source *src, void *burst, uint16_t n, void *arg)
{
	struct ra *r = arg;
	uint64_t v;

	(void)src;
	(void)burst;
	(void)n;
	if (read(r->sf_efd, &v, sizeof(v)) == (ssize_t)sizeof(v))
		r->sf_consumed += v;
}

static void
ra_removed_self(struct evd_loop *loop, void *arg)
{
	struct ra_src *s = arg;

	CHECK(loop == s->target);
	s->on = NULL;
	__atomic_store_n(&s->pending, 0, __ATOMIC_RELEASE);
}

static void
ra_own_consume(struct evd_source *src, void *burst, uint16_t n, void *arg)
{
	struct ra_src *s = arg;
	struct evd_event *ev = burst;

	CHECK(src == s->src);
	for (uint16_t i = 0; i < n; i++) {
		if (ev[i].u64 != s->next_seq)
			s->bad++;
		s->next_seq = ev[i].u64 + 1;
	}
	__atomic_fetch_add(&s->got, n, __ATOMIC_RELAXED);
	if (__atomic_load_n(&s->pending, __ATOMIC_ACQUIRE) && s->kind == RC_REMOVE_SELF &&
	    s->on != NULL) {
		/* from its own handler: not polled again after this round;
		 * done once the round is over (a call runs between rounds) */
		CHECK(s->on == s->target);
		CHECK_EQ(evd_loop_remove(s->on, src), 0);
		CHECK_EQ(evd_loop_call(s->on, ra_removed_self, s), 0);
	}
}

static void
ra_own_fd(struct evd_source *src, void *burst, uint16_t n, void *arg)
{
	struct ra_src *s = arg;
	uint64_t v;

	(void)burst;
	(void)n;
	CHECK(src == s->src);
	if (read(s->efd, &v, sizeof(v)) == (ssize_t)sizeof(v))
		__atomic_fetch_add(&s->got, v, __ATOMIC_RELAXED);
}

static void
ra_timer_cb(struct evd_loop *loop, struct evd_timer *t, void *arg)
{
	struct ra_tmr *tm = arg;

	(void)loop;
	(void)t;
	__atomic_fetch_add(&tm->owner->r->timer_fires, 1, __ATOMIC_RELAXED);
}

/* Calls from a thread to a loop that it may not run itself. */
static void
ra_src_call(struct evd_loop *loop, void *arg)
{
	struct ra_src *s = arg;

	CHECK(loop == s->target);
	if (s->kind == RC_ADD) {
		CHECK_EQ(evd_loop_add(loop, s->src), 0);
		s->on = loop;
	} else {
		CHECK_EQ(evd_loop_remove(loop, s->src), 0);
		s->on = NULL;
	}
	__atomic_store_n(&s->pending, 0, __ATOMIC_RELEASE);
}

static void
ra_tmr_call(struct evd_loop *loop, void *arg)
{
	struct ra_tmr *tm = arg;

	CHECK(loop == tm->target);
	if (tm->kind == RC_TSTART) {
		CHECK_EQ(evd_timer_start(loop, tm->after_ns, tm->period_ns, ra_timer_cb, tm, &tm->t),
			 0);
		tm->on = loop;
	} else {
		CHECK_EQ(evd_timer_cancel(loop, tm->t), 0);
		tm->t = NULL;
		tm->on = NULL;
	}
	__atomic_store_n(&tm->pending, 0, __ATOMIC_RELEASE);
}

static uint64_t
ra_rand(struct ra_thr *t, uint64_t n)
{
	return test_xorshift(&t->rnd) % n;
}

/* A loop for a control call of this thread: a shared one, or its own. */
static struct evd_loop *
ra_pick_loop(struct ra_thr *t)
{
	uint64_t k = ra_rand(t, RA_SHARED + 1);

	return k < RA_SHARED ? t->r->g[k] : t->priv != NULL ? t->priv : t->r->g[1];
}

/* A direct control call: g[0] runs on its thread (-EBUSY); g[1] and g[2]
 * may be in another thread's step (0 or -EBUSY); its own loop, no one
 * runs but itself (0). */
static int
ra_direct_rc(struct ra_thr *t, struct evd_loop *l, int rc)
{
	if (l == t->r->g[0])
		CHECK_EQ(rc, -EBUSY);
	else if (l == t->priv)
		CHECK_EQ(rc, 0);
	else
		CHECK(rc == 0 || rc == -EBUSY);
	if (rc < 0)
		t->refused++;
	return rc;
}

static void
ra_src_move(struct ra_thr *t, struct ra_src *s, enum ra_call_kind kind, struct evd_loop *l)
{
	int rc = kind == RC_ADD ? evd_loop_add(l, s->src) : evd_loop_remove(l, s->src);

	t->calls++;
	if (ra_direct_rc(t, l, rc) == 0) {
		s->on = kind == RC_ADD ? l : NULL;
		return;
	}
	s->kind = kind;
	s->target = l;
	__atomic_store_n(&s->pending, 1, __ATOMIC_RELEASE);
	CHECK_EQ(evd_loop_call(l, ra_src_call, s), 0);
	t->calls++;
	t->via_call++;
}

static void
ra_tmr_move(struct ra_thr *t, struct ra_tmr *tm, enum ra_call_kind kind, struct evd_loop *l)
{
	struct evd_timer *out = (void *)&out;
	int rc;

	if (kind == RC_TSTART) {
		tm->after_ns = ra_rand(t, 1000000);
		tm->period_ns = ra_rand(t, 2) ? 100000 + ra_rand(t, 900000) : 0;
		rc = evd_timer_start(l, tm->after_ns, tm->period_ns, ra_timer_cb, tm, &out);
		CHECK(rc == 0 ? out != NULL : out == NULL);
	} else {
		rc = evd_timer_cancel(l, tm->t);
	}
	t->calls++;
	if (ra_direct_rc(t, l, rc) == 0) {
		tm->t = kind == RC_TSTART ? out : NULL;
		tm->on = kind == RC_TSTART ? l : NULL;
		return;
	}
	tm->kind = kind;
	tm->target = l;
	__atomic_store_n(&tm->pending, 1, __ATOMIC_RELEASE);
	CHECK_EQ(evd_loop_call(l, ra_tmr_call, tm), 0);
	t->calls++;
	t->via_call++;
}

/* Dropped what an own ring holds, destroyed it: every post taken was
 * delivered once, in order, or dropped. */
static void
ra_src_destroy(struct ra_thr *t, struct ra_src *s)
{
	if (s->ring) {
		int rc = evd_source_destroy(s->src), n;

		t->calls++;
		CHECK_EQ(s->bad, 0);
		CHECK_EQ(s->next_seq, s->got);
		if (s->got < s->seq) { /* it still holds what was not delivered */
			RA_REFUSED(t, rc, -EBUSY);
			n = evd_ring_discard(s->src);
			CHECK_EQ((uint64_t)n, s->seq - s->got);
			CHECK_EQ(evd_source_destroy(s->src), 0);
			t->calls += 2;
		} else {
			CHECK_EQ(rc, 0);
			CHECK_EQ(s->got, s->seq);
		}
	} else {
		uint64_t v = 0;

		if (read(s->efd, &v, sizeof(v)) != (ssize_t)sizeof(v))
			v = 0;
		CHECK_EQ(s->got + v, s->seq);
		CHECK_EQ(evd_source_destroy(s->src), 0);
		CHECK_EQ(close(s->efd), 0);
		t->calls++;
	}
	s->src = NULL;
}

static void
ra_own_post(struct ra_thr *t, struct ra_src *s)
{
	struct evd_event ev[8];
	unsigned int n = 1 + (unsigned int)ra_rand(t, 8);
	int rc;

	for (unsigned int i = 0; i < n; i++)
		ev[i] = (struct evd_event){ .type = t->id, .u64 = s->seq + i };
	rc = evd_ring_post_burst(s->src, ev, n);
	t->calls++;
	if (rc == -ENOBUFS) {
		t->refused++;
		return;
	}
	CHECK(rc >= 1 && rc <= (int)n);
	s->seq += (uint64_t)rc;
}

static void
ra_src_op(struct ra_thr *t, struct ra_src *s)
{
	uint64_t r = ra_rand(t, 8);

	if (__atomic_load_n(&s->pending, __ATOMIC_ACQUIRE))
		return;
	if (s->src == NULL) {
		memset(&s->seq, 0, sizeof(*s) - offsetof(struct ra_src, seq));
		if (s->ring) {
			CHECK_EQ(evd_ring_create(ra_rand(t, 2) ? NAME_31 : NULL,
						 2 + (uint32_t)ra_rand(t, 255), ra_own_consume, s,
						 &s->src), 0);
		} else {
			s->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
			CHECK(s->efd >= 0);
			CHECK_EQ(evd_fd_create(NAME_31, s->efd, 0, ra_own_fd, s, &s->src), 0);
			CHECK_EQ(evd_ring_count(s->src), 0); /* not a ring: 0, logged */
			CHECK_EQ(evd_fd_revents(s->src), 0);
		}
		s->on = NULL;
		t->calls++;
		return;
	}
	if (r < 3 && s->ring) {
		ra_own_post(t, s);
	} else if (r < 3) {
		uint64_t v = 1 + ra_rand(t, 3);

		CHECK_EQ(write(s->efd, &v, sizeof(v)), (ssize_t)sizeof(v));
		s->seq += v;
	} else if (s->on == NULL) {
		switch (r) {
		case 3: case 4: /* onto a loop */
			ra_src_move(t, s, RC_ADD, ra_pick_loop(t));
			break;
		case 5: /* not on this loop */
			RA_REFUSED(t, evd_loop_remove(t->r->g[ra_rand(t, RA_SHARED)], s->src), -EINVAL);
			t->calls++;
			break;
		case 6: /* on no loop: what it holds, exactly what was not delivered, is dropped */
			if (s->ring) {
				int n = evd_ring_discard(s->src);

				CHECK_EQ(s->bad, 0);
				CHECK_EQ(s->next_seq, s->got);
				CHECK_EQ((uint64_t)n, s->seq - s->got);
				s->seq = s->got; /* the next post follows the delivered ones */
				t->calls++;
			}
			break;
		default:
			ra_src_destroy(t, s);
			break;
		}
	} else {
		struct evd_loop *other = t->r->g[ra_rand(t, RA_SHARED)];

		switch (r) {
		case 3:
			ra_src_move(t, s, RC_REMOVE, s->on);
			break;
		case 4: /* removed by its handler, at the next event */
			if (!s->ring) {
				ra_src_move(t, s, RC_REMOVE, s->on);
				break;
			}
			s->kind = RC_REMOVE_SELF;
			s->target = s->on;
			t->self_removed++;
			__atomic_store_n(&s->pending, 1, __ATOMIC_RELEASE);
			ra_own_post(t, s); /* or it is full: events all the same */
			break;
		case 5: /* already on a loop */
			RA_REFUSED(t, evd_loop_add(ra_pick_loop(t), s->src), -EINVAL);
			t->calls++;
			break;
		case 6: /* on another loop than this one */
			if (other != s->on) {
				RA_REFUSED(t, evd_loop_remove(other, s->src), -EINVAL);
				t->calls++;
			}
			break;
		default: /* registered: not destroyed, not discarded */
			RA_REFUSED(t, evd_source_destroy(s->src), -EBUSY);
			if (s->ring)
				RA_REFUSED(t, evd_ring_discard(s->src), -EBUSY);
			t->calls += 2;
			break;
		}
	}
}

static void
ra_tmr_op(struct ra_thr *t, struct ra_tmr *tm)
{
	uint64_t r = ra_rand(t, 4);

	if (__atomic_load_n(&tm->pending, __ATOMIC_ACQUIRE))
		return;
	if (tm->t == NULL) {
		ra_tmr_move(t, tm, RC_TSTART, ra_pick_loop(t));
	} else if (r < 2) {
		ra_tmr_move(t, tm, RC_TCANCEL, tm->on);
	} else { /* on another loop than this one */
		struct evd_loop *w = ra_pick_loop(t);
		int rc;

		if (w == tm->on)
			return;
		rc = evd_timer_cancel(w, tm->t);
		t->calls++;
		if (w == t->r->g[0])
			RA_REFUSED(t, rc, -EBUSY); /* runs elsewhere: refused before the timer is looked at */
		else if (w == t->priv)
			RA_REFUSED(t, rc, -EINVAL);
		else
			RA_REFUSED2(t, rc, -EINVAL, -EBUSY);
	}
}

/* Stops its own loop from a timer, after checking what its callbacks may
 * not do. */
static void
ra_stop_cb(struct evd_loop *loop, struct evd_timer *tm, void *arg)
{
	struct ra_thr *t = arg;

	(void)tm;
	RA_REFUSED(t, evd_loop_step(loop), -EBUSY);
	RA_REFUSED(t, evd_loop_run(loop), -EBUSY);
	RA_REFUSED(t, evd_loop_destroy(loop), -EBUSY);
	RA_REFUSED(t, evd_loop_resume(loop), -EBUSY);
	RA_REFUSED(t, evd_loop_trace_enable(loop, 64), -EBUSY);
	CHECK_EQ(evd_loop_stop(loop), 0);
	t->calls += 6;
}

/* Its own loop, after the calls queued on it ran: nothing left on it. */
static void
ra_priv_destroy(struct ra_thr *t)
{
	struct evd_loop *p = t->priv;
	struct evd_loop_stats st;
	bool any = false, busy[RA_SRC];
	int rc;

	/* steps (resumed: a stop timer may fire in one) run the calls queued
	 * on it, and its rings' handlers that remove themselves */
	for (uint64_t i = 0;; i++) {
		bool mine = false;

		CHECK(i < RA_BOUND);
		CHECK_EQ(evd_loop_resume(p), 0);
		rc = evd_loop_step(p);
		CHECK(rc >= 0);
		t->calls += 2;
		for (uint32_t j = 0; j < RA_SRC; j++)
			mine |= __atomic_load_n(&t->src[j].pending, __ATOMIC_ACQUIRE) &&
				t->src[j].target == p;
		if (!mine && i > 0)
			break;
	}
	/* a call under way on another loop is that loop's to finish: only
	 * settled sources are looked at */
	for (uint32_t i = 0; i < RA_SRC; i++) {
		busy[i] = __atomic_load_n(&t->src[i].pending, __ATOMIC_ACQUIRE) != 0;
		CHECK(!busy[i] || t->src[i].target != p);
		any |= !busy[i] && t->src[i].src != NULL && t->src[i].on == p;
	}
	if (any) {
		RA_REFUSED(t, evd_loop_destroy(p), -EBUSY);
		t->calls++;
	}
	for (uint32_t i = 0; i < RA_SRC; i++)
		if (!busy[i] && t->src[i].src != NULL && t->src[i].on == p) {
			CHECK_EQ(evd_loop_remove(p, t->src[i].src), 0);
			t->src[i].on = NULL;
			t->calls++;
		}
	CHECK_EQ(evd_loop_stats_get(p, &st), 0);
	CHECK_EQ(st.lost_wakeups, 0);
	CHECK_EQ(evd_loop_destroy(p), 0); /* its timers go with it */
	t->calls += 2;
	for (uint32_t i = 0; i < RA_TMR; i++) {
		if (__atomic_load_n(&t->tmr[i].pending, __ATOMIC_ACQUIRE)) {
			CHECK(t->tmr[i].target != p);
			continue;
		}
		if (t->tmr[i].t != NULL && t->tmr[i].on == p) {
			t->tmr[i].t = NULL;
			t->tmr[i].on = NULL;
		}
	}
	t->priv = NULL;
}

static void
ra_priv_op(struct ra_thr *t)
{
	static const char *const policies[] = { "poll", "intr", "adaptive:spin_max_us=20", "napi" };
	struct evd_loop *p = t->priv;
	int rc;

	if (p == NULL) {
		struct evd_loop_conf conf = {
			.name = ra_rand(t, 2) ? NAME_31 : NULL,
			.policy = policies[ra_rand(t, 4)],
			.max_sleep_us = 50 + (uint32_t)ra_rand(t, 200),
			.burst = (uint16_t)ra_rand(t, 257),
		};

		CHECK_EQ(evd_loop_create(&conf, &t->priv), 0);
		CHECK_EQ(strcmp(evd_loop_name(t->priv), conf.name ? conf.name : "evd"), 0);
		t->priv_made++;
		t->trace_cursor = 0;
		t->calls += 2;
		return;
	}
	switch (ra_rand(t, 10)) {
	case 0: case 1: case 2:
		rc = evd_loop_step(p);
		CHECK(rc >= 0 || rc == -ESHUTDOWN);
		break;
	case 3:
		CHECK_EQ(evd_loop_stop(p), 0);
		break;
	case 4:
		CHECK_EQ(evd_loop_resume(p), 0);
		break;
	case 5: /* run it, stopped by a timer */
		CHECK_EQ(evd_timer_start(p, 50000 + ra_rand(t, 200000), 0, ra_stop_cb, t, NULL), 0);
		CHECK_EQ(evd_loop_run(p), 0);
		CHECK_EQ(evd_loop_resume(p), 0);
		t->calls += 2;
		break;
	case 6: {
		static const uint32_t sizes[] = { 0, 64, 128, 4096 };

		CHECK_EQ(evd_loop_trace_enable(p, sizes[ra_rand(t, 4)]), 0);
		break;
	}
	case 7: {
		struct evd_mode_event ev[8];
		uint64_t lost = 0;

		rc = evd_loop_trace_read(p, &t->trace_cursor, ev, 8, &lost);
		CHECK((rc >= 0 && rc <= 8) || rc == -ENODATA);
		break;
	}
	case 8:
		CHECK_EQ(evd_loop_stats_reset(p), 0);
		break;
	default:
		ra_priv_destroy(t);
		break;
	}
	t->calls++;
}

/* Calls refused for their arguments (never undefined by the header). */
static void
ra_invalid(struct ra_thr *t)
{
	struct ra *r = t->r;
	struct evd_loop *g = r->g[ra_rand(t, RA_SHARED)], *l = (void *)&l;
	struct evd_source *sr = r->sr[ra_rand(t, RA_SHARED)].src, *o = (void *)&o;
	struct evd_timer *tm = (void *)&tm;
	struct evd_event ev = { .type = t->id };
	struct evd_loop_stats st;
	struct evd_source_stats ss;
	struct evd_mode_event me[4];
	uint64_t cur = 0;
	uint32_t k = (uint32_t)ra_rand(t, 48);

	switch (k) {
	case 0: RA_REFUSED(t, evd_loop_create(NULL, NULL), -EINVAL); break;
	case 1: {
		struct evd_loop_conf c = { .name = NAME_32 };

		RA_REFUSED(t, evd_loop_create(&c, &l), -EINVAL);
		CHECK(l == NULL);
		break;
	}
	case 2: {
		struct evd_loop_conf c = { .burst = 257 };

		RA_REFUSED(t, evd_loop_create(&c, &l), -EINVAL);
		break;
	}
	case 3: {
		struct evd_clock clk = { .now_ns = NULL };
		struct evd_loop_conf c = { .clock = &clk };

		RA_REFUSED(t, evd_loop_create(&c, &l), -EINVAL);
		break;
	}
	case 4: {
		static const char *const unknown[] = { "nosuch", "adaptiv", "intr2", "ski-rand2" };
		struct evd_loop_conf c = { .policy = unknown[ra_rand(t, 4)] };

		RA_REFUSED(t, evd_loop_create(&c, &l), -ENOENT);
		RA_REFUSED(t, evd_policy_validate(c.policy), -ENOENT);
		break;
	}
	case 5: {
		static const char *const bad[] = {
			"", "intr:", "adaptive:bogus=1", "adaptive:p99_us=x", "poll:x=1",
			"adaptive:p99_us=1,,spin_max_us=2", "adaptive:p99_us", ":",
			"adaptive:p99_us=1,p99_us=2", "adaptive:spin_max_us=99999999",
		};
		struct evd_loop_conf c = { .policy = bad[ra_rand(t, 10)] };

		RA_REFUSED(t, evd_loop_create(&c, &l), -EINVAL);
		RA_REFUSED(t, evd_policy_validate(c.policy), -EINVAL);
		break;
	}
	case 6: RA_REFUSED(t, evd_loop_destroy(NULL), -EINVAL); break;
	case 7: /* running (g[0]), or a step under way, or sources on it */
		RA_REFUSED(t, evd_loop_destroy(g), -EBUSY);
		break;
	case 8: RA_REFUSED(t, evd_loop_add(NULL, sr), -EINVAL); break;
	case 9: RA_REFUSED(t, evd_loop_add(g, NULL), -EINVAL); break;
	case 10: /* a shared ring is on its loop */
		RA_REFUSED(t, evd_loop_add(g, sr), -EINVAL);
		break;
	case 11: RA_REFUSED(t, evd_loop_remove(NULL, sr), -EINVAL); break;
	case 12: RA_REFUSED(t, evd_loop_remove(g, NULL), -EINVAL); break;
	case 13: /* shared ring k is on g[k]: on the others, not */
		for (uint32_t i = 0; i < RA_SHARED; i++)
			if (r->g[i] != g)
				RA_REFUSED(t, evd_loop_remove(g, r->sr[i].src), -EINVAL);
		break;
	case 14: RA_REFUSED(t, evd_loop_call(NULL, ra_src_call, NULL), -EINVAL); break;
	case 15: RA_REFUSED(t, evd_loop_call(g, NULL, NULL), -EINVAL); break;
	case 16: RA_REFUSED(t, evd_loop_run(NULL), -EINVAL); break;
	case 17: RA_REFUSED(t, evd_loop_run(r->g[0]), -EBUSY); break;
	case 18: RA_REFUSED(t, evd_loop_step(NULL), -EINVAL); break;
	case 19: RA_REFUSED(t, evd_loop_step(r->g[0]), -EBUSY); break;
	case 20: RA_REFUSED(t, evd_loop_stop(NULL), -EINVAL); break;
	case 21: RA_REFUSED(t, evd_loop_resume(NULL), -EINVAL); break;
	case 22: RA_REFUSED(t, evd_loop_resume(r->g[0]), -EBUSY); break;
	case 23: RA_REFUSED(t, evd_loop_stats_get(NULL, &st), -EINVAL); break;
	case 24: RA_REFUSED(t, evd_loop_stats_get(g, NULL), -EINVAL); break;
	case 25: RA_REFUSED(t, evd_loop_stats_reset(NULL), -EINVAL); break;
	case 26: {
		static const uint32_t bad[] = { 1, 32, 63, 65, 100, 1u << 25, 3u << 10, UINT32_MAX };

		RA_REFUSED(t, evd_loop_trace_enable(g, bad[ra_rand(t, 8)]), -EINVAL);
		break;
	}
	case 27: RA_REFUSED(t, evd_loop_trace_enable(NULL, 64), -EINVAL); break;
	case 28: RA_REFUSED(t, evd_loop_trace_enable(r->g[0], 64), -EBUSY); break;
	case 29: RA_REFUSED(t, evd_loop_trace_read(NULL, &cur, me, 4, NULL), -EINVAL); break;
	case 30: RA_REFUSED(t, evd_loop_trace_read(r->g[0], NULL, me, 4, NULL), -EINVAL); break;
	case 31: RA_REFUSED(t, evd_loop_trace_read(r->g[0], &cur, NULL, 4, NULL), -EINVAL); break;
	case 32: /* recording never turned on there */
		RA_REFUSED(t, evd_loop_trace_read(r->g[1 + ra_rand(t, 2)], &cur, me, 4, NULL), -ENODATA);
		break;
	case 33: RA_REFUSED(t, evd_source_stats_get(NULL, &ss), -EINVAL); break;
	case 34: RA_REFUSED(t, evd_source_stats_get(sr, NULL), -EINVAL); break;
	case 35: RA_REFUSED(t, evd_source_stats_reset(NULL), -EINVAL); break;
	case 36: RA_REFUSED(t, evd_source_destroy(NULL), -EINVAL); break;
	case 37: RA_REFUSED(t, evd_source_destroy(sr), -EBUSY); break;
	case 38: {
		static const uint32_t bad[] = { 0, 1, (1u << 24) + 1, UINT32_MAX };

		RA_REFUSED(t, evd_ring_create("r", bad[ra_rand(t, 4)], test_nop, NULL, &o), -EINVAL);
		CHECK(o == NULL);
		break;
	}
	case 39:
		RA_REFUSED(t, evd_ring_create("r", 8, NULL, NULL, &o), -EINVAL);
		RA_REFUSED(t, evd_ring_create("r", 8, test_nop, NULL, NULL), -EINVAL);
		RA_REFUSED(t, evd_ring_create(NAME_32, 8, test_nop, NULL, &o), -EINVAL);
		CHECK(o == NULL);
		break;
	case 40:
		RA_REFUSED(t, evd_ring_post(NULL, &ev), -EINVAL);
		RA_REFUSED(t, evd_ring_post(sr, NULL), -EINVAL);
		RA_REFUSED(t, evd_ring_post(r->sf, &ev), -EINVAL); /* not a ring */
		break;
	case 41:
		RA_REFUSED(t, evd_ring_post_burst(sr, &ev, 0), -EINVAL);
		RA_REFUSED(t, evd_ring_post_burst(NULL, &ev, 1), -EINVAL);
		RA_REFUSED(t, evd_ring_post_burst(r->sf, &ev, 1), -EINVAL);
		break;
	case 42:
		CHECK_EQ(evd_ring_count(NULL), 0);
		CHECK_EQ(evd_ring_count(r->sf), 0);
		RA_REFUSED(t, evd_ring_discard(NULL), -EINVAL);
		RA_REFUSED(t, evd_ring_discard(r->sf), -EINVAL);
		RA_REFUSED(t, evd_ring_discard(sr), -EBUSY); /* on a loop */
		break;
	case 43: {
		static const uint32_t bad[] = { EPOLLET, EPOLLONESHOT, EPOLLEXCLUSIVE,
						EPOLLIN | EPOLLET };

		RA_REFUSED(t, evd_fd_create("f", -1, 0, test_nop, NULL, &o), -EINVAL);
		CHECK(o == NULL);
		RA_REFUSED(t, evd_fd_create("f", 0, bad[ra_rand(t, 4)], test_nop, NULL, &o), -EINVAL);
		RA_REFUSED(t, evd_fd_create("f", 0, 0, NULL, NULL, &o), -EINVAL);
		RA_REFUSED(t, evd_fd_create("f", 0, 0, test_nop, NULL, NULL), -EINVAL);
		RA_REFUSED(t, evd_fd_create(NAME_32, 0, 0, test_nop, NULL, &o), -EINVAL);
		CHECK(o == NULL);
		break;
	}
	case 44:
		CHECK(evd_fd_revents(NULL) == 0);
		CHECK(evd_fd_revents(sr) == 0);
		CHECK(evd_source_name(NULL) == NULL);
		CHECK(evd_loop_name(NULL) == NULL);
		CHECK(evd_loop_policy_name(NULL) == NULL);
		break;
	case 45:
		RA_REFUSED(t, evd_timer_start(NULL, 0, 0, ra_timer_cb, NULL, &tm), -EINVAL);
		CHECK(tm == NULL);
		tm = (void *)&tm;
		RA_REFUSED(t, evd_timer_start(g, 0, 0, NULL, NULL, &tm), -EINVAL);
		CHECK(tm == NULL);
		break;
	case 46:
		RA_REFUSED(t, evd_timer_cancel(NULL, tm), -EINVAL);
		RA_REFUSED(t, evd_timer_cancel(g, NULL), -EINVAL);
		break;
	default: { /* a policy made outside a loop */
		struct evd_policy *p = (void *)&p;

		RA_REFUSED(t, evd_policy_create("nosuch", &p), -ENOENT);
		CHECK(p == NULL);
		RA_REFUSED(t, evd_policy_create("intr:", &p), -EINVAL);
		RA_REFUSED(t, evd_policy_create("poll", NULL), -EINVAL);
		CHECK_EQ(evd_policy_create("poll", &p), 0);
		CHECK_EQ(strcmp(evd_policy_name(p), "poll"), 0);
		evd_policy_destroy(p);
		break;
	}
	}
	t->calls++;
}

/* Valid calls any thread may make on the shared objects. */
static void
ra_valid(struct ra_thr *t)
{
	struct ra *r = t->r;
	uint32_t k = (uint32_t)ra_rand(t, RA_SHARED);
	struct ra_shared_ring *sr = &r->sr[k];
	struct evd_loop_stats st;
	struct evd_source_stats ss;
	int rc;

	switch (ra_rand(t, 12)) {
	case 0: case 1: case 2: case 3: { /* a post, or a burst */
		struct evd_event ev[16];
		unsigned int n = ra_rand(t, 2) ? 1 : 1 + (unsigned int)ra_rand(t, 16);

		for (unsigned int i = 0; i < n; i++)
			ev[i] = (struct evd_event){ .type = t->id, .u64 = t->sr_seq[k] + i };
		rc = n == 1 && ra_rand(t, 2) ? evd_ring_post(sr->src, ev)
					       : evd_ring_post_burst(sr->src, ev, n);
		if (rc == -ENOBUFS) {
			t->refused++;
			break;
		}
		CHECK(rc >= 0 && rc <= (int)n);
		t->sr_seq[k] += n == 1 ? 1 : (uint64_t)rc;
		break;
	}
	case 4: case 5: /* a step of a loop that others step too */
		rc = evd_loop_step(r->g[1 + ra_rand(t, 2)]);
		CHECK(rc >= 0 || rc == -EBUSY || rc == -ESHUTDOWN);
		break;
	case 6:
		CHECK_EQ(evd_loop_stats_get(r->g[k], &st), 0);
		CHECK_EQ(st.lost_wakeups, 0);
		CHECK_EQ(evd_source_stats_get(sr->src, &ss), 0);
		/* resets on other threads meanwhile: never wrapped below 0 */
		CHECK(st.polls < (1ull << 62) && st.events < (1ull << 62));
		CHECK(ss.polls < (1ull << 62) && ss.events < (1ull << 62));
		(void)evd_ring_count(sr->src); /* approximate while others post and step */
		break;
	case 7:
		CHECK_EQ(strcmp(evd_source_name(sr->src), "shared"), 0);
		CHECK_EQ(strcmp(evd_loop_name(r->g[k]), k == 0 ? "g0" : k == 1 ? "g1" : "g2"), 0);
		CHECK(evd_loop_policy_name(r->g[k]) != NULL);
		break;
	case 8: { /* g[0]'s trace (turned on before it ran, never changed) */
		struct evd_mode_event ev[16];
		uint64_t now = evd_loop_now_ns(r->g[0]);

		CHECK(now >= t->last_now);
		t->last_now = now;
		rc = evd_loop_trace_read(r->g[0], &t->g0_cursor, ev, 16, &t->g0_lost);
		CHECK(rc >= 0 && rc <= 16);
		break;
	}
	case 9: { /* the fd source's eventfd */
		uint64_t v = 1;

		CHECK_EQ(write(r->sf_efd, &v, sizeof(v)), (ssize_t)sizeof(v));
		t->sf_written++;
		break;
	}
	case 10: /* a stop (rarely), or a resume, of a stepped loop */
		if (ra_rand(t, 4) == 0)
			CHECK_EQ(evd_loop_stop(r->g[1 + ra_rand(t, 2)]), 0);
		else
			RA_REFUSED2(t, evd_loop_resume(r->g[1 + ra_rand(t, 2)]), 0, -EBUSY);
		break;
	default: { /* resets: of any loop and ring, several threads at once */
		uint64_t k = ra_rand(t, RA_SHARED);

		CHECK_EQ(evd_loop_stats_reset(r->g[k]), 0);
		CHECK_EQ(evd_source_stats_reset(r->sr[k].src), 0);
		break;
	}
	}
	t->calls++;
}

/* Wait (stepping the stepped loops, which run the calls queued on them,
 * and resuming them if another thread stopped them) until no call of this
 * thread is under way. */
static void
ra_settle(struct ra_thr *t)
{
	for (uint64_t i = 0;; i++) {
		bool busy = false;

		for (uint32_t j = 0; j < RA_SRC; j++)
			busy |= __atomic_load_n(&t->src[j].pending, __ATOMIC_ACQUIRE) != 0;
		for (uint32_t j = 0; j < RA_TMR; j++)
			busy |= __atomic_load_n(&t->tmr[j].pending, __ATOMIC_ACQUIRE) != 0;
		if (!busy)
			return;
		CHECK(i < RA_BOUND);
		for (uint32_t k = 1; k < RA_SHARED; k++) {
			int rc = evd_loop_resume(t->r->g[k]);

			CHECK(rc == 0 || rc == -EBUSY);
			rc = evd_loop_step(t->r->g[k]);
			CHECK(rc >= 0 || rc == -EBUSY || rc == -ESHUTDOWN);
		}
		if (t->priv != NULL) {
			int rc;

			CHECK_EQ(evd_loop_resume(t->priv), 0);
			rc = evd_loop_step(t->priv);
			CHECK(rc >= 0 || rc == -ESHUTDOWN);
		}
		sched_yield();
	}
}

static void *
ra_thread(void *arg)
{
	struct ra_thr *t = arg;

	while (t->calls < t->target) {
		uint64_t r = ra_rand(t, 100);

		if (r < 30)
			ra_valid(t);
		else if (r < 45)
			ra_src_op(t, &t->src[ra_rand(t, RA_SRC)]);
		else if (r < 55)
			ra_tmr_op(t, &t->tmr[ra_rand(t, RA_TMR)]);
		else if (r < 62)
			ra_priv_op(t);
		else
			ra_invalid(t);
	}
	/* Take down what it owns: the calls under way first. */
	ra_settle(t);
	for (uint32_t j = 0; j < RA_TMR; j++)
		if (t->tmr[j].t != NULL)
			ra_tmr_move(t, &t->tmr[j], RC_TCANCEL, t->tmr[j].on);
	for (uint32_t j = 0; j < RA_SRC; j++)
		if (t->src[j].src != NULL && t->src[j].on != NULL)
			ra_src_move(t, &t->src[j], RC_REMOVE, t->src[j].on);
	ra_settle(t);
	for (uint32_t j = 0; j < RA_SRC; j++)
		if (t->src[j].src != NULL)
			ra_src_destroy(t, &t->src[j]);
	if (t->priv != NULL)
		ra_priv_destroy(t);
	return NULL;
}

static void
ra_started(struct evd_loop *loop, void *arg)
{
	(void)loop;
	CHECK_EQ(sem_post(&((struct ra *)arg)->started), 0);
}

static void *
ra_run_g0(void *arg)
{
	struct ra *r = arg;

	r->run_rc = evd_loop_run(r->g[0]);
	return NULL;
}

static void
test_random_api(void)
{
	static const char *const names[RA_SHARED] = { "g0", "g1", "g2" };
	static const char *const policies[RA_SHARED] = { "adaptive:spin_max_us=50", "poll", "intr" };
	static const uint32_t bounds[RA_SHARED] = { 1000, 0, 100 };
	struct ra *r = calloc(1, sizeof(*r));
	uint64_t total = scaled(1000000, 20000), calls = 0, refused = 0, made = 0, sf_written = 0;
	uint64_t via = 0, self = 0;

	CHECK(r != NULL);
	for (uint32_t k = 0; k < RA_SHARED; k++) {
		struct evd_loop_conf conf = { .name = names[k], .policy = policies[k],
					      .max_sleep_us = bounds[k] };

		CHECK_EQ(evd_loop_create(&conf, &r->g[k]), 0);
		CHECK_EQ(evd_ring_create("shared", 256, ra_sr_consume, &r->sr[k], &r->sr[k].src), 0);
		CHECK_EQ(evd_loop_add(r->g[k], r->sr[k].src), 0);
	}
	r->sf_efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	CHECK(r->sf_efd >= 0);
	CHECK_EQ(evd_fd_create("shared-fd", r->sf_efd, 0, ra_sf_ready, r, &r->sf), 0);
	CHECK_EQ(evd_loop_add(r->g[0], r->sf), 0);
	CHECK_EQ(evd_loop_trace_enable(r->g[0], 1024), 0);
	CHECK_EQ(sem_init(&r->started, 0, 0), 0);
	CHECK_EQ(pthread_create(&r->runner, NULL, ra_run_g0, r), 0);
	/* g[0] runs once its first call ran */
	CHECK_EQ(evd_loop_call(r->g[0], ra_started, r), 0);
	test_wait_sem(&r->started);
	for (uint32_t i = 0; i < RA_THREADS; i++) {
		struct ra_thr *t = &r->thr[i];

		t->r = r;
		t->id = i;
		t->rnd = 0xd6e8feb86659fd93ull * (i + 1) + opt_seed;
		t->target = total / RA_THREADS;
		for (uint32_t j = 0; j < RA_SRC; j++) {
			t->src[j].owner = t;
			t->src[j].ring = j + 1 < RA_SRC;
		}
		for (uint32_t j = 0; j < RA_TMR; j++)
			t->tmr[j].owner = t;
		CHECK_EQ(pthread_create(&t->th, NULL, ra_thread, t), 0);
	}
	for (uint32_t i = 0; i < RA_THREADS; i++) {
		pthread_join(r->thr[i].th, NULL);
		calls += r->thr[i].calls;
		refused += r->thr[i].refused;
		made += r->thr[i].priv_made;
		via += r->thr[i].via_call;
		self += r->thr[i].self_removed;
		sf_written += r->thr[i].sf_written;
	}
	CHECK_EQ(evd_loop_stop(r->g[0]), 0);
	pthread_join(r->runner, NULL);
	CHECK_EQ(r->run_rc, 0);

	/* what the shared rings still hold, each loop delivers now */
	for (uint32_t k = 0; k < RA_SHARED; k++) {
		struct ra_shared_ring *sr = &r->sr[k];
		struct evd_loop_stats st;
		uint64_t posted = 0;

		CHECK_EQ(evd_loop_resume(r->g[k]), 0);
		for (uint64_t i = 0; evd_ring_count(sr->src) > 0; i++) {
			CHECK(i < RA_BOUND);
			CHECK(evd_loop_step(r->g[k]) >= 0);
		}
		CHECK_EQ(sr->bad, 0);
		for (uint32_t i = 0; i < RA_THREADS; i++) {
			CHECK_EQ(sr->next_seq[i], r->thr[i].sr_seq[k]);
			posted += r->thr[i].sr_seq[k];
		}
		CHECK_EQ(sr->delivered, posted);
		CHECK_EQ(evd_loop_stats_get(r->g[k], &st), 0);
		CHECK_EQ(st.lost_wakeups, 0);
		CHECK_EQ(evd_loop_remove(r->g[k], sr->src), 0);
		CHECK_EQ(evd_source_destroy(sr->src), 0);
	}
	{
		uint64_t v = 0;

		if (read(r->sf_efd, &v, sizeof(v)) != (ssize_t)sizeof(v))
			v = 0;
		CHECK_EQ(r->sf_consumed + v, sf_written);
	}
	CHECK_EQ(evd_loop_remove(r->g[0], r->sf), 0);
	CHECK_EQ(evd_source_destroy(r->sf), 0);
	CHECK_EQ(close(r->sf_efd), 0);
	for (uint32_t k = 0; k < RA_SHARED; k++)
		CHECK_EQ(evd_loop_destroy(r->g[k]), 0);
	CHECK_EQ(sem_destroy(&r->started), 0);
	printf("  %" PRIu64 " calls, %" PRIu64 " refused (errno checked); control calls through "
	       "evd_loop_call %" PRIu64 ", rings removed by their handler %" PRIu64 "; %" PRIu64
	       " loops of their own made; timers fired %" PRIu64 "\n",
	       calls, refused, via, self, made, r->timer_fires);
	CHECK(calls >= total / RA_THREADS * RA_THREADS);
	free(r);
}

/* ---- main ------------------------------------------------------------------ */

/* ---- stats-readers --------------------------------------------------------- */

struct sr {
	struct evd_loop *loop;
	struct evd_source *ring;
	struct evd_source *idle; /* a ring posted to once: its polls after that are empty */
	bool done;     /* atomic */
	uint64_t runs;  /* atomic: the runs that returned */
	uint64_t stops; /* atomic */
};

static void *
sr_runner(void *arg)
{
	struct sr *x = arg;

	while (!__atomic_load_n(&x->done, __ATOMIC_ACQUIRE)) {
		CHECK_EQ(evd_loop_run(x->loop), 0);
		__atomic_add_fetch(&x->runs, 1, __ATOMIC_RELEASE);
		/* CPU of the thread that is not the loop's: no read may count it */
		for (volatile int i = 0; i < 100000; i++)
			;
	}
	return NULL;
}

/* Posts to the ring while the loop runs, waits until it has drained it,
 * then stops it and lets it run again once the run returned: reads
 * overlap the runs' ends. (The wait: on two busy CPUs the runner may miss
 * whole rounds of posts and only meet runs that return at once.) */
static void *
sr_stopper(void *arg)
{
	struct sr *x = arg;
	const struct evd_event ev = { 0 };
	uint64_t posted = 0;

	while (!__atomic_load_n(&x->done, __ATOMIC_ACQUIRE)) {
		uint64_t runs = __atomic_load_n(&x->runs, __ATOMIC_ACQUIRE);
		struct evd_source_stats ss;
		struct evd_loop_stats ls;
		uint64_t empty;
		int rc;

		CHECK_EQ(evd_loop_stats_get(x->loop, &ls), 0);
		empty = ls.empty_polls;
		for (int k = 0; k < 2000; k++) {
			rc = evd_ring_post(x->ring, &ev);
			CHECK(rc == 0 || rc == -ENOBUFS);
			posted += rc == 0;
			for (volatile int i = 0; i < 200; i++)
				;
		}
		/* (the runner leaves once done is set, maybe before a run) */
		do {
			if (__atomic_load_n(&x->done, __ATOMIC_ACQUIRE))
				return NULL;
			sched_yield();
			CHECK_EQ(evd_source_stats_get(x->ring, &ss), 0);
			CHECK_EQ(evd_loop_stats_get(x->loop, &ls), 0);
		} while (ss.events < posted || ls.empty_polls == empty);
		CHECK_EQ(evd_loop_stop(x->loop), 0);
		while (__atomic_load_n(&x->runs, __ATOMIC_ACQUIRE) == runs) {
			if (__atomic_load_n(&x->done, __ATOMIC_ACQUIRE))
				return NULL;
			sched_yield();
		}
		/* (-EBUSY: the runner is in a run that returns at once) */
		while ((rc = evd_loop_resume(x->loop)) == -EBUSY)
			sched_yield();
		CHECK_EQ(rc, 0);
		__atomic_add_fetch(&x->stops, 1, __ATOMIC_RELEASE);
	}
	return NULL;
}

/* Every counter of @p now at least what @p was read before. */
#define SR_MONOTONIC(was, now, f, what)                                                      \
	do {                                                                                 \
		if ((now).f < (was).f) {                                                     \
			fprintf(stderr, "%s %s went back: %" PRIu64 " -> %" PRIu64 "\n", what, \
				#f, (uint64_t)(was).f, (uint64_t)(now).f);                   \
			CHECK((now).f >= (was).f);                                           \
		}                                                                            \
	} while (0)

/* Reads the counters @p reads times, and on until a few runs ended (a slow
 * start, under a sanitizer, may leave the reads none to overlap) or, if
 * @p reads is 0, until done is set. Returns the number of reads. */
static uint64_t
sr_reads(struct sr *x, uint64_t reads, struct evd_loop_stats *lb, struct evd_source_stats *sb)
{
	struct evd_loop_stats la = { 0 };
	struct evd_source_stats sa = { 0 }, idle;
	uint64_t i;

	for (i = 0; reads == 0 ? !__atomic_load_n(&x->done, __ATOMIC_ACQUIRE)
			       : i < reads || __atomic_load_n(&x->stops, __ATOMIC_ACQUIRE) < 4;
	     i++) {
		CHECK_EQ(evd_loop_stats_get(x->loop, lb), 0);
		CHECK_EQ(evd_source_stats_get(x->ring, sb), 0);
		CHECK_EQ(evd_source_stats_get(x->idle, &idle), 0);
		SR_MONOTONIC(la, *lb, cpu_ns, "loop");
		SR_MONOTONIC(la, *lb, polls, "loop");
		SR_MONOTONIC(la, *lb, empty_polls, "loop");
		SR_MONOTONIC(la, *lb, events, "loop");
		SR_MONOTONIC(sa, *sb, polls, "ring");
		SR_MONOTONIC(sa, *sb, empty_polls, "ring");
		SR_MONOTONIC(sa, *sb, events, "ring");
		CHECK(sb->empty_polls <= sb->polls);
		la = *lb;
		sa = *sb;
	}
	return i;
}

/* A second reader: what one reader's read leaves behind must not spoil
 * the other's. */
static void *
sr_reader(void *arg)
{
	struct evd_loop_stats lb;
	struct evd_source_stats sb;

	sr_reads(arg, 0, &lb, &sb);
	return NULL;
}

/* Resets the idle ring's counters and reads them, while the readers read
 * them too (their reads go ahead of this one's between its reset and its
 * read): a read since a reset holds no more empty polls than polls. */
static void *
sr_resetter(void *arg)
{
	struct sr *x = arg;
	struct evd_source_stats st;

	while (!__atomic_load_n(&x->done, __ATOMIC_ACQUIRE)) {
		CHECK_EQ(evd_source_stats_reset(x->idle), 0);
		CHECK_EQ(evd_source_stats_get(x->idle, &st), 0);
		if (st.empty_polls > st.polls) {
			fprintf(stderr, "idle ring since a reset: %" PRIu64 " empty polls of %" PRIu64
				"\n", st.empty_polls, st.polls);
			CHECK(st.empty_polls <= st.polls);
		}
	}
	return NULL;
}

static void
test_stats_readers(void)
{
	struct evd_loop_conf conf = { .name = "sr", .policy = "poll" };
	struct evd_loop_stats lb;
	struct evd_source_stats sb;
	struct sr x = { 0 };
	pthread_t run, stop, read, reset;
	uint64_t i;

	CHECK_EQ(evd_loop_create(&conf, &x.loop), 0);
	CHECK_EQ(evd_ring_create("sr", 1024, test_nop, NULL, &x.ring), 0);
	CHECK_EQ(evd_ring_create("sr-idle", 64, test_nop, NULL, &x.idle), 0);
	/* (a busy poll: else its empty polls are all its polls, and a read
	 * held under its polls is right by chance) */
	CHECK_EQ(evd_ring_post(x.idle, &(const struct evd_event){ 0 }), 0);
	CHECK_EQ(evd_loop_add(x.loop, x.ring), 0);
	CHECK_EQ(evd_loop_add(x.loop, x.idle), 0);
	CHECK_EQ(pthread_create(&run, NULL, sr_runner, &x), 0);
	CHECK_EQ(pthread_create(&stop, NULL, sr_stopper, &x), 0);
	CHECK_EQ(pthread_create(&read, NULL, sr_reader, &x), 0);
	CHECK_EQ(pthread_create(&reset, NULL, sr_resetter, &x), 0);
	i = sr_reads(&x, scaled(1000000, 20000), &lb, &sb);
	__atomic_store_n(&x.done, true, __ATOMIC_RELEASE);
	CHECK_EQ(pthread_join(reset, NULL), 0);
	CHECK_EQ(pthread_join(read, NULL), 0);
	CHECK_EQ(pthread_join(stop, NULL), 0);
	CHECK_EQ(evd_loop_stop(x.loop), 0);
	CHECK_EQ(pthread_join(run, NULL), 0);
	printf("# %" PRIu64 " reads, %" PRIu64 " stops; ring polls %" PRIu64 ", empty %" PRIu64
	       ", events %" PRIu64 "; loop CPU %" PRIu64 " ns\n", i, x.stops, sb.polls,
	       sb.empty_polls, sb.events, lb.cpu_ns);
	CHECK(sb.events > 0 && sb.empty_polls > 0);
	CHECK_EQ(evd_loop_remove(x.loop, x.ring), 0);
	CHECK_EQ(evd_loop_remove(x.loop, x.idle), 0);
	CHECK(evd_ring_discard(x.ring) >= 0);
	CHECK_EQ(evd_source_destroy(x.ring), 0);
	CHECK_EQ(evd_source_destroy(x.idle), 0);
	CHECK_EQ(evd_loop_destroy(x.loop), 0);
}

int
main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "events", required_argument, NULL, 'n' },
		{ "seed", required_argument, NULL, 's' },
		{ NULL, 0, NULL, 0 },
	};
	const char *name = NULL;
	int o;

	while ((o = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (o) {
		case 'n': opt_events = strtoull(optarg, NULL, 10); break;
		case 's': opt_seed = strtoull(optarg, NULL, 10); break;
		default: return 2;
		}
	}
	if (optind < argc)
		name = argv[optind];
	if (name != NULL && strcmp(name, "held-producer") != 0 &&
	    strcmp(name, "cross-thread-churn") != 0 && strcmp(name, "random-api") != 0 &&
	    strcmp(name, "stats-readers") != 0) {
		fprintf(stderr, "usage: %s [held-producer|cross-thread-churn|random-api|stats-readers] "
			"[--events N] [--seed S]\n", argv[0]);
		return 2;
	}
	if (name == NULL || strcmp(name, "held-producer") == 0)
		TEST(test_held_producer);
	if (name == NULL || strcmp(name, "cross-thread-churn") == 0) {
		rte_log_set_global_level(RTE_LOG_CRIT); /* the refusals' lines, the discards' */
		TEST(test_cross_thread_churn);
		rte_log_set_global_level(RTE_LOG_DEBUG);
	}
	if (name == NULL || strcmp(name, "random-api") == 0) {
		rte_log_set_global_level(RTE_LOG_CRIT); /* the refusals' lines */
		TEST(test_random_api);
		rte_log_set_global_level(RTE_LOG_DEBUG);
	}
	if (name == NULL || strcmp(name, "stats-readers") == 0) {
		rte_log_set_global_level(RTE_LOG_CRIT); /* the resumes refused while a run ends */
		TEST(test_stats_readers);
		rte_log_set_global_level(RTE_LOG_DEBUG);
	}
	return 0;
}
