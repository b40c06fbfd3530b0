/* SPDX-License-Identifier: BSD-3-Clause */
/* Latency histogram: log-linear buckets, 16 per octave. */
#include <inttypes.h>
#include <stdbool.h>

#include "hist.h"

static unsigned int
bucket(uint64_t v)
{
	unsigned int msb;

	if (v < 16)
		return (unsigned int)v;
	msb = 63 - (unsigned int)__builtin_clzll(v);
	return (msb - 3) * 16 + (unsigned int)((v >> (msb - 4)) & 15);
}

static uint64_t
bucket_top(unsigned int b)
{
	unsigned int msb;

	if (b < 16)
		return b;
	msb = b / 16 + 3;
	return ((16ull + (b % 16)) << (msb - 4)) + ((1ull << (msb - 4)) - 1);
}

/* A histogram as "KEY": [[bin's top ns, count], ...], its non-empty bins
 * (16 per octave) in increasing order, so that runs can be pooled and
 * their percentiles compared. */
void
hist_json(FILE *f, const char *ind, const char *key, const struct hist *h)
{
	bool first = true;

	fprintf(f, "%s  \"%s\": [", ind, key);
	for (unsigned int b = 0; b < HIST_BUCKETS; b++)
		if (h->b[b] != 0) {
			fprintf(f, "%s[%" PRIu64 ", %" PRIu64 "]", first ? "" : ", ", bucket_top(b),
				h->b[b]);
			first = false;
		}
	fprintf(f, "],\n");
}

void
hist_add(struct hist *h, uint64_t v)
{
	unsigned int b = bucket(v);

	if (b >= HIST_BUCKETS)
		b = HIST_BUCKETS - 1;
	h->b[b]++;
	h->n++;
	if (v > h->max)
		h->max = v;
}

uint64_t
hist_pct(const struct hist *h, double p)
{
	uint64_t want, seen = 0;

	if (h->n == 0)
		return 0;
	want = (uint64_t)(p * (double)h->n);
	if (want >= h->n)
		want = h->n - 1;
	for (unsigned int b = 0; b < HIST_BUCKETS; b++) {
		seen += h->b[b];
		if (seen > want) {
			uint64_t top = bucket_top(b);

			return top < h->max ? top : h->max;
		}
	}
	return h->max;
}
