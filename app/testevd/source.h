/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A source kind (src_*.c) and the run it serves: what a kind implements,
 * what it sees of the run, and the calls it makes back on the loop thread.
 */
#ifndef TESTEVD_SOURCE_H
#define TESTEVD_SOURCE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <rte_common.h>

#include <evd.h>

struct hist;
struct opts;
struct pattern;
struct result;

struct run;

/* A kind of source the pattern is replayed through, one file each. */
struct source_kind {
	const char *name;
	/* Optional: create the sources before r->loop exists, so that where
	 * the heap puts them does not move with the policy's state (the
	 * saturated ring's rate does: bench/results/scale.md). If the loop
	 * cannot be made, close() undoes it, r->loop NULL. */
	int (*prepare)(struct run *r);
	/* Create the sources (those prepare did not), add them to r->loop; on
	 * a failure, undo both. */
	int (*open)(struct run *r);
	/* Producer thread: post n events stamped with the TSC; never drop
	 * (wait and retry when the source is full). NULL: a remote sender
	 * plays the pattern (the source sets remote_total and remote_done). */
	void (*post)(struct run *r, uint32_t n, uint64_t stamp);
	/* Remove and destroy the sources; add their counters to res. */
	void (*close)(struct run *r, struct result *res);
};

extern const struct source_kind source_ring;
extern const struct source_kind source_verbs_emu;
extern const struct source_kind source_verbs;
extern const struct source_kind source_ethdev;

struct run {
	const struct opts *o;
	const struct pattern *pat;
	const struct source_kind *kind;
	void *priv; /* the source kind's */
	uint32_t post_id; /* producer: the trace's source id of what post() sends (0: none) */
	/* Non-NULL (--echo): called instead of sleeping or pausing between
	 * arrivals, on the replaying thread. */
	void (*spin)(struct run *r);
	struct evd_loop *loop;
	/* consumer side (loop thread) */
	struct hist *lat; /* the result's */
	uint64_t delivered __rte_cache_aligned; /* atomic: read by the producer and the monitor */
	/* producer side, on its own cache line */
	uint64_t sent __rte_cache_aligned;      /* atomic */
	uint32_t phase; /* atomic: index of the current phase */
	uint64_t remote_total; /* remote sender: packets it sent */
	/* atomic: remote_total is known (END came) and all arrived, or
	 * END_GRACE_NS passed after END (the rest are lost) */
	int remote_done;
	uint64_t end_ns;      /* atomic: CLOCK_MONOTONIC ns when END came; 0: not yet */
	uint64_t last_rx_tsc; /* atomic: TSC of the last burst of the sender's (probes too) */
	/* atomic: CLOCK_MONOTONIC ns when the remote sender's link went down
	 * (the source's link event, on the loop thread); 0: up */
	uint64_t peer_down_ns;
	/* remote sender: the loop's stats and CLOCK_MONOTONIC when its first
	 * pattern packet arrived (run_started); the figures run from there,
	 * not from before its --send-delay, link wait and probes */
	bool started;
	uint64_t start_ns;
	struct evd_loop_stats start_st;
	int done;       /* atomic: monitor stops */
	/* --timeline (monitor thread, then the caller after the join) */
	struct evd_mode_event *tl_ev;
	size_t tl_n, tl_cap;
	uint64_t tl_cursor, tl_lost;
	struct tl_sample { uint64_t t_ns, cpu_ns, delivered; } *tl_s;
	size_t tl_sn, tl_scap;
};

/* Loop thread: one event stamped `stamp` arrived at TSC `now`. */
void run_delivered(struct run *r, uint64_t stamp, uint64_t now);
/* Loop thread: the remote sender's first pattern packet is here (before
 * run_delivered for it): the run's wall time, CPU and counters start now. */
void run_started(struct run *r);
/* Events posted and not yet delivered (for flow control). */
uint64_t run_in_flight(const struct run *r);

#endif
