/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The loop and the arm protocol.
 *
 * evd_loop_step() is the whole protocol, in DESIGN.md's order:
 *   1. poll every source, dispatch what came;
 *   2. all empty: ask the policy (poll again, pause, or sleep);
 *   3. sleep: arm every armable source, then re-poll every source;
 *   4. still all empty: wait on epoll, bounded;
 *   5. wake: poll, ack every ready source exactly once, disarm.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include <rte_common.h>
#include <rte_cpuflags.h>
#include <rte_cycles.h>
#include <rte_pause.h>

#include "evd_private.h"

RTE_LOG_REGISTER(evd__logtype, lib.evd, INFO);

/* How long a device's notification may trail the completion it announces
 * (an interrupt on its way through the kernel) before the loop calls it
 * lost: judged at the end of a later wait, never by waiting for it. */
#define OWED_GRACE_NS 2000000ull
/* The epoll key of the loop's own eventfd (no source slot reaches it). */
#define WAKE_KEY UINT64_MAX
/* a source's same op failure is logged once in this long (source_error) */
#define ERR_LOG_QUIET_NS 1000000000ull
/* Busy rounds between two reads of the thread CPU clock. */
#define CPU_SAMPLE_ROUNDS 4096
#define MAX_BURST 256
#define LOOP_TIMER_SLACK_NS 1000ul /* evd_loop_run: the thread's timer slack while it runs */

static int hold_take(struct evd_loop *loop, int h);
static void hold_release(struct evd_loop *loop);

uint64_t
evd__monotonic_ns(void *arg)
{
	struct timespec ts;

	RTE_SET_USED(arg);
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The default clock where the TSC serves (tsc_rate): a TSC read and a
 * multiply, against clock_gettime's 26 ns on a KVM guest's kvm-clock (an
 * empty round of the ring: 12.8 ns against 35). A TSC a shade behind tsc0
 * (the loop created on one CPU, run on another) reads as ns0. */
static uint64_t
tsc_now_ns(void *arg)
{
	const struct evd__tsc_clock *c = arg;
	int64_t d = (int64_t)(rte_get_tsc_cycles() - c->tsc0);

	return c->ns0 + (d > 0 ? (uint64_t)((double)d * c->ns_per_tick) : 0);
}

#define TSC_SPAN_NS 5000000ull /* the rate is measured over this... */
#define TSC_PAIR_NS 500.0      /* ...between (TSC, CLOCK_MONOTONIC) pairs read this close */

/* A CLOCK_MONOTONIC read and the TSC at its middle: of 16 tries, the one
 * between the two closest TSC reads; its width in ticks. */
static uint64_t
tsc_pair(uint64_t *tsc, uint64_t *mono)
{
	uint64_t width = UINT64_MAX;

	*tsc = rte_rdtsc_precise();
	*mono = evd__monotonic_ns(NULL);
	for (int i = 0; i < 16; i++) {
		uint64_t a = rte_rdtsc_precise(), m = evd__monotonic_ns(NULL), b = rte_rdtsc_precise();

		if (b > a && b - a < width) {
			width = b - a;
			*tsc = a + width / 2;
			*mono = m;
		}
	}
	return width;
}

static pthread_mutex_t tsc_lock = PTHREAD_MUTEX_INITIALIZER;
static bool tsc_tried;         /* under tsc_lock: measured (or found unusable) after EAL */
static double tsc_ns_per_tick; /* 0: the loop clock is CLOCK_MONOTONIC */

/* On x86 the TSC serves only where the CPU says it is invariant (one rate
 * in every P- and C-state). Its rate is measured here, against
 * CLOCK_MONOTONIC over 5 ms, not taken from rte_get_tsc_hz(): on this
 * project's KVM guests EAL reports the nominal 2.1 GHz of a TSC that runs
 * at 2.096, and a loop clock on that ran 0.19 % slow (its timers late, its
 * idle times short). Each end is a pair read within 500 ns (an error of
 * 1e-4 at most); three tries, else CLOCK_MONOTONIC. */
static void
tsc_rate_measure(void)
{
	double hz = (double)rte_get_tsc_hz();

#ifdef RTE_ARCH_X86
	if (rte_cpu_get_flag_enabled(RTE_CPUFLAG_INVTSC) <= 0)
		return;
#endif
	for (int i = 0; i < 3; i++) {
		uint64_t t0, m0, t1, m1, w0 = tsc_pair(&t0, &m0), w1;
		struct timespec ts = { 0, (long)TSC_SPAN_NS };

		nanosleep(&ts, NULL);
		w1 = tsc_pair(&t1, &m1);
		if ((double)RTE_MAX(w0, w1) * 1e9 / hz <= TSC_PAIR_NS && t1 > t0 &&
		    m1 >= m0 + TSC_SPAN_NS) {
			tsc_ns_per_tick = (double)(m1 - m0) / (double)(t1 - t0);
			EVD_LOG(DEBUG, "loop clock: the TSC, %.0f Hz against CLOCK_MONOTONIC "
				"(rte_get_tsc_hz() %.0f)", 1e9 / tsc_ns_per_tick, hz);
			return;
		}
	}
	EVD_LOG(INFO, "loop clock: CLOCK_MONOTONIC (the TSC's rate could not be measured: "
		"CLOCK_MONOTONIC reads took over %.0f ns)", TSC_PAIR_NS);
}

/* The TSC's ns per tick, or 0: CLOCK_MONOTONIC. Measured once per process,
 * at the first loop created after rte_eal_init() (before it EAL knows no
 * TSC rate, rte_get_tsc_hz() is 0, and loops read CLOCK_MONOTONIC). */
static double
tsc_rate(void)
{
	double r;

	if (rte_get_tsc_hz() == 0)
		return 0;
	pthread_mutex_lock(&tsc_lock);
	if (!tsc_tried)
		tsc_rate_measure();
	tsc_tried = true;
	r = tsc_ns_per_tick;
	pthread_mutex_unlock(&tsc_lock);
	return r;
}

const char *
evd__clock_name(const struct evd_loop *loop)
{
	if (loop->clock.now_ns == tsc_now_ns)
		return "tsc";
	return loop->clock.now_ns == evd__monotonic_ns ? "monotonic" : "custom";
}

static uint64_t
thread_cpu_ns(void)
{
	struct timespec ts;

	if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) < 0)
		return 0;
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* ---- stats helpers ------------------------------------------------------ */

/* (Each thread has its own CPU clock: a step on another thread than the
 * last sample's starts afresh, since the difference of two threads' clocks
 * is no one's CPU time.) */
static void
cpu_sample(struct evd_loop *loop)
{
	uint64_t t = thread_cpu_ns();
	pthread_t me = pthread_self();

	if (loop->cpu_last != 0 && pthread_equal(me, loop->cpu_thread) && t >= loop->cpu_last)
		EVD_STAT_ADD(loop->stats.cpu_ns, t - loop->cpu_last);
	loop->cpu_last = t;
	loop->cpu_thread = me;
}

/* Charge the time since the last mark to the current mode, then switch. */
static void
set_mode(struct evd_loop *loop, uint32_t mode, uint64_t now)
{
	if (now > loop->mode_mark_ns)
		EVD_STAT_ADD(loop->stats.mode_ns[loop->mode], now - loop->mode_mark_ns);
	loop->mode_mark_ns = now;
	if (mode != loop->mode) {
		EVD_STAT_ADD(loop->stats.mode_switches, 1);
		__atomic_store_n(&loop->stats.mode, mode, __ATOMIC_RELAXED);
		loop->mode = mode;
		if (loop->trace != NULL) {
			struct evd_mode_event *e = &loop->trace[loop->trace_head & loop->trace_mask];

			/* claim the slot before writing it: a reader a whole
			 * window behind is copying it (evd_loop_trace_read) */
			__atomic_store_n(&loop->trace_claim, loop->trace_head + 1, __ATOMIC_RELAXED);
			__atomic_thread_fence(__ATOMIC_RELEASE);
			__atomic_store_n(&e->t_ns, now, __ATOMIC_RELAXED);
			__atomic_store_n(&e->events, loop->stats.events, __ATOMIC_RELAXED);
			__atomic_store_n(&e->mode, mode, __ATOMIC_RELAXED);
			__atomic_store_n(&loop->trace_head, loop->trace_head + 1, __ATOMIC_RELEASE);
		}
	}
}

int
evd_loop_trace_enable(struct evd_loop *loop, uint32_t entries)
{
	struct evd_mode_event *ring = NULL;
	int rc;

	if (!evd__live_loop(loop, "evd_loop_trace_enable"))
		return -EINVAL;
	if (entries != 0 && (entries < 64 || entries > (1u << 24) || (entries & (entries - 1)) != 0))
		return EVD_ARG_ERR(-EINVAL, "evd_loop_trace_enable %s: entries %u not a power of two "
				   "in 64..16777216", loop->name, entries);
	rc = hold_take(loop, EVD__CONTROL);
	if (rc < 0)
		return EVD_ARG_ERR(rc, "evd_loop_trace_enable %s: the loop is running", loop->name);
	if (entries != 0) {
		ring = calloc(entries, sizeof(*ring));
		if (ring == NULL) {
			hold_release(loop);
			return EVD_ARG_ERR(-ENOMEM, "evd_loop_trace_enable %s: no memory", loop->name);
		}
	}
	free(loop->trace);
	loop->trace = ring;
	loop->trace_mask = entries ? entries - 1 : 0;
	__atomic_store_n(&loop->trace_head, 0, __ATOMIC_RELEASE);
	__atomic_store_n(&loop->trace_claim, 0, __ATOMIC_RELEASE);
	hold_release(loop);
	return 0;
}

int
evd_loop_trace_read(struct evd_loop *loop, uint64_t *cursor, struct evd_mode_event *out,
		    unsigned int max, uint64_t *lost)
{
	uint64_t head, size, from, n, head2;

	if (!evd__live_loop(loop, "evd_loop_trace_read"))
		return -EINVAL;
	if (cursor == NULL || (out == NULL && max > 0))
		return EVD_ARG_ERR(-EINVAL, "evd_loop_trace_read %s: %s is NULL", loop->name,
				   cursor == NULL ? "cursor" : "out");
	if (loop->trace == NULL)
		return -ENODATA;
	size = (uint64_t)loop->trace_mask + 1;
	head = __atomic_load_n(&loop->trace_head, __ATOMIC_ACQUIRE);
	from = *cursor;
	if (from > head)
		from = head; /* a cursor from before a re-enable */
	if (head - from > size)
		from = head - size;
	n = RTE_MIN(head - from, (uint64_t)max);
	for (uint64_t i = 0; i < n; i++) {
		const struct evd_mode_event *e = &loop->trace[(from + i) & loop->trace_mask];

		out[i].t_ns = __atomic_load_n(&e->t_ns, __ATOMIC_RELAXED);
		out[i].events = __atomic_load_n(&e->events, __ATOMIC_RELAXED);
		out[i].mode = __atomic_load_n(&e->mode, __ATOMIC_RELAXED);
		out[i].reserved = 0;
	}
	/* entries the loop may have overwritten while we copied them are torn:
	 * drop them; a slot it has claimed counts, written or not (it was the
	 * oldest one: a reader a whole window behind copied it as it changed) */
	__atomic_thread_fence(__ATOMIC_ACQUIRE);
	head2 = __atomic_load_n(&loop->trace_claim, __ATOMIC_ACQUIRE);
	if (head2 > size && head2 - size > from) {
		uint64_t bad = RTE_MIN(head2 - size - from, n);

		memmove(out, out + bad, (size_t)(n - bad) * sizeof(*out));
		n -= bad;
		from += bad;
	}
	if (lost != NULL)
		*lost += from - RTE_MIN(*cursor, from);
	*cursor = from + n;
	return (int)n;
}

/* on_error runs as a handler does: evd_loop_remove() from it takes effect
 * when the round's poll ends (reap_removed), never at once. Errors come
 * from passes over the source table (arm, ack, disarm), which a removal
 * at once would reorder under them (the source moved into the freed slot
 * was skipped: left unarmed), and from detach() itself, whose ack error
 * would have detached the source a second time (the table corrupted). */
static void
source_error(struct evd_loop *loop, struct evd_source *s, const char *op, int err)
{
	bool was = loop->in_round;
	uint64_t now = evd__now(loop);

	EVD_STAT_ADD(s->stats.errors, 1);
	EVD_STAT_ADD(loop->stats.errors, 1);
	/* The same failure of a source again within a second is counted and
	 * given to on_error, not logged: a stopped port fails every arm, and
	 * the loop tries again at each bounded sleep, up to 1,000 a second. */
	if (s->err_op != NULL && strcmp(op, s->err_op) == 0 && err == s->err &&
	    now - s->err_logged_ns < ERR_LOG_QUIET_NS) {
		s->err_unlogged++;
	} else {
		if (s->err_unlogged > 0)
			EVD_LOG(ERR, "loop %s: source %s: %s failed %" PRIu32 " times more (%s), not "
				"logged", loop->name, s->name, s->err_op, s->err_unlogged,
				strerror(-s->err));
		EVD_LOG(ERR, "loop %s: source %s: %s failed: %s", loop->name, s->name, op, strerror(-err));
		s->err_op = op;
		s->err = err;
		s->err_unlogged = 0;
		s->err_logged_ns = now;
	}
	if (loop->on_error != NULL) {
		loop->in_round = true;
		loop->on_error(loop, s, err, loop->on_error_arg);
		loop->in_round = was;
	}
}

void
evd_source_report_error(struct evd_source *src, int err)
{
	if (src == NULL || src->loop == NULL)
		return;
	source_error(src->loop, src, "async event", err);
}

/* ---- who may call what ----------------------------------------------------- */

/* A loop the caller may use: not NULL, not destroyed (cheap to check, and a
 * use after evd_loop_destroy() most often still finds the poison). */
bool
evd__live_loop(const struct evd_loop *loop, const char *call)
{
	if (unlikely(loop == NULL)) {
		EVD_LOG(ERR, "%s: loop is NULL", call);
		return false;
	}
	if (unlikely(loop->magic != EVD__LOOP_MAGIC)) {
		EVD_LOG(ERR, "%s: %p is not a loop (destroyed?)", call, (const void *)loop);
		return false;
	}
	return true;
}

static bool
live_source(const struct evd_source *src, const char *call)
{
	if (unlikely(src == NULL)) {
		EVD_LOG(ERR, "%s: source is NULL", call);
		return false;
	}
	if (unlikely(src->magic != EVD_SOURCE_MAGIC)) {
		EVD_LOG(ERR, "%s: %p is not a source (destroyed?)", call, (const void *)src);
		return false;
	}
	return true;
}

static inline bool
on_owner_thread(const struct evd_loop *loop)
{
	return pthread_equal(__atomic_load_n(&loop->owner, __ATOMIC_RELAXED), pthread_self());
}

/* Take the loop for holder h (run, step or a control call); the owner is
 * cleared before the loop is given back (hold_release), so a thread never
 * mistakes another's hold for its own. -EBUSY if another thread runs it,
 * or this one already holds it. */
static int
hold_take(struct evd_loop *loop, int h)
{
	for (;;) {
		int cur = EVD__FREE;

		if (__atomic_compare_exchange_n(&loop->running, &cur, h, false, __ATOMIC_ACQ_REL,
						__ATOMIC_ACQUIRE)) {
			__atomic_store_n(&loop->owner, pthread_self(), __ATOMIC_RELAXED);
			return 0;
		}
		/* a control call on another thread holds it for a moment */
		if (cur != EVD__CONTROL || on_owner_thread(loop))
			return -EBUSY;
		sched_yield();
	}
}

static void
hold_release(struct evd_loop *loop)
{
	__atomic_store_n(&loop->owner, (pthread_t)0, __ATOMIC_RELAXED);
	__atomic_store_n(&loop->running, EVD__FREE, __ATOMIC_RELEASE);
}

/* The rule of the control calls (doc/guides/threads.md): on the thread that
 * holds the loop (its handlers and callbacks) they act at once; when no
 * thread holds it they take it for their length; from another thread
 * while it runs they are refused. Returns 1 if the call took the loop
 * (give it back with hold_release()), 0 on the loop's own thread, or
 * -EBUSY, logged with the call's name. */
int
evd__control_enter(struct evd_loop *loop, const char *call)
{
	int rc;

	if (__atomic_load_n(&loop->running, __ATOMIC_ACQUIRE) != EVD__FREE && on_owner_thread(loop))
		return 0;
	rc = hold_take(loop, EVD__CONTROL);
	if (rc == 0)
		return 1;
	EVD_LOG(ERR, "loop %s: %s on a thread that does not run the loop, while it runs: "
		"refused (evd_loop_call() runs it on the loop's thread)", loop->name, call);
	return rc;
}

void
evd__control_leave(struct evd_loop *loop, int held)
{
	if (held > 0)
		hold_release(loop);
}

/* Ring the loop's eventfd (a stop, or a call to run): the caller counts
 * itself in wakers first, so that evd_loop_destroy() waits for the write. */
static int
ring_wake(struct evd_loop *loop)
{
	uint64_t one = 1;

	if (write(loop->wake_fd, &one, sizeof(one)) < 0 && errno != EAGAIN)
		return -errno;
	return 0;
}

/* Run the calls queued by evd_loop_call(), oldest first; on the thread that
 * holds the loop, between two rounds. */
static void
run_calls(struct evd_loop *loop)
{
	struct evd__call *c = __atomic_exchange_n(&loop->calls, NULL, __ATOMIC_ACQUIRE), *fifo = NULL;

	while (c != NULL) { /* the stack is newest first */
		struct evd__call *next = c->next;

		c->next = fifo;
		fifo = c;
		c = next;
	}
	while (fifo != NULL) {
		struct evd__call *next = fifo->next;

		fifo->fn(loop, fifo->arg);
		free(fifo);
		fifo = next;
	}
}

int
evd_loop_call(struct evd_loop *loop, void (*fn)(struct evd_loop *loop, void *arg), void *arg)
{
	struct evd__call *c;
	int rc;

	if (!evd__live_loop(loop, "evd_loop_call"))
		return -EINVAL;
	if (fn == NULL)
		return EVD_ARG_ERR(-EINVAL, "evd_loop_call %s: fn is NULL", loop->name);
	c = malloc(sizeof(*c));
	if (c == NULL)
		return EVD_ARG_ERR(-ENOMEM, "evd_loop_call %s: no memory", loop->name);
	c->fn = fn;
	c->arg = arg;
	__atomic_fetch_add(&loop->wakers, 1, __ATOMIC_SEQ_CST);
	c->next = __atomic_load_n(&loop->calls, __ATOMIC_RELAXED);
	/* release: the loop that takes the stack sees the message written */
	while (!__atomic_compare_exchange_n(&loop->calls, &c->next, c, true, __ATOMIC_RELEASE,
					    __ATOMIC_RELAXED))
		;
	/* after the push: a loop that drained the eventfd before this write
	 * finds it readable at its next wait, and takes the call first */
	rc = ring_wake(loop);
	__atomic_fetch_sub(&loop->wakers, 1, __ATOMIC_RELEASE);
	if (rc < 0)
		EVD_LOG(ERR, "loop %s: evd_loop_call: wake eventfd: %s (the call runs at the "
			"loop's next round)", loop->name, strerror(-rc));
	return 0;
}

/* ---- creation ------------------------------------------------------------ */

int
evd_loop_create(const struct evd_loop_conf *conf, struct evd_loop **out)
{
	static const struct evd_loop_conf defaults;
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = WAKE_KEY };
	struct evd_loop *loop;
	int rc;

	if (out == NULL)
		return EVD_ARG_ERR(-EINVAL, "evd_loop_create: out is NULL");
	*out = NULL;
	if (conf == NULL)
		conf = &defaults;
	if (conf->name != NULL && strnlen(conf->name, EVD_NAME_MAX) >= EVD_NAME_MAX)
		return EVD_ARG_ERR(-EINVAL, "evd_loop_create: name longer than %d bytes",
				   EVD_NAME_MAX - 1);
	if (conf->burst > MAX_BURST)
		return EVD_ARG_ERR(-EINVAL, "evd_loop_create: burst %u exceeds %d", conf->burst,
				   MAX_BURST);
	if (conf->max_sources > EVD_MAX_SOURCES)
		return EVD_ARG_ERR(-EINVAL, "evd_loop_create: max_sources %u exceeds %u",
				   conf->max_sources, EVD_MAX_SOURCES);
	if (conf->clock != NULL && conf->clock->now_ns == NULL)
		return EVD_ARG_ERR(-EINVAL, "evd_loop_create: clock->now_ns is NULL");

	loop = calloc(1, sizeof(*loop));
	if (loop == NULL)
		return EVD_ARG_ERR(-ENOMEM, "evd_loop_create: no memory");
	loop->epfd = -1;
	loop->wake_fd = -1;
	loop->free_key = UINT32_MAX;
	snprintf(loop->name, sizeof(loop->name), "%s", conf->name ? conf->name : "evd");
	if (conf->clock != NULL) {
		loop->clock = *conf->clock;
	} else if ((loop->tsc.ns_per_tick = tsc_rate()) > 0) {
		tsc_pair(&loop->tsc.tsc0, &loop->tsc.ns0);
		loop->clock = (struct evd_clock){ .now_ns = tsc_now_ns, .arg = &loop->tsc };
	} else {
		loop->clock.now_ns = evd__monotonic_ns;
	}
	loop->max_sleep_ns = 1000ull * (conf->max_sleep_us ? conf->max_sleep_us
							     : EVD_DEFAULT_MAX_SLEEP_US);
	loop->max_sleep_given = conf->max_sleep_us != 0;
	loop->poll_only_bound_ns = 1000ull * (conf->poll_only_bound_us ?
					      conf->poll_only_bound_us :
					      EVD_DEFAULT_POLL_ONLY_BOUND_US);
	loop->burst = conf->burst ? conf->burst : 32;
	loop->max_src = conf->max_sources ? conf->max_sources : EVD_DEFAULT_MAX_SOURCES;
	loop->on_error = conf->on_error;
	loop->on_error_arg = conf->on_error_arg;
	loop->on_idle = conf->on_idle;
	loop->on_idle_arg = conf->on_idle_arg;

	rc = evd__policy_create(conf->policy ? conf->policy : "adaptive", &loop->policy);
	if (rc < 0)
		goto fail;

	loop->epfd = epoll_create1(EPOLL_CLOEXEC);
	loop->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (loop->epfd < 0 || loop->wake_fd < 0 ||
	    epoll_ctl(loop->epfd, EPOLL_CTL_ADD, loop->wake_fd, &ev) < 0) {
		rc = -errno;
		EVD_LOG(ERR, "evd_loop_create %s: epoll set or eventfd: %s", loop->name, strerror(-rc));
		goto fail;
	}
	loop->mode = EVD_MODE_POLL;
	loop->mode_mark_ns = evd__now(loop);
	loop->last_event_ns = loop->mode_mark_ns;
	loop->magic = EVD__LOOP_MAGIC;
	evd__registry_add(loop);
	EVD_LOG(DEBUG, "loop %s (telemetry id %u) created, policy %s, clock %s", loop->name,
		loop->id, loop->policy.ops->name, evd__clock_name(loop));
	*out = loop;
	return 0;
fail:
	if (loop->policy.ops != NULL)
		evd__policy_destroy(&loop->policy);
	if (loop->epfd >= 0)
		close(loop->epfd);
	if (loop->wake_fd >= 0)
		close(loop->wake_fd);
	free(loop);
	return rc;
}

int
evd_loop_destroy(struct evd_loop *loop)
{
	uint32_t n_src;
	int held;

	if (!evd__live_loop(loop, "evd_loop_destroy"))
		return -EINVAL;
	held = hold_take(loop, EVD__CONTROL);
	if (held < 0)
		return EVD_ARG_ERR(held, "evd_loop_destroy %s: the loop is running", loop->name);
	n_src = loop->n_src;
	if (n_src == 0) {
		/* an evd_loop_stop() or evd_loop_call() on another thread may
		 * still be ringing the doorbell: let it finish */
		while (__atomic_load_n(&loop->wakers, __ATOMIC_ACQUIRE) != 0)
			sched_yield();
		/* the calls still queued run here, so that what they hold is
		 * released; those they queue too */
		while (__atomic_load_n(&loop->calls, __ATOMIC_ACQUIRE) != NULL)
			run_calls(loop);
		n_src = loop->n_src; /* a call may have added one */
	}
	if (n_src > 0) {
		hold_release(loop);
		return EVD_ARG_ERR(-EBUSY, "evd_loop_destroy %s: %u sources still on it", loop->name,
				   n_src);
	}
	loop->magic = 0;
	evd__registry_remove(loop);
	evd__timers_free(&loop->timers);
	evd__policy_destroy(&loop->policy);
	close(loop->epfd);
	close(loop->wake_fd);
	free(loop->src);
	free(loop->keys);
	free(loop->fd_key);
	free(loop->trace);
	free(loop);
	return 0;
}

const char *
evd_loop_name(const struct evd_loop *loop)
{
	return loop ? loop->name : NULL;
}

const char *
evd_loop_policy_name(const struct evd_loop *loop)
{
	return loop ? loop->policy.ops->name : NULL;
}

uint64_t
evd_loop_now_ns(const struct evd_loop *loop)
{
	return evd__now(loop);
}

/* ---- sources -------------------------------------------------------------- */

int
evd_source_init(struct evd_source *src, const struct evd_source_ops *ops, const char *name,
		evd_handler_t handler, void *arg)
{
	if (src == NULL || ops == NULL || ops->poll == NULL)
		return EVD_ARG_ERR(-EINVAL, "evd_source_init %s: %s is NULL", name ? name : "",
				   src == NULL ? "src" : ops == NULL ? "ops" : "ops->poll");
	if (handler == NULL)
		return EVD_ARG_ERR(-EINVAL, "evd_source_init %s: handler is NULL", name ? name : "");
	if (name != NULL && strnlen(name, EVD_NAME_MAX) >= EVD_NAME_MAX)
		return EVD_ARG_ERR(-EINVAL, "evd_source_init: name %.*s... longer than %d bytes",
				   EVD_NAME_MAX - 1, name, EVD_NAME_MAX - 1);
	memset(src, 0, sizeof(*src));
	src->magic = EVD_SOURCE_MAGIC;
	src->ops = ops;
	src->handler = handler;
	src->handler_arg = arg;
	snprintf(src->name, sizeof(src->name), "%s", name ? name : ops->kind ? ops->kind : "source");
	src->notify_fd = -1;
	return 0;
}

const char *
evd_source_name(const struct evd_source *src)
{
	return src ? src->name : NULL;
}

int
evd_source_destroy(struct evd_source *src)
{
	const struct evd_source_ops *ops;
	unsigned int q;

	if (!live_source(src, "evd_source_destroy"))
		return -EINVAL;
	if (src->loop != NULL)
		return EVD_ARG_ERR(-EBUSY, "evd_source_destroy %s: still on loop %s", src->name,
				   src->loop->name);
	ops = src->ops;
	q = ops->queued != NULL ? ops->queued(src) : 0;
	if (q > 0)
		return EVD_ARG_ERR(-EBUSY, "evd_source_destroy %s: %u completions still queued "
				   "(poll them, or drop them: evd_ring_discard())", src->name, q);
	src->magic = 0;
	if (ops->close != NULL)
		ops->close(src);
	return 0;
}

/* The source's epoll key: its slot, and the slot's generation above it. */
static inline uint64_t
key_of(const struct evd_loop *loop, const struct evd_source *s)
{
	return (uint64_t)loop->keys[s->key].gen << 32 | s->key;
}

/* The source a ready key names, or NULL for an entry that outlived its
 * source. */
static inline struct evd_source *
key_source(const struct evd_loop *loop, uint64_t key)
{
	uint32_t slot = (uint32_t)key;

	if (slot >= loop->n_keys || loop->keys[slot].gen != (uint32_t)(key >> 32))
		return NULL;
	return loop->keys[slot].src;
}

static void
key_take(struct evd_loop *loop, struct evd_source *s)
{
	uint32_t k = loop->free_key;

	if (k != UINT32_MAX)
		loop->free_key = loop->keys[k].next_free;
	else
		k = loop->n_keys++; /* never past cap_src: a slot per source at most */
	loop->keys[k].src = s;
	s->key = k;
}

static void
key_give_back(struct evd_loop *loop, struct evd_source *s)
{
	struct evd__key_slot *k = &loop->keys[s->key];

	k->src = NULL;
	k->gen++; /* what epoll still holds under the old key names no one */
	k->next_free = loop->free_key;
	loop->free_key = s->key;
}

static int
watch(struct evd_loop *loop, int epfd, struct evd_source *s)
{
	struct epoll_event ev = {
		.events = s->epoll_events ? s->epoll_events : EPOLLIN,
		.data.u64 = key_of(loop, s),
	};

	return epoll_ctl(epfd, EPOLL_CTL_ADD, s->notify_fd, &ev) < 0 ? -errno : 0;
}

/* Which key slot watches fd number f (0: none), in the loop's fd table. */
static uint32_t *
fd_key_at(struct evd_loop *loop, int f)
{
	if ((uint32_t)f >= loop->n_fd_key) {
		uint32_t n = RTE_MAX((uint32_t)f + 1, loop->n_fd_key * 2);
		uint32_t *a = realloc(loop->fd_key, n * sizeof(*a));

		if (a == NULL)
			return NULL;
		memset(a + loop->n_fd_key, 0, (n - loop->n_fd_key) * sizeof(*a));
		loop->fd_key = a;
		loop->n_fd_key = n;
	}
	return &loop->fd_key[f];
}

/* A source whose fd was closed under it stops being polled (its fd number
 * may name another file now) and watched; it stays registered until the
 * application removes it. Logged once, here unless @p why is NULL (the
 * caller's line says it). */
static void
unwatch(struct evd_loop *loop, struct evd_source *s, const char *why)
{
	if (why != NULL)
		EVD_LOG(ERR, "loop %s: source %s: %s (fd %d closed while registered?): no longer "
			"polled nor watched; remove it", loop->name, s->name, why, s->notify_fd);
	if (s->has_fd && (uint32_t)s->notify_fd < loop->n_fd_key)
		loop->fd_key[s->notify_fd] = 0;
	s->failed = 1;
	s->has_fd = 0;
	s->notify_fd = -1;
	s->armed = EVD_ARM_NONE;
	s->owed_since_ns = 0;
}

static void epoll_rebuild(struct evd_loop *loop);

/* The source failed as unwatch() says; its entry, which EPOLL_CTL_DEL may
 * not reach, leaves with a rebuilt epoll set. */
static void
source_fail(struct evd_loop *loop, struct evd_source *s, const char *why)
{
	bool watched = s->has_fd;

	unwatch(loop, s, why);
	if (watched)
		epoll_rebuild(loop);
}

/* An entry EPOLL_CTL_DEL could not reach (its fd was closed while the
 * source was registered; a dup elsewhere keeps the file, and the entry
 * firing): replace the loop's epoll set by one with only the entries it
 * should have. A source whose fd is gone too is unwatched. */
static void
epoll_rebuild(struct evd_loop *loop)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = WAKE_KEY };
	int fd = epoll_create1(EPOLL_CLOEXEC);

	if (fd < 0 || epoll_ctl(fd, EPOLL_CTL_ADD, loop->wake_fd, &ev) < 0) {
		EVD_LOG(ERR, "loop %s: epoll set not rebuilt: %s", loop->name, strerror(errno));
		if (fd >= 0)
			close(fd);
		return;
	}
	for (uint32_t i = 0; i < loop->n_src; i++) {
		struct evd_source *s = loop->src[i];

		if (s->has_fd && watch(loop, fd, s) < 0)
			unwatch(loop, s, "its fd is gone");
	}
	/* dup3 closes the old set in the same step: its stale entry goes with it */
	if (dup3(fd, loop->epfd, O_CLOEXEC) < 0)
		EVD_LOG(ERR, "loop %s: epoll set not replaced: %s", loop->name, strerror(errno));
	close(fd);
}

int
evd_loop_add(struct evd_loop *loop, struct evd_source *src)
{
	int fd = -1, held, rc = 0;

	if (!evd__live_loop(loop, "evd_loop_add") || !live_source(src, "evd_loop_add"))
		return -EINVAL;
	if (src->ops == NULL || src->ops->poll == NULL || src->handler == NULL)
		return EVD_ARG_ERR(-EINVAL, "evd_loop_add %s: source %s without poll op or handler",
				   loop->name, src->name);
	if (src->loop != NULL)
		return EVD_ARG_ERR(-EINVAL, "evd_loop_add %s: source %s is already on loop %s",
				   loop->name, src->name, src->loop->name);
	held = evd__control_enter(loop, "evd_loop_add");
	if (held < 0)
		return held;
	if (loop->n_src >= loop->max_src) {
		rc = EVD_ARG_ERR(-ENOSPC, "evd_loop_add %s: source %s: the loop holds its "
				 "max_sources (%u) already", loop->name, src->name, loop->max_src);
		goto out;
	}
	if (src->ops->fd != NULL) {
		fd = src->ops->fd(src);
		if (fd < 0 && fd != -ENOTSUP) {
			EVD_LOG(ERR, "loop %s: source %s: fd op failed: %s", loop->name, src->name,
				strerror(-fd));
			rc = fd;
			goto out;
		}
	}
	if (loop->n_src == loop->cap_src) {
		uint32_t cap = loop->cap_src ? loop->cap_src * 2 : 8;
		struct evd_source **a;
		struct evd__key_slot *k = realloc(loop->keys, cap * sizeof(*k));

		if (k != NULL)
			loop->keys = k;
		evd__registry_lock();
		a = k != NULL ? realloc(loop->src, cap * sizeof(*a)) : NULL;
		if (a != NULL) {
			loop->src = a;
			loop->cap_src = cap;
		}
		evd__registry_unlock();
		if (a == NULL) {
			rc = EVD_ARG_ERR(-ENOMEM, "evd_loop_add %s: source %s: no memory for %u "
					 "sources", loop->name, src->name, cap);
			goto out;
		}
	}
	key_take(loop, src);
	if (fd >= 0) {
		uint32_t *owner = fd_key_at(loop, fd);

		src->notify_fd = fd;
		rc = owner == NULL ? -ENOMEM : watch(loop, loop->epfd, src);
		/* a source registered under this number whose file is not this
		 * one (epoll took both): its fd was closed, the number reused;
		 * the set is rebuilt without it, and this one goes in again */
		if (rc == 0 && *owner != 0) {
			source_fail(loop, loop->keys[*owner - 1].src, "its fd number now names "
				    "another file");
			rc = watch(loop, loop->epfd, src);
		}
		if (rc < 0) {
			EVD_LOG(ERR, "loop %s: source %s: %s %d: %s", loop->name, src->name,
				owner == NULL ? "the fd table, for fd" : "epoll_ctl(ADD) of fd", fd,
				strerror(-rc));
			key_give_back(loop, src);
			src->notify_fd = -1;
			goto out;
		}
		*owner = src->key + 1;
		src->has_fd = 1;
	} else {
		src->has_fd = 0;
		src->notify_fd = -1;
		loop->n_poll_only++;
	}
	src->armed = EVD_ARM_NONE;
	src->woken = 0;
	src->removing = 0;
	src->failed = 0;
	src->owed_since_ns = 0;
	src->index = loop->n_src;
	src->id = loop->next_src_id++;
	/* per-source counts start now: note_events keeps them from two sources
	 * on, so only a lone source's, which it told the policy as the loop's
	 * totals, needs a start (add stays O(1)) */
	if (loop->n_src == 1)
		loop->src[0]->events_at_note = loop->src[0]->stats.events;
	src->events_at_note = src->stats.events;
	src->loop = loop;
	evd__registry_lock();
	loop->src[loop->n_src++] = src;
	evd__registry_unlock();
	EVD_LOG(DEBUG, "loop %s: added %s source %s%s", loop->name, src->ops->kind ? src->ops->kind : "",
		src->name, fd < 0 ? " (poll-only)" : "");
out:
	evd__control_leave(loop, held);
	return rc;
}

static void
disarm(struct evd_source *s)
{
	if (!s->armed)
		return;
	s->armed = EVD_ARM_NONE;
	s->owed_since_ns = 0;
	if (s->ops->disarm != NULL) {
		int rc = s->ops->disarm(s);

		if (rc < 0 && rc != -ENOTSUP)
			source_error(s->loop, s, "disarm", rc);
	}
}

/* Whether a notification fd is readable now (never waits). */
static bool
fd_ready(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };

	return poll(&p, 1, 0) > 0 && (p.revents & POLLIN);
}

static void
ack_one(struct evd_loop *loop, struct evd_source *s)
{
	int rc = s->ops->ack != NULL ? s->ops->ack(s) : 0;

	if (rc < 0 && rc != -EAGAIN)
		source_error(loop, s, "ack", rc);
}

static void
detach(struct evd_loop *loop, struct evd_source *s)
{
	uint32_t i = s->index;

	/* A notification left unconsumed would be lost to the next owner, and
	 * for verbs it would make ibv_destroy_cq() wait forever. Disarm first:
	 * a source still armed after the check below (a ring, whose producers
	 * ring its doorbell while it is armed) could notify once more, and that
	 * notification would stay in the removed source. */
	disarm(s);
	if (s->has_fd) {
		if (s->ops->ack != NULL && fd_ready(s->notify_fd))
			ack_one(loop, s);
		loop->fd_key[s->notify_fd] = 0;
		if (epoll_ctl(loop->epfd, EPOLL_CTL_DEL, s->notify_fd, NULL) < 0) {
			EVD_LOG(WARNING, "loop %s: source %s: fd %d was closed while registered "
				"(EPOLL_CTL_DEL: %s)", loop->name, s->name, s->notify_fd,
				strerror(errno));
			s->has_fd = 0; /* out of the rebuilt set */
			epoll_rebuild(loop);
		}
	} else if (!s->failed) {
		loop->n_poll_only--;
	}
	key_give_back(loop, s);
	evd__registry_lock();
	loop->src[i] = loop->src[--loop->n_src];
	loop->src[i]->index = i;
	evd__registry_unlock();
	s->loop = NULL;
	s->removing = 0;
	s->failed = 0;
	s->woken = 0;
}

int
evd_loop_remove(struct evd_loop *loop, struct evd_source *src)
{
	int held;

	if (!evd__live_loop(loop, "evd_loop_remove") || !live_source(src, "evd_loop_remove"))
		return -EINVAL;
	if (src->loop != loop)
		return EVD_ARG_ERR(-EINVAL, "evd_loop_remove %s: source %s is not on it", loop->name,
				   src->name);
	held = evd__control_enter(loop, "evd_loop_remove");
	if (held < 0)
		return held;
	if (loop->in_round) {
		/* Called from a handler: the round is iterating the table. */
		src->removing = 1;
		loop->pending_removal = true;
	} else {
		detach(loop, src);
	}
	evd__control_leave(loop, held);
	return 0;
}

static void
reap_removed(struct evd_loop *loop)
{
	uint32_t i = 0;

	loop->pending_removal = false;
	while (i < loop->n_src) {
		if (loop->src[i]->removing)
			detach(loop, loop->src[i]); /* moves the last one into i */
		else
			i++;
	}
}

/* ---- the protocol's steps ----------------------------------------------- */

/* Step 1 (and 3, the re-poll): poll every source once. */
static uint32_t
poll_all(struct evd_loop *loop, bool repoll)
{
	uint32_t total = 0;

	loop->in_round = true;
	for (uint32_t i = 0; i < loop->n_src; i++) {
		struct evd_source *s = loop->src[i];
		int n;

		if (unlikely(s->removing | s->failed))
			continue;
		n = s->ops->poll(s, loop->burst);
		EVD_STAT_ADD(s->stats.polls, 1);
		if (likely(n == 0)) {
			EVD_STAT_ADD(s->stats.empty_polls, 1);
			continue;
		}
		if (unlikely(n < 0)) {
			/* an fd closed under it would fail every round: unwatched */
			source_error(loop, s, n == -EBADF ? "poll (fd closed while registered? no "
				     "longer polled nor watched: remove it)" : "poll", n);
			if (n == -EBADF)
				source_fail(loop, s, NULL);
			continue;
		}
		EVD_STAT_ADD(s->stats.events, n);
		if (repoll)
			EVD_STAT_ADD(s->stats.repoll_hits, 1);
		total += n;
	}
	loop->in_round = false;
	EVD_STAT_ADD(loop->stats.polls, loop->n_src);
	if (unlikely(loop->pending_removal))
		reap_removed(loop);
	return total;
}

/* Step 2 of the sleep path: arm. Returns false if a source could not be
 * armed: the poll-only bound then bounds the sleep.
 * *proven: every armed source's notification is one the loop can trust
 * (a level fd; a source that says when one is in flight, the ring): no
 * backstop timeout is needed for them. */
static bool
arm_all(struct evd_loop *loop, bool *proven)
{
	bool all = true;

	*proven = true;
	for (uint32_t i = 0; i < loop->n_src; i++) {
		struct evd_source *s = loop->src[i];
		int rc;

		if (s->has_fd && s->ops->arm != NULL && s->ops->notify_pending == NULL)
			*proven = false;
		if (!s->has_fd || s->armed)
			continue;
		if (s->ops->arm == NULL) {
			s->armed = EVD_ARM_LEVEL;
			continue;
		}
		rc = s->ops->arm(s);
		if (rc == 0) {
			s->armed = EVD_ARM_ONCE;
			EVD_STAT_ADD(s->stats.arms, 1);
			EVD_STAT_ADD(loop->stats.arms, 1);
		} else if (rc == -ENOTSUP) {
			s->armed = EVD_ARM_LEVEL; /* e.g. tap */
		} else {
			source_error(loop, s, "arm", rc);
			all = false;
		}
	}
	return all;
}

/* Leave interrupt mode; a source that owes a notification stays armed so
 * that it can still arrive (owed_judge). */
static void
disarm_all(struct evd_loop *loop)
{
	for (uint32_t i = 0; i < loop->n_src; i++)
		if (loop->src[i]->owed_since_ns == 0)
			disarm(loop->src[i]);
}

/* epoll_pwait2 failed with ENOSYS or EPERM once: the kernel predates 5.11,
 * or a seccomp profile refuses the call */
static bool no_epoll_pwait2;

/* Step 4: wait on epoll, at most timeout_ns; mark the sources whose fd is
 * ready. Returns the wake reason. A nap (nothing armed) counts as a nap, and
 * its timeout is its normal end, not a sleep timeout. */
static enum evd_wake_reason collect_ready(struct evd_loop *loop, const struct timespec *tsp,
					 bool nap);

static enum evd_wake_reason
wait_ready(struct evd_loop *loop, uint64_t timeout_ns, bool nap)
{
	struct timespec ts = {
		.tv_sec = (time_t)(timeout_ns / 1000000000ull),
		.tv_nsec = (long)(timeout_ns % 1000000000ull),
	};

	if (nap)
		EVD_STAT_ADD(loop->stats.naps, 1);
	else
		EVD_STAT_ADD(loop->stats.sleeps, 1);
	return collect_ready(loop, timeout_ns == UINT64_MAX ? NULL : &ts, nap); /* NULL: no timeout */
}

/* The wait itself (tsp NULL: none; zero: only look), and the marking of the
 * sources whose fd is ready. */
static enum evd_wake_reason
collect_ready(struct evd_loop *loop, const struct timespec *tsp, bool nap)
{
	struct epoll_event evs[64];
	enum evd_wake_reason why = EVD_WAKE_NOTIFY;
	int n;

	n = -1;
	errno = ENOSYS;
	if (!__atomic_load_n(&no_epoll_pwait2, __ATOMIC_RELAXED))
		n = epoll_pwait2(loop->epfd, evs, RTE_DIM(evs), tsp, NULL);
	if (n < 0 && (errno == ENOSYS || errno == EPERM)) {
		/* Kernels before 5.11 (ENOSYS), or a seccomp profile that does
		 * not know the call (EPERM, older Docker): wait on the epoll fd
		 * itself with ppoll's nanoseconds (epoll_wait's milliseconds
		 * would turn a nap into a busy return), then collect without
		 * waiting. */
		struct pollfd pfd = { .fd = loop->epfd, .events = POLLIN };

		__atomic_store_n(&no_epoll_pwait2, true, __ATOMIC_RELAXED);
		n = ppoll(&pfd, 1, tsp, NULL);
		if (n > 0)
			n = epoll_wait(loop->epfd, evs, RTE_DIM(evs), 0);
	}
	if (n == 0) {
		if (!nap)
			EVD_STAT_ADD(loop->stats.sleep_timeouts, 1);
		return EVD_WAKE_TIMEOUT;
	}
	EVD_STAT_ADD(loop->stats.wakeups, 1);
	if (n < 0) {
		/* EINTR: a signal woke us, nothing is ready: a spurious wakeup */
		if (errno != EINTR)
			EVD_LOG(ERR, "loop %s: wait: %s", loop->name, strerror(errno));
		EVD_STAT_ADD(loop->stats.spurious_wakeups, 1);
		return EVD_WAKE_NOTIFY;
	}
	for (int i = 0; i < n; i++) {
		struct evd_source *s;

		if (evs[i].data.u64 == WAKE_KEY) {
			uint64_t v;

			if (read(loop->wake_fd, &v, sizeof(v)) < 0 && errno != EAGAIN)
				EVD_LOG(ERR, "loop %s: wake eventfd: %s", loop->name, strerror(errno));
			if (__atomic_load_n(&loop->stop, __ATOMIC_ACQUIRE))
				why = EVD_WAKE_STOP;
			continue;
		}
		s = key_source(loop, evs[i].data.u64);
		if (unlikely(s == NULL)) {
			/* a stale entry: it would fire again */
			EVD_LOG(WARNING, "loop %s: an epoll entry names no source: set rebuilt",
				loop->name);
			epoll_rebuild(loop);
			continue;
		}
		s->woken = 1;
		EVD_STAT_ADD(s->stats.wakeups, 1);
	}
	return why;
}

/* Step 5: consume the notification of every source that woke the loop,
 * exactly once. Done after the post-wake poll, so that a wakeup reaches the
 * handlers one syscall sooner; still before any source is armed again. */
static void
ack_woken(struct evd_loop *loop)
{
	for (uint32_t i = 0; i < loop->n_src; i++) {
		struct evd_source *s = loop->src[i];
		int rc;

		if (!s->woken || s->ops->ack == NULL)
			continue;
		rc = s->ops->ack(s);
		if (rc < 0 && rc != -EAGAIN)
			source_error(loop, s, "ack", rc);
	}
}

/* After a wait (a sleep or a nap): the sources that notified and found
 * nothing were spurious (and the loop's wakeup, if nothing was found). */
static void
settle_woken(struct evd_loop *loop, enum evd_wake_reason why, uint32_t found)
{
	bool any_woken = false;

	for (uint32_t i = 0; i < loop->n_src; i++) {
		struct evd_source *s = loop->src[i];

		if (!s->woken)
			continue;
		any_woken = true;
		s->owed_since_ns = 0; /* a late notification came */
		if (s->stats.events == s->events_at_sleep)
			EVD_STAT_ADD(s->stats.spurious_wakeups, 1);
		s->woken = 0;
	}
	if (why == EVD_WAKE_NOTIFY && found == 0 && any_woken)
		EVD_STAT_ADD(loop->stats.spurious_wakeups, 1);
}

static void
count_lost_wakeup(struct evd_loop *loop, struct evd_source *s)
{
	EVD_STAT_ADD(s->stats.lost_wakeups, 1);
	EVD_STAT_ADD(loop->stats.lost_wakeups, 1);
	EVD_LOG(WARNING, "loop %s: source %s: lost wakeup (completions queued before the arm, "
		"no notification)", loop->name, s->name);
}

/* An armed source found completions after a timed-out sleep and its fd did
 * not wake the loop. Its notification may still be on its way: a ring says
 * so at once (a producer between publishing and ringing, however long it
 * is held: notify_pending); a device's gets OWED_GRACE_NS, judged at the
 * end of a later wait with the source left armed, never by waiting here.
 * Only a notification that will never come is a lost wakeup. */
static void
judge_silence(struct evd_loop *loop, struct evd_source *s, uint64_t now)
{
	/* before the fd: a producer done with its doorbell step has written
	 * it by the time notify_pending says so */
	bool pending = s->ops->notify_pending != NULL && s->ops->notify_pending(s);

	if (fd_ready(s->notify_fd))
		ack_one(loop, s);
	else if (s->ops->notify_pending == NULL)
		s->owed_since_ns = now != 0 ? now : 1;
	else if (!pending)
		count_lost_wakeup(loop, s);
}

/* A notification owed since an earlier wait: it came (the fd woke the loop:
 * settle_woken clears the debt; or it is ready now), or the grace is over
 * and it is lost. */
static void
owed_judge(struct evd_loop *loop, struct evd_source *s, uint64_t now)
{
	if (!s->woken && now - s->owed_since_ns >= OWED_GRACE_NS) {
		s->owed_since_ns = 0;
		if (fd_ready(s->notify_fd))
			ack_one(loop, s);
		else
			count_lost_wakeup(loop, s);
	}
}

/* After a sleep: judge the armed sources that hold completions after a
 * timeout with no notification seen, and the notifications still owed from
 * earlier waits; settle the woken ones; leave interrupt mode (disarm). */
static void
after_wake(struct evd_loop *loop, enum evd_wake_reason why, uint32_t found, uint64_t now)
{
	for (uint32_t i = 0; i < loop->n_src; i++) {
		struct evd_source *s = loop->src[i];

		if (s->owed_since_ns != 0)
			owed_judge(loop, s, now);
		else if (why == EVD_WAKE_TIMEOUT && !s->woken && s->armed == EVD_ARM_ONCE &&
			 s->stats.events != s->events_at_sleep)
			judge_silence(loop, s, now);
	}
	settle_woken(loop, why, found);
	disarm_all(loop);
}

/* The wait's timeout; UINT64_MAX: none. Without max_sleep_us an idle loop
 * whose notifications are all proven (see arm_all) has no reason to wake;
 * a device's interrupt keeps the default bound as a backstop. */
static uint64_t
sleep_bound(struct evd_loop *loop, uint64_t policy_ns, bool all_armed, bool proven, uint64_t now)
{
	uint64_t t = proven && !loop->max_sleep_given ? UINT64_MAX : loop->max_sleep_ns;
	uint64_t next = evd__timers_next(&loop->timers);

	if (policy_ns != 0 && policy_ns < t)
		t = policy_ns;
	if ((loop->n_poll_only > 0 || !all_armed) && loop->poll_only_bound_ns < t)
		t = loop->poll_only_bound_ns;
	if (next != UINT64_MAX)
		t = next > now ? RTE_MIN(t, next - now) : 0;
	return t;
}

static void
note_events(struct evd_loop *loop, uint64_t now, uint32_t n)
{
	EVD_STAT_ADD(loop->stats.events, n);
	loop->last_event_ns = now;
	loop->last_burst = n;
	loop->idle_rounds = 0;
	if (unlikely(loop->n_src > 1) && loop->policy.ops->on_source_events != NULL)
		for (uint32_t i = 0; i < loop->n_src; i++) {
			struct evd_source *s = loop->src[i];
			uint64_t e = s->stats.events;

			if (e != s->events_at_note) {
				loop->policy.ops->on_source_events(loop->policy.state, now, s->id,
								   (uint32_t)(e - s->events_at_note));
				s->events_at_note = e;
			}
		}
	if (loop->policy.ops->on_events != NULL)
		loop->policy.ops->on_events(loop->policy.state, now, n);
}

static void
pause_for(uint64_t ns)
{
	uint64_t end = evd__monotonic_ns(NULL) + ns;

	do {
		for (int i = 0; i < 8; i++)
			rte_pause();
	} while (evd__monotonic_ns(NULL) < end);
}

/* Back from a wait (a sleep, or a nap) that began at t0: tell the policy,
 * run due timers, poll (step 1 again; after a sleep with the sources still
 * armed, so that the lost-wakeup check sees any notification raised
 * meanwhile), ack what woke us (step 5), then settle the wake: after a
 * sleep the lost-wakeup check and the disarm (after_wake), after a nap
 * only the spurious count. Returns the completions found. */
static uint32_t
after_wait(struct evd_loop *loop, uint64_t t0, enum evd_wake_reason why, bool nap)
{
	uint64_t t1 = evd__now(loop);
	uint32_t n;

	set_mode(loop, EVD_MODE_POLL, t1);
	if (loop->policy.ops->on_wake != NULL)
		loop->policy.ops->on_wake(loop->policy.state, t1, t1 > t0 ? t1 - t0 : 0, why);
	evd__timers_run(loop, t1);
	n = poll_all(loop, false);
	/* after the poll: the CPU clock's read (a syscall on some hosts) would
	 * delay the handlers of what woke us */
	cpu_sample(loop);
	ack_woken(loop);
	if (nap)
		settle_woken(loop, why, n);
	else
		after_wake(loop, why, n, t1);
	if (n > 0)
		note_events(loop, t1, n);
	return n;
}

/* The sources' event counts as a wait begins (spurious and lost wakeups
 * are judged against them). */
static void
mark_wait(struct evd_loop *loop)
{
	for (uint32_t i = 0; i < loop->n_src; i++)
		loop->src[i]->events_at_sleep = loop->src[i]->stats.events;
}

/* Steps 2 and 3, from poll mode to armed: arm every source, then poll once
 * more. A completion that landed between the last empty poll and the arm
 * raises no notification on strict (IBTA, virtio) sources; sleeping without
 * this re-poll strands it until the timeout: the lost wakeup. Returns the
 * completions the re-poll found (disarmed again, in poll mode), 0 armed
 * (*all_armed and *proven for sleep_bound), or -EAGAIN: a source joined
 * after the arm pass (disarmed: start over). */
static int
arm_and_repoll(struct evd_loop *loop, uint64_t now, bool *all_armed, bool *proven)
{
	uint32_t n, added = loop->next_src_id; /* ids count the adds */
	uint64_t errors;

	set_mode(loop, EVD_MODE_SLEEP, now);
	cpu_sample(loop);
	mark_wait(loop);
	*all_armed = arm_all(loop, proven);
	errors = loop->stats.errors;
	n = poll_all(loop, true);
	/* a source whose re-poll failed was not checked: what landed before
	 * its arm may never notify, so the wait is bounded as for one that
	 * could not be armed */
	if (loop->stats.errors != errors)
		*all_armed = false;
	if (n == 0 && loop->next_src_id != added) {
		/* a source joined after the arm pass (on_error during the
		 * re-poll): it is not armed, and its notifications would not
		 * wake this wait. Start over: the next step polls it and arms
		 * it with the others. */
		disarm_all(loop);
		set_mode(loop, EVD_MODE_POLL, evd__now(loop));
		return -EAGAIN;
	}
	if (n > 0) {
		uint64_t t1;

		EVD_STAT_ADD(loop->stats.repoll_hits, 1);
		disarm_all(loop);
		t1 = evd__now(loop);
		set_mode(loop, EVD_MODE_POLL, t1);
		note_events(loop, t1, n);
		if (loop->policy.ops->on_wake != NULL)
			loop->policy.ops->on_wake(loop->policy.state, t1, 0, EVD_WAKE_REPOLL);
		return (int)n;
	}
	return 0;
}

/* Steps 2 to 5 once the policy said sleep. */
static int
sleep_protocol(struct evd_loop *loop, uint64_t policy_ns, uint64_t now)
{
	enum evd_wake_reason why;
	bool all_armed, proven;
	uint64_t t0;
	int rc = arm_and_repoll(loop, now, &all_armed, &proven);

	if (rc != 0)
		return rc > 0 ? rc : 0;
	t0 = evd__now(loop);
	if (__atomic_load_n(&loop->stop, __ATOMIC_ACQUIRE)) {
		disarm_all(loop);
		set_mode(loop, EVD_MODE_POLL, t0);
		return 0;
	}
	why = wait_ready(loop, sleep_bound(loop, policy_ns, all_armed, proven, t0), false);
	return (int)after_wait(loop, t0, why, false);
}

/* The policy said nap: wait ns (or less: a timer, the loop's bound) with
 * nothing armed, so completions gather unannounced (software interrupt
 * moderation), then poll them together. No arm, no re-poll, no lost-wakeup
 * check: nothing was promised. A level fd (always armed) or a stop can end
 * it early. */
static int
nap_protocol(struct evd_loop *loop, uint64_t ns, uint64_t now)
{
	enum evd_wake_reason why;

	set_mode(loop, EVD_MODE_SLEEP, now);
	cpu_sample(loop);
	if (__atomic_load_n(&loop->stop, __ATOMIC_ACQUIRE)) {
		set_mode(loop, EVD_MODE_POLL, now);
		return 0;
	}
	mark_wait(loop);
	why = wait_ready(loop, sleep_bound(loop, ns != 0 ? ns : 1000, true, true, now), true);
	return (int)after_wait(loop, now, why, true);
}

/* The end of a wait another event loop did on evd_loop_fd() after
 * evd_loop_arm(): what a sleep's wake does, the fd only looked at. */
static uint32_t
end_outside_wait(struct evd_loop *loop)
{
	static const struct timespec look = { 0, 0 };

	loop->armed_outside = false;
	return after_wait(loop, loop->mode_mark_ns, collect_ready(loop, &look, false), false);
}

/* What a round does before the policy: the calls queued, the end of a
 * wait done outside (the round is then that wake's: *polled false), the
 * timers due, step 1 (poll every source, dispatch), and on an empty round
 * its counters and on_idle. Returns the completions, or -ESHUTDOWN; *now
 * the round's time. */
static __rte_always_inline int
round_poll(struct evd_loop *loop, uint64_t *now, bool *polled)
{
	uint32_t n;

	*polled = false;
	if (unlikely(__atomic_load_n(&loop->stop, __ATOMIC_ACQUIRE)))
		return -ESHUTDOWN;
	if (unlikely(__atomic_load_n(&loop->calls, __ATOMIC_RELAXED) != NULL))
		run_calls(loop);
	if (unlikely(loop->armed_outside))
		return (int)end_outside_wait(loop);
	*polled = true;
	*now = evd__now(loop);
	if (loop->timers.n > 0 && evd__timers_next(&loop->timers) <= *now)
		evd__timers_run(loop, *now);

	n = poll_all(loop, false);
	if (n > 0) {
		if (unlikely(loop->mode != EVD_MODE_POLL))
			set_mode(loop, EVD_MODE_POLL, *now);
		note_events(loop, *now, n);
		return (int)n;
	}
	EVD_STAT_ADD(loop->stats.empty_polls, 1);
	loop->idle_rounds++;
	if (loop->on_idle != NULL) { /* before a sleep can happen: flush batches */
		loop->on_idle(loop, loop->on_idle_arg);
		*now = evd__now(loop); /* the flush's time is the round's, not the sleep's */
	}
	return 0;
}

/* The end of a round that stayed in poll mode: the time and CPU stats are
 * brought up to date every CPU_SAMPLE_ROUNDS. */
static inline void
round_end(struct evd_loop *loop)
{
	if (unlikely(++loop->rounds % CPU_SAMPLE_ROUNDS == 0)) {
		set_mode(loop, loop->mode, evd__now(loop));
		cpu_sample(loop);
	}
}

/* One step; the caller holds the loop (EVD__RUN or EVD__STEP). */
static int
loop_step(struct evd_loop *loop)
{
	struct evd_policy_input in;
	enum evd_action act;
	uint64_t now = 0, arg = 0; /* now: set by round_poll (gcc with ASan cannot tell) */
	bool polled;
	int n;

	/* 1. poll */
	n = round_poll(loop, &now, &polled);
	if (!polled)
		return n;
	if (n > 0)
		goto out;

	/* 2. decide */
	in.now_ns = now;
	in.idle_ns = now > loop->last_event_ns ? now - loop->last_event_ns : 0;
	in.idle_rounds = loop->idle_rounds;
	in.last_burst = loop->last_burst;
	in.n_sources = loop->n_src;
	in.n_poll_only = loop->n_poll_only;
	act = loop->policy.ops->decide(loop->policy.state, &in, &arg);
	switch (act) {
	case EVD_ACTION_SLEEP:
	case EVD_ACTION_NAP: {
		int rc = act == EVD_ACTION_SLEEP ? sleep_protocol(loop, arg, now)
						 : nap_protocol(loop, arg, now);

		/* removals asked for after the round's poll (an error in an arm,
		 * an ack, a disarm: these two paths only) take effect now */
		if (unlikely(loop->pending_removal))
			reap_removed(loop);
		return rc;
	}
	case EVD_ACTION_PAUSE:
		set_mode(loop, EVD_MODE_PAUSE, now);
		EVD_STAT_ADD(loop->stats.pauses, 1);
		pause_for(arg ? arg : 1000);
		break;
	case EVD_ACTION_POLL:
	default:
		if (unlikely(loop->mode != EVD_MODE_POLL))
			set_mode(loop, EVD_MODE_POLL, now);
		break;
	}
out:
	round_end(loop);
	return n;
}

int
evd_loop_step(struct evd_loop *loop)
{
	int rc;

	if (unlikely(!evd__live_loop(loop, "evd_loop_step")))
		return -EINVAL;
	/* one step at a time: not beside evd_loop_run() on another thread (two
	 * threads in one ring's consumer side), not from the step's own
	 * handlers or callbacks (a nested round) */
	rc = hold_take(loop, EVD__STEP);
	if (unlikely(rc < 0))
		return EVD_ARG_ERR(rc, "evd_loop_step %s: the loop is running, or this is a "
				   "step's own callback", loop->name);
	rc = loop_step(loop);
	hold_release(loop);
	return rc;
}

int
evd_loop_poll(struct evd_loop *loop, unsigned int budget)
{
	uint16_t burst;
	uint64_t now = 0; /* set by round_poll (gcc with ASan cannot tell) */
	bool polled;
	int rc;

	if (unlikely(!evd__live_loop(loop, "evd_loop_poll")))
		return -EINVAL;
	if (unlikely(budget > MAX_BURST))
		return EVD_ARG_ERR(-EINVAL, "evd_loop_poll %s: budget %u exceeds %d", loop->name,
				   budget, MAX_BURST);
	rc = hold_take(loop, EVD__STEP);
	if (unlikely(rc < 0))
		return EVD_ARG_ERR(rc, "evd_loop_poll %s: the loop is running, or this is a "
				   "step's own callback", loop->name);
	burst = loop->burst;
	if (budget != 0)
		loop->burst = (uint16_t)budget;
	rc = round_poll(loop, &now, &polled);
	loop->burst = burst;
	if (polled) {
		/* no policy: the round stays in poll mode, empty or not */
		if (unlikely(loop->mode != EVD_MODE_POLL))
			set_mode(loop, EVD_MODE_POLL, now);
		round_end(loop);
	}
	hold_release(loop);
	return rc;
}

int
evd_loop_fd(const struct evd_loop *loop)
{
	if (!evd__live_loop(loop, "evd_loop_fd"))
		return -EINVAL;
	return loop->epfd; /* dup3 keeps the number when the set is rebuilt */
}

int
evd_loop_arm(struct evd_loop *loop, uint64_t *timeout_ns)
{
	uint64_t now;
	int rc;

	if (!evd__live_loop(loop, "evd_loop_arm"))
		return -EINVAL;
	if (timeout_ns == NULL)
		return EVD_ARG_ERR(-EINVAL, "evd_loop_arm %s: timeout_ns is NULL", loop->name);
	rc = hold_take(loop, EVD__STEP);
	if (rc < 0)
		return EVD_ARG_ERR(rc, "evd_loop_arm %s: the loop is running, or this is a "
				   "round's own callback", loop->name);
	if (__atomic_load_n(&loop->stop, __ATOMIC_ACQUIRE)) {
		hold_release(loop);
		return -ESHUTDOWN;
	}
	now = evd__now(loop);
	if (!loop->armed_outside) {
		rc = arm_and_repoll(loop, now, &loop->armed_all, &loop->armed_proven);
		if (rc != 0) {
			hold_release(loop);
			return rc;
		}
		loop->armed_outside = true;
		EVD_STAT_ADD(loop->stats.sleeps, 1);
	}
	*timeout_ns = sleep_bound(loop, 0, loop->armed_all, loop->armed_proven, now);
	hold_release(loop);
	return 0;
}

int
evd_loop_run(struct evd_loop *loop)
{
	int rc, slack;

	if (!evd__live_loop(loop, "evd_loop_run"))
		return -EINVAL;
	rc = hold_take(loop, EVD__RUN);
	if (rc < 0)
		return EVD_ARG_ERR(rc, "evd_loop_run %s: the loop is already running", loop->name);
	loop->cpu_last = thread_cpu_ns();
	loop->cpu_thread = pthread_self();
	/* time between runs is nobody's: start the mode clock afresh */
	loop->mode_mark_ns = evd__now(loop);
	/* Timed waits (naps, pre-wake, timers, the sleep bound) end up to the
	 * thread's timer slack late: 50 us by default, as long as a nap. Run
	 * with 1 us, and give the thread its own back after. */
	slack = prctl(PR_GET_TIMERSLACK, 0, 0, 0, 0);
	if (slack > (int)LOOP_TIMER_SLACK_NS && prctl(PR_SET_TIMERSLACK, LOOP_TIMER_SLACK_NS, 0, 0, 0) < 0)
		slack = -1;
	do {
		rc = loop_step(loop);
	} while (rc >= 0);
	if (slack > (int)LOOP_TIMER_SLACK_NS)
		(void)prctl(PR_SET_TIMERSLACK, (unsigned long)slack, 0, 0, 0);
	set_mode(loop, EVD_MODE_POLL, evd__now(loop));
	cpu_sample(loop);
	loop->cpu_last = 0;
	hold_release(loop);
	return rc == -ESHUTDOWN ? 0 : rc;
}

int
evd_loop_stop(struct evd_loop *loop)
{
	int rc;

	/* no log line: this must stay async-signal-safe */
	if (loop == NULL || loop->magic != EVD__LOOP_MAGIC)
		return -EINVAL;
	/* Once the flag is set the loop may return and its owner destroy it,
	 * while this call still rings the doorbell: evd_loop_destroy() waits
	 * for the calls under way, counted here, to end (the decrement is the
	 * last access to the loop). */
	__atomic_fetch_add(&loop->wakers, 1, __ATOMIC_SEQ_CST);
	/* The flag first, then the doorbell: a loop about to sleep either
	 * sees the flag or finds the eventfd readable. */
	__atomic_store_n(&loop->stop, 1, __ATOMIC_RELEASE);
	rc = ring_wake(loop);
	__atomic_fetch_sub(&loop->wakers, 1, __ATOMIC_RELEASE);
	return rc;
}

int
evd_loop_resume(struct evd_loop *loop)
{
	uint64_t v;
	int rc;

	if (!evd__live_loop(loop, "evd_loop_resume"))
		return -EINVAL;
	rc = hold_take(loop, EVD__CONTROL);
	if (rc < 0)
		return EVD_ARG_ERR(rc, "evd_loop_resume %s: the loop is running", loop->name);
	__atomic_store_n(&loop->stop, 0, __ATOMIC_RELEASE);
	/* a call's doorbell read here is not lost: the next step runs the
	 * calls before it waits */
	while (read(loop->wake_fd, &v, sizeof(v)) > 0)
		;
	hold_release(loop);
	return 0;
}

/* ---- stats ----------------------------------------------------------------- */

#define LOAD(x) __atomic_load_n(&(x), __ATOMIC_RELAXED)

/* Stores of what is read, atomic too: a reset writes the baseline while
 * telemetry (another thread) may be reading it. */
#define PUT(x, v) __atomic_store_n(&(x), (v), __ATOMIC_RELAXED)

static void
loop_stats_read(const struct evd_loop_stats *s, struct evd_loop_stats *d)
{
	PUT(d->polls, LOAD(s->polls));
	PUT(d->empty_polls, LOAD(s->empty_polls));
	PUT(d->events, LOAD(s->events));
	PUT(d->arms, LOAD(s->arms));
	PUT(d->repoll_hits, LOAD(s->repoll_hits));
	PUT(d->sleeps, LOAD(s->sleeps));
	PUT(d->wakeups, LOAD(s->wakeups));
	PUT(d->spurious_wakeups, LOAD(s->spurious_wakeups));
	PUT(d->sleep_timeouts, LOAD(s->sleep_timeouts));
	PUT(d->lost_wakeups, LOAD(s->lost_wakeups));
	PUT(d->pauses, LOAD(s->pauses));
	PUT(d->naps, LOAD(s->naps));
	PUT(d->mode_switches, LOAD(s->mode_switches));
	PUT(d->timers_fired, LOAD(s->timers_fired));
	PUT(d->errors, LOAD(s->errors));
	for (int m = 0; m < EVD_MODE_COUNT; m++)
		PUT(d->mode_ns[m], LOAD(s->mode_ns[m]));
	PUT(d->cpu_ns, LOAD(s->cpu_ns));
	PUT(d->mode, LOAD(s->mode));
}

static void
source_stats_read(const struct evd_source_stats *s, struct evd_source_stats *d)
{
	PUT(d->polls, LOAD(s->polls));
	PUT(d->empty_polls, LOAD(s->empty_polls));
	PUT(d->events, LOAD(s->events));
	PUT(d->arms, LOAD(s->arms));
	PUT(d->repoll_hits, LOAD(s->repoll_hits));
	PUT(d->wakeups, LOAD(s->wakeups));
	PUT(d->spurious_wakeups, LOAD(s->spurious_wakeups));
	PUT(d->lost_wakeups, LOAD(s->lost_wakeups));
	PUT(d->errors, LOAD(s->errors));
	PUT(d->full, LOAD(s->full));
}

/* Less the baseline, never under 0: a reset that raced the read (telemetry
 * reads while the application may reset) cannot wrap a counter to ~2^64. */
static inline uint64_t
since(uint64_t cur, const uint64_t *base)
{
	uint64_t b = LOAD(*base);

	return cur >= b ? cur - b : 0;
}

#define SUB(f) d->f = since(d->f, &b->f)

int
evd_loop_stats_get(struct evd_loop *loop, struct evd_loop_stats *st)
{
	struct evd_loop_stats *d = st;
	const struct evd_loop_stats *b;

	if (!evd__live_loop(loop, "evd_loop_stats_get"))
		return -EINVAL;
	if (st == NULL)
		return EVD_ARG_ERR(-EINVAL, "evd_loop_stats_get %s: st is NULL", loop->name);
	loop_stats_read(&loop->stats, d);
	b = &loop->stats_base;
	SUB(polls); SUB(empty_polls); SUB(events); SUB(arms); SUB(repoll_hits); SUB(sleeps);
	SUB(wakeups); SUB(spurious_wakeups); SUB(sleep_timeouts); SUB(lost_wakeups); SUB(pauses);
	SUB(naps); SUB(mode_switches); SUB(timers_fired); SUB(errors); SUB(cpu_ns);
	for (int m = 0; m < EVD_MODE_COUNT; m++)
		d->mode_ns[m] = since(d->mode_ns[m], &b->mode_ns[m]);
	return 0;
}

int
evd_source_stats_get(struct evd_source *src, struct evd_source_stats *st)
{
	struct evd_source_stats *d = st;
	const struct evd_source_stats *b;

	if (!live_source(src, "evd_source_stats_get"))
		return -EINVAL;
	if (st == NULL)
		return EVD_ARG_ERR(-EINVAL, "evd_source_stats_get %s: st is NULL", src->name);
	source_stats_read(&src->stats, d);
	b = &src->stats_base;
	SUB(polls); SUB(empty_polls); SUB(events); SUB(arms); SUB(repoll_hits); SUB(wakeups);
	SUB(spurious_wakeups); SUB(lost_wakeups); SUB(errors); SUB(full);
	return 0;
}

int
evd_loop_stats_reset(struct evd_loop *loop)
{
	if (!evd__live_loop(loop, "evd_loop_stats_reset"))
		return -EINVAL;
	loop_stats_read(&loop->stats, &loop->stats_base);
	return 0;
}

int
evd_source_stats_reset(struct evd_source *src)
{
	if (!live_source(src, "evd_source_stats_reset"))
		return -EINVAL;
	source_stats_read(&src->stats, &src->stats_base);
	return 0;
}
