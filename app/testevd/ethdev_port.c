/* SPDX-License-Identifier: BSD-3-Clause */
/* Port setup shared by --source ethdev (receiver) and --send (sender). */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <rte_ethdev.h>
#include <rte_ether.h>
#include <rte_ip.h>

#include "ethdev_port.h"
#include "stop.h"

#define NB_MBUF 8191u
#define NB_DESC 1024u

int
testevd_port_start(uint16_t port, uint16_t nb_rxq, struct rte_mempool **pool, bool *intr,
		   double wait_s)
{
	struct rte_eth_conf conf = { .intr_conf = { .rxq = 1 } };
	struct rte_eth_dev_info info;
	struct rte_eth_link link;
	char name[RTE_MEMPOOL_NAMESIZE];
	uint16_t nb_txq;
	int rc;

	if (!rte_eth_dev_is_valid_port(port)) {
		fprintf(stderr, "testevd: no port %u (give one with EAL --vdev or -a)\n", port);
		return -ENODEV;
	}
	rc = rte_eth_dev_info_get(port, &info);
	if (rc < 0)
		return rc;
	if (nb_rxq > info.max_rx_queues) {
		fprintf(stderr, "testevd: port %u (%s) has at most %u Rx queues\n", port,
			info.driver_name, info.max_rx_queues);
		return -EINVAL;
	}
	/* as many Tx queues as Rx (net_tap wants that; only Tx queue 0
	 * sends), and mbufs for every descriptor (NIC PMDs fill their Rx rings
	 * at start) with room to spare */
	nb_txq = RTE_MAX(RTE_MIN(nb_rxq, info.max_tx_queues), 1);
	snprintf(name, sizeof(name), "testevd-pool-%u", port);
	*pool = rte_pktmbuf_pool_create(name,
					RTE_MAX(NB_MBUF, (unsigned int)(nb_rxq + nb_txq) * NB_DESC + 2048u),
					256, 0, RTE_MBUF_DEFAULT_BUF_SIZE, rte_socket_id());
	if (*pool == NULL)
		return -rte_errno;
	*intr = true;
	rc = rte_eth_dev_configure(port, nb_rxq, nb_txq, &conf);
	if (rc < 0) {
		/* PMDs without Rx interrupts refuse intr_conf.rxq: poll-only */
		conf.intr_conf.rxq = 0;
		*intr = false;
		rc = rte_eth_dev_configure(port, nb_rxq, nb_txq, &conf);
	}
	if (rc < 0)
		return rc;
	for (uint16_t q = 0; q < nb_rxq && rc == 0; q++)
		rc = rte_eth_rx_queue_setup(port, q, NB_DESC, rte_eth_dev_socket_id(port), NULL,
					    *pool);
	for (uint16_t q = 0; q < nb_txq && rc == 0; q++)
		rc = rte_eth_tx_queue_setup(port, q, NB_DESC, rte_eth_dev_socket_id(port), NULL);
	if (rc == 0)
		rc = rte_eth_dev_start(port);
	if (rc < 0)
		return rc;
	for (double waited = 0; waited < wait_s && !testevd_stopping(); waited += 0.01) {
		if (rte_eth_link_get_nowait(port, &link) == 0 && link.link_status)
			return 0;
		usleep(10000);
	}
	fprintf(stderr, "testevd: port %u (%s): link still down after %.0f s\n", port,
		info.driver_name, wait_s);
	return -ENOLINK;
}

void
testevd_port_stop(uint16_t port)
{
	if (rte_eth_dev_is_valid_port(port)) {
		rte_eth_dev_stop(port);
		rte_eth_dev_close(port);
	}
}

const struct testevd_payload *
testevd_payload_of(const struct rte_mbuf *m)
{
	const struct rte_ether_hdr *eh;
	const struct rte_ipv4_hdr *ip;
	const struct testevd_payload *p;
	size_t ihl;

	if (rte_pktmbuf_data_len(m) < sizeof(*eh) + sizeof(*ip) + sizeof(*p))
		return NULL;
	eh = rte_pktmbuf_mtod(m, const struct rte_ether_hdr *);
	if (eh->ether_type != rte_cpu_to_be_16(RTE_ETHER_TYPE_IPV4))
		return NULL;
	ip = (const struct rte_ipv4_hdr *)(eh + 1);
	ihl = (size_t)(ip->version_ihl & 0x0f) * 4;
	if (ip->next_proto_id != TESTEVD_IPPROTO || ihl < sizeof(*ip) ||
	    rte_pktmbuf_data_len(m) < sizeof(*eh) + ihl + sizeof(*p))
		return NULL;
	p = (const struct testevd_payload *)((const char *)ip + ihl);
	return p->magic == TESTEVD_MAGIC ? p : NULL;
}

struct testevd_payload *
testevd_packet_init(void *buf, const struct rte_ether_addr *src)
{
	struct rte_ether_hdr *eh = buf;
	struct rte_ipv4_hdr *ip = (struct rte_ipv4_hdr *)(eh + 1);

	memset(buf, 0, TESTEVD_PKT_LEN);
	memset(&eh->dst_addr, 0xff, sizeof(eh->dst_addr));
	eh->src_addr = *src;
	eh->ether_type = rte_cpu_to_be_16(RTE_ETHER_TYPE_IPV4);
	ip->version_ihl = RTE_IPV4_VHL_DEF;
	ip->total_length = rte_cpu_to_be_16(TESTEVD_PKT_LEN - sizeof(*eh));
	ip->time_to_live = 64;
	ip->next_proto_id = TESTEVD_IPPROTO;
	ip->src_addr = rte_cpu_to_be_32(TESTEVD_SRC_IP);
	ip->dst_addr = rte_cpu_to_be_32(TESTEVD_DST_IP);
	ip->hdr_checksum = rte_ipv4_cksum(ip);
	return (struct testevd_payload *)(ip + 1);
}
