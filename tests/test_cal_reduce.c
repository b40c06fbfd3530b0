/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The calibration's reduction of its wakes to L(g) (evd__cal_reduce, an
 * internal function: this test links the static library), on wakes given
 * here, so that what it keeps and what it leaves out does not depend on
 * the machine's load (test_calibration measures for real).
 *
 * - Stalls are left out: 3 of 11 wakes after 10 us at 10 ms, 2 (and 3) of 5
 *   after 10 ms at 10 ms (one stall in L(10 us) once made L 539 us at every
 *   point, and a forwarder spun through every gap). With 3 of 5 stalled the
 *   median is a stall: the cut is from the lower quartile.
 * - A stretch of stalls, a whole point at 3 ms: too many to tell from the
 *   rest; the point comes down to the longer sleep's L, and the longer
 *   points are untouched (they were raised to it before).
 * - A mixture stays: 13 and 76 us wakes after 100 us (the host's halt
 *   polling found or missed) average between; 2 us wakes with 120 us ones
 *   (a deep C-state) too: under the 500 us floor.
 * - The window: with Lc over twice L, L(100 us) of a mixture is its warm
 *   wakes' alone (the cold ones are the window's step, priced with Lc).
 * - A point with under 3 wakes keeps the fallback, and later points are
 *   raised to the one before; a fallback between measured points lowers
 *   neither (it used to bring the points before it down to itself).
 */
#include <evd_private.h>

#include "evd_test.h"

#define US 1000ull

struct pts {
	uint64_t lat[EVD_ENV_WAKE_POINTS][EVD__CAL_MAX_WAKES];
	int n[EVD_ENV_WAKE_POINTS];
	uint64_t l[EVD_ENV_WAKE_POINTS];
	int stalls, lowered;
};

/* point k: n wakes of v ns, the ones listed in @p at of w ns instead */
static void
fill(struct pts *p, int k, int n, uint64_t v, uint64_t w, const int *at, int nat)
{
	p->n[k] = n;
	for (int i = 0; i < n; i++)
		p->lat[k][i] = v + (uint64_t)i * 100; /* a little spread */
	for (int j = 0; j < nat; j++)
		p->lat[k][at[j]] = w;
}

/* an ordinary machine: 11, 11, 9 and 5 counted wakes of 12, 14, 80, 120 us */
static void
normal(struct pts *p)
{
	memset(p, 0, sizeof(*p));
	fill(p, 0, 11, 12 * US, 0, NULL, 0);
	fill(p, 1, 11, 14 * US, 0, NULL, 0);
	fill(p, 2, 9, 80 * US, 0, NULL, 0);
	fill(p, 3, 5, 120 * US, 0, NULL, 0);
	for (int k = 0; k < EVD_ENV_WAKE_POINTS; k++)
		p->l[k] = 20 * US; /* the fallback */
}

static void
reduce(struct pts *p)
{
	evd__cal_reduce(p->lat, p->n, p->l, &p->stalls, &p->lowered);
	printf("  L %.1f %.1f %.1f %.1f us, %d stalls, %d lowered\n", p->l[0] / 1e3, p->l[1] / 1e3,
	       p->l[2] / 1e3, p->l[3] / 1e3, p->stalls, p->lowered);
}

static bool
near(uint64_t got, uint64_t want)
{
	return got >= want && got <= want + 2 * US; /* the spread of fill() */
}

static void
test_normal(void)
{
	struct pts p;

	normal(&p);
	reduce(&p);
	CHECK(near(p.l[0], 12 * US) && near(p.l[1], 14 * US) && near(p.l[2], 80 * US) &&
	      near(p.l[3], 120 * US));
	CHECK_EQ(p.stalls, 0);
	CHECK_EQ(p.lowered, 0);
}

static void
test_stalls(void)
{
	static const int first[] = { 2, 5, 8 }, last2[] = { 1, 3 }, last3[] = { 1, 2, 4 };
	struct pts p;

	normal(&p);
	fill(&p, 0, 11, 12 * US, 10000 * US, first, 3);
	fill(&p, 3, 5, 120 * US, 10000 * US, last2, 2);
	reduce(&p);
	CHECK(near(p.l[0], 12 * US) && near(p.l[3], 120 * US));
	CHECK_EQ(p.stalls, 5);
	/* 3 of the 5 after 10 ms: the median is a stall, the quartile is not;
	 * 2 left, too few: the fallback, raised to L(1 ms) */
	normal(&p);
	fill(&p, 3, 5, 120 * US, 10000 * US, last3, 3);
	reduce(&p);
	CHECK_EQ(p.stalls, 3);
	CHECK(near(p.l[3], 80 * US));
}

static void
test_stretch(void)
{
	struct pts p;

	normal(&p);
	fill(&p, 0, 11, 3000 * US, 0, NULL, 0);
	reduce(&p);
	CHECK_EQ(p.stalls, 0);
	CHECK_EQ(p.lowered, 1);
	CHECK(near(p.l[0], 14 * US) && near(p.l[1], 14 * US) && near(p.l[2], 80 * US) &&
	      near(p.l[3], 120 * US));
}

static void
test_mixtures(void)
{
	static const int slow[] = { 0, 3, 6, 9 }, cstate[] = { 4, 7 };
	struct pts p;

	normal(&p);
	fill(&p, 1, 11, 13 * US, 76 * US, slow, 4);
	fill(&p, 0, 11, 2 * US, 120 * US, cstate, 2);
	reduce(&p);
	CHECK_EQ(p.stalls, 0);
	/* trimmed: 9 of 11 without the least and the most */
	CHECK(p.l[1] > 30 * US && p.l[1] < 50 * US);
	CHECK(p.l[0] > 12 * US && p.l[0] < 20 * US);
}

static void
test_too_few(void)
{
	struct pts p;

	normal(&p);
	p.n[2] = 2;
	p.n[3] = 0; /* the calibration gave up after 2 wakes at 1 ms */
	reduce(&p);
	CHECK(near(p.l[1], 14 * US));
	CHECK_EQ(p.l[2], 20 * US); /* the fallback, over L(100 us) */
	CHECK_EQ(p.l[3], 20 * US);
	normal(&p);
	p.n[3] = 2;
	p.l[3] = 1 * US; /* a fallback under L(1 ms): raised to it */
	reduce(&p);
	CHECK(near(p.l[3], 80 * US));
	/* 60, 60, (1 ms: 2 wakes), 120 us: the two 60s stay, the fallback (20)
	 * goes between them and 120 */
	normal(&p);
	fill(&p, 0, 11, 60 * US, 0, NULL, 0);
	fill(&p, 1, 11, 60 * US, 0, NULL, 0);
	p.n[2] = 2;
	reduce(&p);
	CHECK(near(p.l[0], 60 * US) && near(p.l[1], 60 * US) && near(p.l[3], 120 * US));
	CHECK(p.l[2] >= p.l[1] && p.l[2] <= p.l[3]);
	CHECK_EQ(p.lowered, 0);
	/* a fallback over the next measured point comes down to it */
	normal(&p);
	p.n[1] = 0;
	p.l[1] = 500 * US;
	reduce(&p);
	CHECK(near(p.l[1], 80 * US) && near(p.l[2], 80 * US));
}

/*
 * The window (evd__cal_window): 100 us sleeps after 2 ms ones woke in Lc.
 * L(100 us) a mixture, 13 us wakes with 76 us ones (some found the window
 * shut): with a window, the warm ones alone; no window, the mixture stays.
 */
static void
test_window(void)
{
	static const int slow[] = { 0, 3, 6, 9 };
	struct pts p;
	uint64_t w;

	normal(&p);
	fill(&p, 1, 11, 13 * US, 76 * US, slow, 4);
	reduce(&p);
	CHECK(p.l[1] > 30 * US); /* the mixture */
	w = evd__cal_window(p.lat[1], p.n[1], p.l, 80 * US);
	printf("  window %.0f us, L(100 us) %.1f us\n", (double)w / 1e3, (double)p.l[1] / 1e3);
	CHECK_EQ(w, 100 * US);
	CHECK(near(p.l[1], 13 * US));
	/* Lc under twice L(10 us): no window, L as it was */
	normal(&p);
	fill(&p, 1, 11, 13 * US, 76 * US, slow, 4);
	reduce(&p);
	uint64_t mix = p.l[1];

	CHECK_EQ(evd__cal_window(p.lat[1], p.n[1], p.l, 20 * US), 0);
	CHECK_EQ(p.l[1], mix);
	/* a window, but 2 warm wakes of 11: L(100 us) stays */
	normal(&p);
	fill(&p, 1, 11, 76 * US, 0, NULL, 0);
	p.lat[1][0] = p.lat[1][1] = 13 * US;
	reduce(&p);
	mix = p.l[1];
	CHECK_EQ(evd__cal_window(p.lat[1], p.n[1], p.l, 80 * US), 100 * US);
	CHECK_EQ(p.l[1], mix);
	/* warm wakes under L(10 us): L(100 us) no lower than L(10 us) */
	normal(&p);
	fill(&p, 1, 11, 5 * US, 76 * US, slow, 4);
	reduce(&p);
	CHECK_EQ(evd__cal_window(p.lat[1], p.n[1], p.l, 80 * US), 100 * US);
	CHECK_EQ(p.l[1], p.l[0]);
}

int
main(void)
{
	TEST(test_normal);
	TEST(test_stalls);
	TEST(test_stretch);
	TEST(test_mixtures);
	TEST(test_too_few);
	TEST(test_window);
	return 0;
}
