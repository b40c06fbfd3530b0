/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The wait and what it found: epoll (with or without a timeout) and the
 * bell, the sources they name marked notified (their arm spent), their
 * notifications consumed once, and the wait's reason.
 */
#include <errno.h>
#include <poll.h>
#include <string.h>
#include <sys/epoll.h>
#include <time.h>
#include <unistd.h>

#include <rte_common.h>

#include "evd_private.h"

/* A source's notification came (its fd was ready, or its bell bit): the
 * arm of a source that has one is spent, it is polled every round from now
 * on; a level fd stays watched. */
static void
mark_woken(struct evd_loop *loop, struct evd_source *s)
{
	if (s->woken || s->removing || s->failed)
		return;
	s->woken = 1;
	s->events_at_sleep = s->stats.events;
	loop->woke[loop->n_woke++] = s;
	EVD_STAT_ADD(s->stats.wakeups, 1);
	if (s->ops->arm != NULL || s->ops->bell)
		evd__disarm(loop, s);
}

static void
bell_slot(void *arg, uint32_t slot)
{
	struct evd_loop *loop = arg;
	struct evd_source *s = slot < loop->n_keys ? loop->keys[slot].src : NULL;

	/* a bit a producer set for the slot's last source, or for an arm
	 * the loop withdrew since, is nobody's notification */
	if (s != NULL && s->ops->bell && s->armed == EVD_ARM_ONCE)
		mark_woken(loop, s);
}

/* epoll_pwait2 failed with ENOSYS or EPERM once: the kernel predates 5.11,
 * or a seccomp profile refuses the call */
static bool no_epoll_pwait2;

void
evd__take_bell(struct evd_loop *loop)
{
	evd__bell_take(loop->bell, loop->n_keys, bell_slot, loop);
}

/* Wait on epoll at most *tsp (NULL: no timeout; zero: only look), then mark
 * the sources notified, the bell's too. Returns the epoll events (-1: the
 * wait failed, errno), *stop if the loop's eventfd came with a stop.
 * (loop->bell_fd_seen: the bell's fd was among them.) */
int
evd__gather(struct evd_loop *loop, const struct timespec *tsp, bool *stop)
{
	struct epoll_event evs[64];
	int n = -1;

	errno = ENOSYS;
	if (tsp != NULL && tsp->tv_sec == 0 && tsp->tv_nsec == 0)
		n = epoll_wait(loop->epfd, evs, RTE_DIM(evs), 0); /* a look: the cheaper call */
	else if (!__atomic_load_n(&no_epoll_pwait2, __ATOMIC_RELAXED))
		n = epoll_pwait2(loop->epfd, evs, RTE_DIM(evs), tsp, NULL);
	if (n < 0 && (errno == ENOSYS || errno == EPERM)) {
		/* Kernels before 5.11 (ENOSYS), or a seccomp profile that does
		 * not know the call (EPERM, older Docker): wait on the epoll fd
		 * itself with ppoll's nanoseconds (epoll_wait's milliseconds
		 * would turn a nap into a busy return), then collect without
		 * waiting. */
		struct pollfd pfd = { .fd = loop->epfd, .events = POLLIN };

		__atomic_store_n(&no_epoll_pwait2, true, __ATOMIC_RELAXED);
		n = ppoll(&pfd, 1, tsp, NULL);
		if (n > 0)
			n = epoll_wait(loop->epfd, evs, RTE_DIM(evs), 0);
	}
	for (int i = 0; i < n; i++) {
		struct evd_source *s;

		if (evs[i].data.u64 == WAKE_KEY) {
			uint64_t v;

			if (read(loop->wake_fd, &v, sizeof(v)) < 0 && errno != EAGAIN)
				EVD_LOG(ERR, "loop %s: wake eventfd: %s", loop->name, strerror(errno));
			if (__atomic_load_n(&loop->stop, __ATOMIC_ACQUIRE))
				*stop = true;
			continue;
		}
		if (evs[i].data.u64 == BELL_KEY) {
			loop->bell_fd_seen = true; /* drained by ack_woken() */
			continue;
		}
		s = evd__key_source(loop, evs[i].data.u64);
		if (unlikely(s == NULL)) {
			/* a stale entry: it would fire again */
			EVD_LOG(WARNING, "loop %s: an epoll entry names no source: set rebuilt",
				loop->name);
			evd__epoll_rebuild(loop);
			continue;
		}
		mark_woken(loop, s);
	}
	if (evd__bell_rung(loop->bell))
		evd__take_bell(loop);
	return n;
}

/* Step 4: wait, at most timeout_ns (UINT64_MAX: no bound), and mark the
 * sources notified. Returns the wake reason. A nap (nothing armed for it)
 * counts as a nap, and its timeout is its normal end; it does not tell the
 * bell it waits, so that rings do not end it. */
enum evd_wake_reason
evd__wait_ready(struct evd_loop *loop, uint64_t timeout_ns, bool nap)
{
	static const struct timespec look = { 0, 0 };
	struct timespec ts = {
		.tv_sec = (time_t)(timeout_ns / 1000000000ull),
		.tv_nsec = (long)(timeout_ns % 1000000000ull),
	};
	const struct timespec *tsp = timeout_ns == UINT64_MAX ? NULL : &ts;
	bool stop = false, rung = false;
	int n;

	loop->n_woke = 0;
	loop->bell_fd_seen = false;
	if (nap)
		EVD_STAT_ADD(loop->stats.naps, 1);
	else
		EVD_STAT_ADD(loop->stats.sleeps, 1);
	/* a bell rung while the loop was awake wrote no fd: no wait then */
	if (!nap && !evd__bell_sleep(loop->bell)) {
		rung = true;
		tsp = &look;
	} else if (loop->clock.wait_ns != NULL) {
		/* after the bell's sleep: a post during the virtual wait rings its fd */
		loop->clock.wait_ns(loop->clock.arg, EVD_MODE_SLEEP, !nap, timeout_ns);
		tsp = &look;
	}
	n = evd__gather(loop, tsp, &stop);
	if (!nap)
		evd__bell_wake(loop->bell);
	/* a wait that ran out is a timeout, whatever the bell's bits then
	 * showed (a producer between its bits and its write) */
	if (n == 0 && !rung) {
		if (!nap)
			EVD_STAT_ADD(loop->stats.sleep_timeouts, 1);
		return EVD_WAKE_TIMEOUT;
	}
	EVD_STAT_ADD(loop->stats.wakeups, 1);
	if (n < 0 && errno != EINTR)
		EVD_LOG(ERR, "loop %s: wait: %s", loop->name, strerror(errno));
	/* a signal (EINTR), or the bell's fd with no bit behind it (a late
	 * write, the bits taken by a round before): nothing is ready */
	if (loop->n_woke == 0 && (n < 0 || (n == 1 && loop->bell_fd_seen)))
		EVD_STAT_ADD(loop->stats.spurious_wakeups, 1);
	return stop ? EVD_WAKE_STOP : EVD_WAKE_NOTIFY;
}

/* Step 5: consume the notification of every source that woke the loop,
 * exactly once. Done after the post-wake poll, so that a wakeup reaches the
 * handlers one syscall sooner; still before any source is armed again. */
void
evd__ack_woken(struct evd_loop *loop)
{
	/* the bell's fd after the polls too: a producer's write that this
	 * read takes after the bits were taken left `rung` raised, which the
	 * next round sees */
	if (loop->bell_fd_seen) {
		evd__bell_drain(loop->bell);
		loop->bell_fd_seen = false;
	}
	for (uint32_t i = 0; i < loop->n_woke; i++) {
		struct evd_source *s = loop->woke[i];

		if (s->has_fd && s->ops->ack != NULL)
			evd__ack_one(loop, s);
	}
}

/* The notified sources that found nothing were spurious; a late
 * notification settles a debt. Returns whether any was notified. */
bool
evd__settle_woken(struct evd_loop *loop)
{
	bool any = loop->n_woke > 0;

	for (uint32_t i = 0; i < loop->n_woke; i++) {
		struct evd_source *s = loop->woke[i];

		evd__owe_clear(loop, s);
		if (s->stats.events == s->events_at_sleep)
			EVD_STAT_ADD(s->stats.spurious_wakeups, 1);
		s->woken = 0;
	}
	loop->n_woke = 0;
	return any;
}

