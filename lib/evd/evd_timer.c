/* SPDX-License-Identifier: BSD-3-Clause */
/* Timers: a binary min-heap of deadlines on the loop's clock. */
#include <errno.h>
#include <stdlib.h>

#include "evd_private.h"

static void
heap_set(struct evd__timers *h, uint32_t i, struct evd_timer *t)
{
	h->heap[i] = t;
	t->heap_idx = i;
}

static void
sift_up(struct evd__timers *h, uint32_t i)
{
	struct evd_timer *t = h->heap[i];

	while (i > 0) {
		uint32_t p = (i - 1) / 2;

		if (h->heap[p]->deadline <= t->deadline)
			break;
		heap_set(h, i, h->heap[p]);
		i = p;
	}
	heap_set(h, i, t);
}

static void
sift_down(struct evd__timers *h, uint32_t i)
{
	struct evd_timer *t = h->heap[i];

	for (;;) {
		uint32_t c = 2 * i + 1;

		if (c >= h->n)
			break;
		if (c + 1 < h->n && h->heap[c + 1]->deadline < h->heap[c]->deadline)
			c++;
		if (t->deadline <= h->heap[c]->deadline)
			break;
		heap_set(h, i, h->heap[c]);
		i = c;
	}
	heap_set(h, i, t);
}

int
evd__timers_push(struct evd__timers *h, struct evd_timer *t)
{
	if (h->n == h->cap) {
		uint32_t cap = h->cap ? h->cap * 2 : 8;
		struct evd_timer **a = realloc(h->heap, cap * sizeof(*a));

		if (a == NULL)
			return -ENOMEM;
		h->heap = a;
		h->cap = cap;
	}
	heap_set(h, h->n++, t);
	sift_up(h, h->n - 1);
	return 0;
}

void
evd__timers_remove(struct evd__timers *h, struct evd_timer *t)
{
	uint32_t i = t->heap_idx;

	h->n--;
	if (i != h->n) {
		struct evd_timer *moved = h->heap[h->n];

		heap_set(h, i, moved);
		sift_down(h, i);
		sift_up(h, moved->heap_idx);
	}
	t->heap_idx = UINT32_MAX;
}

/* Deadlines saturate at UINT64_MAX (never: past the end of the clock)
 * instead of wrapping to the past, where a timer would fire at once: a
 * delay or period near 2^64, or a custom clock with large values. */
static inline uint64_t
add_sat(uint64_t a, uint64_t b)
{
	return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

static inline uint64_t
mul_sat(uint64_t a, uint64_t b)
{
	return b != 0 && a > UINT64_MAX / b ? UINT64_MAX : a * b;
}

/* A fired one-shot whose handle was given out stays allocated, on the
 * fired list, until evd_timer_cancel() releases it. */
static void
fired_keep(struct evd__timers *h, struct evd_timer *t)
{
	t->heap_idx = EVD__TIMER_FIRED;
	t->fired_prev = NULL;
	t->fired_next = h->fired;
	if (h->fired != NULL)
		h->fired->fired_prev = t;
	h->fired = t;
}

static void
fired_drop(struct evd__timers *h, struct evd_timer *t)
{
	if (t->fired_prev != NULL)
		t->fired_prev->fired_next = t->fired_next;
	else
		h->fired = t->fired_next;
	if (t->fired_next != NULL)
		t->fired_next->fired_prev = t->fired_prev;
}

void
evd__timers_free(struct evd__timers *h)
{
	while (h->n > 0) {
		struct evd_timer *t = h->heap[0];

		evd__timers_remove(h, t);
		free(t);
	}
	while (h->fired != NULL) {
		struct evd_timer *t = h->fired;

		fired_drop(h, t);
		free(t);
	}
	free(h->heap);
	h->heap = NULL;
	h->cap = 0;
}

unsigned int
evd__timers_run(struct evd_loop *loop, uint64_t now)
{
	struct evd__timers *h = &loop->timers;
	unsigned int ran = 0;

	/* Pop one at a time: a callback may start or cancel timers. Bounded by
	 * the heap size at entry so a zero-period restart cannot spin here. */
	for (uint32_t budget = h->n; budget > 0 && h->n > 0 && h->heap[0]->deadline <= now;
	     budget--) {
		struct evd_timer *t = h->heap[0];

		if (t->period != 0) {
			uint64_t next = add_sat(t->deadline, t->period);

			if (next <= now) /* missed periods are skipped, not replayed */
				next = add_sat(next, mul_sat((now - next) / t->period + 1, t->period));
			t->deadline = next; /* UINT64_MAX: past the clock's end, never */
			sift_down(h, 0);
			ran++;
			t->cb(loop, t, t->arg);
		} else {
			evd__timers_remove(h, t);
			ran++;
			h->firing = t; /* its own cancel from the callback is taken after it */
			h->firing_cancelled = false;
			t->cb(loop, t, t->arg);
			h->firing = NULL;
			if (t->kept && !h->firing_cancelled)
				fired_keep(h, t);
			else
				free(t);
		}
	}
	if (ran)
		EVD_STAT_ADD(loop->stats.timers_fired, ran);
	return ran;
}

int
evd_timer_start(struct evd_loop *loop, uint64_t after_ns, uint64_t period_ns, evd_timer_cb_t cb,
		void *arg, struct evd_timer **out)
{
	struct evd_timer *t;
	int rc, held;

	if (out != NULL)
		*out = NULL;
	if (!evd__live_loop(loop, "evd_timer_start"))
		return -EINVAL;
	if (cb == NULL)
		return EVD_ARG_ERR(-EINVAL, "evd_timer_start %s: cb is NULL", loop->name);
	held = evd__control_enter(loop, "evd_timer_start");
	if (held < 0)
		return held;
	t = calloc(1, sizeof(*t));
	if (t == NULL) {
		rc = EVD_ARG_ERR(-ENOMEM, "evd_timer_start %s: no memory", loop->name);
		goto out;
	}
	t->deadline = add_sat(evd__now(loop), after_ns);
	t->period = period_ns;
	t->cb = cb;
	t->arg = arg;
	t->loop = loop;
	t->kept = out != NULL;
	rc = evd__timers_push(&loop->timers, t);
	if (rc < 0) {
		free(t);
		EVD_LOG(ERR, "evd_timer_start %s: no memory", loop->name);
		goto out;
	}
	if (out != NULL)
		*out = t;
out:
	evd__control_leave(loop, held);
	return rc;
}

int
evd_timer_cancel(struct evd_loop *loop, struct evd_timer *t)
{
	struct evd__timers *h;
	int held, rc = 0;

	if (!evd__live_loop(loop, "evd_timer_cancel"))
		return -EINVAL;
	if (t == NULL)
		return EVD_ARG_ERR(-EINVAL, "evd_timer_cancel %s: timer is NULL", loop->name);
	held = evd__control_enter(loop, "evd_timer_cancel");
	if (held < 0)
		return held;
	h = &loop->timers;
	if (t == h->firing) {
		h->firing_cancelled = true; /* a one-shot in its own callback: freed after it */
	} else if (t->loop == loop && t->heap_idx == EVD__TIMER_FIRED) {
		fired_drop(h, t);
		free(t);
	} else if (t->loop == loop && t->heap_idx < h->n && h->heap[t->heap_idx] == t) {
		evd__timers_remove(h, t);
		free(t);
	} else {
		rc = EVD_ARG_ERR(-EINVAL, "evd_timer_cancel %s: timer %p is not on this loop",
				 loop->name, (void *)t);
	}
	evd__control_leave(loop, held);
	return rc;
}
