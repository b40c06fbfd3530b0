/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * "napper", a test policy: every decision naps test_napper.nap_ns, after
 * posting 3 events to test_napper.ring if set (arrivals after the loop's
 * last empty poll: no notification announces them). It records how each
 * wait ended and the deciding thread's timer slack. Register it with
 * evd_policy_register(&test_napper_ops).
 */
#ifndef NAPPER_POLICY_H
#define NAPPER_POLICY_H

#include <evd_policy.h>

struct test_napper {
	struct evd_source *ring;  /* posts 3 events from decide, if set */
	uint64_t nap_ns;          /* the nap each decision asks for */
	uint64_t slept_ns;        /* the last wait, as on_wake told it */
	enum evd_wake_reason why; /* how it ended */
	int slack_seen;           /* the deciding thread's timer slack */
};

extern struct test_napper test_napper;
extern const struct evd_policy_ops test_napper_ops;

#endif /* NAPPER_POLICY_H */
