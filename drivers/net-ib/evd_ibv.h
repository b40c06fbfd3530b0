/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef EVD_IBV_H
#define EVD_IBV_H

/**
 * @file
 * net-ib: RDMA verbs completion queues as evd sources.
 *
 * A CQ source polls its CQ lock-free on the loop's thread and hands bursts of
 * struct ibv_wc to the handler (error completions included: check status).
 * When the loop sleeps, the source arms the CQ with ibv_req_notify_cq(), the
 * loop re-polls it (IBTA only promises an event for completions added after
 * the arm) and waits on the CQ's completion channel, which the driver makes
 * non-blocking and which must be dedicated to this CQ. Notifications are
 * consumed with ibv_get_cq_event() and acknowledged in batches with
 * ibv_ack_cq_events(); every event read is acknowledged before the source
 * is destroyed, so ibv_destroy_cq() never waits forever.
 *
 * CQs created by the driver use ibv_create_cq_ex() with
 * IBV_CREATE_CQ_ATTR_SINGLE_THREADED (mlx5 then takes no lock) and are
 * polled with ibv_start_poll()/ibv_next_poll()/ibv_end_poll(). CQs adopted
 * from the application are polled with ibv_poll_cq().
 *
 * An async source (evd_ibv_async_create()) reads the device's async events:
 * IBV_EVENT_CQ_ERR is reported by the failing CQ source through its loop's
 * on_error callback and stats (on that loop's thread); port and device
 * events reach the async source's handler, and a fatal device error is also
 * reported through on_error. The loops keep serving their other sources.
 *
 * Every function returns 0 (or a count) or a negative errno; libibverbs'
 * mixed conventions (NULL + errno, positive errno, -1) end at this edge.
 */

#include <stdbool.h>
#include <stdint.h>

#include <infiniband/verbs.h>

#include <evd.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Options of a CQ source. Zero-initialise, then set what you need. */
struct evd_ibv_cq_conf {
	/** Created CQs: minimum number of entries (0 gives 1024). */
	uint32_t cqe;
	/** Created CQs: completion vector. */
	uint32_t comp_vector;
	/** Created CQs: IBV_WC_EX_WITH_* fields to read besides byte_len,
	 * imm_data and qp_num (e.g. IBV_WC_EX_WITH_SRC_QP). */
	uint64_t wc_flags;
	/** Arm for solicited completions only while the loop sleeps: other
	 * completions wait for the next wake or the sleep bound, which is not
	 * a lost wakeup (the arm answers -ENOTSUP to the loop). */
	bool solicited_only;
	/** ibv_modify_cq() moderation: completions per event (0: leave as is). */
	uint16_t moderation_count;
	/** ibv_modify_cq() moderation: period in microseconds (0: leave as is). */
	uint16_t moderation_period_us;
	/** Notifications acknowledged per ibv_ack_cq_events() call (0 gives 16). */
	uint32_t ack_batch;
};

/** Counters of a CQ source (besides the loop's per-source stats). */
struct evd_ibv_cq_stats {
	uint64_t completions;       /**< Work completions handed to the handler. */
	uint64_t error_completions; /**< Of those, with status != IBV_WC_SUCCESS. */
	uint64_t events;            /**< Notifications consumed (ibv_get_cq_event). */
	uint64_t events_acked;      /**< Notifications acknowledged (ibv_ack_cq_events). */
	uint64_t poll_errors;       /**< Polls that failed (CQ in error, overrun). */
	/** IBV_EVENT_CQ_ERR async events for this CQ (each; not DEVICE_FATAL). */
	uint64_t cq_errors;
};

/**
 * Create a CQ and its completion channel on @p ctx and make it a source.
 * Control path; any thread (the driver's registry is locked, libibverbs'
 * create calls are thread-safe). The handler receives struct ibv_wc bursts.
 * Every error is logged (logtype pmd.evd.ib), one line naming the argument
 * and its value; the EAL need not be initialised.
 *
 * @param ctx     The device context; not NULL.
 * @param name    The source's name; NULL gives the kind, "ibv_cq".
 * @param conf    Options; NULL gives the defaults (all zero).
 * @param handler Receives the struct ibv_wc bursts; not NULL.
 * @param arg     The handler's argument.
 * @param out     Set to the new source, or to NULL on error; not NULL.
 * @return 0;
 *   -EINVAL: @p out, @p ctx or @p handler is NULL, conf->wc_flags holds a
 *   flag besides SRC_QP, SLID, SL and DLID_PATH_BITS, conf->cqe is over
 *   INT32_MAX, or @p name is as evd_source_init() refuses (logged by
 *   lib.evd);
 *   -ENOMEM;
 *   -EOPNOTSUPP: the provider has no ibv_create_cq_ex(), or no moderation
 *   while it was asked for;
 *   or the errno libibverbs reported.
 */
int evd_ibv_cq_create(struct ibv_context *ctx, const char *name, const struct evd_ibv_cq_conf *conf,
		      evd_handler_t handler, void *arg, struct evd_source **out);

/**
 * Make a source of a CQ the application created (ibv_create_cq()) with a
 * completion channel dedicated to it. The CQ and the channel stay the
 * application's: evd_source_destroy() acknowledges every event it read and
 * leaves them; destroy them after it. cq_context is not touched.
 * Control path; any thread. Every error is logged, one line naming the
 * argument and its value.
 *
 * @param cq      The CQ, with a completion channel; not NULL.
 * @param name    The source's name; NULL gives the kind, "ibv_cq".
 * @param conf    Options; NULL gives the defaults. conf->cqe, comp_vector
 *                and wc_flags are for created CQs (wc_flags must be 0).
 * @param handler Receives the struct ibv_wc bursts; not NULL.
 * @param arg     The handler's argument.
 * @param out     Set to the new source, or to NULL on error; not NULL.
 * @return 0;
 *   -EINVAL: @p out, @p cq or @p handler is NULL, the CQ has no completion
 *   channel, conf->wc_flags is set, or @p name is as evd_source_init()
 *   refuses (logged by lib.evd);
 *   -EBUSY: the CQ, or its channel, is a source's already, until that one
 *   is destroyed;
 *   -ENOMEM;
 *   -EOPNOTSUPP: moderation the provider lacks;
 *   or the errno libibverbs (or fcntl on the channel) reported.
 */
int evd_ibv_cq_adopt(struct ibv_cq *cq, const char *name, const struct evd_ibv_cq_conf *conf,
		     evd_handler_t handler, void *arg, struct evd_source **out);

/**
 * The CQ behind a CQ source (to create QPs on it). Any thread.
 *
 * @param src A CQ source (evd_ibv_cq_create() or evd_ibv_cq_adopt()).
 * @return The CQ; NULL if @p src is NULL or not a CQ source (logged: the
 *   return type has no room for an errno).
 */
struct ibv_cq *evd_ibv_cq_get(const struct evd_source *src);

/**
 * Read a CQ source's counters. Any thread (each counter is read
 * atomically; together they are not a snapshot).
 *
 * @param src A CQ source.
 * @param st  Filled with the counters; not NULL.
 * @return 0; -EINVAL: @p src is NULL or not a CQ source, or @p st is NULL
 *   (logged).
 */
int evd_ibv_cq_stats_get(const struct evd_source *src, struct evd_ibv_cq_stats *st);

/**
 * A source for the async events of @p ctx (its async_fd, made non-blocking).
 * The handler receives struct ibv_async_event bursts, before the driver acks
 * them. IBV_EVENT_CQ_ERR is also routed to the CQ source it names.
 * Control path; any thread. Every error is logged, one line naming the
 * argument and its value.
 *
 * @param ctx     The device context; not NULL, with an open async_fd.
 * @param name    The source's name; NULL gives the kind, "ibv_async".
 * @param handler Receives the struct ibv_async_event bursts; not NULL.
 * @param arg     The handler's argument.
 * @param out     Set to the new source, or to NULL on error; not NULL.
 * @return 0;
 *   -EINVAL: @p out, @p ctx or @p handler is NULL, ctx->async_fd is
 *   negative, or @p name is as evd_source_init() refuses (logged by
 *   lib.evd);
 *   -ENOMEM;
 *   -EBUSY: @p ctx already has one;
 *   or the errno of fcntl() on async_fd.
 */
int evd_ibv_async_create(struct ibv_context *ctx, const char *name, evd_handler_t handler, void *arg,
			 struct evd_source **out);

#ifdef __cplusplus
}
#endif

#endif /* EVD_IBV_H */
