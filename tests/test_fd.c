/* SPDX-License-Identifier: BSD-3-Clause */
/* Unit tests of the fd source: level semantics, sleeping on a pipe. */
#include <fcntl.h>
#include <pthread.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <evd.h>
#include <evd_source.h>

#include "evd_test.h"

struct reader {
	int fd;
	int drain; /* read everything, or one byte per call */
	uint64_t calls;
	uint64_t bytes;
	uint32_t revents;
};

static void
on_readable(struct evd_source *src, void *burst, uint16_t n, void *arg)
{
	struct reader *r = arg;
	char buf[64];
	ssize_t k;

	CHECK(burst == NULL);
	CHECK_EQ(n, 1);
	r->calls++;
	r->revents = evd_fd_revents(src);
	do {
		k = read(r->fd, buf, r->drain ? sizeof(buf) : 1);
		if (k > 0)
			r->bytes += (uint64_t)k;
	} while (r->drain && k > 0);
}

static void
test_errors(void)
{
	struct evd_source *s = (void *)1;

	CHECK_EQ(evd_fd_create("x", -1, 0, on_readable, NULL, &s), -EINVAL);
	CHECK(s == NULL);
	CHECK_EQ(evd_fd_create("x", 0, 0, NULL, NULL, &s), -EINVAL);
	CHECK_EQ(evd_fd_create("x", 0, EPOLLIN | EPOLLET, on_readable, NULL, &s), -EINVAL);
	CHECK_EQ(evd_fd_revents(NULL), 0);
}

/* Level semantics: a handler that reads one byte is called again while
 * bytes remain. */
static void
test_level(void)
{
	struct evd_loop_conf conf = { .policy = "poll" };
	struct evd_loop *loop;
	struct evd_source *s;
	struct reader r = { .drain = 0 };
	int p[2];

	CHECK_EQ(pipe2(p, O_NONBLOCK), 0);
	r.fd = p[0];
	CHECK_EQ(evd_loop_create(&conf, &loop), 0);
	CHECK_EQ(evd_fd_create("pipe", p[0], 0, on_readable, &r, &s), 0);
	CHECK_EQ(evd_loop_add(loop, s), 0);
	CHECK_EQ(evd_loop_step(loop), 0);
	CHECK_EQ(write(p[1], "abc", 3), 3);
	CHECK_EQ(evd_loop_step(loop), 1);
	CHECK_EQ(evd_loop_step(loop), 1);
	CHECK_EQ(evd_loop_step(loop), 1);
	CHECK_EQ(evd_loop_step(loop), 0);
	CHECK_EQ(r.bytes, 3);
	CHECK(r.revents & EPOLLIN);
	CHECK_EQ(evd_loop_remove(loop, s), 0);
	CHECK_EQ(evd_source_destroy(s), 0);
	CHECK_EQ(evd_loop_destroy(loop), 0);
	close(p[0]);
	close(p[1]);
}

static void *
write_later(void *arg)
{
	int fd = *(int *)arg;

	test_sleep_us(20000);
	CHECK_EQ(write(fd, "x", 1), 1);
	return NULL;
}

/* Under intr the loop sleeps on the pipe and a write from another thread
 * wakes it (bound 10 s: a timeout would fail the wakeups check). */
static void
test_sleep_and_wake(void)
{
	struct evd_loop_conf conf = { .policy = "intr", .max_sleep_us = 10 * 1000 * 1000 };
	struct evd_loop *loop;
	struct evd_loop_stats st;
	struct evd_source *s;
	struct reader r = { .drain = 1 };
	pthread_t th;
	int p[2];

	CHECK_EQ(pipe2(p, O_NONBLOCK), 0);
	r.fd = p[0];
	CHECK_EQ(evd_loop_create(&conf, &loop), 0);
	CHECK_EQ(evd_fd_create("pipe", p[0], 0, on_readable, &r, &s), 0);
	CHECK_EQ(evd_loop_add(loop, s), 0);
	CHECK_EQ(pthread_create(&th, NULL, write_later, &p[1]), 0);
	CHECK_EQ(evd_loop_step(loop), 1);
	pthread_join(th, NULL);
	CHECK_EQ(evd_loop_stats_get(loop, &st), 0);
	CHECK_EQ(st.sleeps, 1);
	CHECK_EQ(st.wakeups, 1);
	CHECK_EQ(st.sleep_timeouts, 0);
	CHECK_EQ(st.lost_wakeups, 0);
	CHECK_EQ(r.bytes, 1);
	CHECK_EQ(evd_loop_remove(loop, s), 0);
	CHECK_EQ(evd_source_destroy(s), 0);
	CHECK_EQ(evd_loop_destroy(loop), 0);
	close(p[0]);
	close(p[1]);
}

struct elsewhere {
	struct evd_source *fd;
	uint32_t seen;
	uint64_t calls;
};

static void
ask_fd_revents(struct evd_source *src, void *burst, uint16_t n, void *arg)
{
	struct elsewhere *e = arg;

	(void)src;
	(void)burst;
	(void)n;
	e->seen |= evd_fd_revents(e->fd);
	e->calls++;
}

/* What an fd's poll saw is its handler's alone: asked on the loop's thread
 * from another source's handler, after the fd's handler ran, it is refused
 * (0), where it used to answer the fd's stale events. */
static void
test_revents_elsewhere(void)
{
	struct evd_loop_conf conf = { .policy = "poll" };
	struct evd_event ev = { 0 };
	struct evd_loop *loop;
	struct evd_source *s, *ring;
	struct reader r = { .drain = 1 };
	struct elsewhere e = { 0 };
	int p[2];

	CHECK_EQ(pipe2(p, O_NONBLOCK), 0);
	r.fd = p[0];
	CHECK_EQ(evd_loop_create(&conf, &loop), 0);
	CHECK_EQ(evd_fd_create("pipe", p[0], 0, on_readable, &r, &s), 0);
	CHECK_EQ(evd_ring_create("asker", 16, ask_fd_revents, &e, &ring), 0);
	e.fd = s;
	CHECK_EQ(evd_loop_add(loop, s), 0);
	CHECK_EQ(evd_loop_add(loop, ring), 0);
	CHECK_EQ(write(p[1], "x", 1), 1);
	CHECK_EQ(evd_loop_step(loop), 1);
	CHECK(r.revents & EPOLLIN);
	CHECK_EQ(evd_ring_post(ring, &ev), 0);
	CHECK_EQ(evd_loop_step(loop), 1);
	CHECK_EQ(e.calls, 1);
	CHECK_EQ(e.seen, 0);
	CHECK_EQ(evd_fd_revents(s), 0); /* the loop's thread, between rounds */
	CHECK_EQ(evd_loop_remove(loop, s), 0);
	CHECK_EQ(evd_loop_remove(loop, ring), 0);
	CHECK_EQ(evd_source_destroy(s), 0);
	CHECK_EQ(evd_source_destroy(ring), 0);
	CHECK_EQ(evd_loop_destroy(loop), 0);
	close(p[0]);
	close(p[1]);
}

struct ticker {
	int fd;
	uint64_t ticks;
};

static void
on_timerfd(struct evd_source *src, void *burst, uint16_t n, void *arg)
{
	struct ticker *t = arg;
	uint64_t v;

	(void)src;
	(void)burst;
	(void)n;
	if (read(t->fd, &v, sizeof(v)) == sizeof(v))
		t->ticks += v;
}

/* A timerfd is a pollable fd like any other. */
static void
test_timerfd(void)
{
	struct evd_loop_conf conf = { .policy = "intr", .max_sleep_us = 10 * 1000 * 1000 };
	struct itimerspec its = { .it_value = { .tv_nsec = 5000000 } };
	struct evd_loop *loop;
	struct evd_source *s;
	struct ticker t = { .fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK) };

	CHECK(t.fd >= 0);
	CHECK_EQ(evd_loop_create(&conf, &loop), 0);
	CHECK_EQ(evd_fd_create("timerfd", t.fd, 0, on_timerfd, &t, &s), 0);
	CHECK_EQ(evd_loop_add(loop, s), 0);
	CHECK_EQ(timerfd_settime(t.fd, 0, &its, NULL), 0);
	while (t.ticks == 0)
		CHECK(evd_loop_step(loop) >= 0);
	CHECK_EQ(t.ticks, 1);
	CHECK_EQ(evd_loop_remove(loop, s), 0);
	CHECK_EQ(evd_source_destroy(s), 0);
	CHECK_EQ(evd_loop_destroy(loop), 0);
	close(t.fd);
}

int
main(void)
{
	TEST(test_errors);
	TEST(test_level);
	TEST(test_sleep_and_wake);
	TEST(test_revents_elsewhere);
	TEST(test_timerfd);
	return 0;
}
