/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * --source verbs-emu: a CQ created by the net-ib driver on the emulated HCA
 * (emu/), strict IBTA notification by default, --semantics considerate
 * for mlx5's. The producer plays the hardware: it adds completions whose
 * wr_id is the TSC stamp, never more than the CQ holds.
 */
#include <rte_cycles.h>
#include <rte_pause.h>

#include <evd_ibv.h>

#include "emu_ibv.h"
#include "report.h"
#include "source.h"
#include "testevd.h"

#define CQE 4096

struct vemu {
	struct ibv_context *ctx;
	struct evd_source *cq;
	struct ibv_cq *ibcq;
};

static void
consume(struct evd_source *src, void *burst, uint16_t n, void *arg)
{
	struct ibv_wc *wc = burst;
	uint64_t now = rte_rdtsc();

	(void)src;
	for (uint16_t i = 0; i < n; i++)
		run_delivered(arg, wc[i].wr_id, now);
}

static int
vemu_open(struct run *r)
{
	struct evd_ibv_cq_conf conf = { .cqe = CQE };
	struct vemu *v = calloc(1, sizeof(*v));
	int rc;

	if (v == NULL)
		return -ENOMEM;
	v->ctx = emu_open(strcmp(r->o->semantics, "considerate") == 0 ? EMU_CONSIDERATE : EMU_STRICT);
	if (v->ctx == NULL) {
		free(v);
		return -ENODEV;
	}
	rc = evd_ibv_cq_create(v->ctx, "emu-cq", &conf, consume, r, &v->cq);
	if (rc == 0)
		rc = evd_loop_add(r->loop, v->cq);
	if (rc < 0) {
		if (v->cq != NULL)
			evd_source_destroy(v->cq);
		emu_close(v->ctx);
		free(v);
		return rc;
	}
	v->ibcq = evd_ibv_cq_get(v->cq);
	r->priv = v;
	return 0;
}

static void
vemu_post(struct run *r, uint32_t n, uint64_t stamp)
{
	struct vemu *v = r->priv;
	struct emu_cqe e = { .wr_id = stamp, .opcode = IBV_WC_RECV, .byte_len = 64 };

	/* A real HCA would overrun the CQ; the emulated one must not lose
	 * what the report counts as sent. */
	while (run_in_flight(r) + n > CQE)
		rte_pause();
	for (uint32_t i = 0; i < n; i++)
		if (emu_cq_push(v->ibcq, &e) < 0)
			abort(); /* flow control above makes this impossible */
}

static void
vemu_close(struct run *r, struct result *res)
{
	struct vemu *v = r->priv;

	(void)res;
	evd_loop_remove(r->loop, v->cq);
	evd_source_destroy(v->cq);
	if (emu_destroy_hangs() != 0)
		fprintf(stderr, "testevd: an emulated CQ's destroy waited for unacknowledged events\n");
	emu_close(v->ctx);
	free(v);
}

const struct source_kind source_verbs_emu = {
	.name = "verbs-emu",
	.open = vemu_open,
	.post = vemu_post,
	.close = vemu_close,
};
