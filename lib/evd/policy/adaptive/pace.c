/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Pacing: the pause between the polls of a loop that never sleeps, chosen
 * by the completion rate each pause gets, measured in turns.
 *
 * A poll of an empty device queue reads the lines its producer writes (a
 * virtqueue's index, a CQ's entry): polled every ~100 ns it takes them
 * from the other CPU before each write, and a closed loop (a peer that
 * waits for its replies) slows to the poller's pace. A pause gives the
 * lines back; it also delays what arrives during it, which costs a closed
 * loop with one request in flight its rate, and an open loop latency for
 * no rate. Nothing in the gaps tells these apart, the rate does: while the
 * loop is busy (PACE_BUSY completions a ms), the pause in force and
 * its neighbours hold it an epoch each in turn, and the longer pause is
 * kept only where it wins most turns, by a sequential sign test
 * (doc/guides/policies.md, "Pacing").
 */

#include "adaptive.h"

#define PACE_EPOCH_NS 1000000 /* one pause's turn */
#define PACE_HOLD 256 /* epochs a choice that stayed holds; twice that each time it stays, to 16 x */
/* A turn a longer pause wins (its rate over the better of the shorter
 * ones' by PACE_MARGIN, which a flat rate's counts do not reach) scores 1,
 * one it loses -2; it is taken at PACE_WIN, not at PACE_LOSE nor after
 * PACE_TURNS turns */
#define PACE_MARGIN 1.005
#define PACE_WIN 8
#define PACE_LOSE (-5)
#define PACE_TURNS 32
#define PACE_OPEN(score) ((score) > PACE_LOSE && (score) < PACE_WIN)
/* completions a ms for an epoch to be busy (under this, the counts' own
 * noise, 4.4 % at 512, outweighs a turn's difference) */
#define PACE_BUSY 512
#define PACE_WATCH 8 /* busy epochs in a row before the first comparison: a burst is not busy */

/* the pauses, a step apart */
static const uint64_t pace_ns[] = { 0, 1000, 3000, 10000, 30000 };
/* The pauses a comparison weighs, the one in force and its neighbours
 * (the three shortest or longest at the ends): steps lo to lo + 2. */
#define PACE_FIRST(a) \
	RTE_MIN((a)->pace_step - ((a)->pace_step > 0), (uint32_t)RTE_DIM(pace_ns) - PACE_ARMS)

/* A turn's end: each longer pause not yet settled scores the turn against
 * the better of the shorter ones (a rate against a rate of the same
 * stretch: a sign test, which bursts of an open loop's arrivals do not
 * sway as they sway sums; sequential, so that a pause that loses every
 * turn is out in three, and one 3 % better, winning four turns in five,
 * is taken in about 16). Once both are settled, or the turns are out, the
 * longest that won is chosen: a step taken is measured again at once; one
 * that stayed holds. */
static void
pace_turn_end(struct adaptive *a, uint32_t lo)
{
	uint32_t best = 0;

	for (uint32_t i = 1; i < PACE_ARMS; i++) {
		if (PACE_OPEN(a->pace_score[i]))
			a->pace_score[i] += a->pace_rate[i] > PACE_MARGIN * RTE_MAX(a->pace_rate[0],
									      a->pace_rate[i - 1]) ? 1 : -2;
		best = a->pace_score[i] >= PACE_WIN ? i : best;
	}
	if ((PACE_OPEN(a->pace_score[1]) || PACE_OPEN(a->pace_score[2])) &&
	    a->pace_turn < PACE_ARMS * PACE_TURNS)
		return;
	EVD_LOG(DEBUG, "policy adaptive: pause %" PRIu64 " ns between busy polls (%u turns)",
		pace_ns[lo + best], a->pace_turn / PACE_ARMS);
	/* a choice that stayed holds (PACE_HOLD at least), one that moved none */
	a->pace_stays = lo + best == a->pace_step ? a->pace_stays + 1 : 0;
	a->pace_hold = a->pace_stays > 0 ? PACE_HOLD << RTE_MIN(a->pace_stays - 1, 4u) : 0;
	a->pace_step = lo + best;
	a->pace_turn = a->pace_score[1] = a->pace_score[2] = 0;
}

/* An epoch ended (or, pace_end 0, the first began): a busy one's rate is
 * its pause's in the turn. It ends at the first completion past its
 * 1 ms, so across a sleep it stretches: its rate, not its count, says
 * whether it was busy. One that was not busy at the pause in force (or a
 * shorter one) stops the pauses until PACE_WATCH busy epochs have passed,
 * and the comparison starts again after them; if it ran at the pause in
 * force, that pause was a step too long, or the load fell: a step down,
 * and the comparison after the watch tells which. */
void
evd__pace_epoch(struct adaptive *a, uint64_t now)
{
	uint64_t count = a->completions - a->pace_from;
	uint64_t span = now - a->pace_end + PACE_EPOCH_NS; /* not read for the first (pace_end 0) */
	uint32_t lo = PACE_FIRST(a);

	if (a->pace_end == 0 ||
	    (count * PACE_EPOCH_NS < PACE_BUSY * span && a->pace_arm <= a->pace_step)) {
		if (a->pace_arm == a->pace_step && a->pace_step > 0) {
			a->pace_step--;
			a->pace_hold = a->pace_stays = 0;
		}
		a->pace_turn = a->pace_score[1] = a->pace_score[2] = 0;
		a->pace_watch = PACE_WATCH;
	} else if (a->pace_watch > 0) {
		a->pace_watch--;
	} else if (a->pace_hold > 0) {
		a->pace_hold--;
	} else {
		a->pace_rate[a->pace_arm - lo] = (double)count / (double)span;
		if (++a->pace_turn % PACE_ARMS == 0)
			pace_turn_end(a, lo);
	}
	lo = PACE_FIRST(a);
	/* each pause once a turn, the order turning each turn; then the one in force */
	a->pace_arm = a->pace_watch > 0   ? 0
		      : a->pace_hold == 0 ? lo + (a->pace_turn + a->pace_turn / PACE_ARMS) % PACE_ARMS
					  : a->pace_step;
	a->pace_ns = pace_ns[a->pace_arm];
	a->pace_from = a->completions;
	a->pace_end = now + PACE_EPOCH_NS;
}
