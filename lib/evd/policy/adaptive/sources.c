/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The loop's sources: a slot each (up to SLOTS), with its own gap
 * histograms; the state of several sources is made when
 * the loop names its first.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "adaptive.h"

/* The slot of a source: its own, or a free one, or the least recent (whose
 * gap histograms start again). */
static struct source_slot *
slot_of(struct adaptive *a, uint32_t id)
{
	struct source_slot *oldest = NULL;
	uint32_t c0, slot, running = (uint32_t)a->ctx / GAP_CONTEXTS;

	for (int i = 0; i < SLOTS; i++) {
		struct source_slot *sl = &a->slots[i];

		if (sl->used && sl->id == id)
			return sl;
		/* never the slot whose source began the gap now ending, though
		 * sources served in one round tie on last_ns: adaptive_events
		 * learns that gap in the slot's contexts after this */
		if (sl->used && (uint32_t)i == running)
			continue;
		if (oldest == NULL || (oldest->used && (!sl->used || sl->last_ns < oldest->last_ns)))
			oldest = sl; /* the first free slot, else the least recent */
	}
	memset(oldest, 0, sizeof(*oldest));
	oldest->used = true;
	oldest->id = id;
	slot = (uint32_t)(oldest - a->slots);
	memset(a->src->own_gaps[slot], 0, sizeof(a->src->own_gaps[slot]));
	a->src->rule_cost[slot][0] = a->src->rule_cost[slot][1] = 0;
	/* what the superposition learned of this slot was its old source's */
	evd__superpose_set(a, a->superposed & ~(1u << slot));
	if (a->gap_scored && a->gap_slot == slot)
		a->gap_scored = false; /* the gap its old source began: nobody's now */
	c0 = GAP_CONTEXTS * slot;
	memset(a->w[c0], 0, GAP_CONTEXTS * sizeof(a->w[0]));
	for (uint32_t c = c0; c < c0 + GAP_CONTEXTS; c++) {
		/* young: what all sources teach, not what its old source taught */
		memcpy(a->rule[c], a->pooled, sizeof(a->pooled));
		a->ctx_own &= ~(1u << c);
	}
	a->n_ctx_used = RTE_MAX(a->n_ctx_used, c0 + GAP_CONTEXTS);
	return oldest;
}

/* For tests/test_policy_slots.c (internal): the weight adaptive's gap
 * histograms hold for source @p id (its slot's contexts); -ENOENT: no slot
 * holds it; -EINVAL: not adaptive. */
int
evd__adaptive_source_weight(const struct evd_policy *p, uint32_t id, double *w)
{
	const struct adaptive *a;

	if (p == NULL || strcmp(p->ops->name, "adaptive") != 0)
		return -EINVAL;
	a = p->state;
	for (int i = 0; i < SLOTS; i++)
		if (a->slots[i].used && a->slots[i].id == id) {
			*w = 0;
			for (int c = i * GAP_CONTEXTS; c < (i + 1) * GAP_CONTEXTS; c++)
				for (int b = 0; b < GAP_BINS; b++)
					*w += a->w[c][b];
			return 0;
		}
	return -ENOENT;
}

/* The loop named its first source: the state of several sources, and
 * every slot's histograms, once. False: no memory (logged; the loop's gaps
 * are then learned as one source's, as before it named one). */
static bool __attribute__((noinline, cold))
sources_start(struct adaptive *a)
{
	float (*w)[GAP_BINS];

	if (a->alone)
		return false;
	w = evd__realloc(&a->mem, a->w, CONTEXTS * sizeof(*w));
	if (w != NULL)
		a->w = w;
	a->src = w != NULL ? evd__zalloc(&a->mem, sizeof(*a->src), 0) : NULL;
	if (a->src == NULL) {
		a->alone = true;
		EVD_LOG(WARNING, "policy adaptive: no memory to follow the loop's sources: their "
			"gaps are learned as one source's");
		return false;
	}
	return true;
}

void
evd__adaptive_source_events(void *st, uint64_t now, uint32_t id, uint32_t n)
{
	struct adaptive *a = st;
	struct source_slot *sl;

	RTE_SET_USED(n);
	if (unlikely(a->src == NULL) && !sources_start(a))
		return;
	a->per_source = true;
	sl = slot_of(a, id);
	if (sl->last_ns != 0 && now >= sl->last_ns) { /* its own gap (superposition) */
		uint32_t s = (uint32_t)(sl - a->slots);

		a->src->own_gaps[s][gap_bin(seen_gap(a, now, sl->last_ns))] += 1.0;
	}
	/* the gap that ends at the next completion is learned in this
	 * source's contexts (a round that served several: the last one) */
	a->slot_ctx = GAP_CONTEXTS * (uint32_t)(sl - a->slots);
	sl->last_ns = now;
}
