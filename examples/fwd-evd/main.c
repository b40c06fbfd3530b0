/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fwd-evd: the same forwarder on evd. The Rx queue is an evd source; the
 * loop polls it while traffic flows and, when it goes idle, arms the
 * queue's Rx interrupt and sleeps (the adaptive policy decides when),
 * without losing a packet that lands while it arms. Compare with
 * ../fwd-busy: `diff -u fwd-busy/main.c fwd-evd/main.c`.
 *
 *   fwd-evd [EAL options]   (e.g. --vdev net_virtio_user0,path=SOCK; it has
 *                          no options of its own)
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>

#include <rte_eal.h>
#include <rte_ethdev.h>
#include <rte_mbuf.h>

#include <evd.h>
#include <evd_ethdev.h>
#include <evd_policy.h>

#define BURST 32

static struct evd_loop *loop;
static uint64_t rx_total, tx_total, dropped;

static void
on_signal(int sig)
{
	(void)sig;
	evd_loop_stop(loop); /* async-signal-safe: a flag and an eventfd write */
}

/* Send a burst back out of the port it came from (the source's handler). */
static void
forward(struct evd_source *src, void *burst, uint16_t n, void *arg)
{
	uint16_t port = *(uint16_t *)arg;
	struct rte_mbuf **pkts = burst;
	uint16_t sent = rte_eth_tx_burst(port, 0, pkts, n);

	(void)src;
	rx_total += n;
	tx_total += sent;
	dropped += n - sent;
	rte_pktmbuf_free_bulk(pkts + sent, n - sent);
}

static int
port_init(uint16_t port, struct rte_mempool *pool)
{
	struct rte_eth_conf conf = { .intr_conf.rxq = 1 }; /* Rx interrupts to sleep on */
	int rc = rte_eth_dev_configure(port, 1, 1, &conf);

	if (rc == 0)
		rc = rte_eth_rx_queue_setup(port, 0, 1024, rte_eth_dev_socket_id(port), NULL, pool);
	if (rc == 0)
		rc = rte_eth_tx_queue_setup(port, 0, 1024, rte_eth_dev_socket_id(port), NULL);
	if (rc == 0)
		rc = rte_eth_dev_start(port);
	return rc;
}

int
main(int argc, char **argv)
{
	struct evd_loop_conf lconf = { .name = "fwd", .policy = "adaptive" };
	struct evd_source *rxq;
	struct rte_mempool *pool;
	uint16_t port = 0;
	int rc;

	rc = rte_eal_init(argc, argv);
	if (rc < 0) {
		fprintf(stderr, "fwd: EAL initialisation failed\n");
		return 1;
	}
	if (argc - rc > 1) { /* after "--": nothing is ours */
		fprintf(stderr, "fwd: no options of its own ('%s' after the EAL options); "
			"give the port with EAL's --vdev or -a\n", argv[rc + 1]);
		rte_eal_cleanup();
		return 2;
	}
	if (!rte_eth_dev_is_valid_port(port)) {
		fprintf(stderr, "fwd: no port 0 (give one with --vdev or -a)\n");
		rte_eal_cleanup();
		return 1;
	}
	pool = rte_pktmbuf_pool_create("fwd", 8191, 256, 0, RTE_MBUF_DEFAULT_BUF_SIZE,
				       rte_socket_id());
	rc = pool == NULL ? -rte_errno : port_init(port, pool);
	if (rc < 0) {
		fprintf(stderr, "fwd: port %u: %s\n", port, rte_strerror(-rc));
		rte_eth_dev_close(port);
		rte_eal_cleanup();
		return 1;
	}
	/* this machine's sleep and wake costs, for adaptive to price with
	 * (about 100 ms; without it adaptive takes built-in ones) */
	(void)evd_policy_env_calibrate();
	rc = evd_loop_create(&lconf, &loop);
	if (rc == 0)
		rc = evd_ethdev_rxq_create(port, 0, "rx0", NULL, forward, &port, &rxq);
	if (rc == 0 && (rc = evd_loop_add(loop, rxq)) < 0)
		evd_source_destroy(rxq);
	if (rc < 0) {
		fprintf(stderr, "fwd: evd on port %u: %s\n", port, rte_strerror(-rc));
		if (loop != NULL)
			evd_loop_destroy(loop);
		rte_eth_dev_stop(port);
		rte_eth_dev_close(port);
		rte_eal_cleanup();
		return 1;
	}
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	signal(SIGPIPE, SIG_IGN); /* a vhost-user peer that went away */
	printf("fwd: forwarding on port %u, evd policy %s\n", port, evd_loop_policy_name(loop));
	fflush(stdout);

	evd_loop_run(loop); /* until evd_loop_stop() */
	/* a second signal now would stop a loop about to be freed */
	signal(SIGINT, SIG_IGN);
	signal(SIGTERM, SIG_IGN);

	printf("fwd: %" PRIu64 " received, %" PRIu64 " sent back, %" PRIu64 " dropped\n",
	       rx_total, tx_total, dropped);
	evd_loop_remove(loop, rxq);
	evd_source_destroy(rxq);
	evd_loop_destroy(loop);
	rte_eth_dev_stop(port);
	rte_eth_dev_close(port);
	rte_eal_cleanup();
	return 0;
}
