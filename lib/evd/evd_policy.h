/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef EVD_POLICY_H
#define EVD_POLICY_H

/**
 * @file
 * Policies: what a loop does when every source came back empty.
 *
 * A policy is chosen by a spec string: `NAME[:KEY=VALUE[,KEY=VALUE...]]`,
 * for example `adaptive`, `poll`, `intr`, `adaptive:budget_us=50`.
 * Values are unsigned decimal integers. An unknown name is -ENOENT; an
 * unknown key, a repeated key or a bad value is -EINVAL and the log names it.
 *
 * Built-ins:
 * - `poll`: always poll again (lowest latency, 100% CPU).
 * - `intr`: arm and sleep as soon as a round is empty.
 * - `adaptive` (default): keep the core busy for a budget after the last
 *   completion (poll, then pause), then arm and sleep. The budget is this
 *   machine's measured sleep-and-wake cost (ski rental). Keys: `budget_us`
 *   (set the budget instead, 0..1000000), `spin_pct` (part of the budget
 *   spent polling before pausing, 0..100; default 50), `pause_ns` (length of
 *   one pause, 1..1000000; default 1000).
 *
 * A user policy fills struct evd_policy_ops and calls evd_policy_register();
 * its name is then usable in specs. Policy callbacks run on the loop thread.
 */

#include <stdint.h>

#include "evd.h"

#ifdef __cplusplus
extern "C" {
#endif

/** What the loop does next after an empty round. */
enum evd_action {
	EVD_ACTION_POLL = 0,  /**< Poll again at once. */
	EVD_ACTION_PAUSE = 1, /**< Pause for *arg_ns (rte_pause loop), then poll. */
	EVD_ACTION_SLEEP = 2, /**< Arm, re-poll, wait at most *arg_ns (0: the loop's bound). */
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
	const char *key;
	uint64_t value;
};

/** Facts about the machine a policy may use, measured once per process. */
struct evd_policy_env {
	uint64_t sleep_wake_ns; /**< Median cost of arm + sleep + wake by eventfd + ack. */
};

/** A policy. All callbacks but decide are optional. */
struct evd_policy_ops {
	const char *name;
	/**
	 * Parse params and allocate state. Return -EINVAL (after logging the key)
	 * for a key it does not know or a value out of range.
	 */
	int (*create)(const struct evd_policy_param *params, unsigned int n,
		      const struct evd_policy_env *env, void **state);
	void (*destroy)(void *state);
	/** Decide after an empty round; set *arg_ns for PAUSE and SLEEP. */
	enum evd_action (*decide)(void *state, const struct evd_policy_input *in, uint64_t *arg_ns);
	/** A round found @p n completions. */
	void (*on_events)(void *state, uint64_t now_ns, uint32_t n);
	/** A sleep (or its re-poll) ended, after @p slept_ns. */
	void (*on_wake)(void *state, uint64_t now_ns, uint64_t slept_ns, enum evd_wake_reason why);
	/** Whether the policy needs env (the one-time calibration); 0 skips it. */
	int needs_env;
};

/**
 * Register a policy so that specs can name it. Control path, thread-safe.
 * @return 0; -EINVAL for missing name/decide or a bad name; -EEXIST; -ENOSPC
 *   (at most 16 policies).
 */
int evd_policy_register(const struct evd_policy_ops *ops);

/**
 * Check a spec without creating a loop (does not calibrate).
 * @return 0; -EINVAL (bad syntax, key or value; logged); -ENOENT (unknown name).
 */
int evd_policy_validate(const char *spec);

/**
 * The environment measured for this process (measures on first call,
 * about a millisecond; later calls return the cached result).
 */
const struct evd_policy_env *evd_policy_env_get(void);

#ifdef __cplusplus
}
#endif

#endif /* EVD_POLICY_H */
