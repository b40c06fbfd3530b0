/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The loop and the arm protocol.
 *
 * evd_loop_step() is the whole protocol, in DESIGN.md's order:
 *   1. poll every source not armed, dispatch what came;
 *   2. all empty: ask the policy (poll again, pause, or sleep);
 *   3. sleep: arm every armable source not armed, then re-poll those;
 *   4. still all empty: wait on epoll (the bell's fd among them), bounded;
 *   5. wake: the notified sources' arms are spent: poll them from now on,
 *      ack each exactly once.
 * A source stays armed until its notification comes, across rounds and
 * sleeps, so a round and a wake cost what the sources not armed cost, not
 * what the loop holds; a busy round looks at the bell (a load) and, every
 * LOOK_ROUNDS, at the armed fds (one epoll_wait without waiting).
 */
/* rte_power_pause and the CPU's intrinsics are experimental in DPDK 22.11:
 * the pause uses them as rte_power_pmd_mgmt does. */
#define ALLOW_EXPERIMENTAL_API
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
#include <rte_power_intrinsics.h>

#include "evd_private.h"

RTE_LOG_REGISTER(evd__logtype, lib.evd, INFO);

/* How long a device's notification may trail the completion it announces
 * (an interrupt on its way through the kernel) before the loop calls it
 * lost: judged at the end of a later wait, never by waiting for it. */
#define OWED_GRACE_NS 2000000ull
/* The epoll keys of the loop's own eventfd and of its bell (no source slot
 * reaches them). */
#define WAKE_KEY UINT64_MAX
#define BELL_KEY (UINT64_MAX - 1)
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
	struct epoll_event bev = { .events = EPOLLIN, .data.u64 = BELL_KEY };
	struct evd__mem mem;
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
	mem.dpdk = evd__eal_up();
	rc = evd__socket_resolve(conf->numa_socket, &mem.socket);
	if (rc < 0)
		return EVD_ARG_ERR(rc, "evd_loop_create: numa_socket %d: %s", conf->numa_socket,
				   rc == -ENODEV ? "no such socket" : "neither EVD_SOCKET(n) nor "
				   "EVD_SOCKET_ANY");

	loop = evd__zalloc(&mem, sizeof(*loop), 0);
	if (loop == NULL)
		return EVD_ARG_ERR(-ENOMEM, "evd_loop_create: no memory (socket %d)", mem.socket);
	loop->mem = mem;
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
	loop->bell = evd__bell_get();
	if (loop->epfd < 0 || loop->wake_fd < 0 || loop->bell == NULL ||
	    epoll_ctl(loop->epfd, EPOLL_CTL_ADD, loop->wake_fd, &ev) < 0 ||
	    epoll_ctl(loop->epfd, EPOLL_CTL_ADD, evd__bell_fd(loop->bell), &bev) < 0) {
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
	if (loop->bell != NULL)
		evd__bell_put(loop->bell);
	evd__free(&mem, loop);
	return rc;
}

int
evd_loop_destroy(struct evd_loop *loop)
{
	struct evd__mem mem;
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
	evd__bell_put(loop->bell);
	mem = loop->mem;
	evd__free(&mem, loop->src);
	evd__free(&mem, loop->act);
	evd__free(&mem, loop->woke);
	evd__free(&mem, loop->fresh);
	evd__free(&mem, loop->keys);
	evd__free(&mem, loop->fd_key);
	free(loop->trace);
	evd__free(&mem, loop);
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

/* ---- the lists of a source ------------------------------------------------ */

#define NOT_ACT UINT32_MAX
/* Busy rounds between two looks at epoll, while watched fds are idle. */
#define LOOK_ROUNDS 8

static inline void
act_add(struct evd_loop *loop, struct evd_source *s)
{
	if (s->act_pos != NOT_ACT)
		return;
	s->act_pos = loop->n_act;
	loop->act[loop->n_act++] = s;
}

/* (Moves the last one into its place: an iteration of act runs backwards
 * when it removes.) */
static inline void
act_del(struct evd_loop *loop, struct evd_source *s)
{
	struct evd_source *last;

	if (s->act_pos == NOT_ACT)
		return;
	last = loop->act[--loop->n_act];
	loop->act[s->act_pos] = last;
	last->act_pos = s->act_pos;
	s->act_pos = NOT_ACT;
}

static inline void
owe(struct evd_loop *loop, struct evd_source *s, uint64_t since)
{
	if (s->owed_since_ns == 0)
		loop->n_owed++;
	s->owed_since_ns = since != 0 ? since : 1;
}

static inline void
owe_clear(struct evd_loop *loop, struct evd_source *s)
{
	if (s->owed_since_ns != 0)
		loop->n_owed--;
	s->owed_since_ns = 0;
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
	/* atomic: a producer that took an arm of the source's last loop may
	 * read it while the source joins this one */
	__atomic_store_n(&s->key, k, __ATOMIC_RELAXED);
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
		uint32_t *a = evd__realloc(&loop->mem, loop->fd_key, n * sizeof(*a));

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
	if (s->has_fd && s->armed)
		loop->n_watched--;
	if (s->has_fd && s->ops->arm != NULL)
		loop->n_device--;
	if (s->owed_since_ns != 0)
		loop->n_owed--;
	if (!s->has_fd && !s->ops->bell && !s->failed)
		loop->n_poll_only--; /* it bounds no sleep any more */
	s->failed = 1; /* out of the round's list at the next arm pass */
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
	struct epoll_event bev = { .events = EPOLLIN, .data.u64 = BELL_KEY };
	int fd = epoll_create1(EPOLL_CLOEXEC);

	if (fd < 0 || epoll_ctl(fd, EPOLL_CTL_ADD, loop->wake_fd, &ev) < 0 ||
	    epoll_ctl(fd, EPOLL_CTL_ADD, evd__bell_fd(loop->bell), &bev) < 0) {
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
		struct evd_source **a = NULL;
		struct evd__key_slot *k = evd__realloc(&loop->mem, loop->keys, cap * sizeof(*k));
		bool ok = k != NULL;

		if (k != NULL)
			loop->keys = k;
		/* the loop's lists of sources, each at most one entry a source */
		ok = ok && (a = evd__realloc(&loop->mem, loop->act, cap * sizeof(*a))) != NULL;
		if (a != NULL)
			loop->act = a;
		ok = ok && (a = evd__realloc(&loop->mem, loop->woke, cap * sizeof(*a))) != NULL;
		if (ok)
			loop->woke = a;
		ok = ok && (a = evd__realloc(&loop->mem, loop->fresh, cap * sizeof(*a))) != NULL;
		if (ok)
			loop->fresh = a;
		evd__registry_lock();
		a = ok ? evd__realloc(&loop->mem, loop->src, cap * sizeof(*a)) : NULL;
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
	if (evd__bell_reserve(loop->bell, loop->free_key != UINT32_MAX ? loop->free_key
								       : loop->n_keys) < 0) {
		rc = EVD_ARG_ERR(-ENOMEM, "evd_loop_add %s: source %s: no memory for the "
				 "doorbell", loop->name, src->name);
		goto out;
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
		if (!src->ops->bell)
			loop->n_poll_only++;
	}
	src->armed = EVD_ARM_NONE;
	src->woken = 0;
	src->removing = 0;
	src->failed = 0;
	src->owed_since_ns = 0;
	src->act_pos = NOT_ACT;
	src->index = loop->n_src;
	src->id = loop->next_src_id++;
	/* release: such a producer that reads it sees the bell's fields */
	__atomic_store_n(&src->bell, loop->bell, __ATOMIC_RELEASE);
	if (src->has_fd && src->ops->arm == NULL) {
		/* a level fd is watched from the start: epoll says when it is ready */
		src->armed = EVD_ARM_LEVEL;
		loop->n_watched++;
	} else {
		if (src->has_fd)
			loop->n_device++;
		act_add(loop, src);
	}
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

/* Out of interrupt mode: the driver's disarm (after a notification, too:
 * a device's one-shot interrupt may need turning off), and the source is
 * polled every round. */
static void
disarm(struct evd_loop *loop, struct evd_source *s)
{
	if (!s->armed)
		return;
	if (s->has_fd)
		loop->n_watched--;
	s->armed = EVD_ARM_NONE;
	owe_clear(loop, s);
	if (s->ops->disarm != NULL) {
		int rc = s->ops->disarm(s);

		if (rc < 0 && rc != -ENOTSUP)
			source_error(loop, s, "disarm", rc);
	}
	if (!s->failed)
		act_add(loop, s);
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
	 * a source still armed after the check below could notify once more,
	 * and that notification would stay in the removed source. (A bell's
	 * bit left behind names the slot's next source: a spurious poll.) */
	disarm(loop, s);
	act_del(loop, s);
	if (s->has_fd) {
		if (s->ops->ack != NULL && fd_ready(s->notify_fd))
			ack_one(loop, s);
		loop->fd_key[s->notify_fd] = 0;
		if (s->ops->arm != NULL)
			loop->n_device--;
		if (epoll_ctl(loop->epfd, EPOLL_CTL_DEL, s->notify_fd, NULL) < 0) {
			EVD_LOG(WARNING, "loop %s: source %s: fd %d was closed while registered "
				"(EPOLL_CTL_DEL: %s)", loop->name, s->name, s->notify_fd,
				strerror(errno));
			s->has_fd = 0; /* out of the rebuilt set */
			epoll_rebuild(loop);
		}
	} else if (!s->failed && !s->ops->bell) {
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
		/* Called from a handler: the round is iterating its lists. */
		src->removing = 1;
		loop->pending_removal = true;
	} else {
		detach(loop, src);
	}
	evd__control_leave(loop, held);
	return 0;
}

/* The removals asked for during a round, once no list is iterated; a
 * source still in the list of the last wait's notifications stays until
 * that wait is settled. */
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

static void __rte_noinline
poll_failed(struct evd_loop *loop, struct evd_source *s, int n)
{
	/* an fd closed under it would fail every round: unwatched */
	source_error(loop, s, n == -EBADF ? "poll (fd closed while registered? no longer "
		     "polled nor watched: remove it)" : "poll", n);
	if (n == -EBADF)
		source_fail(loop, s, NULL);
}

/* Poll one source; the completions it delivered (told to the policy as
 * the source's when the loop has several), or -1 if its poll failed (the
 * failure handled: logged, on_error, unwatched on EBADF). */
static __rte_always_inline int
poll_src(struct evd_loop *loop, struct evd_source *s, bool repoll)
{
	int n = s->ops->poll(s, loop->burst);

	/* empty polls, the common case, are counted as polls less busy ones */
	EVD_STAT_ADD(s->stats.polls, 1);
	if (likely(n == 0))
		return 0;
	if (unlikely(n < 0)) {
		poll_failed(loop, s, n);
		return -1;
	}
	EVD_STAT_ADD(s->busy_polls, 1);
	EVD_STAT_ADD(s->stats.events, n);
	if (repoll)
		EVD_STAT_ADD(s->stats.repoll_hits, 1);
	if (unlikely(loop->n_src > 1) && loop->policy.ops->on_source_events != NULL)
		loop->policy.ops->on_source_events(loop->policy.state, loop->round_now, s->id,
						   (uint32_t)n);
	return n;
}

static __rte_always_inline uint32_t
poll_one(struct evd_loop *loop, struct evd_source *s, bool repoll)
{
	int n = poll_src(loop, s, repoll);

	return n > 0 ? (uint32_t)n : 0;
}

/* Step 1 (and 3, the re-poll): poll every source of the round's list. The
 * caller sets in_round. */
static __rte_always_inline uint32_t
poll_act(struct evd_loop *loop, bool repoll)
{
	struct evd_source **act = loop->act;
	uint32_t total = 0, i, end = loop->n_act;

	for (i = 0; i < end; i++) {
		struct evd_source *s = act[i];
		int n;

		if (unlikely(s->removing | s->failed))
			continue;
		n = poll_src(loop, s, repoll);
		if (n != 0) {
			/* only a handler or on_error can add a source, which
			 * may move the list: read it again after one ran */
			if (n > 0)
				total += (uint32_t)n;
			act = loop->act;
			end = loop->n_act;
		}
	}
	EVD_STAT_ADD(loop->stats.polls, i);
	return total;
}

/* A source's notification came (its fd was ready, or its bell bit): the
 * arm of a source that has one is spent, it is polled every round from now
 * on; a level fd stays watched. */
static void
mark_woken(struct evd_loop *loop, struct evd_source *s)
{
	if (s->woken || s->removing || s->failed)
		return;
	s->woken = 1;
	s->events_at_sleep = s->stats.events;
	loop->woke[loop->n_woke++] = s;
	EVD_STAT_ADD(s->stats.wakeups, 1);
	if (s->ops->arm != NULL || s->ops->bell)
		disarm(loop, s);
}

static void
bell_slot(void *arg, uint32_t slot)
{
	struct evd_loop *loop = arg;
	struct evd_source *s = slot < loop->n_keys ? loop->keys[slot].src : NULL;

	/* a bit a producer set for the slot's last source, or for an arm
	 * the loop withdrew since, is nobody's notification */
	if (s != NULL && s->ops->bell && s->armed == EVD_ARM_ONCE)
		mark_woken(loop, s);
}

/* epoll_pwait2 failed with ENOSYS or EPERM once: the kernel predates 5.11,
 * or a seccomp profile refuses the call */
static bool no_epoll_pwait2;

/* Wait on epoll at most *tsp (NULL: no timeout; zero: only look), then mark
 * the sources notified, the bell's too. Returns the epoll events (-1: the
 * wait failed, errno), *stop if the loop's eventfd came with a stop.
 * (loop->bell_fd_seen: the bell's fd was among them.) */
static int
gather(struct evd_loop *loop, const struct timespec *tsp, bool *stop)
{
	struct epoll_event evs[64];
	int n = -1;

	errno = ENOSYS;
	if (tsp != NULL && tsp->tv_sec == 0 && tsp->tv_nsec == 0)
		n = epoll_wait(loop->epfd, evs, RTE_DIM(evs), 0); /* a look: the cheaper call */
	else if (!__atomic_load_n(&no_epoll_pwait2, __ATOMIC_RELAXED))
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
	for (int i = 0; i < n; i++) {
		struct evd_source *s;

		if (evs[i].data.u64 == WAKE_KEY) {
			uint64_t v;

			if (read(loop->wake_fd, &v, sizeof(v)) < 0 && errno != EAGAIN)
				EVD_LOG(ERR, "loop %s: wake eventfd: %s", loop->name, strerror(errno));
			if (__atomic_load_n(&loop->stop, __ATOMIC_ACQUIRE))
				*stop = true;
			continue;
		}
		if (evs[i].data.u64 == BELL_KEY) {
			loop->bell_fd_seen = true; /* drained by ack_woken() */
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
		mark_woken(loop, s);
	}
	if (evd__bell_rung(loop->bell))
		evd__bell_take(loop->bell, loop->n_keys, bell_slot, loop);
	return n;
}

/* Step 4: wait, at most timeout_ns (UINT64_MAX: no bound), and mark the
 * sources notified. Returns the wake reason. A nap (nothing armed for it)
 * counts as a nap, and its timeout is its normal end; it does not tell the
 * bell it waits, so that rings do not end it. */
static enum evd_wake_reason
wait_ready(struct evd_loop *loop, uint64_t timeout_ns, bool nap)
{
	static const struct timespec look = { 0, 0 };
	struct timespec ts = {
		.tv_sec = (time_t)(timeout_ns / 1000000000ull),
		.tv_nsec = (long)(timeout_ns % 1000000000ull),
	};
	const struct timespec *tsp = timeout_ns == UINT64_MAX ? NULL : &ts;
	bool stop = false, rung = false;
	int n;

	loop->n_woke = 0;
	loop->bell_fd_seen = false;
	if (nap)
		EVD_STAT_ADD(loop->stats.naps, 1);
	else
		EVD_STAT_ADD(loop->stats.sleeps, 1);
	/* a bell rung while the loop was awake wrote no fd: no wait then */
	if (!nap && !evd__bell_sleep(loop->bell)) {
		rung = true;
		tsp = &look;
	}
	n = gather(loop, tsp, &stop);
	if (!nap)
		evd__bell_wake(loop->bell);
	/* a wait that ran out is a timeout, whatever the bell's bits then
	 * showed (a producer between its bits and its write) */
	if (n == 0 && !rung) {
		if (!nap)
			EVD_STAT_ADD(loop->stats.sleep_timeouts, 1);
		return EVD_WAKE_TIMEOUT;
	}
	EVD_STAT_ADD(loop->stats.wakeups, 1);
	if (n < 0 && errno != EINTR)
		EVD_LOG(ERR, "loop %s: wait: %s", loop->name, strerror(errno));
	/* a signal (EINTR), or the bell's fd with no bit behind it (a late
	 * write, the bits taken by a round before): nothing is ready */
	if (loop->n_woke == 0 && (n < 0 || (n == 1 && loop->bell_fd_seen)))
		EVD_STAT_ADD(loop->stats.spurious_wakeups, 1);
	return stop ? EVD_WAKE_STOP : EVD_WAKE_NOTIFY;
}

/* Poll the level fds notified (the others joined the round's list when
 * marked). The caller sets in_round. */
static uint32_t
poll_woken_level(struct evd_loop *loop)
{
	uint32_t n = 0;

	for (uint32_t i = 0; i < loop->n_woke; i++) {
		struct evd_source *s = loop->woke[i];

		if (s->armed == EVD_ARM_LEVEL && !(s->removing | s->failed))
			n += poll_one(loop, s, false);
	}
	return n;
}

/* Step 5: consume the notification of every source that woke the loop,
 * exactly once. Done after the post-wake poll, so that a wakeup reaches the
 * handlers one syscall sooner; still before any source is armed again. */
static void
ack_woken(struct evd_loop *loop)
{
	/* the bell's fd after the polls too: a producer's write that this
	 * read takes after the bits were taken left `rung` raised, which the
	 * next round sees */
	if (loop->bell_fd_seen) {
		evd__bell_drain(loop->bell);
		loop->bell_fd_seen = false;
	}
	for (uint32_t i = 0; i < loop->n_woke; i++) {
		struct evd_source *s = loop->woke[i];

		if (s->has_fd && s->ops->ack != NULL)
			ack_one(loop, s);
	}
}

/* The notified sources that found nothing were spurious; a late
 * notification settles a debt. Returns whether any was notified. */
static bool
settle_woken(struct evd_loop *loop)
{
	bool any = loop->n_woke > 0;

	for (uint32_t i = 0; i < loop->n_woke; i++) {
		struct evd_source *s = loop->woke[i];

		owe_clear(loop, s);
		if (s->stats.events == s->events_at_sleep)
			EVD_STAT_ADD(s->stats.spurious_wakeups, 1);
		s->woken = 0;
	}
	loop->n_woke = 0;
	return any;
}

static void
count_lost_wakeup(struct evd_loop *loop, struct evd_source *s)
{
	EVD_STAT_ADD(s->stats.lost_wakeups, 1);
	EVD_STAT_ADD(loop->stats.lost_wakeups, 1);
	EVD_LOG(WARNING, "loop %s: source %s: lost wakeup (completions queued before the arm, "
		"no notification)", loop->name, s->name);
}

/* A device's completions were found after a timed-out sleep and its fd did
 * not wake the loop. Its notification may still be on its way (an
 * interrupt through the kernel): it gets OWED_GRACE_NS, judged at the end
 * of a later wait with the source left armed (and polled every round),
 * never by waiting here. Only a notification that will never come is a
 * lost wakeup. */
static void
judge_silence(struct evd_loop *loop, struct evd_source *s, uint64_t now)
{
	if (fd_ready(s->notify_fd)) {
		ack_one(loop, s);
		disarm(loop, s);
	} else {
		owe(loop, s, now);
		act_add(loop, s);
	}
}

/* A notification owed since an earlier wait: it came (settle_woken clears
 * the debt; or it is ready now), or the grace is over and it is lost. */
static void
owed_judge(struct evd_loop *loop, struct evd_source *s, uint64_t now)
{
	if (!s->woken && now - s->owed_since_ns >= OWED_GRACE_NS) {
		owe_clear(loop, s);
		if (fd_ready(s->notify_fd))
			ack_one(loop, s);
		else
			count_lost_wakeup(loop, s);
		disarm(loop, s);
	}
}

/* After a sleep: a timeout polls the armed devices (whose notification the
 * loop cannot prove) and judges those holding completions; the debts of
 * earlier waits are judged. The caller sets in_round. Returns what the
 * polls found. */
static uint32_t
after_sleep(struct evd_loop *loop, enum evd_wake_reason why, uint64_t now)
{
	uint32_t found = 0;

	if ((why != EVD_WAKE_TIMEOUT || loop->n_device == 0) && loop->n_owed == 0)
		return 0;
	for (uint32_t i = 0; i < loop->n_src; i++) {
		struct evd_source *s = loop->src[i];

		if (s->owed_since_ns != 0) {
			owed_judge(loop, s, now);
		} else if (why == EVD_WAKE_TIMEOUT && s->armed == EVD_ARM_ONCE && s->has_fd &&
			   !s->woken && !s->removing) {
			uint32_t n = poll_one(loop, s, false);

			if (n == 0)
				continue;
			found += n;
			judge_silence(loop, s, now);
		}
	}
	return found;
}

/* The wait's timeout; UINT64_MAX: none. Without max_sleep_us an idle loop
 * whose notifications are all proven (no device armed) has no reason to
 * wake; a device's interrupt keeps the default bound as a backstop. */
static uint64_t
sleep_bound(struct evd_loop *loop, uint64_t policy_ns, bool all_armed, uint64_t now)
{
	bool proven = loop->n_device == 0;
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
	if (loop->policy.ops->on_events != NULL)
		loop->policy.ops->on_events(loop->policy.state, now, n);
}

/* The CPU's light wait (TPAUSE: rte_power_pause), where it has one and the
 * EAL measured the TSC; -1: not looked yet (evd__power_pause()). */
static int power_pause = -1;

bool
evd__power_pause(void)
{
	int p = __atomic_load_n(&power_pause, __ATOMIC_RELAXED);

	if (p < 0) {
		struct rte_cpu_intrinsics in;

		memset(&in, 0, sizeof(in));
		rte_cpu_get_intrinsics_support(&in);
		p = in.power_pause && evd__eal_up() && rte_get_tsc_hz() != 0;
		__atomic_store_n(&power_pause, p, __ATOMIC_RELAXED);
	}
	return p != 0;
}

/* A pause between the spin and the sleep: the CPU's light wait where it has
 * one (as rte_power_pmd_mgmt's pause mode), else PAUSE instructions. */
static void
pause_for(uint64_t ns)
{
	uint64_t end;

	if (evd__power_pause()) {
		(void)rte_power_pause(rte_rdtsc() + ns * rte_get_tsc_hz() / 1000000000ull);
		return;
	}
	end = evd__monotonic_ns(NULL) + ns;
	do {
		for (int i = 0; i < 8; i++)
			rte_pause();
	} while (evd__monotonic_ns(NULL) < end);
}

/* Back from a wait (a sleep, or a nap) that began at t0: tell the policy,
 * run due timers, poll the round's list (the notified sources joined it)
 * and the level fds notified, ack what woke us (step 5), then settle the
 * wake: after a sleep the devices' lost-wakeup check. Returns the
 * completions found. */
static uint32_t
after_wait(struct evd_loop *loop, uint64_t t0, enum evd_wake_reason why, bool nap)
{
	uint64_t t1 = evd__now(loop);
	uint32_t n;

	set_mode(loop, EVD_MODE_POLL, t1);
	if (loop->policy.ops->on_wake != NULL)
		loop->policy.ops->on_wake(loop->policy.state, t1, t1 > t0 ? t1 - t0 : 0, why);
	/* from here on a removal waits for the settle: the notified sources'
	 * list holds them (a timer's callback too) */
	loop->in_round = true;
	evd__timers_run(loop, t1);
	loop->round_now = t1;
	n = poll_act(loop, false);
	n += poll_woken_level(loop);
	/* after the poll: the CPU clock's read (a syscall on some hosts) would
	 * delay the handlers of what woke us */
	cpu_sample(loop);
	ack_woken(loop);
	if (!nap)
		n += after_sleep(loop, why, t1);
	loop->in_round = false;
	/* a wakeup of the loop that found nothing anywhere was spurious */
	if (settle_woken(loop) && why == EVD_WAKE_NOTIFY && n == 0)
		EVD_STAT_ADD(loop->stats.spurious_wakeups, 1);
	if (unlikely(loop->pending_removal))
		reap_removed(loop);
	if (n > 0)
		note_events(loop, t1, n);
	return n;
}

/* A busy round's look at the notifications: epoll without waiting when fds
 * are watched, the bell when it rang. The notified sources are polled.
 * The caller sets in_round. */
static uint32_t
look(struct evd_loop *loop)
{
	static const struct timespec zero = { 0, 0 };
	bool stop = false;
	uint32_t n;

	loop->n_woke = 0;
	loop->since_look = 0;
	if (loop->n_watched > 0)
		(void)gather(loop, &zero, &stop);
	else
		evd__bell_take(loop->bell, loop->n_keys, bell_slot, loop);
	n = 0;
	for (uint32_t i = 0; i < loop->n_woke; i++) {
		struct evd_source *s = loop->woke[i];

		if (!(s->removing | s->failed))
			n += poll_one(loop, s, false);
	}
	ack_woken(loop);
	loop->look_found = settle_woken(loop);
	return n;
}

/* Steps 2 and 3, from poll mode to armed: arm the sources of the round's
 * list, fence once, then poll them once more. A completion that landed
 * between the last empty poll and the arm raises no notification on strict
 * (IBTA, virtio) sources; sleeping without this re-poll strands it until
 * the timeout: the lost wakeup. The sources armed in earlier passes need no
 * re-poll: they were polled after their arm, and notify since. Returns the
 * completions the re-poll found (their sources are polled every round
 * again), 0 armed (*all_armed for sleep_bound), or -EAGAIN: a source joined
 * after the arm pass (start over). */
static int
arm_and_repoll(struct evd_loop *loop, uint64_t now, bool *all_armed)
{
	uint32_t n, n_fresh = 0, added = loop->next_src_id; /* ids count the adds */
	uint64_t errors;

	set_mode(loop, EVD_MODE_SLEEP, now);
	cpu_sample(loop);
	*all_armed = true;
	for (uint32_t i = loop->n_act; i-- > 0;) {
		struct evd_source *s = loop->act[i];
		int rc;

		if (s->failed) {
			act_del(loop, s);
			continue;
		}
		if ((!s->has_fd && !s->ops->bell) || s->armed || s->removing)
			continue; /* poll-only; owed (armed, polled) */
		rc = s->ops->arm != NULL ? s->ops->arm(s) : -ENOTSUP;
		if (rc == 0) {
			s->armed = EVD_ARM_ONCE;
			EVD_STAT_ADD(s->stats.arms, 1);
			EVD_STAT_ADD(loop->stats.arms, 1);
			loop->fresh[n_fresh++] = s;
		} else if (rc == -ENOTSUP && s->has_fd && s->ops->arm != NULL) {
			/* e.g. tap, a solicited-only CQ: armed, but not for every
			 * completion, so it stays in the round's list (re-polled
			 * below, polled every round, armed again at each sleep);
			 * its fd ends a wait for the completions it announces */
			continue;
		} else {
			source_error(loop, s, "arm", rc);
			*all_armed = false;
			continue;
		}
		if (s->has_fd)
			loop->n_watched++;
		act_del(loop, s);
	}
	/* one fence for every software source armed above: it pairs with the
	 * producers' between publishing and looking at their armed flag */
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	errors = loop->stats.errors;
	loop->round_now = now;
	loop->in_round = true;
	n = poll_act(loop, true);
	for (uint32_t i = 0; i < n_fresh; i++) {
		struct evd_source *s = loop->fresh[i];
		int k;

		if (s->removing | s->failed)
			continue;
		k = poll_src(loop, s, true);
		/* busy: polled every round again; failed: not checked after its
		 * arm, so polled every round too (its silence proves nothing) */
		if (k != 0 && s->armed)
			disarm(loop, s);
		if (k > 0)
			n += (uint32_t)k;
	}
	loop->in_round = false;
	if (unlikely(loop->pending_removal))
		reap_removed(loop);
	/* a source whose re-poll failed was not checked: what landed before
	 * its arm may never notify, so the wait is bounded as for one that
	 * could not be armed */
	if (loop->stats.errors != errors)
		*all_armed = false;
	if (n == 0 && loop->next_src_id != added) {
		/* a source joined after the arm pass (on_error during the
		 * re-poll): it is not armed, and its notifications would not
		 * wake this wait. Start over: the next step arms it. */
		set_mode(loop, EVD_MODE_POLL, evd__now(loop));
		return -EAGAIN;
	}
	if (n > 0) {
		uint64_t t1;

		EVD_STAT_ADD(loop->stats.repoll_hits, 1);
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
	bool all_armed;
	uint64_t t0;
	int rc = arm_and_repoll(loop, now, &all_armed);

	if (rc != 0)
		return rc > 0 ? rc : 0;
	t0 = evd__now(loop);
	if (__atomic_load_n(&loop->stop, __ATOMIC_ACQUIRE)) {
		set_mode(loop, EVD_MODE_POLL, t0);
		return 0;
	}
	why = wait_ready(loop, sleep_bound(loop, policy_ns, all_armed, t0), false);
	return (int)after_wait(loop, t0, why, false);
}

/* The policy said nap: wait ns (or less: a timer, the loop's bound) with
 * nothing armed for it, so completions gather unannounced (software
 * interrupt moderation), then poll them together. No arm, no re-poll, no
 * lost-wakeup check: nothing was promised. A level fd, a device still
 * armed from an earlier sleep or a stop can end it early. */
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
	why = wait_ready(loop, sleep_bound(loop, ns != 0 ? ns : 1000, true, now), true);
	return (int)after_wait(loop, now, why, true);
}

/* The end of a wait another event loop did on evd_loop_fd() after
 * evd_loop_arm(): what a sleep's wake does, the fd only looked at. */
static uint32_t
end_outside_wait(struct evd_loop *loop)
{
	static const struct timespec zero = { 0, 0 };
	enum evd_wake_reason why = EVD_WAKE_NOTIFY;
	bool stop = false;
	int n;

	loop->armed_outside = false;
	loop->n_woke = 0;
	n = gather(loop, &zero, &stop);
	evd__bell_wake(loop->bell);
	if (n == 0 && loop->n_woke == 0) {
		EVD_STAT_ADD(loop->stats.sleep_timeouts, 1);
		why = EVD_WAKE_TIMEOUT;
	} else {
		EVD_STAT_ADD(loop->stats.wakeups, 1);
	}
	if (stop)
		why = EVD_WAKE_STOP;
	return after_wait(loop, loop->mode_mark_ns, why, false);
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

	loop->round_now = *now;
	loop->in_round = true;
	n = poll_act(loop, false);
	/* the bell is a load; epoll a syscall: in an empty round, and every
	 * LOOK_ROUNDS busy ones while the fds it watches stay quiet */
	if (unlikely(evd__bell_rung(loop->bell)) ||
	    (loop->n_watched > 0 &&
	     (n == 0 || loop->look_found || ++loop->since_look >= LOOK_ROUNDS)))
		n += look(loop);
	loop->in_round = false;
	if (unlikely(loop->pending_removal))
		reap_removed(loop);
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
	/* a source added since the last arm (ids count the adds) is armed now,
	 * the others stay as they are */
	if (!loop->armed_outside || loop->next_src_id != loop->armed_ids) {
		bool all;

		rc = arm_and_repoll(loop, now, &all);
		if (rc != 0) {
			if (loop->armed_outside) { /* the outside wait is over: work came */
				loop->armed_outside = false;
				evd__bell_wake(loop->bell);
			}
			hold_release(loop);
			return rc;
		}
		loop->armed_all = all && (!loop->armed_outside || loop->armed_all);
		if (!loop->armed_outside)
			EVD_STAT_ADD(loop->stats.sleeps, 1);
		loop->armed_outside = true;
		loop->armed_ids = loop->next_src_id;
	}
	/* a bell rung while the loop was awake wrote no fd: the caller's wait
	 * must not block */
	*timeout_ns = evd__bell_sleep(loop->bell) ? sleep_bound(loop, 0, loop->armed_all, now) : 0;
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
source_stats_read(const struct evd_source *src, struct evd_source_stats *d)
{
	const struct evd_source_stats *s = &src->stats;
	/* the busy ones first: never more than the polls read after them */
	uint64_t busy = LOAD(src->busy_polls);

	PUT(d->polls, LOAD(s->polls));
	PUT(d->empty_polls, d->polls - busy);
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
	source_stats_read(src, d);
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
	source_stats_read(src, &src->stats_base);
	return 0;
}
