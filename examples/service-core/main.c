/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * An evd loop run by a DPDK service core: the service's callback is one
 * evd_loop_poll() round, so the loop shares the service lcore with any
 * other service and never sleeps in it (the service core decides when to
 * run it). The main lcore posts events to the loop's ring from outside;
 * the example exits 0 once the handler has seen them all.
 *
 *   service-core [EAL options] -s 0x2 -- [EVENTS]
 * (-s: the service coremask; without one, the example takes the last lcore.)
 */
#include <stdio.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <rte_eal.h>
#include <rte_lcore.h>
#include <rte_pause.h>
#include <rte_service.h>
#include <rte_service_component.h>

#include <evd.h>

static uint64_t seen; /* atomic: read by the main lcore */

static void
on_events(struct evd_source *src, void *burst, uint16_t n, void *arg)
{
	(void)src;
	(void)burst;
	(void)arg;
	__atomic_fetch_add(&seen, n, __ATOMIC_RELEASE);
}

/* The service: one round of the loop; -EAGAIN tells the service core
 * there was nothing to do (it counts such calls as idle). */
static int32_t
loop_service(void *arg)
{
	int n = evd_loop_poll(arg, 0);

	return n > 0 ? 0 : -EAGAIN;
}

/* A service lcore for the loop: one the EAL was given (-s), else the last. */
static int
service_lcore(uint32_t service_id)
{
	uint32_t lcores[RTE_MAX_LCORE];
	int n = rte_service_lcore_list(lcores, RTE_DIM(lcores));

	if (n < 0)
		return n;
	if (n == 0) {
		unsigned int last = rte_get_next_lcore(-1, 1, 0);

		if (last >= RTE_MAX_LCORE)
			return -ENODEV; /* one lcore only: nowhere to run the service */
		if (rte_service_lcore_add(last) < 0)
			return -EIO;
		lcores[0] = last;
	}
	if (rte_service_map_lcore_set(service_id, lcores[0], 1) < 0 ||
	    rte_service_lcore_start(lcores[0]) < 0)
		return -EIO;
	return (int)lcores[0];
}

int
main(int argc, char **argv)
{
	struct rte_service_spec spec = { .name = "evd-loop", .callback = loop_service };
	/* evd_loop_poll() asks no policy: poll, the one with nothing to learn */
	struct evd_loop_conf conf = { .name = "service", .policy = "poll" };
	struct evd_event ev = { 0 };
	struct evd_loop *loop;
	struct evd_source *ring;
	uint64_t events = 100000;
	uint32_t id;
	int rc, lcore;

	rc = rte_eal_init(argc, argv);
	if (rc < 0) {
		fprintf(stderr, "service-core: EAL initialisation failed\n");
		return 1;
	}
	if (argc - rc > 1)
		events = strtoull(argv[rc + 1], NULL, 10);
	if (evd_loop_create(&conf, &loop) < 0 ||
	    evd_ring_create("requests", 1024, on_events, NULL, &ring) < 0 ||
	    evd_loop_add(loop, ring) < 0)
		return 1;
	spec.callback_userdata = loop;
	if (rte_service_component_register(&spec, &id) < 0 ||
	    rte_service_component_runstate_set(id, 1) < 0 || rte_service_runstate_set(id, 1) < 0)
		return 1;
	lcore = service_lcore(id);
	if (lcore < 0) {
		fprintf(stderr, "service-core: no service lcore: %s\n", strerror(-lcore));
		return 1;
	}
	printf("service-core: the loop runs as a service on lcore %d\n", lcore);
	for (uint64_t i = 0; i < events; i++) {
		ev.u64 = i;
		while (evd_ring_post(ring, &ev) == -ENOBUFS) /* full: the service catches up */
			rte_pause();
	}
	while (__atomic_load_n(&seen, __ATOMIC_ACQUIRE) < events)
		rte_pause();
	/* stop the service before the loop goes: its callback holds the loop */
	rte_service_runstate_set(id, 0);
	while (rte_service_may_be_active(id) == 1)
		rte_pause();
	rte_service_lcore_stop(lcore);
	rte_service_component_unregister(id);
	printf("service-core: %" PRIu64 " events posted, %" PRIu64 " handled\n", events,
	       __atomic_load_n(&seen, __ATOMIC_ACQUIRE));
	evd_loop_remove(loop, ring);
	evd_source_destroy(ring);
	evd_loop_destroy(loop);
	rte_eal_cleanup();
	return 0;
}
