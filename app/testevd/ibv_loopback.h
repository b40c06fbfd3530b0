/* SPDX-License-Identifier: BSD-3-Clause */
/* An RC QP connected to itself (used by --source verbs and tests/test_ibv_hw.c). */
#ifndef TESTEVD_IBV_LOOPBACK_H
#define TESTEVD_IBV_LOOPBACK_H

#include <stdint.h>

#include <infiniband/verbs.h>

/* INIT -> RTR -> RTS with the QP as its own remote, on `port` (GID index 0
 * on RoCE). Returns 0 or a negative errno. */
int ibv_loopback_connect(struct ibv_context *ctx, struct ibv_qp *qp, uint8_t port);

#endif
