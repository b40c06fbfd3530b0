/* SPDX-License-Identifier: BSD-3-Clause */
/* Tiny test harness: CHECK aborts the test program with the failing line. */
#ifndef EVD_TEST_H
#define EVD_TEST_H

#include <errno.h>
#include <inttypes.h>
#include <semaphore.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <rte_log.h>

#include <evd.h>
#include <evd_policy.h>

#define CHECK(cond)                                                                       \
	do {                                                                              \
		if (!(cond)) {                                                            \
			fprintf(stderr, "FAIL %s:%d: %s\n", __FILE__, __LINE__, #cond);   \
			exit(1);                                                          \
		}                                                                         \
	} while (0)

#define CHECK_EQ(a, b)                                                                    \
	do {                                                                              \
		long long _a = (long long)(a), _b = (long long)(b);                       \
		if (_a != _b) {                                                           \
			fprintf(stderr, "FAIL %s:%d: %s == %s (%lld != %lld)\n", __FILE__,  \
				__LINE__, #a, #b, _a, _b);                                \
			exit(1);                                                          \
		}                                                                         \
	} while (0)

#define TEST(fn)                                                                          \
	do {                                                                              \
		printf("# %s\n", #fn);                                                    \
		fflush(stdout);                                                           \
		fn();                                                                     \
		printf("ok %s\n", #fn);                                                   \
	} while (0)

/* In main(argc, argv) of a test that takes [NAME]: run fn if no NAME was
 * given or NAME is fn without its "test_". */
#define TEST_NAMED(fn)                                                                    \
	do {                                                                              \
		if (argc < 2 || strcmp(argv[1], #fn + 5) == 0)                            \
			TEST(fn);                                                         \
	} while (0)

#define TEST_ARGS(fn, ...)                                                                \
	do {                                                                              \
		printf("# %s\n", #fn);                                                    \
		fflush(stdout);                                                           \
		fn(__VA_ARGS__);                                                          \
		printf("ok %s\n", #fn);                                                   \
	} while (0)

/* The log while one call runs (rte_openlog_stream into memory). */
struct test_log {
	FILE *f;
	char *buf;
	size_t len;
};

static inline struct test_log *
test_log(void)
{
	static struct test_log l;

	return &l;
}

static inline void
test_log_begin(void)
{
	struct test_log *l = test_log();

	l->f = open_memstream(&l->buf, &l->len);
	CHECK(l->f != NULL);
	CHECK_EQ(rte_openlog_stream(l->f), 0);
}

/* A refused call logged exactly one line of its own (lines that start with
 * @p prefix: another library's are not counted), naming @p want. */
static inline void
test_log_end(const char *prefix, const char *want, const char *file, int line)
{
	struct test_log *l = test_log();
	int lines = 0;

	rte_openlog_stream(NULL);
	fclose(l->f);
	for (const char *p = l->buf; (p = strstr(p, prefix)) != NULL; p++)
		lines++;
	if (lines != 1 || strstr(l->buf, want) == NULL) {
		fprintf(stderr, "FAIL %s:%d: %d lines of %s, want one naming '%s':\n%s", file,
			line, lines, prefix, want, l->buf);
		exit(1);
	}
	free(l->buf);
	l->buf = NULL;
}

/* call returns want_rc and logs one line (prefix ...) naming want_log */
#define CHECK_LOGGED(call, want_rc, prefix, want_log)                                     \
	do {                                                                              \
		test_log_begin();                                                         \
		CHECK_EQ((call), (want_rc));                                              \
		test_log_end((prefix), (want_log), __FILE__, __LINE__);                   \
	} while (0)

static inline uint64_t
test_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* sem_wait through signals (a profiler's, a debugger's): a post never lost */
static inline void
test_wait_sem(sem_t *s)
{
	while (sem_wait(s) < 0)
		CHECK(errno == EINTR);
}

static inline void
test_sleep_us(uint64_t us)
{
	struct timespec ts = { .tv_sec = (time_t)(us / 1000000), .tv_nsec = (long)(us % 1000000) * 1000 };

	nanosleep(&ts, NULL);
}

/* Until the loop (run on another thread) reports that it sleeps, reading
 * its stats every poll_us. */
static inline void
test_wait_asleep(struct evd_loop *loop, uint64_t poll_us)
{
	struct evd_loop_stats st;

	do {
		test_sleep_us(poll_us);
		CHECK_EQ(evd_loop_stats_get(loop, &st), 0);
	} while (st.mode != EVD_MODE_SLEEP);
}

/* The tests' pseudo-random numbers (xorshift64). */
static inline uint64_t
test_xorshift(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* A handler that ignores what it is given. */
static inline void
test_nop(struct evd_source *s, void *b, uint16_t n, void *a)
{
	(void)s;
	(void)b;
	(void)n;
	(void)a;
}

/* A poll op that finds nothing. */
static inline int
test_poll_none(struct evd_source *s, uint16_t budget)
{
	(void)s;
	(void)budget;
	return 0;
}

/* An idle gap from @p start (the last completion) to @p now as the loop
 * makes one: its first empty round, 100 ns in, decides (adaptive learns
 * only gaps in which a rule was consulted); then a round finds @p n
 * completions, after one each from the @p n_ids sources @p ids (a loop of
 * several; none: a loop of one). */
static inline void
test_gap(struct evd_policy *p, uint64_t start, uint64_t now, const uint32_t *ids, int n_ids,
	 uint32_t n)
{
	struct evd_policy_input in = { .now_ns = start + 100, .idle_ns = 100, .idle_rounds = 1 };
	uint64_t arg;

	CHECK(evd_policy_decide(p, &in, &arg) >= 0);
	for (int i = 0; i < n_ids; i++)
		evd_policy_source_events(p, now, ids[i], 1);
	evd_policy_events(p, now, n);
}

/* A virtual clock (SPDK style): tests move it by hand. */
struct vclock {
	uint64_t now;
};

static inline uint64_t
vclock_now(void *arg)
{
	return __atomic_load_n(&((struct vclock *)arg)->now, __ATOMIC_RELAXED);
}

static inline void
vclock_advance(struct vclock *c, uint64_t ns)
{
	__atomic_fetch_add(&c->now, ns, __ATOMIC_RELAXED);
}

/* A virtual clock that also owns the waits: it records each and, where
 * told to, posts to the ring in the middle of a sleep. */
struct vwait {
	struct vclock vc;
	struct evd_source *ring;
	uint32_t mode;
	bool armed, post;
	uint64_t max_ns;
	int calls;
};

static inline void
vwait_wait(void *arg, uint32_t mode, bool armed, uint64_t max_ns)
{
	struct vwait *w = arg;
	struct evd_event ev = { 0 };

	w->calls++;
	w->mode = mode;
	w->armed = armed;
	w->max_ns = max_ns;
	if (w->post) {
		vclock_advance(&w->vc, 300000);
		CHECK_EQ(evd_ring_post(w->ring, &ev), 0);
		w->post = false;
	} else {
		vclock_advance(&w->vc, max_ns);
	}
}

static inline uint64_t
vwait_now(void *arg)
{
	return vclock_now(&((struct vwait *)arg)->vc);
}

/*
 * A latency budget, in microseconds, that leaves room for naps on this
 * machine whatever B and L were measured (sanitizer builds inflate both):
 * the nap is the budget less L, and L is flat past its last point, so the
 * nap is at least 4 B + max L + slack_us (max L with the wakes' tail: the
 * 99th percentile of the wakes less their mean after 10 us).
 */
static inline uint64_t
test_nap_budget_us(uint64_t slack_us)
{
	const struct evd_policy_env *env = evd_policy_env_get();
	uint64_t lmax = 0;

	for (int k = 0; k < EVD_ENV_WAKE_POINTS; k++) {
		uint64_t t = (uint64_t)evd_policy_env_timeout_late_ns(env, env->wake_at_ns[k]);

		lmax = lmax > env->wake_ns[k] ? lmax : env->wake_ns[k];
		lmax = lmax > t ? lmax : t; /* a nap's first estimate is T */
	}
	/* and the wakes' tail, which a target prices (a loaded machine's can
	 * reach milliseconds: without it, a wake within the budget by its mean
	 * was priced late, and the policy spun where the tests wait for sleeps) */
	if (env->wake_p99_ns > env->wake_ns[0])
		lmax += env->wake_p99_ns - env->wake_ns[0];
	return (4 * env->sleep_wake_ns + 2 * lmax) / 1000 + slack_us;
}

/*
 * The stress tests' sleep timeouts under @p spec in a loop whose sleeps end
 * after @p max_sleep_us: none under intr, since each would be a missed
 * wake; some where the loop bounds the sleeps short (1 ms), on purpose;
 * under adaptive the model's guard may time out on purpose too (a timeout
 * that finds completions no notification announced still counts as a
 * lost wakeup, which the tests check for every policy).
 */
static inline void
test_check_sleep_timeouts(const char *spec, uint32_t max_sleep_us, uint64_t timeouts)
{
	if (max_sleep_us <= 1000)
		CHECK(timeouts > 0); /* the bound ran */
	else if (strncmp(spec, "adaptive", 8) != 0)
		CHECK_EQ(timeouts, 0);
}

/*
 * The stress tests' policies: a spec as given, or "adaptive-nap": adaptive
 * with a p99 target that leaves room for naps (test_nap_budget_us) and its
 * spin capped at 50 us; or "adaptive-bounded": adaptive, spin capped at
 * 50 us, in a loop whose sleeps end after 1 ms (*max_sleep_us), so that
 * producers race timeouts too. *naps tells whether naps are expected.
 */
static inline const char *
test_stress_policy(const char *name, char *buf, size_t len, bool *naps, uint32_t *max_sleep_us)
{
	*naps = strcmp(name, "adaptive-nap") == 0;
	if (strcmp(name, "adaptive-bounded") == 0) {
		*max_sleep_us = 1000;
		return "adaptive:spin_max_us=50";
	}
	if (!*naps)
		return name;
	snprintf(buf, len, "adaptive:p99_us=%" PRIu64 ",spin_max_us=50", test_nap_budget_us(300));
	return buf;
}

#endif
