/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef EVD_ETHDEV_H
#define EVD_ETHDEV_H

/**
 * @file
 * net-ethdev: DPDK ethdev Rx queues as evd sources.
 *
 * A queue source polls its (port, queue) with rte_eth_rx_burst() on the
 * loop's thread and hands bursts of struct rte_mbuf * to the handler, which
 * owns them (free or forward every one). When the loop sleeps, the source
 * enables the queue's Rx interrupt, the loop re-polls it (virtio/vhost only
 * signal packets queued after the enable) and waits on it; after a wake the
 * interrupt is disabled again.
 *
 * Interrupt fds are drained the way EAL does for their handle type (VFIO and
 * UIO eventfds, vdev counters, none for external fds such as tap's and
 * mlx5's that the PMD consumes itself): the queue is attached with
 * rte_eth_dev_rx_intr_ctl_q() to an epoll instance private to the source,
 * which sits in the loop's own epoll set; acknowledging a wake is one
 * rte_epoll_wait() on it with a zero timeout (doc/guides/net-ethdev.md says why).
 *
 * - The port must be configured with intr_conf.rxq = 1 for interrupts;
 *   otherwise, or when the PMD has none (ring, null, memif, af_packet), the
 *   source is poll-only: the loop never sleeps past its poll-only bound while
 *   it is registered.
 * - A PMD whose enable returns -ENOTSUP but that gives an fd (tap) is treated
 *   as always armed, level-readable.
 * - A queue whose interrupt is attached to another epoll instance (the
 *   application's rte_eth_dev_rx_intr_ctl_q, or a vector shared with another
 *   queue) is poll-only.
 * - Enable/disable on the queues of one port are serialised (several PMDs
 *   share one interrupt mask register across queues).
 * - Link up/down and port removal (RTE_ETH_EVENT_INTR_LSC, INTR_RMV,
 *   DESTROY) reach conf->on_port_event on the loop's thread; a removed
 *   port's queue source stops touching the port, leaves its loop (when the
 *   loop's step that saw the removal ends), and can then be destroyed;
 *   evd_loop_add refuses it (-ENODEV). The loop keeps serving its other
 *   sources.
 */

#include <stdbool.h>
#include <stdint.h>

#include <rte_ethdev.h>

#include <evd.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Options of a queue source. Zero-initialise, then set what you need. */
struct evd_ethdev_conf {
	/** Poll-only even if the port has Rx interrupts. */
	bool no_interrupt;
	/**
	 * Told on the loop's thread, from the source's poll, when the port's
	 * link goes up or down (RTE_ETH_EVENT_INTR_LSC) or the port is removed
	 * (RTE_ETH_EVENT_INTR_RMV) or closed (RTE_ETH_EVENT_DESTROY). For a
	 * removal the source is no longer polled and its removal from the loop
	 * is under way: it has left when the loop's step (or evd_loop_run's
	 * round) ends, and evd_source_destroy() answers -EBUSY until then.
	 * Destroy it after that, never from this callback.
	 */
	void (*on_port_event)(struct evd_source *src, enum rte_eth_event_type type, void *arg);
	/** Argument of on_port_event. */
	void *event_arg;
};

/** Counters of a queue source. */
struct evd_ethdev_stats {
	uint64_t packets;       /**< Mbufs handed to the handler. */
	uint64_t link_events;   /**< Link state changes seen. */
	uint64_t intr_errors;   /**< Failed enable/disable calls. */
};

/**
 * Make an Rx queue of a started or configured port a source.
 * Control path, after rte_eal_init(), rte_eth_dev_configure() and the queue's
 * setup; any thread, but not concurrently with the port's own control calls
 * (configure, start, stop, close), which ethdev does not serialise. For its
 * Rx interrupt, after rte_eth_dev_start() too: net_tap, vhost and NIC PMDs
 * set the queues' interrupt vectors up at start, and a source made before
 * it finds none and stays poll-only (the log says so; it still works, with
 * bounded sleeps).
 *
 * A failure to set its interrupt up (no vectors, an epoll or eventfd error)
 * is not an error of the call: the source is made poll-only and the log says
 * why (evd_ethdev_rxq_has_interrupt() tells).
 *
 * Every error is logged (logtype pmd.evd.ethdev), one line naming the
 * argument and its value.
 *
 * @param port_id  The ethdev port.
 * @param queue_id The port's Rx queue, below its configured count.
 * @param name     The source's name; NULL gives "port<P>.rxq<Q>".
 * @param conf     Options; NULL gives the defaults (all zero).
 * @param handler  Receives the bursts of struct rte_mbuf *; not NULL.
 * @param arg      The handler's argument.
 * @param out      Set to the new source, or to NULL on error; not NULL.
 * @return 0;
 *   -EINVAL: @p out or @p handler is NULL, @p name has EVD_NAME_MAX bytes
 *   or more or a control character (logged by lib.evd), @p queue_id is not
 *   below the port's Rx queue count, or the queue is not set up (where the
 *   PMD answers rte_eth_rx_queue_info_get);
 *   -EPERM: the EAL is not initialised (rte_eal_init() has not run);
 *   -ENODEV: no port @p port_id (never probed, or released);
 *   -EBUSY: the queue is a source already, until that one is destroyed (two
 *   would be two consumers of one Rx ring);
 *   -ENOMEM;
 *   or the error of rte_eth_dev_info_get() for the port.
 */
int evd_ethdev_rxq_create(uint16_t port_id, uint16_t queue_id, const char *name,
			  const struct evd_ethdev_conf *conf, evd_handler_t handler, void *arg,
			  struct evd_source **out);

/**
 * Whether the source's port was removed. Any thread.
 *
 * @param src A queue source (evd_ethdev_rxq_create()).
 * @return true if removed; false if not, or if @p src is NULL or not a
 *   queue source (logged: the return type has no room for an errno).
 */
bool evd_ethdev_rxq_removed(const struct evd_source *src);

/**
 * Whether the source waits on an Rx interrupt (false: poll-only). Any thread.
 *
 * @param src A queue source (evd_ethdev_rxq_create()).
 * @return true if it has one; false if poll-only, or if @p src is NULL or
 *   not a queue source (logged: the return type has no room for an errno).
 */
bool evd_ethdev_rxq_has_interrupt(const struct evd_source *src);

/**
 * Read a queue source's counters. Any thread (each counter is read
 * atomically; together they are not a snapshot).
 *
 * @param src A queue source (evd_ethdev_rxq_create()).
 * @param st  Filled with the counters; not NULL.
 * @return 0; -EINVAL: @p src is NULL or not a queue source, or @p st is
 *   NULL (logged).
 */
int evd_ethdev_rxq_stats_get(const struct evd_source *src, struct evd_ethdev_stats *st);

#ifdef __cplusplus
}
#endif

#endif /* EVD_ETHDEV_H */
