/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef TESTEVD_H
#define TESTEVD_H

#include <stdbool.h>
#include <stdint.h>
#include <inttypes.h>
#include <stdio.h>

#define TESTEVD_POLICY_MAX 256 /* a spec's most, with its NUL (the library's) */

/* testevd's pseudo-random numbers (xorshift64): gaps, generators. */
static inline uint64_t
testevd_xorshift(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* Exit statuses. */
#define EXIT_LOSS 1    /* an event was lost or a lost wakeup counted */
#define EXIT_USAGE 2   /* bad command line */
#define EXIT_RUNTIME 3 /* EAL or library failure */

/* testevd_parse_opts(): 0, EXIT_USAGE (message printed), or this. */
#define TESTEVD_HELP_SHOWN (-1)

struct trace;

/* A receiver of a remote sender waits for its END this long past --duration */
#define REMOTE_GRACE_S 30.0

/* --source ring: a --trace's source ids get one ring each, up to this many */
#define TESTEVD_RINGS_MAX 8

struct opts {
	const char *source;    /* ring, verbs-emu, verbs */
	const char *semantics; /* verbs-emu: strict, considerate */
	const char *device;    /* verbs: the RDMA device */
	uint16_t port;         /* ethdev, --send: the port */
	uint16_t queues;       /* ethdev: Rx queues to receive on */
	bool send;             /* --send: transmit the pattern on the port */
	bool probe_arm;        /* ethdev: check whether arming fires for queued packets */
	bool echo;             /* --send --echo: every packet comes back; round trips */
	bool forward;          /* --source ethdev --forward: send every packet back */
	const char *peer_pid_file; /* --echo: report this process's CPU over the run */
	bool raw_epoll;        /* --raw-epoll: the l3fwd-power style baseline */
	bool score;            /* --score: replay --trace in virtual time against the oracle */
	const char *trace;     /* --trace FILE|GENERATOR */
	const struct trace *trace_data; /* --trace, loaded (and checked) before EAL starts */
	double speedup;        /* --speedup X */
	const char *timeline;  /* --timeline FILE: --score's timeline as CSV */
	const char *calibration;      /* --calibration FILE: B and L instead of measuring */
	const char *save_calibration; /* --save-calibration FILE: measure and write them */
	double lambda;         /* --lambda: the price of a ns of latency in ns of CPU */
	uint64_t budget_us;    /* --budget-us: --score's latency budget (free up to it) */
	uint64_t events;       /* --events N: arrivals a generator makes */
	const char *policy;
	const char *pattern;
	const char *json;
	double duration_s;
	double rate;
	double send_delay_s;
	double linger_s;       /* --linger S: keep the loop S seconds after the run */
	uint64_t seed;
	uint32_t max_sleep_us;
	bool compare;
	bool semantics_given;
	bool budget_given;
	bool lambda_given, speedup_given, send_delay_given, linger_given, port_given, queues_given;
	bool events_given, seed_given;
	bool pattern_given;    /* --pattern, --rate or --duration: the pattern's, not a --trace's */
	unsigned int rounds;
	bool progress;
};

/* One phase of an arrival pattern. */
enum phase_kind { PHASE_RATE, PHASE_SATURATE, PHASE_IDLE };

struct phase {
	const char *name;
	enum phase_kind kind;
	double share;     /* of the duration */
	double rate_mult; /* events/s = rate_mult * --rate */
	uint32_t burst;   /* events per post */
};

struct pattern {
	const char *name;
	const char *help;
	const struct phase *phases;
	unsigned int n_phases;
};

/* Parse testevd's options (after "--") into o, which holds the defaults. */
int testevd_parse_opts(int argc, char **argv, struct opts *o);
void testevd_usage(FILE *f, const char *prog);

const struct pattern *pattern_find(const char *name);
void pattern_list(FILE *f);

/* The TSC's rate in Hz, measured once against CLOCK_MONOTONIC (50 ms, on
 * the first call: make it before timing anything), not rte_get_tsc_hz():
 * on KVM guests EAL reports the nominal 2.1 GHz of a TSC that runs at
 * 2.096, which made every latency 0.19 % short (the loop's clock measures
 * it for the same reason, evd_loop.c). */
double testevd_tsc_hz(void);
/* TSC ticks to ns at that rate. */
static inline uint64_t
testevd_tsc_ns(uint64_t ticks)
{
	return (uint64_t)((double)ticks * 1e9 / testevd_tsc_hz());
}

/* Latency histogram: log-linear buckets, about 6% resolution. */
#define HIST_BUCKETS (64 * 16)
struct hist {
	uint64_t b[HIST_BUCKETS];
	uint64_t n;
	uint64_t max;
};
void hist_add(struct hist *h, uint64_t v);
uint64_t hist_pct(const struct hist *h, double p);

/* The signal (SIGINT, SIGTERM) that asked the run to end early, or 0: the
 * run then ends as if its duration had passed, and reports. Set by the
 * handler on whichever thread took the signal; read on the others. */
extern int testevd_stop;

static inline int
testevd_stopping(void)
{
	return __atomic_load_n(&testevd_stop, __ATOMIC_RELAXED);
}

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

int run_pattern(const struct opts *o, const char *policy, struct result *r);
/* The source kinds this build has (NULL: unknown or not built). */
const struct source_kind *source_kind_find(const char *name);

void report_table(FILE *f, const struct result *r, unsigned int n);
int report_json(const char *path, const struct result *r, unsigned int n, bool array);
/* "calibration": the process's B and L(g), measured or given, or null (no
 * policy of the process needed them): one JSON member, no comma. */
void report_json_calibration(FILE *f);
/* s as a JSON string, quoted and escaped. */
void report_json_str(FILE *f, const char *s);

/* T(g), how late a timed wait of g ends (timer_late.c): --score prices
 * naps and timeouts with it, eventfd wakes with L(g). */
enum timer_late_from {
	TIMER_LATE_NONE,     /* not measured or given yet */
	TIMER_LATE_MEASURED, /* measured by this process */
	TIMER_LATE_GIVEN,    /* by --calibration */
	TIMER_LATE_FROM_L,   /* a --calibration without it: L stands in */
};
struct evd_policy_env;
/* Measure T at the points of L on this thread; 0 or -1 (logged). */
int timer_late_measure(void);
void timer_late_set(const uint64_t ns[4]);
void timer_late_from_l(const struct evd_policy_env *env);
/* Where T came from; copies its 4 points into ns unless NULL. */
enum timer_late_from timer_late_get(uint64_t ns[4]);
/* T(g), interpolated on log g as L is. */
double timer_late_ns(uint64_t g);
/* --json FILE: open it for writing; '-': the process's stdout, which main
 * keeps in report_json_stdout while everything else printed goes to stderr. */
extern FILE *report_json_stdout;
FILE *report_json_open(const char *path);
/* Flush and close (stdout: flush only); 0 or a negative errno. */
int report_json_close(FILE *f);
/* --timeline: n windows; t_s holds their starts, then the last one's end (n + 1
 * times); CSV, or SVG if path ends in .svg. */
int timeline_write(const char *path, const char *title, unsigned int n, const double *t_s,
		   const double *rate, const double *cpu_pct, const double *sleep_pct);

/* Modes, one file each, behind a table (like testpmd's forwarding modes). */
struct mode {
	const char *name;
	int (*run)(const struct opts *o);
};
extern const struct mode mode_demo;
extern const struct mode mode_compare;
extern const struct mode mode_send;
extern const struct mode mode_raw;
extern const struct mode mode_score;

#endif
