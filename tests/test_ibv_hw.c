/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * net-ib on a real RDMA device: a loopback RC QP pair (one QP connected to
 * itself) on the first device, its CQ created by the driver, 100 messages
 * sent with idle gaps so that the loop sleeps on the completion channel
 * between them. Exits 77 (skipped) when the machine has no RDMA device.
 */
#include <sys/stat.h>
#include <unistd.h>

#include <evd.h>
#include <evd_ibv.h>
#include <evd_source.h>

#include "evd_test.h"
#include "ibv_loopback.h"

#define MSGS 100
#define MSG_SIZE 64

struct hw {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_mr *mr;
	struct ibv_qp *qp;
	struct evd_source *cq;
	char buf[2 * MSG_SIZE];
	uint64_t sends, recvs, errors;
};

static void
on_wc(struct evd_source *src, void *burst, uint16_t n, void *arg)
{
	struct hw *h = arg;
	struct ibv_wc *wc = burst;

	(void)src;
	for (uint16_t i = 0; i < n; i++) {
		if (wc[i].status != IBV_WC_SUCCESS) {
			fprintf(stderr, "completion error: %s\n", ibv_wc_status_str(wc[i].status));
			h->errors++;
		} else if (wc[i].opcode == IBV_WC_SEND) {
			h->sends++;
		} else if (wc[i].opcode == IBV_WC_RECV) {
			h->recvs++;
		}
	}
}

static int
post_recv(struct hw *h)
{
	struct ibv_sge sge = { (uintptr_t)h->buf + MSG_SIZE, MSG_SIZE, h->mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = 2, .sg_list = &sge, .num_sge = 1 }, *bad;

	return ibv_post_recv(h->qp, &wr, &bad);
}

static int
post_send(struct hw *h)
{
	struct ibv_sge sge = { (uintptr_t)h->buf, MSG_SIZE, h->mr->lkey };
	struct ibv_send_wr wr = { .wr_id = 1, .sg_list = &sge, .num_sge = 1,
				  .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED }, *bad;

	return ibv_post_send(h->qp, &wr, &bad);
}

int
main(void)
{
	struct evd_loop_conf conf = { .name = "hw", .policy = "intr", .max_sleep_us = 5000000 };
	struct ibv_device **list;
	struct evd_loop *loop;
	struct evd_loop_stats st;
	struct hw h = { 0 };
	struct stat sb;
	int n = 0;

	if (stat("/dev/infiniband", &sb) != 0) {
		printf("SKIP: no RDMA device on this machine (/dev/infiniband is absent); "
		       "the emulated-HCA tests cover the driver\n");
		return 77;
	}
	list = ibv_get_device_list(&n);
	if (list == NULL || n == 0) {
		printf("SKIP: /dev/infiniband exists but libibverbs lists no device\n");
		return 77;
	}
	printf("# device %s\n", ibv_get_device_name(list[0]));
	h.ctx = ibv_open_device(list[0]);
	CHECK(h.ctx != NULL);
	h.pd = ibv_alloc_pd(h.ctx);
	CHECK(h.pd != NULL);
	h.mr = ibv_reg_mr(h.pd, h.buf, sizeof(h.buf), IBV_ACCESS_LOCAL_WRITE);
	CHECK(h.mr != NULL);
	CHECK_EQ(evd_ibv_cq_create(h.ctx, "hw-cq", NULL, on_wc, &h, &h.cq), 0);
	{
		struct ibv_qp_init_attr qa = {
			.send_cq = evd_ibv_cq_get(h.cq), .recv_cq = evd_ibv_cq_get(h.cq),
			.cap = { .max_send_wr = 16, .max_recv_wr = 16, .max_send_sge = 1,
				 .max_recv_sge = 1 },
			.qp_type = IBV_QPT_RC,
		};

		h.qp = ibv_create_qp(h.pd, &qa);
		CHECK(h.qp != NULL);
	}
	CHECK_EQ(ibv_loopback_connect(h.ctx, h.qp, 1), 0);
	CHECK_EQ(evd_loop_create(&conf, &loop), 0);
	CHECK_EQ(evd_loop_add(loop, h.cq), 0);
	for (int i = 0; i < MSGS; i++) {
		uint64_t want = h.recvs + 1;

		CHECK_EQ(post_recv(&h), 0);
		CHECK_EQ(post_send(&h), 0);
		while (h.recvs < want && h.errors == 0)
			CHECK(evd_loop_step(loop) >= 0);
		test_sleep_us(2000); /* an idle gap: the next step sleeps */
	}
	CHECK_EQ(evd_loop_stats_get(loop, &st), 0);
	printf("sends %" PRIu64 " recvs %" PRIu64 " sleeps %" PRIu64 " wakeups %" PRIu64
	       " repoll_hits %" PRIu64 " timeouts %" PRIu64 " lost %" PRIu64 "\n", h.sends, h.recvs,
	       st.sleeps, st.wakeups, st.repoll_hits, st.sleep_timeouts, st.lost_wakeups);
	CHECK_EQ(h.errors, 0);
	CHECK_EQ(h.recvs, MSGS);
	CHECK_EQ(h.sends, MSGS);
	CHECK_EQ(st.lost_wakeups, 0);
	CHECK(st.sleeps > 0);
	CHECK_EQ(ibv_destroy_qp(h.qp), 0);
	CHECK_EQ(evd_loop_remove(loop, h.cq), 0);
	CHECK_EQ(evd_source_destroy(h.cq), 0);
	CHECK_EQ(evd_loop_destroy(loop), 0);
	CHECK_EQ(ibv_dereg_mr(h.mr), 0);
	CHECK_EQ(ibv_dealloc_pd(h.pd), 0);
	CHECK_EQ(ibv_close_device(h.ctx), 0);
	ibv_free_device_list(list);
	printf("ok\n");
	return 0;
}
