/* SPDX-License-Identifier: BSD-3-Clause */
/* One real-time run: the loop, a producer, a monitor, and the result. */
#ifndef TESTEVD_RUN_H
#define TESTEVD_RUN_H

struct opts;
struct result;

/* Replay o's pattern or trace through o->source under one policy, into res;
 * 0 or a negative errno. */
int run_pattern(const struct opts *o, const char *policy, struct result *res);

#endif
