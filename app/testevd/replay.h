/* SPDX-License-Identifier: BSD-3-Clause */
/* The producer's side of a run: the pattern or --trace in real time. */
#ifndef TESTEVD_REPLAY_H
#define TESTEVD_REPLAY_H

struct run;

/* Replay the pattern (or --trace) through r->kind->post, on the calling
 * thread, until it ends or a stop signal comes. */
void run_replay(struct run *r);

#endif
