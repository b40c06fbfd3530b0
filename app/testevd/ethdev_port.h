/* SPDX-License-Identifier: BSD-3-Clause */
/* testevd's ethdev helpers: port setup and the test packet's layout. */
#ifndef TESTEVD_ETHDEV_PORT_H
#define TESTEVD_ETHDEV_PORT_H

#include <stdbool.h>
#include <stdint.h>

#include <rte_mbuf.h>

/* Packets are IPv4 (so that IP forwarders such as l3fwd-power route them
 * back) with protocol 253 (RFC 3692, for experiments), from 10.0.0.2 to
 * 1.1.1.1 (l3fwd-power's route to port 0), the payload after the header. */
#define TESTEVD_IPPROTO 253
#define TESTEVD_SRC_IP RTE_IPV4(10, 0, 0, 2)
#define TESTEVD_DST_IP RTE_IPV4(1, 1, 1, 1)
#define TESTEVD_MAGIC 0x45564431 /* "EVD1" */
#define TESTEVD_F_END 1u         /* the last packet: carries the total sent */
#define TESTEVD_F_PROBE 2u       /* before the pattern, for the receiver's arm probe */

/* After the IPv4 header. */
struct testevd_payload {
	uint32_t magic;
	uint32_t flags;
	uint64_t seq;
	uint64_t tsc;   /* the sender's TSC when it queued the packet */
	uint64_t total; /* with TESTEVD_F_END: packets sent before this one */
} __rte_packed;

#define TESTEVD_PKT_LEN 80 /* Ethernet 14 + IPv4 20 + payload 32, padded */

/*
 * Configure and start a port with nb_rxq Rx queues and as many Tx queues
 * (queue 0 sends; the others are there for PMDs that want as many), asking
 * for Rx interrupts (retrying without them if the PMD refuses), and wait up
 * to wait_s for the link. Returns 0 or a negative errno; *intr tells whether
 * Rx interrupts were enabled in the configuration.
 */
int testevd_port_start(uint16_t port, uint16_t nb_rxq, struct rte_mempool **pool, bool *intr,
		       double wait_s);
void testevd_port_stop(uint16_t port);

/* Parse a packet; NULL if it is not one of ours. */
const struct testevd_payload *testevd_payload_of(const struct rte_mbuf *m);
/* Write the headers of one of ours into buf (TESTEVD_PKT_LEN bytes, zeroed
 * first); returns where the payload goes. */
struct testevd_payload *testevd_packet_init(void *buf, const struct rte_ether_addr *src);

#endif
