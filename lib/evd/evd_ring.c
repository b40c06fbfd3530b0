/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The software event ring: the kDAPL pending-event queue, lock-free.
 *
 * Multi-producer, single-consumer, bounded. Each slot carries a sequence
 * number (seq == pos: free for the lap of pos; seq == pos + 1: holds the
 * event of pos), so producers claim slots with one CAS on head and publish
 * them in any order, and the consumer never reads a half-written event.
 *
 * The doorbell is the loop's bell (evd_bell.c), rung only when the consumer
 * is armed. The consumer stores armed = 1, the loop fences once for all its
 * rings, then re-polls; a producer publishes, fences, then loads armed.
 * With full fences on both sides at least one of them sees the other:
 * either the re-poll finds the event, or the producer rings. Without the
 * fences both could read stale values and the consumer would sleep on a
 * non-empty ring. A producer preempted after it took the arm rings late,
 * never not at all: the loop sleeps on until it does.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <rte_common.h>
#include <rte_lcore.h>
#include <rte_memory.h>

#include "evd_private.h"

#define RING_MAX_SIZE (1u << 24)
#define RING_MAX_BURST 256

struct ring_slot {
	uint64_t seq;
	struct evd_event ev;
};

struct evd_ring {
	struct evd_source src;
	struct evd__mem mem; /* the creating lcore's socket, once the EAL is up */
	uint32_t size;
	uint32_t mask;
	struct ring_slot *slots;
	uint64_t __rte_cache_aligned head; /* producers: next position to claim */
	uint32_t __rte_cache_aligned armed; /* consumer sets, one producer clears */
	uint64_t __rte_cache_aligned tail; /* consumer: next position to take */
	/* &slots[tail & mask], in tail's line: an empty ring's poll reads
	 * this line and the slot, nothing else of the ring */
	struct ring_slot *next;
};

static const struct evd_source_ops ring_ops;

static inline struct evd_ring *
to_ring(struct evd_source *s)
{
	return (struct evd_ring *)s;
}

/* The consumer's side: take up to n events, in order, into out, and free
 * their slots for the next lap (before any handler runs, so producers can
 * post meanwhile). Returns how many. */
static __rte_always_inline uint16_t
ring_take(struct evd_ring *r, struct evd_event *out, uint16_t n)
{
	/* in registers: the acquire loads below would make the compiler read
	 * them again for every event */
	struct ring_slot *const slots = r->slots, *const wrap = slots + r->size;
	const uint32_t size = r->size;
	const uint64_t t0 = r->tail;
	uint64_t t = t0;
	struct ring_slot *sl = r->next;
	struct evd_event *o = out, *const o_end = out + n;
	uint16_t k;

	/* by runs of slots up to the wrap: pointer walks, no mask per event */
	while (o < o_end) {
		struct ring_slot *end = sl + RTE_MIN((size_t)(o_end - o), (size_t)(wrap - sl));

		for (; sl < end; sl++, t++, o++) {
			if (__atomic_load_n(&sl->seq, __ATOMIC_ACQUIRE) != t + 1)
				goto out;
			*o = sl->ev;
			__atomic_store_n(&sl->seq, t + size, __ATOMIC_RELEASE);
		}
		if (sl == wrap)
			sl = slots;
	}
out:
	k = (uint16_t)(o - out);
	if (k > 0) {
		r->next = sl;
		/* Release: a reader of tail that acquires it sees head at least
		 * as far (the claims of these events happen before, through
		 * seq), as evd_ring_count() assumes; relaxed, C11 let it see an
		 * older head. */
		__atomic_store_n(&r->tail, t0 + k, __ATOMIC_RELEASE);
	}
	return k;
}

static int __rte_noinline
ring_deliver(struct evd_source *s, uint16_t budget)
{
	struct evd_event burst[RING_MAX_BURST];
	uint16_t n = ring_take(to_ring(s), burst, RTE_MIN(budget, (uint16_t)RING_MAX_BURST));

	if (n == 0)
		return 0;
	evd_source_deliver(s, burst, n);
	return n;
}

static int
ring_poll(struct evd_source *s, uint16_t budget)
{
	const struct evd_ring *r = to_ring(s);

	/* an empty ring costs a look at one slot, not the burst's stack frame
	 * (a loop polls thousands of idle rings a round) */
	if (__atomic_load_n(&r->next->seq, __ATOMIC_ACQUIRE) != r->tail + 1)
		return 0;
	return ring_deliver(s, budget);
}

static int
ring_arm(struct evd_source *s)
{
	/* The loop's fence after its arm pass pairs with the one in
	 * evd_ring_post_burst(); release: the producer that takes the arm
	 * sees the bell the loop gave the source before. */
	__atomic_store_n(&to_ring(s)->armed, 1, __ATOMIC_RELEASE);
	return 0;
}

static int
ring_disarm(struct evd_source *s)
{
	__atomic_store_n(&to_ring(s)->armed, 0, __ATOMIC_RELAXED);
	return 0;
}

static void
ring_close(struct evd_source *s)
{
	struct evd_ring *r = to_ring(s);
	struct evd__mem mem = r->mem;

	evd__free(&mem, r->slots);
	evd__free(&mem, r);
}

static unsigned int
ring_queued(const struct evd_source *s)
{
	return evd_ring_count(s);
}

static const struct evd_source_ops ring_ops = {
	.kind = "ring",
	.bell = true,
	.poll = ring_poll,
	.arm = ring_arm,
	.disarm = ring_disarm,
	.queued = ring_queued,
	.close = ring_close,
};

int
evd_ring_create(const char *name, uint32_t size, evd_handler_t handler, void *arg,
		struct evd_source **out)
{
	struct evd__mem mem;
	struct evd_ring *r;
	uint32_t sz;
	int rc;

	if (out == NULL)
		return EVD_ARG_ERR(-EINVAL, "evd_ring_create: out is NULL");
	*out = NULL;
	if (evd__name_check("evd_ring_create", name) < 0)
		return -EINVAL;
	if (handler == NULL)
		return EVD_ARG_ERR(-EINVAL, "evd_ring_create %s: handler is NULL", name ? name : "");
	if (size < 2 || size > RING_MAX_SIZE)
		return EVD_ARG_ERR(-EINVAL, "evd_ring_create %s: size %u out of range 2..%u",
				   name ? name : "", size, RING_MAX_SIZE);
	sz = rte_align32pow2(size);
	/* on the creating lcore's socket, as rte_ring_create(.., rte_socket_id()) */
	mem.dpdk = evd__eal_up();
	mem.socket = mem.dpdk ? (int)rte_socket_id() : SOCKET_ID_ANY;
	r = evd__zalloc(&mem, sizeof(*r), RTE_CACHE_LINE_SIZE);
	if (r == NULL)
		return EVD_ARG_ERR(-ENOMEM, "evd_ring_create %s: no memory", name ? name : "");
	r->mem = mem;
	rc = evd_source_init(&r->src, &ring_ops, name, handler, arg);
	if (rc < 0) {
		evd__free(&mem, r);
		return rc;
	}
	/* cache-aligned: a 32-byte slot never straddles two lines */
	r->slots = evd__zalloc(&mem, sz * sizeof(*r->slots), RTE_CACHE_LINE_SIZE);
	if (r->slots == NULL) {
		evd__free(&mem, r);
		return EVD_ARG_ERR(-ENOMEM, "evd_ring_create %s: no memory for %u slots",
				   name ? name : "", sz);
	}
	for (uint32_t i = 0; i < sz; i++)
		r->slots[i].seq = i;
	r->size = sz;
	r->mask = sz - 1;
	r->next = r->slots;
	*out = &r->src;
	return 0;
}

/* The slow path of a refused post: one log line naming the argument. */
static int __rte_noinline
post_refused(const struct evd_source *s, const struct evd_event *ev, unsigned int n)
{
	if (s == NULL)
		return EVD_ARG_ERR(-EINVAL, "evd_ring_post: ring is NULL");
	if (s->ops != &ring_ops || s->magic != EVD_SOURCE_MAGIC)
		return EVD_ARG_ERR(-EINVAL, "evd_ring_post: %p is not a ring (or was destroyed)",
				   (const void *)s);
	if (ev == NULL)
		return EVD_ARG_ERR(-EINVAL, "evd_ring_post %s: event is NULL", s->name);
	return EVD_ARG_ERR(-EINVAL, "evd_ring_post_burst %s: n is %u", s->name, n);
}

int
evd_ring_post_burst(struct evd_source *s, const struct evd_event *ev, unsigned int n)
{
	struct evd_ring *r;
	uint64_t pos;
	uint32_t k;

	if (unlikely(s == NULL || s->ops != &ring_ops || s->magic != EVD_SOURCE_MAGIC ||
		     ev == NULL || n == 0))
		return post_refused(s, ev, n);
	r = to_ring(s);
	pos = __atomic_load_n(&r->head, __ATOMIC_RELAXED);
	for (;;) {
		uint64_t seq = 0;

		/* How many slots from pos on are free for this lap? Slots are
		 * freed in order, so the count is a prefix. */
		for (k = 0; k < n; k++) {
			seq = __atomic_load_n(&r->slots[(pos + k) & r->mask].seq, __ATOMIC_ACQUIRE);
			if (seq != pos + k)
				break;
		}
		if (k == 0) {
			if ((int64_t)(seq - pos) < 0) {
				/* Still holds the event of the previous lap: full. */
				__atomic_fetch_add(&s->stats.full, 1, __ATOMIC_RELAXED);
				return -ENOBUFS;
			}
			pos = __atomic_load_n(&r->head, __ATOMIC_RELAXED); /* claimed by another */
			continue;
		}
		if (__atomic_compare_exchange_n(&r->head, &pos, pos + k, true, __ATOMIC_RELAXED,
						__ATOMIC_RELAXED))
			break;
	}
	for (uint32_t i = 0; i < k; i++) {
		struct ring_slot *sl = &r->slots[(pos + i) & r->mask];

		sl->ev = ev[i];
		__atomic_store_n(&sl->seq, pos + i + 1, __ATOMIC_RELEASE);
	}
	if (k < n)
		__atomic_fetch_add(&s->stats.full, 1, __ATOMIC_RELAXED);
	/* Dekker with ring_arm(): publish, fence, then look at armed. */
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (__atomic_load_n(&r->armed, __ATOMIC_RELAXED) &&
	    __atomic_exchange_n(&r->armed, 0, __ATOMIC_ACQ_REL))
		evd_source_ring_bell(s);
	return (int)k;
}

int
evd_ring_post(struct evd_source *s, const struct evd_event *ev)
{
	int rc = evd_ring_post_burst(s, ev, 1);

	return rc < 0 ? rc : 0;
}

int
evd_ring_discard(struct evd_source *s)
{
	struct evd_event drop[RING_MAX_BURST];
	unsigned int n = 0;
	uint16_t k;
	int rc;

	if (s == NULL || s->ops != &ring_ops || s->magic != EVD_SOURCE_MAGIC)
		return EVD_ARG_ERR(-EINVAL, "evd_ring_discard: %p is not a ring", (void *)s);
	/* the consumer's side, which a loop it joined meanwhile would share */
	rc = evd__source_claim(s, "evd_ring_discard");
	if (rc < 0)
		return rc;
	/* as ring_poll takes them, without the handler */
	while ((k = ring_take(to_ring(s), drop, RING_MAX_BURST)) > 0)
		n += k;
	evd__source_unclaim(s);
	if (n > 0)
		EVD_LOG(WARNING, "ring %s: %u events discarded", s->name, n);
	return (int)n;
}

unsigned int
evd_ring_count(const struct evd_source *s)
{
	const struct evd_ring *r = (const struct evd_ring *)s;

	if (s == NULL || s->ops != &ring_ops) {
		EVD_LOG(ERR, "evd_ring_count: %p is not a ring", (const void *)s);
		return 0;
	}
	uint64_t t = __atomic_load_n(&r->tail, __ATOMIC_ACQUIRE); /* tail first: never past head */
	uint64_t h = __atomic_load_n(&r->head, __ATOMIC_ACQUIRE);

	/* tail, then head: a post and a poll between the reads can make the
	 * difference exceed what the ring holds */
	return (unsigned int)RTE_MIN(h - t, (uint64_t)r->size);
}
