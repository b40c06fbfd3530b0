/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Who may call what: the loop's holder (the thread that runs or steps it,
 * or a control call's), the checks of the control calls, and the calls
 * handed over to a running loop (evd_loop_call).
 */
#include <ctype.h>
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "evd_private.h"

/* ---- names ------------------------------------------------------------------ */

long
evd__control_char_at(const char *s, size_t n)
{
	for (size_t i = 0; i < n && s[i] != '\0'; i++)
		if (iscntrl((unsigned char)s[i]))
			return (long)i;
	return -1;
}

int
evd__name_check(const char *call, const char *name)
{
	long at;

	if (name == NULL)
		return 0;
	/* first: the line below prints the name's start */
	at = evd__control_char_at(name, EVD_NAME_MAX);
	if (at >= 0)
		return EVD_ARG_ERR(-EINVAL, "%s: name has control character 0x%02x at byte %ld",
				   call, (unsigned char)name[at], at);
	if (strnlen(name, EVD_NAME_MAX) >= EVD_NAME_MAX)
		return EVD_ARG_ERR(-EINVAL, "%s: name %.*s... longer than %d bytes", call,
				   EVD_NAME_MAX - 1, name, EVD_NAME_MAX - 1);
	return 0;
}

/* ---- who may call what ----------------------------------------------------- */

__thread unsigned int evd__control_holds;

bool
evd__live_source(const struct evd_source *src, const char *call)
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

/* never live: its magic is 0, so no call takes it for a loop */
struct evd_loop evd__claimed = { .name = "(claimed)" };

struct evd_loop *
evd__source_try_claim(struct evd_source *src, const char *call)
{
	struct evd_loop *on = NULL;

	/* one compare-and-swap for an add, a discard and a destroy, so that
	 * the three on one source pass one at a time */
	__atomic_compare_exchange_n(&src->loop, &on, &evd__claimed, false, __ATOMIC_ACQ_REL,
				    __ATOMIC_ACQUIRE);
	if (on == &evd__claimed)
		EVD_LOG(ERR, "%s %s: an add, a discard or a destroy of it is under way on another "
			"thread", call, src->name);
	return on;
}

/* Another thread's loop may be mid-destroy. Its destroy, holding the loop,
 * finds no source on it (whoever held the loop last cleared theirs before
 * letting go), then takes the registry's lock to unlist it and frees it
 * after: a source still on it, seen under that lock, means the destroy has
 * not passed that point. (A loop made since at the same address is named
 * instead: a wrong name, never freed memory.) */
const char *
evd__other_loop_name(const struct evd_source *src, const struct evd_loop *on, char *buf,
		     size_t n)
{
	evd__registry_lock();
	snprintf(buf, n, "%s", evd__source_loop(src) == on ? on->name : "(since left)");
	evd__registry_unlock();
	return buf;
}

int
evd__source_claim(struct evd_source *src, const char *call)
{
	struct evd_loop *on = evd__source_try_claim(src, call);
	char name[EVD_NAME_MAX];

	if (on == NULL)
		return 0;
	if (on == &evd__claimed)
		return -EBUSY;
	return EVD_ARG_ERR(-EBUSY, "%s %s: still on loop %s", call, src->name,
			   evd__other_loop_name(src, on, name, sizeof(name)));
}

void
evd__source_unclaim(struct evd_source *src)
{
	__atomic_store_n(&src->loop, NULL, __ATOMIC_RELEASE);
}

struct evd_loop *
evd__source_loop(const struct evd_source *src)
{
	struct evd_loop *l = __atomic_load_n(&src->loop, __ATOMIC_ACQUIRE);

	return l == &evd__claimed ? NULL : l;
}

/* The rule of the control calls (doc/guides/threads.md): on the thread that
 * holds the loop (its handlers and callbacks) they act at once; when no
 * thread holds it they take it for their length; from another thread
 * while it runs they are refused. Returns 1 if the call took the loop
 * (give it back with evd__hold_release()), 0 on the loop's own thread, or
 * -EBUSY or -EDEADLK (evd__hold_try), logged with the call's name;
 * evd__control_try() also -EAGAIN, without waiting, while another thread's
 * control call holds it. */
int
evd__control_try(struct evd_loop *loop, const char *call)
{
	int rc;

	if (evd__on_owner_thread(loop))
		return 0;
	rc = evd__hold_try(loop, EVD__CONTROL);
	if (rc == 0)
		return 1;
	if (rc == -EBUSY)
		EVD_LOG(ERR, "loop %s: %s on a thread that does not run the loop, while it runs: "
			"refused (evd_loop_call() runs it on the loop's thread)", loop->name, call);
	else if (rc == -EDEADLK)
		EVD_LOG(ERR, "loop %s: %s: %s", loop->name, call, evd__hold_refused(rc, ""));
	return rc;
}

int
evd__control_enter(struct evd_loop *loop, const char *call)
{
	int rc;

	while ((rc = evd__control_try(loop, call)) == -EAGAIN)
		sched_yield();
	return rc;
}

void
evd__control_leave(struct evd_loop *loop, int held)
{
	if (held <= 0)
		return;
	/* removals that on_error asked for during the call wait for the end of
	 * a round, and where the call took the loop none is under way to
	 * finish them (a reap may report more: again) */
	while (loop->pending_removal)
		evd__reap_removed(loop);
	evd__hold_release(loop);
}

/* Ring the loop's eventfd (a stop, or a call to run): the caller counts
 * itself in wakers first, so that evd_loop_destroy() waits for the write. */
int
evd__ring_wake(struct evd_loop *loop)
{
	uint64_t one = 1;

	if (write(loop->wake_fd, &one, sizeof(one)) < 0 && errno != EAGAIN)
		return -errno;
	return 0;
}

/* Run the calls queued by evd_loop_call(), oldest first; on the thread that
 * holds the loop, between two rounds. */
void
evd__run_calls(struct evd_loop *loop)
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
	rc = evd__ring_wake(loop);
	__atomic_fetch_sub(&loop->wakers, 1, __ATOMIC_RELEASE);
	if (rc < 0)
		EVD_LOG(ERR, "loop %s: evd_loop_call: wake eventfd: %s (the call runs at the "
			"loop's next round)", loop->name, strerror(-rc));
	return 0;
}
