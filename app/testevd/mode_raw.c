/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * --raw-epoll: the baseline without evd. Receives on --port queue 0 the way
 * DPDK's l3fwd-power does: poll; when empty, enable the Rx interrupt, wait in
 * rte_epoll_wait() on the per-thread epoll instance (10 ms timeout, the
 * rescue for the lost wakeup, as l3fwd-power has it), disable, poll again.
 * No re-poll after the enable. Reports the same keys as the other modes, so
 * that the wake latency of evd's path and of the raw path compare in one run.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <rte_cycles.h>
#include <rte_epoll.h>
#include <rte_ethdev.h>

#include "clock.h"
#include "ethdev_port.h"
#include "hist.h"
#include "report.h"
#include "stop.h"
#include "testevd.h"

#define BURST 32
#define EPOLL_TIMEOUT_MS 10

static uint64_t
ns(clockid_t c)
{
	struct timespec ts;

	clock_gettime(c, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int
raw(const struct opts *o)
{
	struct result *res = calloc(1, sizeof(*res));
	struct rte_mbuf *pkts[BURST];
	struct rte_mempool *pool;
	uint64_t total = 0, got = 0, t0, c0, deadline;
	bool intr, end = false, started = false, ours;
	int rc, status = 0;

	if (res == NULL)
		return EXIT_RUNTIME;
	printf("testevd: raw rte_epoll_wait receiver (l3fwd-power style) on port %u\n", o->port);
	testevd_tsc_hz(); /* measured before anything is timed */
	rc = testevd_port_start(o->port, 1, &pool, &intr, 30.0);
	if (rc == 0 && !intr)
		rc = -ENOTSUP;
	if (rc == 0)
		rc = rte_eth_dev_rx_intr_ctl_q(o->port, 0, RTE_EPOLL_PER_THREAD, RTE_INTR_EVENT_ADD,
					       NULL);
	if (rc < 0) {
		fprintf(stderr, "testevd: --raw-epoll on port %u: %s\n", o->port, strerror(-rc));
		return EXIT_RUNTIME;
	}
	snprintf(res->policy, sizeof(res->policy), "raw-epoll");
	res->source = "ethdev";
	res->pattern = "remote";
	t0 = ns(CLOCK_MONOTONIC);
	c0 = ns(CLOCK_THREAD_CPUTIME_ID);
	deadline = t0 + (uint64_t)((o->duration_s + REMOTE_GRACE_S) * 1e9);
	/* one queue: END comes after every packet that will come; the
	 * deadline moves on while the sender's packets (probes too) come */
	while (!end && ns(CLOCK_MONOTONIC) < deadline && !testevd_stopping()) {
		uint16_t n = rte_eth_rx_burst(o->port, 0, pkts, BURST);

		if (n == 0) {
			struct rte_epoll_event ev;
			int k;

			rte_eth_dev_rx_intr_enable(o->port, 0);
			res->sleeps++;
			k = rte_epoll_wait(RTE_EPOLL_PER_THREAD, &ev, 1, EPOLL_TIMEOUT_MS);
			if (k > 0)
				res->wakeups++;
			else if (k == 0)
				res->sleep_timeouts++;
			rte_eth_dev_rx_intr_disable(o->port, 0);
			continue;
		}
		ours = false; /* a packet of the sender's (not a tap's own traffic) */
		for (uint16_t i = 0; i < n; i++) {
			const struct testevd_payload *p = testevd_payload_of(pkts[i]);
			uint64_t now = rte_rdtsc();

			ours |= p != NULL;
			if (p != NULL && (p->flags & TESTEVD_F_END)) {
				end = true;
				total = p->total;
			} else if (p != NULL && !(p->flags & TESTEVD_F_PROBE)) {
				if (!started) { /* the sender's first: the figures start here */
					started = true;
					t0 = ns(CLOCK_MONOTONIC);
					c0 = ns(CLOCK_THREAD_CPUTIME_ID);
					res->sleeps = res->wakeups = res->sleep_timeouts = 0;
				}
				hist_add(&res->lat, testevd_tsc_ns(now > p->tsc ? now - p->tsc : 0));
				got++;
			}
			rte_pktmbuf_free(pkts[i]);
		}
		if (ours)
			deadline = RTE_MAX(deadline, ns(CLOCK_MONOTONIC) +
						     (uint64_t)(REMOTE_GRACE_S * 1e9));
	}
	res->wall_ns = ns(CLOCK_MONOTONIC) - t0;
	res->cpu_ns = ns(CLOCK_THREAD_CPUTIME_ID) - c0;
	res->events_sent = end ? total : got;
	res->events_delivered = got;
	res->events_lost = res->events_sent - got;
	res->incomplete = !end;
	res->stopped = testevd_stopping() != 0;
	res->runs = 1;
	result_finish(res);
	report_table(stdout, res, 1);
	if (o->json != NULL && report_json(o->json, res, 1, false) < 0)
		status = EXIT_RUNTIME;
	if (res->stopped)
		fprintf(stderr, "testevd: stopped by a signal\n");
	if ((res->incomplete && !res->stopped) || res->events_lost > 0)
		status = EXIT_LOSS;
	rte_eth_dev_rx_intr_ctl_q(o->port, 0, RTE_EPOLL_PER_THREAD, RTE_INTR_EVENT_DEL, NULL);
	testevd_port_stop(o->port);
	rte_mempool_free(pool);
	free(res);
	return status;
}

const struct mode mode_raw = { "raw-epoll", raw };
