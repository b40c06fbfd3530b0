/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Where a loop's and a ring's memory comes from: libc's before
 * rte_eal_init(), DPDK's on the NUMA socket asked for (the calling lcore's
 * by default) after it; a block made before the EAL is freed right after
 * it; a socket that does not exist is refused with one log line.
 */
#include <stdio.h>
#include <unistd.h>

#include <rte_eal.h>
#include <rte_lcore.h>
#include <rte_memory.h>

#include <evd.h>
#include <evd_source.h>
#include <evd_private.h> /* the loop's record of its memory */

#include "evd_test.h"

static void
nop(struct evd_source *s, void *burst, uint16_t n, void *arg)
{
	(void)s;
	(void)burst;
	(void)n;
	(void)arg;
}

static bool
dpdk_memory(const void *p)
{
	return rte_mem_virt2memseg(p, NULL) != NULL;
}

int
main(void)
{
	char prefix[64];
	char *argv[] = { "test_numa", "--no-huge", "--no-pci", "-m", "128", "--no-shconf",
			 prefix, "--log-level=lib.eal:error", NULL };
	struct evd_loop_conf conf = { .name = "numa", .policy = "intr" };
	struct evd_loop *before, *loop, *any, *ad_before, *ad;
	struct evd_loop_conf adaptive = { .name = "numa-ad", .policy = "adaptive" };
	struct evd_source *rb, *r[64];
	char name[16], want[64];

	snprintf(prefix, sizeof(prefix), "--file-prefix=evd-numa-%d", (int)getpid());
	/* before the EAL: libc's */
	CHECK_EQ(evd_loop_create(&conf, &before), 0);
	CHECK(!before->mem.dpdk);
	CHECK_EQ(evd_ring_create("rb", 16, nop, NULL, &rb), 0);
	CHECK_EQ(evd_loop_add(before, rb), 0);
	CHECK_EQ(evd_loop_create(&adaptive, &ad_before), 0);
	CHECK(!dpdk_memory(ad_before->policy.state));

	CHECK(rte_eal_init((int)RTE_DIM(argv) - 1, argv) >= 0);

	/* after: DPDK's, on the calling lcore's socket, the lists too */
	CHECK_EQ(evd_loop_create(&conf, &loop), 0);
	CHECK(loop->mem.dpdk);
	CHECK_EQ(loop->mem.socket, (int)rte_socket_id());
	CHECK(dpdk_memory(loop));
	for (int i = 0; i < 64; i++) {
		snprintf(name, sizeof(name), "r%d", i);
		CHECK_EQ(evd_ring_create(name, 1024, nop, NULL, &r[i]), 0);
		CHECK(dpdk_memory(r[i]));
		CHECK_EQ(evd_loop_add(loop, r[i]), 0);
	}
	CHECK(dpdk_memory(loop->src));
	CHECK(dpdk_memory(loop->act));
	CHECK(dpdk_memory(loop->keys));
	printf("  loop, its lists and 64 rings in DPDK memory on socket %d\n", loop->mem.socket);
	/* adaptive's state too, and the histograms it grows as sources come */
	CHECK_EQ(evd_loop_create(&adaptive, &ad), 0);
	CHECK(dpdk_memory(ad->policy.state));
	for (int i = 0; i < 12; i++) {
		const struct evd_event ev = { .u64 = (uint64_t)i };

		CHECK_EQ(evd_loop_remove(loop, r[i]), 0);
		CHECK_EQ(evd_loop_add(ad, r[i]), 0);
		CHECK_EQ(evd_ring_post(r[i], &ev), 0);
		CHECK_EQ(evd_loop_poll(ad, 32), 1);
		CHECK_EQ(evd_loop_remove(ad, r[i]), 0);
		CHECK_EQ(evd_loop_add(loop, r[i]), 0);
	}
	CHECK_EQ(evd_loop_destroy(ad), 0);
	CHECK_EQ(evd_loop_destroy(ad_before), 0); /* libc's, freed as such */

	/* any socket; a socket that does not exist; a malformed value */
	conf.numa_socket = EVD_SOCKET_ANY;
	CHECK_EQ(evd_loop_create(&conf, &any), 0);
	CHECK_EQ(any->mem.socket, SOCKET_ID_ANY);
	CHECK(dpdk_memory(any));
	CHECK_EQ(evd_loop_destroy(any), 0);
	conf.numa_socket = EVD_SOCKET((int)rte_socket_count() + 7);
	snprintf(want, sizeof(want), "EVD_SOCKET(%d): no such socket", (int)rte_socket_count() + 7);
	CHECK_LOGGED(evd_loop_create(&conf, &any), -ENODEV, "EVD: ", want); /* the caller's n */
	conf.numa_socket = -5;
	CHECK_LOGGED(evd_loop_create(&conf, &any), -EINVAL, "EVD: ", "numa_socket -5");

	/* the blocks made before the EAL are libc's still: freed as such */
	CHECK_EQ(evd_loop_remove(before, rb), 0);
	CHECK_EQ(evd_source_destroy(rb), 0);
	CHECK_EQ(evd_loop_destroy(before), 0);
	for (int i = 0; i < 64; i++) {
		CHECK_EQ(evd_loop_remove(loop, r[i]), 0);
		CHECK_EQ(evd_source_destroy(r[i]), 0);
	}
	CHECK_EQ(evd_loop_destroy(loop), 0);
	rte_eal_cleanup();
	printf("ok test_numa\n");
	return 0;
}
