/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * One run: a producer thread (not an EAL thread) replays a pattern through a
 * source kind (ring, emulated verbs CQ, real verbs QP), stamping each event
 * with the TSC; the loop, on the calling lcore, delivers them under one
 * policy; a monitor thread reads the loop's stats while it runs and draws
 * the progress line.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <string.h>
#include <unistd.h>

#include <rte_common.h>
#include <rte_cycles.h>

#include <evd.h>

#include "clock.h"
#include "pattern.h"
#include "replay.h"
#include "report.h"
#include "run.h"
#include "source.h"
#include "stop.h"
#include "timeline.h"

#define DRAIN_LIMIT_NS (2ull * 1000 * 1000 * 1000)
/* a remote sender whose link stayed down this long is gone: no END will come */
#define PEER_GONE_NS 1000000000ull
/* After the sender's END, packets on other Rx queues may still be on their
 * way; past this they are lost (END's total counts them). */
#define END_GRACE_NS 200000000ull

static void *
producer(void *arg)
{
	struct run *r = arg;
	uint64_t end_all;

	if (r->kind->post != NULL) {
		run_replay(r);
		/* Drain: everything sent must arrive; give the loop a bounded time. */
		end_all = testevd_now_ns() + DRAIN_LIMIT_NS;
		while (__atomic_load_n(&r->delivered, __ATOMIC_RELAXED) <
			       __atomic_load_n(&r->sent, __ATOMIC_RELAXED) &&
		       testevd_now_ns() < end_all)
			usleep(1000);
	} else {
		/* A remote sender plays the pattern; it says when it is done
		 * (END: the source sets remote_done once all came, or END_GRACE_NS
		 * after it), or the deadline passes: --duration + REMOTE_GRACE_S,
		 * and REMOTE_GRACE_S after the sender's last packet while they
		 * come (its --send-delay, its probes, a trace longer than
		 * --duration). */
		const uint64_t grace_tsc = (uint64_t)(REMOTE_GRACE_S * (double)rte_get_tsc_hz());

		end_all = testevd_now_ns() + (uint64_t)((r->o->duration_s + REMOTE_GRACE_S) * 1e9);
		while (!__atomic_load_n(&r->remote_done, __ATOMIC_ACQUIRE) && !testevd_stopping()) {
			uint64_t down = __atomic_load_n(&r->peer_down_ns, __ATOMIC_ACQUIRE);
			uint64_t end = __atomic_load_n(&r->end_ns, __ATOMIC_ACQUIRE);
			uint64_t last = __atomic_load_n(&r->last_rx_tsc, __ATOMIC_RELAXED);
			uint64_t now = testevd_now_ns();

			if (down != 0 && now > down + PEER_GONE_NS)
				break;
			if (end != 0 && now > end + END_GRACE_NS) {
				__atomic_store_n(&r->remote_done, 1, __ATOMIC_RELEASE);
				break;
			}
			if (now >= end_all && (last == 0 || rte_rdtsc() - last > grace_tsc))
				break;
			usleep(10000); /* 100 wakeups/s: its CPU is the receiver's too */
		}
	}
	evd_loop_stop(r->loop); /* from a non-EAL thread, waking the loop if asleep */
	return NULL;
}

/* Make room for `need` elements of `size` in *arr (capacity *cap, doubling
 * from `first`). */
static bool
grow(void *arr, size_t *cap, size_t need, size_t first, size_t size)
{
	void **p = arr;
	size_t c = *cap ? *cap : first;
	void *a;

	if (need <= *cap)
		return true;
	while (c < need)
		c *= 2;
	a = realloc(*p, c * size);
	if (a == NULL)
		return false;
	*p = a;
	*cap = c;
	return true;
}

/* --timeline: drain the loop's mode transitions and take one sample of
 * (time, CPU, delivered); the monitor does it every 100 ms. */
static void
timeline_sample(struct run *r)
{
	struct evd_loop_stats st;
	int n;

	if (r->o->timeline == NULL)
		return;
	do {
		if (!grow(&r->tl_ev, &r->tl_cap, r->tl_n + 256, 4096, sizeof(*r->tl_ev)))
			return;
		n = evd_loop_trace_read(r->loop, &r->tl_cursor, r->tl_ev + r->tl_n, 256, &r->tl_lost);
		if (n > 0)
			r->tl_n += (size_t)n;
	} while (n == 256);
	if (!grow(&r->tl_s, &r->tl_scap, r->tl_sn + 1, 1024, sizeof(*r->tl_s)))
		return;
	evd_loop_stats_get(r->loop, &st);
	/* on the loop's clock, as the transitions are (the TSC, where it
	 * serves, drifts from CLOCK_MONOTONIC by its rate's error) */
	r->tl_s[r->tl_sn++] = (struct tl_sample){ evd_loop_now_ns(r->loop), st.cpu_ns,
						   __atomic_load_n(&r->delivered, __ATOMIC_RELAXED) };
}

/* Per window between two samples, up to the loop's end: events/s, CPU %,
 * and the time asleep from the transitions. */
static int
timeline_finish(struct run *r, const char *policy)
{
	size_t nw = r->tl_sn > 1 ? r->tl_sn - 1 : 0, k = 0;
	double *t = calloc(nw + 1, sizeof(double)), *rate = calloc(nw + 1, sizeof(double));
	double *cpu = calloc(nw + 1, sizeof(double)), *asleep = calloc(nw + 1, sizeof(double));
	uint32_t mode = EVD_MODE_POLL;
	char title[TESTEVD_POLICY_MAX + 96];
	struct evd_loop_stats st;
	uint64_t end = 0;
	int rc = -ENOMEM;

	if (nw > 0) {
		/* The monitor samples until it is joined, after the loop
		 * stopped: the loop ran sum(mode_ns) from about the first
		 * sample (taken as it starts), not past the last sample nor
		 * before its last transition. */
		evd_loop_stats_get(r->loop, &st);
		end = r->tl_s[0].t_ns;
		for (int m = 0; m < EVD_MODE_COUNT; m++)
			end += st.mode_ns[m];
		end = RTE_MIN(end, r->tl_s[nw].t_ns);
		if (r->tl_n > 0)
			end = RTE_MAX(end, r->tl_ev[r->tl_n - 1].t_ns);
		/* a window that starts after it holds none of the run, only zeros */
		while (nw > 1 && r->tl_s[nw - 1].t_ns >= end)
			nw--;
		/* a last window under half the one before joins it: too short
		 * to count events in, its rate would set the scale */
		if (nw > 1 && 2 * (end - r->tl_s[nw - 1].t_ns) <
				      r->tl_s[nw - 1].t_ns - r->tl_s[nw - 2].t_ns)
			nw--;
	}
	if (t != NULL && rate != NULL && cpu != NULL && asleep != NULL) {
		for (size_t w = 0; w < nw; w++) {
			/* the last window ends at the loop's end and takes its
			 * counts from the last sample, which has them all */
			const struct tl_sample *a = &r->tl_s[w];
			const struct tl_sample *b = &r->tl_s[w + 1 < nw ? w + 1 : r->tl_sn - 1];
			uint64_t bt = w + 1 < nw ? b->t_ns : end;
			double dt = (double)(bt - a->t_ns);
			uint64_t at = a->t_ns, slept = 0;

			/* walk the transitions inside [a, bt) */
			while (k < r->tl_n && r->tl_ev[k].t_ns < bt) {
				uint64_t ts = RTE_MAX(r->tl_ev[k].t_ns, a->t_ns);

				if (mode == EVD_MODE_SLEEP && ts > at)
					slept += ts - at;
				at = RTE_MAX(at, ts);
				mode = r->tl_ev[k++].mode;
			}
			if (mode == EVD_MODE_SLEEP && bt > at)
				slept += bt - at;
			t[w] = (double)(a->t_ns - r->tl_s[0].t_ns) / 1e9;
			rate[w] = dt > 0 ? (double)(b->delivered - a->delivered) * 1e9 / dt : 0;
			cpu[w] = dt > 0 ? 100.0 * (double)(b->cpu_ns - a->cpu_ns) / dt : 0;
			asleep[w] = dt > 0 ? fmin(100.0, 100.0 * (double)slept / dt) : 0;
		}
		if (nw > 0)
			t[nw] = (double)(end - r->tl_s[0].t_ns) / 1e9;
		snprintf(title, sizeof(title), "policy %s, %s, real time, %zu transitions%s", policy,
			 r->kind->name, r->tl_n, r->tl_lost ? " (some lost)" : "");
		rc = timeline_write(r->o->timeline, title, (unsigned int)nw, t, rate, cpu, asleep);
	}
	free(t);
	free(rate);
	free(cpu);
	free(asleep);
	return rc;
}

static const char *const mode_names[] = { "poll", "pause", "sleep" };

static void *
monitor(void *arg)
{
	struct run *r = arg;
	struct evd_loop_stats st, prev;
	uint64_t t_prev = testevd_now_ns(), d_prev = 0;

	evd_loop_stats_get(r->loop, &prev);
	timeline_sample(r);
	while (!__atomic_load_n(&r->done, __ATOMIC_ACQUIRE)) {
		uint64_t t, d;
		double dt;

		usleep(r->o->timeline != NULL ? 100000 : 250000);
		timeline_sample(r);
		if (!r->o->progress)
			continue;
		t = testevd_now_ns();
		d = __atomic_load_n(&r->delivered, __ATOMIC_RELAXED);
		evd_loop_stats_get(r->loop, &st);
		dt = (double)(t - t_prev);
		fprintf(stdout, "\r  %-9s %10.0f ev/s   mode %-5s   cpu %5.1f%%   delivered %-10" PRIu64
			"  lost wakeups %" PRIu64 "   ",
			r->kind->post == NULL ? "receive" :
			r->pat->phases[__atomic_load_n(&r->phase, __ATOMIC_RELAXED)].name,
			(double)(d - d_prev) * 1e9 / dt, mode_names[st.mode % 3],
			100.0 * (double)(st.cpu_ns - prev.cpu_ns) / dt, d, st.lost_wakeups);
		fflush(stdout);
		prev = st;
		t_prev = t;
		d_prev = d;
	}
	if (r->o->progress) {
		fprintf(stdout, "\r%*s\r", 110, "");
		fflush(stdout);
	}
	return NULL;
}

/* EAL pinned this (the main lcore's) thread; threads it creates inherit that.
 * Keep the producer and the monitor off the loop's CPU when there is another,
 * so that the loop's CPU and latency figures are its own. */
static void
place_off_loop_cpu(pthread_attr_t *attr)
{
	cpu_set_t mine, others;
	long n = sysconf(_SC_NPROCESSORS_ONLN);

	CPU_ZERO(&others);
	if (pthread_getaffinity_np(pthread_self(), sizeof(mine), &mine) != 0)
		return;
	for (long c = 0; c < n && c < CPU_SETSIZE; c++)
		if (!CPU_ISSET(c, &mine))
			CPU_SET(c, &others);
	if (CPU_COUNT(&others) > 0)
		pthread_attr_setaffinity_np(attr, sizeof(others), &others);
}

/* The source kinds this build has (NULL: unknown or not built). */
static const struct source_kind *
source_kind_find(const char *name)
{
	static const struct source_kind *const kinds[] = {
		&source_ring,
#ifdef TESTEVD_HAVE_VERBS
		&source_verbs_emu,
		&source_verbs,
#endif
		&source_ethdev,
	};

	for (size_t i = 0; i < RTE_DIM(kinds); i++)
		if (strcmp(kinds[i]->name, name) == 0)
			return kinds[i];
	return NULL;
}

int
run_pattern(const struct opts *o, const char *policy, struct result *res)
{
	struct evd_loop_conf conf = {
		.name = "testevd",
		.policy = policy,
		.max_sleep_us = o->max_sleep_us,
	};
	struct run *r;
	struct evd_loop_stats st;
	pthread_t prod, mon;
	pthread_attr_t attr;
	uint64_t t0, t1;
	bool have_mon;
	int rc;

	r = aligned_alloc(RTE_CACHE_LINE_SIZE, RTE_ALIGN_CEIL(sizeof(*r), RTE_CACHE_LINE_SIZE));
	if (r == NULL)
		return -ENOMEM;
	memset(r, 0, sizeof(*r));
	memset(res, 0, sizeof(*res));
	snprintf(res->policy, sizeof(res->policy), "%s", policy);
	r->kind = source_kind_find(o->source);
	res->source = r->kind->name;
	res->pattern = r->kind->post == NULL ? "remote" : o->trace != NULL ? o->trace : o->pattern;
	r->lat = &res->lat;
	r->o = o;
	r->pat = pattern_find(o->pattern);
	testevd_tsc_hz(); /* before anything is timed: the first call measures */
	rc = r->kind->prepare != NULL ? r->kind->prepare(r) : 0;
	if (rc < 0)
		goto out;
	rc = evd_loop_create(&conf, &r->loop);
	if (rc < 0) {
		if (r->kind->prepare != NULL)
			r->kind->close(r, res); /* (r->loop NULL: nothing to remove) */
		goto out;
	}
	rc = r->kind->open(r);
	if (rc < 0)
		goto out_loop;
	if (o->timeline != NULL) {
		rc = evd_loop_trace_enable(r->loop, 1u << 16);
		if (rc < 0)
			goto out_close;
	}

	pthread_attr_init(&attr);
	place_off_loop_cpu(&attr);
	t0 = testevd_now_ns();
	if (pthread_create(&prod, &attr, producer, r) != 0) {
		pthread_attr_destroy(&attr);
		rc = -EAGAIN;
		goto out_close;
	}
	/* no progress line if the monitor cannot start; not fatal */
	have_mon = (o->progress || o->timeline != NULL) &&
		   pthread_create(&mon, &attr, monitor, r) == 0;
	pthread_attr_destroy(&attr);
	rc = evd_loop_run(r->loop);
	t1 = testevd_now_ns();
	pthread_join(prod, NULL);
	if (have_mon) {
		__atomic_store_n(&r->done, 1, __ATOMIC_RELEASE);
		pthread_join(mon, NULL);
	}
	if (o->timeline != NULL) {
		int trc;

		timeline_sample(r);
		trc = timeline_finish(r, policy);
		if (trc < 0) {
			fprintf(stderr, "testevd: --timeline %s: %s\n", o->timeline, strerror(-trc));
			res->timeline_failed = true;
		}
	}
	/* Whatever the drain left behind is counted as lost, never hidden. */
	evd_loop_stats_get(r->loop, &st);
	if (r->started) {
		/* a remote sender: from its first packet on (lost wakeups and
		 * errors stay the whole run's: failures are never left out) */
		const struct evd_loop_stats *b = &r->start_st;

		t0 = r->start_ns;
		st.sleeps -= b->sleeps;
		st.naps -= b->naps;
		st.wakeups -= b->wakeups;
		st.spurious_wakeups -= b->spurious_wakeups;
		st.repoll_hits -= b->repoll_hits;
		st.sleep_timeouts -= b->sleep_timeouts;
		st.mode_switches -= b->mode_switches;
		st.cpu_ns -= b->cpu_ns;
		for (int m = 0; m < 3; m++)
			st.mode_ns[m] -= b->mode_ns[m];
	}
	if (r->kind->post == NULL) /* the remote sender's count, from its END packet */
		r->sent = __atomic_load_n(&r->remote_done, __ATOMIC_ACQUIRE) ? r->remote_total
									    : r->delivered;
	res->events_sent = r->sent;
	res->events_delivered = r->delivered;
	res->events_lost = r->sent > r->delivered ? r->sent - r->delivered : 0;
	res->incomplete = r->kind->post == NULL && !__atomic_load_n(&r->remote_done,
								     __ATOMIC_ACQUIRE);
	res->link_lost = res->incomplete && __atomic_load_n(&r->peer_down_ns, __ATOMIC_ACQUIRE) != 0;
	res->stopped = testevd_stopping() != 0;
	res->lost_wakeups = st.lost_wakeups;
	res->errors = st.errors;
	res->sleeps = st.sleeps;
	res->naps = st.naps;
	res->wakeups = st.wakeups;
	res->spurious_wakeups = st.spurious_wakeups;
	res->repoll_hits = st.repoll_hits;
	res->sleep_timeouts = st.sleep_timeouts;
	res->mode_switches = st.mode_switches;
	res->wall_ns = t1 - t0;
	res->cpu_ns = st.cpu_ns;
	for (int m = 0; m < 3; m++)
		res->mode_ns[m] = st.mode_ns[m];
	res->runs = 1;
	if (o->linger_s > 0) { /* the loop and its sources stay, for telemetry */
		printf("testevd: run done; loop %s stays %.1f s for telemetry (/evd/list)\n",
		       evd_loop_name(r->loop), o->linger_s);
		fflush(stdout);
		for (double s = 0; s < o->linger_s && !testevd_stopping(); s += 0.1)
			usleep(100000);
	}
out_close:
	r->kind->close(r, res); /* adds the source's own counters (ring_full) */
	result_finish(res);
	/* a rate the producer cannot post at stretches the run past its pattern */
	if (rc >= 0 && r->kind->post != NULL && o->trace == NULL && !res->stopped &&
	    res->duration_s > 1.25 * o->duration_s + 0.5)
		fprintf(stderr, "testevd: %s: the run took %.1f s for a %.1f s pattern: the producer "
			"could not post at --rate %.0f (the ring full %" PRIu64 " times)\n", policy,
			res->duration_s, o->duration_s, o->rate, res->ring_full);
out_loop:
	evd_loop_destroy(r->loop);
out:
	free(r->tl_ev);
	free(r->tl_s);
	free(r);
	return rc;
}
