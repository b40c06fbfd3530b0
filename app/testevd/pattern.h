/* SPDX-License-Identifier: BSD-3-Clause */
/* Built-in arrival patterns: phases of a rate, a saturation or silence. */
#ifndef TESTEVD_PATTERN_H
#define TESTEVD_PATTERN_H

#include <stdint.h>
#include <stdio.h>

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

/* The pattern of that name, or NULL. */
const struct pattern *pattern_find(const char *name);
void pattern_list(FILE *f);

#endif
