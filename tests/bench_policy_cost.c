/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Instructions per event on a saturated ring, one thread, deterministic:
 * post a burst, step the loop, again; with an empty round between bursts
 * now and then (a decision); counted after a warm-up. Run under
 *   valgrind --tool=callgrind --toggle-collect=drive bench_policy_cost SPEC [EVENTS [EMPTY]]
 * (EMPTY: an empty round every EMPTY bursts, 8 by default; 0: none)
 * and compare adaptive with poll (scripts/bench does).
 */
#include <evd.h>

#include "evd_test.h"

static uint64_t got;

static void
count(struct evd_source *s, void *b, uint16_t n, void *a)
{
	(void)s;
	(void)b;
	(void)a;
	got += n;
}

static int empty_every = 8;

static void
rounds(struct evd_loop *loop, struct evd_source *ring, uint64_t events)
{
	struct evd_event ev[32] = { 0 };

	for (uint64_t sent = 0; sent < events; sent += 32) {
		CHECK_EQ(evd_ring_post_burst(ring, ev, 32), 32);
		CHECK_EQ(evd_loop_step(loop), 32);
		if (empty_every > 0 && (sent / 32) % (uint64_t)empty_every == 0)
			CHECK(evd_loop_step(loop) >= 0); /* an empty round: the policy decides */
	}
}

/* What callgrind counts: a loop that has run long enough to learn on its
 * steady schedule (main warms it up first, uncounted). */
static void __attribute__((noinline))
drive(struct evd_loop *loop, struct evd_source *ring, uint64_t events)
{
	rounds(loop, ring, events);
}

int
main(int argc, char **argv)
{
	struct evd_loop_conf conf = { .policy = argc > 1 ? argv[1] : "poll", .max_sleep_us = 1 };
	uint64_t events = argc > 2 ? strtoull(argv[2], NULL, 10) : 320000;

	if (argc > 3)
		empty_every = atoi(argv[3]); /* 0: never an empty round (pure saturation) */
	struct evd_loop *loop;
	struct evd_source *ring;

	CHECK_EQ(evd_loop_create(&conf, &loop), 0);
	CHECK_EQ(evd_ring_create("r", 1024, count, NULL, &ring), 0);
	CHECK_EQ(evd_loop_add(loop, ring), 0);
	/* past adaptive's early schedule (an update every 8 idle gaps until
	 * 4096 of them: the first decay) */
	rounds(loop, ring, 32ull * 4096 * (uint64_t)(empty_every > 0 ? empty_every : 1));
	got = 0;
	drive(loop, ring, events);
	CHECK_EQ(got, events);
	printf("%s: %" PRIu64 " events\n", conf.policy, got);
	CHECK_EQ(evd_loop_remove(loop, ring), 0);
	CHECK_EQ(evd_source_destroy(ring), 0);
	CHECK_EQ(evd_loop_destroy(loop), 0);
	return 0;
}
