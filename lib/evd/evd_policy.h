/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef EVD_POLICY_H
#define EVD_POLICY_H

/**
 * @file
 * Policies: what a loop does when every source came back empty.
 *
 * A policy is chosen by a spec string: `NAME[:KEY=VALUE[,KEY=VALUE...]]`,
 * for example `adaptive`, `poll`, `intr`, `adaptive:p99_us=200`.
 * Values are unsigned decimal integers. Names are not case-sensitive
 * (`Adaptive` is `adaptive`). An unknown name is -ENOENT and the log lists
 * the registered ones; an unknown key, a repeated key or a bad value is
 * -EINVAL and the log names it; so is a spec of 256 characters or more, or
 * of more than 16 keys.
 *
 * Built-ins:
 * - `poll`: always poll again (lowest latency, 100% CPU).
 * - `intr`: arm and sleep as soon as a round is empty.
 * - `adaptive` (default): learns the idle gaps the loop sees, in a decayed
 *   histogram per context (the previous gap's length, and in a loop of
 *   several sources the source that began the gap), and spins for the
 *   threshold with the least expected cost, CPU + lambda x wake latency,
 *   under this process's B and L(g) (struct evd_policy_env); in a loop of
 *   several sources the superposition of each source's own gaps decides
 *   instead where it has cost less. Under a p99 target it naps
 *   (EVD_ACTION_NAP) while arrivals come two or more a nap, or C(nap) / B
 *   where that is more (a nap ends in a timeout), and in place of a spin
 *   with room for a nap and its lateness where C(nap) is under N; and it bounds
 *   its sleeps where the model says that pays (the guard: at 1, 2, 3, 5 or
 *   10 ms, at the host's halt window evd_policy_env::window_ns, or not).
 *   While the loop stays busy (512 completions a ms, over epochs of 1 ms or
 *   more), it paces its polls: the pause between them in force (0, 1, 3, 10
 *   or 30 us: EVD_ACTION_PAUSE, cut at the spin threshold)
 *   and its neighbours hold the loop 1 ms each in turn, and a longer pause
 *   is kept only where its completion rate beats the shorter ones' by
 *   0.5 % often enough: a turn it does scores 1, one it does not -2, and
 *   it is kept at 8, not at -5 nor after 32 turns (a peer whose cache
 *   lines the polls take runs faster).
 *   Keys:
 *   `p99_us` (a latency target, 1..1000000: the least CPU for which at most
 *   1 % of completions wait more than N us for the loop, as the model
 *   foretells them; a completion later than N is priced in CPU, the price
 *   learned at each update; naps fit within N; not with `lambda_pct`),
 *   `spin_max_us` (cap on the learned spin threshold, 0..1000000),
 *   `nap` (0/1; default 1: nap where the target leaves room),
 *   `lambda_pct` (price of a ns of latency in ns of CPU, x100, 0..1000000;
 *   default 100),
 *   `superpose` (0/1; default 1; 0: the context rule alone; off under a
 *   target).
 *   `learn`, `spin_pct`, `pause_ns`, `prewake`, `budget_us`, `guard_us` and
 *   `guard_for_us` are refused (-EINVAL, the log naming the replacement):
 *   the fixed rule `learn=0` is `ski2` (`ski2:b_ns=N` to spin N ns); waking
 *   before a periodic source's next arrival did not pay; a hand-set budget
 *   or bound is `p99_us=N`.
 *   doc/guides/policies.md has the model and how to tune it.
 * Baselines, copies of the rules in use elsewhere, for comparison:
 * - `l3fwd`: DPDK l3fwd-power (10 empty polls free, then 1 us waits, sleep with
 *   a 10 ms timeout at 300); keys `min_zero_polls` (10, 0..1000000),
 *   `suspend_threshold` (300, 1..1000000), `timeout_ms` (10, 1..10000).
 * - `pmdmgmt`: rte_power_pmd_mgmt PAUSE mode (512 empty polls, then pause; never
 *   sleeps); keys `empty_polls` (512, 0..1000000), `pause_ns` (1000, 1..1000000).
 * - `napi`: NAPI with deferred IRQs (napi_defer_hard_irqs, gro_flush_timeout:
 *   after each of the first `defer` empty polls, wait `timeout_us` with the
 *   IRQ masked and poll again; then re-enable the interrupt; timeout_us=0
 *   re-enables it at once); keys `defer` (2, 0..1000000), `timeout_us` (20,
 *   0..1000000).
 * - `haltpoll`: KVM halt polling (a halt, polling included, shorter than
 *   `max_ns` grows the window x2 from `start_ns` up to `max_ns`; one longer
 *   halves it, closing it under `start_ns`); keys `start_ns` (10000,
 *   1..1000000), `max_ns` (200000, 1..10000000; not under `start_ns`).
 * - `ski2`: spin `b_ns` (1..100000000; default: the measured B), then sleep.
 * - `ski-rand`: a random threshold on [0, B] per idle gap (e/(e-1)); `b_ns` (as
 *   ski2's), `seed` (any 64-bit value; default 1).
 *
 * A user policy fills struct evd_policy_ops and calls evd_policy_register();
 * its name is then usable in specs. Policy callbacks run on the loop thread.
 */

#include <stddef.h>
#include <stdint.h>

#include "evd.h"

#ifdef __cplusplus
extern "C" {
#endif

/** What the loop does next after an empty round. */
enum evd_action {
	EVD_ACTION_POLL = 0,  /**< Poll again at once. */
	/**
	 * Pause *arg_ns (0: 1 us; rte_pause loop), then poll; a timer of the loop
	 * due sooner ends it.
	 */
	EVD_ACTION_PAUSE = 1,
	EVD_ACTION_SLEEP = 2, /**< Arm, re-poll, wait at most *arg_ns (0: the loop's bound). */
	/**
	 * Nap: wait *arg_ns (0: 1 us) with nothing armed, then poll. Completions
	 * that arrive meanwhile raise no notification and are polled together at
	 * the end: interrupt moderation in software. Each waits up to the nap
	 * plus the timer's wake latency, so a policy naps only where that much
	 * latency is acceptable. A level-triggered fd, a timer of the loop, the
	 * loop's sleep bounds (max_sleep_us, poll_only_bound_us) or a stop may
	 * end it sooner. (A verbs CQ cannot be disarmed: one still armed from an
	 * earlier sleep may end a nap at its first completion.)
	 */
	EVD_ACTION_NAP = 3,
};

/** What the loop tells the policy at a decision point. */
struct evd_policy_input {
	uint64_t now_ns;        /**< Loop clock. */
	uint64_t idle_ns;       /**< Time since the last round that found completions. */
	uint64_t idle_rounds;   /**< Consecutive empty rounds. */
	uint32_t last_burst;    /**< Completions in the last non-empty round. */
	uint32_t n_sources;     /**< Registered sources. */
	uint32_t n_poll_only;   /**< Of those, sources without an fd. */
};

/** Why a sleep ended, as told to on_wake. */
enum evd_wake_reason {
	EVD_WAKE_NOTIFY = 0,  /**< A source's fd was ready. */
	EVD_WAKE_TIMEOUT = 1, /**< The wait's timeout expired. */
	EVD_WAKE_REPOLL = 2,  /**< The re-poll after arming found completions: no wait. */
	EVD_WAKE_STOP = 3,    /**< evd_loop_stop(). */
};

/** One KEY=VALUE of a spec, as given to a policy's create. */
struct evd_policy_param {
	const char *key; /**< The key, [a-z0-9_]+. */
	uint64_t value;  /**< Its value (unsigned decimal in the spec). */
};

/** Points at which the wake latency L(g) is measured. */
#define EVD_ENV_WAKE_POINTS 4
/** Points at which a timeout's CPU is measured (its lateness: at the
 * EVD_ENV_WAKE_POINTS of L). */
#define EVD_ENV_TIMEOUT_POINTS 2

/** The least B a calibration reports (ns): a loaded VM can report outliers. */
#define EVD_ENV_B_MIN_NS 1000
/** The most B a calibration reports (ns). */
#define EVD_ENV_B_MAX_NS 200000
/** The most B or L evd_policy_env_set() takes (ns): no machine's; the
 * model's figures (doubles made integers) would overflow far beyond. */
#define EVD_ENV_GIVEN_MAX_NS 10000000000ull

/**
 * Facts about the machine a policy may use, measured once per process
 * (evd_policy_env_calibrate()) or given (evd_policy_env_set()). B is CPU,
 * on the sleeping thread's own clock (CLOCK_THREAD_CPUTIME_ID), and L is
 * latency, on the wall clock, both measured as the loop pays them: runs of
 * eventfd wakes (the first 3 of each run a warm-up) from a busy producer on
 * the other CPUs to a sleeper pinned to the caller's CPU (the caller's
 * affinity is not changed). Where there is no other CPU or the placement is
 * refused, the producer shares the CPU and the log says so.
 * doc/guides/policies.md has the method and the figures.
 */
struct evd_policy_env {
	/** B: median CPU time of the sleeping thread for an epoll_wait woken by an
	 * eventfd write and the read that consumes it (after 10 and 100 us). */
	uint64_t sleep_wake_ns;
	/** Gaps at which the wake latency was measured: 10 us, 100 us, 1 ms, 10 ms. */
	uint64_t wake_at_ns[EVD_ENV_WAKE_POINTS];
	/** L(g): mean time from an eventfd write on another CPU to epoll_wait
	 * returning after sleeping wake_at_ns[i], the largest and smallest
	 * wake left out, and stalls (over 16 x the point's lower quartile and
	 * over 500 us); kept monotone in g by bringing a point down to a longer
	 * sleep's. Where a window is found (window_ns), L(100 us) counts the
	 * point's warm wakes alone, those under the geometric mean of the
	 * lesser of L(10 us) and L(100 us) and cold_wake_ns. */
	uint64_t wake_ns[EVD_ENV_WAKE_POINTS];
	/** Points at which a timeout's CPU was measured: 100 us, 1 ms (0: not
	 * measured; a given environment may leave them 0). */
	uint64_t timeout_at_ns[EVD_ENV_TIMEOUT_POINTS];
	/** C(g): median CPU time of the sleeping thread for an epoll_pwait2 that
	 * ends by its own timeout after timeout_at_ns[i], apart from B because
	 * a timer wake costs more than an eventfd's on a VM; interpolated on
	 * log g, flat outside; 0: B stands in. */
	uint64_t timeout_ns[EVD_ENV_TIMEOUT_POINTS];
	/** T(g): how late such a timed wait of wake_at_ns[i] returned (the
	 * loop runs again that long after a timeout or a nap), the mean
	 * without the largest and the smallest; interpolated on log g, flat
	 * outside; at every point or at none (0: not measured, L stands in). */
	uint64_t timeout_late_ns[EVD_ENV_WAKE_POINTS];
	/** The host's halt window: a sleep of at most this long wakes in L(g)
	 * only if the sleep before it was not longer; a longer one, and one
	 * within it right after a longer one, wake cold (at least
	 * cold_wake_ns), because the host has stopped polling the halted vCPU
	 * (KVM's halt polling shrinks its window after a halt that outlasts
	 * it; a governor's deeper C-state does the same on bare metal). 0: no
	 * such effect measured. The calibration tests it at 100 us
	 * (wake_at_ns[1]): set when a 100 us sleep right after a 2 ms one wakes
	 * over twice as late as the lesser of L(10 us) and L(100 us). */
	uint64_t window_ns;
	/** L of a sleep within window_ns that follows a longer sleep (the
	 * trimmed mean of the calibration's 100 us sleeps after 2 ms ones);
	 * measured even where window_ns is 0. */
	uint64_t cold_wake_ns;
	/** The 99th percentile of the counted wakes at wake_at_ns[0] (stalls
	 * out), for a p99 target, which asks whether a wake is late, not what it
	 * costs on average: adaptive prices the chance that a wake of L(g) ends
	 * past the target from the tail wake_p99_ns - wake_ns[0]. 0: not
	 * measured (a given environment may leave it 0: L alone then). */
	uint64_t wake_p99_ns;
};

/** The CPU price of a timed wait of @p g that ends by its timeout: C(g)
 * interpolated on log g, or B where C was not measured. Any thread.
 * @param env  The environment (@p env not checked for NULL).
 * @param g    The wait's length, ns.
 * @return the price in ns. */
double evd_policy_env_timeout_ns(const struct evd_policy_env *env, uint64_t g);

/** The CPU price of a sleep with a timer of @p g armed that a notification
 * ends first: C(g) up to timeout_at_ns[1], down to B at 10 x that
 * (interpolated on log g), B beyond and where C was not measured, because
 * a short timer costs whether it fires or not. Any thread.
 * @param env  The environment (not checked for NULL).
 * @param g    The timer's length, ns.
 * @return the price in ns. */
double evd_policy_env_bounded_sleep_ns(const struct evd_policy_env *env, uint64_t g);

/** How late a timed wait of @p g ends: T(g) interpolated on log g between
 * the points of L (flat outside them), or L(g) where T was not measured or
 * given. Any thread.
 * @param env  The environment (not checked for NULL).
 * @param g    The wait's length, ns.
 * @return the lateness in ns. */
double evd_policy_env_timeout_late_ns(const struct evd_policy_env *env, uint64_t g);

/** The wake latency of a notified sleep of @p g after one of @p prev_ns
 * (UINT64_MAX or 0: unknown, taken as warm): L(g), or at least
 * cold_wake_ns where the host has a window and g is past it, or within it
 * after a @p prev_ns past it. Any thread.
 * @param env      The environment (not checked for NULL).
 * @param g        The sleep's length, ns.
 * @param prev_ns  The sleep before it, ns.
 * @return the latency in ns. */
double evd_policy_env_wake_after_ns(const struct evd_policy_env *env, uint64_t g, uint64_t prev_ns);

/** L(g) from the environment, interpolated on log g (flat outside the
 * points). Any thread.
 * @param env  The environment (not checked for NULL).
 * @param g    The sleep's length, ns.
 * @return the latency in ns. */
double evd_policy_env_wake_ns(const struct evd_policy_env *env, uint64_t g);

/** A policy. All callbacks but decide are optional. */
struct evd_policy_ops {
	/** Its name in specs: [a-z0-9_-]+, shorter than EVD_NAME_MAX. */
	const char *name;
	/**
	 * Parse params and allocate state. Return -EINVAL (after logging the key)
	 * for a key it does not know or a value out of range, -ENOMEM for no
	 * memory; any other negative errno is logged by the library and told to
	 * the caller as -EINVAL.
	 */
	int (*create)(const struct evd_policy_param *params, unsigned int n,
		      const struct evd_policy_env *env, void **state);
	/** Free the state create() made. */
	void (*destroy)(void *state);
	/** Decide after an empty round; set *arg_ns for PAUSE, SLEEP and NAP. */
	enum evd_action (*decide)(void *state, const struct evd_policy_input *in, uint64_t *arg_ns);
	/**
	 * A round found @p n completions. The rounds of a busy streak after its
	 * first (no empty round between them) are told at once, at its end (the
	 * first empty round, arm or stop after it; in parts past 2^31): @p n
	 * their sum, @p now_ns the last one's time. on_source_events, where
	 * called, is told each round as it comes.
	 */
	void (*on_events)(void *state, uint64_t now_ns, uint32_t n);
	/**
	 * A sleep (or its re-poll) or a nap ended, after @p slept_ns (a nap that
	 * ran its length: EVD_WAKE_TIMEOUT).
	 */
	void (*on_wake)(void *state, uint64_t now_ns, uint64_t slept_ns, enum evd_wake_reason why);
	/** Whether the policy prices with env (evd_policy_env_get()); 0: it gets the defaults. */
	int needs_env;
	/**
	 * Optional: write what the policy has learned, as text ("key=value ..."),
	 * into buf (len bytes, NUL-terminated); shown by the /evd/stats telemetry
	 * command. Called from the telemetry thread while the loop runs: read
	 * the state, never write it.
	 */
	void (*describe)(const void *state, char *buf, size_t len);
	/**
	 * Optional: a round found @p n completions on the source @p source_id
	 * (an id the loop gives each source it adds, never reused). Called
	 * only in loops of more than one source, before the on_events that
	 * tells its round; lets a policy learn per source (adaptive: each
	 * source's gaps apart).
	 */
	void (*on_source_events)(void *state, uint64_t now_ns, uint32_t source_id, uint32_t n);
};

/**
 * Register a policy so that specs can name it. Control path, thread-safe.
 * The library keeps @p ops (not a copy): it must stay valid, unchanged,
 * for the rest of the process (a static const struct, as the built-ins').
 * @param ops  The policy's operations.
 * @return 0; -EINVAL for missing name/decide or a bad name; -EEXIST; -ENOSPC
 *   (at most 32 policies, built-ins included).
 */
int evd_policy_register(const struct evd_policy_ops *ops);

/**
 * Check a spec without creating a loop (does not calibrate). Any thread.
 * @param spec  The spec, e.g. "adaptive:p99_us=200".
 * @return 0; -EINVAL (bad syntax, key or value; logged); -ENOENT (unknown name);
 *   -ENOMEM (it makes an instance to check the values).
 */
int evd_policy_validate(const char *spec);

/**
 * Whether a spec's policy prices with the environment (B, L: adaptive,
 * ski2, ski-rand), so that an application measures it first
 * (evd_policy_env_calibrate()) or knows the defaults will do. Any thread.
 * @param spec  The spec, as evd_policy_validate() takes it.
 * @return 1 or 0; the errors of evd_policy_validate().
 */
int evd_policy_needs_env(const char *spec);

/** A policy instance, outside any loop (for simulators and scoring). */
struct evd_policy;

/**
 * Create a policy instance from a spec, as a loop would (a policy that
 * prices with the environment takes it: evd_policy_env_get()). Control path, any thread.
 * @param spec  The spec.
 * @param out   Receives the instance.
 * @return 0; -EINVAL (a bad spec, logged); -ENOENT (no such policy);
 *   -ENOMEM.
 */
int evd_policy_create(const char *spec, struct evd_policy **out);

/** Destroy an instance made by evd_policy_create(). The thread that uses it.
 * @param p  The instance (NULL: nothing). */
void evd_policy_destroy(struct evd_policy *p);

/** The instance's policy name. Any thread.
 * @param p  The instance.
 * @return its name; NULL (logged) for NULL. */
const char *evd_policy_name(const struct evd_policy *p);

/** Ask the instance what to do after an empty round (see decide). The
 * thread that uses it; fast path: the pointers are not checked for NULL.
 * @param p       The instance.
 * @param in      The round's input.
 * @param arg_ns  Receives the action's length (a sleep's bound, a pause's).
 * @return the action. */
enum evd_action evd_policy_decide(struct evd_policy *p, const struct evd_policy_input *in,
				  uint64_t *arg_ns);

/** Tell the instance a round found @p n completions (see on_events). The
 * thread that uses it; @p p not checked for NULL.
 * @param p       The instance.
 * @param now_ns  The round's time.
 * @param n       The completions. */
void evd_policy_events(struct evd_policy *p, uint64_t now_ns, uint32_t n);

/** Tell the instance a round found @p n completions on one source (see
 * on_source_events). The thread that uses it; @p p not checked for NULL.
 * @param p          The instance.
 * @param now_ns     The round's time.
 * @param source_id  The source's evd_source.id.
 * @param n          The completions. */
void evd_policy_source_events(struct evd_policy *p, uint64_t now_ns, uint32_t source_id,
			      uint32_t n);

/** Tell the instance a sleep or a nap ended (see on_wake). The thread that
 * uses it; @p p not checked for NULL.
 * @param p         The instance.
 * @param now_ns    The wake's time.
 * @param slept_ns  How long it slept.
 * @param why       What ended it. */
void evd_policy_wake(struct evd_policy *p, uint64_t now_ns, uint64_t slept_ns,
		     enum evd_wake_reason why);

/**
 * The environment the policies of this process price with: the one given
 * (evd_policy_env_set()) or measured (evd_policy_env_calibrate()), else
 * built-in defaults, taken on the first call and kept (a KVM guest's order
 * of magnitude: B 10 us, L 20 us). Never measures, starts no thread. Any
 * thread.
 * @return the environment (never NULL).
 */
const struct evd_policy_env *evd_policy_env_get(void);

/**
 * The environment if it is in place (given, measured, or the defaults a
 * policy took), else NULL; never takes the defaults (for reports: what the
 * policies of this process priced with).
 * @param given  if not NULL and the environment is there, set to whether
 *               evd_policy_env_set() gave it (untouched when this returns NULL).
 * @return the environment, or NULL. Any thread.
 */
const struct evd_policy_env *evd_policy_env_peek(bool *given);

/**
 * Give the environment instead of measuring it (a calibration saved from an
 * earlier run, so that scores are comparable across runs). Control path:
 * call it before the first loop or policy instance of the process.
 * @param env  The environment to use (copied).
 * @return 0; -EINVAL, with the reason logged (NULL, B of 0, B or an L over
 *   EVD_ENV_GIVEN_MAX_NS, or wake_at_ns not increasing from > 0, also as
 *   doubles: L is interpolated between them; L falling from one point to the
 *   next, as a measured environment never does; timeout_at_ns with one
 *   point set, or not increasing; C (timeout_ns) at one point only, or
 *   given without timeout_at_ns; T (timeout_late_ns) at some of its points
 *   only; window_ns without cold_wake_ns; any of C, T, window_ns,
 *   cold_wake_ns over EVD_ENV_GIVEN_MAX_NS);
 *   -EALREADY (the environment was measured or given already).
 */
int evd_policy_env_set(const struct evd_policy_env *env);

/**
 * Measure the environment (B, L at four sleep lengths, the timeout's CPU,
 * a timed wait's lateness at the same four, the host's halt window) for
 * this process: about 200 ms on the calling thread's CPU, with a producer
 * thread spinning on another CPU (more where wakes stall), logged at INFO. Control path,
 * any thread: call it at start-up, before the first loop or policy instance
 * that prices with costs (an adaptive one); otherwise the built-in defaults
 * are in place and stay.
 * @return 0; -EALREADY, logged (the environment was given, measured, or the
 *   defaults taken, already).
 */
int evd_policy_env_calibrate(void);

/**
 * Where the environment came from, for reports. Any thread.
 * @return "given", "measured" or "defaults"; NULL while none is in place
 *   (no policy has priced with one yet).
 */
const char *evd_policy_env_origin(void);

#ifdef __cplusplus
}
#endif

#endif /* EVD_POLICY_H */
