/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Stress: several producer threads push N events with random gaps (bursts,
 * and pauses up to 2 ms that let the loop go to sleep) into one ring; the
 * loop runs a sleeping policy. Every event must arrive exactly once and in
 * order per producer, no wakeup may be lost, and no sleep may end by its
 * timeout (the bound is 5 s: with producers never idle more than 2 ms, a
 * timeout means an event waited for it).
 */
#include <getopt.h>
#include <pthread.h>

#include <evd.h>
#include <evd_source.h>

#include "evd_test.h"

#define PRODUCERS 4
#define RING_SIZE 4096

struct ctx {
	struct evd_loop *loop;
	struct evd_source *ring;
	uint64_t per_producer;
	uint64_t next_seq[PRODUCERS]; /* consumer side */
	uint64_t delivered;
	uint64_t duplicates_or_gaps;
	uint64_t full_retries[PRODUCERS];
	uint64_t expected;
	unsigned int seed;
};

struct producer {
	struct ctx *c;
	uint32_t id;
};

static void *
produce(void *arg)
{
	struct producer *p = arg;
	struct ctx *c = p->c;
	uint64_t rnd = 0x9e3779b97f4a7c15ull * (p->id + 1) + c->seed;
	uint64_t seq = 0;
	struct evd_event ev[32];

	while (seq < c->per_producer) {
		uint32_t burst = 1 + test_xorshift(&rnd) % 32;
		uint32_t done = 0;

		if (burst > c->per_producer - seq)
			burst = (uint32_t)(c->per_producer - seq);
		for (uint32_t i = 0; i < burst; i++) {
			ev[i].type = p->id;
			ev[i].flags = 0;
			ev[i].stamp = 0;
			ev[i].u64 = seq + i;
		}
		while (done < burst) {
			int rc = evd_ring_post_burst(c->ring, ev + done, burst - done);

			if (rc == -ENOBUFS) {
				c->full_retries[p->id]++;
				test_sleep_us(50);
				continue;
			}
			CHECK(rc > 0);
			done += (uint32_t)rc;
		}
		seq += burst;
		/* One burst in eight is followed by a pause up to 2 ms. */
		if (test_xorshift(&rnd) % 8 == 0)
			test_sleep_us(test_xorshift(&rnd) % 2001);
	}
	return NULL;
}

static void
consume(struct evd_source *src, void *burst, uint16_t n, void *arg)
{
	struct ctx *c = arg;
	struct evd_event *ev = burst;

	(void)src;
	for (uint16_t i = 0; i < n; i++) {
		uint32_t id = ev[i].type;

		CHECK(id < PRODUCERS);
		if (ev[i].u64 != c->next_seq[id])
			c->duplicates_or_gaps++;
		c->next_seq[id] = ev[i].u64 + 1;
	}
	c->delivered += n;
	if (c->delivered >= c->expected)
		evd_loop_stop(c->loop);
}

int
main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "policy", required_argument, NULL, 'p' },
		{ "events", required_argument, NULL, 'n' },
		{ "seed", required_argument, NULL, 's' },
		{ NULL, 0, NULL, 0 },
	};
	const char *policy = "intr";
	uint64_t events = 1000000;
	struct ctx c = { .seed = 1 };
	struct producer prod[PRODUCERS];
	pthread_t th[PRODUCERS];
	struct evd_loop_conf conf = { .name = "stress", .max_sleep_us = 5 * 1000 * 1000 };
	struct evd_loop_stats st;
	struct evd_source_stats ss;
	uint64_t t0, t1;
	char spec[96];
	bool naps;
	int o;

	while ((o = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (o) {
		case 'p': policy = optarg; break;
		case 'n': events = strtoull(optarg, NULL, 10); break;
		case 's': c.seed = (unsigned int)strtoul(optarg, NULL, 10); break;
		default: return 2;
		}
	}
	policy = test_stress_policy(policy, spec, sizeof(spec), &naps, &conf.max_sleep_us);
	conf.policy = policy;
	c.per_producer = events / PRODUCERS;
	c.expected = c.per_producer * PRODUCERS;
	CHECK_EQ(evd_loop_create(&conf, &c.loop), 0);
	CHECK_EQ(evd_ring_create("stress", RING_SIZE, consume, &c, &c.ring), 0);
	CHECK_EQ(evd_loop_add(c.loop, c.ring), 0);

	t0 = test_now_ns();
	for (uint32_t i = 0; i < PRODUCERS; i++) {
		prod[i].c = &c;
		prod[i].id = i;
		CHECK_EQ(pthread_create(&th[i], NULL, produce, &prod[i]), 0);
	}
	CHECK_EQ(evd_loop_run(c.loop), 0);
	for (uint32_t i = 0; i < PRODUCERS; i++)
		pthread_join(th[i], NULL);
	t1 = test_now_ns();

	CHECK_EQ(evd_loop_stats_get(c.loop, &st), 0);
	CHECK_EQ(evd_source_stats_get(c.ring, &ss), 0);
	printf("policy %s: %" PRIu64 " events in %.2f s; sleeps %" PRIu64 " wakeups %" PRIu64
	       " spurious %" PRIu64 " repoll_hits %" PRIu64 " timeouts %" PRIu64
	       " lost %" PRIu64 " full %" PRIu64 " pauses %" PRIu64 " naps %" PRIu64 "\n",
	       policy, c.delivered, (t1 - t0) / 1e9, st.sleeps, st.wakeups, st.spurious_wakeups,
	       st.repoll_hits, st.sleep_timeouts, st.lost_wakeups, ss.full, st.pauses, st.naps);

	CHECK_EQ(c.delivered, c.expected);
	CHECK_EQ(c.duplicates_or_gaps, 0);
	for (uint32_t i = 0; i < PRODUCERS; i++)
		CHECK_EQ(c.next_seq[i], c.per_producer);
	CHECK_EQ(evd_ring_count(c.ring), 0);
	CHECK_EQ(st.events, c.expected);
	CHECK_EQ(st.lost_wakeups, 0);
	test_check_sleep_timeouts(policy, conf.max_sleep_us, st.sleep_timeouts);
	if (naps) {
		CHECK(st.naps > 0); /* producers raced naps (and sleeps, where it slept) */
	} else {
		CHECK(st.sleeps > 0); /* the loop really slept: the protocol ran */
		CHECK(st.wakeups > 0);
	}

	CHECK_EQ(evd_loop_remove(c.loop, c.ring), 0);
	CHECK_EQ(evd_source_destroy(c.ring), 0);
	CHECK_EQ(evd_loop_destroy(c.loop), 0);
	printf("ok\n");
	return 0;
}
