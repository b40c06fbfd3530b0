/* SPDX-License-Identifier: BSD-3-Clause */
/* testevd's command line, after the EAL options and "--". */
#ifndef TESTEVD_OPTIONS_H
#define TESTEVD_OPTIONS_H

#include <stdbool.h>
#include <stdio.h>

#include "testevd.h"

/* testevd_parse_opts(): 0, EXIT_USAGE (message printed), or this. */
#define TESTEVD_HELP_SHOWN (-1)

/* Parse testevd's options into o, which holds the defaults. */
int testevd_parse_opts(int argc, char **argv, struct opts *o);
void testevd_usage(FILE *f, const char *prog);
/* Whether @p arg ("--name" or "--name=value") is one of testevd's own
 * options that EAL does not share: one before "--" is misplaced. */
bool testevd_is_option(const char *arg);
/* Whether @p arg is one of testevd's options whose value is the next
 * argument (--json F, not --json=F). */
bool testevd_takes_value(const char *arg);

#endif
