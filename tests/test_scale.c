/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The loop at scale, functionally: 100,000 rings on one loop under a file
 * limit of 64 (rings take no fd), a wake that polls only the ring it was
 * woken for among 8,192 idle ones, and 1,024 fd sources watched through
 * one epoll set (an idle fd is never polled on its own). The costs are
 * benchmarks (tests/bench_scale.c); here, what each path does.
 */
#include <pthread.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <unistd.h>

#include <evd.h>
#include <evd_source.h>

#include "evd_test.h"

struct tally {
	uint64_t events;
	uint64_t calls;
};

static void
tally(struct evd_source *s, void *burst, uint16_t n, void *arg)
{
	struct tally *t = arg;

	(void)s;
	(void)burst;
	t->events += n;
	t->calls++;
}

static uint64_t
polls_of(struct evd_source *s)
{
	struct evd_source_stats st;

	CHECK_EQ(evd_source_stats_get(s, &st), 0);
	return st.polls;
}

/* 100,000 rings with 64 fds allowed: no ring needs one. Posts to a spread
 * of them are delivered, each once, by an intr loop; all leave again. */
static void
test_100k_rings_no_fd(void)
{
	enum { N = 100000 };
	struct evd_loop_conf conf = { .policy = "intr", .max_sleep_us = 1000 };
	struct rlimit old, low = { 64, 64 };
	struct evd_source **r = calloc(N, sizeof(*r));
	struct tally *t = calloc(N, sizeof(*t));
	struct evd_loop *loop;
	struct evd_event ev = { .u64 = 7 };
	uint64_t got = 0;

	CHECK(r != NULL && t != NULL);
	CHECK_EQ(getrlimit(RLIMIT_NOFILE, &old), 0);
	low.rlim_max = old.rlim_max;
	CHECK_EQ(setrlimit(RLIMIT_NOFILE, &low), 0);
	CHECK_EQ(evd_loop_create(&conf, &loop), 0);
	for (uint32_t i = 0; i < N; i++) {
		char name[16];

		snprintf(name, sizeof(name), "r%u", i);
		CHECK_EQ(evd_ring_create(name, 2, tally, &t[i], &r[i]), 0);
		CHECK_EQ(evd_loop_add(loop, r[i]), 0);
	}
	CHECK_EQ(evd_loop_step(loop), 0); /* arms them all, sleeps its 1 ms bound */
	for (uint32_t i = 0; i < N; i += 997)
		CHECK_EQ(evd_ring_post(r[i], &ev), 0);
	while (got < (N + 996) / 997) {
		int n = evd_loop_step(loop);

		CHECK(n >= 0);
		got += (uint64_t)n;
	}
	for (uint32_t i = 0; i < N; i++) {
		CHECK_EQ(t[i].events, i % 997 == 0 ? 1u : 0u);
		CHECK_EQ(evd_loop_remove(loop, r[i]), 0);
		CHECK_EQ(evd_source_destroy(r[i]), 0);
	}
	CHECK_EQ(evd_loop_destroy(loop), 0);
	CHECK_EQ(setrlimit(RLIMIT_NOFILE, &old), 0);
	free(r);
	free(t);
}

struct poster {
	struct evd_loop *loop;
	struct evd_source *ring;
	uint64_t sleeps; /* post once the loop has begun this many sleeps */
};

static void *
post_when_asleep(void *arg)
{
	struct poster *p = arg;
	struct evd_loop_stats st;
	struct evd_event ev = { .u64 = 1 };

	do {
		test_sleep_us(200);
		CHECK_EQ(evd_loop_stats_get(p->loop, &st), 0);
	} while (st.sleeps < p->sleeps);
	test_sleep_us(2000); /* in its wait, or about to be */
	CHECK_EQ(evd_ring_post(p->ring, &ev), 0);
	return NULL;
}

/* 8,192 idle rings and one that gets an event while the loop sleeps: each
 * wake polls that one and none of the idle ones. */
static void
test_wake_polls_only_the_notified(void)
{
	enum { N = 8192 };
	struct evd_loop_conf conf = { .policy = "intr" };
	struct evd_source **r = calloc(N + 1, sizeof(*r));
	struct evd_loop *loop;
	struct tally busy = { 0 }, idle = { 0 };
	uint64_t before = 0;

	CHECK(r != NULL);
	CHECK_EQ(evd_loop_create(&conf, &loop), 0);
	for (uint32_t i = 0; i <= N; i++) {
		CHECK_EQ(evd_ring_create(i == N ? "busy" : "idle", 4, tally, i == N ? &busy : &idle,
					 &r[i]), 0);
		CHECK_EQ(evd_loop_add(loop, r[i]), 0);
	}
	for (uint64_t k = 1; k <= 4; k++) {
		struct poster p = { loop, r[N], k };
		pthread_t th;

		CHECK_EQ(pthread_create(&th, NULL, post_when_asleep, &p), 0);
		CHECK_EQ(evd_loop_step(loop), 1); /* (no bound: only the post ends the wait) */
		CHECK_EQ(pthread_join(th, NULL), 0);
		if (k == 1)
			before = polls_of(r[0]); /* its round's poll and the re-poll after the arm */
	}
	CHECK_EQ(busy.events, 4);
	CHECK_EQ(idle.events, 0);
	CHECK_EQ(before, 2);
	/* the idle rings stayed armed: no wake after the first polled them */
	CHECK_EQ(polls_of(r[0]), before);
	CHECK_EQ(polls_of(r[N / 2]), before);
	CHECK_EQ(polls_of(r[N - 1]), before);
	for (uint32_t i = 0; i <= N; i++) {
		CHECK_EQ(evd_loop_remove(loop, r[i]), 0);
		CHECK_EQ(evd_source_destroy(r[i]), 0);
	}
	CHECK_EQ(evd_loop_destroy(loop), 0);
	free(r);
}

struct reader {
	int fd;
	uint64_t reads;
};

static void
read_one(struct evd_source *s, void *burst, uint16_t n, void *arg)
{
	struct reader *rd = arg;
	uint64_t v;

	(void)s;
	(void)burst;
	(void)n;
	if (read(rd->fd, &v, sizeof(v)) == (ssize_t)sizeof(v))
		rd->reads++;
}

/* 1,024 eventfds as fd sources of a poll loop: the ready ones are served,
 * each once, and an idle fd is never polled (one epoll_wait a round, not a
 * poll(2) per fd). */
static void
test_1024_fds_one_epoll(void)
{
	enum { N = 1024 };
	struct evd_loop_conf conf = { .policy = "poll" };
	struct evd_source **s = calloc(N, sizeof(*s));
	struct reader *rd = calloc(N, sizeof(*rd));
	struct rlimit old, need;
	struct evd_loop *loop;
	uint64_t served = 0;

	CHECK(s != NULL && rd != NULL);
	CHECK_EQ(getrlimit(RLIMIT_NOFILE, &old), 0);
	if (old.rlim_cur < N + 64) {
		need = (struct rlimit){ old.rlim_max < N + 64 ? old.rlim_max : N + 64, old.rlim_max };
		if (need.rlim_cur < N + 64) {
			printf("  skipped: RLIMIT_NOFILE hard limit %lu < %d\n",
			       (unsigned long)old.rlim_max, N + 64);
			exit(77);
		}
		CHECK_EQ(setrlimit(RLIMIT_NOFILE, &need), 0);
	}
	CHECK_EQ(evd_loop_create(&conf, &loop), 0);
	for (uint32_t i = 0; i < N; i++) {
		rd[i].fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
		CHECK(rd[i].fd >= 0);
		CHECK_EQ(evd_fd_create("fd", rd[i].fd, 0, read_one, &rd[i], &s[i]), 0);
		CHECK_EQ(evd_loop_add(loop, s[i]), 0);
	}
	for (int k = 0; k < 100; k++)
		CHECK_EQ(evd_loop_step(loop), 0);
	for (uint32_t i = 0; i < N; i += 101)
		CHECK_EQ(eventfd_write(rd[i].fd, 1), 0);
	for (int k = 0; k < 10 && served < (N + 100) / 101; k++) {
		int n = evd_loop_step(loop);

		CHECK(n >= 0);
		served += (uint64_t)n;
	}
	CHECK_EQ(served, (N + 100) / 101);
	for (uint32_t i = 0; i < N; i++) {
		CHECK_EQ(rd[i].reads, i % 101 == 0 ? 1u : 0u);
		CHECK_EQ(polls_of(s[i]), i % 101 == 0 ? 1u : 0u);
		CHECK_EQ(evd_loop_remove(loop, s[i]), 0);
		CHECK_EQ(evd_source_destroy(s[i]), 0);
		close(rd[i].fd);
	}
	CHECK_EQ(evd_loop_destroy(loop), 0);
	CHECK_EQ(setrlimit(RLIMIT_NOFILE, &old), 0);
	free(s);
	free(rd);
}

int
main(void)
{
	TEST(test_100k_rings_no_fd);
	TEST(test_wake_polls_only_the_notified);
	TEST(test_1024_fds_one_epoll);
	return 0;
}
