/* SPDX-License-Identifier: BSD-3-Clause */
/* Arrival traces: inter-arrival gaps from a file or a seeded generator. */
#ifndef TESTEVD_TRACE_H
#define TESTEVD_TRACE_H

#include <stddef.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#define TRACE_MAX_EVENTS (50u * 1000 * 1000)          /* arrivals in a trace, at most */
#define TRACE_MAX_GAP_NS UINT64_C(3600000000000) /* a gap, at most: an hour */
#define TRACE_MAX_TOTAL_NS (UINT64_C(1) << 62)    /* a whole trace, at most: 146 years */

struct trace {
	char name[128];
	uint64_t *gap_ns; /* gap before each arrival */
	uint32_t *source; /* source id of each arrival (0 if the trace has none) */
	size_t n;
};

/*
 * Load SPEC: a text file (one gap in nanoseconds per line, optionally a
 * source id after it; '#' starts a comment), a pcap or pcapng file (gaps
 * between packet timestamps), or a generator NAME[:KEY=VALUE,...]:
 *   poisson:rate=R            exponential gaps, R arrivals/s
 *   onoff:rate=R,on_ms=A,off_ms=B   Poisson bursts at R, then silence
 *   pareto:alpha=A,mean_us=M  heavy-tailed gaps (alpha > 1)
 *   periodic:period_us=P,jitter_us=J
 *   periodic:...,sources=N    N independent periodic sources, ids 1..N,
 *                             id k every P (1 + 0.41 (k - 1)), own phase
 *   day                       a mix: quiet, busy, bursty, periodic stretches
 * Generators make `events` arrivals from `seed`. Every gap is divided by
 * `speedup`. A trace has at most TRACE_MAX_EVENTS arrivals, each gap at
 * most TRACE_MAX_GAP_NS. Returns 0 or a negative errno, with a message on
 * stderr.
 */
int trace_load(const char *spec, uint64_t seed, size_t events, double speedup, struct trace *t);
void trace_free(struct trace *t);
/* Load a pcap or pcapng capture from f (closed on return; the fuzz
 * target gives it memory), naming the trace name. */
int trace_load_pcap(FILE *f, const char *name, struct trace *t);
/* Parse a text trace from memory (the fuzz target uses it). */
int trace_parse_text(const char *buf, size_t len, const char *name, struct trace *t);
/* Whether SPEC names a generator. */
int trace_is_generator(const char *spec);
/* Whether s is a plain decimal number for strtod (digits, a point, an
 * exponent): not hex (0x10), not with blanks before it, not inf or nan. */
bool trace_decimal_text(const char *s);

/*
 * The trace's source ids, ascending, at most max of them into ids (a
 * trace without ids has one, 0).
 * @return how many; -E2BIG when there are more than max.
 */
int trace_source_ids(const struct trace *t, uint32_t *ids, uint32_t max);

#endif
