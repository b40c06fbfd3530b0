/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * net-ib against the emulated HCA, under one notification semantics
 * (--semantics strict|considerate; meson runs both). The driver runs
 * unchanged: the emulator stands behind libibverbs.
 */
#include <getopt.h>
#include <poll.h>
#include <pthread.h>

#include <rte_log.h>

#include <evd.h>
#include <evd_ibv.h>
#include <evd_source.h>

#include "emu_ibv.h"
#include "emu_read_fault.h"
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
	int nodev;
	struct evd_source *src;
};

static void
on_error(struct evd_loop *loop, struct evd_source *src, int err, void *arg)
{
	struct errs *e = arg;

	(void)loop;
	e->n++;
	e->last = err;
	e->nodev += err == -ENODEV;
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

/* Each bad input gets exactly one line of the driver's own (another
 * library's are not counted), which names the argument. */
#define DRIVER_LOGGED(call, want_rc, want_log) CHECK_LOGGED(call, want_rc, "EVD_IBV: ", want_log)

/* Each bad argument of each function: its errno (NULL for evd_ibv_cq_get)
 * and one log line naming it, with its value where it has one. */
static void
test_bad_input(void)
{
	struct evd_ibv_cq_conf flags = { .wc_flags = IBV_WC_EX_WITH_COMPLETION_TIMESTAMP };
	struct evd_ibv_cq_conf big = { .cqe = UINT32_MAX };
	struct evd_ibv_cq_conf adopt_flags = { .wc_flags = IBV_WC_EX_WITH_SRC_QP };
	struct ibv_context no_async = { .async_fd = -1 };
	struct ibv_comp_channel *ch = emu_create_channel(ctx);
	struct ibv_cq *bare = emu_create_cq(ctx, 16, NULL, sem);
	struct ibv_cq *cq = emu_create_cq(ctx, 16, ch, sem);
	struct evd_source *s = (void *)1, *ring, *as, *as2;
	struct evd_ibv_cq_stats st;
	struct sink k = { 0 };

	CHECK(ch != NULL && bare != NULL && cq != NULL);
	DRIVER_LOGGED(evd_ibv_cq_create(ctx, "x", NULL, on_wc, &k, NULL), -EINVAL, "out is NULL");
	DRIVER_LOGGED(evd_ibv_cq_create(NULL, "x", NULL, on_wc, &k, &s), -EINVAL, "ctx is NULL");
	CHECK(s == NULL);
	DRIVER_LOGGED(evd_ibv_cq_create(ctx, "x", NULL, NULL, &k, &s), -EINVAL, "handler is NULL");
	DRIVER_LOGGED(evd_ibv_cq_create(ctx, "x", &flags, on_wc, &k, &s), -EINVAL,
		     "conf->wc_flags 0x");
	DRIVER_LOGGED(evd_ibv_cq_create(ctx, "x", &big, on_wc, &k, &s), -EINVAL,
		     "conf->cqe 4294967295");

	DRIVER_LOGGED(evd_ibv_cq_adopt(cq, "x", NULL, on_wc, &k, NULL), -EINVAL, "out is NULL");
	DRIVER_LOGGED(evd_ibv_cq_adopt(NULL, "x", NULL, on_wc, &k, &s), -EINVAL, "cq is NULL");
	DRIVER_LOGGED(evd_ibv_cq_adopt(cq, "x", NULL, NULL, &k, &s), -EINVAL, "handler is NULL");
	DRIVER_LOGGED(evd_ibv_cq_adopt(bare, "x", NULL, on_wc, &k, &s), -EINVAL,
		     "has no completion channel");
	DRIVER_LOGGED(evd_ibv_cq_adopt(cq, "x", &adopt_flags, on_wc, &k, &s), -EINVAL,
		     "conf->wc_flags 0x");
	CHECK(s == NULL);

	DRIVER_LOGGED(evd_ibv_async_create(ctx, "a", on_wc, NULL, NULL), -EINVAL, "out is NULL");
	DRIVER_LOGGED(evd_ibv_async_create(NULL, "a", on_wc, NULL, &s), -EINVAL, "ctx is NULL");
	DRIVER_LOGGED(evd_ibv_async_create(ctx, "a", NULL, NULL, &s), -EINVAL, "handler is NULL");
	DRIVER_LOGGED(evd_ibv_async_create(&no_async, "a", on_wc, NULL, &s), -EINVAL,
		     "ctx->async_fd -1");
	CHECK_EQ(evd_ibv_async_create(ctx, "a", on_wc, NULL, &as), 0);
	DRIVER_LOGGED(evd_ibv_async_create(ctx, "a2", on_wc, NULL, &as2), -EBUSY,
		     "has an async source already");
	CHECK(as2 == NULL);

	DRIVER_LOGGED(evd_ibv_cq_get(NULL) == NULL, true, "src is NULL");
	DRIVER_LOGGED(evd_ibv_cq_get(as) == NULL, true, "src a is not a CQ source");
	DRIVER_LOGGED(evd_ibv_cq_stats_get(NULL, &st), -EINVAL, "src is NULL");
	DRIVER_LOGGED(evd_ibv_cq_stats_get(as, &st), -EINVAL, "src a is not a CQ source");
	CHECK_EQ(evd_ring_create("r", 16, test_nop, NULL, &ring), 0);
	DRIVER_LOGGED(evd_ibv_cq_stats_get(ring, &st), -EINVAL, "src r is not a CQ source");
	CHECK_EQ(evd_ibv_cq_adopt(cq, "ok", NULL, on_wc, &k, &s), 0);
	DRIVER_LOGGED(evd_ibv_cq_stats_get(s, NULL), -EINVAL, "st is NULL");

	CHECK_EQ(evd_source_destroy(s), 0);
	CHECK_EQ(evd_source_destroy(ring), 0);
	CHECK_EQ(evd_source_destroy(as), 0);
	CHECK_EQ(emu_destroy_cq(cq), 0);
	CHECK_EQ(emu_destroy_cq(bare), 0);
	CHECK_EQ(emu_destroy_channel(ch), 0);
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
		struct ibv_cq *other;
		struct evd_source *dup;

		ch = emu_create_channel(ctx);
		legacy = emu_create_cq(ctx, 64, ch, sem);
		CHECK_EQ(evd_ibv_cq_adopt(legacy, "adopted", NULL, on_wc, &k, &s), 0);
		/* one source a CQ, one CQ a channel: both polling one CQ, or
		 * each reading the other's channel events, lose completions */
		CHECK_EQ(evd_ibv_cq_adopt(legacy, "again", NULL, on_wc, &k, &dup), -EBUSY);
		CHECK(dup == NULL);
		other = emu_create_cq(ctx, 64, ch, sem);
		CHECK_EQ(evd_ibv_cq_adopt(other, "shares", NULL, on_wc, &k, &dup), -EBUSY);
		CHECK_EQ(emu_destroy_cq(other), 0);
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
		/* its source destroyed, the CQ may be adopted again */
		CHECK_EQ(evd_ibv_cq_adopt(legacy, "again", NULL, on_wc, &k, &s), 0);
		CHECK_EQ(evd_source_destroy(s), 0);
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
	uint64_t start_us; /* waits this long before it looks */
	bool acted;        /* atomic */
};

/* Waits until the loop sleeps, then acts on the CQ like the hardware. */
static void *
while_asleep(void *arg)
{
	struct pusher *p = arg;
	struct emu_cqe one = cqe(p->wr_id);

	test_sleep_us(p->start_us);
	test_wait_asleep(p->loop, 500);
	test_sleep_us(3000);
	if (p->fault_fd >= 0)
		emu_read_fault(p->fault_fd, p->fault_err, 1);
	if (p->spurious)
		emu_cq_spurious_event(p->cq);
	else
		CHECK_EQ(emu_cq_push(p->cq, &one), 0);
	__atomic_store_n(&p->acted, true, __ATOMIC_RELEASE);
	return NULL;
}

/* Start the pusher, step the loop until done(arg), join the pusher. */
static void
run_while_asleep(struct pusher *p, bool (*done)(void *), void *arg)
{
	pthread_t th;

	CHECK_EQ(pthread_create(&th, NULL, while_asleep, p), 0);
	while (!done(arg))
		CHECK(evd_loop_step(p->loop) >= 0);
	pthread_join(th, NULL);
}

static bool
got_one(void *arg)
{
	return ((struct sink *)arg)->n > 0;
}

static bool
woke_once(void *arg)
{
	struct evd_loop_stats st;

	CHECK_EQ(evd_loop_stats_get(arg, &st), 0);
	return st.wakeups > 0;
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
	run_while_asleep(&p, got_one, &k);
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
	run_while_asleep(&p, woke_once, loop);
	CHECK_EQ(evd_loop_stats_get(loop, &st), 0);
	CHECK_EQ(st.wakeups, 1);
	CHECK_EQ(st.spurious_wakeups, 1);
	CHECK_EQ(k.n, 0);
	CHECK_EQ(e.n, 0);
	destroy(loop, s); /* its wait for every event's ack did not time out */
	CHECK_EQ(evd_loop_destroy(loop), 0);
}

/* Arm failure: reported through on_error; the loop cannot trust the CQ to
 * notify, so it sleeps no longer than its poll-only bound (2 ms here) and the
 * completion is still delivered. Nothing is lost, no lost wakeup counted. */
static void
test_arm_failure(void)
{
	struct errs e = { 0 };
	struct evd_loop *loop = mkloop("intr", 5 * 1000 * 1000, &e);
	struct evd_loop_stats st;
	struct evd_source *s;
	struct sink k = { 0 };
	struct pusher p;
	uint64_t t0;

	CHECK_EQ(evd_ibv_cq_create(ctx, "armfail", NULL, on_wc, &k, &s), 0);
	CHECK_EQ(evd_loop_add(loop, s), 0);
	p = (struct pusher){ .loop = loop, .cq = evd_ibv_cq_get(s), .wr_id = 5, .fault_fd = -1 };
	emu_cq_fail_arm(p.cq, 1000000, EIO);
	t0 = test_now_ns();
	run_while_asleep(&p, got_one, &k);
	CHECK(test_now_ns() - t0 < 4ull * 1000 * 1000 * 1000); /* liveness: not the 5 s bound */
	CHECK_EQ(k.wr_id[0], 5);
	CHECK(e.n >= 1);
	CHECK_EQ(e.last, -EIO);
	CHECK(e.src == s);
	CHECK_EQ(evd_loop_stats_get(loop, &st), 0);
	CHECK(st.sleep_timeouts >= 1); /* the bounded sleeps */
	CHECK_EQ(st.lost_wakeups, 0);
	CHECK_EQ(st.arms, 0);
	emu_cq_fail_arm(p.cq, 0, 0);
	destroy(loop, s);
	CHECK_EQ(evd_loop_destroy(loop), 0);
}

/* A failed poll is reported; what the CQ holds comes out at the next poll. */
static void
poll_failure(bool adopt)
{
	struct errs e = { 0 };
	struct evd_loop *loop = mkloop("poll", 0, &e);
	struct ibv_comp_channel *ch = NULL;
	struct ibv_cq *cq;
	struct evd_ibv_cq_stats cs;
	struct evd_source *s;
	struct sink k = { 0 };

	if (adopt) {
		ch = emu_create_channel(ctx);
		CHECK_EQ(evd_ibv_cq_adopt(emu_create_cq(ctx, 64, ch, sem), "pf", NULL, on_wc, &k, &s), 0);
	} else {
		CHECK_EQ(evd_ibv_cq_create(ctx, "pf", NULL, on_wc, &k, &s), 0);
	}
	cq = evd_ibv_cq_get(s);
	CHECK_EQ(evd_loop_add(loop, s), 0);
	for (uint64_t i = 0; i < 3; i++)
		CHECK_EQ(emu_cq_push(cq, &(struct emu_cqe){ .wr_id = i }), 0);
	emu_cq_fail_poll(cq, 1);
	CHECK_EQ(evd_loop_step(loop), 0);
	CHECK_EQ(e.n, 1);
	CHECK_EQ(e.last, -EIO);
	CHECK_EQ(evd_loop_step(loop), 3);
	CHECK_EQ(k.n, 3);
	CHECK_EQ(evd_ibv_cq_stats_get(s, &cs), 0);
	CHECK_EQ(cs.poll_errors, 1);
	destroy(loop, s);
	if (adopt) {
		CHECK_EQ(emu_destroy_cq(cq), 0);
		CHECK_EQ(emu_destroy_channel(ch), 0);
	}
	CHECK_EQ(evd_loop_destroy(loop), 0);
}

static void
test_poll_failure(void)
{
	poll_failure(false);
	poll_failure(true);
}

struct async_sink {
	int n;
	enum ibv_event_type last;
};

static void
on_async(struct evd_source *src, void *burst, uint16_t n, void *arg)
{
	struct async_sink *a = arg;
	struct ibv_async_event *ev = burst;

	(void)src;
	a->n += n;
	a->last = ev[n - 1].event_type;
}

static void
ring_count(struct evd_source *src, void *burst, uint16_t n, void *arg)
{
	(void)src;
	(void)burst;
	*(uint64_t *)arg += n;
}

/* CQ overrun: the completions queued before it are delivered, the lost one
 * is announced by IBV_EVENT_CQ_ERR, which the async source routes to the CQ
 * source: on_error(-EIO) from the CQ source, counted in cq_errors. Port
 * events reach the async handler; a fatal device error is reported by the
 * async source and the CQ sources (-ENODEV). Meanwhile the loop goes on
 * serving a ring. */
static void
test_overrun_and_async(void)
{
	struct errs e = { 0 };
	struct evd_loop *loop = mkloop("poll", 0, &e);
	struct evd_ibv_cq_conf conf = { .cqe = 4 };
	struct evd_ibv_cq_stats cs;
	struct evd_source *s, *as, *ring;
	struct async_sink a = { 0 };
	struct sink k = { 0 };
	struct evd_event ev = { 0 };
	uint64_t ring_n = 0;
	struct ibv_cq *cq;

	CHECK_EQ(evd_ibv_cq_create(ctx, "small", &conf, on_wc, &k, &s), 0);
	CHECK_EQ(evd_ibv_async_create(ctx, "async", on_async, &a, &as), 0);
	CHECK_EQ(evd_ibv_async_create(ctx, "again", on_async, &a, &ring), -EBUSY);
	CHECK_EQ(evd_ring_create("ring", 16, ring_count, &ring_n, &ring), 0);
	cq = evd_ibv_cq_get(s);
	CHECK_EQ(evd_loop_add(loop, s), 0);
	CHECK_EQ(evd_loop_add(loop, as), 0);
	CHECK_EQ(evd_loop_add(loop, ring), 0);
	for (uint64_t i = 0; i < 4; i++)
		CHECK_EQ(emu_cq_push(cq, &(struct emu_cqe){ .wr_id = i }), 0);
	CHECK_EQ(emu_cq_push(cq, &(struct emu_cqe){ .wr_id = 4 }), -ENOSPC);
	CHECK_EQ(evd_ring_post(ring, &ev), 0);
	for (int i = 0; i < 4; i++)
		evd_loop_step(loop);
	CHECK_EQ(k.n, 4);
	CHECK_EQ(a.n, 1);
	CHECK_EQ(a.last, IBV_EVENT_CQ_ERR);
	CHECK(e.n >= 1);
	CHECK(e.src == s);
	CHECK_EQ(e.last, -EIO);
	CHECK_EQ(evd_ibv_cq_stats_get(s, &cs), 0);
	CHECK_EQ(cs.cq_errors, 1);
	CHECK_EQ(ring_n, 1);

	emu_port_event(ctx, IBV_EVENT_PORT_ERR, 1);
	evd_loop_step(loop);
	CHECK_EQ(a.n, 2);
	CHECK_EQ(a.last, IBV_EVENT_PORT_ERR);

	e.n = 0;
	emu_device_fatal(ctx);
	CHECK_EQ(evd_ring_post(ring, &ev), 0);
	evd_loop_step(loop); /* the async source reports; the CQ's flag is set */
	evd_loop_step(loop); /* the CQ reports */
	CHECK_EQ(a.last, IBV_EVENT_DEVICE_FATAL);
	CHECK_EQ(e.nodev, 2); /* the async source and the CQ source */
	CHECK_EQ(evd_ibv_cq_stats_get(s, &cs), 0);
	CHECK_EQ(cs.cq_errors, 1); /* a fatal device is not a CQ error */
	CHECK_EQ(ring_n, 2);
	destroy(loop, s);
	destroy(loop, as);
	destroy(loop, ring);
	CHECK_EQ(evd_loop_destroy(loop), 0);
}

/* Channel faults: EINTR on the read is retried inside the ack; EAGAIN leaves
 * the event in the channel, to be consumed at the next wake. Nothing lost,
 * every event acknowledged (destroy does not hang). */
static void
channel_fault(int err)
{
	struct errs e = { 0 };
	struct evd_loop *loop = mkloop("intr", 5 * 1000 * 1000, &e);
	struct evd_ibv_cq_stats cs;
	struct evd_loop_stats st;
	struct evd_source *s;
	struct sink k = { 0 };
	struct pusher p;

	CHECK_EQ(evd_ibv_cq_create(ctx, "chfault", NULL, on_wc, &k, &s), 0);
	CHECK_EQ(evd_loop_add(loop, s), 0);
	p = (struct pusher){ .loop = loop, .cq = evd_ibv_cq_get(s), .wr_id = 9,
			     .fault_fd = s->ops->fd(s), .fault_err = err };
	run_while_asleep(&p, got_one, &k);
	CHECK_EQ(k.wr_id[0], 9);
	if (err == EAGAIN) /* the event still waits in the channel: the next sleep takes it */
		CHECK(evd_loop_step(loop) >= 0);
	CHECK_EQ(evd_ibv_cq_stats_get(s, &cs), 0);
	CHECK_EQ(cs.events, 1);
	CHECK_EQ(e.n, 0);
	CHECK_EQ(evd_loop_stats_get(loop, &st), 0);
	CHECK_EQ(st.lost_wakeups, 0);
	CHECK_EQ(st.sleep_timeouts, 0);
	destroy(loop, s);
	CHECK_EQ(evd_loop_destroy(loop), 0);
}

static void
test_channel_eintr(void)
{
	channel_fault(EINTR);
}

static void
test_channel_eagain(void)
{
	channel_fault(EAGAIN);
}

/* Destroying a source whose channel still holds events: they are read and
 * acknowledged first, so the CQ's destroy does not wait forever. */
static void
test_destroy_with_pending_events(void)
{
	struct errs e = { 0 };
	struct evd_loop *loop = mkloop("poll", 0, &e);
	struct evd_ibv_cq_conf conf = { .ack_batch = 64 };
	struct evd_source *s;
	struct sink k = { 0 };
	struct ibv_cq *cq;

	CHECK_EQ(evd_ibv_cq_create(ctx, "pending", &conf, on_wc, &k, &s), 0);
	cq = evd_ibv_cq_get(s);
	CHECK_EQ(evd_loop_add(loop, s), 0);
	for (int i = 0; i < 5; i++)
		emu_cq_spurious_event(cq);
	CHECK_EQ(s->ops->ack(s), 0); /* one read, unacknowledged (batch of 64) */
	destroy(loop, s);             /* drains 4, acks 5; emu destroy would fail otherwise */
	CHECK_EQ(evd_loop_destroy(loop), 0);
}

/* Moderation through ibv_modify_cq where the provider has it; -EOPNOTSUPP
 * where it does not. */
static void
test_moderation(void)
{
	struct evd_ibv_cq_conf conf = { .moderation_count = 16, .moderation_period_us = 10 };
	struct evd_source *s;
	struct sink k = { 0 };
	struct ibv_context *c2 = emu_open(sem);

	CHECK_EQ(evd_ibv_cq_create(ctx, "mod", &conf, on_wc, &k, &s), 0);
	CHECK_EQ(evd_source_destroy(s), 0);
	emu_disable_moderation(c2);
	CHECK_EQ(evd_ibv_cq_create(c2, "nomod", &conf, on_wc, &k, &s), -EOPNOTSUPP);
	CHECK_EQ(emu_destroy_hangs(), 0);
	emu_close(c2);
}

/* Solicited-only: an unsolicited completion does not wake the sleeping
 * loop (it waits for its bound); a solicited one does. */
static void
test_solicited_only(void)
{
	struct errs e = { 0 };
	struct evd_loop *loop = mkloop("intr", 200 * 1000, &e);
	struct evd_ibv_cq_conf conf = { .solicited_only = true };
	struct evd_loop_stats st;
	struct emu_cq_counters c;
	struct evd_source *s;
	struct sink k = { 0 };
	struct ibv_cq *cq;

	CHECK_EQ(evd_ibv_cq_create(ctx, "solicited", &conf, on_wc, &k, &s), 0);
	cq = evd_ibv_cq_get(s);
	CHECK_EQ(evd_loop_add(loop, s), 0);
	CHECK_EQ(evd_loop_step(loop), 0); /* arms (solicited), sleeps 200 ms, times out */
	CHECK_EQ(emu_cq_push(cq, &(struct emu_cqe){ .wr_id = 1 }), 0);
	emu_cq_counters(cq, &c);
	CHECK_EQ(c.events, 0); /* unsolicited: no event */
	CHECK_EQ(evd_loop_step(loop), 1); /* found by the next poll */
	CHECK_EQ(emu_cq_push(cq, &(struct emu_cqe){ .wr_id = 2, .solicited = true }), 0);
	CHECK_EQ(evd_loop_step(loop), 1);
	CHECK_EQ(evd_loop_stats_get(loop, &st), 0);
	CHECK_EQ(st.lost_wakeups, 0);
	destroy(loop, s);
	CHECK_EQ(evd_loop_destroy(loop), 0);
}

static bool
timed_out_once(void *arg)
{
	struct pusher *p = arg;
	struct evd_loop_stats st;

	/* (a sleep may time out before the pusher saw the loop asleep, and
	 * it waits for a sleep only steps make) */
	CHECK_EQ(evd_loop_stats_get(p->loop, &st), 0);
	return st.sleep_timeouts > 0 && __atomic_load_n(&p->acted, __ATOMIC_ACQUIRE);
}

/* Solicited-only, an unsolicited completion while the loop sleeps: no event
 * was promised for it, so the sleep ends at its bound and the poll after it
 * finds the completion. That is not a lost wakeup (none counted, no grace
 * wait for an event that cannot come). */
static void
test_solicited_timeout(void)
{
	struct errs e = { 0 };
	struct evd_loop *loop = mkloop("intr", 50 * 1000, &e);
	struct evd_ibv_cq_conf conf = { .solicited_only = true };
	struct evd_loop_stats st;
	struct emu_cq_counters c;
	struct evd_source *s;
	struct sink k = { 0 };
	struct pusher p;

	CHECK_EQ(evd_ibv_cq_create(ctx, "unsolicited", &conf, on_wc, &k, &s), 0);
	CHECK_EQ(evd_loop_add(loop, s), 0);
	/* (it starts after the first sleep's bound: that sleep times out
	 * before it looks, as a slow start on a busy machine would have it) */
	p = (struct pusher){ .loop = loop, .cq = evd_ibv_cq_get(s), .wr_id = 3, .fault_fd = -1,
			     .start_us = 60 * 1000 };
	run_while_asleep(&p, timed_out_once, &p);
	while (k.n == 0)
		CHECK(evd_loop_step(loop) >= 0);
	CHECK_EQ(k.wr_id[0], 3);
	emu_cq_counters(p.cq, &c);
	CHECK_EQ(c.events, 0);
	CHECK_EQ(evd_loop_stats_get(loop, &st), 0);
	CHECK_EQ(st.lost_wakeups, 0);
	CHECK_EQ(e.n, 0);
	destroy(loop, s);
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
	TEST(test_bad_input);
	delivery(false);
	printf("ok delivery (created CQ)\n");
	delivery(true);
	printf("ok delivery (adopted CQ)\n");
	TEST(test_fields);
	TEST(test_race);
	TEST(test_sleep_wake);
	TEST(test_spurious);
	TEST(test_arm_failure);
	TEST(test_poll_failure);
	TEST(test_overrun_and_async);
	TEST(test_channel_eintr);
	TEST(test_channel_eagain);
	TEST(test_destroy_with_pending_events);
	TEST(test_moderation);
	TEST(test_solicited_only);
	TEST(test_solicited_timeout);
	emu_close(ctx);
	return 0;
}
