/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A refusal that names another thread's loop, while that thread destroys
 * it. evd_loop_add() and evd_source_destroy() of a source on loop L refuse,
 * and their log line names L; this test holds the line back (it interposes
 * rte_log, which the library calls through its PLT) until another thread
 * has removed the source and destroyed L. A line that read L's name from
 * L itself at that point reads freed memory, which the suite's ASan run
 * reports (elsewhere the freed bytes most likely still read "victim"); one
 * that copied it before names L all the same.
 */
#include <pthread.h>
#include <semaphore.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <rte_log.h>

#include <evd.h>

#include "evd_test.h"

static const char *hold_for; /* a log line holding this is held back */
static sem_t go, done;
static char seen[512];

int
rte_log(uint32_t level, uint32_t logtype, const char *format, ...)
{
	va_list ap, aq;
	int rc;

	va_start(ap, format);
	if (hold_for != NULL && strstr(format, hold_for) != NULL) {
		hold_for = NULL;
		CHECK_EQ(sem_post(&go), 0);
		while (sem_wait(&done) != 0)
			;
		va_copy(aq, ap);
		vsnprintf(seen, sizeof(seen), format, aq);
		va_end(aq);
	}
	rc = rte_vlog(level, logtype, format, ap);
	va_end(ap);
	return rc;
}

struct victim {
	struct evd_loop *loop;
	struct evd_source *src;
};

static void *
destroy_when_told(void *arg)
{
	struct victim *v = arg;

	while (sem_wait(&go) != 0)
		;
	CHECK_EQ(evd_loop_remove(v->loop, v->src), 0);
	CHECK_EQ(evd_loop_destroy(v->loop), 0);
	CHECK_EQ(sem_post(&done), 0);
	return NULL;
}

static void
nothing(struct evd_source *src, void *burst, uint16_t n, void *arg)
{
	(void)src;
	(void)burst;
	(void)n;
	(void)arg;
}

/* @p call refuses @p src, which is on a loop named "victim" that another
 * thread destroys while the refusal's line is being written. */
static void
refuse_while_destroyed(const char *what, int (*call)(struct evd_loop *, struct evd_source *),
		       struct evd_loop *mine, struct evd_source *src, int want)
{
	struct evd_loop_conf conf = { .name = "victim", .policy = "poll" };
	struct victim v = { .src = src };
	pthread_t th;

	CHECK_EQ(evd_loop_create(&conf, &v.loop), 0);
	CHECK_EQ(evd_loop_add(v.loop, src), 0);
	CHECK_EQ(pthread_create(&th, NULL, destroy_when_told, &v), 0);
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
	CHECK_EQ(evd_ring_create("r", 16, nothing, NULL, &ring), 0);
	refuse_while_destroyed("is already on loop", add_to, mine, ring, -EINVAL);
	refuse_while_destroyed("still on loop", destroy_source, mine, ring, -EBUSY);
	refuse_while_destroyed("still on loop", discard, mine, ring, -EBUSY);
	CHECK_EQ(evd_source_destroy(ring), 0);
	CHECK_EQ(evd_loop_destroy(mine), 0);
}

int
main(void)
{
	TEST(test_refusals);
	return 0;
}
