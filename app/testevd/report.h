/* SPDX-License-Identifier: BSD-3-Clause */
/* A run's result, pooled over runs, printed as the table and the JSON report. */
#ifndef TESTEVD_REPORT_H
#define TESTEVD_REPORT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "hist.h"
#include "testevd.h"

/* The result of one run, as reported in the table and the JSON. */
struct result {
	char policy[TESTEVD_POLICY_MAX];
	const char *source;
	const char *pattern;
	double duration_s;
	uint64_t events_sent;
	uint64_t events_delivered;
	uint64_t events_lost;
	uint64_t lost_wakeups;
	uint64_t errors;    /* source failures reported by the loop or the source */
	bool incomplete;    /* ethdev: the sender's END packet never arrived */
	bool link_lost;     /* ...and the link was down when the run ended */
	bool stopped;       /* SIGINT or SIGTERM ended the run early */
	bool timeline_failed; /* --timeline could not be written (the status says so) */
	const char *arm_probe; /* ethdev --probe-arm: strict, inconclusive, ... */
	uint64_t ring_full;
	uint32_t rings;     /* --source ring: rings the run had (one per source id of a trace) */
	uint64_t ring_events[TESTEVD_RINGS_MAX]; /* ...the completions each delivered, by id */
	uint64_t forwarded; /* --forward: packets sent back (testevd's or not) */
	double cpu_pct;
	bool echo;             /* --send --echo: latency is the round trip */
	uint64_t rtt_over_5ms; /* --echo: round trips over 5 ms */
	uint64_t sender_stalls;      /* --echo: gaps over 1 ms in the sender's spin */
	double sender_stall_max_us;
	uint64_t rtt_sender_late;    /* --echo: round trips the sender took over 50 us after its poll before */
	bool has_peer_cpu;   /* --echo --peer-pid-file: */
	double peer_cpu_pct; /* the forwarder's CPU over the run */
	double events_per_s;
	const double *round_events_per_s; /* --compare --rounds: each round's, or NULL */
	unsigned int n_rounds;
	double lat_us[4]; /* p50 p99 p999 max */
	uint64_t sleeps, wakeups, spurious_wakeups, repoll_hits, sleep_timeouts, mode_switches;
	uint64_t naps;
	double mode_pct[3]; /* poll pause sleep */
	/* raw sums, from which result_finish() derives the figures above */
	uint64_t wall_ns, cpu_ns, mode_ns[3];
	unsigned int runs;
	struct hist lat;
	struct hist lat_prompt; /* --echo: the round trips but the sender's late ones */
};

/* Add one run into an accumulator (zeroed first), then derive the figures. */
void result_merge(struct result *acc, const struct result *one);
void result_finish(struct result *r);

void report_table(FILE *f, const struct result *r, unsigned int n);
int report_json(const char *path, const struct result *r, unsigned int n, bool array);
/* "calibration": the process's B and L(g), measured or given, or null (no
 * policy of the process needed them): one JSON member, no comma. */
void report_json_calibration(FILE *f);
/* s as a JSON string, quoted and escaped. */
void report_json_str(FILE *f, const char *s);
/* --json FILE: open it for writing; '-': the process's stdout, which main
 * keeps in report_json_stdout while everything else printed goes to stderr. */
extern FILE *report_json_stdout;
FILE *report_json_open(const char *path);
/* Flush and close (stdout: flush only); 0 or a negative errno. */
int report_json_close(FILE *f);

#endif
