/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * net-ib stress: N completions across 8 CQs on one loop, pushed by 4
 * "hardware" threads with random bursts, short gaps and long idle periods
 * (up to 20 ms, so the loop really sleeps and is woken by CQ events).
 * Every completion must arrive exactly once and in order per CQ, events and
 * acknowledgements must balance (the emulator's destroy waits for them), no
 * wakeup may be lost and no sleep may end by its 5 s timeout.
 */
#include <getopt.h>
#include <pthread.h>

#include <evd.h>
#include <evd_ibv.h>
#include <evd_source.h>

#include "emu_ibv.h"
#include "evd_test.h"

#define N_CQ 8
#define N_PROD 4
#define CQE 1024

struct cq_state {
	struct evd_source *src;
	struct ibv_cq *cq;
	uint64_t next;                /* consumer: next expected wr_id */
	uint64_t delivered;           /* atomic: read by the producer for flow control */
	uint64_t bad;
};

struct ctx {
	struct evd_loop *loop;
	struct cq_state cq[N_CQ];
	uint64_t per_cq;
	uint64_t total;
	uint64_t delivered;
	unsigned int seed;
};

struct prod {
	struct ctx *c;
	uint32_t id;
};

static void *
produce(void *arg)
{
	struct prod *p = arg;
	struct ctx *c = p->c;
	uint64_t rnd = 0x9e3779b97f4a7c15ull * (p->id + 1) + c->seed;
	uint64_t seq[2] = { 0, 0 };

	while (seq[0] < c->per_cq || seq[1] < c->per_cq) {
		uint32_t k = (uint32_t)(test_xorshift(&rnd) & 1);
		struct cq_state *q;
		uint32_t burst = 1 + (uint32_t)(test_xorshift(&rnd) % 32);
		uint64_t r;

		if (seq[k] >= c->per_cq)
			k ^= 1;
		q = &c->cq[p->id * 2 + k];
		if (burst > c->per_cq - seq[k])
			burst = (uint32_t)(c->per_cq - seq[k]);
		/* flow control: never overrun the CQ (that is another test) */
		while (seq[k] + burst - __atomic_load_n(&q->delivered, __ATOMIC_ACQUIRE) > CQE)
			test_sleep_us(20);
		for (uint32_t i = 0; i < burst; i++) {
			struct emu_cqe e = { .wr_id = seq[k]++, .opcode = IBV_WC_RECV, .byte_len = 64 };

			CHECK_EQ(emu_cq_push(q->cq, &e), 0);
		}
		r = test_xorshift(&rnd) % 64;
		if (r == 0)
			test_sleep_us(5000 + test_xorshift(&rnd) % 15000); /* long idle */
		else if (r < 8)
			test_sleep_us(test_xorshift(&rnd) % 2001);
	}
	return NULL;
}

static void
consume(struct evd_source *src, void *burst, uint16_t n, void *arg)
{
	struct ctx *c = arg;
	struct ibv_wc *wc = burst;
	struct cq_state *q = NULL;

	for (int i = 0; i < N_CQ; i++)
		if (c->cq[i].src == src)
			q = &c->cq[i];
	CHECK(q != NULL);
	for (uint16_t i = 0; i < n; i++) {
		if (wc[i].wr_id != q->next || wc[i].status != IBV_WC_SUCCESS)
			q->bad++;
		q->next = wc[i].wr_id + 1;
	}
	__atomic_store_n(&q->delivered, q->delivered + n, __ATOMIC_RELEASE);
	c->delivered += n;
	if (c->delivered >= c->total)
		evd_loop_stop(c->loop);
}

int
main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "semantics", required_argument, NULL, 's' },
		{ "policy", required_argument, NULL, 'p' },
		{ "completions", required_argument, NULL, 'n' },
		{ NULL, 0, NULL, 0 },
	};
	enum emu_semantics sem = EMU_STRICT;
	const char *policy = "intr";
	uint64_t total = 1000000, t0;
	struct ctx c = { .seed = 7 };
	struct prod prod[N_PROD];
	pthread_t th[N_PROD];
	struct evd_loop_conf conf = { .name = "ibv-stress", .max_sleep_us = 5 * 1000 * 1000 };
	struct evd_loop_stats st;
	struct ibv_context *ctx;
	uint64_t events = 0, acked = 0, arms = 0, considerate = 0;
	char spec[96];
	bool naps;
	int o;

	while ((o = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (o) {
		case 's': sem = strcmp(optarg, "considerate") == 0 ? EMU_CONSIDERATE : EMU_STRICT; break;
		case 'p': policy = optarg; break;
		case 'n': total = strtoull(optarg, NULL, 10); break;
		default: return 2;
		}
	}
	policy = test_stress_policy(policy, spec, sizeof(spec), &naps, &conf.max_sleep_us);
	conf.policy = policy;
	c.per_cq = total / N_CQ;
	c.total = c.per_cq * N_CQ;
	ctx = emu_open(sem);
	CHECK(ctx != NULL);
	CHECK_EQ(evd_loop_create(&conf, &c.loop), 0);
	for (int i = 0; i < N_CQ; i++) {
		struct evd_ibv_cq_conf cc = { .cqe = CQE };
		char name[16];

		snprintf(name, sizeof(name), "cq%d", i);
		CHECK_EQ(evd_ibv_cq_create(ctx, name, &cc, consume, &c, &c.cq[i].src), 0);
		c.cq[i].cq = evd_ibv_cq_get(c.cq[i].src);
		CHECK_EQ(evd_loop_add(c.loop, c.cq[i].src), 0);
	}
	t0 = test_now_ns();
	for (uint32_t i = 0; i < N_PROD; i++) {
		prod[i] = (struct prod){ &c, i };
		CHECK_EQ(pthread_create(&th[i], NULL, produce, &prod[i]), 0);
	}
	CHECK_EQ(evd_loop_run(c.loop), 0);
	for (int i = 0; i < N_PROD; i++)
		pthread_join(th[i], NULL);
	CHECK_EQ(evd_loop_stats_get(c.loop, &st), 0);

	for (int i = 0; i < N_CQ; i++) {
		struct emu_cq_counters ec;
		struct evd_ibv_cq_stats cs;

		CHECK_EQ(c.cq[i].bad, 0);
		CHECK_EQ(c.cq[i].next, c.per_cq);
		emu_cq_counters(c.cq[i].cq, &ec);
		CHECK_EQ(ec.queued, 0);
		CHECK_EQ(ec.pushed, c.per_cq);
		CHECK_EQ(ec.polled, c.per_cq);
		CHECK_EQ(evd_ibv_cq_stats_get(c.cq[i].src, &cs), 0);
		events += ec.events;
		arms += ec.arms;
		considerate += ec.considerate_events;
		acked += cs.events_acked;
		CHECK_EQ(evd_loop_remove(c.loop, c.cq[i].src), 0);
		CHECK_EQ(evd_source_destroy(c.cq[i].src), 0); /* waits for every ack: 2 s at most */
	}
	printf("%s/%s: %" PRIu64 " completions in %.2f s; sleeps %" PRIu64 " wakeups %" PRIu64
	       " spurious %" PRIu64 " repoll_hits %" PRIu64 " timeouts %" PRIu64 " lost %" PRIu64
	       " naps %" PRIu64 "; arms %" PRIu64 " events %" PRIu64 " (at arm %" PRIu64 ")\n",
	       policy, sem == EMU_STRICT ? "strict" : "considerate", c.delivered,
	       (test_now_ns() - t0) / 1e9, st.sleeps, st.wakeups, st.spurious_wakeups, st.repoll_hits,
	       st.sleep_timeouts, st.lost_wakeups, st.naps, arms, events, considerate);
	CHECK_EQ(c.delivered, c.total);
	CHECK_EQ(st.events, c.total);
	CHECK_EQ(st.lost_wakeups, 0);
	test_check_sleep_timeouts(policy, conf.max_sleep_us, st.sleep_timeouts);
	if (naps)
		CHECK(st.naps > 0); /* producers raced naps (and sleeps, where it slept) */
	else
		CHECK(st.sleeps > 0 && st.wakeups > 0);
	CHECK(events > 0 || naps);
	CHECK_EQ(emu_destroy_hangs(), 0); /* every event written was acknowledged */
	if (sem == EMU_STRICT)
		CHECK_EQ(considerate, 0);
	CHECK_EQ(evd_loop_destroy(c.loop), 0);
	emu_close(ctx);
	printf("ok\n");
	return 0;
}
