/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef EVD_SOURCE_H
#define EVD_SOURCE_H

/**
 * @file
 * The driver SDK: how a completion source plugs into an evd loop.
 *
 * A driver embeds struct evd_source in its own object, fills an ops table
 * with designated initializers, calls evd_source_init() and hands the source
 * to the application. The loop calls the ops on its own thread only, so a
 * driver needs no locking between ops of one source.
 *
 * Contract of each op, in the order the arm protocol calls them:
 * - poll (required): take up to @p budget completions, lock-free, and hand
 *   them to the handler with evd_source_deliver(). Return the count handed
 *   over (>= 0) or a negative errno.
 * - arm (optional): request a notification on fd() for completions that
 *   arrive after this call. It may also fire for completions already queued
 *   ("considerate" hardware), the loop does not rely on it: it re-polls after
 *   arming. Return 0, or a negative errno (-ENOTSUP: armed, but not for
 *   every completion, e.g. a solicited-only CQ: the loop polls it every
 *   round and arms it again at each sleep).
 * - fd (optional): the notification fd, stable while registered; a source
 *   without fd is poll-only and bounds the loop's sleeps.
 * - ack (optional): consume exactly one readiness of fd() after a wakeup
 *   (read the eventfd, ibv_get_cq_event + batched ack, ...). Return 0,
 *   -EAGAIN if nothing was pending, or a negative errno.
 * - disarm (optional): stop notifications after a wakeup or a re-poll hit.
 * - queued (optional): completions the source still holds, which a destroy
 *   would drop: evd_source_destroy() refuses while it is above 0.
 * - close (optional): release the driver's resources; called once by
 *   evd_source_destroy() when the source is on no loop.
 *
 * An fd whose readiness is level-triggered by its own content (a socket)
 * needs neither arm nor ack: leave them NULL.
 *
 * A software source (the ring) needs no fd: it sets `bell`, and its
 * producer, once it takes the arm (its own armed flag, exchanged to 0, after
 * a full fence that follows the publication), calls evd_source_ring_bell().
 * The loop issues one full fence after arming, before its re-poll, which
 * pairs with the producer's. A device's notification may be lost in ways
 * the loop cannot rule out (an fd with an arm op): after a sleep that timed
 * out the loop polls such sources and counts the completions no
 * notification announced; a bell's or a level fd's is not polled then.
 */

#include <stdbool.h>
#include <stdint.h>
#include <sys/epoll.h>

#include "evd.h"

struct evd__bell;

#ifdef __cplusplus
extern "C" {
#endif

/** Operations of a source. Missing optional ops mean "not supported". */
struct evd_source_ops {
	const char *kind; /**< Short driver name for logs ("ring", "fd", "ibv_cq", ...). */
	/** Notified through the loop's doorbell (evd_source_ring_bell()), not an fd. */
	bool bell;
	/** Deliver up to @p budget completions to the handler; return how many (< 0: error). */
	int (*poll)(struct evd_source *src, uint16_t budget);
	/**
	 * Request a notification on fd() for the next completion (0; -ENOTSUP: not
	 * for every one).
	 */
	int (*arm)(struct evd_source *src);
	/** Withdraw the request, where the device can (optional). */
	int (*disarm)(struct evd_source *src);
	/** The fd that becomes readable on a notification (-ENOTSUP: poll-only). */
	int (*fd)(const struct evd_source *src);
	/** Consume the notification after a wake (0; -EAGAIN: none there). */
	int (*ack)(struct evd_source *src);
	/** Completions still held (destroy refuses while above 0). */
	unsigned int (*queued)(const struct evd_source *src);
	/** Free the source (evd_source_destroy()). */
	void (*close)(struct evd_source *src);
};

/** How a registered source stands towards notifications. */
enum evd_arm_state {
	EVD_ARM_NONE = 0,   /**< Not armed: its fd will not be signalled. */
	EVD_ARM_ONCE = 1,   /**< Armed by its arm op for the next completion. */
	/** Always watched: a level fd (no arm op), polled when epoll says it is ready. */
	EVD_ARM_LEVEL = 2,
};

/**
 * The common part of every source. Drivers embed it and set it up with
 * evd_source_init(); the fields below the line are the loop's.
 */
struct evd_source {
	const struct evd_source_ops *ops; /**< The driver's operations. */
	evd_handler_t handler;            /**< Called with each burst of completions. */
	void *handler_arg;                /**< The handler's last argument. */
	char name[EVD_NAME_MAX];          /**< For logs, stats and telemetry. */
	uint32_t epoll_events; /**< Events to watch on fd() (EPOLLIN if 0). */
	/* ---- owned by the library ---- */
	uint32_t magic;         /**< EVD_SOURCE_MAGIC while the source lives. */
	/** The loop it is in, or NULL. While an add, a discard or a destroy
	 * works on it, a value of the library's own that is no loop: a
	 * driver reads it only from the ops a loop calls (poll, arm, ...). */
	struct evd_loop *loop;
	uint32_t index;        /**< Position in the loop's table of sources (moves). */
	uint32_t key;          /**< Its slot in the loop's epoll keys (stable while registered). */
	uint8_t armed;         /**< enum evd_arm_state. */
	/** Its notification came in the last wait (in the loop's list of them). */
	uint8_t woken;
	uint8_t removing;      /**< Removal requested from a handler. */
	uint8_t failed;        /**< Its fd was closed under it: neither polled nor watched. */
	uint8_t has_fd;        /**< It has a notification fd (else the bell, or poll-only). */
	int notify_fd;         /**< That fd, in the loop's epoll set; -1 if none. */
	/** Its place in the loop's list of sources polled every round; UINT32_MAX: armed. */
	uint32_t act_pos;
	/** The doorbell of the loop it was last added to (rung by producers). */
	struct evd__bell *bell;
	/** stats.events when its notification came (spurious if unchanged). */
	uint64_t events_at_sleep;
	/** When a notification became owed (completions found after a timeout,
	 *  none seen yet), on the loop's clock; 0: none. */
	uint64_t owed_since_ns;
	uint32_t id;              /**< Given by the loop at add, never reused in it (policies). */
	/* the last op failure logged, for the log's rate limit */
	const char *err_op;       /**< Its op (a literal), NULL: none yet. */
	int err;                  /**< Its error. */
	uint32_t err_unlogged;    /**< The same failures since, counted, not logged. */
	uint64_t err_logged_ns;   /**< When it was logged (the loop's clock). */
	/** Polls, doubled; bit 0 set while in the loop's list polled every
	 *  round, whose passes are then added (stats.polls is unused). */
	uint64_t polls;
	/** Polls that delivered (stats.empty_polls: polls less these, the most
	 *  a stats read has seen, written by the readers only). */
	uint64_t busy_polls;
	/** Written by the loop thread (and by producers for `full`). */
	struct evd_source_stats stats;
	struct evd_source_stats stats_base; /**< Baseline recorded by a reset. */
};

/** evd_source.magic of a live source; a destroyed one holds another value. */
#define EVD_SOURCE_MAGIC 0x65766473u

/**
 * Initialise the common part of a driver's source. Any thread; @p src must
 * not be on a loop (-EBUSY).
 * @param src      The driver's object's common part (zeroed here; its magic and
 *                 loop fields are read first, so valgrind's memcheck reports
 *                 memory fresh from malloc(): calloc() it).
 * @param ops      Its operations, which outlive it (a static const table).
 * @param name     For logs, stats and telemetry (NULL: the ops' kind).
 * @param handler  Called with each burst of completions (loop thread).
 * @param arg      The handler's last argument.
 * @return 0; -EINVAL (logged) if @p src, @p ops, its poll op or @p handler is
 *   NULL, or @p name has EVD_NAME_MAX characters or more or a control
 *   character; -EBUSY (logged) if
 *   @p src is a live source on a loop (it is left as it was).
 */
int evd_source_init(struct evd_source *src, const struct evd_source_ops *ops, const char *name,
		    evd_handler_t handler, void *arg);

/**
 * Hand a burst to the source's handler. Called by a driver's poll op (the
 * loop's thread); the loop counts completions from the op's return value.
 * @param src    The source being polled.
 * @param burst  The completions, in the driver's format.
 * @param n      How many.
 */
static inline void
evd_source_deliver(struct evd_source *src, void *burst, uint16_t n)
{
	src->handler(src, burst, n, src->handler_arg);
}

/**
 * Report an asynchronous error of a source (device event, CQ error) to its
 * loop: its on_error runs, as after a failed op. On the loop's thread (from
 * one of the source's ops), or any thread while no thread runs the loop;
 * an error seen on another thread while it runs is handed over (evd_ibv
 * keeps it in an atomic) and reported from the next poll.
 * @param src  The source.
 * @param err  A negative errno (-1..-4095), given to on_error and logged.
 * @return 0; -EINVAL (@p src NULL or not a source, @p err not a negative
 *   errno); -ENOENT (@p src is on no loop: the error is logged, not
 *   delivered); -EBUSY (another thread runs the loop); -EDEADLK (a control
 *   call's wait, as evd.h's Threads says).
 */
int evd_source_report_error(struct evd_source *src, int err);

/**
 * Wake the source's loop for it: the producer side of a `bell` source, after
 * it took the source's arm. Any thread; async-signal-safe. NULL, or a source
 * that was never on a loop, is ignored (unlogged: no log is signal-safe); one
 * that left its loop since the arm
 * rings that loop (a spurious wake, at worst).
 * @param src  The source whose arm the caller took.
 */
void evd_source_ring_bell(struct evd_source *src);

/** Increment a counter that only the loop thread writes; readable from any thread. */
#define EVD_STAT_ADD(field, n) \
	__atomic_store_n(&(field), (field) + (n), __ATOMIC_RELAXED)

#ifdef __cplusplus
}
#endif

#endif /* EVD_SOURCE_H */
