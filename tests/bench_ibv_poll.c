/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Per-completion cost of net-ib's poll path against a hand-written
 * ibv_start_poll loop, on the same emulated CQ. Run under
 * valgrind --tool=callgrind --toggle-collect=drain (scripts/bench-ibv does):
 * only drain() is counted, so the emulator's pushes are not.
 *
 *   bench_ibv_poll driver|hand [completions]
 *
 * driver: evd_loop_step() on a loop with the CQ source (policy poll), the
 *         handler receives struct ibv_wc bursts of 32.
 * hand:   ibv_start_poll/next/end reading the same fields into the same
 *         struct ibv_wc array, bursts of 32, then the same handler.
 */
#include <evd.h>
#include <evd_ibv.h>

#include "emu_ibv.h"
#include "evd_test.h"

#define BURST 32

static uint64_t sink_n, sink_sum;

static void __attribute__((noinline))
handler(struct evd_source *src, void *burst, uint16_t n, void *arg)
{
	struct ibv_wc *wc = burst;

	(void)src;
	(void)arg;
	for (uint16_t i = 0; i < n; i++)
		sink_sum += wc[i].wr_id + wc[i].byte_len;
	sink_n += n;
}

/* The usual application loop, by hand. */
static int __attribute__((noinline))
hand_poll(struct ibv_cq_ex *cq)
{
	struct ibv_poll_cq_attr attr = { 0 };
	struct ibv_wc wc[BURST];
	uint16_t n = 0;
	int rc = ibv_start_poll(cq, &attr);

	if (rc != 0)
		return 0;
	do {
		struct ibv_wc *w = &wc[n++];

		w->wr_id = cq->wr_id;
		w->status = cq->status;
		w->qp_num = ibv_wc_read_qp_num(cq);
		if (w->status == IBV_WC_SUCCESS) {
			w->opcode = ibv_wc_read_opcode(cq);
			w->byte_len = ibv_wc_read_byte_len(cq);
			w->wc_flags = ibv_wc_read_wc_flags(cq);
			w->imm_data = (w->wc_flags & IBV_WC_WITH_IMM) ? ibv_wc_read_imm_data(cq) : 0;
		} else {
			w->vendor_err = ibv_wc_read_vendor_err(cq);
		}
		if (n == BURST)
			break;
		rc = ibv_next_poll(cq);
	} while (rc == 0);
	ibv_end_poll(cq);
	handler(NULL, wc, n, NULL);
	return n;
}

static void __attribute__((noinline))
drain(struct evd_loop *loop, struct ibv_cq_ex *cq, uint64_t want)
{
	if (loop != NULL)
		while (sink_n < want)
			evd_loop_step(loop);
	else
		while (sink_n < want)
			hand_poll(cq);
}

int
main(int argc, char **argv)
{
	struct evd_loop_conf conf = { .policy = "poll", .burst = BURST };
	uint64_t total = argc > 2 ? strtoull(argv[2], NULL, 10) : 100000;
	bool driver = argc > 1 && strcmp(argv[1], "driver") == 0;
	struct evd_ibv_cq_conf cc = { .cqe = 4096 };
	struct ibv_context *ctx = emu_open(EMU_STRICT);
	struct evd_loop *loop = NULL;
	struct evd_source *src;
	struct ibv_cq *cq;

	if (argc < 2 || (!driver && strcmp(argv[1], "hand") != 0)) {
		fprintf(stderr, "usage: %s driver|hand [completions]\n", argv[0]);
		return 2;
	}
	CHECK(ctx != NULL);
	CHECK_EQ(evd_ibv_cq_create(ctx, "bench", &cc, handler, NULL, &src), 0);
	cq = evd_ibv_cq_get(src);
	if (driver) {
		CHECK_EQ(evd_loop_create(&conf, &loop), 0);
		CHECK_EQ(evd_loop_add(loop, src), 0);
	}
	for (uint64_t done = 0; done < total;) {
		uint64_t chunk = total - done < 4096 ? total - done : 4096;

		for (uint64_t i = 0; i < chunk; i++)
			CHECK_EQ(emu_cq_push(cq, &(struct emu_cqe){ .wr_id = done + i, .byte_len = 64,
								  .opcode = IBV_WC_RECV }), 0);
		done += chunk;
		drain(loop, (struct ibv_cq_ex *)cq, done);
	}
	printf("%s: %" PRIu64 " completions (checksum %" PRIu64 ")\n", argv[1], sink_n, sink_sum);
	CHECK_EQ(sink_n, total);
	if (loop != NULL) {
		CHECK_EQ(evd_loop_remove(loop, src), 0);
		CHECK_EQ(evd_loop_destroy(loop), 0);
	}
	CHECK_EQ(evd_source_destroy(src), 0);
	emu_close(ctx);
	return 0;
}
