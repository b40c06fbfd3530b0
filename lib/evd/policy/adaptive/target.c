/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A p99 target (p99_us=N): the price lambda of a completion served more
 * than N late, in ns of CPU, chosen at each update as the least that keeps
 * such completions, as the histograms foretell them, under the share a p99
 * allows.
 */

#include "adaptive.h"

/* Half the 1 % a p99 allows: the histograms lag the traffic, and what
 * comes in a late wake's latency is late too (policies.md, "A p99 target"). */
#define TARGET_SHARE 0.005
/* The prices weighed: 1 us of CPU a late completion, up in steps of 2^(1/2)
 * to 1 s, past any gap worth spinning through to stay on time. */
#define PRICES 41

static double
price(int k)
{
	return 1000.0 * pow(2.0, k / 2.0);
}

/* A histogram's expected CPU and late completions under each threshold the
 * cap allows; returns how many. */
static int
sums(const struct adaptive *a, const double *w, double *cpu, double *late)
{
	const struct adaptive_tables *tb = a->tab;
	int nj = 0;

	for (int j = 0; j <= GAP_BINS && tb->t_ns[j] <= a->cap_ns; j++, nj++) {
		cpu[j] = late[j] = 0;
		for (int i = 0; i < GAP_BINS; i++) {
			cpu[j] += w[i] * tb->cpu[j][i];
			late[j] += w[i] * tb->lat[j][i];
		}
	}
	return nj;
}

/* The threshold (its index) of least cost at price lambda. */
static int
rule_at(const double *cpu, const double *late, int nj, double lambda)
{
	int best = 0;

	for (int j = 1; j < nj; j++)
		if (cpu[j] + lambda * late[j] < cpu[best] + lambda * late[best])
			best = j;
	return best;
}

/* The least price under which the rules the update would set (a context's
 * own where it holds YOUNG gaps, else the pooled one, each as a warm start)
 * leave TARGET_SHARE of the gaps late or less; the dearest where none does,
 * or with no histograms yet (@p all NULL). @p wc: each context's histogram,
 * @p n its weight. */
double
evd__target_lambda(const struct adaptive *a, const double *all, double wc[][GAP_BINS],
		   const double *n)
{
	double cpu[GAP_BINS + 1], late[GAP_BINS + 1], over[PRICES] = { 0 }, total = 0, per_gap;
	int pool[PRICES], nj;

	if (all == NULL)
		return price(PRICES - 1);
	nj = sums(a, all, cpu, late);
	for (int k = 0; k < PRICES; k++)
		pool[k] = rule_at(cpu, late, nj, price(k));
	for (uint32_t c = 0; c < a->n_ctx_used; c++) {
		if (n[c] <= 0)
			continue;
		total += n[c];
		sums(a, wc[c], cpu, late);
		for (int k = 0; k < PRICES; k++)
			over[k] += late[n[c] >= YOUNG ? rule_at(cpu, late, nj, price(k)) : pool[k]];
	}
	/* a late gap is one late completion (its first); the share is of all */
	per_gap = a->samples > 0 ? fmax((double)a->completions / (double)a->samples, 1.0) : 1.0;
	for (int k = 0; k < PRICES; k++)
		if (over[k] <= TARGET_SHARE * total * per_gap)
			return price(k);
	return price(PRICES - 1);
}
