/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * net-ib against the emulated HCA, under one notification semantics
 * (--semantics strict|considerate; meson runs both). The driver runs
 * unchanged: the emulator stands behind libibverbs.
 */
#include <getopt.h>
#include <poll.h>
#include <pthread.h>

#include <evd.h>
#include <evd_ibv.h>
#include <evd_source.h>

#include "emu_ibv.h"
#include "evd_test.h"

static enum emu_semantics sem = EMU_STRICT;
static struct ibv_context *ctx;

#define MAX_SEEN 4096

struct sink {
	uint64_t n;
	uint64_t wr_id[MAX_SEEN];
	struct ibv_wc last_error;
	uint64_t errors;
};

static void
on_wc(struct evd_source *src, void *burst, uint16_t n, void *arg)
{
	struct sink *k = arg;
	struct ibv_wc *wc = burst;

	(void)src;
	for (uint16_t i = 0; i < n; i++) {
		if (k->n < MAX_SEEN)
			k->wr_id[k->n] = wc[i].wr_id;
		k->n++;
		if (wc[i].status != IBV_WC_SUCCESS) {
			k->errors++;
			k->last_error = wc[i];
		}
	}
}

struct errs {
	int n;
	int last;
	struct evd_source *src;
};

static void
on_error(struct evd_loop *loop, struct evd_source *src, int err, void *arg)
{
	struct errs *e = arg;

	(void)loop;
	e->n++;
	e->last = err;
	e->src = src;
}

static struct evd_loop *
mkloop(const char *policy, uint32_t max_sleep_us, struct errs *e)
{
	struct evd_loop_conf conf = {
		.name = "ibv", .policy = policy, .max_sleep_us = max_sleep_us,
		.poll_only_bound_us = 2000, .on_error = on_error, .on_error_arg = e,
	};
	struct evd_loop *loop;

	CHECK_EQ(evd_loop_create(&conf, &loop), 0);
	return loop;
}

static struct emu_cqe
cqe(uint64_t wr_id)
{
	return (struct emu_cqe){ .wr_id = wr_id, .status = IBV_WC_SUCCESS, .opcode = IBV_WC_RECV,
				 .byte_len = 64, .qp_num = 7 };
}

/* Events written by the emulator all acknowledged, nothing queued. */
static void
check_balanced(struct ibv_cq *cq)
{
	struct emu_cq_counters c;

	emu_cq_counters(cq, &c);
	CHECK_EQ(c.queued, 0);
	CHECK_EQ(c.events_acked, c.events);
}

static void
destroy(struct evd_loop *loop, struct evd_source *src)
{
	if (src->loop != NULL)
		CHECK_EQ(evd_loop_remove(loop, src), 0);
	CHECK_EQ(evd_source_destroy(src), 0);
	CHECK_EQ(emu_destroy_hangs(), 0);
}

/* ---- tests ------------------------------------------------------------- */

static void
test_errors(void)
{
	struct evd_ibv_cq_conf bad = { .wc_flags = IBV_WC_EX_WITH_COMPLETION_TIMESTAMP };
	struct evd_source *s = (void *)1;
	struct ibv_cq *cq = emu_create_cq(ctx, 16, NULL, sem);
	struct sink k = { 0 };

	CHECK_EQ(evd_ibv_cq_create(NULL, "x", NULL, on_wc, &k, &s), -EINVAL);
	CHECK(s == NULL);
	CHECK_EQ(evd_ibv_cq_create(ctx, "x", NULL, NULL, &k, &s), -EINVAL);
	CHECK_EQ(evd_ibv_cq_create(ctx, "x", &bad, on_wc, &k, &s), -EINVAL);
	CHECK_EQ(evd_ibv_cq_adopt(cq, "x", NULL, on_wc, &k, &s), -EINVAL); /* no channel */
	CHECK_EQ(evd_ibv_cq_adopt(NULL, "x", NULL, on_wc, &k, &s), -EINVAL);
	CHECK_EQ(evd_ibv_async_create(NULL, "a", on_wc, NULL, &s), -EINVAL);
	CHECK(evd_ibv_cq_get(NULL) == NULL);
	CHECK_EQ(emu_destroy_cq(cq), 0);
}

/* Completions arrive in bursts with their fields; an error completion is
 * delivered, with its status and vendor error, never swallowed. */
static void
delivery(bool adopt)
{
	struct errs e = { 0 };
	struct evd_loop *loop = mkloop("poll", 0, &e);
	struct ibv_comp_channel *ch = NULL;
	struct ibv_cq *legacy = NULL, *cq;
	struct evd_ibv_cq_stats st;
	struct evd_source *s;
	struct sink k = { 0 };
	struct emu_cqe bad = cqe(99);

	if (adopt) {
		ch = emu_create_channel(ctx);
		legacy = emu_create_cq(ctx, 64, ch, sem);
		CHECK_EQ(evd_ibv_cq_adopt(legacy, "adopted", NULL, on_wc, &k, &s), 0);
	} else {
		CHECK_EQ(evd_ibv_cq_create(ctx, "created", NULL, on_wc, &k, &s), 0);
	}
	cq = evd_ibv_cq_get(s);
	CHECK(cq != NULL);
	CHECK(!adopt || cq == legacy);
	CHECK_EQ(evd_loop_add(loop, s), 0);
	for (uint64_t i = 0; i < 40; i++)
		CHECK_EQ(emu_cq_push(cq, &(struct emu_cqe){ .wr_id = i, .opcode = IBV_WC_RECV_RDMA_WITH_IMM,
							  .byte_len = (uint32_t)i, .imm_data = 5,
							  .wc_flags = IBV_WC_WITH_IMM }), 0);
	bad.status = IBV_WC_REM_ACCESS_ERR;
	bad.vendor_err = 0x88;
	CHECK_EQ(emu_cq_push(cq, &bad), 0);
	CHECK_EQ(evd_loop_step(loop), 32); /* the loop's burst */
	CHECK_EQ(evd_loop_step(loop), 9);
	CHECK_EQ(k.n, 41);
	for (uint64_t i = 0; i < 40; i++)
		CHECK_EQ(k.wr_id[i], i);
	CHECK_EQ(k.errors, 1);
	CHECK_EQ(k.last_error.wr_id, 99);
	CHECK_EQ(k.last_error.status, IBV_WC_REM_ACCESS_ERR);
	CHECK_EQ(k.last_error.vendor_err, 0x88);
	CHECK_EQ(evd_ibv_cq_stats_get(s, &st), 0);
	CHECK_EQ(st.completions, 41);
	CHECK_EQ(st.error_completions, 1);
	CHECK_EQ(e.n, 0);
	destroy(loop, s);
	if (adopt) {
		check_balanced(legacy);
		CHECK_EQ(emu_destroy_cq(legacy), 0);
		CHECK_EQ(emu_destroy_channel(ch), 0);
	}
	CHECK_EQ(evd_loop_destroy(loop), 0);
}

static struct ibv_wc seen_wc;

static void
keep_wc(struct evd_source *src, void *burst, uint16_t n, void *arg)
{
	on_wc(src, burst, n, arg);
	seen_wc = ((struct ibv_wc *)burst)[n - 1];
}

/* The fields of a successful completion on a created CQ (cq_ex reads). */
static void
test_fields(void)
{
	struct errs e = { 0 };
	struct evd_loop *loop = mkloop("poll", 0, &e);
	struct evd_source *s;
	struct sink k = { 0 };
	struct evd_ibv_cq_conf conf = { .wc_flags = IBV_WC_EX_WITH_SRC_QP };

	CHECK_EQ(evd_ibv_cq_create(ctx, "f", &conf, keep_wc, &k, &s), 0);
	CHECK_EQ(evd_loop_add(loop, s), 0);
	CHECK_EQ(emu_cq_push(evd_ibv_cq_get(s), &(struct emu_cqe){ .wr_id = 3, .opcode = IBV_WC_RECV_RDMA_WITH_IMM,
							       .byte_len = 4096, .qp_num = 11, .imm_data = 0x1234,
							       .wc_flags = IBV_WC_WITH_IMM }), 0);
	CHECK_EQ(evd_loop_step(loop), 1);
	CHECK_EQ(seen_wc.wr_id, 3);
	CHECK_EQ(seen_wc.status, IBV_WC_SUCCESS);
	CHECK_EQ(seen_wc.opcode, IBV_WC_RECV_RDMA_WITH_IMM);
	CHECK_EQ(seen_wc.byte_len, 4096);
	CHECK_EQ(seen_wc.qp_num, 11);
	CHECK_EQ(seen_wc.src_qp, 11);
	CHECK_EQ(seen_wc.imm_data, 0x1234);
	CHECK(seen_wc.wc_flags & IBV_WC_WITH_IMM);
	destroy(loop, s);
	CHECK_EQ(evd_loop_destroy(loop), 0);
}

/* The lost-wakeup race on purpose: a completion lands after the loop's last
 * empty poll, just before the arm. Strict: no event will ever come; the
 * re-poll delivers it, no sleep, no timeout. Considerate: the arm raises an
 * event too; the loop consumes it later (a spurious wakeup), and it balances. */
static void
test_race(void)
{
	struct errs e = { 0 };
	struct evd_loop *loop = mkloop("intr", 5 * 1000 * 1000, &e);
	struct evd_loop_stats st;
	struct emu_cq_counters c;
	struct evd_source *s;
	struct sink k = { 0 };
	struct emu_cqe one = cqe(42);
	struct ibv_cq *cq;

	CHECK_EQ(evd_ibv_cq_create(ctx, "race", NULL, on_wc, &k, &s), 0);
	cq = evd_ibv_cq_get(s);
	CHECK_EQ(evd_loop_add(loop, s), 0);
	emu_cq_push_at_next_arm(cq, &one);
	CHECK_EQ(evd_loop_step(loop), 1); /* poll (empty), arm (lands), re-poll */
	CHECK_EQ(k.n, 1);
	CHECK_EQ(k.wr_id[0], 42);
	CHECK_EQ(evd_loop_stats_get(loop, &st), 0);
	CHECK_EQ(st.repoll_hits, 1);
	CHECK_EQ(st.sleeps, 0);
	CHECK_EQ(st.sleep_timeouts, 0);
	CHECK_EQ(st.lost_wakeups, 0);
	emu_cq_counters(cq, &c);
	CHECK_EQ(c.events, sem == EMU_STRICT ? 0 : 1);
	if (sem == EMU_CONSIDERATE) {
		/* the event raised at arm time wakes the next sleep at once */
		CHECK_EQ(evd_loop_step(loop), 0);
		CHECK_EQ(evd_loop_stats_get(loop, &st), 0);
		CHECK_EQ(st.wakeups, 1);
		CHECK_EQ(st.spurious_wakeups, 1);
		CHECK_EQ(st.sleep_timeouts, 0);
	}
	destroy(loop, s);
	CHECK_EQ(evd_loop_destroy(loop), 0);
}

struct pusher {
	struct evd_loop *loop;
	struct ibv_cq *cq;
	uint64_t wr_id;
	int spurious;   /* raise a spurious event instead of a completion */
	int fault_fd, fault_err;
};

/* Waits until the loop sleeps, then acts on the CQ like the hardware. */
static void *
while_asleep(void *arg)
{
	struct pusher *p = arg;
	struct evd_loop_stats st;
	struct emu_cqe one = cqe(p->wr_id);

	do {
		test_sleep_us(500);
		CHECK_EQ(evd_loop_stats_get(p->loop, &st), 0);
	} while (st.mode != EVD_MODE_SLEEP);
	test_sleep_us(3000);
	if (p->fault_fd >= 0)
		emu_read_fault(p->fault_fd, p->fault_err, 1);
	if (p->spurious)
		emu_cq_spurious_event(p->cq);
	else
		CHECK_EQ(emu_cq_push(p->cq, &one), 0);
	return NULL;
}

static void
run_while_asleep(struct pusher *p)
{
	pthread_t th;

	CHECK_EQ(pthread_create(&th, NULL, while_asleep, p), 0);
	while (pthread_tryjoin_np(th, NULL) != 0)
		CHECK(evd_loop_step(p->loop) >= 0);
}

/* Sleep and wake: armed, asleep on the channel, woken by the completion,
 * event consumed with ibv_get_cq_event and acknowledged. */
static void
test_sleep_wake(void)
{
	struct errs e = { 0 };
	struct evd_loop *loop = mkloop("intr", 5 * 1000 * 1000, &e);
	struct evd_ibv_cq_conf conf = { .ack_batch = 1 };
	struct evd_loop_stats st;
	struct evd_ibv_cq_stats cs;
	struct evd_source *s;
	struct sink k = { 0 };
	struct pusher p;

	CHECK_EQ(evd_ibv_cq_create(ctx, "sleepy", &conf, on_wc, &k, &s), 0);
	CHECK_EQ(evd_loop_add(loop, s), 0);
	p = (struct pusher){ .loop = loop, .cq = evd_ibv_cq_get(s), .wr_id = 7, .fault_fd = -1 };
	run_while_asleep(&p);
	while (k.n == 0)
		CHECK(evd_loop_step(loop) >= 0);
	CHECK_EQ(k.wr_id[0], 7);
	CHECK_EQ(evd_loop_stats_get(loop, &st), 0);
	CHECK(st.wakeups >= 1);
	CHECK_EQ(st.sleep_timeouts, 0);
	CHECK_EQ(st.lost_wakeups, 0);
	CHECK_EQ(evd_ibv_cq_stats_get(s, &cs), 0);
	CHECK_EQ(cs.events, 1);
	CHECK_EQ(cs.events_acked, 1);
	check_balanced(p.cq);
	destroy(loop, s);
	CHECK_EQ(evd_loop_destroy(loop), 0);
}

/* A spurious event (nothing in the CQ) is consumed and counted. */
static void
test_spurious(void)
{
	struct errs e = { 0 };
	struct evd_loop *loop = mkloop("intr", 5 * 1000 * 1000, &e);
	struct evd_loop_stats st;
	struct evd_source *s;
	struct sink k = { 0 };
	struct pusher p;

	CHECK_EQ(evd_ibv_cq_create(ctx, "spurious", NULL, on_wc, &k, &s), 0);
	CHECK_EQ(evd_loop_add(loop, s), 0);
	p = (struct pusher){ .loop = loop, .cq = evd_ibv_cq_get(s), .spurious = 1, .fault_fd = -1 };
	run_while_asleep(&p);
	CHECK_EQ(evd_loop_stats_get(loop, &st), 0);
	CHECK_EQ(st.wakeups, 1);
	CHECK_EQ(st.spurious_wakeups, 1);
	CHECK_EQ(k.n, 0);
	CHECK_EQ(e.n, 0);
	destroy(loop, s); /* its wait for every event's ack did not time out */
	CHECK_EQ(evd_loop_destroy(loop), 0);
}

int
main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "semantics", required_argument, NULL, 's' },
		{ NULL, 0, NULL, 0 },
	};
	int o;

	while ((o = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		if (o != 's')
			return 2;
		if (strcmp(optarg, "strict") == 0)
			sem = EMU_STRICT;
		else if (strcmp(optarg, "considerate") == 0)
			sem = EMU_CONSIDERATE;
		else
			return 2;
	}
	printf("# semantics: %s\n", sem == EMU_STRICT ? "strict" : "considerate");
	ctx = emu_open(sem);
	CHECK(ctx != NULL);
	TEST(test_errors);
	delivery(false);
	printf("ok delivery (created CQ)\n");
	delivery(true);
	printf("ok delivery (adopted CQ)\n");
	TEST(test_fields);
	TEST(test_race);
	TEST(test_sleep_wake);
	TEST(test_spurious);
	emu_close(ctx);
	return 0;
}
