/* SPDX-License-Identifier: BSD-3-Clause */
/* The emulated HCA. See emu_ibv.h. No production code links it. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "emu_ibv.h"

#ifdef EMU_HAVE_VERBS_INIT_AND_ALLOC
/* libibverbs' private provider entry point (IBVERBS_PRIVATE_*). */
void *_verbs_init_and_alloc_context(struct ibv_device *device, int cmd_fd, size_t alloc_size,
				    struct verbs_context *context_offset, uint32_t driver_id);
#endif

/* The record the kernel writes on a completion channel. */
struct comp_event_desc {
	uint64_t cq_handle;
};

/* The record the kernel writes on a context's async fd. */
struct async_event_desc {
	uint64_t element;
	uint32_t event_type;
	uint32_t reserved;
};

struct emu_device {
	struct ibv_device dev;
	char verbs_device_tail[512]; /* room for libibverbs' struct verbs_device */
};

struct emu_ctx {
	struct verbs_context vctx; /* first: libibverbs allocates us around it */
	int async_pipe[2];
	enum emu_semantics sem;
	struct emu_device *device;
	int cmd_fd;
};

struct emu_channel {
	struct ibv_comp_channel ch;
	int wfd;
};

struct emu_cq {
	struct ibv_cq_ex ex; /* first: the ibv_cq view is a prefix of it */
	struct emu_ctx *ctx;
	enum emu_semantics sem;
	pthread_mutex_t lock; /* the "hardware" */
	struct emu_cqe *q;
	uint32_t size;
	uint64_t prod, cons;
	int armed, armed_solicited;
	bool in_error;
	struct emu_cqe cur; /* the entry the ibv_cq_ex calls read */
	int fail_arm, fail_arm_err, fail_poll;
	struct emu_cqe at_arm; /* lands just before the next arm is processed */
	bool have_at_arm;
	struct emu_cq_counters c;
};

static struct emu_device emu_dev = {
	.dev = {
		.node_type = IBV_NODE_CA,
		.transport_type = IBV_TRANSPORT_IB,
		.name = "emu0",
		.dev_name = "uverbs-emu0",
	},
};
static uint64_t destroy_hangs;

static struct emu_cq *
to_emu(struct ibv_cq *cq)
{
	return (struct emu_cq *)cq;
}

static struct emu_ctx *
to_ctx(struct ibv_context *ctx)
{
	return (struct emu_ctx *)verbs_get_ctx(ctx);
}

bool
emu_is_context(const struct ibv_context *ctx)
{
	return ctx != NULL && ctx->device == &emu_dev.dev;
}

/* ---- notification --------------------------------------------------------- */

/* Write one event record for cq on its channel (lock held). */
static void
notify(struct emu_cq *q)
{
	struct comp_event_desc d = { .cq_handle = (uint64_t)(uintptr_t)&q->ex };
	struct emu_channel *ch;

	if (q->ex.channel == NULL)
		return;
	ch = (struct emu_channel *)q->ex.channel;
	if (write(ch->wfd, &d, sizeof(d)) == (ssize_t)sizeof(d))
		q->c.events++;
}

static void
async_event(struct emu_ctx *x, uint64_t element, enum ibv_event_type type)
{
	struct async_event_desc d = { .element = element, .event_type = type };

	if (write(x->async_pipe[1], &d, sizeof(d)) != (ssize_t)sizeof(d))
		abort(); /* a test cannot go on without its event */
}

/* ---- legacy verbs: ibv_poll_cq, ibv_req_notify_cq ------------------------- */

static int
emu_poll_cq(struct ibv_cq *cq, int n, struct ibv_wc *wc)
{
	struct emu_cq *q = to_emu(cq);
	int k = 0;

	pthread_mutex_lock(&q->lock);
	/* After an overrun the entries queued before it still come out; then
	 * the CQ reports its error state. */
	if (q->fail_poll > 0 || (q->in_error && q->cons == q->prod)) {
		if (q->fail_poll > 0)
			q->fail_poll--;
		pthread_mutex_unlock(&q->lock);
		return -1;
	}
	while (k < n && q->cons != q->prod) {
		const struct emu_cqe *e = &q->q[q->cons++ % q->size];
		struct ibv_wc *w = &wc[k++];

		memset(w, 0, sizeof(*w));
		w->wr_id = e->wr_id;
		w->status = e->status;
		w->opcode = e->opcode;
		w->byte_len = e->byte_len;
		w->qp_num = e->qp_num;
		w->imm_data = e->imm_data;
		w->wc_flags = e->wc_flags;
		w->vendor_err = e->vendor_err;
	}
	q->c.polled += (uint64_t)k;
	pthread_mutex_unlock(&q->lock);
	return k;
}

static int
emu_req_notify_cq(struct ibv_cq *cq, int solicited_only)
{
	struct emu_cq *q = to_emu(cq);

	pthread_mutex_lock(&q->lock);
	if (q->fail_arm > 0) {
		int err = q->fail_arm_err;

		q->fail_arm--;
		pthread_mutex_unlock(&q->lock);
		return err; /* positive errno, like the providers */
	}
	if (q->have_at_arm && q->prod - q->cons < q->size) {
		/* the race: after the consumer's last empty poll, before the arm */
		q->have_at_arm = false;
		q->q[q->prod++ % q->size] = q->at_arm;
		q->c.pushed++;
	}
	q->armed = 1;
	q->armed_solicited = solicited_only;
	q->c.arms++;
	if (q->sem == EMU_CONSIDERATE && q->cons != q->prod) {
		/* mlx5: completions already past the consumer index fire now */
		q->armed = 0;
		q->c.considerate_events++;
		notify(q);
	}
	pthread_mutex_unlock(&q->lock);
	return 0;
}

/* ---- extended poll: ibv_start_poll / ibv_next_poll / ibv_end_poll ---------- */

static void
load_cur(struct emu_cq *q)
{
	q->cur = q->q[q->cons++ % q->size];
	q->ex.wr_id = q->cur.wr_id;
	q->ex.status = q->cur.status;
	q->c.polled++;
}

static int
emu_start_poll(struct ibv_cq_ex *ex, struct ibv_poll_cq_attr *attr)
{
	struct emu_cq *q = (struct emu_cq *)ex;

	(void)attr;
	pthread_mutex_lock(&q->lock);
	if (q->fail_poll > 0 || (q->in_error && q->cons == q->prod)) {
		if (q->fail_poll > 0)
			q->fail_poll--;
		pthread_mutex_unlock(&q->lock);
		return EIO; /* no end_poll follows a failed start_poll */
	}
	if (q->cons == q->prod) {
		pthread_mutex_unlock(&q->lock);
		return ENOENT;
	}
	load_cur(q);
	return 0; /* the lock is held until end_poll */
}

static int
emu_next_poll(struct ibv_cq_ex *ex)
{
	struct emu_cq *q = (struct emu_cq *)ex;

	if (q->cons == q->prod)
		return ENOENT;
	load_cur(q);
	return 0;
}

static void
emu_end_poll(struct ibv_cq_ex *ex)
{
	pthread_mutex_unlock(&((struct emu_cq *)ex)->lock);
}

static enum ibv_wc_opcode
emu_read_opcode(struct ibv_cq_ex *ex)
{
	return ((struct emu_cq *)ex)->cur.opcode;
}

static uint32_t
emu_read_vendor_err(struct ibv_cq_ex *ex)
{
	return ((struct emu_cq *)ex)->cur.vendor_err;
}

static uint32_t
emu_read_byte_len(struct ibv_cq_ex *ex)
{
	return ((struct emu_cq *)ex)->cur.byte_len;
}

static __be32
emu_read_imm_data(struct ibv_cq_ex *ex)
{
	return ((struct emu_cq *)ex)->cur.imm_data;
}

static uint32_t
emu_read_qp_num(struct ibv_cq_ex *ex)
{
	return ((struct emu_cq *)ex)->cur.qp_num;
}

static unsigned int
emu_read_wc_flags(struct ibv_cq_ex *ex)
{
	return ((struct emu_cq *)ex)->cur.wc_flags;
}

static uint32_t
emu_read_src_qp(struct ibv_cq_ex *ex)
{
	return ((struct emu_cq *)ex)->cur.qp_num;
}

/* ---- CQ lifetime ------------------------------------------------------------ */

static struct emu_cq *
cq_alloc(struct emu_ctx *x, uint32_t cqe, struct ibv_comp_channel *ch, void *cq_context,
	 enum emu_semantics sem)
{
	struct emu_cq *q = calloc(1, sizeof(*q));

	if (q == NULL)
		return NULL;
	q->size = cqe ? cqe : 1;
	q->q = calloc(q->size, sizeof(*q->q));
	if (q->q == NULL) {
		free(q);
		return NULL;
	}
	q->ctx = x;
	q->sem = sem;
	pthread_mutex_init(&q->lock, NULL);
	q->ex.context = &x->vctx.context;
	q->ex.channel = ch;
	q->ex.cq_context = cq_context;
	q->ex.cqe = (int)q->size;
	pthread_mutex_init(&q->ex.mutex, NULL);
	pthread_cond_init(&q->ex.cond, NULL);
	if (ch != NULL)
		ch->refcnt++;
	return q;
}

static struct ibv_cq_ex *
emu_create_cq_ex(struct ibv_context *ctx, struct ibv_cq_init_attr_ex *attr)
{
	struct emu_ctx *x = to_ctx(ctx);
	const uint64_t supported = IBV_WC_EX_WITH_BYTE_LEN | IBV_WC_EX_WITH_IMM |
				   IBV_WC_EX_WITH_QP_NUM | IBV_WC_EX_WITH_SRC_QP;
	struct emu_cq *q;

	if (attr->wc_flags & ~supported) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	if (attr->cqe == 0 || attr->cqe > (1u << 22)) {
		errno = EINVAL;
		return NULL;
	}
	q = cq_alloc(x, attr->cqe, attr->channel, attr->cq_context, x->sem);
	if (q == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	q->ex.start_poll = emu_start_poll;
	q->ex.next_poll = emu_next_poll;
	q->ex.end_poll = emu_end_poll;
	q->ex.read_opcode = emu_read_opcode;
	q->ex.read_vendor_err = emu_read_vendor_err;
	q->ex.read_byte_len = emu_read_byte_len;
	q->ex.read_imm_data = emu_read_imm_data;
	q->ex.read_qp_num = emu_read_qp_num;
	q->ex.read_wc_flags = emu_read_wc_flags;
	q->ex.read_src_qp = emu_read_src_qp;
	return &q->ex;
}

void
emu_cq_push_at_next_arm(struct ibv_cq *cq, const struct emu_cqe *e)
{
	struct emu_cq *q = to_emu(cq);

	pthread_mutex_lock(&q->lock);
	q->at_arm = *e;
	q->have_at_arm = true;
	pthread_mutex_unlock(&q->lock);
}

static int
emu_modify_cq(struct ibv_cq *cq, struct ibv_modify_cq_attr *attr)
{
	(void)cq;
	if (attr->attr_mask & ~IBV_CQ_ATTR_MODERATE)
		return EINVAL;
	return 0; /* moderation accepted; the emulator signals every completion */
}

struct ibv_cq *
emu_create_cq(struct ibv_context *ctx, int cqe, struct ibv_comp_channel *ch, enum emu_semantics sem)
{
	struct emu_cq *q = cq_alloc(to_ctx(ctx), (uint32_t)cqe, ch, NULL, sem);

	return q ? ibv_cq_ex_to_cq(&q->ex) : NULL;
}

int
emu_destroy_cq(struct ibv_cq *cq)
{
	struct emu_cq *q = to_emu(cq);
	struct timespec deadline;
	int rc = 0;

	/* The kernel's destroy waits until every event it reported was
	 * acknowledged; so does this one, for at most 2 s. */
	clock_gettime(CLOCK_REALTIME, &deadline);
	deadline.tv_sec += 2;
	pthread_mutex_lock(&cq->mutex);
	while (rc == 0 && cq->comp_events_completed != (uint32_t)q->c.events)
		rc = pthread_cond_timedwait(&cq->cond, &cq->mutex, &deadline);
	pthread_mutex_unlock(&cq->mutex);
	if (rc != 0) {
		__atomic_fetch_add(&destroy_hangs, 1, __ATOMIC_RELAXED);
		return EBUSY;
	}
	if (cq->channel != NULL)
		cq->channel->refcnt--;
	pthread_mutex_destroy(&q->lock);
	free(q->q);
	free(q);
	return 0;
}

uint64_t
emu_destroy_hangs(void)
{
	return __atomic_load_n(&destroy_hangs, __ATOMIC_RELAXED);
}

/* ---- channels ------------------------------------------------------------------ */

struct ibv_comp_channel *
emu_create_channel(struct ibv_context *ctx)
{
	struct emu_channel *c = calloc(1, sizeof(*c));
	int p[2];

	if (c == NULL)
		return NULL;
	if (pipe2(p, O_CLOEXEC) < 0) {
		free(c);
		return NULL;
	}
	fcntl(p[1], F_SETFL, O_NONBLOCK);
	c->ch.context = ctx;
	c->ch.fd = p[0];
	c->ch.refcnt = 0;
	c->wfd = p[1];
	return &c->ch;
}

int
emu_destroy_channel(struct ibv_comp_channel *ch)
{
	struct emu_channel *c = (struct emu_channel *)ch;

	if (ch->refcnt > 0)
		return EBUSY;
	close(c->ch.fd);
	close(c->wfd);
	free(c);
	return 0;
}

/* ---- the device ---------------------------------------------------------------- */

struct ibv_context *
emu_open(enum emu_semantics sem)
{
	struct emu_ctx *x;
	int cmd_fd = open("/dev/null", O_RDWR | O_CLOEXEC);

	if (cmd_fd < 0)
		return NULL;
#ifdef EMU_HAVE_VERBS_INIT_AND_ALLOC
	x = _verbs_init_and_alloc_context(&emu_dev.dev, cmd_fd, sizeof(*x),
					  (struct verbs_context *)offsetof(struct emu_ctx, vctx), 0);
	if (x == NULL)
		return NULL;
#else
	x = calloc(1, sizeof(*x));
	if (x == NULL)
		return NULL;
	x->vctx.context.device = &emu_dev.dev;
	x->vctx.context.cmd_fd = cmd_fd;
	x->vctx.context.abi_compat = __VERBS_ABI_IS_EXTENDED;
	x->vctx.sz = sizeof(x->vctx);
	pthread_mutex_init(&x->vctx.context.mutex, NULL);
#endif
	x->cmd_fd = cmd_fd;
	x->sem = sem;
	x->device = &emu_dev;
	if (pipe2(x->async_pipe, O_CLOEXEC) < 0)
		return NULL;
	x->vctx.context.async_fd = x->async_pipe[0];
	x->vctx.context.ops.poll_cq = emu_poll_cq;
	x->vctx.context.ops.req_notify_cq = emu_req_notify_cq;
	x->vctx.create_cq_ex = emu_create_cq_ex;
	x->vctx.modify_cq = emu_modify_cq;
	return &x->vctx.context;
}

void
emu_close(struct ibv_context *ctx)
{
	struct emu_ctx *x = to_ctx(ctx);

	close(x->async_pipe[0]);
	close(x->async_pipe[1]);
	close(x->cmd_fd);
	free(x->vctx.priv); /* allocated by libibverbs; NULL in the fallback */
	free(x);
}

void
emu_set_semantics(struct ibv_context *ctx, enum emu_semantics sem)
{
	to_ctx(ctx)->sem = sem;
}

/* ---- the "hardware" side ---------------------------------------------------------- */

int
emu_cq_push(struct ibv_cq *cq, const struct emu_cqe *e)
{
	struct emu_cq *q = to_emu(cq);

	pthread_mutex_lock(&q->lock);
	if (q->in_error || q->prod - q->cons == q->size) {
		bool first = !q->in_error;

		q->in_error = true;
		q->c.overruns++;
		if (first)
			async_event(q->ctx, (uint64_t)(uintptr_t)cq, IBV_EVENT_CQ_ERR);
		pthread_mutex_unlock(&q->lock);
		return -ENOSPC;
	}
	q->q[q->prod++ % q->size] = *e;
	q->c.pushed++;
	if (q->armed && (!q->armed_solicited || e->solicited)) {
		q->armed = 0;
		q->c.armed_at_push++;
		notify(q);
	}
	pthread_mutex_unlock(&q->lock);
	return 0;
}

void
emu_cq_spurious_event(struct ibv_cq *cq)
{
	struct emu_cq *q = to_emu(cq);

	pthread_mutex_lock(&q->lock);
	notify(q);
	pthread_mutex_unlock(&q->lock);
}

void
emu_cq_fail_arm(struct ibv_cq *cq, int times, int err)
{
	struct emu_cq *q = to_emu(cq);

	pthread_mutex_lock(&q->lock);
	q->fail_arm = times;
	q->fail_arm_err = err;
	pthread_mutex_unlock(&q->lock);
}

void
emu_cq_fail_poll(struct ibv_cq *cq, int times)
{
	struct emu_cq *q = to_emu(cq);

	pthread_mutex_lock(&q->lock);
	q->fail_poll = times;
	pthread_mutex_unlock(&q->lock);
}

void
emu_device_fatal(struct ibv_context *ctx)
{
	async_event(to_ctx(ctx), 0, IBV_EVENT_DEVICE_FATAL);
}

void
emu_port_event(struct ibv_context *ctx, enum ibv_event_type type, uint8_t port)
{
	async_event(to_ctx(ctx), port, type);
}

void
emu_disable_moderation(struct ibv_context *ctx)
{
	to_ctx(ctx)->vctx.modify_cq = NULL;
}

void
emu_cq_counters(struct ibv_cq *cq, struct emu_cq_counters *c)
{
	struct emu_cq *q = to_emu(cq);

	pthread_mutex_lock(&q->lock);
	*c = q->c;
	c->queued = (uint32_t)(q->prod - q->cons);
	pthread_mutex_unlock(&q->lock);
	pthread_mutex_lock(&cq->mutex);
	c->events_acked = cq->comp_events_completed;
	pthread_mutex_unlock(&cq->mutex);
}
