/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef EVD_PRIVATE_H
#define EVD_PRIVATE_H

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <inttypes.h>
#include <stdint.h>

#include <rte_branch_prediction.h>
#include <rte_log.h>

#include "evd.h"
#include "evd_policy.h"
#include "evd_source.h"

extern int evd__logtype;

#define EVD_LOG(level, fmt, ...) EVD_LOG_AT(RTE_LOG_##level, fmt, ##__VA_ARGS__)
/* The same, at a level (RTE_LOG_*) chosen at run time. */
#define EVD_LOG_AT(level, fmt, ...) \
	rte_log(level, evd__logtype, "EVD: " fmt "\n", ##__VA_ARGS__)

/* A refused call: one ERR line naming the argument, then rc (an errno). */
#define EVD_ARG_ERR(rc, fmt, ...) (EVD_LOG(ERR, fmt, ##__VA_ARGS__), (rc))

/* The calibration's wakes per point, at most, its reduction of them to L,
 * and its window (evd_costs.c; tests/test_cal_reduce.c). */
#define EVD__CAL_MAX_WAKES 100
void evd__cal_reduce(uint64_t lat[][EVD__CAL_MAX_WAKES], const int *n, uint64_t *wake_ns,
		     int *stalls, int *lowered);
uint64_t evd__cal_window(const uint64_t *lat, int n, uint64_t *wake_ns, uint64_t cold_ns);

/* The thread rule of the control calls (evd_hold.c): 1 if the call took
 * the loop for its length, 0 if it is on the loop's own thread, -EBUSY
 * (logged, naming @p call) from another thread while the loop runs. Give
 * the result to evd__control_leave() when done. */
int evd__control_enter(struct evd_loop *loop, const char *call);
int evd__control_try(struct evd_loop *loop, const char *call); /* never waits: -EAGAIN */
void evd__control_leave(struct evd_loop *loop, int held);

/* Where the first control character of @p s is, in its first @p n bytes;
 * -1: none (evd_hold.c). A string a log line prints must have none: a
 * newline would split the line. */
long evd__control_char_at(const char *s, size_t n);
/* A caller's name for a loop or a source: NULL, or under EVD_NAME_MAX bytes
 * with no control character. 0, or -EINVAL and one line naming @p call. */
int evd__name_check(const char *call, const char *name);

/* The loop's doorbell (evd_bell.c): software sources' notifications, one
 * eventfd and a bitmap of ready key slots. */
struct evd__bell *evd__bell_get(void);          /* from the pool, or new; NULL: errno */
void evd__bell_put(struct evd__bell *b);        /* back to the pool (never freed) */
int evd__bell_fd(const struct evd__bell *b);
int evd__bell_reserve(struct evd__bell *b, uint32_t slot); /* before a source gets the slot */
bool evd__bell_rung(const struct evd__bell *b); /* bits may be waiting */
bool evd__bell_sleep(struct evd__bell *b);      /* entering a wait: false if rung already */
void evd__bell_wake(struct evd__bell *b);       /* the wait is over */
void evd__bell_drain(struct evd__bell *b);      /* read its eventfd (epoll reported it) */
/* Take the ready slots below @p slots, each given to fn once; returns how many. */
uint32_t evd__bell_take(struct evd__bell *b, uint32_t slots,
			void (*fn)(void *arg, uint32_t slot), void *arg);

/* Where a loop's or a ring's memory comes from (evd_mem.c): DPDK's on
 * `socket` when the EAL was up at its creation, else libc's. */
struct evd__mem {
	bool dpdk;
	int socket; /* SOCKET_ID_ANY: any */
};
bool evd__eal_up(void);
/* Pauses use the CPU's light wait (rte_power_pause), evd_loop.c. */
bool evd__power_pause(void);
/* evd_loop_conf.numa_socket to a DPDK socket id; -EINVAL (malformed),
 * -ENODEV (no such socket). */
int evd__socket_resolve(int numa_socket, int *socket);
void *evd__zalloc(struct evd__mem *m, size_t size, size_t align);
void *evd__realloc(struct evd__mem *m, void *p, size_t size);
void evd__free(const struct evd__mem *m, void *p);

/* A policy instance: its ops and state. */
struct evd_policy {
	const struct evd_policy_ops *ops;
	void *state;
};

/* A policy's KEY=VALUE: its range and where it goes; or, retired, why it
 * went and what to write instead (a retired key is refused, so that nobody
 * believes it still acts). */
struct evd__policy_key {
	const char *key;
	uint64_t lo, hi;
	uint64_t *dst;
	const char *retired;
};

/* Store each param in its key's dst; an unknown, retired or out-of-range
 * key is -EINVAL, logged with the policy's name and its keys (policy/keys.c). */
int evd__policy_parse_keys(const char *policy, const struct evd_policy_param *p, unsigned int n,
			   const struct evd__policy_key *keys, unsigned int nkeys);

static inline uint64_t
evd__xorshift(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* A randomised ski-rental threshold on [0, b]: density e^(x/b) / (b (e - 1)),
 * e/(e-1)-competitive (policy/baselines.c). */
uint64_t evd__ski_rand_threshold(uint64_t b, uint64_t *rnd);

/* The built-in policies (policy/), for the registry; the baselines
 * NULL-terminated. */
extern const struct evd_policy_ops evd__poll_policy, evd__intr_policy, evd__adaptive_policy;
extern const struct evd_policy_ops *const evd__baseline_policies[];

int evd__policy_create(const char *spec, const struct evd__mem *mem, struct evd_policy *out);
/* The memory of the loop whose policy is being made (libc's otherwise): the
 * built-in policies keep their state there, on the loop's socket. */
struct evd__mem evd__policy_mem(void);
void evd__policy_destroy(struct evd_policy *p);

/* Timer heap, ordered by deadline. */
struct evd_timer {
	uint64_t deadline;
	uint64_t period;
	evd_timer_cb_t cb;
	void *arg;
	struct evd_loop *loop;
	uint32_t heap_idx;  /* in the heap; EVD__TIMER_FIRED: a fired one-shot */
	bool kept;          /* its handle was given out: kept after it fires */
	struct evd_timer *fired_prev, *fired_next; /* fired one-shots kept */
};

#define EVD__TIMER_FIRED (UINT32_MAX - 1)

struct evd__timers {
	struct evd_timer **heap;
	uint32_t n, cap;
	struct evd_timer *firing; /* a one-shot in its callback: out of the heap */
	bool firing_cancelled;    /* cancelled from its own callback */
	struct evd_timer *fired;  /* fired one-shots whose handles were given out */
};

/* Free every timer, pending or fired (evd_loop_destroy). */
void evd__timers_free(struct evd__timers *h);

int evd__timers_push(struct evd__timers *h, struct evd_timer *t);
void evd__timers_remove(struct evd__timers *h, struct evd_timer *t);
/* Run expired timers; return how many ran. */
unsigned int evd__timers_run(struct evd_loop *loop, uint64_t now);
static inline uint64_t
evd__timers_next(const struct evd__timers *h)
{
	return h->n ? h->heap[0]->deadline : UINT64_MAX;
}

/* The default loop clock where the TSC serves: nanoseconds from CLOCK_MONOTONIC
 * at the loop's creation (ns0, read with tsc0), on from there at the TSC's
 * rate as measured against CLOCK_MONOTONIC (evd_clock.c, tsc_rate). */
struct evd__tsc_clock {
	uint64_t tsc0, ns0;
	double ns_per_tick;
};

/* A message of evd_loop_call(), in the loop's lock-free stack. */
struct evd__call {
	void (*fn)(struct evd_loop *loop, void *arg);
	void *arg;
	struct evd__call *next;
};

/* A slot of the epoll keys: a source's key is its slot and the slot's
 * generation, so an entry that outlives its source (a closed fd's, which
 * EPOLL_CTL_DEL cannot reach) names no one. */
struct evd__key_slot {
	struct evd_source *src; /* NULL: free */
	uint32_t gen;
	uint32_t next_free;
};

/* loop->running: who holds the loop */
enum evd__holder {
	EVD__FREE = 0,    /* no thread */
	EVD__RUN = 1,     /* evd_loop_run() */
	EVD__STEP = 2,    /* a step, a poll or an arm (evd_loop_step, _poll, _arm) */
	EVD__CONTROL = 3, /* a control call on a thread that does not run the loop */
};

#define EVD__LOOP_MAGIC 0x6576646cu

struct evd_loop {
	uint32_t magic;            /* EVD__LOOP_MAGIC while the loop lives */
	struct evd__mem mem;       /* of the loop and its lists */
	char name[EVD_NAME_MAX];
	uint32_t id;               /* telemetry: the loop's number in /evd/list */
	struct evd_loop *tm_next;  /* telemetry registry, under evd__registry_lock() */
	struct evd_policy policy;
	struct evd_clock clock;
	struct evd__tsc_clock tsc; /* the default clock's state, when it is the TSC */
	uint64_t max_sleep_ns;
	bool max_sleep_given;    /* conf's max_sleep_us: bounds every sleep */
	uint64_t poll_only_bound_ns;
	uint16_t burst;
	void (*on_error)(struct evd_loop *, struct evd_source *, int, void *);
	void *on_error_arg;
	void (*on_idle)(struct evd_loop *, void *);
	void *on_idle_arg;

	int epfd;
	int wake_fd;            /* eventfd: evd_loop_stop() and evd_loop_call() ring it */
	struct evd__bell *bell; /* the software sources' doorbell */
	int stop;               /* atomic: stop requested */
	int running;            /* atomic: enum evd__holder */
	pthread_t owner;        /* atomic: the thread that holds it (running != 0) */
	struct evd__call *calls; /* atomic: evd_loop_call() messages, newest first */
	bool in_round;          /* sources are being iterated */
	bool armed_outside;     /* evd_loop_arm(): armed for another loop's wait */
	bool armed_all;         /* that arm's sleep_bound() input */
	uint32_t armed_ids;     /* next_src_id at that arm: a source added since is not armed */
	bool pending_removal;

	struct evd_source **src;
	uint32_t n_src, cap_src, max_src;
	/* The sources polled every round: all but the armed ones (whose
	 * notification will tell), the failed and the level fds (epoll says
	 * when they are ready). */
	struct evd__act *act;
	uint32_t n_act;
	uint64_t passes;           /* atomic: passes over act done, doubled (evd__polls_join) */
	struct evd_source **woke;  /* the sources notified in the last wait or look */
	uint32_t n_woke;
	struct evd_source **fresh; /* armed by the last arm pass (re-polled) */
	uint32_t n_watched;        /* fd sources armed (once or level): a look needs epoll */
	struct evd_source **dev;   /* fd sources with an arm op: a timeout polls them */
	uint32_t n_device;
	uint32_t n_owed;           /* sources with owed_since_ns set */
	uint32_t since_look;       /* busy rounds since the last look at epoll */
	bool look_found;           /* the last look found something: look again */
	bool bell_fd_seen;         /* the last wait's epoll returned the bell's fd */
	uint64_t round_now;        /* the time the policy is told of the round's events */
	struct evd__key_slot *keys; /* epoll keys (slot | gen << 32) */
	uint32_t n_keys, free_key; /* slots used so far; first free (UINT32_MAX: none) */
	uint32_t *fd_key;          /* by fd number: key slot + 1 of the source watching it */
	uint32_t n_fd_key;
	uint32_t n_poll_only;
	uint32_t next_src_id;    /* evd_source.id of the next source added */
	uint32_t wakers;         /* atomic: evd_loop_stop() and evd_loop_call() under way */

	struct evd__timers timers;

	/* policy input */
	uint64_t last_event_ns;
	uint64_t idle_rounds;
	uint32_t last_burst;
	bool streak;             /* the last round found work */
	uint64_t untold;         /* completions of the streak's later rounds, not yet told */

	/* time accounting */
	uint64_t mode_mark_ns;
	uint32_t mode;

	uint64_t rounds;
	uint64_t cpu_last;  /* atomic: thread CPU clock at the last sample, 0: none */
	pthread_t cpu_thread; /* the thread of that sample (steps may change threads) */
	/* under evd_loop_run its thread's CPU clock, which stats read live, so
	 * that a sleep pays no clock syscall; odd cpu_seq: a sample under way */
	clockid_t cpu_clock; /* atomic */
	bool cpu_live;      /* atomic */
	uint32_t cpu_seq;   /* atomic */
	/* atomic: the most a stats read of cpu_ns found, since another CPU's
	 * read of the thread's clock may run microseconds ahead of its own */
	uint64_t cpu_read_most;

	/* mode transitions (evd_loop_trace_enable): written by the loop thread */
	struct evd_mode_event *trace;
	uint32_t trace_mask;
	uint64_t trace_head;              /* atomic: entries written */
	uint64_t trace_claim;             /* atomic: entries begun (head, or head + 1 mid-write) */
	uint64_t trace_base;              /* atomic: this ring's first entry (earlier: gone) */
	/* atomics: readers copying the ring, and a resize under way; each side
	 * raises its own and then looks at the other's, so they never overlap */
	uint32_t trace_readers;
	bool trace_resizing;

	struct evd_loop_stats stats;      /* written by the loop thread only */
	struct evd_loop_stats stats_base; /* baseline from the last reset */
};

static inline uint64_t
evd__now(const struct evd_loop *loop)
{
	return loop->clock.now_ns(loop->clock.arg);
}

uint64_t evd__monotonic_ns(void *arg);
/* The loop's clock: "tsc", "monotonic" or "custom" (telemetry, logs). */
const char *evd__clock_name(const struct evd_loop *loop);

/* Telemetry (evd_telemetry.c): the registry of loops. The lock also guards
 * each loop's source table against the telemetry thread: take it around
 * changes of loop->src. */
void evd__registry_add(struct evd_loop *loop);
void evd__registry_remove(struct evd_loop *loop);
void evd__registry_lock(void);
void evd__registry_unlock(void);


/* The epoll keys of the loop's own eventfd and of its bell (no source slot
 * reaches them). */
#define WAKE_KEY UINT64_MAX
#define BELL_KEY (UINT64_MAX - 1)

/* evd_clock.c */
void evd__clock_default(struct evd_loop *loop); /* the TSC where it serves, else CLOCK_MONOTONIC */
uint64_t evd__thread_cpu_ns(void);
uint64_t evd__loop_cpu_ns(struct evd_loop *loop); /* cpu_ns with evd_loop_run's live part */
void evd__power_pause_wait(uint64_t ns);        /* rte_power_pause for ns (evd__power_pause()) */

/* evd_hold.c: who may call what */
bool evd__live_source(const struct evd_source *src, const char *call);
/* A source's loop field holds evd__claimed while an add (until it holds
 * the loop), evd_ring_discard() or evd_source_destroy() works on it: the
 * others find it taken. evd__source_try_claim() returns NULL once claimed,
 * else who has it (evd__claimed logged, naming @p call); evd__source_claim()
 * refuses either (-EBUSY, logged). */
extern struct evd_loop evd__claimed;
struct evd_loop *evd__source_try_claim(struct evd_source *src, const char *call);
int evd__source_claim(struct evd_source *src, const char *call);
const char *evd__other_loop_name(const struct evd_source *src, const struct evd_loop *on, char *buf,
				 size_t n); /* @p on's name, or "(since left)" */
void evd__source_unclaim(struct evd_source *src);
struct evd_loop *evd__source_loop(const struct evd_source *src); /* NULL: none, or claimed */
int evd__ring_wake(struct evd_loop *loop);     /* the loop's eventfd (stop, a call) */
void evd__run_calls(struct evd_loop *loop);    /* evd_loop_call()'s, oldest first */

/* The largest burst a loop polls with (evd_loop_conf.burst, evd_loop_poll). */
#define EVD__MAX_BURST 256

/* evd_wait.c: the wait (tsp NULL: no timeout; zero: a look) and what it
 * found; evd__gather() returns epoll's count (-1: errno), *stop on a stop */
int evd__gather(struct evd_loop *loop, const struct timespec *tsp, bool *stop);
enum evd_wake_reason evd__wait_ready(struct evd_loop *loop, uint64_t timeout_ns, bool nap);
void evd__take_bell(struct evd_loop *loop);
void evd__ack_woken(struct evd_loop *loop);
bool evd__settle_woken(struct evd_loop *loop); /* whether any was notified */

/* evd_sources.c */
void evd__source_error(struct evd_loop *loop, struct evd_source *s, const char *op, int err);
void evd__source_fail(struct evd_loop *loop, struct evd_source *s, const char *why);
void evd__epoll_rebuild(struct evd_loop *loop);
void evd__disarm(struct evd_loop *loop, struct evd_source *s);
bool evd__fd_ready(int fd);
void evd__ack_one(struct evd_loop *loop, struct evd_source *s);
void evd__reap_removed(struct evd_loop *loop);

/* ---- the loop's lists of sources and its epoll keys (evd_sources.c) ---- */

/* evd_source.act_pos of a source not in the round's list. */
#define EVD__NOT_ACT UINT32_MAX

/* An entry of the round's list: the op a pass calls, and its source. The
 * op is in the list so that a pass over idle sources reads the list and
 * what their polls read, nothing else of them. */
struct evd__act {
	int (*poll)(struct evd_source *src, uint16_t budget);
	struct evd_source *src;
};

/*
 * A source's polls (evd_source.polls) outside the round's list count one
 * by one; in it, a pass counts one for every source at once (loop->passes,
 * raised at its end), so an idle source's poll writes nothing. The field
 * and loop->passes hold counts doubled; bit 0 of the field is set while
 * the passes are to be added: it holds the count less the passes done when
 * the source joined. evd__source_polls() reads it from any thread.
 */
static inline void
evd__polls_add(struct evd_source *s, uint64_t n)
{
	EVD_STAT_ADD(s->polls, n << 1);
}

/* (A source joining during a pass is polled in it: the pass's end counts it.) */
static inline void
evd__polls_join(const struct evd_loop *loop, struct evd_source *s)
{
	__atomic_store_n(&s->polls, (s->polls - loop->passes) | 1, __ATOMIC_RELEASE);
}

/* Its count stops following the passes: those done are in it, not one
 * under way (evd__act_skip_poll's, which does not poll it). */
static inline void
evd__polls_leave(const struct evd_loop *loop, struct evd_source *s)
{
	if (s->polls & 1)
		__atomic_store_n(&s->polls, s->polls - 1 + loop->passes, __ATOMIC_RELEASE);
}

uint64_t evd__source_polls(const struct evd_source *s); /* any thread (evd_stats.c) */

/* The op of an entry whose source was removed or failed while in the list
 * (evd_sources.c): its polls stop counting when a pass comes to it. */
int evd__act_skip_poll(struct evd_source *s, uint16_t budget);

static inline void
evd__act_add(struct evd_loop *loop, struct evd_source *s)
{
	struct evd__act *a;

	if (s->act_pos != EVD__NOT_ACT)
		return;
	s->act_pos = loop->n_act;
	a = &loop->act[loop->n_act++];
	a->poll = s->ops->poll;
	a->src = s;
	evd__polls_join(loop, s);
}

/* (Moves the last one into its place: an iteration of act runs backwards
 * when it removes; never during a pass, whose count would miss it.) */
static inline void
evd__act_del(struct evd_loop *loop, struct evd_source *s)
{
	struct evd__act *last;

	if (s->act_pos == EVD__NOT_ACT)
		return;
	evd__polls_leave(loop, s);
	last = &loop->act[--loop->n_act];
	loop->act[s->act_pos] = *last;
	last->src->act_pos = s->act_pos;
	s->act_pos = EVD__NOT_ACT;
}

/* The devices' list: a timeout walks it, not the table. */
static inline void
evd__dev_add(struct evd_loop *loop, struct evd_source *s)
{
	loop->dev[loop->n_device++] = s;
}

static inline void
evd__dev_del(struct evd_loop *loop, const struct evd_source *s)
{
	uint32_t i = 0;

	while (loop->dev[i] != s)
		i++;
	loop->dev[i] = loop->dev[--loop->n_device];
}

/* The source was removed or failed: no pass polls it from now on (nor
 * adds it to the list: evd__disarm()). */
static inline void
evd__act_skip(struct evd_loop *loop, struct evd_source *s)
{
	if (s->act_pos != EVD__NOT_ACT)
		loop->act[s->act_pos].poll = evd__act_skip_poll;
}

static inline void
evd__owe(struct evd_loop *loop, struct evd_source *s, uint64_t since)
{
	if (s->owed_since_ns == 0)
		loop->n_owed++;
	s->owed_since_ns = since != 0 ? since : 1;
}

static inline void
evd__owe_clear(struct evd_loop *loop, struct evd_source *s)
{
	if (s->owed_since_ns != 0)
		loop->n_owed--;
	s->owed_since_ns = 0;
}

/* The source's epoll key: its slot, and the slot's generation above it. */
static inline uint64_t
evd__key_of(const struct evd_loop *loop, const struct evd_source *s)
{
	return (uint64_t)loop->keys[s->key].gen << 32 | s->key;
}

/* The source a ready key names, or NULL for an entry that outlived its
 * source. */
static inline struct evd_source *
evd__key_source(const struct evd_loop *loop, uint64_t key)
{
	uint32_t slot = (uint32_t)key;

	if (slot >= loop->n_keys || loop->keys[slot].gen != (uint32_t)(key >> 32))
		return NULL;
	return loop->keys[slot].src;
}

/* ---- who holds the loop (enum evd__holder), inline for the step's path ---- */

/* A loop the caller may use: not NULL, not destroyed (cheap to check, and a
 * use after evd_loop_destroy() most often still finds the poison). */
static inline bool
evd__live_loop(const struct evd_loop *loop, const char *call)
{
	if (unlikely(loop == NULL)) {
		EVD_LOG(ERR, "%s: loop is NULL", call);
		return false;
	}
	if (unlikely(loop->magic != EVD__LOOP_MAGIC)) {
		EVD_LOG(ERR, "%s: %p is not a loop (destroyed?)", call, (const void *)loop);
		return false;
	}
	return true;
}

/* Whether this thread holds the loop: owner is set after the take and
 * cleared before the release, by the holder, so no other thread's hold,
 * nor one of this thread's that ended, reads as this thread's. */
static inline bool
evd__on_owner_thread(const struct evd_loop *loop)
{
	return pthread_equal(__atomic_load_n(&loop->owner, __ATOMIC_RELAXED), pthread_self());
}

/* How many loops this thread holds by a control call (evd_hold.c). */
extern __thread unsigned int evd__control_holds;

/* Take the loop for holder h (run, step or a control call); the owner is
 * cleared before the loop is given back (evd__hold_release), so a thread never
 * mistakes another's hold for its own. -EBUSY if another thread runs it,
 * or this one already holds it. */
static inline int
evd__hold_try(struct evd_loop *loop, int h)
{
	int cur = EVD__FREE;

	if (__atomic_compare_exchange_n(&loop->running, &cur, h, false, __ATOMIC_ACQ_REL,
					__ATOMIC_ACQUIRE)) {
		__atomic_store_n(&loop->owner, pthread_self(), __ATOMIC_RELAXED);
		if (h == EVD__CONTROL)
			evd__control_holds++;
		return 0;
	}
	if (cur != EVD__CONTROL || evd__on_owner_thread(loop))
		return -EBUSY;
	/* -EAGAIN: a control call on another thread holds it for a moment. A
	 * thread that holds a loop by one itself never waits (-EDEADLK): the
	 * other may be waiting for that loop, from its callbacks. */
	return evd__control_holds > 0 ? -EDEADLK : -EAGAIN;
}

static inline int
evd__hold_take(struct evd_loop *loop, int h)
{
	int rc;

	while ((rc = evd__hold_try(loop, h)) == -EAGAIN)
		sched_yield();
	return rc;
}

/* The reason for a refused hold, for the caller's one line: @p busy for
 * -EBUSY. */
static inline const char *
evd__hold_refused(int rc, const char *busy)
{
	return rc == -EDEADLK ? "another thread's control call holds it, and this thread holds "
				"a loop by one: refused, not waited for (each could be waiting "
				"for the other)"
			      : busy;
}

static inline void
evd__hold_release(struct evd_loop *loop)
{
	/* (a step's or a run's never touches the thread's count: a TLS access
	 * in a shared library may be a call) */
	if (__atomic_load_n(&loop->running, __ATOMIC_RELAXED) == EVD__CONTROL)
		evd__control_holds--;
	__atomic_store_n(&loop->owner, (pthread_t)0, __ATOMIC_RELAXED);
	__atomic_store_n(&loop->running, EVD__FREE, __ATOMIC_RELEASE);
}

#endif /* EVD_PRIVATE_H */
