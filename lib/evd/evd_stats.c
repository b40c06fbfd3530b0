/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The loop's and the sources' stats as read from any thread, their resets,
 * and the recording of mode transitions (evd_loop_trace_*).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <rte_common.h>

#include "evd_private.h"

int
evd_loop_trace_enable(struct evd_loop *loop, uint32_t entries)
{
	struct evd_mode_event *ring = NULL;
	int rc;

	if (!evd__live_loop(loop, "evd_loop_trace_enable"))
		return -EINVAL;
	if (entries != 0 && (entries < 64 || entries > (1u << 24) || (entries & (entries - 1)) != 0))
		return EVD_ARG_ERR(-EINVAL, "evd_loop_trace_enable %s: entries %u not a power of two "
				   "in 64..16777216", loop->name, entries);
	rc = evd__hold_take(loop, EVD__CONTROL);
	if (rc < 0)
		return EVD_ARG_ERR(rc, "evd_loop_trace_enable %s: %s", loop->name,
				   evd__hold_refused(rc, "the loop is running"));
	__atomic_store_n(&loop->trace_resizing, true, __ATOMIC_SEQ_CST);
	if (__atomic_load_n(&loop->trace_readers, __ATOMIC_SEQ_CST) != 0) {
		rc = EVD_ARG_ERR(-EBUSY, "evd_loop_trace_enable %s: another thread reads the trace",
				 loop->name);
		goto out;
	}
	if (entries != 0) {
		ring = calloc(entries, sizeof(*ring));
		if (ring == NULL) {
			rc = EVD_ARG_ERR(-ENOMEM, "evd_loop_trace_enable %s: no memory", loop->name);
			goto out;
		}
	}
	free(loop->trace);
	loop->trace = ring;
	loop->trace_mask = entries ? entries - 1 : 0;
	/* the count goes on across rings, so that a reader's cursor from an
	 * earlier one counts what it missed there as lost and skips nothing here */
	__atomic_store_n(&loop->trace_base, loop->trace_head, __ATOMIC_RELEASE);
out:
	__atomic_store_n(&loop->trace_resizing, false, __ATOMIC_RELEASE);
	evd__hold_release(loop);
	return rc;
}

/* evd_loop_trace_read()'s copy, with evd_loop_trace_enable() held off. */
static int
trace_copy(struct evd_loop *loop, uint64_t *cursor, struct evd_mode_event *out, unsigned int max,
	   uint64_t *lost)
{
	uint64_t head, size, from, n, head2;

	if (loop->trace == NULL)
		return -ENODATA;
	size = (uint64_t)loop->trace_mask + 1;
	head = __atomic_load_n(&loop->trace_head, __ATOMIC_ACQUIRE);
	from = RTE_MIN(*cursor, head); /* (past the end: not a cursor this loop gave) */
	from = RTE_MAX(from, __atomic_load_n(&loop->trace_base, __ATOMIC_ACQUIRE));
	if (head - from > size)
		from = head - size;
	n = RTE_MIN(head - from, (uint64_t)max);
	for (uint64_t i = 0; i < n; i++) {
		const struct evd_mode_event *e = &loop->trace[(from + i) & loop->trace_mask];

		out[i].t_ns = __atomic_load_n(&e->t_ns, __ATOMIC_RELAXED);
		out[i].events = __atomic_load_n(&e->events, __ATOMIC_RELAXED);
		out[i].mode = __atomic_load_n(&e->mode, __ATOMIC_RELAXED);
		out[i].reserved = 0;
	}
	/* entries the loop may have overwritten while we copied them are torn:
	 * drop them; a slot it has claimed counts, written or not (it was the
	 * oldest one: a reader a whole window behind copied it as it changed) */
	__atomic_thread_fence(__ATOMIC_ACQUIRE);
	head2 = __atomic_load_n(&loop->trace_claim, __ATOMIC_ACQUIRE);
	if (head2 > size && head2 - size > from) {
		uint64_t bad = RTE_MIN(head2 - size - from, n);

		memmove(out, out + bad, (size_t)(n - bad) * sizeof(*out));
		n -= bad;
		from += bad;
	}
	if (lost != NULL)
		*lost += from - RTE_MIN(*cursor, from);
	*cursor = from + n;
	return (int)n;
}

int
evd_loop_trace_read(struct evd_loop *loop, uint64_t *cursor, struct evd_mode_event *out,
		    unsigned int max, uint64_t *lost)
{
	int rc;

	if (!evd__live_loop(loop, "evd_loop_trace_read"))
		return -EINVAL;
	if (cursor == NULL || (out == NULL && max > 0))
		return EVD_ARG_ERR(-EINVAL, "evd_loop_trace_read %s: %s is NULL", loop->name,
				   cursor == NULL ? "cursor" : "out");
	__atomic_fetch_add(&loop->trace_readers, 1, __ATOMIC_SEQ_CST);
	rc = __atomic_load_n(&loop->trace_resizing, __ATOMIC_SEQ_CST)
		     ? EVD_ARG_ERR(-EBUSY, "evd_loop_trace_read %s: evd_loop_trace_enable() "
				   "is resizing the trace", loop->name)
		     : trace_copy(loop, cursor, out, max, lost);
	__atomic_fetch_sub(&loop->trace_readers, 1, __ATOMIC_RELEASE);
	return rc;
}

/* ---- stats ----------------------------------------------------------------- */

#define LOAD(x) __atomic_load_n(&(x), __ATOMIC_RELAXED)

/* Stores of what is read, atomic too: a reset writes the baseline while
 * telemetry (another thread) may be reading it. */
#define PUT(x, v) __atomic_store_n(&(x), (v), __ATOMIC_RELAXED)

/* @p v, or the most a read found before where that is more (then kept
 * in @p most): a counter read from another thread never goes back. */
static uint64_t
read_most(uint64_t *most, uint64_t v)
{
	uint64_t m = LOAD(*most);

	while (v > m && !__atomic_compare_exchange_n(most, &m, v, true, __ATOMIC_RELAXED,
						     __ATOMIC_RELAXED))
		;
	return RTE_MAX(v, m);
}

uint64_t
evd__loop_cpu_ns(struct evd_loop *loop)
{
	uint64_t cpu;

	for (;;) {
		uint32_t s1 = __atomic_load_n(&loop->cpu_seq, __ATOMIC_ACQUIRE);
		bool live = __atomic_load_n(&loop->cpu_live, __ATOMIC_ACQUIRE);
		uint64_t last;
		clockid_t clock;

		cpu = LOAD(loop->stats.cpu_ns);
		last = LOAD(loop->cpu_last);
		clock = __atomic_load_n(&loop->cpu_clock, __ATOMIC_RELAXED);
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		if ((s1 & 1) != 0 || s1 != __atomic_load_n(&loop->cpu_seq, __ATOMIC_RELAXED))
			continue;
		if (live && last != 0) {
			struct timespec ts;

			/* the run's thread's clock, read from any thread */
			if (clock_gettime(clock, &ts) == 0) {
				uint64_t t = (uint64_t)ts.tv_sec * 1000000000ull +
					     (uint64_t)ts.tv_nsec;

				cpu += t > last ? t - last : 0;
			}
			/* a sample since (the run's last, as it ends) would have
			 * counted the thread's CPU after the loop let it go */
			__atomic_thread_fence(__ATOMIC_ACQUIRE);
			if (__atomic_load_n(&loop->cpu_seq, __ATOMIC_RELAXED) != s1)
				continue;
		}
		break;
	}
	return read_most(&loop->cpu_read_most, cpu);
}

static void
loop_stats_read(const struct evd_loop_stats *s, struct evd_loop_stats *d)
{
	PUT(d->polls, LOAD(s->polls));
	PUT(d->empty_polls, LOAD(s->empty_polls));
	PUT(d->events, LOAD(s->events));
	PUT(d->arms, LOAD(s->arms));
	PUT(d->repoll_hits, LOAD(s->repoll_hits));
	PUT(d->sleeps, LOAD(s->sleeps));
	PUT(d->wakeups, LOAD(s->wakeups));
	PUT(d->spurious_wakeups, LOAD(s->spurious_wakeups));
	PUT(d->sleep_timeouts, LOAD(s->sleep_timeouts));
	PUT(d->lost_wakeups, LOAD(s->lost_wakeups));
	PUT(d->pauses, LOAD(s->pauses));
	PUT(d->naps, LOAD(s->naps));
	PUT(d->mode_switches, LOAD(s->mode_switches));
	PUT(d->timers_fired, LOAD(s->timers_fired));
	PUT(d->errors, LOAD(s->errors));
	for (int m = 0; m < EVD_MODE_COUNT; m++)
		PUT(d->mode_ns[m], LOAD(s->mode_ns[m]));
	PUT(d->cpu_ns, LOAD(s->cpu_ns));
	PUT(d->mode, LOAD(s->mode));
}

/* Its polls (evd_private.h, evd__polls_join): while it is in the round's
 * list, the loop's passes are added, read between two reads of the field
 * that agree (a seqlock whose sequence is the field itself: a change of
 * the list or an explicit poll changes it). */
uint64_t
evd__source_polls(const struct evd_source *s)
{
	uint64_t w = __atomic_load_n(&s->polls, __ATOMIC_ACQUIRE), n;

	if (!(w & 1))
		return w >> 1;
	/* the loop followed under the registry's lock: its destroy takes it
	 * before freeing it, after the source has left */
	evd__registry_lock();
	for (;;) {
		const struct evd_loop *loop = evd__source_loop(s);

		if (loop != NULL) {
			/* acquire: pairs with the release of passes, so a pass done
			 * after the field changed shows in the second read of it */
			uint64_t p = __atomic_load_n(&loop->passes, __ATOMIC_ACQUIRE);

			if (__atomic_load_n(&s->polls, __ATOMIC_RELAXED) == w) {
				n = (w - 1 + p) >> 1;
				break;
			}
		}
		w = __atomic_load_n(&s->polls, __ATOMIC_ACQUIRE); /* it left its loop after the read */
		if (!(w & 1)) {
			n = w >> 1;
			break;
		}
	}
	evd__registry_unlock();
	return n;
}

static void
source_stats_read(struct evd_source *src, struct evd_source_stats *d)
{
	const struct evd_source_stats *s = &src->stats;
	/* The polls, then the busy ones: a pass counts its busy polls as it
	 * makes them and itself when it ends, so busy polls read after the
	 * polls make the difference too small, never too large. The most
	 * that difference has read (in stats.empty_polls, which the loop does
	 * not write) keeps each read from going back. Locals: d is the
	 * baseline in a reset, which another may write too. */
	uint64_t polls = evd__source_polls(src), busy = LOAD(src->busy_polls);

	polls = RTE_MAX(polls, busy);
	PUT(d->polls, polls);
	PUT(d->empty_polls, read_most(&src->stats.empty_polls, polls - busy));
	PUT(d->events, LOAD(s->events));
	PUT(d->arms, LOAD(s->arms));
	PUT(d->repoll_hits, LOAD(s->repoll_hits));
	PUT(d->wakeups, LOAD(s->wakeups));
	PUT(d->spurious_wakeups, LOAD(s->spurious_wakeups));
	PUT(d->lost_wakeups, LOAD(s->lost_wakeups));
	PUT(d->errors, LOAD(s->errors));
	PUT(d->full, LOAD(s->full));
}

/* Less the baseline, never under 0: a reset that raced the read (telemetry
 * reads while the application may reset) cannot wrap a counter to ~2^64. */
static inline uint64_t
since(uint64_t cur, const uint64_t *base)
{
	uint64_t b = LOAD(*base);

	return cur >= b ? cur - b : 0;
}

#define SUB(f) d->f = since(d->f, &b->f)

int
evd_loop_stats_get(struct evd_loop *loop, struct evd_loop_stats *st)
{
	struct evd_loop_stats *d = st;
	const struct evd_loop_stats *b;

	if (!evd__live_loop(loop, "evd_loop_stats_get"))
		return -EINVAL;
	if (st == NULL)
		return EVD_ARG_ERR(-EINVAL, "evd_loop_stats_get %s: st is NULL", loop->name);
	loop_stats_read(&loop->stats, d);
	d->cpu_ns = evd__loop_cpu_ns(loop);
	b = &loop->stats_base;
	SUB(polls); SUB(empty_polls); SUB(events); SUB(arms); SUB(repoll_hits); SUB(sleeps);
	SUB(wakeups); SUB(spurious_wakeups); SUB(sleep_timeouts); SUB(lost_wakeups); SUB(pauses);
	SUB(naps); SUB(mode_switches); SUB(timers_fired); SUB(errors); SUB(cpu_ns);
	for (int m = 0; m < EVD_MODE_COUNT; m++)
		d->mode_ns[m] = since(d->mode_ns[m], &b->mode_ns[m]);
	return 0;
}

int
evd_source_stats_get(struct evd_source *src, struct evd_source_stats *st)
{
	struct evd_source_stats *d = st;
	const struct evd_source_stats *b;

	if (!evd__live_source(src, "evd_source_stats_get"))
		return -EINVAL;
	if (st == NULL)
		return EVD_ARG_ERR(-EINVAL, "evd_source_stats_get %s: st is NULL", src->name);
	source_stats_read(src, d);
	b = &src->stats_base;
	SUB(polls); SUB(empty_polls); SUB(events); SUB(arms); SUB(repoll_hits); SUB(wakeups);
	SUB(spurious_wakeups); SUB(lost_wakeups); SUB(errors); SUB(full);
	/* the most read may come from another thread's read of later polls */
	d->empty_polls = RTE_MIN(d->empty_polls, d->polls);
	return 0;
}

int
evd_loop_stats_reset(struct evd_loop *loop)
{
	if (!evd__live_loop(loop, "evd_loop_stats_reset"))
		return -EINVAL;
	loop_stats_read(&loop->stats, &loop->stats_base);
	PUT(loop->stats_base.cpu_ns, evd__loop_cpu_ns(loop));
	return 0;
}

int
evd_source_stats_reset(struct evd_source *src)
{
	if (!evd__live_source(src, "evd_source_stats_reset"))
		return -EINVAL;
	source_stats_read(src, &src->stats_base);
	return 0;
}
