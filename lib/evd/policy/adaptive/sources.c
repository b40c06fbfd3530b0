/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The loop's sources: a slot each (up to SLOTS), with its own gap
 * histograms.
 */
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
	*oldest = (struct source_slot){ .id = id, .used = true };
	slot = (uint32_t)(oldest - a->slots);
	memset(a->own_gaps[slot], 0, sizeof(a->own_gaps[slot]));
	a->rule_cost[slot][0] = a->rule_cost[slot][1] = 0;
	/* what the superposition learned of this slot was its old source's:
	 * it waits for the next update, which takes the sources anew */
	if (a->superposed >> slot & 1)
		a->superposed = 0;
	if (a->gap_scored && a->gap_slot == slot)
		a->gap_scored = false; /* the gap its old source began: nobody's now */
	c0 = GAP_CONTEXTS * slot;
	memset(a->w[c0], 0, GAP_CONTEXTS * sizeof(a->w[0]));
	/* young: what all sources teach, not what its old source taught */
	for (uint32_t c = c0; c < c0 + GAP_CONTEXTS; c++)
		memcpy(a->rule[c], a->pooled, sizeof(a->pooled));
	a->ctx_own &= ~(((1u << GAP_CONTEXTS) - 1) << c0);
	a->n_ctx_used = RTE_MAX(a->n_ctx_used, c0 + GAP_CONTEXTS);
	return oldest;
}

void
evd__adaptive_source_events(void *st, uint64_t now, uint32_t id, uint32_t n __rte_unused)
{
	struct adaptive *a = st;
	struct source_slot *sl = slot_of(a, id);

	if (sl->last_ns != 0 && now >= sl->last_ns) { /* its own gap (superposition) */
		uint32_t s = (uint32_t)(sl - a->slots);

		a->own_gaps[s][gap_bin(seen_gap(a, now, sl->last_ns))] += 1.0;
	}
	/* the gap that ends at the next completion is learned in this
	 * source's contexts (a round that served several: the last one) */
	a->slot_ctx = GAP_CONTEXTS * (uint32_t)(sl - a->slots);
	sl->last_ns = now;
}
