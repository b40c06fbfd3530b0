/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Calls on one source from two threads, the second made to come while the
 * first is midway: the first is held at a call the library makes through
 * its PLT (rte_log, epoll_ctl, sched_yield), which this test interposes,
 * until the second has done what it came to do.
 *
 * - A refusal that names another thread's loop, while that thread destroys
 *   it: evd_loop_add(), evd_source_destroy() and evd_ring_discard() of a
 *   source on loop L refuse, naming L; the line is held back until another
 *   thread has removed the source and destroyed L. A line that read L's
 *   name from L itself then reads freed memory, which the suite's ASan run
 *   reports (elsewhere the freed bytes most likely still read "victim").
 * - An add that fails (epoll_ctl) while another thread destroys, adds and
 *   removes the source: refused while the add is under way, the source
 *   free again after it.
 * - Two removes of one source: the second waits for the first, then finds
 *   it gone (-EINVAL), where two detaches would corrupt the loop's table.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <rte_log.h>

#include <evd.h>

#include "evd_test.h"

static const char *hold_for; /* a log line holding this is held back */
static sem_t go, done;
static char seen[512];

/* Two loops and a source the threads meet on; what the second thread's
 * calls returned. */
struct midway {
	struct evd_loop *mine, *other;
	struct evd_source *src;
	int rc[3];
};

/* The held thread: tell the other to go, and wait until it is done. */
static void
hand_over(void)
{
	CHECK_EQ(sem_post(&go), 0);
	test_wait_sem(&done);
}

int
rte_log(uint32_t level, uint32_t logtype, const char *format, ...)
{
	va_list ap, aq;
	int rc;

	va_start(ap, format);
	if (hold_for != NULL && strstr(format, hold_for) != NULL) {
		hold_for = NULL;
		hand_over();
		va_copy(aq, ap);
		vsnprintf(seen, sizeof(seen), format, aq);
		va_end(aq);
	}
	rc = rte_vlog(level, logtype, format, ap);
	va_end(ap);
	return rc;
}

static void *
destroy_when_told(void *arg)
{
	struct midway *m = arg;

	test_wait_sem(&go);
	CHECK_EQ(evd_loop_remove(m->other, m->src), 0);
	CHECK_EQ(evd_loop_destroy(m->other), 0);
	CHECK_EQ(sem_post(&done), 0);
	return NULL;
}

/* @p call refuses @p src, which is on a loop named "victim" that another
 * thread destroys while the refusal's line is being written. */
static void
refuse_while_destroyed(const char *what, int (*call)(struct evd_loop *, struct evd_source *),
		       struct evd_loop *mine, struct evd_source *src, int want)
{
	struct evd_loop_conf conf = { .name = "victim", .policy = "poll" };
	struct midway m = { .mine = mine, .src = src };
	pthread_t th;

	CHECK_EQ(evd_loop_create(&conf, &m.other), 0);
	CHECK_EQ(evd_loop_add(m.other, src), 0);
	CHECK_EQ(pthread_create(&th, NULL, destroy_when_told, &m), 0);
	seen[0] = '\0';
	hold_for = what;
	CHECK_EQ(call(mine, src), want);
	CHECK(hold_for == NULL); /* the line was held, and the loop destroyed meanwhile */
	CHECK_EQ(pthread_join(th, NULL), 0);
	CHECK(strstr(seen, "loop victim") != NULL);
}

static int
add_to(struct evd_loop *mine, struct evd_source *src)
{
	return evd_loop_add(mine, src);
}

static int
destroy_source(struct evd_loop *mine, struct evd_source *src)
{
	(void)mine;
	return evd_source_destroy(src);
}

static int
discard(struct evd_loop *mine, struct evd_source *src)
{
	(void)mine;
	return evd_ring_discard(src);
}

static void
test_refusals(void)
{
	struct evd_loop_conf conf = { .name = "mine", .policy = "poll" };
	struct evd_loop *mine;
	struct evd_source *ring;

	CHECK_EQ(sem_init(&go, 0, 0), 0);
	CHECK_EQ(sem_init(&done, 0, 0), 0);
	CHECK_EQ(evd_loop_create(&conf, &mine), 0);
	CHECK_EQ(evd_ring_create("r", 16, test_nop, NULL, &ring), 0);
	refuse_while_destroyed("is already on loop", add_to, mine, ring, -EINVAL);
	refuse_while_destroyed("still on loop", destroy_source, mine, ring, -EBUSY);
	refuse_while_destroyed("still on loop", discard, mine, ring, -EBUSY);
	CHECK_EQ(evd_source_destroy(ring), 0);
	CHECK_EQ(evd_loop_destroy(mine), 0);
}

/* epoll_ctl on held_fd with held_op: the other thread is told (go), and this
 * one waits for it (done); an add then fails with ENOMEM */
static int held_fd = -1, held_op;
/* 0: the next sched_yield (a thread that found the loop held by another's
 * control call, and waits) posts done, once */
static int waiting_seen = 1;

int
epoll_ctl(int epfd, int op, int fd, struct epoll_event *ev)
{
	static int (*real)(int, int, int, struct epoll_event *);

	if (real == NULL)
		real = (int (*)(int, int, int, struct epoll_event *))dlsym(RTLD_NEXT, "epoll_ctl");
	if (fd == held_fd && op == held_op) {
		held_fd = -1;
		hand_over();
		if (op == EPOLL_CTL_ADD) {
			errno = ENOMEM;
			return -1;
		}
	}
	return real(epfd, op, fd, ev);
}

int
sched_yield(void)
{
	static int (*real)(void);

	if (real == NULL)
		real = (int (*)(void))dlsym(RTLD_NEXT, "sched_yield");
	if (__atomic_exchange_n(&waiting_seen, 1, __ATOMIC_ACQ_REL) == 0)
		CHECK_EQ(sem_post(&done), 0);
	return real();
}

static void *
meet_failing_add(void *arg)
{
	struct midway *m = arg;

	test_wait_sem(&go);
	m->rc[0] = evd_source_destroy(m->src);
	m->rc[1] = evd_loop_add(m->other, m->src);
	CHECK_EQ(sem_post(&done), 0);
	/* waits for the add to end, then finds the source on no loop */
	m->rc[2] = evd_loop_remove(m->mine, m->src);
	return NULL;
}

/* Loop "mine" and an fd source on an eventfd (returned), on no loop yet. */
static int
open_mine(struct midway *m)
{
	struct evd_loop_conf conf = { .name = "mine", .policy = "poll" };
	int efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);

	CHECK(efd >= 0);
	CHECK_EQ(evd_loop_create(&conf, &m->mine), 0);
	CHECK_EQ(evd_fd_create("f", efd, EPOLLIN, test_nop, NULL, &m->src), 0);
	return efd;
}

static void
test_failing_add(void)
{
	struct evd_loop_conf conf2 = { .name = "other", .policy = "poll" };
	struct midway m = { 0 };
	int efd = open_mine(&m);
	pthread_t th;

	CHECK_EQ(evd_loop_create(&conf2, &m.other), 0);
	CHECK_EQ(pthread_create(&th, NULL, meet_failing_add, &m), 0);
	held_op = EPOLL_CTL_ADD;
	held_fd = efd;
	CHECK_EQ(evd_loop_add(m.mine, m.src), -ENOMEM);
	CHECK_EQ(pthread_join(th, NULL), 0);
	CHECK_EQ(m.rc[0], -EBUSY); /* the source lives on: the add was using it */
	CHECK_EQ(m.rc[1], -EINVAL);
	CHECK_EQ(m.rc[2], -EINVAL); /* not on the loop */
	CHECK_EQ(evd_loop_add(m.other, m.src), 0); /* free again */
	CHECK_EQ(evd_loop_remove(m.other, m.src), 0);
	CHECK_EQ(evd_source_destroy(m.src), 0);
	CHECK_EQ(evd_loop_destroy(m.mine), 0);
	CHECK_EQ(evd_loop_destroy(m.other), 0);
	close(efd);
}

static void *
second_remove(void *arg)
{
	struct midway *m = arg;

	test_wait_sem(&go);
	/* its first yield, in the wait for the loop, lets the first remove go on */
	__atomic_store_n(&waiting_seen, 0, __ATOMIC_RELEASE);
	m->rc[0] = evd_loop_remove(m->mine, m->src);
	return NULL;
}

static void
test_two_removes(void)
{
	struct midway m = { 0 };
	int efd = open_mine(&m);
	pthread_t th;

	CHECK_EQ(evd_loop_add(m.mine, m.src), 0);
	CHECK_EQ(pthread_create(&th, NULL, second_remove, &m), 0);
	held_op = EPOLL_CTL_DEL;
	held_fd = efd;
	CHECK_EQ(evd_loop_remove(m.mine, m.src), 0);
	CHECK_EQ(pthread_join(th, NULL), 0);
	CHECK_EQ(m.rc[0], -EINVAL); /* not on it any more */
	/* the table whole: the source goes in again, is polled and leaves */
	CHECK_EQ(evd_loop_add(m.mine, m.src), 0);
	CHECK_EQ(eventfd_write(efd, 1), 0);
	CHECK_EQ(evd_loop_step(m.mine), 1);
	CHECK_EQ(evd_loop_remove(m.mine, m.src), 0);
	CHECK_EQ(evd_source_destroy(m.src), 0);
	CHECK_EQ(evd_loop_destroy(m.mine), 0); /* refused while it counts a source */
	close(efd);
}

int
main(void)
{
	TEST(test_refusals);
	TEST(test_failing_add);
	TEST(test_two_removes);
	return 0;
}
