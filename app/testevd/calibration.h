/* SPDX-License-Identifier: BSD-3-Clause */
/* --calibration, --save-calibration: B, L, T, C and the host's window in a
 * file, so that runs and scores can share one cost model. */
#ifndef TESTEVD_CALIBRATION_H
#define TESTEVD_CALIBRATION_H

/* Give the library the file's cost model; 0 or an exit status. */
int calibration_load(const char *path);
/* Measure the library's cost model and write it; 0 or an exit status. */
int calibration_save(const char *path);

#endif
