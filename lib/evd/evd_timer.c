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
			h->firing = t; /* its own cancel from the callback: 0, freed here */
			t->cb(loop, t, t->arg);
			h->firing = NULL;
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
	int rc;

	if (out != NULL)
		*out = NULL;
	if (loop == NULL || cb == NULL)
		return -EINVAL;
	t = calloc(1, sizeof(*t));
	if (t == NULL)
		return -ENOMEM;
	t->deadline = add_sat(evd__now(loop), after_ns);
	t->period = period_ns;
	t->cb = cb;
	t->arg = arg;
	t->loop = loop;
	rc = evd__timers_push(&loop->timers, t);
	if (rc < 0) {
		free(t);
		return rc;
	}
	if (out != NULL)
		*out = t;
	return 0;
}

int
evd_timer_cancel(struct evd_loop *loop, struct evd_timer *t)
{
	if (loop != NULL && t != NULL && t == loop->timers.firing)
		return 0; /* a one-shot cancelled in its own callback: freed after it */
	if (loop == NULL || t == NULL || t->loop != loop || t->heap_idx >= loop->timers.n ||
	    loop->timers.heap[t->heap_idx] != t)
		return -EINVAL;
	evd__timers_remove(&loop->timers, t);
	free(t);
	return 0;
}
