/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * adaptive's per-source slots (8) when a ninth source comes: it takes the
 * least recently seen slot, and that slot's histograms start again. Not
 * the slot of the source that began the gap now ending: the gap's sample
 * is learned in that slot's contexts right after (adaptive_events), and
 * it went to the newcomer's fresh histograms, taken from its own source.
 *
 * Made to happen: sources 0 to 7 all served in one round (one time: a tie
 * for the least recent, whose first went), one of them last, so it began
 * the gap; the next round serves a ninth source, 8. It must not take the
 * last one's slot, and the gap's sample (the last one's) must not be
 * counted in source 8's histograms. Each of the 8 is the last in turn: one
 * of them sits in the tie's first slot. (The test reads the policy's state
 * through its own header, and links the static library.)
 */
#include <errno.h>
#include <string.h>

#include "../lib/evd/policy/adaptive/adaptive.h"
#include "evd_test.h"

/* The weight adaptive's gap histograms hold for source @p id (its slot's
 * contexts); -ENOENT: no slot holds it. */
static int
source_weight(const struct evd_policy *p, uint32_t id, double *w)
{
	const struct adaptive *a = p->state;

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

/* sources 0 to 7 each alone, then all in one round with @p last served
 * last (it begins the gap), then source 8 */
static void
scenario(uint32_t last)
{
	static const uint32_t ninth[] = { 8 };
	uint32_t ids[8], tie[8];
	struct evd_policy *p;
	uint64_t now = 1000000;
	double w_last, w8, w;
	int n = 0;

	for (uint32_t i = 0; i < 8; i++) {
		ids[i] = i;
		if (i != last)
			tie[n++] = i;
	}
	tie[n++] = last;
	CHECK_EQ(evd_policy_create("adaptive", &p), 0);
	for (int i = 0; i < 8; i++, now += 50000)
		test_gap(p, now - 50000, now, &ids[i], 1, 1);
	now += 50000;
	test_gap(p, now - 50000, now, tie, 8, 8);
	CHECK_EQ(source_weight(p, last, &w_last), 0);
	now += 50000;
	test_gap(p, now - 50000, now, ninth, 1, 1); /* the gap @p last began ends here */
	CHECK_EQ(source_weight(p, 8, &w8), 0);
	printf("  %u served last: source 8's weight %.1f; source %u %s\n", last, w8, last,
	       source_weight(p, last, &w) == 0 ? "kept" : "evicted");
	CHECK_EQ(w8, 0.0);
	/* the gap's starter kept its slot, and learned the gap */
	CHECK_EQ(source_weight(p, last, &w), 0);
	CHECK_EQ(w, w_last + 1);
	evd_policy_destroy(p);
}

int
main(void)
{
	const struct evd_policy_env e = {
		.sleep_wake_ns = 5600,
		.wake_at_ns = { 10000, 100000, 1000000, 10000000 },
		.wake_ns = { 10800, 10800, 86600, 101400 },
	};

	CHECK_EQ(evd_policy_env_set(&e), 0); /* once, before the first policy */
	/* which slot each source has is the policy's business (slot 0 holds
	 * the loop until a source is named): every source takes its turn
	 * as the one served last */
	for (uint32_t last = 0; last < 8; last++)
		scenario(last);
	return 0;
}
