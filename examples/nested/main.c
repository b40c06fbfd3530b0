/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A whole evd loop nested in an application's own epoll loop, beside a
 * timerfd of the application's. The outer loop polls evd while it has work
 * (evd_loop_poll), arms it when it has none (evd_loop_arm: the re-poll
 * there closes the lost-wakeup race), and then waits on its own fds and
 * evd_loop_fd() together. A producer thread posts events with gaps long
 * enough that the outer loop sleeps between them; the example exits 0 once
 * every event was handled.
 *
 *   nested [EVENTS]
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include <evd.h>

static uint64_t seen;

static void
on_events(struct evd_source *src, void *burst, uint16_t n, void *arg)
{
	(void)src;
	(void)burst;
	(void)arg;
	seen += n;
}

struct producer {
	struct evd_source *ring;
	uint64_t events;
};

static void *
produce(void *arg)
{
	struct producer *p = arg;
	struct timespec gap = { 0, 200 * 1000 }; /* 200 us: the outer loop sleeps */
	struct evd_event ev = { 0 };

	for (uint64_t i = 0; i < p->events; i++) {
		ev.u64 = i;
		while (evd_ring_post(p->ring, &ev) == -ENOBUFS)
			nanosleep(&gap, NULL);
		if (i % 8 == 7)
			nanosleep(&gap, NULL);
	}
	return NULL;
}

int
main(int argc, char **argv)
{
	struct itimerspec tick = { { 0, 1000000 }, { 0, 1000000 } }; /* the app's own 1 ms work */
	struct evd_loop_conf conf = { .name = "nested", .policy = "poll" };
	struct producer p = { .events = argc > 1 ? strtoull(argv[1], NULL, 10) : 20000 };
	struct epoll_event ev = { .events = EPOLLIN }, ready[2];
	uint64_t ticks = 0, waits = 0, tmo;
	struct evd_loop *loop;
	pthread_t t;
	int outer, tfd, rc;

	outer = epoll_create1(EPOLL_CLOEXEC);
	tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	if (outer < 0 || tfd < 0 || timerfd_settime(tfd, 0, &tick, NULL) < 0)
		return 1;
	/* the policy is not asked: the outer loop decides when evd sleeps */
	if (evd_loop_create(&conf, &loop) < 0 ||
	    evd_ring_create("requests", 1024, on_events, NULL, &p.ring) < 0 ||
	    evd_loop_add(loop, p.ring) < 0)
		return 1;
	ev.data.fd = tfd;
	epoll_ctl(outer, EPOLL_CTL_ADD, tfd, &ev);
	ev.data.fd = evd_loop_fd(loop);
	epoll_ctl(outer, EPOLL_CTL_ADD, ev.data.fd, &ev);
	if (pthread_create(&t, NULL, produce, &p) != 0)
		return 1;
	while (seen < p.events) {
		if (evd_loop_poll(loop, 0) > 0)
			continue; /* busy: poll again */
		rc = evd_loop_arm(loop, &tmo);
		if (rc != 0)
			continue; /* the re-poll found work, or a source joined */
		waits++;
		rc = epoll_wait(outer, ready, 2, tmo == UINT64_MAX ? -1 : (int)(tmo / 1000000) + 1);
		for (int i = 0; i < rc; i++) {
			uint64_t n;

			if (ready[i].data.fd == tfd && read(tfd, &n, sizeof(n)) == sizeof(n))
				ticks += n;
			/* evd's fd: the next evd_loop_poll() takes the wake */
		}
	}
	pthread_join(t, NULL);
	printf("nested: %" PRIu64 " events handled, %" PRIu64 " outer waits, %" PRIu64
	       " timer ticks\n", seen, waits, ticks);
	evd_loop_poll(loop, 0); /* ends the last wait: disarmed before removal */
	evd_loop_remove(loop, p.ring);
	evd_source_destroy(p.ring);
	evd_loop_destroy(loop);
	close(tfd);
	close(outer);
	return 0;
}
