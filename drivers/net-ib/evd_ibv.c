/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * net-ib: verbs CQs as evd sources. See evd_ibv.h for the contract.
 *
 * The loop owns the arm protocol; this file only implements the ops:
 * poll (ibv_start_poll/next/end, or ibv_poll_cq), arm (ibv_req_notify_cq),
 * fd (the completion channel), ack (ibv_get_cq_event plus batched
 * ibv_ack_cq_events). There is no disarm: a CQ's arm is one-shot.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <rte_branch_prediction.h>
#include <rte_common.h>
#include <rte_log.h>

#include <evd_source.h>

#include "evd_ibv.h"

RTE_LOG_REGISTER(evd_ibv_logtype, pmd.evd.ib, INFO);
#define IBV_LOG(level, fmt, ...) \
	rte_log(RTE_LOG_##level, evd_ibv_logtype, "EVD_IBV: " fmt "\n", ##__VA_ARGS__)

#define MAX_BURST 64
#define DEFAULT_CQE 1024
#define DEFAULT_ACK_BATCH 16
/* Fields read from every successful completion of a created CQ. */
#define BASE_WC_FLAGS (IBV_WC_EX_WITH_BYTE_LEN | IBV_WC_EX_WITH_IMM | IBV_WC_EX_WITH_QP_NUM)
#define EXTRA_WC_FLAGS (IBV_WC_EX_WITH_SRC_QP | IBV_WC_EX_WITH_SLID | IBV_WC_EX_WITH_SL | \
			IBV_WC_EX_WITH_DLID_PATH_BITS)

struct cq_src {
	struct evd_source src;
	struct ibv_cq *cq;       /* both kinds */
	struct ibv_cq_ex *cq_ex; /* created CQs only */
	struct ibv_comp_channel *ch;
	uint64_t extra_wc_flags;
	int solicited_only;
	int created;
	uint32_t ack_batch;
	uint32_t unacked;        /* events read, not yet acknowledged */
	int async_err;           /* atomic: set by an async source, reported by poll */
	struct evd_ibv_cq_stats st;
	struct cq_src *next;     /* registry */
};

struct async_src {
	struct evd_source src;
	struct ibv_context *ctx;
	struct async_src *next;
};

/* Control-path registry: which CQ source a CQ_ERR names, which contexts
 * have an async source. Never touched on the poll path. */
static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static struct cq_src *cq_list;
static struct async_src *async_list;

static const struct evd_source_ops cq_ex_ops;
static const struct evd_source_ops cq_ex_extra_ops;
static const struct evd_source_ops cq_legacy_ops;
static const struct evd_source_ops async_ops;

/* libibverbs reports failures as positive errno, as -1 with errno, or as a
 * negative count: end all of them here as a negative errno. */
static int
neg_errno(int rc)
{
	if (rc > 0)
		return -rc;
	if (rc < 0 && errno > 0)
		return -errno;
	return -EIO;
}

static bool
is_cq_src(const struct evd_source *s)
{
	return s != NULL &&
	       (s->ops == &cq_ex_ops || s->ops == &cq_ex_extra_ops || s->ops == &cq_legacy_ops);
}

/* ---- poll ---------------------------------------------------------------- */

static void
report_async_error(struct cq_src *s)
{
	int err = __atomic_exchange_n(&s->async_err, 0, __ATOMIC_ACQ_REL);

	if (err == 0)
		return;
	IBV_LOG(ERR, "CQ source %s: %s", s->src.name,
		err == -ENODEV ? "device fatal error" : "CQ error (overrun or access)");
	evd_source_report_error(&s->src, err);
}

static int
poll_failed(struct cq_src *s, int err)
{
	EVD_STAT_ADD(s->st.poll_errors, 1);
	return err;
}

/*
 * Created CQs: the extended poll API, no lock taken by mlx5 (single-threaded).
 * One body, specialised at compile time for CQs with and without extra
 * fields, so the common case pays no per-completion test for them.
 */
static __rte_always_inline int
poll_ex(struct evd_source *src, uint16_t budget, const bool extra)
{
	struct cq_src *s = (struct cq_src *)src;
	struct ibv_cq_ex *cq = s->cq_ex;
	struct ibv_poll_cq_attr attr = { .comp_mask = 0 };
	struct ibv_wc wc[MAX_BURST], *w = wc, *end;
	uint32_t errs = 0;
	uint16_t n;
	int rc;

	if (unlikely(__atomic_load_n(&s->async_err, __ATOMIC_RELAXED) != 0))
		report_async_error(s);
	end = wc + (budget > MAX_BURST ? MAX_BURST : budget);
	rc = ibv_start_poll(cq, &attr);
	if (likely(rc == ENOENT))
		return 0;
	if (unlikely(rc != 0))
		return poll_failed(s, neg_errno(rc));
	do {
		enum ibv_wc_status st = cq->status;

		w->wr_id = cq->wr_id;
		w->status = st;
		w->qp_num = ibv_wc_read_qp_num(cq);
		if (likely(st == IBV_WC_SUCCESS)) {
			/* vendor_err is left undefined, as ibv_poll_cq does */
			w->opcode = ibv_wc_read_opcode(cq);
			w->byte_len = ibv_wc_read_byte_len(cq);
			w->wc_flags = ibv_wc_read_wc_flags(cq);
			w->imm_data = (w->wc_flags & IBV_WC_WITH_IMM) ? ibv_wc_read_imm_data(cq) : 0;
		} else {
			/* Only wr_id, status, qp_num and vendor_err are valid. */
			errs++;
			w->opcode = 0;
			w->byte_len = 0;
			w->wc_flags = 0;
			w->imm_data = 0;
			w->vendor_err = ibv_wc_read_vendor_err(cq);
		}
		if (extra) {
			uint64_t f = s->extra_wc_flags;

			w->src_qp = (f & IBV_WC_EX_WITH_SRC_QP) ? ibv_wc_read_src_qp(cq) : 0;
			w->slid = (f & IBV_WC_EX_WITH_SLID) ? (uint16_t)ibv_wc_read_slid(cq) : 0;
			w->sl = (f & IBV_WC_EX_WITH_SL) ? ibv_wc_read_sl(cq) : 0;
			w->dlid_path_bits = (f & IBV_WC_EX_WITH_DLID_PATH_BITS) ?
					    ibv_wc_read_dlid_path_bits(cq) : 0;
		}
		if (++w == end)
			break;
		rc = ibv_next_poll(cq);
	} while (rc == 0);
	n = (uint16_t)(w - wc);
	ibv_end_poll(cq);
	EVD_STAT_ADD(s->st.completions, n);
	if (unlikely(errs))
		EVD_STAT_ADD(s->st.error_completions, errs);
	/* What was taken is delivered even if the CQ failed after it. */
	evd_source_deliver(src, wc, n);
	if (unlikely(rc != 0 && rc != ENOENT && w != end)) {
		EVD_STAT_ADD(s->st.poll_errors, 1);
		evd_source_report_error(src, neg_errno(rc));
	}
	return n;
}

static int
cq_ex_poll(struct evd_source *src, uint16_t budget)
{
	return poll_ex(src, budget, false);
}

static int
cq_ex_poll_extra(struct evd_source *src, uint16_t budget)
{
	return poll_ex(src, budget, true);
}

/* Adopted CQs: ibv_poll_cq. */
static int
cq_legacy_poll(struct evd_source *src, uint16_t budget)
{
	struct cq_src *s = (struct cq_src *)src;
	struct ibv_wc wc[MAX_BURST];
	int n;

	if (unlikely(__atomic_load_n(&s->async_err, __ATOMIC_RELAXED) != 0))
		report_async_error(s);
	if (budget > MAX_BURST)
		budget = MAX_BURST;
	n = ibv_poll_cq(s->cq, budget, wc);
	if (likely(n == 0))
		return 0;
	if (unlikely(n < 0))
		return poll_failed(s, -EIO); /* ibv_poll_cq says only "< 0" */
	EVD_STAT_ADD(s->st.completions, n);
	for (int i = 0; i < n; i++)
		if (unlikely(wc[i].status != IBV_WC_SUCCESS))
			EVD_STAT_ADD(s->st.error_completions, 1);
	evd_source_deliver(src, wc, (uint16_t)n);
	return n;
}

/* ---- arm, fd, ack ---------------------------------------------------------- */

/*
 * Solicited-only: the CQ is armed, but only for a solicited (or failed)
 * completion; the others may arrive while the loop sleeps and raise nothing.
 * The loop takes a plain 0 as the promise of a notification for any
 * completion after the arm, and checks it after a timeout: completions
 * found with no event would be counted lost wakeups, each after a wait for
 * the event. -ENOTSUP tells it not to expect one (a level fd's answer).
 */
static int
cq_arm(struct evd_source *src)
{
	struct cq_src *s = (struct cq_src *)src;
	int rc = ibv_req_notify_cq(s->cq, s->solicited_only);

	if (rc != 0)
		return neg_errno(rc);
	return s->solicited_only ? -ENOTSUP : 0;
}

static int
cq_fd(const struct evd_source *src)
{
	return ((const struct cq_src *)src)->ch->fd;
}

static void
ack_events(struct cq_src *s)
{
	if (s->unacked == 0)
		return;
	ibv_ack_cq_events(s->cq, s->unacked);
	EVD_STAT_ADD(s->st.events_acked, s->unacked);
	s->unacked = 0;
}

/* Read one notification. Never read() the channel directly: mlx5 keeps its
 * arm sequence number in what ibv_get_cq_event() processes. */
static int
get_event(struct cq_src *s)
{
	struct ibv_cq *ev_cq;
	void *ev_ctx;

	for (int tries = 0;; tries++) {
		errno = 0;
		if (ibv_get_cq_event(s->ch, &ev_cq, &ev_ctx) == 0)
			break;
		if (errno == EINTR && tries < 8)
			continue;
		if (errno == EAGAIN || errno == EWOULDBLOCK)
			return -EAGAIN;
		return errno > 0 ? -errno : -EIO;
	}
	if (unlikely(ev_cq != s->cq)) {
		/* The channel is shared with another CQ, against the contract:
		 * ack that CQ's event so that its destroy cannot hang. */
		IBV_LOG(ERR, "CQ source %s: event for another CQ on its channel; the channel must "
			"be dedicated", s->src.name);
		ibv_ack_cq_events(ev_cq, 1);
		return -EINVAL;
	}
	EVD_STAT_ADD(s->st.events, 1);
	if (++s->unacked >= s->ack_batch)
		ack_events(s);
	return 0;
}

static int
cq_ack(struct evd_source *src)
{
	return get_event((struct cq_src *)src);
}

/* ---- lifetime ---------------------------------------------------------------- */

/* Add a CQ source; an adopted one (@p adopted) unless its CQ or its channel
 * is a source's already (two sources of one CQ would both poll it; of one
 * channel, each would read and acknowledge the other's events): -EBUSY. */
static int
registry_add(struct cq_src *s, bool adopted)
{
	int rc = 0;

	pthread_mutex_lock(&registry_lock);
	for (struct cq_src *o = cq_list; adopted && o != NULL && rc == 0; o = o->next)
		if (o->cq == s->cq || o->ch == s->ch)
			rc = -EBUSY;
	if (rc == 0) {
		s->next = cq_list;
		cq_list = s;
	}
	pthread_mutex_unlock(&registry_lock);
	return rc;
}

static void
registry_del(struct cq_src *s)
{
	pthread_mutex_lock(&registry_lock);
	for (struct cq_src **p = &cq_list; *p != NULL; p = &(*p)->next)
		if (*p == s) {
			*p = s->next;
			break;
		}
	pthread_mutex_unlock(&registry_lock);
}

static void
cq_close(struct evd_source *src)
{
	struct cq_src *s = (struct cq_src *)src;

	registry_del(s);
	/* Every event the channel holds was reported by the device: read and
	 * acknowledge them all, or ibv_destroy_cq() waits for them forever. */
	while (get_event(s) == 0)
		;
	ack_events(s);
	if (s->created) {
		int rc = ibv_destroy_cq(s->cq);

		if (rc != 0)
			IBV_LOG(ERR, "CQ source %s: ibv_destroy_cq: %s", src->name,
				strerror(-neg_errno(rc)));
		rc = ibv_destroy_comp_channel(s->ch);
		if (rc != 0)
			IBV_LOG(ERR, "CQ source %s: ibv_destroy_comp_channel: %s", src->name,
				strerror(-neg_errno(rc)));
	}
	free(s);
}

static const struct evd_source_ops cq_ex_ops = {
	.kind = "ibv_cq",
	.poll = cq_ex_poll,
	.arm = cq_arm,
	.fd = cq_fd,
	.ack = cq_ack,
	.close = cq_close,
};

static const struct evd_source_ops cq_ex_extra_ops = {
	.kind = "ibv_cq",
	.poll = cq_ex_poll_extra,
	.arm = cq_arm,
	.fd = cq_fd,
	.ack = cq_ack,
	.close = cq_close,
};

static const struct evd_source_ops cq_legacy_ops = {
	.kind = "ibv_cq",
	.poll = cq_legacy_poll,
	.arm = cq_arm,
	.fd = cq_fd,
	.ack = cq_ack,
	.close = cq_close,
};

static int
set_nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL);

	if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0) {
		int err = errno;

		IBV_LOG(ERR, "fd %d: O_NONBLOCK: %s", fd, strerror(err));
		return -err;
	}
	return 0;
}

static int
check_conf(const struct evd_ibv_cq_conf *c)
{
	if (c->wc_flags & ~(uint64_t)EXTRA_WC_FLAGS) {
		IBV_LOG(ERR, "conf->wc_flags 0x%" PRIx64 ": only SRC_QP, SLID, SL and "
			"DLID_PATH_BITS may be added", c->wc_flags);
		return -EINVAL;
	}
	if (c->cqe > INT32_MAX) {
		IBV_LOG(ERR, "conf->cqe %" PRIu32 ": libibverbs takes at most INT32_MAX entries",
			c->cqe);
		return -EINVAL;
	}
	return 0;
}

static int
moderate(struct cq_src *s, const struct evd_ibv_cq_conf *c)
{
	struct ibv_modify_cq_attr ma = {
		.attr_mask = IBV_CQ_ATTR_MODERATE,
		.moderate = { .cq_count = c->moderation_count, .cq_period = c->moderation_period_us },
	};
	int rc;

	if (c->moderation_count == 0 && c->moderation_period_us == 0)
		return 0;
	rc = ibv_modify_cq(s->cq, &ma);
	if (rc != 0) {
		rc = neg_errno(rc);
		IBV_LOG(ERR, "CQ source %s: moderation (count %u, period %u us): %s", s->src.name,
			c->moderation_count, c->moderation_period_us, strerror(-rc));
	}
	return rc;
}

static struct cq_src *
cq_src_alloc(const char *name, const struct evd_ibv_cq_conf *c, const struct evd_source_ops *ops,
	     evd_handler_t handler, void *arg, int *rc)
{
	struct cq_src *s = calloc(1, sizeof(*s));

	if (s == NULL) {
		IBV_LOG(ERR, "CQ source %s: out of memory", name ? name : "");
		*rc = -ENOMEM;
		return NULL;
	}
	*rc = evd_source_init(&s->src, ops, name, handler, arg);
	if (*rc < 0) {
		free(s);
		return NULL;
	}
	s->solicited_only = c->solicited_only;
	s->ack_batch = c->ack_batch ? c->ack_batch : DEFAULT_ACK_BATCH;
	s->extra_wc_flags = c->wc_flags;
	return s;
}

int
evd_ibv_cq_create(struct ibv_context *ctx, const char *name, const struct evd_ibv_cq_conf *conf,
		  evd_handler_t handler, void *arg, struct evd_source **out)
{
	static const struct evd_ibv_cq_conf defaults;
	const struct evd_ibv_cq_conf *c = conf ? conf : &defaults;
	struct ibv_cq_init_attr_ex attr;
	struct cq_src *s;
	int rc;

	if (out == NULL) {
		IBV_LOG(ERR, "%s: out is NULL", __func__);
		return -EINVAL;
	}
	*out = NULL;
	if (ctx == NULL || handler == NULL) {
		IBV_LOG(ERR, "%s: %s is NULL", __func__, ctx == NULL ? "ctx" : "handler");
		return -EINVAL;
	}
	rc = check_conf(c);
	if (rc < 0)
		return rc;
	s = cq_src_alloc(name, c, c->wc_flags ? &cq_ex_extra_ops : &cq_ex_ops, handler, arg, &rc);
	if (s == NULL)
		return rc;
	errno = 0;
	s->ch = ibv_create_comp_channel(ctx);
	if (s->ch == NULL) {
		rc = errno > 0 ? -errno : -EIO;
		IBV_LOG(ERR, "CQ source %s: ibv_create_comp_channel: %s", s->src.name, strerror(-rc));
		free(s);
		return rc;
	}
	memset(&attr, 0, sizeof(attr));
	attr.cqe = c->cqe ? c->cqe : DEFAULT_CQE;
	attr.cq_context = s;
	attr.channel = s->ch;
	attr.comp_vector = c->comp_vector;
	attr.wc_flags = BASE_WC_FLAGS | c->wc_flags;
	attr.comp_mask = IBV_CQ_INIT_ATTR_MASK_FLAGS;
	attr.flags = IBV_CREATE_CQ_ATTR_SINGLE_THREADED;
	errno = 0;
	s->cq_ex = ibv_create_cq_ex(ctx, &attr);
	if (s->cq_ex == NULL) {
		rc = errno > 0 ? -errno : -EOPNOTSUPP;
		IBV_LOG(ERR, "CQ source %s: ibv_create_cq_ex: %s", s->src.name, strerror(-rc));
		ibv_destroy_comp_channel(s->ch);
		free(s);
		return rc;
	}
	s->cq = ibv_cq_ex_to_cq(s->cq_ex);
	s->created = 1;
	rc = set_nonblock(s->ch->fd);
	if (rc == 0)
		rc = moderate(s, c);
	if (rc < 0) {
		ibv_destroy_cq(s->cq);
		ibv_destroy_comp_channel(s->ch);
		free(s);
		return rc;
	}
	(void)registry_add(s, false); /* created here: its own CQ and channel */
	*out = &s->src;
	return 0;
}

int
evd_ibv_cq_adopt(struct ibv_cq *cq, const char *name, const struct evd_ibv_cq_conf *conf,
		 evd_handler_t handler, void *arg, struct evd_source **out)
{
	static const struct evd_ibv_cq_conf defaults;
	const struct evd_ibv_cq_conf *c = conf ? conf : &defaults;
	struct cq_src *s;
	int rc;

	if (out == NULL) {
		IBV_LOG(ERR, "%s: out is NULL", __func__);
		return -EINVAL;
	}
	*out = NULL;
	if (cq == NULL || handler == NULL) {
		IBV_LOG(ERR, "%s: %s is NULL", __func__, cq == NULL ? "cq" : "handler");
		return -EINVAL;
	}
	if (cq->channel == NULL) {
		IBV_LOG(ERR, "%s %s: cq %p has no completion channel", __func__, name ? name : "",
			(void *)cq);
		return -EINVAL;
	}
	if (c->wc_flags != 0) {
		IBV_LOG(ERR, "%s %s: conf->wc_flags 0x%" PRIx64 ": they apply to created CQs only",
			__func__, name ? name : "", c->wc_flags);
		return -EINVAL;
	}
	s = cq_src_alloc(name, c, &cq_legacy_ops, handler, arg, &rc);
	if (s == NULL)
		return rc;
	s->cq = cq;
	s->ch = cq->channel;
	rc = registry_add(s, true);
	if (rc < 0) {
		IBV_LOG(ERR, "adopt %s: the CQ or its completion channel is a source already "
			"(a channel dedicated to one CQ, one source a CQ)", s->src.name);
		free(s);
		return rc;
	}
	rc = set_nonblock(s->ch->fd);
	if (rc == 0)
		rc = moderate(s, c);
	if (rc < 0) {
		registry_del(s);
		free(s);
		return rc;
	}
	*out = &s->src;
	return 0;
}

/* Whether @p src is a CQ source; logs which argument it is not, for @p fn. */
static bool
check_cq_src(const struct evd_source *src, const char *fn)
{
	if (src == NULL)
		IBV_LOG(ERR, "%s: src is NULL", fn);
	else if (!is_cq_src(src))
		IBV_LOG(ERR, "%s: src %s is not a CQ source", fn, src->name);
	else
		return true;
	return false;
}

struct ibv_cq *
evd_ibv_cq_get(const struct evd_source *src)
{
	return check_cq_src(src, __func__) ? ((const struct cq_src *)src)->cq : NULL;
}

#define LOAD(x) __atomic_load_n(&(x), __ATOMIC_RELAXED)

int
evd_ibv_cq_stats_get(const struct evd_source *src, struct evd_ibv_cq_stats *st)
{
	const struct cq_src *s = (const struct cq_src *)src;

	if (!check_cq_src(src, __func__))
		return -EINVAL;
	if (st == NULL) {
		IBV_LOG(ERR, "%s: st is NULL", __func__);
		return -EINVAL;
	}
	st->completions = LOAD(s->st.completions);
	st->error_completions = LOAD(s->st.error_completions);
	st->events = LOAD(s->st.events);
	st->events_acked = LOAD(s->st.events_acked);
	st->poll_errors = LOAD(s->st.poll_errors);
	st->cq_errors = LOAD(s->st.cq_errors);
	return 0;
}

/* ---- async events -------------------------------------------------------------- */

/* Flag the CQ sources an event concerns; each reports it on its own loop. */
static void
route_async(struct async_src *a, const struct ibv_async_event *ev)
{
	pthread_mutex_lock(&registry_lock);
	for (struct cq_src *s = cq_list; s != NULL; s = s->next) {
		bool cq_err = ev->event_type == IBV_EVENT_CQ_ERR && s->cq == ev->element.cq;

		/* counted here, each event (its CQ source reports them
		 * at its next poll, as one where several came between) */
		if (cq_err)
			__atomic_fetch_add(&s->st.cq_errors, 1, __ATOMIC_RELAXED);
		if (cq_err ||
		    (ev->event_type == IBV_EVENT_DEVICE_FATAL && s->cq->context == a->ctx))
			__atomic_store_n(&s->async_err, cq_err ? -EIO : -ENODEV, __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&registry_lock);
}

static int
async_poll(struct evd_source *src, uint16_t budget)
{
	struct async_src *a = (struct async_src *)src;
	struct ibv_async_event ev[16];
	uint16_t n = 0;

	if (budget > RTE_DIM(ev))
		budget = RTE_DIM(ev);
	while (n < budget) {
		errno = 0;
		if (ibv_get_async_event(a->ctx, &ev[n]) != 0) {
			if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR || n > 0)
				break;
			return errno > 0 ? -errno : -EIO;
		}
		IBV_LOG(WARNING, "device %s: async event %s", ibv_get_device_name(a->ctx->device),
			ibv_event_type_str(ev[n].event_type));
		route_async(a, &ev[n]);
		n++;
	}
	if (n == 0)
		return 0;
	evd_source_deliver(src, ev, n);
	for (uint16_t i = 0; i < n; i++) {
		if (ev[i].event_type == IBV_EVENT_DEVICE_FATAL)
			evd_source_report_error(src, -ENODEV);
		ibv_ack_async_event(&ev[i]);
	}
	return n;
}

static int
async_fd(const struct evd_source *src)
{
	return ((const struct async_src *)src)->ctx->async_fd;
}

static void
async_close(struct evd_source *src)
{
	struct async_src *a = (struct async_src *)src;

	pthread_mutex_lock(&registry_lock);
	for (struct async_src **p = &async_list; *p != NULL; p = &(*p)->next)
		if (*p == a) {
			*p = a->next;
			break;
		}
	pthread_mutex_unlock(&registry_lock);
	free(a);
}

static const struct evd_source_ops async_ops = {
	.kind = "ibv_async",
	.poll = async_poll,
	.fd = async_fd,
	.close = async_close,
};

int
evd_ibv_async_create(struct ibv_context *ctx, const char *name, evd_handler_t handler, void *arg,
		     struct evd_source **out)
{
	struct async_src *a;
	int rc;

	if (out == NULL) {
		IBV_LOG(ERR, "%s: out is NULL", __func__);
		return -EINVAL;
	}
	*out = NULL;
	if (ctx == NULL || handler == NULL) {
		IBV_LOG(ERR, "%s: %s is NULL", __func__, ctx == NULL ? "ctx" : "handler");
		return -EINVAL;
	}
	if (ctx->async_fd < 0) {
		IBV_LOG(ERR, "%s: ctx->async_fd %d: not an open device context", __func__,
			ctx->async_fd);
		return -EINVAL;
	}
	a = calloc(1, sizeof(*a));
	if (a == NULL) {
		IBV_LOG(ERR, "%s: out of memory", __func__);
		return -ENOMEM;
	}
	rc = evd_source_init(&a->src, &async_ops, name, handler, arg);
	if (rc == 0)
		rc = set_nonblock(ctx->async_fd);
	if (rc < 0) {
		free(a);
		return rc;
	}
	a->ctx = ctx;
	pthread_mutex_lock(&registry_lock);
	for (struct async_src *p = async_list; p != NULL; p = p->next)
		if (p->ctx == ctx)
			rc = -EBUSY;
	if (rc == 0) {
		a->next = async_list;
		async_list = a;
	}
	pthread_mutex_unlock(&registry_lock);
	if (rc < 0) {
		IBV_LOG(ERR, "%s %s: ctx %p has an async source already", __func__, a->src.name,
			(void *)ctx);
		free(a);
		return rc;
	}
	*out = &a->src;
	return 0;
}
