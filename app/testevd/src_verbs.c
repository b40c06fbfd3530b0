/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * --source verbs --device NAME: a real RDMA device. One RC QP connected to
 * itself; its CQ is created by the net-ib driver. The producer posts SENDs
 * whose payload is the TSC stamp; the loop receives them (RECV completions),
 * reads the stamp and reposts the receive buffer. At most WINDOW messages
 * are in flight.
 */
#include <stdlib.h>
#include <string.h>

#include <rte_cycles.h>
#include <rte_pause.h>

#include <evd_ibv.h>
#include <evd_source.h>

#include "ibv_loopback.h"
#include "report.h"
#include "source.h"
#include "testevd.h"

#define SLOTS 512
#define WINDOW 256
#define MSG 64

struct vhw {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_mr *mr;
	struct ibv_qp *qp;
	struct evd_source *cq;
	uint64_t next_send; /* producer */
	uint64_t errors;    /* loop thread */
	char buf[2 * SLOTS * MSG];
};

static char *
send_slot(struct vhw *v, uint64_t i)
{
	return v->buf + (i % SLOTS) * MSG;
}

static char *
recv_slot(struct vhw *v, uint64_t i)
{
	return v->buf + (SLOTS + i) * MSG;
}

static int
post_recv(struct vhw *v, uint64_t slot)
{
	struct ibv_sge sge = { (uintptr_t)recv_slot(v, slot), MSG, v->mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = slot, .sg_list = &sge, .num_sge = 1 }, *bad;

	return ibv_post_recv(v->qp, &wr, &bad);
}

static void
consume(struct evd_source *src, void *burst, uint16_t n, void *arg)
{
	struct run *r = arg;
	struct vhw *v = r->priv;
	struct ibv_wc *wc = burst;
	uint64_t now = rte_rdtsc();

	(void)src;
	for (uint16_t i = 0; i < n; i++) {
		uint64_t stamp;

		if (wc[i].status != IBV_WC_SUCCESS) {
			if (v->errors++ == 0)
				fprintf(stderr, "testevd: completion error: %s\n",
					ibv_wc_status_str(wc[i].status));
			continue;
		}
		if (wc[i].opcode != IBV_WC_RECV)
			continue;
		memcpy(&stamp, recv_slot(v, wc[i].wr_id), sizeof(stamp));
		run_delivered(r, stamp, now);
		if (post_recv(v, wc[i].wr_id) != 0)
			v->errors++;
	}
}

static struct ibv_context *
open_by_name(const char *name)
{
	struct ibv_context *ctx = NULL;
	struct ibv_device **list;
	int n = 0;

	list = ibv_get_device_list(&n);
	if (list == NULL)
		return NULL;
	for (int i = 0; i < n && ctx == NULL; i++)
		if (strcmp(ibv_get_device_name(list[i]), name) == 0)
			ctx = ibv_open_device(list[i]);
	ibv_free_device_list(list);
	return ctx;
}

static void vhw_close(struct run *r, struct result *res);

static int
vhw_open(struct run *r)
{
	struct vhw *v = calloc(1, sizeof(*v));
	struct ibv_qp_init_attr qa = {
		.cap = { .max_send_wr = SLOTS, .max_recv_wr = SLOTS, .max_send_sge = 1,
			 .max_recv_sge = 1 },
		.qp_type = IBV_QPT_RC,
	};
	struct evd_ibv_cq_conf conf = { .cqe = 2 * SLOTS };
	int rc;

	if (v == NULL)
		return -ENOMEM;
	r->priv = v;
	v->ctx = open_by_name(r->o->device);
	if (v->ctx == NULL) {
		fprintf(stderr, "testevd: no RDMA device named '%s' (see ibv_devices)\n", r->o->device);
		free(v);
		return -ENODEV;
	}
	rc = -ENOMEM;
	v->pd = ibv_alloc_pd(v->ctx);
	if (v->pd != NULL)
		v->mr = ibv_reg_mr(v->pd, v->buf, sizeof(v->buf), IBV_ACCESS_LOCAL_WRITE);
	if (v->mr != NULL)
		rc = evd_ibv_cq_create(v->ctx, "qp-cq", &conf, consume, r, &v->cq);
	if (rc == 0) {
		qa.send_cq = qa.recv_cq = evd_ibv_cq_get(v->cq);
		v->qp = ibv_create_qp(v->pd, &qa);
		rc = v->qp != NULL ? ibv_loopback_connect(v->ctx, v->qp, 1) : -EIO;
	}
	for (uint64_t i = 0; rc == 0 && i < SLOTS; i++)
		rc = post_recv(v, i) == 0 ? 0 : -EIO;
	if (rc == 0)
		rc = evd_loop_add(r->loop, v->cq);
	if (rc < 0) {
		fprintf(stderr, "testevd: setting up a loopback QP on %s failed: %s\n", r->o->device,
			strerror(-rc));
		vhw_close(r, NULL);
	}
	return rc;
}

static void
vhw_post(struct run *r, uint32_t n, uint64_t stamp)
{
	struct vhw *v = r->priv;

	while (run_in_flight(r) + n > WINDOW)
		rte_pause();
	for (uint32_t i = 0; i < n; i++) {
		char *b = send_slot(v, v->next_send);
		struct ibv_sge sge = { (uintptr_t)b, MSG, v->mr->lkey };
		struct ibv_send_wr wr = { .wr_id = v->next_send, .sg_list = &sge, .num_sge = 1,
					  .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED },
				   *bad;

		memcpy(b, &stamp, sizeof(stamp));
		while (ibv_post_send(v->qp, &wr, &bad) != 0)
			rte_pause(); /* send queue full: wait for completions */
		v->next_send++;
	}
}

static void
vhw_close(struct run *r, struct result *res)
{
	struct vhw *v = r->priv;

	if (res != NULL && v->errors != 0)
		res->errors += v->errors;
	if (v->qp != NULL)
		ibv_destroy_qp(v->qp);
	if (v->cq != NULL) {
		if (v->cq->loop != NULL)
			evd_loop_remove(r->loop, v->cq);
		evd_source_destroy(v->cq);
	}
	if (v->mr != NULL)
		ibv_dereg_mr(v->mr);
	if (v->pd != NULL)
		ibv_dealloc_pd(v->pd);
	ibv_close_device(v->ctx);
	free(v);
	r->priv = NULL;
}

const struct source_kind source_verbs = {
	.name = "verbs",
	.open = vhw_open,
	.post = vhw_post,
	.close = vhw_close,
};
