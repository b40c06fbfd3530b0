/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What every part of testevd shares: the options as parsed (every mode reads
 * them), the exit statuses (every mode returns one), the limits the options
 * and the report agree on, the mode table, and the seeded random numbers of
 * the generators and the producer. Each module's own calls are in its own
 * header.
 */
#ifndef TESTEVD_H
#define TESTEVD_H

#include <stdbool.h>
#include <stdint.h>

#define TESTEVD_POLICY_MAX 256 /* a spec's most, with its NUL (the library's) */

/* Exit statuses. */
#define EXIT_LOSS 1    /* an event was lost or a lost wakeup counted */
#define EXIT_USAGE 2   /* bad command line */
#define EXIT_RUNTIME 3 /* EAL or library failure */

/* A receiver of a remote sender waits for its END this long past --duration */
#define REMOTE_GRACE_S 30.0

/* --source ring: a --trace's source ids get one ring each, up to this many */
#define TESTEVD_RINGS_MAX 8

struct trace;

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
	uint64_t p99_us;       /* --p99-us: --score's latency target (0: none) */
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
	bool rounds_given;
	bool events_given, seed_given, rate_given;
	bool pattern_given;    /* --pattern, --rate or --duration: the pattern's, not a --trace's */
	bool shape_given;      /* --pattern or --rate: what a producer plays */
	bool policy_given, max_sleep_given;
	unsigned int rounds;
	bool progress;
};

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

/* testevd's pseudo-random numbers (xorshift64): gaps, generators. */
static inline uint64_t
testevd_xorshift(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* The state for --seed N (salt: one stream per use): never 0, xorshift's
 * fixed point, which the one seed that maps there would otherwise give. */
static inline uint64_t
testevd_seed(uint64_t seed, uint64_t salt)
{
	uint64_t s = seed * 0x9e3779b97f4a7c15ull + salt;

	return s != 0 ? s : salt;
}

#endif
