/* SPDX-License-Identifier: BSD-3-Clause */
/* Built-in arrival patterns. Rates are multiples of --rate (default 20000/s). */
#include <string.h>

#include "pattern.h"

static const struct phase demo_phases[] = {
	{ "burst", PHASE_RATE, 0.15, 20.0, 32 },   /* a high-rate burst */
	{ "steady", PHASE_RATE, 0.35, 1.0, 1 },    /* a steady medium rate */
	{ "trickle", PHASE_RATE, 0.25, 0.01, 1 },  /* a sparse trickle */
	{ "idle", PHASE_IDLE, 0.25, 0, 0 },        /* nothing at all */
};

static const struct phase idle_phases[] = {
	{ "idle", PHASE_IDLE, 1.0, 0, 0 },
};

static const struct phase saturate_phases[] = {
	{ "saturate", PHASE_SATURATE, 1.0, 0, 32 },
};

static const struct phase steady_phases[] = {
	{ "steady", PHASE_RATE, 1.0, 1.0, 1 },
};

static const struct pattern patterns[] = {
	{ "demo", "burst (20 x rate, 15%), steady (rate, 35%), trickle (rate/100, 25%), idle (25%)",
	  demo_phases, 4 },
	{ "idle", "no events at all", idle_phases, 1 },
	{ "saturate", "the producer posts bursts of 32 as fast as it can", saturate_phases, 1 },
	{ "steady", "Poisson arrivals at --rate for the whole run", steady_phases, 1 },
};

const struct pattern *
pattern_find(const char *name)
{
	for (size_t i = 0; i < sizeof(patterns) / sizeof(patterns[0]); i++)
		if (strcmp(patterns[i].name, name) == 0)
			return &patterns[i];
	return NULL;
}

void
pattern_list(FILE *f)
{
	for (size_t i = 0; i < sizeof(patterns) / sizeof(patterns[0]); i++)
		fprintf(f, "    %-9s %s\n", patterns[i].name, patterns[i].help);
}
