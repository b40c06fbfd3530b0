/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef EVD_H
#define EVD_H

/**
 * @file
 * evd: busy-poll completion sources, and sleep on their interrupts when idle
 * without ever losing a wakeup.
 *
 * Concepts:
 * - A **loop** (struct evd_loop) is owned by one thread (an lcore or any
 *   pthread). It holds sources, timers, one epoll set, a policy and stats.
 *   Loops share nothing: N loops on N lcores scale independently.
 * - A **source** (struct evd_source) is polled for bursts of completions and,
 *   optionally, armed to raise a notification on a file descriptor. Built-in
 *   sources: the software event ring (evd_ring_*) and any pollable fd
 *   (evd_fd_*). Drivers add more through evd_source.h.
 * - A **policy** decides, each time every source came back empty, whether
 *   to poll again, pause briefly, or arm and sleep (evd_policy.h).
 *
 * Call order: evd_loop_create(), evd_ring_create() / evd_fd_create() /
 * a driver's constructor, evd_loop_add(), then evd_loop_run() until another
 * thread calls evd_loop_stop() (or evd_loop_step() from the application's
 * own main loop), evd_loop_remove(), evd_source_destroy(),
 * evd_loop_destroy().
 *
 * The fast path: one loop step polls every source (one indirect call each);
 * a source hands what it found to the handler the application registered.
 * When all sources are empty the policy decides; on "sleep" the loop runs
 * the arm protocol: arm every armable source, re-poll every source, and
 * only if all are still empty wait on epoll, then acknowledge each
 * notification exactly once. Applications never arm, re-poll or ack.
 *
 * All functions return 0 (or a count) on success and a negative errno value
 * on failure, unless stated otherwise; every refusal logs one line (lib.evd)
 * naming the argument, except evd_loop_stop(), which must stay
 * async-signal-safe, and the two states a caller polls for, which are no
 * refusal: -ESHUTDOWN (the loop was stopped) and -ENODATA (no trace is
 * recorded).
 *
 * Threads (doc/guides/threads.md has the table). Each function says which
 * thread may call it. The control calls (evd_loop_add(), evd_loop_remove(),
 * evd_timer_start(), evd_timer_cancel()) act at once on the thread that
 * runs the loop (from its handlers and callbacks) or while no thread runs
 * it; from any other thread while it runs they return -EBUSY and log the
 * call: hand them to the loop with evd_loop_call(), which any thread may
 * use. While another thread's control call holds an idle loop, a call that
 * needs it waits for that call to end, unless its own thread holds a loop
 * by a control call (it is in one's callbacks: on_error, a call
 * evd_loop_destroy() runs): then it returns -EDEADLK and logs, since the
 * other thread may be waiting for that loop. Calls after evd_loop_destroy()
 * or evd_source_destroy() on the object destroyed are undefined, as free()
 * twice is; the library catches them where that is cheap (a poison value
 * checked on entry: -EINVAL).
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct evd_loop;
struct evd_source;
struct evd_timer;

/** Maximum length of a loop or source name, including the terminating NUL: a
 * longer one is refused (-EINVAL). */
#define EVD_NAME_MAX 32

/** Default of evd_loop_conf.max_sources. */
#define EVD_DEFAULT_MAX_SOURCES (1u << 20)
/** Largest evd_loop_conf.max_sources. */
#define EVD_MAX_SOURCES (1u << 24)

/** Bound on a sleep while a source whose notification the loop cannot
 * check is armed (a device's interrupt: verbs, ethdev), in microseconds,
 * when evd_loop_conf.max_sleep_us is 0. */
#define EVD_DEFAULT_MAX_SLEEP_US 100000
/** Default bound on a sleep while a poll-only source is registered, in microseconds. */
#define EVD_DEFAULT_POLL_ONLY_BOUND_US 1000

/**
 * A clock, for tests that need deterministic time (SPDK-style virtual clock).
 * @p now_ns must be monotonic. Without @p wait_ns the loop still waits in
 * real time: a virtual clock changes what the policy and the timers see, not
 * how long epoll waits.
 *
 * Without one, the loop reads the TSC where it serves: in a loop created
 * after rte_eal_init() and, on x86, where the CPU reports an invariant TSC.
 * Its rate is measured against CLOCK_MONOTONIC (5 ms, once per process, at
 * the first such loop); its nanoseconds start from CLOCK_MONOTONIC at
 * evd_loop_create() and go on at that rate, so they stay close to
 * CLOCK_MONOTONIC (apart by the rate's error, at most 1e-4, and NTP's
 * slewing, which the TSC does not follow). Elsewhere (before EAL, or a TSC
 * that is not invariant) it reads CLOCK_MONOTONIC. An empty round reads the
 * clock once (twice with an on_idle callback): on a KVM guest, clock_gettime()
 * on kvm-clock costs about 26 ns and the TSC 11. Telemetry's /evd/stats says
 * which clock a loop reads ("tsc", "monotonic" or "custom").
 */
struct evd_clock {
	uint64_t (*now_ns)(void *arg); /**< Current time in nanoseconds. */
	void *arg;                     /**< Passed to now_ns and wait_ns. */
	/**
	 * Optional, for a virtual clock: called where the loop would wait, on
	 * the loop's thread, instead of the wait; the loop then only looks at
	 * its notifications (epoll without a timeout). It moves now_ns on by
	 * what the wait would have lasted and may post to the loop's rings
	 * meanwhile: a post to an armed ring during a sleep ends it as in real
	 * time (the loop's fd turns readable), so a simulation runs the real
	 * round, hours of traffic in seconds. NULL: the loop waits in real time.
	 * @p mode EVD_MODE_PAUSE (a pause of @p max_ns) or EVD_MODE_SLEEP;
	 * @p armed true for a sleep (sources armed), false for a nap; @p max_ns
	 * the wait's bound, UINT64_MAX for none.
	 */
	void (*wait_ns)(void *arg, uint32_t mode, bool armed, uint64_t max_ns);
};

/** Loop configuration. Zero-initialise it, then set what you need. */
struct evd_loop_conf {
	/** Name used in logs and stats; NULL gives "evd". Under EVD_NAME_MAX
	 *  bytes, with no control character (a log line prints it). */
	const char *name;
	/** Policy spec, see evd_policy.h (e.g. "adaptive:p99_us=200"); NULL gives "adaptive". */
	const char *policy;
	/** Upper bound on any single sleep, in microseconds. 0: none while every
	 *  armed source's notification is one the loop can trust (rings, level
	 *  fds: an idle loop of those never wakes), EVD_DEFAULT_MAX_SLEEP_US
	 *  while a device's interrupt is armed (a backstop should it be lost). */
	uint32_t max_sleep_us;
	/** Upper bound on a sleep while a poll-only source is registered; 0 gives the default. */
	uint32_t poll_only_bound_us;
	/** Maximum completions a source may hand over per poll, at most 256; 0 gives 32. */
	uint16_t burst;
	/**
	 * Optional clock; NULL: the TSC where it serves, else CLOCK_MONOTONIC (see
	 * struct evd_clock).
	 */
	const struct evd_clock *clock;
	/**
	 * Optional error callback: called on the loop thread when a source's
	 * op fails (@p err is the negative errno) and the loop goes on; for
	 * evd_source_report_error() while no thread runs the loop, on its
	 * caller's thread, holding the loop as a control call does.
	 */
	void (*on_error)(struct evd_loop *loop, struct evd_source *src, int err, void *arg);
	/** Argument for on_error. */
	void *on_error_arg;
	/**
	 * Optional idle callback: called on the loop thread after every round
	 * that found no completion on any source, before the policy decides
	 * to poll again, pause or sleep. Flush here what the handlers batched
	 * (e.g. packets held in an rte_eth_tx_buffer): the loop may sleep
	 * next, and a batch left in a buffer would wait for the next wakeup.
	 * When traffic is light the batch leaves one empty poll after it was
	 * made; under load batches fill and per-burst costs are shared. A
	 * loop whose other sources keep every round busy never calls it: bound
	 * such batches another way too (a timer, or a size). It is not called
	 * when the loop stops: flush once more after evd_loop_run() returns.
	 * It runs on every empty round while the loop spins: keep it short.
	 * (This field was appended after the first fields; there is no ABI
	 * promise before the first release: build against the header of the
	 * library you run with.)
	 */
	void (*on_idle)(struct evd_loop *loop, void *arg);
	/** Argument for on_idle. */
	void *on_idle_arg;
	/** Most sources the loop takes (evd_loop_add() past it: -ENOSPC), at
	 *  most EVD_MAX_SOURCES; 0 gives EVD_DEFAULT_MAX_SOURCES. */
	uint32_t max_sources;
	/** The NUMA socket of the loop's memory, which comes from
	 *  rte_zmalloc_socket() when the EAL is up (libc's malloc before):
	 *  0 gives the calling lcore's (rte_socket_id()); EVD_SOCKET(n) socket
	 *  n; EVD_SOCKET_ANY any. */
	int numa_socket;
};

/** evd_loop_conf.numa_socket of socket @p n (0 in a zeroed conf is the
 *  calling lcore's socket). */
#define EVD_SOCKET(n) ((n) + 1)
/** evd_loop_conf.numa_socket: memory from any socket (SOCKET_ID_ANY). */
#define EVD_SOCKET_ANY (-1)

/** What the loop is doing right now (also the three columns of the time stats). */
enum evd_mode {
	EVD_MODE_POLL = 0,  /**< Busy polling (includes running handlers). */
	EVD_MODE_PAUSE = 1, /**< CPU-friendly pause between polls. */
	EVD_MODE_SLEEP = 2, /**< Waiting on epoll: armed, or napping (EVD_ACTION_NAP). */
	EVD_MODE_COUNT
};

/** Counters of a loop. See doc/guides/concepts.md for the exact meaning of each. */
struct evd_loop_stats {
	uint64_t polls;            /**< Polls of its sources, each (a round of N sources: N). */
	uint64_t empty_polls;      /**< Rounds in which every source was empty. */
	uint64_t events;           /**< Completions handed to handlers. */
	uint64_t arms;             /**< Successful source arms. */
	uint64_t repoll_hits;      /**< Re-polls after arming that found completions. */
	uint64_t sleeps;           /**< Armed waits on epoll entered (naps not included). */
	/** Waits (sleeps and naps) that ended because an fd was ready, or a signal
	 *  (EINTR: also spurious). */
	uint64_t wakeups;
	uint64_t spurious_wakeups; /**< Wakeups after which no source had anything. */
	/** Sleeps that ended by their timeout (a nap's end is not one). */
	uint64_t sleep_timeouts;
	/** Completions left by an armed source that never notified. Must be 0. */
	uint64_t lost_wakeups;
	uint64_t pauses;           /**< Pause decisions taken. */
	uint64_t mode_switches;    /**< Changes between poll, pause and sleep. */
	uint64_t timers_fired;     /**< Timer callbacks run. */
	uint64_t errors;           /**< Source op failures reported to on_error. */
	/** Time spent in each mode (added up at mode changes, waits and every 4096
	 *  busy rounds; with evd_loop_step(), the caller's time between steps is
	 *  in poll). */
	uint64_t mode_ns[EVD_MODE_COUNT];
	/** CPU time of the loop's thread (0 before the loop ran): under
	 *  evd_loop_run() read live from that thread's CPU clock; with
	 *  evd_loop_step() or evd_loop_poll() sampled as mode_ns, the
	 *  caller's time between steps included. */
	uint64_t cpu_ns;
	uint32_t mode;             /**< Current enum evd_mode. */
	/**
	 * Naps: timed waits with nothing armed (policy EVD_ACTION_NAP).
	 * (Appended after the first fields; there is no ABI promise before the
	 * first release: build against the header of the library you run with.)
	 */
	uint64_t naps;
};

/** Counters of one source, as seen by its loop. */
struct evd_source_stats {
	uint64_t polls;            /**< Polls of this source. */
	uint64_t empty_polls;      /**< Polls that found nothing. */
	uint64_t events;           /**< Completions handed to the handler. */
	uint64_t arms;             /**< Successful arms. */
	uint64_t repoll_hits;      /**< Re-polls after arming that found completions. */
	uint64_t wakeups;          /**< Wakeups in which this source's fd was ready. */
	uint64_t spurious_wakeups; /**< Of those, the ones after which the source had nothing. */
	/** Completions found after a timeout with no notification. Must be 0. */
	uint64_t lost_wakeups;
	uint64_t errors;           /**< Op failures. */
	uint64_t full;             /**< Posts refused because the source was full (rings). */
};

/**
 * Handler type: called by a source's poll, on the loop thread, with a burst of
 * completions. The type of @p burst is the source's (struct evd_event * for
 * rings, NULL for fd sources, struct ibv_wc * or struct rte_mbuf ** for drivers).
 * A handler never runs concurrently with a poll of its own source.
 */
typedef void (*evd_handler_t)(struct evd_source *src, void *burst, uint16_t n, void *arg);

/**
 * Create a loop.
 *
 * Any thread. The calling thread need not be the one that runs it.
 *
 * @param conf  Configuration (may be NULL for all defaults).
 * @param out   Receives the loop.
 * @return 0; -EINVAL for a NULL @p out, a name of EVD_NAME_MAX bytes or
 *   more or with a control character, a burst over 256, max_sources over
 *   EVD_MAX_SOURCES, a clock without now_ns, or a bad policy spec (the log
 *   names the bad key); -ENOENT for an unknown policy name; -ENODEV for a
 *   numa_socket EVD_SOCKET(n) that names no socket of the EAL's; -ENOMEM;
 *   or an errno from epoll_create1()/eventfd().
 */
int evd_loop_create(const struct evd_loop_conf *conf, struct evd_loop **out);

/**
 * Destroy a loop. Any thread, while no thread runs the loop. Every source
 * must have been removed. Calls still queued by evd_loop_call(), and those
 * they queue, run first, on the calling thread (a destroy refused for
 * sources already on the loop runs none; one of those calls may add a
 * source, and the destroy is then refused after it). Timers, pending or fired, are freed with it
 * (their handles are then dangling; their arguments are the caller's to
 * release).
 * @param loop  The loop.
 * @return 0; -EBUSY if sources remain or the loop is running (evd_loop_run(),
 *   or a step of evd_loop_step(): from its callbacks); -EDEADLK (Threads,
 *   above); -EINVAL for NULL or a destroyed loop.
 */
int evd_loop_destroy(struct evd_loop *loop);

/**
 * Register a source on a loop. A control call: on the loop's thread (from
 * a handler or callback; in effect from the next round) or while no thread
 * runs the loop; from another thread while it runs, -EBUSY (use
 * evd_loop_call()).
 * @param loop  The loop.
 * @param src   A source on no loop.
 * @return 0; -EINVAL for NULL or destroyed arguments, or a source already on
 *   a loop; -EBUSY (another thread runs the loop, or adds, discards or
 *   destroys the source at the same time); -EDEADLK (Threads, above);
 *   -ENOSPC if the loop holds
 *   evd_loop_conf.max_sources already; -ENOMEM; the error of the
 *   source's fd op (other than -ENOTSUP: poll-only); -EBADF if the fd it
 *   gives is not open; or an errno from epoll_ctl().
 */
int evd_loop_add(struct evd_loop *loop, struct evd_source *src);

/**
 * Unregister a source. A control call, as evd_loop_add(). From a handler or
 * on_error on the same loop the removal takes effect when the round's poll
 * of the sources ends, and the source is not polled again (destroy it after
 * the step). From a timer, on_idle or an evd_loop_call() function, which
 * run outside the round, it takes effect at once. A pending notification is
 * acknowledged before the source leaves. An fd closed while registered is
 * logged and its epoll entry dropped (the loop's epoll set is rebuilt: a
 * dup of the fd elsewhere would keep the old entry firing).
 * @param loop  The loop.
 * @param src   A source on @p loop.
 * @return 0; -EINVAL for NULL or destroyed arguments, a source not on
 *   this loop, or one a handler has removed this round already (it stays on
 *   the loop, and evd_loop_add() refuses it, until the round ends); -EBUSY
 *   (another thread runs the loop); -EDEADLK (Threads, above).
 */
int evd_loop_remove(struct evd_loop *loop, struct evd_source *src);

/**
 * Run @p fn(@p loop, @p arg) on the loop's thread, between two rounds. Any
 * thread, any time (not from a signal handler: it allocates). Lock-free on
 * the loop's side; wakes a sleeping loop. Calls run in the order they were
 * queued; from @p fn the control calls act at once. A call queued while no
 * thread runs the loop runs at its next step (a stopped loop's steps run
 * none until evd_loop_resume()), or in evd_loop_destroy().
 * The loop must not be destroyed while this call is under way on another
 * thread (evd_loop_destroy() waits for its doorbell, not for its start).
 * @param loop  The loop.
 * @param fn    The function to run.
 * @param arg   Its second argument.
 * @return 0 once queued; -EINVAL for a NULL or destroyed loop or NULL @p fn;
 *   -ENOMEM.
 */
int evd_loop_call(struct evd_loop *loop, void (*fn)(struct evd_loop *loop, void *arg), void *arg);

/**
 * Run the loop on the calling thread until evd_loop_stop(). While it runs,
 * the thread's timer slack is 1 us (prctl PR_SET_TIMERSLACK; the thread's
 * own is put back on return): timed waits (naps, guards, timers, the
 * sleep bound) would otherwise end up to 50 us late. Any thread; that
 * thread is the loop's until it returns.
 * @param loop  The loop.
 * @return 0 when stopped; -EBUSY if already running (or stepped);
 *   -EDEADLK (Threads, above); -EINVAL for NULL or a destroyed loop.
 */
int evd_loop_run(struct evd_loop *loop);

/**
 * Run one step: poll every source once; if all were empty, do what the
 * policy decides (nothing, a pause, or the arm protocol and one bounded wait).
 * For applications with their own main loop. Any thread, one step at a
 * time; a step waits for a control call under way on another thread.
 * @param loop  The loop.
 * @return number of completions dispatched (>= 0); -ESHUTDOWN once stopped;
 *   -EBUSY while evd_loop_run() runs the loop (on any thread) or from a
 *   handler or callback of a step under way (no nested rounds); -EDEADLK
 *   (Threads, above); -EINVAL for NULL or a destroyed loop.
 */
int evd_loop_step(struct evd_loop *loop);

/**
 * One busy round that never blocks: run the calls and timers that are due,
 * poll every source once and dispatch what came. No policy, no arm, no
 * sleep: for an rte_service callback, or an application's own polling
 * loop that decides itself when to stop polling. Any thread, one round at
 * a time (as evd_loop_step()).
 * @param loop    The loop.
 * @param budget  At most this many completions per source this round,
 *                1..256; 0: the loop's burst.
 * @return completions dispatched (>= 0); -ESHUTDOWN once stopped; -EBUSY
 *   while another thread runs the loop or from a round's own callback;
 *   -EDEADLK (Threads, above); -EINVAL for NULL, a destroyed loop, or a
 *   budget over 256.
 */
int evd_loop_poll(struct evd_loop *loop, unsigned int budget);

/**
 * The loop's epoll fd, for nesting the whole loop in another event loop
 * (libuv, an epoll loop, a second evd loop as an fd source): it becomes
 * readable when an armed source notifies, or on evd_loop_stop() and
 * evd_loop_call(). It reports nothing while the sources are not armed:
 * wait on it only after evd_loop_arm() returned 0. Stable for the loop's
 * life. Any thread.
 * @param loop  The loop.
 * @return the fd (never close it); -EINVAL for NULL or a destroyed loop.
 */
int evd_loop_fd(const struct evd_loop *loop);

/**
 * Prepare the loop for another event loop's wait on evd_loop_fd(): arm
 * every source not armed, then poll those once more (what landed before the
 * arm is found here: the lost wakeup this closes). On 0 the caller may wait
 * on the fd for at most *timeout_ns; the next evd_loop_poll() or
 * evd_loop_step() ends that wait (acknowledges what notified) and
 * dispatches. Any thread, one at a time, as evd_loop_poll(); calling it
 * again while armed updates *timeout_ns and arms the sources added since
 * (call it after an evd_loop_add() or an evd_timer_start() before waiting
 * again: a source added after the arm is not armed, its events would wait
 * for the next poll, and a timer started after it does not shorten
 * *timeout_ns). *timeout_ns is 0 while evd_loop_call() calls are queued.
 * @param loop        The loop.
 * @param timeout_ns  Receives the longest the wait may last: the next timer,
 *                    a poll-only source's bound, a device's backstop;
 *                    UINT64_MAX: no bound.
 * @return 0: armed, wait; > 0: completions the re-poll found and dispatched
 *   (do not wait, poll again); -EAGAIN: a source joined meanwhile (poll
 *   again); -ESHUTDOWN once stopped; -EBUSY and -EDEADLK as evd_loop_poll();
 *   -EINVAL for NULL arguments or a destroyed loop.
 */
int evd_loop_arm(struct evd_loop *loop, uint64_t *timeout_ns);

/**
 * Ask the loop to stop. Any thread, any time, async-signal-safe; wakes a
 * sleeping loop. evd_loop_run() returns after its current step, and the
 * loop may be destroyed then even while this call, on another thread, is
 * still ringing its doorbell: evd_loop_destroy() waits for it.
 * @param loop  The loop.
 * @return 0; -EINVAL for NULL or a loop being destroyed (not logged:
 *   signal handlers; once destroyed, its memory is gone: undefined, the
 *   poison check catches most); a negative errno if the wake-up eventfd
 *   could not be written (the loop still stops at its next step).
 */
int evd_loop_stop(struct evd_loop *loop);

/** Clear a stop request so that the loop can run again. Any thread, while no
 * thread runs the loop.
 * @param loop  The loop.
 * @return 0; -EBUSY while running; -EDEADLK (Threads, above); -EINVAL for
 *   NULL or a destroyed loop. */
int evd_loop_resume(struct evd_loop *loop);

/**
 * The loop named @p name (created and not destroyed), as telemetry lists it;
 * the one created last where several share the name. Any thread; the loop
 * may be destroyed once this returns, as for any pointer the caller holds.
 * @param name  The loop's name (evd_loop_conf.name; "evd" by default).
 * @return the loop; NULL if none has that name, or (logged) for NULL.
 */
struct evd_loop *evd_loop_lookup(const char *name);

/** The loop's name. Any thread.
 * @param loop  The loop.
 * @return its name (evd_loop_conf.name, "evd" by default); NULL (logged)
 *   for NULL or a destroyed loop. */
const char *evd_loop_name(const struct evd_loop *loop);

/** The name of the loop's policy. Any thread.
 * @param loop  The loop.
 * @return e.g. "adaptive"; NULL (logged) for NULL or a destroyed loop. */
const char *evd_loop_policy_name(const struct evd_loop *loop);

/**
 * Read the loop's stats, since creation or the last reset. Any thread, while
 * running: each counter is read atomically; the set is not a snapshot.
 * @param loop  The loop.
 * @param st    Receives the counters.
 * @return 0; -EINVAL for NULL arguments or a destroyed loop.
 */
int evd_loop_stats_get(struct evd_loop *loop, struct evd_loop_stats *st);

/**
 * Reset the loop's stats. Counters are never written by this call: it
 * records a baseline that later reads subtract, so it is safe while the loop
 * runs. A read on another thread racing it (telemetry's, say) may see some
 * counters from before the reset and some from after, each at least 0;
 * resets on several threads at once leave each counter counted from one of
 * them. Any thread.
 * @param loop  The loop.
 * @return 0; -EINVAL for NULL or a destroyed loop.
 */
int evd_loop_stats_reset(struct evd_loop *loop);

/** One mode transition, as recorded after evd_loop_trace_enable(). */
struct evd_mode_event {
	uint64_t t_ns;   /**< Loop clock at the transition. */
	uint64_t events; /**< Completions the loop had handed out by then (since creation). */
	uint32_t mode;   /**< The mode entered (enum evd_mode). */
	uint32_t reserved; /**< 0. */
};

/**
 * Record every mode transition of the loop in a ring of @p entries (a power
 * of two, 64..16777216; 0 turns recording off and frees the ring). The loop
 * thread writes one entry per transition (no lock, no syscall); any thread
 * reads them with evd_loop_trace_read(), e.g. to draw a timeline. Control
 * path: any thread while no thread runs the loop, nor while another thread
 * reads the trace (turning it off or resizing it frees the ring that reader
 * is copying: refused, try again).
 * @param loop     The loop.
 * @param entries  Ring size, or 0.
 * @return 0; -EINVAL (NULL, or entries not a power of two in range);
 *   -EBUSY (the loop runs, or another thread is in evd_loop_trace_read());
 *   -EDEADLK (Threads, above); -ENOMEM.
 */
int evd_loop_trace_enable(struct evd_loop *loop, uint32_t entries);

/**
 * Copy the transitions recorded since *cursor (start at 0) into out, at most
 * max, oldest first, and advance *cursor. Any thread, while the loop runs.
 * Entries the loop overwrote before they were read, or that went with the
 * ring evd_loop_trace_enable() replaced, are skipped and added to *lost
 * (may be NULL; the caller sets it to 0 first, then it counts over
 * successive reads). The count goes on across rings: a cursor stays valid.
 * @param loop    The loop.
 * @param cursor  In: the next entry wanted; out: past the last copied.
 * @param out     Receives the entries.
 * @param max     Room in @p out.
 * @param lost    Adds the entries skipped (may be NULL).
 * @return the number copied; -EINVAL (NULL arguments); -ENODATA (recording
 *   is off; not logged: a reader may poll for it); -EBUSY (another thread is
 *   in evd_loop_trace_enable(): try again).
 */
int evd_loop_trace_read(struct evd_loop *loop, uint64_t *cursor, struct evd_mode_event *out,
			unsigned int max, uint64_t *lost);

/** Read a source's stats; same rules as evd_loop_stats_get() (any thread).
 * @param src  The source.
 * @param st   Receives them, less the baseline of the last reset.
 * @return 0; -EINVAL (logged) for NULL or a destroyed source. */
int evd_source_stats_get(struct evd_source *src, struct evd_source_stats *st);

/** Reset a source's stats; same rules as evd_loop_stats_reset() (any thread).
 * @param src  The source.
 * @return 0; -EINVAL (logged) for NULL or a destroyed source. */
int evd_source_stats_reset(struct evd_source *src);

/** A source's name. Any thread.
 * @param src  The source.
 * @return its name; NULL (logged) for NULL or a destroyed source. */
const char *evd_source_name(const struct evd_source *src);

/**
 * Destroy a source that is on no loop (calls the driver's close op). Any
 * thread. A ring must be quiescent: no thread may still be in
 * evd_ring_post() or evd_ring_post_burst() on it (see evd_ring_post());
 * posting to a ring while it is destroyed is undefined, as is any call on
 * the source that another thread makes while or after it is destroyed (it
 * frees it; the poison check catches most: -EINVAL). A destroy while
 * another thread adds or discards it is refused (-EBUSY).
 * @param src  The source.
 * @return 0; -EBUSY if still registered, being added or discarded on
 *   another thread, or if it still holds completions (a ring's events: poll
 *   them, or evd_ring_discard()); -EINVAL for NULL or a destroyed source.
 */
int evd_source_destroy(struct evd_source *src);

/* ---- Software event ring ---------------------------------------------- */

/** A software event, as posted to and delivered from an evd ring. */
struct evd_event {
	uint32_t type;  /**< Application-defined. */
	uint32_t flags; /**< Application-defined. */
	uint64_t stamp; /**< Free for the application (testevd stores the post TSC). */
	union {
		uint64_t u64; /**< Payload. */
		void *ptr;    /**< Payload. */
	};
};

/**
 * Create a software event ring source: multi-producer (any thread, EAL or
 * not), single consumer (the loop it is added to). Posts are lock-free; the
 * doorbell (an eventfd) is written only when the consumer is armed.
 *
 * @param name     Name for logs and stats (copied; under EVD_NAME_MAX bytes, no
 *                 control character; may be NULL).
 * @param size     Capacity in events; rounded up to a power of two, 2..2^24.
 * @param handler  Receives bursts of struct evd_event.
 * @param arg      Passed to the handler.
 * @param out      Receives the source.
 * Any thread.
 * @return 0; -EINVAL for a bad size, a NULL handler or @p out, or a name of
 *   EVD_NAME_MAX bytes or more or with a control character; -ENOMEM;
 *   eventfd errors.
 */
int evd_ring_create(const char *name, uint32_t size, evd_handler_t handler, void *arg,
		    struct evd_source **out);

/**
 * Post one event. Any thread. Lock-free.
 *
 * The ring must outlive every post: destroy it only after each producer has
 * returned from its last call (joined, or past a grace period the
 * application keeps, as for rte_ring_free()). That the loop delivered a
 * producer's last event does not mean the producer has returned: it may
 * still be ringing the doorbell, which it reads from the ring.
 * @param ring  The ring.
 * @param ev    The event, copied.
 * @return 0; -ENOBUFS if the ring is full (counted in the source's `full`
 *   stat; the event was not posted); -EINVAL for NULL or a source that is
 *   not a ring (or a destroyed one, where the poison is still there).
 */
int evd_ring_post(struct evd_source *ring, const struct evd_event *ev);

/**
 * Post up to @p n events in order. Any thread. Lock-free.
 * @param ring  The ring.
 * @param ev    The events, copied.
 * @param n     How many, at least 1.
 * @return the number posted (1..n); -ENOBUFS if none fit (counted);
 *   -EINVAL for NULL, @p n of 0, or a source that is not a ring.
 *   Events past the returned count were not posted.
 */
int evd_ring_post_burst(struct evd_source *ring, const struct evd_event *ev, unsigned int n);

/** Events currently in the ring. Any thread.
 * @param ring  The ring.
 * @return the count (approximate while producers run, at most its size); 0
 *   (logged) for NULL or a source that is not a ring. */
unsigned int evd_ring_count(const struct evd_source *ring);

/**
 * Drop the events a ring still holds, so that it can be destroyed. Any
 * thread, while the ring is on no loop: it takes the consumer's side, so
 * an add, another discard or a destroy that comes while it runs is
 * refused (-EBUSY), and it is refused while another thread adds it.
 * Producers may still post (what they post after it returns stays).
 * @param ring  The ring.
 * @return the number of events dropped (logged as a warning when above 0);
 *   -EINVAL for NULL or a source that is not a ring; -EBUSY if it is on a
 *   loop, or another thread adds or discards it.
 */
int evd_ring_discard(struct evd_source *ring);

/* ---- File descriptor source ------------------------------------------- */

/**
 * Create a source for any pollable fd (socket, pipe, timerfd, eventfd) with
 * level semantics: the handler is called (burst NULL, n 1) whenever the fd
 * is readable (or matches @p events); it must consume what it wants.
 * The fd stays owned by the caller. While idle, readiness wakes the loop.
 *
 * @param name    For logs and stats (NULL: "fd"; under EVD_NAME_MAX bytes, no
 *                control character).
 * @param fd      The fd to watch; it stays the caller's.
 * @param events  epoll events to watch (0 gives EPOLLIN).
 * @param handler Called on the loop thread while the fd is ready.
 * @param arg     The handler's last argument.
 * @param out     The new source, to evd_loop_add().
 * Any thread. Remove the source before closing the fd. Closing it while the
 * source is registered is an error the loop survives: at its first failed
 * poll, or when another source is registered under the same fd number, the
 * source stops being polled and watched (logged once; remove it), and
 * evd_loop_remove() drops its epoll entry. If the number is reused by a file
 * that is not on the loop meanwhile, the source is silent until it is
 * removed: epoll dropped the closed file's entry, and nothing tells the two
 * numbers apart.
 * @return 0; -EINVAL for a negative fd, a NULL handler or @p out, a name of
 *   EVD_NAME_MAX bytes or more or with a control character, EPOLLET,
 *   EPOLLONESHOT or EPOLLEXCLUSIVE
 *   in @p events, or @p events naming no event (flags alone); -ENOMEM.
 */
int evd_fd_create(const char *name, int fd, uint32_t events, evd_handler_t handler, void *arg,
		  struct evd_source **out);

/** The epoll events seen by the current call of an fd source's handler.
 * Loop thread, from that handler only.
 * @param src  The fd source the handler was called for.
 * @return EPOLLIN and the others seen; 0 (logged) for NULL, a source that
 *   is not an fd source, or a call from anywhere but this source's handler
 *   (another thread, another handler, outside a round). */
uint32_t evd_fd_revents(const struct evd_source *src);

/* ---- Timers ------------------------------------------------------------ */

/** Timer callback; runs on the loop thread. */
typedef void (*evd_timer_cb_t)(struct evd_loop *loop, struct evd_timer *t, void *arg);

/**
 * Start a timer on the loop. A control call, as evd_loop_add(): from
 * another thread while the loop runs, -EBUSY (use evd_loop_call()).
 * A sleep, a nap or a pause of the loop is cut at the earliest timer deadline.
 *
 * @param loop       The loop whose thread runs the callback.
 * @param after_ns   First expiry, from now (loop clock).
 * @param period_ns  0 for one-shot, else the period (no drift: deadlines
 *                   are first + k * period; missed periods are skipped).
 * @param cb         Called on the loop thread at each expiry.
 * @param arg        The callback's last argument.
 * @param out        Receives the handle, or NULL. A one-shot started with a
 *                   handle stays allocated after it fires, until
 *                   evd_timer_cancel() (or evd_loop_destroy()) frees it;
 *                   one started without is freed when it fires.
 * @return 0; -EINVAL for a NULL or destroyed loop or NULL @p cb; -EBUSY
 *   (another thread runs the loop); -EDEADLK (Threads, above); -ENOMEM.
 */
int evd_timer_start(struct evd_loop *loop, uint64_t after_ns, uint64_t period_ns,
		    evd_timer_cb_t cb, void *arg, struct evd_timer **out);

/**
 * Cancel a timer and free it: pending, or a one-shot that already fired
 * (the handle stays valid until this call). A control call, as
 * evd_loop_add(); safe from any timer callback including the timer's own.
 * Cancelling a handle twice is undefined, as free() twice is.
 * @param loop  The loop it was started on.
 * @param t     The handle evd_timer_start() gave.
 * @return 0; -EINVAL for NULL, a destroyed loop, or a timer not on this
 *   loop; -EBUSY (another thread runs the loop); -EDEADLK (Threads, above).
 */
int evd_timer_cancel(struct evd_loop *loop, struct evd_timer *t);

/** Current time on the loop's clock. Any thread (fast path: @p loop is not
 * checked; NULL or a destroyed loop is undefined).
 * @param loop  The loop.
 * @return nanoseconds on its clock (evd_loop_conf.clock, or the TSC or
 *   CLOCK_MONOTONIC). */
uint64_t evd_loop_now_ns(const struct evd_loop *loop);

/**
 * The TSC's rate as the loops' clock uses it: measured against
 * CLOCK_MONOTONIC once per process (5 ms, by the first call or the first
 * loop created after rte_eal_init()), not rte_get_tsc_hz(), which on KVM
 * guests is the TSC's nominal rate. Lets an application turn its own TSC
 * stamps into the loops' nanoseconds. Any thread; the first call may
 * sleep for up to 15 ms.
 * @param hz  Out: the TSC's ticks per second.
 * @return 0; -EINVAL for a NULL @p hz; -EAGAIN before rte_eal_init() (EAL
 *   knows no TSC yet); -ENOTSUP where the TSC does not serve as the loops'
 *   clock (not invariant, or its rate could not be measured): they read
 *   CLOCK_MONOTONIC.
 */
int evd_clock_tsc_hz(double *hz);

#ifdef __cplusplus
}
#endif

#endif /* EVD_H */
