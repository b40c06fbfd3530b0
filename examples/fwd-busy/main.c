/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fwd-busy: the usual DPDK forwarder. One lcore polls Rx queue 0 of port 0
 * and sends every packet back out of the same port. It never sleeps: its
 * core is at 100% with or without traffic. Compare with ../fwd-evd.
 *
 *   fwd-busy [EAL options]   (e.g. --vdev net_virtio_user0,path=SOCK; it has
 *                          no options of its own)
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>

#include <rte_eal.h>
#include <rte_ethdev.h>
#include <rte_mbuf.h>

#define BURST 32

static volatile sig_atomic_t quit;
static uint64_t rx_total, tx_total, dropped;

static void
on_signal(int sig)
{
	(void)sig;
	quit = 1;
}

/* Send a burst back out of the port it came from. */
static void
forward(uint16_t port, struct rte_mbuf **pkts, uint16_t n)
{
	uint16_t sent = rte_eth_tx_burst(port, 0, pkts, n);

	rx_total += n;
	tx_total += sent;
	dropped += n - sent;
	rte_pktmbuf_free_bulk(pkts + sent, n - sent);
}

static int
port_init(uint16_t port, struct rte_mempool *pool)
{
	struct rte_eth_conf conf = { 0 };
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
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	signal(SIGPIPE, SIG_IGN); /* a vhost-user peer that went away */
	printf("fwd: forwarding on port %u, busy-polling\n", port);
	fflush(stdout);

	while (!quit) {
		struct rte_mbuf *pkts[BURST];
		uint16_t n = rte_eth_rx_burst(port, 0, pkts, BURST);

		if (n > 0)
			forward(port, pkts, n);
	}

	printf("fwd: %" PRIu64 " received, %" PRIu64 " sent back, %" PRIu64 " dropped\n",
	       rx_total, tx_total, dropped);
	rte_eth_dev_stop(port);
	rte_eth_dev_close(port);
	rte_eal_cleanup();
	return 0;
}
