/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * One evd loop per worker lcore, the main lcore controlling them: each
 * worker runs its loop (a ring of requests and a periodic timer) until
 * stopped; the main lcore posts requests to every worker's ring, hands a
 * change to each running loop with evd_loop_call() (a second ring, added
 * on the worker's own thread), reads their stats while they run, stops
 * them, and tears them down once no thread runs them. It exits 0 when
 * every request was handled once, by the loop it was posted to.
 *
 *   multi-lcore [EAL options, two lcores or more] -- [REQUESTS]
 * (doc/guides/multicore.md walks through it.)
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_eal.h>
#include <rte_launch.h>
#include <rte_lcore.h>
#include <rte_pause.h>

#include <evd.h>

struct worker {
	struct evd_loop *loop;
	struct evd_source *requests; /* created by the main lcore, added before launch */
	struct evd_source *urgent;   /* created by the main lcore, added by the worker */
	uint64_t handled;            /* atomic: read by the main lcore */
	uint64_t wrong;              /* requests meant for another loop */
	uint64_t ticks;              /* atomic: the timer's, read by the main lcore */
	int added;                   /* atomic: the urgent ring is on the loop */
};

static struct worker workers[RTE_MAX_LCORE];

/* A request carries the lcore it was posted for: a handler runs on the
 * loop's own thread, which is that lcore. */
static void
on_requests(struct evd_source *src, void *burst, uint16_t n, void *arg)
{
	struct worker *w = arg;
	const struct evd_event *ev = burst;

	(void)src;
	for (uint16_t i = 0; i < n; i++)
		if (ev[i].type != rte_lcore_id())
			w->wrong++;
	__atomic_fetch_add(&w->handled, n, __ATOMIC_RELEASE);
}

static void
on_tick(struct evd_loop *loop, struct evd_timer *t, void *arg)
{
	struct worker *w = arg;

	(void)loop;
	(void)t;
	__atomic_fetch_add(&w->ticks, 1, __ATOMIC_RELAXED);
}

/* Runs on the worker, between two rounds of its loop: the one place a
 * running loop changes (evd_loop_add() from the main lcore is -EBUSY). */
static void
add_urgent(struct evd_loop *loop, void *arg)
{
	struct worker *w = arg;

	if (evd_loop_add(loop, w->urgent) == 0)
		__atomic_store_n(&w->added, 1, __ATOMIC_RELEASE);
}

static int
run_worker(void *arg)
{
	(void)arg;
	return evd_loop_run(workers[rte_lcore_id()].loop); /* until evd_loop_stop() */
}

static int
set_up(unsigned int lcore)
{
	struct worker *w = &workers[lcore];
	char name[EVD_NAME_MAX];
	/* intr: every quiet spell sleeps (adaptive, the default, learns when) */
	struct evd_loop_conf conf = { .name = name, .policy = "intr" };
	int rc;

	snprintf(name, sizeof(name), "lcore%u", lcore);
	rc = evd_loop_create(&conf, &w->loop);
	if (rc == 0)
		rc = evd_ring_create("requests", 1024, on_requests, w, &w->requests);
	if (rc == 0)
		rc = evd_ring_create("urgent", 64, on_requests, w, &w->urgent);
	/* no thread runs the loop yet: the main lcore adds at once */
	if (rc == 0)
		rc = evd_loop_add(w->loop, w->requests);
	if (rc == 0)
		rc = evd_timer_start(w->loop, 1000000, 1000000, on_tick, w, NULL);
	return rc;
}

static void
post(struct evd_source *ring, unsigned int lcore, uint64_t seq)
{
	struct evd_event ev = { .type = (uint16_t)lcore, .u64 = seq };

	while (evd_ring_post(ring, &ev) == -ENOBUFS) /* full: the worker catches up */
		rte_pause();
}

int
main(int argc, char **argv)
{
	uint64_t requests = 100000, want, handled = 0, wrong = 0;
	unsigned int lcore, n_workers = 0;
	int rc, fail = 0;

	rc = rte_eal_init(argc, argv);
	if (rc < 0) {
		fprintf(stderr, "multi-lcore: EAL initialisation failed\n");
		return 1;
	}
	if (argc - rc > 1)
		requests = strtoull(argv[rc + 1], NULL, 10);
	RTE_LCORE_FOREACH_WORKER(lcore) {
		rc = set_up(lcore);
		if (rc < 0) {
			fprintf(stderr, "multi-lcore: lcore %u: %s\n", lcore, strerror(-rc));
			return 1;
		}
		n_workers++;
	}
	if (n_workers == 0) {
		fprintf(stderr, "multi-lcore: give the EAL two lcores or more (-l 0-1)\n");
		return 1;
	}
	rte_eal_mp_remote_launch(run_worker, NULL, SKIP_MAIN);

	/* while they run: requests to each, and a change handed over */
	RTE_LCORE_FOREACH_WORKER(lcore)
		if (evd_loop_call(workers[lcore].loop, add_urgent, &workers[lcore]) < 0)
			fail = 1;
	for (uint64_t i = 0; i < requests; i++) {
		RTE_LCORE_FOREACH_WORKER(lcore) {
			struct worker *w = &workers[lcore];

			post(__atomic_load_n(&w->added, __ATOMIC_ACQUIRE) && i % 16 == 0 ?
			     w->urgent : w->requests, lcore, i);
		}
	}
	want = requests * n_workers;
	for (;;) {
		handled = 0;
		RTE_LCORE_FOREACH_WORKER(lcore)
			handled += __atomic_load_n(&workers[lcore].handled, __ATOMIC_ACQUIRE);
		if (handled >= want)
			break;
		rte_pause();
	}
	/* each loop's timer goes on while it sleeps */
	RTE_LCORE_FOREACH_WORKER(lcore)
		while (__atomic_load_n(&workers[lcore].ticks, __ATOMIC_RELAXED) < 3)
			rte_pause();
	/* stats are readable from any thread while the loops run */
	RTE_LCORE_FOREACH_WORKER(lcore) {
		struct evd_loop_stats st;

		if (evd_loop_stats_get(workers[lcore].loop, &st) == 0)
			printf("multi-lcore: %s: %" PRIu64 " events, %" PRIu64 " sleeps, %" PRIu64
			       " wakeups, %" PRIu64 " lost wakeups\n", evd_loop_name(workers[lcore].loop),
			       st.events, st.sleeps, st.wakeups, st.lost_wakeups);
	}

	/* any thread (a signal handler too) may stop a loop */
	RTE_LCORE_FOREACH_WORKER(lcore)
		evd_loop_stop(workers[lcore].loop);
	RTE_LCORE_FOREACH_WORKER(lcore)
		if (rte_eal_wait_lcore(lcore) != 0)
			fail = 1;
	/* no thread runs them now: the main lcore removes and destroys */
	RTE_LCORE_FOREACH_WORKER(lcore) {
		struct worker *w = &workers[lcore];

		wrong += w->wrong;
		if (!__atomic_load_n(&w->added, __ATOMIC_ACQUIRE))
			fail = 1;
		if (evd_loop_remove(w->loop, w->requests) < 0 ||
		    evd_loop_remove(w->loop, w->urgent) < 0 ||
		    evd_source_destroy(w->requests) < 0 || evd_source_destroy(w->urgent) < 0 ||
		    evd_loop_destroy(w->loop) < 0)
			fail = 1;
	}
	printf("multi-lcore: %u loops, %" PRIu64 " requests posted, %" PRIu64 " handled, %" PRIu64
	       " on the wrong lcore\n", n_workers, want, handled, wrong);
	rte_eal_cleanup();
	return fail || handled != want || wrong != 0;
}
