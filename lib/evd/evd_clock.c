/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The loop's clock and the CPU's timing: CLOCK_MONOTONIC, the TSC where it
 * serves (its rate measured once after the EAL is up), the thread's CPU
 * clock, and whether a pause can use the CPU's light wait.
 */
/* rte_power_pause and the CPU's intrinsics are experimental in DPDK 22.11:
 * the pause uses them as rte_power_pmd_mgmt does. */
#define ALLOW_EXPERIMENTAL_API
#include <pthread.h>
#include <string.h>
#include <time.h>

#include <rte_common.h>
#include <rte_cpuflags.h>
#include <rte_cycles.h>
#include <rte_power_intrinsics.h>

#include "evd_private.h"

uint64_t
evd__monotonic_ns(void *arg)
{
	struct timespec ts;

	RTE_SET_USED(arg);
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The default clock where the TSC serves (tsc_rate): a TSC read and a
 * multiply, against clock_gettime's 26 ns on a KVM guest's kvm-clock (an
 * empty round of the ring: 12.8 ns against 35). A TSC a shade behind tsc0
 * (the loop created on one CPU, run on another) reads as ns0. */
static uint64_t
tsc_now_ns(void *arg)
{
	const struct evd__tsc_clock *c = arg;
	int64_t d = (int64_t)(rte_get_tsc_cycles() - c->tsc0);

	return c->ns0 + (d > 0 ? (uint64_t)((double)d * c->ns_per_tick) : 0);
}

#define TSC_SPAN_NS 5000000ull /* the rate is measured over this... */
#define TSC_PAIR_NS 500.0      /* ...between (TSC, CLOCK_MONOTONIC) pairs read this close */

/* A CLOCK_MONOTONIC read and the TSC at its middle: of 16 tries, the one
 * between the two closest TSC reads; its width in ticks. */
static uint64_t
tsc_pair(uint64_t *tsc, uint64_t *mono)
{
	uint64_t width = UINT64_MAX;

	*tsc = rte_rdtsc_precise();
	*mono = evd__monotonic_ns(NULL);
	for (int i = 0; i < 16; i++) {
		uint64_t a = rte_rdtsc_precise(), m = evd__monotonic_ns(NULL), b = rte_rdtsc_precise();

		if (b > a && b - a < width) {
			width = b - a;
			*tsc = a + width / 2;
			*mono = m;
		}
	}
	return width;
}

static pthread_mutex_t tsc_lock = PTHREAD_MUTEX_INITIALIZER;
static bool tsc_tried;         /* under tsc_lock: measured (or found unusable) after EAL */
static double tsc_ns_per_tick; /* 0: the loop clock is CLOCK_MONOTONIC */

/* On x86 the TSC serves only where the CPU says it is invariant (one rate
 * in every P- and C-state). Its rate is measured here, against
 * CLOCK_MONOTONIC over 5 ms, not taken from rte_get_tsc_hz(): on this
 * project's KVM guests EAL reports the nominal 2.1 GHz of a TSC that runs
 * at 2.096, and a loop clock on that ran 0.19 % slow (its timers late, its
 * idle times short). Each end is a pair read within 500 ns (an error of
 * 1e-4 at most); three tries, else CLOCK_MONOTONIC. */
static void
tsc_rate_measure(void)
{
	double hz = (double)rte_get_tsc_hz();

#ifdef RTE_ARCH_X86
	if (rte_cpu_get_flag_enabled(RTE_CPUFLAG_INVTSC) <= 0)
		return;
#endif
	for (int i = 0; i < 3; i++) {
		uint64_t t0, m0, t1, m1, w0 = tsc_pair(&t0, &m0), w1;
		struct timespec ts = { 0, (long)TSC_SPAN_NS };

		nanosleep(&ts, NULL);
		w1 = tsc_pair(&t1, &m1);
		if ((double)RTE_MAX(w0, w1) * 1e9 / hz <= TSC_PAIR_NS && t1 > t0 &&
		    m1 >= m0 + TSC_SPAN_NS) {
			tsc_ns_per_tick = (double)(m1 - m0) / (double)(t1 - t0);
			EVD_LOG(DEBUG, "loop clock: the TSC, %.0f Hz against CLOCK_MONOTONIC "
				"(rte_get_tsc_hz() %.0f)", 1e9 / tsc_ns_per_tick, hz);
			return;
		}
	}
	EVD_LOG(INFO, "loop clock: CLOCK_MONOTONIC (the TSC's rate could not be measured: "
		"CLOCK_MONOTONIC reads took over %.0f ns)", TSC_PAIR_NS);
}

/* The TSC's ns per tick, or 0: CLOCK_MONOTONIC. Measured once per process,
 * at the first loop created after rte_eal_init() (before it EAL knows no
 * TSC rate, rte_get_tsc_hz() is 0, and loops read CLOCK_MONOTONIC). */
static double
tsc_rate(void)
{
	double r;

	if (rte_get_tsc_hz() == 0)
		return 0;
	pthread_mutex_lock(&tsc_lock);
	if (!tsc_tried)
		tsc_rate_measure();
	tsc_tried = true;
	r = tsc_ns_per_tick;
	pthread_mutex_unlock(&tsc_lock);
	return r;
}

int
evd_clock_tsc_hz(double *hz)
{
	double ns_per_tick;

	if (hz == NULL)
		return EVD_ARG_ERR(-EINVAL, "evd_clock_tsc_hz: NULL hz");
	if (rte_get_tsc_hz() == 0)
		return EVD_ARG_ERR(-EAGAIN, "evd_clock_tsc_hz: before rte_eal_init()");
	ns_per_tick = tsc_rate();
	if (ns_per_tick <= 0)
		return EVD_ARG_ERR(-ENOTSUP, "evd_clock_tsc_hz: no TSC rate measured on this host");
	*hz = 1e9 / ns_per_tick;
	return 0;
}

const char *
evd__clock_name(const struct evd_loop *loop)
{
	if (loop->clock.now_ns == tsc_now_ns)
		return "tsc";
	return loop->clock.now_ns == evd__monotonic_ns ? "monotonic" : "custom";
}

uint64_t
evd__thread_cpu_ns(void)
{
	struct timespec ts;

	if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) < 0)
		return 0;
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}


/* The CPU's light wait (TPAUSE: rte_power_pause), where it has one and the
 * EAL measured the TSC; -1: not looked yet (evd__power_pause()). */
static int power_pause = -1;

bool
evd__power_pause(void)
{
	int p = __atomic_load_n(&power_pause, __ATOMIC_RELAXED);

	if (p < 0) {
		struct rte_cpu_intrinsics in;

		memset(&in, 0, sizeof(in));
		rte_cpu_get_intrinsics_support(&in);
		p = in.power_pause && evd__eal_up() && rte_get_tsc_hz() != 0;
		__atomic_store_n(&power_pause, p, __ATOMIC_RELAXED);
	}
	return p != 0;
}

void
evd__clock_default(struct evd_loop *loop)
{
	if ((loop->tsc.ns_per_tick = tsc_rate()) > 0) {
		tsc_pair(&loop->tsc.tsc0, &loop->tsc.ns0);
		loop->clock = (struct evd_clock){ .now_ns = tsc_now_ns, .arg = &loop->tsc };
	} else {
		loop->clock.now_ns = evd__monotonic_ns;
	}
}

void
evd__power_pause_wait(uint64_t ns)
{
	(void)rte_power_pause(rte_rdtsc() + ns * rte_get_tsc_hz() / 1000000000ull);
}
