/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Fault injection and soak. One loop, run by its own thread, serves two
 * multi-producer rings and two strict sources (tests/strict_source.c) while
 * four producer threads post with per-producer sequence numbers and a fault
 * thread injects one kind of fault:
 *   arm-fail, poll-fail, ack-eagain, signal-storm (epoll_wait EINTR),
 *   eventfd-overflow, ring-full, slow-handler, remove-while-armed, stop-asleep.
 * Each case: every event is delivered exactly once, the loop keeps serving
 * the other sources, and the injected error is reported (on_error) and
 * counted (stats) where it is an error.
 *
 *   test_faults                 every case, about 1 s each
 *   test_faults --soak SECONDS  random faults, sources and rates, mixed, with
 *                               stops and restarts; checks that memory stays
 *                               flat (a long run: --soak 3600)
 */
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <evd.h>
#include <evd_source.h>
#include <evd_private.h> /* the loop's bell, to push its eventfd to overflow */

#include "evd_test.h"
#include "strict_source.h"

#define N_PROD 4
#define N_RING 2
#define N_STRICT 2

enum fault {
	F_NONE, F_ARM, F_POLL, F_ACK_EAGAIN, F_SIGNALS, F_EVENTFD_OVERFLOW, F_RING_FULL,
	F_SLOW_HANDLER, F_REMOVE_ARMED, F_STOP_ASLEEP, F_COUNT
};

static const char *const fault_names[F_COUNT] = {
	"none", "arm-fail", "poll-fail", "ack-eagain", "signal-storm", "eventfd-overflow",
	"ring-full", "slow-handler", "remove-while-armed", "stop-asleep",
};

struct world {
	struct evd_loop *loop;
	struct evd_source *ring[N_RING];
	struct strict_source strict[N_STRICT];
	pthread_t loop_thread;
	int running;                 /* atomic */
	uint64_t next_seq[N_PROD];   /* loop thread */
	uint64_t ring_delivered;     /* atomic */
	uint64_t strict_delivered;   /* atomic */
	uint64_t dup_or_gap;
	uint64_t errors_reported;    /* atomic: on_error */
	uint64_t per_prod;
	uint64_t posted_ring;        /* atomic */
	uint64_t posted_strict;      /* atomic */
	uint64_t full_seen;          /* atomic */
	int producers_done;          /* atomic */
	int slow;
	unsigned int seed;
	struct evd_timer *remover;
	int removed_flips;
};

static void
on_error(struct evd_loop *loop, struct evd_source *src, int err, void *arg)
{
	(void)loop;
	(void)src;
	(void)err;
	__atomic_fetch_add(&((struct world *)arg)->errors_reported, 1, __ATOMIC_RELAXED);
}

static void
on_ring(struct evd_source *src, void *burst, uint16_t n, void *arg)
{
	struct world *w = arg;
	struct evd_event *ev = burst;

	(void)src;
	for (uint16_t i = 0; i < n; i++) {
		uint32_t p = ev[i].type;

		if (p >= N_PROD || ev[i].u64 != w->next_seq[p])
			w->dup_or_gap++;
		else
			w->next_seq[p]++;
	}
	__atomic_fetch_add(&w->ring_delivered, n, __ATOMIC_RELAXED);
	if (w->slow && (w->ring_delivered % 97) == 0)
		test_sleep_us(1000); /* a slow handler */
}

static void
on_strict(struct evd_source *src, void *burst, uint16_t n, void *arg)
{
	(void)src;
	(void)burst;
	__atomic_fetch_add(&((struct world *)arg)->strict_delivered, n, __ATOMIC_RELAXED);
}

static void
on_signal(int sig)
{
	(void)sig;
}

struct producer {
	struct world *w;
	uint32_t id;
};

static void *
produce(void *arg)
{
	struct producer *p = arg;
	struct world *w = p->w;
	uint64_t rnd = (p->id + 1) * 0x9e3779b97f4a7c15ull + w->seed;
	struct evd_event ev = { .type = p->id };

	for (uint64_t seq = 0; seq < w->per_prod; seq++) {
		ev.u64 = seq;
		while (evd_ring_post(w->ring[p->id % N_RING], &ev) == -ENOBUFS) {
			__atomic_fetch_add(&w->full_seen, 1, __ATOMIC_RELAXED);
			test_sleep_us(20);
		}
		__atomic_fetch_add(&w->posted_ring, 1, __ATOMIC_RELAXED);
		if (seq % 4 == 0) {
			strict_source_add(&w->strict[p->id % N_STRICT], 1);
			__atomic_fetch_add(&w->posted_strict, 1, __ATOMIC_RELAXED);
		}
		if (test_xorshift(&rnd) % 16 == 0)
			test_sleep_us(test_xorshift(&rnd) % 1500); /* idle gaps: the loop sleeps */
	}
	__atomic_fetch_add(&w->producers_done, 1, __ATOMIC_RELEASE);
	return NULL;
}

static void *
run_loop(void *arg)
{
	struct world *w = arg;

	CHECK_EQ(evd_loop_run(w->loop), 0);
	return NULL;
}

static void
start_loop(struct world *w)
{
	__atomic_store_n(&w->running, 1, __ATOMIC_RELEASE);
	CHECK_EQ(pthread_create(&w->loop_thread, NULL, run_loop, w), 0);
}

static void
stop_loop(struct world *w)
{
	CHECK_EQ(evd_loop_stop(w->loop), 0);
	CHECK_EQ(pthread_join(w->loop_thread, NULL), 0);
	__atomic_store_n(&w->running, 0, __ATOMIC_RELEASE);
}

/* Loop thread, from a timer: take a strict source off the loop while it is
 * armed (maybe with a notification pending), and put it back next time. */
static void
flip_source(struct evd_loop *loop, struct evd_timer *t, void *arg)
{
	struct world *w = arg;
	struct evd_source *s = &w->strict[1].src;

	(void)t;
	if (s->loop != NULL)
		CHECK_EQ(evd_loop_remove(loop, s), 0);
	else
		CHECK_EQ(evd_loop_add(loop, s), 0);
	w->removed_flips++;
}

static void
wait_asleep(struct evd_loop *loop)
{
	struct evd_loop_stats st;

	for (int i = 0; i < 2000; i++) {
		CHECK_EQ(evd_loop_stats_get(loop, &st), 0);
		if (st.mode == EVD_MODE_SLEEP)
			return;
		test_sleep_us(500);
	}
}

/* The fault thread's work for one step of the scenario. */
static void
inject(struct world *w, enum fault f, uint64_t *rnd)
{
	switch (f) {
	case F_ARM:
		__atomic_store_n(&w->strict[test_xorshift(rnd) % N_STRICT].fail_arm, 1, __ATOMIC_RELEASE);
		break;
	case F_POLL:
		__atomic_store_n(&w->strict[test_xorshift(rnd) % N_STRICT].fail_poll, 1, __ATOMIC_RELEASE);
		break;
	case F_ACK_EAGAIN:
		__atomic_store_n(&w->strict[test_xorshift(rnd) % N_STRICT].ack_eagain, 1, __ATOMIC_RELEASE);
		break;
	case F_SIGNALS:
		for (int i = 0; i < 20 && __atomic_load_n(&w->running, __ATOMIC_ACQUIRE); i++)
			pthread_kill(w->loop_thread, SIGUSR1);
		break;
	case F_EVENTFD_OVERFLOW: {
		/* push the rings' doorbell to the edge: the next doorbell
		 * write fails with EAGAIN, and the fd is readable all the same */
		uint64_t big = UINT64_C(0xfffffffffffffffe) - 1;

		if (write(evd__bell_fd(w->loop->bell), &big, sizeof(big)) < 0)
			CHECK(errno == EAGAIN);
		break;
	}
	case F_STOP_ASLEEP:
		if (__atomic_load_n(&w->running, __ATOMIC_ACQUIRE)) {
			wait_asleep(w->loop);
			stop_loop(w);
			test_sleep_us(test_xorshift(rnd) % 3000); /* producers go on meanwhile */
			CHECK_EQ(evd_loop_resume(w->loop), 0);
			start_loop(w);
		}
		break;
	default:
		break;
	}
}

struct outcome {
	uint64_t events, errors, full, spurious, sleeps, flips;
};

static void
scenario(enum fault f, const char *policy, uint64_t per_prod, unsigned int seed, struct outcome *out)
{
	struct world *w = calloc(1, sizeof(*w));
	struct evd_loop_conf conf = {
		.name = "faults", .policy = policy, .max_sleep_us = 200000,
		.poll_only_bound_us = 2000, .on_error = on_error,
	};
	struct producer prod[N_PROD];
	pthread_t th[N_PROD];
	struct evd_loop_stats st;
	uint64_t rnd = seed * 7919ull + 1, deadline;

	CHECK(w != NULL);
	w->per_prod = per_prod;
	w->seed = seed;
	w->slow = f == F_SLOW_HANDLER;
	conf.on_error_arg = w;
	CHECK_EQ(evd_loop_create(&conf, &w->loop), 0);
	for (int i = 0; i < N_RING; i++) {
		CHECK_EQ(evd_ring_create("ring", f == F_RING_FULL ? 8 : 4096, on_ring, w, &w->ring[i]), 0);
		CHECK_EQ(evd_loop_add(w->loop, w->ring[i]), 0);
	}
	for (int i = 0; i < N_STRICT; i++) {
		CHECK_EQ(strict_source_init(&w->strict[i], "strict"), 0);
		w->strict[i].src.handler = on_strict;
		w->strict[i].src.handler_arg = w;
		CHECK_EQ(evd_loop_add(w->loop, &w->strict[i].src), 0);
	}
	if (f == F_REMOVE_ARMED)
		CHECK_EQ(evd_timer_start(w->loop, 3000000, 3000000, flip_source, w, &w->remover), 0);
	start_loop(w);
	for (uint32_t i = 0; i < N_PROD; i++) {
		prod[i] = (struct producer){ w, i };
		CHECK_EQ(pthread_create(&th[i], NULL, produce, &prod[i]), 0);
	}
	while (__atomic_load_n(&w->producers_done, __ATOMIC_ACQUIRE) < N_PROD) {
		inject(w, f, &rnd);
		test_sleep_us(f == F_STOP_ASLEEP ? 20000 : 500 + test_xorshift(&rnd) % 2000);
	}
	for (int i = 0; i < N_PROD; i++)
		pthread_join(th[i], NULL);
	/* everything posted must arrive; a removed source comes back first */
	if (f == F_REMOVE_ARMED) {
		stop_loop(w);
		CHECK_EQ(evd_timer_cancel(w->loop, w->remover), 0);
		if (w->strict[1].src.loop == NULL)
			CHECK_EQ(evd_loop_add(w->loop, &w->strict[1].src), 0);
		CHECK_EQ(evd_loop_resume(w->loop), 0);
		start_loop(w);
	}
	deadline = test_now_ns() + 20ull * 1000 * 1000 * 1000;
	while ((__atomic_load_n(&w->ring_delivered, __ATOMIC_ACQUIRE) < w->posted_ring ||
		__atomic_load_n(&w->strict_delivered, __ATOMIC_ACQUIRE) < w->posted_strict) &&
	       test_now_ns() < deadline)
		test_sleep_us(1000);
	stop_loop(w);
	CHECK_EQ(evd_loop_stats_get(w->loop, &st), 0);

	CHECK_EQ(w->ring_delivered, N_PROD * per_prod);
	CHECK_EQ(w->posted_ring, N_PROD * per_prod);
	CHECK_EQ(w->strict_delivered, w->posted_strict);
	CHECK_EQ(w->dup_or_gap, 0);
	for (int p = 0; p < N_PROD; p++)
		CHECK_EQ(w->next_seq[p], per_prod);
	CHECK_EQ(st.lost_wakeups, 0);
	CHECK_EQ(st.errors, w->errors_reported); /* every error reported is counted */
	switch (f) {
	case F_ARM:
	case F_POLL:
		CHECK(w->errors_reported > 0);
		break;
	case F_SIGNALS:
		CHECK(st.spurious_wakeups > 0); /* each EINTR is one */
		CHECK_EQ(w->errors_reported, 0);
		break;
	case F_ACK_EAGAIN:
	case F_EVENTFD_OVERFLOW:
		CHECK(st.spurious_wakeups > 0);
		CHECK_EQ(w->errors_reported, 0);
		break;
	case F_RING_FULL:
		CHECK(w->full_seen > 0);
		break;
	case F_REMOVE_ARMED:
		CHECK(w->removed_flips > 0);
		break;
	default:
		break;
	}
	out->events += w->ring_delivered + w->strict_delivered;
	out->errors += w->errors_reported;
	out->full += w->full_seen;
	out->spurious += st.spurious_wakeups;
	out->sleeps += st.sleeps;
	out->flips += (uint64_t)w->removed_flips;

	for (int i = 0; i < N_RING; i++) {
		CHECK_EQ(evd_loop_remove(w->loop, w->ring[i]), 0);
		CHECK_EQ(evd_source_destroy(w->ring[i]), 0);
	}
	for (int i = 0; i < N_STRICT; i++) {
		if (w->strict[i].src.loop != NULL)
			CHECK_EQ(evd_loop_remove(w->loop, &w->strict[i].src), 0);
		/* every notification written was read exactly once, or is still in
		 * the pipe (written after the last wake): count both */
		{
			uint64_t rec, left = 0;

			while (read(w->strict[i].pipe[0], &rec, sizeof(rec)) == sizeof(rec))
				left++;
			CHECK_EQ(w->strict[i].acked + left, w->strict[i].notified);
		}
		strict_source_fini(&w->strict[i]);
	}
	CHECK_EQ(evd_loop_destroy(w->loop), 0);
	free(w);
}

static long
rss_kib(void)
{
	long pages = 0, resident = 0;
	FILE *f = fopen("/proc/self/statm", "r");

	if (f != NULL) {
		if (fscanf(f, "%ld %ld", &pages, &resident) != 2)
			resident = 0;
		fclose(f);
	}
	return resident * (sysconf(_SC_PAGESIZE) / 1024);
}

int
main(int argc, char **argv)
{
	struct sigaction sa = { .sa_handler = on_signal }; /* no SA_RESTART: EINTR */
	double soak = 0;

	sigaction(SIGUSR1, &sa, NULL);
	if (argc == 3 && strcmp(argv[1], "--soak") == 0)
		soak = atof(argv[2]);
	if (soak <= 0) {
		for (int f = F_NONE + 1; f < F_COUNT; f++) {
			struct outcome o = { 0 };

			scenario((enum fault)f, f % 2 ? "intr" : "adaptive", 5000, (unsigned int)f, &o);
			printf("ok %-18s %" PRIu64 " events once each, %" PRIu64 " errors reported, %" PRIu64
			       " ring-full retries, %" PRIu64 " spurious wakeups, %" PRIu64 " sleeps\n",
			       fault_names[f], o.events, o.errors, o.full, o.spurious, o.sleeps);
		}
		return 0;
	}
	{
		uint64_t t_end = test_now_ns() + (uint64_t)(soak * 1e9), rnd = 12345, rounds = 0;
		struct outcome o = { 0 };
		long rss0 = 0, rss1;

		while (test_now_ns() < t_end) {
			enum fault f = (enum fault)(1 + test_xorshift(&rnd) % (F_COUNT - 1));

			scenario(f, test_xorshift(&rnd) % 2 ? "intr" : "adaptive",
				 500 + test_xorshift(&rnd) % 4000, (unsigned int)rounds, &o);
			if (++rounds == 3)
				rss0 = rss_kib(); /* after warm-up: pools, calibration */
		}
		rss1 = rss_kib();
		printf("soak: %.0f s, %" PRIu64 " rounds, %" PRIu64 " events once each, %" PRIu64
		       " errors, %" PRIu64 " spurious, rss %ld -> %ld KiB\n", soak, rounds, o.events,
		       o.errors, o.spurious, rss0, rss1);
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
		/* a sanitizer's quarantine and shadow grow by design; LeakSanitizer
		 * checks for leaks instead */
		printf("soak: memory flatness not checked under a sanitizer\n");
#else
		if (rounds > 3)
			CHECK(rss1 - rss0 < 4096); /* flat: under 4 MiB of growth */
#endif
		printf("ok soak\n");
	}
	return 0;
}
