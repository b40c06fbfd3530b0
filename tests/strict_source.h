/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A test source with strict (IBTA / virtio) notification semantics: arming
 * raises a notification only for items added after the arm. Items are a
 * counter; the notification fd is a pipe carrying 8-byte records, like a
 * verbs completion channel.
 *
 * inject_at_arm makes the race happen on purpose: the arm op first adds an
 * item (it lands between the loop's last empty poll and the arm), then arms,
 * so the item raises no notification.
 */
#ifndef STRICT_SOURCE_H
#define STRICT_SOURCE_H

#include <evd_source.h>

struct strict_source {
	struct evd_source src;
	int pipe[2];
	uint64_t items;       /* queued, not yet polled */
	int armed;
	int inject_at_arm;    /* items to add just before the next arm */
	int never_notify;     /* a broken source: arms but never notifies */
	int fail_arm;         /* the next n arms fail with -EIO (atomic) */
	int fail_poll;        /* the next n polls fail with -EIO (atomic) */
	int ack_eagain;       /* the next n acks find nothing (-EAGAIN) (atomic) */
	uint64_t notified;    /* notifications written */
	uint64_t acked;       /* notifications consumed */
	uint64_t delivered;
};

int strict_source_init(struct strict_source *s, const char *name);
void strict_source_fini(struct strict_source *s);
/* Add n items; notifies if armed (strict: only items after the arm). */
void strict_source_add(struct strict_source *s, uint64_t n);

#endif
