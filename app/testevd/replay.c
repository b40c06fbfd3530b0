/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The producer's side of a run: a pattern's phases or a --trace's gaps
 * replayed in real time through the source kind's post, each event stamped
 * with the TSC.
 */
#include <math.h>
#include <time.h>

#include <rte_common.h>
#include <rte_cycles.h>
#include <rte_pause.h>

#include "clock.h"
#include "pattern.h"
#include "replay.h"
#include "source.h"
#include "stop.h"
#include "testevd.h"
#include "trace.h"

static void
wait_until(struct run *r, uint64_t t)
{
	if (r->spin != NULL) { /* --echo: poll for returning packets meanwhile */
		while (testevd_now_ns() < t && !testevd_stopping())
			r->spin(r);
		return;
	}
	/* Sleep through long gaps (so the producer leaves the loop's core
	 * alone), 100 ms at most at a time (a stop signal goes to another
	 * thread: this one sees the flag), spin the last stretch for accuracy. */
	while (t > testevd_now_ns() + 200000 && !testevd_stopping()) {
		uint64_t until = RTE_MIN(t - 100000, testevd_now_ns() + 100000000);
		struct timespec ts = { .tv_sec = (time_t)(until / 1000000000ull),
				       .tv_nsec = (long)(until % 1000000000ull) };

		clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
	}
	while (testevd_now_ns() < t && !testevd_stopping())
		rte_pause();
}

/* Exponential gap with the given mean: Poisson arrivals. */
static uint64_t
exp_gap(uint64_t *rnd, double mean_ns)
{
	double u = ((double)(testevd_xorshift(rnd) >> 11) + 0.5) / 9007199254740992.0;

	return (uint64_t)(-log(u) * mean_ns);
}

static void
post_all(struct run *r, uint32_t n)
{
	r->kind->post(r, n, rte_rdtsc());
	__atomic_fetch_add(&r->sent, n, __ATOMIC_RELAXED);
}

/* Replay an arrival trace in real time: one post per arrival, to the
 * source of its id (r->post_id; the ring has one ring per id). */
static void
replay_trace(struct run *r)
{
	const struct trace *t = r->o->trace_data;
	uint64_t at = testevd_now_ns();

	for (size_t i = 0; i < t->n && !testevd_stopping(); i++) {
		at += t->gap_ns[i];
		wait_until(r, at);
		r->post_id = t->source[i];
		post_all(r, 1);
	}
}

/* Replay the pattern (or --trace) through r->kind->post (producer thread,
 * or --send). */
void
run_replay(struct run *r)
{
	if (r->o->trace != NULL) {
		replay_trace(r);
		return;
	}

	uint64_t rnd = testevd_seed(r->o->seed, 1);
	uint64_t total_ns = (uint64_t)(r->o->duration_s * 1e9);
	uint64_t phase_start = testevd_now_ns();

	for (unsigned int p = 0; p < r->pat->n_phases && !testevd_stopping(); p++) {
		const struct phase *ph = &r->pat->phases[p];
		uint64_t phase_end = phase_start + (uint64_t)(ph->share * (double)total_ns);
		uint64_t t = phase_start;

		__atomic_store_n(&r->phase, p, __ATOMIC_RELAXED);
		switch (ph->kind) {
		case PHASE_IDLE:
			wait_until(r, phase_end);
			break;
		case PHASE_SATURATE:
			while (testevd_now_ns() < phase_end && !testevd_stopping())
				post_all(r, ph->burst);
			break;
		case PHASE_RATE: {
			double mean = 1e9 * ph->burst / (ph->rate_mult * r->o->rate);

			for (;;) {
				t += exp_gap(&rnd, mean);
				if (t >= phase_end)
					break;
				wait_until(r, t);
				if (testevd_stopping())
					break;
				post_all(r, ph->burst);
			}
			wait_until(r, phase_end);
			break;
		}
		}
		phase_start = phase_end;
	}
}
