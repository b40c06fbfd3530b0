/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * How evd scales with the number of sources and of loops: each figure
 * beside a raw baseline measured in the same process, so that the ratio,
 * not the figure, is what a shared 2-vCPU VM lets one compare
 * (doc/guides/benchmarks.md, "Scale"). One subcommand per measure; each
 * prints one JSON object on stdout. ./scripts/bench scale runs them at full
 * size (the callgrind ones under valgrind --tool=callgrind
 * --toggle-collect=measured) and writes bench/results/scale.md.
 *
 *   check                               every measure, small, asserting delivery (meson test)
 *   wake evd|raw IDLE WAKES             1. instructions per wake of one event (callgrind)
 *   sweep-ring N ROUNDS BLOCKS          2. idle rings, poll mode: ns per source per round
 *   sweep-ring-cg evd|raw N ROUNDS      2. the same in instructions (callgrind)
 *   sweep-fd N ROUNDS BLOCKS            3. idle fd sources, poll mode, against one epoll_wait
 *   sources MAX ROUNDS [NOFILE]         4. rings added until MAX or a failure; add times
 *   latency ROUNDS SAMPLES GAP_US...    5. wake latency after a gap, evd intr against raw
 *   consume evd|raw EVENTS              6. consumer instructions per event, burst 32 (callgrind)
 *   idle SECONDS ROUNDS COUNT...        7. idle CPU and wakeups per loop against raw threads
 *   state                               8. malloc'd bytes per loop (by policy) and per source
 *
 * No EAL: the rte_rings of the baselines are rte_ring_init() on memory of
 * our own (rte_ring_get_memsize_elem), and the loops read CLOCK_MONOTONIC
 * (the TSC clock needs rte_eal_init(): evd.h, struct evd_clock).
 */
#include <malloc.h>
#include <pthread.h>
#include <sched.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <unistd.h>

#include <rte_pause.h>
#include <rte_ring.h>
#include <rte_ring_elem.h>

#include <evd.h>
#include <evd_source.h>

#include "evd_test.h"

/* ---- common ---------------------------------------------------------------- */

/*
 * The one function callgrind counts (--toggle-collect=measured): what fn
 * does on this thread, and nothing else. Callgrind keeps its collection
 * state per thread, so a producer thread's instructions stay out, and the
 * set-up and warm-up calls (fn called directly) too.
 */
typedef void (*work_fn)(void *ctx, uint64_t n);
void measured(work_fn fn, void *ctx, uint64_t n);

void __attribute__((noinline, noclone))
measured(work_fn fn, void *ctx, uint64_t n)
{
	fn(ctx, n);
	__asm__ volatile("" ::: "memory"); /* not a tail call: the toggle ends here */
}

/* A handler the compiler cannot see through (the baselines call it the
 * way a source calls the application's handler: indirectly). */
static void
count_events(struct evd_source *s, void *burst, uint16_t n, void *arg)
{
	(void)s;
	(void)burst;
	*(uint64_t *)arg += n;
}

static void (*volatile raw_handler)(struct evd_source *, void *, uint16_t, void *) = count_events;

/* Soft RLIMIT_NOFILE up to the hard one (or both to @p want, as root):
 * 8192 rings are 8192 eventfds. Returns the soft limit now. */
static rlim_t
raise_nofile(rlim_t want)
{
	struct rlimit rl;

	CHECK_EQ(getrlimit(RLIMIT_NOFILE, &rl), 0);
	if (want > 0) {
		struct rlimit up = { want, want };

		if (setrlimit(RLIMIT_NOFILE, &up) == 0)
			return want;
		fprintf(stderr, "bench_scale: RLIMIT_NOFILE %llu refused (%s): kept %llu\n",
			(unsigned long long)want, strerror(errno), (unsigned long long)rl.rlim_max);
	}
	rl.rlim_cur = rl.rlim_max;
	CHECK_EQ(setrlimit(RLIMIT_NOFILE, &rl), 0);
	return rl.rlim_cur;
}

/* Keep the calling thread on one CPU, where there are two (the producer on
 * one, the consumer on the other: each side's figure is its own). */
static void
pin_self(int cpu)
{
	cpu_set_t one;

	if (sysconf(_SC_NPROCESSORS_ONLN) < 2)
		return;
	CPU_ZERO(&one);
	CPU_SET(cpu, &one);
	if (sched_setaffinity(0, sizeof(one), &one) != 0)
		fprintf(stderr, "bench_scale: pinning to CPU %d: %s\n", cpu, strerror(errno));
}

static int
cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* The q-quantile of v[0..n) (sorts v). */
static double
quantile(double *v, size_t n, double q)
{
	size_t i;

	if (n == 0)
		return 0;
	qsort(v, n, sizeof(*v), cmp_double);
	i = (size_t)(q * (double)(n - 1) + 0.5);
	return v[i < n ? i : n - 1];
}

/* "median": m, "min": a, "max": b of v[0..n) (sorts v) */
static void
json_spread(const char *key, double *v, size_t n, const char *end)
{
	double med = quantile(v, n, 0.5); /* sorts v: v[0] and v[n - 1] after it */

	printf("\"%s\": {\"median\": %.4f, \"min\": %.4f, \"max\": %.4f}%s", key, med, v[0],
	       v[n - 1], end);
}

/* An rte_ring without the EAL: rte_ring_init() on memory of our own, one
 * allocation per ring as evd's rings are, MP enqueue and SC dequeue as
 * evd's ring is (multi-producer, single consumer). */
static struct rte_ring *
raw_ring(unsigned int count, unsigned int esize)
{
	ssize_t sz = rte_ring_get_memsize_elem(esize, count);
	struct rte_ring *r;

	CHECK(sz > 0);
	r = aligned_alloc(RTE_CACHE_LINE_SIZE, RTE_ALIGN_CEIL((size_t)sz, RTE_CACHE_LINE_SIZE));
	CHECK(r != NULL);
	CHECK_EQ(rte_ring_init(r, "raw", count, RING_F_SC_DEQ), 0);
	return r;
}

/*
 * Time variants interleaved: block b runs every variant once, @p rounds
 * rounds each, starting with variant b % nv, so that the VM's drift hits
 * all alike. ns[b * nv + v]: the block's ns per round of variant v.
 */
struct variant {
	const char *name;
	work_fn fn;
};

static void
interleave(const struct variant *v, int nv, void *ctx, uint64_t rounds, int blocks, double *ns)
{
	for (int k = 0; k < nv; k++) /* warm: caches, page faults, lazy set-up */
		v[k].fn(ctx, rounds / 4 + 1);
	for (int b = 0; b < blocks; b++)
		for (int i = 0; i < nv; i++) {
			int k = (b + i) % nv;
			uint64_t t0 = test_now_ns();

			v[k].fn(ctx, rounds);
			ns[b * nv + k] = (double)(test_now_ns() - t0) / (double)rounds;
		}
}

/* The JSON of interleave()'s figures, per @p unit (sources per round):
 * each variant's median and range, and variant k against variant 0 block
 * by block (the median of the blocks' ratios, and their range). */
static void
json_interleaved(const struct variant *v, int nv, int blocks, const double *ns, double unit)
{
	double *col = malloc(sizeof(double) * (size_t)blocks);

	CHECK(col != NULL);
	printf("\"blocks\": %d, \"ns_per_unit\": {", blocks);
	for (int k = 0; k < nv; k++) {
		for (int b = 0; b < blocks; b++)
			col[b] = ns[b * nv + k] / unit;
		json_spread(v[k].name, col, (size_t)blocks, k + 1 < nv ? ", " : "}, ");
	}
	printf("\"ratio_to_%s\": {", v[0].name);
	for (int k = 1; k < nv; k++) {
		for (int b = 0; b < blocks; b++)
			col[b] = ns[b * nv + k] / ns[b * nv];
		json_spread(v[k].name, col, (size_t)blocks, k + 1 < nv ? ", " : "}");
	}
	free(col);
}

/* A loop of @p n rings (or none), for the sweeps and the wakes. */
static struct evd_loop *
loop_of_rings(const char *policy, unsigned int n, unsigned int size, evd_handler_t h, void *arg,
	      struct evd_source **rings)
{
	struct evd_loop_conf conf = { .policy = policy };
	struct evd_loop *loop;

	CHECK_EQ(evd_loop_create(&conf, &loop), 0);
	for (unsigned int i = 0; i < n; i++) {
		CHECK_EQ(evd_ring_create("r", size, h, arg, &rings[i]), 0);
		CHECK_EQ(evd_loop_add(loop, rings[i]), 0);
	}
	return loop;
}

static void
loop_free(struct evd_loop *loop, struct evd_source **src, unsigned int n)
{
	for (unsigned int i = 0; i < n; i++) {
		CHECK_EQ(evd_loop_remove(loop, src[i]), 0);
		CHECK_EQ(evd_source_destroy(src[i]), 0);
	}
	CHECK_EQ(evd_loop_destroy(loop), 0);
}

/* ---- 1. instructions per wake ------------------------------------------------ */

/*
 * One event wakes a sleeping consumer, WAKES times. evd: a loop of policy
 * intr holding one active ring and IDLE idle ones; each evd_loop_step()
 * sleeps (arm every ring, re-poll every ring, epoll_wait) and is woken by
 * one post. raw: one thread in epoll_wait() on one eventfd, woken by a
 * write. A producer thread posts only once the consumer has gone to sleep
 * (the loop counted the sleep, after its re-poll), so every step is a wake,
 * never a re-poll hit; callgrind counts the consumer's instructions only.
 */
struct wake_ctx {
	bool raw;
	struct evd_loop *loop;
	struct evd_source *active;
	int epfd, efd;
	uint64_t waits;   /* raw: waits begun (atomic) */
	uint64_t sleeps0; /* evd: the loop's sleeps before the first wake */
	uint64_t total;   /* wakes the producer makes */
	uint64_t got;     /* events handled */
};

static uint64_t
wake_waits(struct wake_ctx *c)
{
	struct evd_loop_stats st;

	if (c->raw)
		return __atomic_load_n(&c->waits, __ATOMIC_ACQUIRE);
	CHECK_EQ(evd_loop_stats_get(c->loop, &st), 0);
	return st.sleeps - c->sleeps0;
}

static void *
wake_producer(void *arg)
{
	struct wake_ctx *c = arg;

	for (uint64_t k = 0; k < c->total; k++) {
		while (wake_waits(c) <= k)
			test_sleep_us(20);
		test_sleep_us(200); /* in epoll_wait by now, almost surely (either way a wake) */
		if (c->raw) {
			uint64_t one = 1;

			CHECK_EQ(write(c->efd, &one, sizeof(one)), sizeof(one));
		} else {
			struct evd_event ev = { .u64 = k };

			CHECK_EQ(evd_ring_post(c->active, &ev), 0);
		}
	}
	return NULL;
}

static void __attribute__((noinline, noclone))
wake_evd(void *ctx, uint64_t n)
{
	struct wake_ctx *c = ctx;

	for (uint64_t i = 0; i < n; i++)
		CHECK_EQ(evd_loop_step(c->loop), 1);
}

static void __attribute__((noinline, noclone))
wake_raw(void *ctx, uint64_t n)
{
	struct wake_ctx *c = ctx;
	struct epoll_event evs[8];
	uint64_t v;

	for (uint64_t i = 0; i < n; i++) {
		__atomic_fetch_add(&c->waits, 1, __ATOMIC_RELEASE);
		CHECK_EQ(epoll_wait(c->epfd, evs, 8, -1), 1);
		CHECK_EQ(read(c->efd, &v, sizeof(v)), sizeof(v));
		raw_handler(NULL, NULL, 1, &c->got);
	}
}

static void
bench_wake(bool raw, unsigned int idle, uint64_t wakes)
{
	const uint64_t warm = 3;
	struct wake_ctx c = { .raw = raw, .total = warm + wakes };
	struct evd_source **rings = calloc(idle + 1, sizeof(*rings));
	struct evd_loop_stats st;
	pthread_t prod;

	CHECK(rings != NULL);
	if (raw) {
		struct epoll_event ev = { .events = EPOLLIN };

		c.efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
		c.epfd = epoll_create1(EPOLL_CLOEXEC);
		CHECK(c.efd >= 0 && c.epfd >= 0);
		CHECK_EQ(epoll_ctl(c.epfd, EPOLL_CTL_ADD, c.efd, &ev), 0);
	} else {
		/* the active ring first, then the idle ones: every sweep is
		 * over all of them anyway */
		c.loop = loop_of_rings("intr", idle + 1, 16, count_events, &c.got, rings);
		c.active = rings[0];
		CHECK_EQ(evd_loop_stats_get(c.loop, &st), 0);
		c.sleeps0 = st.sleeps;
	}
	CHECK_EQ(pthread_create(&prod, NULL, wake_producer, &c), 0);
	(raw ? wake_raw : wake_evd)(&c, warm);
	measured(raw ? wake_raw : wake_evd, &c, wakes);
	CHECK_EQ(pthread_join(prod, NULL), 0);
	CHECK_EQ(c.got, warm + wakes);
	if (!raw) {
		CHECK_EQ(evd_loop_stats_get(c.loop, &st), 0);
		CHECK_EQ(st.lost_wakeups, 0);
		CHECK_EQ(st.repoll_hits, 0); /* each one a wake, as meant */
		CHECK_EQ(st.sleeps - c.sleeps0, warm + wakes);
		loop_free(c.loop, rings, idle + 1);
	} else {
		close(c.efd);
		close(c.epfd);
	}
	free(rings);
	printf("{\"measure\": \"wake\", \"variant\": \"%s\", \"idle_rings\": %u, \"units\": %" PRIu64
	       ", \"unit\": \"wake\"}\n", raw ? "raw" : "evd", raw ? 0 : idle, wakes);
}

/* ---- 2. idle ring sweep, poll mode ------------------------------------------------ */

/*
 * A loop of policy poll over N idle rings: one evd_loop_step() polls each
 * once and finds nothing. Baselines: rte_ring_count() over N rte_rings
 * (what knowing that a ring is empty costs at least), and
 * rte_ring_dequeue_burst_elem() on each (what a consumer's poll of an
 * empty rte_ring costs).
 */
struct sweep_ctx {
	struct evd_loop *loop;
	struct evd_source **rings;
	struct rte_ring **rr;
	unsigned int n;
	int epfd, *efd;
	struct epoll_event *evs;
	uint64_t sink;
};

static void __attribute__((noinline, noclone))
sweep_evd(void *ctx, uint64_t rounds)
{
	struct sweep_ctx *c = ctx;

	for (uint64_t r = 0; r < rounds; r++)
		if (unlikely(evd_loop_step(c->loop) != 0))
			abort();
}

static void __attribute__((noinline, noclone))
sweep_count(void *ctx, uint64_t rounds)
{
	struct sweep_ctx *c = ctx;
	unsigned int s = 0;

	for (uint64_t r = 0; r < rounds; r++) {
		for (unsigned int i = 0; i < c->n; i++)
			s += rte_ring_count(c->rr[i]);
		__asm__ volatile("" ::: "memory"); /* read the rings again next round */
	}
	c->sink += s;
}

static void __attribute__((noinline, noclone))
sweep_dequeue(void *ctx, uint64_t rounds)
{
	struct sweep_ctx *c = ctx;
	struct evd_event burst[32];
	unsigned int s = 0;

	for (uint64_t r = 0; r < rounds; r++) {
		for (unsigned int i = 0; i < c->n; i++) {
			unsigned int k = rte_ring_dequeue_burst_elem(c->rr[i], burst, sizeof(burst[0]),
								      32, NULL);

			if (unlikely(k > 0))
				raw_handler(NULL, burst, (uint16_t)k, &c->sink);
			s += k;
		}
		__asm__ volatile("" ::: "memory");
	}
	c->sink += s;
}

static void
sweep_ring_setup(struct sweep_ctx *c, unsigned int n)
{
	*c = (struct sweep_ctx){ .n = n };
	c->rings = calloc(n, sizeof(*c->rings));
	c->rr = calloc(n, sizeof(*c->rr));
	CHECK(c->rings != NULL && c->rr != NULL);
	c->loop = loop_of_rings("poll", n, 64, count_events, &c->sink, c->rings);
	for (unsigned int i = 0; i < n; i++)
		c->rr[i] = raw_ring(64, sizeof(struct evd_event));
}

static void
sweep_ring_free(struct sweep_ctx *c)
{
	struct evd_loop_stats st;

	CHECK_EQ(evd_loop_stats_get(c->loop, &st), 0);
	CHECK_EQ(st.events, 0);
	CHECK_EQ(c->sink, 0);
	loop_free(c->loop, c->rings, c->n);
	for (unsigned int i = 0; i < c->n; i++)
		free(c->rr[i]);
	free(c->rings);
	free(c->rr);
}

static void
bench_sweep_ring(unsigned int n, uint64_t rounds, int blocks)
{
	static const struct variant v[] = {
		{ "rte_ring_count", sweep_count },
		{ "evd", sweep_evd },
		{ "rte_ring_dequeue_burst", sweep_dequeue },
	};
	double *ns = calloc((size_t)blocks * RTE_DIM(v), sizeof(*ns));
	struct sweep_ctx c;

	CHECK(ns != NULL);
	pin_self(0);
	sweep_ring_setup(&c, n);
	interleave(v, RTE_DIM(v), &c, rounds, blocks, ns);
	sweep_ring_free(&c);
	printf("{\"measure\": \"sweep-ring\", \"sources\": %u, \"rounds_per_block\": %" PRIu64
	       ", \"unit\": \"ns per source per round\", ", n, rounds);
	json_interleaved(v, RTE_DIM(v), blocks, ns, n);
	printf("}\n");
	free(ns);
}

static void
bench_sweep_ring_cg(bool raw, unsigned int n, uint64_t rounds)
{
	struct sweep_ctx c;

	sweep_ring_setup(&c, n);
	(raw ? sweep_count : sweep_evd)(&c, 2);
	measured(raw ? sweep_count : sweep_evd, &c, rounds);
	sweep_ring_free(&c);
	printf("{\"measure\": \"sweep-ring\", \"variant\": \"%s\", \"sources\": %u, \"units\": %" PRIu64
	       ", \"unit\": \"source per round\"}\n", raw ? "rte_ring_count" : "evd", n,
	       rounds * n);
}

/* ---- 3. idle fd sweep, poll mode -------------------------------------------------- */

/* A loop of policy poll over N idle eventfds as fd sources, against one
 * epoll_wait(epfd, evs, N, 0) over the same N eventfds (another epoll set). */
static void __attribute__((noinline, noclone))
sweep_epoll(void *ctx, uint64_t rounds)
{
	struct sweep_ctx *c = ctx;

	for (uint64_t r = 0; r < rounds; r++)
		if (unlikely(epoll_wait(c->epfd, c->evs, (int)c->n, 0) != 0))
			abort();
}

static void
bench_sweep_fd(unsigned int n, uint64_t rounds, int blocks)
{
	static const struct variant v[] = {
		{ "epoll_wait", sweep_epoll },
		{ "evd", sweep_evd },
	};
	struct evd_loop_conf conf = { .policy = "poll" };
	double *ns = calloc((size_t)blocks * RTE_DIM(v), sizeof(*ns));
	struct sweep_ctx c = { .n = n };
	struct evd_loop_stats st;

	c.rings = calloc(n, sizeof(*c.rings));
	c.efd = calloc(n, sizeof(*c.efd));
	c.evs = calloc(n, sizeof(*c.evs));
	CHECK(ns != NULL && c.rings != NULL && c.efd != NULL && c.evs != NULL);
	pin_self(0);
	CHECK_EQ(evd_loop_create(&conf, &c.loop), 0);
	c.epfd = epoll_create1(EPOLL_CLOEXEC);
	CHECK(c.epfd >= 0);
	for (unsigned int i = 0; i < n; i++) {
		struct epoll_event ev = { .events = EPOLLIN, .data.u32 = i };

		c.efd[i] = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
		CHECK(c.efd[i] >= 0);
		CHECK_EQ(epoll_ctl(c.epfd, EPOLL_CTL_ADD, c.efd[i], &ev), 0);
		CHECK_EQ(evd_fd_create("fd", c.efd[i], 0, count_events, &c.sink, &c.rings[i]), 0);
		CHECK_EQ(evd_loop_add(c.loop, c.rings[i]), 0);
	}
	interleave(v, RTE_DIM(v), &c, rounds, blocks, ns);
	CHECK_EQ(evd_loop_stats_get(c.loop, &st), 0);
	CHECK_EQ(st.events, 0);
	loop_free(c.loop, c.rings, n);
	for (unsigned int i = 0; i < n; i++)
		close(c.efd[i]);
	close(c.epfd);
	printf("{\"measure\": \"sweep-fd\", \"sources\": %u, \"rounds_per_block\": %" PRIu64
	       ", \"unit\": \"ns per round\", ", n, rounds);
	json_interleaved(v, RTE_DIM(v), blocks, ns, 1);
	printf("}\n");
	free(ns);
	free(c.rings);
	free(c.efd);
	free(c.evs);
}

/* ---- 4. sources per loop -------------------------------------------------------- */

/*
 * Sources created and added to one loop until MAX, or until a call fails,
 * each evd_loop_add() timed alone. Three series, the order turning each
 * round: rings (16 events each), each of which holds an eventfd, so
 * RLIMIT_NOFILE ends them; sources with a poll op only (evd_source.h),
 * which hold no fd: what the loop itself takes per source; and the raw
 * baseline, eventfd() then epoll_ctl(ADD) into one epoll set (the
 * epoll_ctl timed as the add). The add time "at 1k" is the median of adds
 * 1001-1100, "at the end" that of the last 100.
 */
struct add_run {
	unsigned int reached;  /* sources added */
	int err;               /* the failing call's errno (0: reached MAX) */
	const char *failed_at; /* which call */
	double at_1k, at_end;  /* median ns per add */
	double create_1k, create_end;
};

static void
bare_close(struct evd_source *s)
{
	free(s);
}

static const struct evd_source_ops bare_ops = { .kind = "bare", .poll = test_poll_none,
						.close = bare_close };

static int
bare_create(struct evd_source **out)
{
	struct evd_source *s = calloc(1, sizeof(*s));

	if (s == NULL)
		return -ENOMEM;
	CHECK_EQ(evd_source_init(s, &bare_ops, "bare", test_nop, NULL), 0);
	*out = s;
	return 0;
}

static double
median_of(const float *t, unsigned int from, unsigned int to)
{
	double v[256];
	unsigned int n = 0;

	for (unsigned int i = from; i < to && n < RTE_DIM(v); i++)
		v[n++] = t[i];
	return quantile(v, n, 0.5);
}

static void
add_figures(struct add_run *r, const float *add, const float *create)
{
	unsigned int n = r->reached, end = n > 100 ? n - 100 : 0;

	r->at_1k = n >= 1100 ? median_of(add, 1000, 1100) : 0;
	r->at_end = median_of(add, end, n);
	r->create_1k = n >= 1100 ? median_of(create, 1000, 1100) : 0;
	r->create_end = median_of(create, end, n);
}

static struct add_run
add_sources(bool bare, unsigned int max, float *add, float *create)
{
	struct evd_loop_conf conf = { .policy = "intr" };
	struct evd_source **src = calloc(max, sizeof(*src));
	struct add_run r = { 0 };
	struct evd_loop *loop;

	CHECK(src != NULL);
	CHECK_EQ(evd_loop_create(&conf, &loop), 0);
	while (r.reached < max) {
		uint64_t t0 = test_now_ns(), t1, t2;
		int rc = bare ? bare_create(&src[r.reached])
			      : evd_ring_create("r", 16, test_nop, NULL, &src[r.reached]);

		t1 = test_now_ns();
		if (rc < 0) {
			r.err = -rc;
			r.failed_at = bare ? "calloc" : "evd_ring_create";
			break;
		}
		rc = evd_loop_add(loop, src[r.reached]);
		t2 = test_now_ns();
		if (rc < 0) {
			CHECK_EQ(evd_source_destroy(src[r.reached]), 0);
			r.err = -rc;
			r.failed_at = "evd_loop_add";
			break;
		}
		create[r.reached] = (float)(t1 - t0);
		add[r.reached] = (float)(t2 - t1);
		r.reached++;
	}
	add_figures(&r, add, create);
	loop_free(loop, src, r.reached);
	free(src);
	return r;
}

static struct add_run
add_raw(unsigned int max, float *add, float *create)
{
	int epfd = epoll_create1(EPOLL_CLOEXEC), *fd = calloc(max, sizeof(*fd));
	struct add_run r = { 0 };

	CHECK(epfd >= 0 && fd != NULL);
	while (r.reached < max) {
		struct epoll_event ev = { .events = EPOLLIN, .data.u32 = r.reached };
		uint64_t t0 = test_now_ns(), t1, t2;

		fd[r.reached] = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
		t1 = test_now_ns();
		if (fd[r.reached] < 0) {
			r.err = errno;
			r.failed_at = "eventfd";
			break;
		}
		if (epoll_ctl(epfd, EPOLL_CTL_ADD, fd[r.reached], &ev) < 0) {
			r.err = errno;
			r.failed_at = "epoll_ctl";
			close(fd[r.reached]);
			break;
		}
		t2 = test_now_ns();
		create[r.reached] = (float)(t1 - t0);
		add[r.reached] = (float)(t2 - t1);
		r.reached++;
	}
	add_figures(&r, add, create);
	for (unsigned int i = 0; i < r.reached; i++)
		close(fd[i]);
	close(epfd);
	free(fd);
	return r;
}

static void
json_add_runs(const char *key, const struct add_run *r, int rounds, const char *end)
{
	double at1k[64], atend[64], c1k[64], cend[64];

	printf("\"%s\": {\"reached\": %u, \"error\": \"%s\", \"failed_at\": \"%s\", ", key,
	       r[0].reached, r[0].err ? strerror(r[0].err) : "", r[0].err ? r[0].failed_at : "");
	printf("\"reached_each\": [");
	for (int i = 0; i < rounds; i++) {
		printf("%u%s", r[i].reached, i + 1 < rounds ? ", " : "], ");
		at1k[i] = r[i].at_1k;
		atend[i] = r[i].at_end;
		c1k[i] = r[i].create_1k;
		cend[i] = r[i].create_end;
	}
	json_spread("add_ns_at_1k", at1k, (size_t)rounds, ", ");
	json_spread("add_ns_at_end", atend, (size_t)rounds, ", ");
	json_spread("create_ns_at_1k", c1k, (size_t)rounds, ", ");
	json_spread("create_ns_at_end", cend, (size_t)rounds, "}");
	printf("%s", end);
}

static void
bench_sources(unsigned int max, int rounds, rlim_t nofile)
{
	float *add = calloc(max, sizeof(*add)), *create = calloc(max, sizeof(*create));
	struct add_run run[3][64]; /* rings, poll-only, raw */
	rlim_t lim = raise_nofile(nofile);

	CHECK(add != NULL && create != NULL && rounds >= 1 && rounds <= 64);
	for (int i = 0; i < rounds; i++)
		for (int k = 0; k < 3; k++) {
			int s = (i + k) % 3;

			run[s][i] = s == 2 ? add_raw(max, add, create)
					   : add_sources(s == 1, max, add, create);
		}
	printf("{\"measure\": \"sources\", \"max\": %u, \"rounds\": %d, \"rlimit_nofile\": %llu, ",
	       max, rounds, (unsigned long long)lim);
	json_add_runs("evd_rings", run[0], rounds, ", ");
	json_add_runs("evd_poll_only", run[1], rounds, ", ");
	json_add_runs("raw", run[2], rounds, "}\n");
	free(add);
	free(create);
}

/* ---- 5. wake latency after a gap ------------------------------------------------ */

/*
 * A producer (pinned to CPU 1) posts one event, waits until the consumer
 * (CPU 0) handled it, lets it idle for the gap, and posts the next, stamped
 * with CLOCK_MONOTONIC; the consumer takes the clock in its handler. evd: a
 * loop of policy intr with one ring, run by evd_loop_run() (it arms and
 * sleeps as soon as a round is empty). raw: a thread in epoll_wait() on an
 * eventfd. Both consumers live through the whole run; blocks of SAMPLES
 * alternate between them, the order turning each round.
 */
struct lat_ctx {
	struct evd_loop *loop;
	struct evd_source *ring;
	int epfd, efd;
	uint64_t raw_stamp; /* the raw post's stamp (the write orders it) */
	int stop;           /* atomic: raw consumer, end */
	uint64_t done;      /* atomic: events handled, both consumers */
	double *slot;       /* where the sample under way goes */
};

static void
lat_handler(struct evd_source *s, void *burst, uint16_t n, void *arg)
{
	struct lat_ctx *c = arg;
	const struct evd_event *ev = burst;
	uint64_t t = test_now_ns();

	(void)s;
	CHECK_EQ(n, 1);
	*c->slot = (double)(t - ev[0].stamp);
	__atomic_fetch_add(&c->done, 1, __ATOMIC_RELEASE);
}

static void *
lat_evd_thread(void *arg)
{
	struct lat_ctx *c = arg;

	pin_self(0);
	CHECK_EQ(evd_loop_run(c->loop), 0);
	return NULL;
}

static void *
lat_raw_thread(void *arg)
{
	struct lat_ctx *c = arg;
	struct epoll_event ev;
	uint64_t v;

	pin_self(0);
	for (;;) {
		CHECK_EQ(epoll_wait(c->epfd, &ev, 1, -1), 1);
		if (__atomic_load_n(&c->stop, __ATOMIC_ACQUIRE))
			return NULL;
		CHECK_EQ(read(c->efd, &v, sizeof(v)), sizeof(v));
		*c->slot = (double)(test_now_ns() - __atomic_load_n(&c->raw_stamp, __ATOMIC_ACQUIRE));
		__atomic_fetch_add(&c->done, 1, __ATOMIC_RELEASE);
	}
}

/* One sample: wait until the last one was handled, idle the gap (spinning:
 * the producer's own wake would add to it), post. */
static void
lat_sample(struct lat_ctx *c, bool raw, uint64_t gap_ns, double *slot)
{
	uint64_t want = __atomic_load_n(&c->done, __ATOMIC_ACQUIRE) + 1, t0 = test_now_ns();

	c->slot = slot;
	while (test_now_ns() - t0 < gap_ns)
		rte_pause();
	if (raw) {
		uint64_t one = 1;

		__atomic_store_n(&c->raw_stamp, test_now_ns(), __ATOMIC_RELEASE);
		CHECK_EQ(write(c->efd, &one, sizeof(one)), sizeof(one));
	} else {
		struct evd_event ev = { .stamp = test_now_ns() };

		CHECK_EQ(evd_ring_post(c->ring, &ev), 0);
	}
	while (__atomic_load_n(&c->done, __ATOMIC_ACQUIRE) != want)
		rte_pause();
}

static void
bench_latency(int rounds, int samples, const uint64_t *gaps_us, int ngaps)
{
	struct evd_loop_conf conf = { .policy = "intr" };
	struct epoll_event ev = { .events = EPOLLIN };
	size_t per = (size_t)rounds * (size_t)samples;
	double *lat = calloc(per * 2 * (size_t)ngaps, sizeof(*lat));
	double *tmp = calloc(per, sizeof(*tmp)), *ratio = calloc((size_t)rounds, sizeof(*ratio));
	struct lat_ctx c = { 0 };
	pthread_t te, tr;
	uint64_t one = 1;

	CHECK(lat != NULL && tmp != NULL && ratio != NULL && rounds >= 1 && rounds <= 64);
	pin_self(1);
	CHECK_EQ(evd_loop_create(&conf, &c.loop), 0);
	CHECK_EQ(evd_ring_create("lat", 64, lat_handler, &c, &c.ring), 0);
	CHECK_EQ(evd_loop_add(c.loop, c.ring), 0);
	c.efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	c.epfd = epoll_create1(EPOLL_CLOEXEC);
	CHECK(c.efd >= 0 && c.epfd >= 0);
	CHECK_EQ(epoll_ctl(c.epfd, EPOLL_CTL_ADD, c.efd, &ev), 0);
	CHECK_EQ(pthread_create(&te, NULL, lat_evd_thread, &c), 0);
	CHECK_EQ(pthread_create(&tr, NULL, lat_raw_thread, &c), 0);
	for (int w = 0; w < 50; w++) { /* warm both */
		double sink;

		lat_sample(&c, w & 1, 20000, &sink);
	}
	/* lat[((g * 2 + raw) * rounds + r) * samples + s] */
	for (int r = 0; r < rounds; r++)
		for (int g = 0; g < ngaps; g++)
			for (int k = 0; k < 2; k++) {
				int raw = (k + r + g) % 2;
				double *at = lat + ((size_t)(g * 2 + raw) * (size_t)rounds + (size_t)r) *
							   (size_t)samples;

				for (int s = 0; s < samples; s++)
					lat_sample(&c, raw, gaps_us[g] * 1000, &at[s]);
			}
	CHECK_EQ(evd_loop_stop(c.loop), 0);
	__atomic_store_n(&c.stop, 1, __ATOMIC_RELEASE);
	CHECK_EQ(write(c.efd, &one, sizeof(one)), sizeof(one));
	CHECK_EQ(pthread_join(te, NULL), 0);
	CHECK_EQ(pthread_join(tr, NULL), 0);
	{
		struct evd_loop_stats st;

		CHECK_EQ(evd_loop_stats_get(c.loop, &st), 0);
		CHECK_EQ(st.events, 25 + per * (size_t)ngaps);
		CHECK_EQ(st.lost_wakeups, 0);
		printf("{\"measure\": \"latency\", \"rounds\": %d, \"samples_per_block\": %d, "
		       "\"unit\": \"ns\", \"evd_sleeps\": %" PRIu64 ", \"evd_repoll_hits\": %" PRIu64
		       ", \"evd_events\": %" PRIu64 ", \"gaps\": [", rounds, samples, st.sleeps,
		       st.repoll_hits, st.events);
	}
	for (int g = 0; g < ngaps; g++) {
		double p50[2][64]; /* each round's */

		printf("{\"gap_us\": %" PRIu64 ", ", gaps_us[g]);
		for (int raw = 0; raw < 2; raw++) {
			double *all = lat + (size_t)(g * 2 + raw) * per;

			for (int r = 0; r < rounds; r++) {
				memcpy(tmp, all + (size_t)r * (size_t)samples, sizeof(*tmp) * (size_t)samples);
				p50[raw][r] = quantile(tmp, (size_t)samples, 0.5);
			}
			memcpy(tmp, all, sizeof(*tmp) * per);
			printf("\"%s\": {\"p50\": %.0f, \"p90\": %.0f, \"p99\": %.0f, ", raw ? "raw" : "evd",
			       quantile(tmp, per, 0.5), quantile(tmp, per, 0.9), quantile(tmp, per, 0.99));
			memcpy(tmp, p50[raw], sizeof(*tmp) * (size_t)rounds);
			json_spread("round_p50", tmp, (size_t)rounds, "}, ");
		}
		for (int r = 0; r < rounds; r++)
			ratio[r] = p50[0][r] / p50[1][r];
		json_spread("p50_ratio_by_round", ratio, (size_t)rounds, g + 1 < ngaps ? "}, " : "}");
	}
	printf("]}\n");
	CHECK_EQ(evd_loop_remove(c.loop, c.ring), 0);
	CHECK_EQ(evd_source_destroy(c.ring), 0);
	CHECK_EQ(evd_loop_destroy(c.loop), 0);
	close(c.efd);
	close(c.epfd);
	free(lat);
	free(tmp);
	free(ratio);
}

/* ---- 6. consumer instructions per event ------------------------------------------ */

/*
 * Bursts of 32 events through one ring, one thread: post 32 (not counted),
 * then consume them (counted): evd_loop_step() of a loop of policy poll
 * (poll the ring, run the handler, account), against
 * rte_ring_dequeue_burst_elem() of 32 evd_events from an rte_ring (MP/SC)
 * and a call of the same handler.
 */
struct consume_ctx {
	struct evd_loop *loop;
	struct evd_source *ring;
	struct rte_ring *rr;
	uint64_t got;
};

static void __attribute__((noinline, noclone))
consume_evd(void *ctx, uint64_t n)
{
	struct consume_ctx *c = ctx;

	for (uint64_t i = 0; i < n; i++)
		if (unlikely(evd_loop_step(c->loop) != 32))
			abort();
}

static void __attribute__((noinline, noclone))
consume_raw(void *ctx, uint64_t n)
{
	struct consume_ctx *c = ctx;
	struct evd_event burst[32];

	for (uint64_t i = 0; i < n; i++) {
		unsigned int k = rte_ring_dequeue_burst_elem(c->rr, burst, sizeof(burst[0]), 32, NULL);

		if (unlikely(k != 32))
			abort();
		raw_handler(NULL, burst, (uint16_t)k, &c->got);
	}
}

static void
bench_consume(bool raw, uint64_t events)
{
	struct evd_loop_conf conf = { .policy = "poll", .burst = 32 };
	struct evd_event ev[32] = { 0 };
	struct consume_ctx c = { 0 };
	uint64_t bursts = events / 32;

	if (raw) {
		c.rr = raw_ring(1024, sizeof(struct evd_event));
	} else {
		CHECK_EQ(evd_loop_create(&conf, &c.loop), 0);
		CHECK_EQ(evd_ring_create("r", 1024, count_events, &c.got, &c.ring), 0);
		CHECK_EQ(evd_loop_add(c.loop, c.ring), 0);
	}
	for (uint64_t b = 0; b < bursts + 4; b++) {
		if (raw)
			CHECK_EQ(rte_ring_enqueue_burst_elem(c.rr, ev, sizeof(ev[0]), 32, NULL), 32);
		else
			CHECK_EQ(evd_ring_post_burst(c.ring, ev, 32), 32);
		if (b < 4) /* warm */
			(raw ? consume_raw : consume_evd)(&c, 1);
		else
			measured(raw ? consume_raw : consume_evd, &c, 1);
	}
	CHECK_EQ(c.got, (bursts + 4) * 32);
	if (raw) {
		free(c.rr);
	} else {
		CHECK_EQ(evd_loop_remove(c.loop, c.ring), 0);
		CHECK_EQ(evd_source_destroy(c.ring), 0);
		CHECK_EQ(evd_loop_destroy(c.loop), 0);
	}
	printf("{\"measure\": \"consume\", \"variant\": \"%s\", \"burst\": 32, \"units\": %" PRIu64
	       ", \"unit\": \"event\"}\n", raw ? "raw" : "evd", bursts * 32);
}

/* ---- 7. idle CPU per loop ------------------------------------------------------ */

/*
 * K loops of the default policy (adaptive), one idle ring each, no timers,
 * each run by evd_loop_run() on its own thread; K raw threads each in
 * epoll_wait(-1) on an eventfd. Once every loop sleeps, each thread's CPU
 * clock and each loop's waits are read over SECONDS. The process's
 * getrusage() over the same span is given too (it includes the main
 * thread, asleep).
 */
struct idle_thread {
	pthread_t th;
	struct evd_loop *loop;
	struct evd_source *ring;
	int epfd, efd;
	uint64_t waits; /* raw: returns from epoll_wait (atomic) */
};

static void *
idle_evd_thread(void *arg)
{
	CHECK_EQ(evd_loop_run(((struct idle_thread *)arg)->loop), 0);
	return NULL;
}

static void *
idle_raw_thread(void *arg)
{
	struct idle_thread *t = arg;
	struct epoll_event ev;

	for (;;) {
		int n = epoll_wait(t->epfd, &ev, 1, -1);

		__atomic_fetch_add(&t->waits, 1, __ATOMIC_RELAXED);
		if (n == 1)
			return NULL; /* only the stop writes the eventfd */
	}
}

static uint64_t
thread_cpu_ns(pthread_t th)
{
	clockid_t id;
	struct timespec ts;

	CHECK_EQ(pthread_getcpuclockid(th, &id), 0);
	CHECK_EQ(clock_gettime(id, &ts), 0);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t
rusage_cpu_ns(void)
{
	struct rusage ru;

	CHECK_EQ(getrusage(RUSAGE_SELF, &ru), 0);
	return ((uint64_t)ru.ru_utime.tv_sec + (uint64_t)ru.ru_stime.tv_sec) * 1000000000ull +
	       ((uint64_t)ru.ru_utime.tv_usec + (uint64_t)ru.ru_stime.tv_usec) * 1000ull;
}

static uint64_t
idle_waits(struct idle_thread *t, bool raw)
{
	struct evd_loop_stats st;

	if (raw)
		return __atomic_load_n(&t->waits, __ATOMIC_RELAXED);
	CHECK_EQ(evd_loop_stats_get(t->loop, &st), 0);
	return st.wakeups + st.sleep_timeouts + st.naps; /* every return from a wait */
}

static void
idle_run(bool raw, int k, uint64_t ms, const char *end)
{
	struct idle_thread *t = calloc((size_t)k, sizeof(*t));
	uint64_t *cpu0 = calloc((size_t)k, sizeof(*cpu0)), *w0 = calloc((size_t)k, sizeof(*w0));
	double *pct = calloc((size_t)k, sizeof(*pct)), *wps = calloc((size_t)k, sizeof(*wps));
	uint64_t t0, t1, ru0, ru1, one = 1;
	double sum = 0;

	CHECK(t != NULL && cpu0 != NULL && w0 != NULL && pct != NULL && wps != NULL);
	for (int i = 0; i < k; i++) {
		if (raw) {
			struct epoll_event ev = { .events = EPOLLIN };

			t[i].efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
			t[i].epfd = epoll_create1(EPOLL_CLOEXEC);
			CHECK(t[i].efd >= 0 && t[i].epfd >= 0);
			CHECK_EQ(epoll_ctl(t[i].epfd, EPOLL_CTL_ADD, t[i].efd, &ev), 0);
			CHECK_EQ(pthread_create(&t[i].th, NULL, idle_raw_thread, &t[i]), 0);
		} else {
			CHECK_EQ(evd_loop_create(NULL, &t[i].loop), 0);
			CHECK_EQ(evd_ring_create("idle", 16, test_nop, NULL, &t[i].ring), 0);
			CHECK_EQ(evd_loop_add(t[i].loop, t[i].ring), 0);
			CHECK_EQ(pthread_create(&t[i].th, NULL, idle_evd_thread, &t[i]), 0);
		}
	}
	/* settled: every loop asleep, then 100 ms more (the raw threads are in
	 * their first epoll_wait by then) */
	for (int i = 0; !raw && i < k; i++)
		test_wait_asleep(t[i].loop, 1000);
	test_sleep_us(100000);
	ru0 = rusage_cpu_ns();
	t0 = test_now_ns();
	for (int i = 0; i < k; i++) {
		cpu0[i] = thread_cpu_ns(t[i].th);
		w0[i] = idle_waits(&t[i], raw);
	}
	test_sleep_us(ms * 1000);
	for (int i = 0; i < k; i++) {
		pct[i] = (double)(thread_cpu_ns(t[i].th) - cpu0[i]);
		wps[i] = (double)(idle_waits(&t[i], raw) - w0[i]);
	}
	t1 = test_now_ns();
	ru1 = rusage_cpu_ns();
	for (int i = 0; i < k; i++) {
		pct[i] = 100.0 * pct[i] / (double)(t1 - t0);
		wps[i] = wps[i] * 1e9 / (double)(t1 - t0);
		sum += pct[i];
	}
	for (int i = 0; i < k; i++) {
		if (raw) {
			CHECK_EQ(write(t[i].efd, &one, sizeof(one)), sizeof(one));
			CHECK_EQ(pthread_join(t[i].th, NULL), 0);
			close(t[i].efd);
			close(t[i].epfd);
		} else {
			CHECK_EQ(evd_loop_stop(t[i].loop), 0);
			CHECK_EQ(pthread_join(t[i].th, NULL), 0);
			CHECK_EQ(evd_loop_remove(t[i].loop, t[i].ring), 0);
			CHECK_EQ(evd_source_destroy(t[i].ring), 0);
			CHECK_EQ(evd_loop_destroy(t[i].loop), 0);
		}
	}
	printf("{\"variant\": \"%s\", \"loops\": %d, \"seconds\": %.3f, \"cpu_pct_sum\": %.5f, "
	       "\"process_cpu_pct\": %.5f, ", raw ? "raw" : "evd", k, (double)(t1 - t0) / 1e9, sum,
	       100.0 * (double)(ru1 - ru0) / (double)(t1 - t0));
	json_spread("cpu_pct_per_loop", pct, (size_t)k, ", ");
	json_spread("wakeups_per_s_per_loop", wps, (size_t)k, "}");
	printf("%s", end);
	free(t);
	free(cpu0);
	free(w0);
	free(pct);
	free(wps);
}

static void
bench_idle(uint64_t ms, int rounds, const int *counts, int ncounts)
{
	struct evd_loop *warm;

	/* the first adaptive loop measures the calibration (threads, waits):
	 * done here, before anything is timed */
	CHECK_EQ(evd_loop_create(NULL, &warm), 0);
	CHECK_EQ(evd_loop_destroy(warm), 0);
	printf("{\"measure\": \"idle\", \"policy\": \"adaptive\", \"runs\": [");
	for (int r = 0; r < rounds; r++)
		for (int i = 0; i < ncounts; i++)
			for (int v = 0; v < 2; v++) {
				bool raw = (v + r + i) % 2;
				bool last = r + 1 == rounds && i + 1 == ncounts && v == 1;

				idle_run(raw, counts[i], ms, last ? "" : ", ");
				fflush(stdout);
			}
	printf("]}\n");
}

/* ---- 8. state per loop and per source ------------------------------------------ */

/* Bytes malloc holds (every arena: chunks in use, mmapped ones too), so a
 * difference is what a call allocated and kept, malloc's headers included. */
static int64_t
heap_bytes(void)
{
	struct mallinfo2 mi = mallinfo2();

	return (int64_t)(mi.uordblks + mi.hblkhd);
}

static void
bench_state(void)
{
	static const char *const policies[] = { "intr", "poll", "adaptive" };
	struct evd_loop *loops[RTE_DIM(policies)], *warm;
	struct evd_source **src;
	const unsigned int n = 1024;
	int64_t b0, loop_bytes[RTE_DIM(policies)], ring16, ring1024, add_intr, add_adaptive, fdsrc;
	int64_t served16;
	struct evd_source *one;

	src = calloc(n, sizeof(*src));
	CHECK(src != NULL);
	raise_nofile(0);
	/* warm: the calibration, the telemetry registry, the log's first use */
	CHECK_EQ(evd_loop_create(NULL, &warm), 0);
	CHECK_EQ(evd_ring_create("w", 16, test_nop, NULL, &one), 0);
	CHECK_EQ(evd_loop_add(warm, one), 0);
	CHECK_EQ(evd_loop_remove(warm, one), 0);
	CHECK_EQ(evd_source_destroy(one), 0);
	CHECK_EQ(evd_loop_destroy(warm), 0);

	for (size_t p = 0; p < RTE_DIM(policies); p++) {
		struct evd_loop_conf conf = { .policy = policies[p] };

		b0 = heap_bytes();
		CHECK_EQ(evd_loop_create(&conf, &loops[p]), 0);
		loop_bytes[p] = heap_bytes() - b0;
	}
	/* a ring's bytes: its struct and its slots (32 bytes an event) */
	b0 = heap_bytes();
	for (unsigned int i = 0; i < n; i++)
		CHECK_EQ(evd_ring_create("r", 16, test_nop, NULL, &src[i]), 0);
	ring16 = (heap_bytes() - b0) / n;
	/* what the loop keeps per source: added to an intr loop, then to an
	 * adaptive one (does the policy keep anything per source?) */
	b0 = heap_bytes();
	for (unsigned int i = 0; i < n; i++)
		CHECK_EQ(evd_loop_add(loops[0], src[i]), 0);
	add_intr = heap_bytes() - b0;
	for (unsigned int i = 0; i < n; i++)
		CHECK_EQ(evd_loop_remove(loops[0], src[i]), 0);
	b0 = heap_bytes();
	for (unsigned int i = 0; i < n; i++)
		CHECK_EQ(evd_loop_add(loops[2], src[i]), 0);
	add_adaptive = heap_bytes() - b0;
	/* what adaptive keeps for the sources it learns (a slot each, 8 at
	 * most): 16 rings served one a round */
	b0 = heap_bytes();
	for (unsigned int i = 0; i < 16; i++) {
		const struct evd_event ev = { .u64 = i };

		CHECK_EQ(evd_ring_post(src[i], &ev), 0);
		CHECK(evd_loop_poll(loops[2], 32) >= 0);
	}
	served16 = heap_bytes() - b0;
	for (unsigned int i = 0; i < n; i++) {
		CHECK_EQ(evd_loop_remove(loops[2], src[i]), 0);
		CHECK_EQ(evd_source_destroy(src[i]), 0);
	}
	b0 = heap_bytes();
	for (unsigned int i = 0; i < n; i++)
		CHECK_EQ(evd_ring_create("r", 1024, test_nop, NULL, &src[i]), 0);
	ring1024 = (heap_bytes() - b0) / n;
	for (unsigned int i = 0; i < n; i++)
		CHECK_EQ(evd_source_destroy(src[i]), 0);
	b0 = heap_bytes();
	for (unsigned int i = 0; i < n; i++)
		CHECK_EQ(evd_fd_create("fd", 0, 0, test_nop, NULL, &src[i]), 0);
	fdsrc = (heap_bytes() - b0) / n;
	for (unsigned int i = 0; i < n; i++)
		CHECK_EQ(evd_source_destroy(src[i]), 0);
	for (size_t p = 0; p < RTE_DIM(policies); p++)
		CHECK_EQ(evd_loop_destroy(loops[p]), 0);
	free(src);

	/* adaptive's state: an adaptive loop less a poll loop (each has a new
	 * doorbell: the intr loop took the warm loop's from the pool); under a
	 * sanitizer's allocator mallinfo2() does not move: no figures */
	CHECK(loop_bytes[0] == 0 || loop_bytes[2] > loop_bytes[0]);
	printf("{\"measure\": \"state\", \"unit\": \"bytes malloc holds (chunks, headers included)\", "
	       "\"loop\": {\"intr\": %" PRId64 ", \"poll\": %" PRId64 ", \"adaptive\": %" PRId64 "}, "
	       "\"adaptive_state\": %" PRId64 ", \"ring16_create\": %" PRId64
	       ", \"ring1024_create\": %" PRId64 ", \"rte_ring16_memsize\": %zd"
	       ", \"rte_ring1024_memsize\": %zd, \"fd_create\": %" PRId64
	       ", \"add_per_source_intr\": %.1f, \"add_per_source_adaptive\": %.1f, \"sources\": %u"
	       ", \"adaptive_served16\": %" PRId64 "}\n",
	       loop_bytes[0], loop_bytes[1], loop_bytes[2], loop_bytes[2] - loop_bytes[1], ring16,
	       ring1024, rte_ring_get_memsize_elem(sizeof(struct evd_event), 16),
	       rte_ring_get_memsize_elem(sizeof(struct evd_event), 1024), fdsrc,
	       (double)add_intr / n, (double)add_adaptive / n, n, served16);
}

/* ---- main -------------------------------------------------------------------------- */

/* The meson test (suite bench): every measure, small, in a few seconds;
 * each checks what it delivered (CHECK aborts). The figures are not
 * looked at: ./scripts/bench scale takes them. */
static void
check(void)
{
	static const uint64_t gaps[] = { 5, 200 };
	static const int counts[] = { 2 };

	raise_nofile(0);
	bench_wake(false, 64, 3);
	bench_wake(true, 0, 3);
	bench_sweep_ring(64, 100, 3);
	bench_sweep_ring_cg(false, 16, 10);
	bench_sweep_fd(64, 20, 3);
	bench_sources(1200, 1, 0);
	bench_latency(2, 10, gaps, RTE_DIM(gaps));
	bench_consume(false, 3200);
	bench_consume(true, 3200);
	bench_state(); /* the first adaptive loop: the calibration */
	bench_idle(200, 1, counts, RTE_DIM(counts));
}

static uint64_t
arg_u64(int argc, char **argv, int i, uint64_t def)
{
	return argc > i ? strtoull(argv[i], NULL, 10) : def;
}

int
main(int argc, char **argv)
{
	const char *cmd = argc > 1 ? argv[1] : "check";
	bool raw = argc > 2 && strcmp(argv[2], "raw") == 0;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (strcmp(cmd, "check") == 0) {
		check();
	} else if (strcmp(cmd, "wake") == 0) {
		raise_nofile(0);
		bench_wake(raw, (unsigned int)arg_u64(argc, argv, 3, 1024), arg_u64(argc, argv, 4, 20));
	} else if (strcmp(cmd, "sweep-ring") == 0) {
		bench_sweep_ring((unsigned int)arg_u64(argc, argv, 2, 1024), arg_u64(argc, argv, 3, 2000),
				 (int)arg_u64(argc, argv, 4, 21));
	} else if (strcmp(cmd, "sweep-ring-cg") == 0) {
		bench_sweep_ring_cg(raw, (unsigned int)arg_u64(argc, argv, 3, 1024),
				    arg_u64(argc, argv, 4, 100));
	} else if (strcmp(cmd, "sweep-fd") == 0) {
		raise_nofile(0);
		bench_sweep_fd((unsigned int)arg_u64(argc, argv, 2, 1024), arg_u64(argc, argv, 3, 200),
			       (int)arg_u64(argc, argv, 4, 21));
	} else if (strcmp(cmd, "sources") == 0) {
		bench_sources((unsigned int)arg_u64(argc, argv, 2, 100000), (int)arg_u64(argc, argv, 3, 3),
			      (rlim_t)arg_u64(argc, argv, 4, 0));
	} else if (strcmp(cmd, "latency") == 0) {
		uint64_t gaps[16];
		int n = 0;

		for (int i = 4; i < argc && n < 16; i++)
			gaps[n++] = strtoull(argv[i], NULL, 10);
		if (n == 0) {
			gaps[n++] = 5;
			gaps[n++] = 200;
			gaps[n++] = 2000;
		}
		bench_latency((int)arg_u64(argc, argv, 2, 5), (int)arg_u64(argc, argv, 3, 200), gaps, n);
	} else if (strcmp(cmd, "consume") == 0) {
		bench_consume(raw, arg_u64(argc, argv, 3, 320000));
	} else if (strcmp(cmd, "idle") == 0) {
		int counts[16], n = 0;

		for (int i = 4; i < argc && n < 16; i++)
			counts[n++] = atoi(argv[i]);
		if (n == 0) {
			counts[n++] = 1;
			counts[n++] = 8;
			counts[n++] = 64;
		}
		raise_nofile(0);
		bench_idle(arg_u64(argc, argv, 2, 5) * 1000, (int)arg_u64(argc, argv, 3, 1), counts, n);
	} else if (strcmp(cmd, "state") == 0) {
		bench_state();
	} else {
		fprintf(stderr, "bench_scale: no subcommand '%s' (see the comment at the top of "
			"tests/bench_scale.c)\n", cmd);
		return 2;
	}
	return 0;
}
