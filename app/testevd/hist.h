/* SPDX-License-Identifier: BSD-3-Clause */
/* Latency histogram: log-linear buckets, about 6% resolution. */
#ifndef TESTEVD_HIST_H
#define TESTEVD_HIST_H

#include <stdint.h>
#include <stdio.h>

#define HIST_BUCKETS (64 * 16)

struct hist {
	uint64_t b[HIST_BUCKETS];
	uint64_t n;
	uint64_t max;
};

void hist_add(struct hist *h, uint64_t v);
/* The p-quantile (0..1), at the top of its bucket, at most the largest value. */
uint64_t hist_pct(const struct hist *h, double p);
/* The histogram as an indented JSON member "KEY": [[bin's top ns, count], ...]. */
void hist_json(FILE *f, const char *ind, const char *key, const struct hist *h);

#endif
