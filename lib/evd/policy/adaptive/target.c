/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A p99 target (p99_us=N): the price lambda of a completion served more
 * than N late, in ns of CPU, chosen at each update as the least that keeps
 * such completions, as the histograms foretell them, under the share a p99
 * allows.
 */

#include "adaptive.h"

/* The share of completions a p99 allows late. The loop's stalls take
 * theirs first (a share of time, which arrivals land in as often), and the
 * policy plans for half of what they leave: the histograms lag the
 * traffic, and what comes in a late wake's latency is late too
 * (policies.md, "A p99 target"). */
#define P99_SHARE 0.01
/* The prices weighed: 1 us of CPU a late completion, up in steps of 2^(1/2)
 * to 1 s, past any gap worth spinning through to stay on time; the k-th is
 * 1000 * 2^(k/2), without a pow (an update runs between polls). */
#define PRICES 41
#define PRICE(k) ldexp((k) % 2 ? 1000.0 * M_SQRT2 : 1000.0, (k) / 2)

/* A histogram's expected CPU and late completions under each threshold the
 * cap allows, up to one past its longest gap (none late past it: the rest
 * of @p late is 0); returns how many. It runs in the loop's thread between
 * polls, so its cost is latency too: the bins that hold gaps only. */
static int
sums(const struct adaptive *a, const double *w, double *cpu, double *late)
{
	const struct adaptive_tables *tb = a->tab;
	int nz[GAP_BINS], last, n = evd__bins_held(w, nz, &last), nj = 0;

	for (int j = 0; j <= GAP_BINS; j++) {
		cpu[j] = late[j] = 0;
		for (int k = 0; j <= last && k < n; k++) {
			cpu[j] += w[nz[k]] * tb->cpu[j][nz[k]];
			late[j] += w[nz[k]] * tb->lat[j][nz[k]];
		}
		nj += j <= last && tb->t_ns[j] <= a->cap_ns;
	}
	return nj;
}

/* The threshold (its index) of least cost at price lambda. */
static int
rule_at(const double *cpu, const double *late, int nj, double lambda)
{
	int best = 0;

	for (int j = 1; j < nj; j++)
		best = cpu[j] + lambda * late[j] < cpu[best] + lambda * late[best] ? j : best;
	return best;
}

/* The least price under which the rules the update would set (a context's
 * own where it holds YOUNG gaps, else the pooled one, each as a warm start)
 * leave the share planned for late or less; the dearest where none does, or
 * with no histograms yet (@p all NULL). @p wc: each context's histogram,
 * @p n its weight. */
double
evd__target_lambda(const struct adaptive *a, const double *all, double wc[][GAP_BINS],
		   const double *n)
{
	/* each histogram's sums, the pooled one's last (26 KB of the loop's stack) */
	double cpu[CONTEXTS + 1][GAP_BINS + 1], late[CONTEXTS + 1][GAP_BINS + 1], total = 0, most;
	uint32_t m = a->n_ctx_used;
	int nj[CONTEXTS + 1], lo = 0, hi = PRICES - 1;

	if (all == NULL)
		return PRICE(PRICES - 1);
	for (uint32_t c = 0; c <= m; c++) {
		nj[c] = sums(a, c < m ? wc[c] : all, cpu[c], late[c]);
		total += c < m ? n[c] : 0;
	}
	/* a late gap is one late completion (its first); the share is of all
	 * (an update comes after YOUNG_GAPS samples: samples > 0) */
	most = fmax(P99_SHARE - a->stalled, 0) / 2 * total *
	       fmax((double)a->completions / (double)a->samples, 1.0);
	/* Late wakes never grow with the threshold, so a dearer late completion
	 * picks a rule with no more of them: the share falls as the price rises,
	 * and halving the ladder finds the least price within it in 6 steps, not
	 * 41 (the update runs between polls: its time is latency). A context
	 * with no gaps adds 0. */
	while (lo < hi) {
		int k = (lo + hi) / 2, pool = rule_at(cpu[m], late[m], nj[m], PRICE(k));
		double over = 0;

		for (uint32_t c = 0; c < m; c++)
			over += late[c][n[c] >= YOUNG ? rule_at(cpu[c], late[c], nj[c], PRICE(k))
						       : pool];
		lo = over <= most ? lo : k + 1;
		hi = over <= most ? k : hi;
	}
	return PRICE(lo);
}
