/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The loop's sources: their table, the round's list of those not armed,
 * their epoll keys and the fd table, adding, removing and failing them,
 * and the errors of their ops.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include <rte_common.h>

#include "evd_private.h"

/* a source's same op failure is logged once in this long (evd__source_error) */
#define ERR_LOG_QUIET_NS 1000000000ull

/* on_error runs as a handler does: evd_loop_remove() from it takes effect
 * when the round's poll ends (reap_removed), never at once. Errors come
 * from passes over the source table (arm, ack, disarm), which a removal
 * at once would reorder under them (the source moved into the freed slot
 * was skipped: left unarmed), and from detach() itself, whose ack error
 * would have detached the source a second time (the table corrupted). */
void
evd__source_error(struct evd_loop *loop, struct evd_source *s, const char *op, int err)
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

int
evd_source_report_error(struct evd_source *src, int err)
{
	struct evd_loop *loop;
	int held;

	if (!evd__live_source(src, "evd_source_report_error"))
		return -EINVAL;
	/* (err > -4096: -INT_MIN, which strerror's caller would take, overflows) */
	if (err >= 0 || err <= -4096)
		return EVD_ARG_ERR(-EINVAL, "evd_source_report_error %s: err %d is not a negative "
				   "errno", src->name, err);
	/* the loop taken under the registry's lock, which its destroy takes
	 * before freeing it, never waited for there (a control call holding it
	 * may want the lock: an add, a remove); then named again, held: a
	 * remove may have come first */
	for (;;) {
		evd__registry_lock();
		loop = evd__source_loop(src);
		held = loop != NULL ? evd__control_try(loop, "evd_source_report_error") : 0;
		evd__registry_unlock();
		if (held != -EAGAIN)
			break;
		sched_yield();
	}
	if (held < 0)
		return held;
	if (loop == NULL || evd__source_loop(src) != loop) {
		if (loop != NULL)
			evd__control_leave(loop, held);
		return EVD_ARG_ERR(-ENOENT, "evd_source_report_error %s: on no loop, %s not "
				   "delivered", src->name, strerror(-err));
	}
	evd__source_error(loop, src, "async event", err);
	evd__control_leave(loop, held);
	return 0;
}

/* ---- sources -------------------------------------------------------------- */

int
evd_source_init(struct evd_source *src, const struct evd_source_ops *ops, const char *name,
		evd_handler_t handler, void *arg)
{
	if (evd__name_check("evd_source_init", name) < 0)
		return -EINVAL;
	if (src == NULL || ops == NULL || ops->poll == NULL)
		return EVD_ARG_ERR(-EINVAL, "evd_source_init %s: %s is NULL", name ? name : "",
				   src == NULL ? "src" : ops == NULL ? "ops" : "ops->poll");
	if (handler == NULL)
		return EVD_ARG_ERR(-EINVAL, "evd_source_init %s: handler is NULL", name ? name : "");
	/* zeroing a source the loop holds would leave the loop one without ops
	 * (the memory may be fresh: its loop field counts only past the magic) */
	if (src->magic == EVD_SOURCE_MAGIC && __atomic_load_n(&src->loop, __ATOMIC_ACQUIRE) != NULL)
		return EVD_ARG_ERR(-EBUSY, "evd_source_init %.*s: still on a loop (remove it first)",
				   EVD_NAME_MAX - 1, src->name);
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
	return evd__live_source(src, "evd_source_name") ? src->name : NULL;
}

int
evd_source_destroy(struct evd_source *src)
{
	const struct evd_source_ops *ops;
	unsigned int q;
	int rc;

	if (!evd__live_source(src, "evd_source_destroy"))
		return -EINVAL;
	rc = evd__source_claim(src, "evd_source_destroy");
	if (rc < 0)
		return rc;
	ops = src->ops;
	q = ops->queued != NULL ? ops->queued(src) : 0;
	if (q > 0) {
		evd__source_unclaim(src);
		return EVD_ARG_ERR(-EBUSY, "evd_source_destroy %s: %u completions still queued "
				   "(poll them, or drop them: evd_ring_discard())", src->name, q);
	}
	src->magic = 0;
	evd__source_unclaim(src); /* a driver's close finds it on no loop */
	if (ops->close != NULL)
		ops->close(src);
	return 0;
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
		.data.u64 = evd__key_of(loop, s),
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
		evd__dev_del(loop, s);
	if (s->owed_since_ns != 0)
		loop->n_owed--;
	if (!s->has_fd && !s->ops->bell && !s->failed)
		loop->n_poll_only--; /* it bounds no sleep any more */
	s->failed = 1; /* out of the round's list at the next arm pass */
	evd__act_skip(loop, s);
	s->has_fd = 0;
	s->notify_fd = -1;
	s->armed = EVD_ARM_NONE;
	s->owed_since_ns = 0;
}


/* The source failed as unwatch() says; its entry, which EPOLL_CTL_DEL may
 * not reach, leaves with a rebuilt epoll set. */
void
evd__source_fail(struct evd_loop *loop, struct evd_source *s, const char *why)
{
	bool watched = s->has_fd;

	unwatch(loop, s, why);
	if (watched)
		evd__epoll_rebuild(loop);
}

/* An entry EPOLL_CTL_DEL could not reach (its fd was closed while the
 * source was registered; a dup elsewhere keeps the file, and the entry
 * firing): replace the loop's epoll set by one with only the entries it
 * should have. A source whose fd is gone too is unwatched. */
void
evd__epoll_rebuild(struct evd_loop *loop)
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

/* Room for twice the sources in the table, the keys and the lists, each at
 * most one entry a source; false (none moved past what it had) if memory
 * ran out. */
static bool
grow(struct evd_loop *loop)
{
	uint32_t cap = loop->cap_src ? loop->cap_src * 2 : 8;
	struct evd_source **a = NULL;
	struct evd__act *l = NULL;
	struct evd__key_slot *k = evd__realloc(&loop->mem, loop->keys, cap * sizeof(*k));
	bool ok = k != NULL;

	if (k != NULL)
		loop->keys = k;
	ok = ok && (l = evd__realloc(&loop->mem, loop->act, cap * sizeof(*l))) != NULL;
	if (ok)
		loop->act = l;
	ok = ok && (a = evd__realloc(&loop->mem, loop->woke, cap * sizeof(*a))) != NULL;
	if (ok)
		loop->woke = a;
	ok = ok && (a = evd__realloc(&loop->mem, loop->fresh, cap * sizeof(*a))) != NULL;
	if (ok)
		loop->fresh = a;
	ok = ok && (a = evd__realloc(&loop->mem, loop->dev, cap * sizeof(*a))) != NULL;
	if (ok)
		loop->dev = a;
	evd__registry_lock();
	a = ok ? evd__realloc(&loop->mem, loop->src, cap * sizeof(*a)) : NULL;
	if (a != NULL) {
		loop->src = a;
		loop->cap_src = cap;
	}
	evd__registry_unlock();
	return a != NULL;
}

int
evd_loop_add(struct evd_loop *loop, struct evd_source *src)
{
	struct evd_loop *other = NULL;
	char other_name[EVD_NAME_MAX];
	int fd = -1, held, rc = 0;

	if (!evd__live_loop(loop, "evd_loop_add") || !evd__live_source(src, "evd_loop_add"))
		return -EINVAL;
	if (src->ops == NULL || src->ops->poll == NULL || src->handler == NULL)
		return EVD_ARG_ERR(-EINVAL, "evd_loop_add %s: source %s without poll op or handler",
				   loop->name, src->name);
	/* claimed before anything else: two threads adding one source to two
	 * loops must not both pass (each holds only its own loop) */
	other = evd__source_try_claim(src, "evd_loop_add");
	if (other != NULL) {
		if (other == &evd__claimed)
			return -EBUSY;
		return EVD_ARG_ERR(-EINVAL, "evd_loop_add %s: source %s is already on loop %s%s",
				   loop->name, src->name,
				   evd__other_loop_name(src, other, other_name, sizeof(other_name)),
				   other == loop ? " (a source a handler removed stays on it "
						   "until the round ends)" : "");
	}
	held = evd__control_enter(loop, "evd_loop_add");
	if (held < 0) {
		evd__source_unclaim(src);
		return held;
	}
	/* named only once this thread holds the loop: a remove (or an error
	 * report) that finds the name can then act only after the add is done;
	 * and before it joins the round's list: a reader of its polls follows
	 * it to the loop's passes */
	__atomic_store_n(&src->loop, loop, __ATOMIC_RELEASE);
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
		/* before the fd table grows to the number: a bogus one (INT_MAX) made it 8 GB */
		if (fd >= 0 && fcntl(fd, F_GETFD) < 0) {
			rc = EVD_ARG_ERR(-EBADF, "evd_loop_add %s: source %s: fd %d is not open",
					 loop->name, src->name, fd);
			goto out;
		}
	}
	if (loop->n_src == loop->cap_src && !grow(loop)) {
		rc = EVD_ARG_ERR(-ENOMEM, "evd_loop_add %s: source %s: no memory for %u sources",
				 loop->name, src->name, loop->cap_src * 2);
		goto out;
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
			struct evd_source *old = loop->keys[*owner - 1].src;

			/* one removed from a handler, its fd then closed, as
			 * evd_fd_create() asks: its detach is only pending */
			evd__source_fail(loop, old, old->removing ? NULL : "its fd number now names "
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
	src->act_pos = EVD__NOT_ACT;
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
			evd__dev_add(loop, src);
		evd__act_add(loop, src);
	}
	evd__registry_lock();
	loop->src[loop->n_src++] = src;
	evd__registry_unlock();
	EVD_LOG(DEBUG, "loop %s: added %s source %s%s", loop->name, src->ops->kind ? src->ops->kind : "",
		src->name, fd < 0 ? " (poll-only)" : "");
out:
	/* unnamed before the loop is let go: a remove that found the name
	 * would detach a source its table does not hold */
	if (rc < 0)
		evd__source_unclaim(src);
	evd__control_leave(loop, held);
	return rc;
}

int
evd__act_skip_poll(struct evd_source *s, uint16_t budget)
{
	RTE_SET_USED(budget);
	evd__polls_leave(s->loop, s);
	return 0;
}

/* Out of interrupt mode: the driver's disarm (after a notification, too:
 * a device's one-shot interrupt may need turning off), and the source is
 * polled every round. */
void
evd__disarm(struct evd_loop *loop, struct evd_source *s)
{
	if (!s->armed)
		return;
	if (s->has_fd)
		loop->n_watched--;
	s->armed = EVD_ARM_NONE;
	evd__owe_clear(loop, s);
	if (s->ops->disarm != NULL) {
		int rc = s->ops->disarm(s);

		if (rc < 0 && rc != -ENOTSUP)
			evd__source_error(loop, s, "disarm", rc);
	}
	if (!s->failed)
		evd__act_add(loop, s);
	if (unlikely(s->removing))
		evd__act_skip(loop, s);
}

/* Whether a notification fd is readable now (never waits). */
bool
evd__fd_ready(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };

	return poll(&p, 1, 0) > 0 && (p.revents & POLLIN);
}

void
evd__ack_one(struct evd_loop *loop, struct evd_source *s)
{
	int rc = s->ops->ack != NULL ? s->ops->ack(s) : 0;

	if (rc < 0 && rc != -EAGAIN)
		evd__source_error(loop, s, "ack", rc);
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
	evd__disarm(loop, s);
	evd__act_del(loop, s);
	if (s->has_fd) {
		if (s->ops->ack != NULL && evd__fd_ready(s->notify_fd))
			evd__ack_one(loop, s);
		loop->fd_key[s->notify_fd] = 0;
		if (s->ops->arm != NULL)
			evd__dev_del(loop, s);
		if (epoll_ctl(loop->epfd, EPOLL_CTL_DEL, s->notify_fd, NULL) < 0) {
			/* removed from a handler and then closed is right: not warned */
			EVD_LOG_AT(s->removing ? RTE_LOG_DEBUG : RTE_LOG_WARNING,
				   "loop %s: source %s: fd %d was closed while registered "
				   "(EPOLL_CTL_DEL: %s)", loop->name, s->name, s->notify_fd,
				   strerror(errno));
			s->has_fd = 0; /* out of the rebuilt set */
			evd__epoll_rebuild(loop);
		}
	} else if (!s->failed && !s->ops->bell) {
		loop->n_poll_only--;
	}
	key_give_back(loop, s);
	evd__registry_lock();
	loop->src[i] = loop->src[--loop->n_src];
	loop->src[i]->index = i;
	evd__registry_unlock();
	s->removing = 0;
	s->failed = 0;
	s->woken = 0;
	/* last, and a release: whoever claims it next (an add to another loop,
	 * a discard) finds the source, and a ring's consumer side, as left here */
	__atomic_store_n(&s->loop, NULL, __ATOMIC_RELEASE);
}

int
evd_loop_remove(struct evd_loop *loop, struct evd_source *src)
{
	int held = 0, rc = 0;
	bool on;

	if (!evd__live_loop(loop, "evd_loop_remove") || !evd__live_source(src, "evd_loop_remove"))
		return -EINVAL;
	/* looked at before the hold (on another loop or none: -EINVAL, even
	 * while another thread runs this one) and again holding it: a remove
	 * on another thread may have been first */
	on = __atomic_load_n(&src->loop, __ATOMIC_ACQUIRE) == loop;
	if (on) {
		held = evd__control_enter(loop, "evd_loop_remove");
		if (held < 0)
			return held;
		on = __atomic_load_n(&src->loop, __ATOMIC_ACQUIRE) == loop;
	}
	if (!on) {
		rc = EVD_ARG_ERR(-EINVAL, "evd_loop_remove %s: source %s is not on it", loop->name,
				 src->name);
	} else if (loop->in_round && src->removing) {
		rc = EVD_ARG_ERR(-EINVAL, "evd_loop_remove %s: source %s is already being removed "
				 "(when the round ends)", loop->name, src->name);
	} else if (loop->in_round) {
		/* Called from a handler: the round is iterating its lists. */
		src->removing = 1;
		evd__act_skip(loop, src);
		loop->pending_removal = true;
	} else {
		detach(loop, src);
	}
	evd__control_leave(loop, held);
	return rc;
}

/* The removals asked for during a round, once no list is iterated; a
 * source still in the list of the last wait's notifications stays until
 * that wait is settled. */
void
evd__reap_removed(struct evd_loop *loop)
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
