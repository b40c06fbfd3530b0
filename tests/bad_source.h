/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A test source on an eventfd whose ack or arm fails (-EIO): its poll finds
 * nothing; with consume set, the failing ack has read the notification all
 * the same. For the error paths of the loop (test_misuse, test_protocol).
 */
#ifndef BAD_SOURCE_H
#define BAD_SOURCE_H

#include <stdbool.h>

#include <evd_source.h>

struct bad_source {
	struct evd_source src;
	int efd;
	bool consume; /* the failing ack still consumed the notification */
};

extern const struct evd_source_ops bad_ack_ops; /* ack fails */
extern const struct evd_source_ops bad_arm_ops; /* arm fails */

#endif
