/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The loop's doorbell: one eventfd and a bitmap of ready key slots, shared
 * by every software source of a loop (rings), so that a source costs no fd
 * and a wake finds its ready sources in O(ready).
 *
 * A producer that took a source's arm sets the slot's bit, then the bits
 * that summarise it (chunk, then top), then `rung`; it writes the eventfd
 * only when it is the one that raised `rung` and the loop is in a wait
 * (`sleeping`). The loop stores `sleeping`, fences and looks at `rung`
 * before it waits: with full ordering on both sides either the loop sees
 * `rung` and does not wait, or the producer sees `sleeping` and writes.
 * The loop clears `rung` before it takes the bits, top down, each with an
 * exchange: a bit set meanwhile is taken now or raises `rung` again.
 *
 * Bells are never freed: a producer preempted after it took an arm may
 * ring the bell of a loop that was destroyed since; it rings a bell of the
 * pool (a spurious wake of its next loop at worst), never freed memory.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <rte_common.h>

#include "evd_private.h"

#define CHUNK_SHIFT 14 /* slots per chunk */
#define CHUNK_WORDS ((1u << CHUNK_SHIFT) / 64)
#define CHUNKS (EVD_MAX_SOURCES >> CHUNK_SHIFT)

struct bell_chunk {
	uint64_t sum[CHUNK_WORDS / 64]; /* bit w: word w may hold bits */
	uint64_t word[CHUNK_WORDS];     /* bit b of word w: slot w * 64 + b is ready */
};

struct evd__bell {
	uint32_t __rte_cache_aligned rung; /* producers: bits set since the loop took them */
	uint32_t sleeping;                 /* the loop is in (or entering) a wait */
	int efd;
	uint64_t __rte_cache_aligned top[CHUNKS / 64]; /* bit c: chunk c may hold bits */
	struct bell_chunk *chunk[CHUNKS];
	struct evd__bell *next_free;
};

static pthread_mutex_t pool_lock = PTHREAD_MUTEX_INITIALIZER;
static struct evd__bell *pool; /* under pool_lock: bells of destroyed loops */

struct evd__bell *
evd__bell_get(void)
{
	struct evd__bell *b;

	pthread_mutex_lock(&pool_lock);
	b = pool;
	if (b != NULL)
		pool = b->next_free;
	pthread_mutex_unlock(&pool_lock);
	if (b != NULL)
		return b;
	b = aligned_alloc(RTE_CACHE_LINE_SIZE, RTE_ALIGN_CEIL(sizeof(*b), RTE_CACHE_LINE_SIZE));
	if (b == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	memset(b, 0, sizeof(*b));
	b->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (b->efd < 0) {
		int e = errno;

		free(b);
		errno = e;
		return NULL;
	}
	return b;
}

void
evd__bell_put(struct evd__bell *b)
{
	uint64_t v;

	/* what the last loop left is not the next one's */
	__atomic_store_n(&b->rung, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&b->sleeping, 0, __ATOMIC_RELAXED);
	while (read(b->efd, &v, sizeof(v)) > 0)
		;
	pthread_mutex_lock(&pool_lock);
	b->next_free = pool;
	pool = b;
	pthread_mutex_unlock(&pool_lock);
}

int
evd__bell_fd(const struct evd__bell *b)
{
	return b->efd;
}

int
evd__bell_reserve(struct evd__bell *b, uint32_t slot)
{
	uint32_t c = slot >> CHUNK_SHIFT;
	struct bell_chunk *k;

	if (b->chunk[c] != NULL)
		return 0;
	k = calloc(1, sizeof(*k));
	if (k == NULL)
		return -ENOMEM;
	/* release: a producer that reads the pointer sees zeroed bits */
	__atomic_store_n(&b->chunk[c], k, __ATOMIC_RELEASE);
	return 0;
}

void
evd_source_ring_bell(struct evd_source *src)
{
	struct evd__bell *b = src != NULL ? __atomic_load_n(&src->bell, __ATOMIC_ACQUIRE) : NULL;
	uint32_t slot, c, w;
	struct bell_chunk *k;
	uint64_t one = 1;

	if (unlikely(b == NULL))
		return; /* none, or never on a loop: no arm to take (async-signal-safe: no log) */
	slot = __atomic_load_n(&src->key, __ATOMIC_RELAXED);
	c = slot >> CHUNK_SHIFT;
	w = (slot >> 6) & (CHUNK_WORDS - 1);
	k = __atomic_load_n(&b->chunk[c], __ATOMIC_ACQUIRE);
	if (unlikely(k == NULL))
		return;
	/* release on the summaries: the loop that takes one sees what it sums */
	__atomic_fetch_or(&k->word[w], 1ull << (slot & 63), __ATOMIC_RELAXED);
	__atomic_fetch_or(&k->sum[w >> 6], 1ull << (w & 63), __ATOMIC_RELEASE);
	__atomic_fetch_or(&b->top[c >> 6], 1ull << (c & 63), __ATOMIC_RELEASE);
	/* Dekker with evd__bell_sleep(): raise rung, then look at sleeping */
	if (__atomic_exchange_n(&b->rung, 1, __ATOMIC_SEQ_CST) == 0 &&
	    __atomic_load_n(&b->sleeping, __ATOMIC_SEQ_CST))
		/* fails only on counter overflow: the fd is readable then */
		(void)!write(b->efd, &one, sizeof(one));
}

bool
evd__bell_rung(const struct evd__bell *b)
{
	return __atomic_load_n(&b->rung, __ATOMIC_RELAXED) != 0;
}

bool
evd__bell_sleep(struct evd__bell *b)
{
	__atomic_store_n(&b->sleeping, 1, __ATOMIC_SEQ_CST);
	return __atomic_load_n(&b->rung, __ATOMIC_SEQ_CST) == 0;
}

void
evd__bell_wake(struct evd__bell *b)
{
	/* a producer that still reads 1 writes the fd once more: the next
	 * wait drains it (a spurious wake, never a lost one) */
	__atomic_store_n(&b->sleeping, 0, __ATOMIC_RELAXED);
}

void
evd__bell_drain(struct evd__bell *b)
{
	uint64_t v;

	if (read(b->efd, &v, sizeof(v)) < 0 && errno != EAGAIN)
		EVD_LOG(ERR, "doorbell eventfd: %s", strerror(errno));
}

uint32_t
evd__bell_take(struct evd__bell *b, uint32_t slots, void (*fn)(void *arg, uint32_t slot),
	       void *arg)
{
	/* the top words that cover the slots in use (a bit past them names
	 * no one: left for a later, larger loop to find spurious) */
	uint32_t n = 0, tops = RTE_MIN((uint32_t)RTE_DIM(b->top),
				       (((slots + (1u << CHUNK_SHIFT) - 1) >> CHUNK_SHIFT) + 63) / 64);

	if (__atomic_exchange_n(&b->rung, 0, __ATOMIC_SEQ_CST) == 0)
		return 0;
	for (uint32_t t = 0; t < tops; t++) {
		uint64_t tw;

		if (__atomic_load_n(&b->top[t], __ATOMIC_RELAXED) == 0)
			continue;
		tw = __atomic_exchange_n(&b->top[t], 0, __ATOMIC_ACQUIRE);
		while (tw != 0) {
			uint32_t c = t * 64 + (uint32_t)__builtin_ctzll(tw);
			struct bell_chunk *k = b->chunk[c];

			tw &= tw - 1;
			for (uint32_t s = 0; s < RTE_DIM(k->sum); s++) {
				uint64_t sw;

				if (__atomic_load_n(&k->sum[s], __ATOMIC_RELAXED) == 0)
					continue;
				sw = __atomic_exchange_n(&k->sum[s], 0, __ATOMIC_ACQUIRE);
				while (sw != 0) {
					uint32_t w = s * 64 + (uint32_t)__builtin_ctzll(sw);
					uint64_t bits = __atomic_exchange_n(&k->word[w], 0,
									    __ATOMIC_ACQUIRE);

					sw &= sw - 1;
					while (bits != 0) {
						fn(arg, (c << CHUNK_SHIFT) | (w << 6) |
							(uint32_t)__builtin_ctzll(bits));
						bits &= bits - 1;
						n++;
					}
				}
			}
		}
	}
	return n;
}
