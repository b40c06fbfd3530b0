/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * adaptive's gap histogram bins (gap_bin, from the policy's own header).
 * Two bins an octave above 256 ns, bin i from 256 * 2^(i/2) ns (the edges
 * the cost model prices a bin by), the last bin (47) open above. gap_bin
 * finds a bin from the gap's top bit and sqrt(2)'s bits; here each edge
 * is checked from both sides, and a spread of gaps against the plain rule
 * (g^2 >= 2^(2m + 1): the second bin of top bit m's octave).
 */
#include <math.h>

#include "../lib/evd/policy/adaptive/adaptive.h"

#include "evd_test.h"

#define BINS 48

static int
by_rule(uint64_t g)
{
	int m;

	if (g < 256)
		return 0;
	if (g >= (1ull << 32))
		return BINS - 1;
	m = 63 - __builtin_clzll(g);
	return 2 * (m - 8) + (g * g >= (1ull << (2 * m + 1)));
}

int
main(void)
{
	uint64_t s = 88172645463325252ull;
	int checked = 0;

	CHECK_EQ(gap_bin(0), 0);
	CHECK_EQ(gap_bin(1), 0);
	CHECK_EQ(gap_bin(255), 0);
	CHECK_EQ(gap_bin(256), 0);
	for (int i = 1; i < BINS; i++) {
		uint64_t e = (uint64_t)ceil(256.0 * pow(2.0, i / 2.0));

		CHECK_EQ(gap_bin(e - 1), i - 1);
		CHECK_EQ(gap_bin(e), i);
		checked += 2;
	}
	CHECK_EQ(gap_bin((1ull << 32) - 1), BINS - 1);
	CHECK_EQ(gap_bin(1ull << 32), BINS - 1);
	CHECK_EQ(gap_bin(UINT64_MAX), BINS - 1);
	for (int k = 0; k < 1000000; k++) {
		/* xorshift, then a random top bit: every octave as often */
		s ^= s << 13;
		s ^= s >> 7;
		s ^= s << 17;
		uint64_t g = s >> (s % 64);

		CHECK_EQ(gap_bin(g), by_rule(g));
		checked++;
	}
	printf("gap bins: %d gaps checked\n", checked);
	return 0;
}
