/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The loop and the arm protocol.
 *
 * evd_loop_step() is the whole protocol, in DESIGN.md's order:
 *   1. poll every source not armed, dispatch what came;
 *   2. all empty: ask the policy (poll again, pause, or sleep);
 *   3. sleep: arm every armable source not armed, then re-poll those;
 *   4. still all empty: wait on epoll (the bell's fd among them), bounded;
 *   5. wake: the notified sources' arms are spent: poll them from now on,
 *      ack each exactly once.
 * A source stays armed until its notification comes, across rounds and
 * sleeps, so a round and a wake cost what the sources not armed cost, not
 * what the loop holds; a busy round looks at the bell (a load) and, every
 * LOOK_ROUNDS, at the armed fds (one epoll_wait without waiting).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include <rte_common.h>
#include <rte_cpuflags.h>
#include <rte_cycles.h>
#include <rte_pause.h>

#include "evd_private.h"

RTE_LOG_REGISTER(evd__logtype, lib.evd, INFO);

/* How long a device's notification may trail the completion it announces
 * (an interrupt on its way through the kernel) before the loop calls it
 * lost: judged at the end of a later wait, never by waiting for it. */
#define OWED_GRACE_NS 2000000ull
/* Busy rounds between two looks at epoll, while watched fds are idle. */
#define LOOK_ROUNDS 8
/* Busy rounds between two reads of the thread CPU clock. */
#define CPU_SAMPLE_ROUNDS 4096
#define LOOP_TIMER_SLACK_NS 1000ul /* evd_loop_run: the thread's timer slack while it runs */


/* ---- stats helpers ------------------------------------------------------ */

/* (Each thread has its own CPU clock: a step on another thread than the
 * last sample's starts afresh, since the difference of two threads' clocks
 * is no one's CPU time.) */
static void
cpu_sample(struct evd_loop *loop)
{
	uint64_t t = evd__thread_cpu_ns();
	pthread_t me = pthread_self();
	uint32_t seq = loop->cpu_seq;

	__atomic_store_n(&loop->cpu_seq, seq + 1, __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_RELEASE);
	if (loop->cpu_last != 0 && pthread_equal(me, loop->cpu_thread) && t >= loop->cpu_last)
		EVD_STAT_ADD(loop->stats.cpu_ns, t - loop->cpu_last);
	__atomic_store_n(&loop->cpu_last, t, __ATOMIC_RELAXED);
	loop->cpu_thread = me;
	__atomic_store_n(&loop->cpu_seq, seq + 2, __ATOMIC_RELEASE);
}

/* A wait's CPU sample: under evd_loop_run stats read the thread's clock
 * live instead. */
static inline void
cpu_sample_wait(struct evd_loop *loop)
{
	if (!loop->cpu_live)
		cpu_sample(loop);
}

/* Charge the time since the last mark to the current mode, then switch. */
static void
set_mode(struct evd_loop *loop, uint32_t mode, uint64_t now)
{
	if (now > loop->mode_mark_ns)
		EVD_STAT_ADD(loop->stats.mode_ns[loop->mode], now - loop->mode_mark_ns);
	loop->mode_mark_ns = now;
	if (mode != loop->mode) {
		EVD_STAT_ADD(loop->stats.mode_switches, 1);
		__atomic_store_n(&loop->stats.mode, mode, __ATOMIC_RELAXED);
		loop->mode = mode;
		if (loop->trace != NULL) {
			struct evd_mode_event *e = &loop->trace[loop->trace_head & loop->trace_mask];

			/* claim the slot before writing it: a reader a whole
			 * window behind is copying it (evd_loop_trace_read) */
			__atomic_store_n(&loop->trace_claim, loop->trace_head + 1, __ATOMIC_RELAXED);
			__atomic_thread_fence(__ATOMIC_RELEASE);
			__atomic_store_n(&e->t_ns, now, __ATOMIC_RELAXED);
			__atomic_store_n(&e->events, loop->stats.events, __ATOMIC_RELAXED);
			__atomic_store_n(&e->mode, mode, __ATOMIC_RELAXED);
			__atomic_store_n(&loop->trace_head, loop->trace_head + 1, __ATOMIC_RELEASE);
		}
	}
}

/* ---- the protocol's steps ----------------------------------------------- */

static void __rte_noinline
poll_failed(struct evd_loop *loop, struct evd_source *s, int n)
{
	/* an fd closed under it would fail every round: unwatched */
	evd__source_error(loop, s, n == -EBADF ? "poll (fd closed while registered? no longer "
		     "polled nor watched: remove it)" : "poll", n);
	if (n == -EBADF)
		evd__source_fail(loop, s, NULL);
}

/* What a poll that returned n != 0 did: the completions it delivered
 * (told to the policy as the source's when the loop has several), or -1 if
 * it failed (the failure handled: logged, on_error, unwatched on EBADF). */
static __rte_always_inline int
poll_result(struct evd_loop *loop, struct evd_source *s, int n, bool repoll)
{
	if (unlikely(n < 0)) {
		poll_failed(loop, s, n);
		return -1;
	}
	EVD_STAT_ADD(s->busy_polls, 1);
	EVD_STAT_ADD(s->stats.events, n);
	if (repoll)
		EVD_STAT_ADD(s->stats.repoll_hits, 1);
	if (unlikely(loop->n_src > 1) && loop->policy.ops->on_source_events != NULL)
		loop->policy.ops->on_source_events(loop->policy.state, loop->round_now, s->id,
						   (uint32_t)n);
	return n;
}

/* Poll one source outside a pass over the round's list: counted on its own. */
static __rte_always_inline int
poll_src(struct evd_loop *loop, struct evd_source *s, bool repoll)
{
	int n = s->ops->poll(s, loop->burst);

	evd__polls_add(s, 1);
	EVD_STAT_ADD(loop->stats.polls, 1);
	if (likely(n == 0))
		return 0;
	return poll_result(loop, s, n, repoll);
}

static __rte_always_inline uint32_t
poll_one(struct evd_loop *loop, struct evd_source *s, bool repoll)
{
	int n = poll_src(loop, s, repoll);

	return n > 0 ? (uint32_t)n : 0;
}

/* Step 1 (and 3, the re-poll): poll every source of the round's list. An
 * idle source costs its entry and what its poll reads: the entry holds the
 * op (a removed or failed source's skips it), and the pass counts the
 * sources' polls all at once when it ends. The caller sets in_round. */
static __rte_always_inline uint32_t
poll_act(struct evd_loop *loop, bool repoll)
{
	const struct evd__act *act = loop->act, *a = act, *end = act + loop->n_act;
	const uint16_t burst = loop->burst;
	uint32_t total = 0;

	/* an armed loop's re-poll: no pass to count either */
	if (a == end)
		return 0;
	for (; a < end; a++) {
		int n = a->poll(a->src, burst);

		if (unlikely(n != 0)) {
			/* only a handler or on_error can add a source, which
			 * may move the list (its entries keep their places):
			 * read it again after one ran */
			size_t i = (size_t)(a - act);

			act = loop->act;
			a = act + i;
			end = act + loop->n_act;
			n = poll_result(loop, a->src, n, repoll);
			if (n > 0)
				total += (uint32_t)n;
		}
	}
	EVD_STAT_ADD(loop->stats.polls, loop->n_act);
	/* release: a reader of a source's polls that sees this pass sees the
	 * list's changes before it (evd__source_polls) */
	__atomic_store_n(&loop->passes, loop->passes + 2, __ATOMIC_RELEASE);
	return total;
}

/* Poll the level fds notified (the others joined the round's list when
 * marked). The caller sets in_round. */
static uint32_t
poll_woken_level(struct evd_loop *loop)
{
	uint32_t n = 0;

	for (uint32_t i = 0; i < loop->n_woke; i++) {
		struct evd_source *s = loop->woke[i];

		if (s->armed == EVD_ARM_LEVEL && !(s->removing | s->failed))
			n += poll_one(loop, s, false);
	}
	return n;
}

static void
count_lost_wakeup(struct evd_loop *loop, struct evd_source *s)
{
	EVD_STAT_ADD(s->stats.lost_wakeups, 1);
	EVD_STAT_ADD(loop->stats.lost_wakeups, 1);
	EVD_LOG(WARNING, "loop %s: source %s: lost wakeup (completions queued before the arm, "
		"no notification)", loop->name, s->name);
}

/* A device's completions were found after a timed-out sleep and its fd did
 * not wake the loop. Its notification may still be on its way (an
 * interrupt through the kernel): it gets OWED_GRACE_NS, judged at the end
 * of a later wait with the source left armed (and polled every round),
 * never by waiting here. Only a notification that will never come is a
 * lost wakeup. */
static void
judge_silence(struct evd_loop *loop, struct evd_source *s, uint64_t now)
{
	if (evd__fd_ready(s->notify_fd)) {
		evd__ack_one(loop, s);
		evd__disarm(loop, s);
	} else {
		evd__owe(loop, s, now);
		evd__act_add(loop, s);
	}
}

/* A notification owed since an earlier wait: it came (settle_woken clears
 * the debt; or it is ready now), or the grace is over and it is lost. */
static void
owed_judge(struct evd_loop *loop, struct evd_source *s, uint64_t now)
{
	if (!s->woken && now - s->owed_since_ns >= OWED_GRACE_NS) {
		evd__owe_clear(loop, s);
		if (evd__fd_ready(s->notify_fd))
			evd__ack_one(loop, s);
		else
			count_lost_wakeup(loop, s);
		evd__disarm(loop, s);
	}
}

/* After a sleep: a timeout polls the armed devices (whose notification the
 * loop cannot prove) and judges those holding completions; the debts of
 * earlier waits are judged. The caller sets in_round. Returns what the
 * polls found. */
static uint32_t
after_sleep(struct evd_loop *loop, enum evd_wake_reason why, uint64_t now)
{
	uint32_t found = 0;

	if ((why != EVD_WAKE_TIMEOUT || loop->n_device == 0) && loop->n_owed == 0)
		return 0;
	/* from the end: a device unwatched by its poll leaves the list, and
	 * the one moved into its place was walked already */
	for (uint32_t i = loop->n_device; i-- > 0;) {
		struct evd_source *s;

		if (i >= loop->n_device)
			continue;
		s = loop->dev[i];
		if (s->owed_since_ns != 0) {
			owed_judge(loop, s, now);
		} else if (why == EVD_WAKE_TIMEOUT && s->armed == EVD_ARM_ONCE && s->has_fd &&
			   !s->woken && !s->removing) {
			uint32_t n = poll_one(loop, s, false);

			if (n == 0)
				continue;
			found += n;
			judge_silence(loop, s, now);
		}
	}
	return found;
}

/* How long until the loop's next timer is due: 0 if it is, UINT64_MAX if
 * there is none. A wait or a pause is cut there. */
static inline uint64_t
timer_room(const struct evd_loop *loop, uint64_t now)
{
	uint64_t next = evd__timers_next(&loop->timers);

	return next == UINT64_MAX ? UINT64_MAX : next > now ? next - now : 0;
}

/* The wait's timeout; UINT64_MAX: none. Without max_sleep_us an idle loop
 * whose notifications are all proven (no device armed) has no reason to
 * wake; a device's interrupt keeps the default bound as a backstop. */
static uint64_t
sleep_bound(struct evd_loop *loop, uint64_t policy_ns, bool all_armed, uint64_t now)
{
	bool proven = loop->n_device == 0;
	uint64_t t = proven && !loop->max_sleep_given ? UINT64_MAX : loop->max_sleep_ns;

	if (policy_ns != 0 && policy_ns < t)
		t = policy_ns;
	if ((loop->n_poll_only > 0 || !all_armed) && loop->poll_only_bound_ns < t)
		t = loop->poll_only_bound_ns;
	return RTE_MIN(t, timer_room(loop, now));
}

/* A busy streak ends (an empty round, an arm, a stop): the policy is told
 * its later rounds' completions, their sum at the last one's time (in
 * parts of 2^31: on_events takes 32 bits); nothing if there was none. */
static void
streak_end(struct evd_loop *loop)
{
	uint64_t n = loop->untold;

	loop->streak = false;
	loop->untold = 0;
	if (loop->policy.ops->on_events == NULL)
		return;
	for (uint32_t part; n > 0; n -= part) {
		part = (uint32_t)RTE_MIN(n, UINT64_C(1) << 31);
		loop->policy.ops->on_events(loop->policy.state, loop->last_event_ns, part);
	}
}

static void
note_events(struct evd_loop *loop, uint64_t now, uint32_t n)
{
	EVD_STAT_ADD(loop->stats.events, n);
	loop->last_event_ns = now;
	loop->last_burst = n;
	/* a round straight after a busy one is told with the streak's end:
	 * a saturated loop of one source calls no policy a round (its cost on
	 * the saturated ring: doc/guides/policies.md, "Adaptive's state") */
	if (loop->streak) {
		loop->untold += n;
		return;
	}
	loop->streak = true;
	loop->idle_rounds = 0;
	if (loop->policy.ops->on_events != NULL)
		loop->policy.ops->on_events(loop->policy.state, now, n);
}

/* A pause between the spin and the sleep: the CPU's light wait where it has
 * one (as rte_power_pmd_mgmt's pause mode), else PAUSE instructions. */
static void
pause_for(const struct evd_loop *loop, uint64_t ns)
{
	uint64_t end;

	if (loop->clock.wait_ns != NULL) {
		loop->clock.wait_ns(loop->clock.arg, EVD_MODE_PAUSE, false, ns);
		return;
	}
	if (evd__power_pause()) {
		evd__power_pause_wait(ns);
		return;
	}
	end = evd__monotonic_ns(NULL) + ns;
	do {
		for (int i = 0; i < 8; i++)
			rte_pause();
	} while (evd__monotonic_ns(NULL) < end);
}

/* Back from a wait (a sleep, or a nap) that began at t0: tell the policy,
 * run due timers, poll the round's list (the notified sources joined it)
 * and the level fds notified, ack what woke us (step 5), then settle the
 * wake: after a sleep the devices' lost-wakeup check. Returns the
 * completions found. */
static uint32_t
after_wait(struct evd_loop *loop, uint64_t t0, enum evd_wake_reason why, bool nap)
{
	uint64_t t1 = evd__now(loop);
	uint32_t n;

	set_mode(loop, EVD_MODE_POLL, t1);
	if (loop->policy.ops->on_wake != NULL)
		loop->policy.ops->on_wake(loop->policy.state, t1, t1 > t0 ? t1 - t0 : 0, why);
	/* from here on a removal waits for the settle: the notified sources'
	 * list holds them */
	loop->in_round = true;
	loop->round_now = t1;
	n = poll_act(loop, false);
	n += poll_woken_level(loop);
	/* after the poll: the CPU clock's read (a syscall on some hosts) would
	 * delay the handlers of what woke us */
	cpu_sample_wait(loop);
	evd__ack_woken(loop);
	if (!nap)
		n += after_sleep(loop, why, t1);
	loop->in_round = false;
	/* a wakeup of the loop that found nothing anywhere was spurious */
	if (evd__settle_woken(loop) && why == EVD_WAKE_NOTIFY && n == 0)
		EVD_STAT_ADD(loop->stats.spurious_wakeups, 1);
	if (unlikely(loop->pending_removal))
		evd__reap_removed(loop);
	/* after the settle, outside the round: a removal from a callback takes
	 * effect at once, as from any timer */
	evd__timers_run(loop, t1);
	if (n > 0)
		note_events(loop, t1, n);
	return n;
}

/* A busy round's look at the notifications: epoll without waiting when fds
 * are watched, the bell when it rang. The notified sources are polled.
 * The caller sets in_round. */
static uint32_t
look(struct evd_loop *loop)
{
	static const struct timespec zero = { 0, 0 };
	bool stop = false;
	uint32_t n;

	loop->n_woke = 0;
	loop->since_look = 0;
	if (loop->n_watched > 0)
		(void)evd__gather(loop, &zero, &stop);
	else
		evd__take_bell(loop);
	n = 0;
	for (uint32_t i = 0; i < loop->n_woke; i++) {
		struct evd_source *s = loop->woke[i];

		if (!(s->removing | s->failed))
			n += poll_one(loop, s, false);
	}
	evd__ack_woken(loop);
	loop->look_found = evd__settle_woken(loop);
	return n;
}

/* Steps 2 and 3, from poll mode to armed: arm the sources of the round's
 * list, fence once, then poll them once more. A completion that landed
 * between the last empty poll and the arm raises no notification on strict
 * (IBTA, virtio) sources; sleeping without this re-poll strands it until
 * the timeout: the lost wakeup. The sources armed in earlier passes need no
 * re-poll: they were polled after their arm, and notify since. Returns the
 * completions the re-poll found (their sources are polled every round
 * again), 0 armed (*all_armed for sleep_bound), or -EAGAIN: a source joined
 * after the arm pass (start over). */
static int
arm_and_repoll(struct evd_loop *loop, uint64_t now, bool *all_armed)
{
	uint32_t n, n_fresh = 0, added = loop->next_src_id; /* ids count the adds */
	uint64_t errors;

	streak_end(loop); /* evd_loop_arm() after busy rounds: told first */
	set_mode(loop, EVD_MODE_SLEEP, now);
	cpu_sample_wait(loop);
	*all_armed = true;
	for (uint32_t i = loop->n_act; i-- > 0;) {
		struct evd_source *s = loop->act[i].src;
		int rc;

		if (s->failed) {
			evd__act_del(loop, s);
			continue;
		}
		if ((!s->has_fd && !s->ops->bell) || s->armed || s->removing)
			continue; /* poll-only; owed (armed, polled) */
		rc = s->ops->arm != NULL ? s->ops->arm(s) : -ENOTSUP;
		if (rc == 0) {
			s->armed = EVD_ARM_ONCE;
			EVD_STAT_ADD(s->stats.arms, 1);
			EVD_STAT_ADD(loop->stats.arms, 1);
			loop->fresh[n_fresh++] = s;
		} else if (rc == -ENOTSUP && s->has_fd && s->ops->arm != NULL) {
			/* e.g. tap, a solicited-only CQ: armed, but not for every
			 * completion, so it stays in the round's list (re-polled
			 * below, polled every round, armed again at each sleep);
			 * its fd ends a wait for the completions it announces */
			continue;
		} else {
			evd__source_error(loop, s, "arm", rc);
			*all_armed = false;
			continue;
		}
		if (s->has_fd)
			loop->n_watched++;
		evd__act_del(loop, s);
	}
	/* one fence for every software source armed above: it pairs with the
	 * producers' between publishing and looking at their armed flag */
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	errors = loop->stats.errors;
	loop->round_now = now;
	loop->in_round = true;
	n = poll_act(loop, true);
	for (uint32_t i = 0; i < n_fresh; i++) {
		struct evd_source *s = loop->fresh[i];
		int k;

		if (s->removing | s->failed)
			continue;
		k = poll_src(loop, s, true);
		/* busy: polled every round again; failed: not checked after its
		 * arm, so polled every round too (its silence proves nothing) */
		if (k != 0 && s->armed)
			evd__disarm(loop, s);
		if (k > 0)
			n += (uint32_t)k;
	}
	loop->in_round = false;
	if (unlikely(loop->pending_removal))
		evd__reap_removed(loop);
	/* a source whose re-poll failed was not checked: what landed before
	 * its arm may never notify, so the wait is bounded as for one that
	 * could not be armed */
	if (loop->stats.errors != errors)
		*all_armed = false;
	if (n == 0 && loop->next_src_id != added) {
		/* a source joined after the arm pass (on_error during the
		 * re-poll): it is not armed, and its notifications would not
		 * wake this wait. Start over: the next step arms it. */
		set_mode(loop, EVD_MODE_POLL, evd__now(loop));
		return -EAGAIN;
	}
	if (n > 0) {
		uint64_t t1;

		EVD_STAT_ADD(loop->stats.repoll_hits, 1);
		t1 = evd__now(loop);
		set_mode(loop, EVD_MODE_POLL, t1);
		note_events(loop, t1, n);
		if (loop->policy.ops->on_wake != NULL)
			loop->policy.ops->on_wake(loop->policy.state, t1, 0, EVD_WAKE_REPOLL);
		return (int)n;
	}
	return 0;
}

/* A stop, or a call queued since the round began: the look that follows
 * may have drained the eventfd that told of it, so no wait may begin. */
static inline bool
wake_owed(const struct evd_loop *loop)
{
	return __atomic_load_n(&loop->stop, __ATOMIC_ACQUIRE) ||
	       __atomic_load_n(&loop->calls, __ATOMIC_ACQUIRE) != NULL;
}

/* Steps 2 to 5 once the policy said sleep. */
static int
sleep_protocol(struct evd_loop *loop, uint64_t policy_ns, uint64_t now)
{
	enum evd_wake_reason why;
	bool all_armed;
	uint64_t t0;
	int rc = arm_and_repoll(loop, now, &all_armed);

	if (rc != 0)
		return rc > 0 ? rc : 0;
	t0 = evd__now(loop);
	if (wake_owed(loop)) {
		set_mode(loop, EVD_MODE_POLL, t0);
		return 0;
	}
	why = evd__wait_ready(loop, sleep_bound(loop, policy_ns, all_armed, t0), false);
	return (int)after_wait(loop, t0, why, false);
}

/* The policy said nap: wait ns (or less: a timer, the loop's bound) with
 * nothing armed for it, so completions gather unannounced (software
 * interrupt moderation), then poll them together. No arm, no re-poll, no
 * lost-wakeup check: nothing was promised. A level fd, a device still
 * armed from an earlier sleep or a stop can end it early. */
static int
nap_protocol(struct evd_loop *loop, uint64_t ns, uint64_t now)
{
	enum evd_wake_reason why;

	set_mode(loop, EVD_MODE_SLEEP, now);
	cpu_sample_wait(loop);
	if (wake_owed(loop)) {
		set_mode(loop, EVD_MODE_POLL, now);
		return 0;
	}
	why = evd__wait_ready(loop, sleep_bound(loop, ns != 0 ? ns : 1000, true, now), true);
	return (int)after_wait(loop, now, why, true);
}

/* The end of a wait another event loop did on evd_loop_fd() after
 * evd_loop_arm(): what a sleep's wake does, the fd only looked at. */
static uint32_t
end_outside_wait(struct evd_loop *loop)
{
	static const struct timespec zero = { 0, 0 };
	enum evd_wake_reason why = EVD_WAKE_NOTIFY;
	bool stop = false;
	int n;

	loop->armed_outside = false;
	loop->n_woke = 0;
	n = evd__gather(loop, &zero, &stop);
	evd__bell_wake(loop->bell);
	if (n == 0 && loop->n_woke == 0) {
		EVD_STAT_ADD(loop->stats.sleep_timeouts, 1);
		why = EVD_WAKE_TIMEOUT;
	} else {
		EVD_STAT_ADD(loop->stats.wakeups, 1);
	}
	if (stop)
		why = EVD_WAKE_STOP;
	return after_wait(loop, loop->mode_mark_ns, why, false);
}

/* What a round does before the policy: the calls queued, the end of a
 * wait done outside (the round is then that wake's: *polled false), the
 * timers due, step 1 (poll every source, dispatch), and on an empty round
 * its counters and on_idle. Returns the completions, or -ESHUTDOWN; *now
 * the round's time. */
static __rte_always_inline int
round_poll(struct evd_loop *loop, uint64_t *now, bool *polled)
{
	uint32_t n;

	*polled = false;
	if (unlikely(__atomic_load_n(&loop->stop, __ATOMIC_ACQUIRE))) {
		streak_end(loop); /* told now: the next run's rounds begin a streak */
		return -ESHUTDOWN;
	}
	if (unlikely(__atomic_load_n(&loop->calls, __ATOMIC_RELAXED) != NULL))
		evd__run_calls(loop);
	if (unlikely(loop->armed_outside))
		return (int)end_outside_wait(loop);
	*polled = true;
	*now = evd__now(loop);
	if (timer_room(loop, *now) == 0)
		evd__timers_run(loop, *now);

	loop->round_now = *now;
	loop->in_round = true;
	n = poll_act(loop, false);
	/* the bell is a load; epoll a syscall: in an empty round, and every
	 * LOOK_ROUNDS busy ones while the fds it watches stay quiet */
	if (unlikely(evd__bell_rung(loop->bell)) ||
	    (loop->n_watched > 0 &&
	     (n == 0 || loop->look_found || ++loop->since_look >= LOOK_ROUNDS)))
		n += look(loop);
	loop->in_round = false;
	if (unlikely(loop->pending_removal))
		evd__reap_removed(loop);
	if (n > 0) {
		if (unlikely(loop->mode != EVD_MODE_POLL))
			set_mode(loop, EVD_MODE_POLL, *now);
		note_events(loop, *now, n);
		return (int)n;
	}
	EVD_STAT_ADD(loop->stats.empty_polls, 1);
	loop->idle_rounds++;
	if (loop->streak)
		streak_end(loop);
	if (loop->on_idle != NULL) { /* before a sleep can happen: flush batches */
		loop->on_idle(loop, loop->on_idle_arg);
		*now = evd__now(loop); /* the flush's time is the round's, not the sleep's */
	}
	return 0;
}

/* The end of a round that stayed in poll mode: the time and CPU stats are
 * brought up to date every CPU_SAMPLE_ROUNDS. */
static inline void
round_end(struct evd_loop *loop)
{
	if (unlikely(++loop->rounds % CPU_SAMPLE_ROUNDS == 0)) {
		set_mode(loop, loop->mode, evd__now(loop));
		cpu_sample(loop);
	}
}

/* One step; the caller holds the loop (EVD__RUN or EVD__STEP). */
static int
loop_step(struct evd_loop *loop)
{
	struct evd_policy_input in;
	enum evd_action act;
	uint64_t now = 0, arg = 0; /* now: set by round_poll (gcc with ASan cannot tell) */
	bool polled;
	int n;

	/* 1. poll */
	n = round_poll(loop, &now, &polled);
	if (!polled)
		return n;
	if (n > 0)
		goto out;

	/* 2. decide */
	in.now_ns = now;
	in.idle_ns = now > loop->last_event_ns ? now - loop->last_event_ns : 0;
	in.idle_rounds = loop->idle_rounds;
	in.last_burst = loop->last_burst;
	in.n_sources = loop->n_src;
	in.n_poll_only = loop->n_poll_only;
	act = loop->policy.ops->decide(loop->policy.state, &in, &arg);
	switch (act) {
	case EVD_ACTION_SLEEP:
	case EVD_ACTION_NAP: {
		int rc = act == EVD_ACTION_SLEEP ? sleep_protocol(loop, arg, now)
						 : nap_protocol(loop, arg, now);

		/* removals asked for after the round's poll (an error in an arm,
		 * an ack, a disarm: these two paths only) take effect now */
		if (unlikely(loop->pending_removal))
			evd__reap_removed(loop);
		return rc;
	}
	case EVD_ACTION_PAUSE:
		/* a timer due within the pause runs at its deadline, not the
		 * pause's end (pmdmgmt's pause_ns goes to 1 ms); one due now, at
		 * once */
		arg = RTE_MIN(arg ? arg : 1000, timer_room(loop, now));
		if (arg != 0) {
			set_mode(loop, EVD_MODE_PAUSE, now);
			EVD_STAT_ADD(loop->stats.pauses, 1);
			pause_for(loop, arg);
			break;
		}
		/* fall through */
	case EVD_ACTION_POLL:
	default:
		if (unlikely(loop->mode != EVD_MODE_POLL))
			set_mode(loop, EVD_MODE_POLL, now);
		break;
	}
out:
	round_end(loop);
	return n;
}

int
evd_loop_step(struct evd_loop *loop)
{
	int rc;

	if (unlikely(!evd__live_loop(loop, "evd_loop_step")))
		return -EINVAL;
	/* one step at a time: not beside evd_loop_run() on another thread (two
	 * threads in one ring's consumer side), not from the step's own
	 * handlers or callbacks (a nested round) */
	rc = evd__hold_take(loop, EVD__STEP);
	if (unlikely(rc < 0))
		return EVD_ARG_ERR(rc, "evd_loop_step %s: %s", loop->name,
				   evd__hold_refused(rc, "the loop is running, or this is a "
							 "step's own callback"));
	rc = loop_step(loop);
	evd__hold_release(loop);
	return rc;
}

int
evd_loop_poll(struct evd_loop *loop, unsigned int budget)
{
	uint16_t burst;
	uint64_t now = 0; /* set by round_poll (gcc with ASan cannot tell) */
	bool polled;
	int rc;

	if (unlikely(!evd__live_loop(loop, "evd_loop_poll")))
		return -EINVAL;
	if (unlikely(budget > EVD__MAX_BURST))
		return EVD_ARG_ERR(-EINVAL, "evd_loop_poll %s: budget %u exceeds %d", loop->name,
				   budget, EVD__MAX_BURST);
	rc = evd__hold_take(loop, EVD__STEP);
	if (unlikely(rc < 0))
		return EVD_ARG_ERR(rc, "evd_loop_poll %s: %s", loop->name,
				   evd__hold_refused(rc, "the loop is running, or this is a "
							 "step's own callback"));
	burst = loop->burst;
	if (budget != 0)
		loop->burst = (uint16_t)budget;
	rc = round_poll(loop, &now, &polled);
	loop->burst = burst;
	if (polled) {
		/* no policy: the round stays in poll mode, empty or not */
		if (unlikely(loop->mode != EVD_MODE_POLL))
			set_mode(loop, EVD_MODE_POLL, now);
		round_end(loop);
	}
	evd__hold_release(loop);
	return rc;
}

int
evd_loop_fd(const struct evd_loop *loop)
{
	if (!evd__live_loop(loop, "evd_loop_fd"))
		return -EINVAL;
	return loop->epfd; /* dup3 keeps the number when the set is rebuilt */
}

int
evd_loop_arm(struct evd_loop *loop, uint64_t *timeout_ns)
{
	uint64_t now;
	int rc;

	if (!evd__live_loop(loop, "evd_loop_arm"))
		return -EINVAL;
	if (timeout_ns == NULL)
		return EVD_ARG_ERR(-EINVAL, "evd_loop_arm %s: timeout_ns is NULL", loop->name);
	rc = evd__hold_take(loop, EVD__STEP);
	if (rc < 0)
		return EVD_ARG_ERR(rc, "evd_loop_arm %s: %s", loop->name,
				   evd__hold_refused(rc, "the loop is running, or this is a "
							 "round's own callback"));
	if (__atomic_load_n(&loop->stop, __ATOMIC_ACQUIRE)) {
		evd__hold_release(loop);
		return -ESHUTDOWN;
	}
	now = evd__now(loop);
	/* a source added since the last arm (ids count the adds) is armed now,
	 * the others stay as they are */
	if (!loop->armed_outside || loop->next_src_id != loop->armed_ids) {
		bool all;

		rc = arm_and_repoll(loop, now, &all);
		if (rc != 0) {
			if (loop->armed_outside) { /* the outside wait is over: work came */
				loop->armed_outside = false;
				evd__bell_wake(loop->bell);
			}
			evd__hold_release(loop);
			return rc;
		}
		loop->armed_all = all && (!loop->armed_outside || loop->armed_all);
		if (!loop->armed_outside)
			EVD_STAT_ADD(loop->stats.sleeps, 1);
		loop->armed_outside = true;
		loop->armed_ids = loop->next_src_id;
	}
	/* a bell rung while the loop was awake wrote no fd, and a call queued
	 * may have had its eventfd drained: the caller's wait must not block */
	*timeout_ns = evd__bell_sleep(loop->bell) && !wake_owed(loop)
			      ? sleep_bound(loop, 0, loop->armed_all, now) : 0;
	evd__hold_release(loop);
	return 0;
}

int
evd_loop_run(struct evd_loop *loop)
{
	clockid_t clock;
	int rc, slack;

	if (!evd__live_loop(loop, "evd_loop_run"))
		return -EINVAL;
	rc = evd__hold_take(loop, EVD__RUN);
	if (rc < 0)
		return EVD_ARG_ERR(rc, "evd_loop_run %s: %s", loop->name,
				   evd__hold_refused(rc, "the loop is already running"));
	__atomic_store_n(&loop->cpu_last, 0, __ATOMIC_RELAXED); /* a stats read may look */
	cpu_sample(loop);
	if (pthread_getcpuclockid(pthread_self(), &clock) == 0) {
		/* a stats read may look (after cpu_live) */
		__atomic_store_n(&loop->cpu_clock, clock, __ATOMIC_RELAXED);
		__atomic_store_n(&loop->cpu_live, true, __ATOMIC_RELEASE);
	}
	/* time between runs is nobody's: start the mode clock afresh */
	loop->mode_mark_ns = evd__now(loop);
	/* Timed waits (naps, guards, timers, the sleep bound) end up to the
	 * thread's timer slack late: 50 us by default, as long as a nap. Run
	 * with 1 us, and give the thread its own back after. */
	slack = prctl(PR_GET_TIMERSLACK, 0, 0, 0, 0);
	if (slack > (int)LOOP_TIMER_SLACK_NS && prctl(PR_SET_TIMERSLACK, LOOP_TIMER_SLACK_NS, 0, 0, 0) < 0)
		slack = -1;
	do {
		rc = loop_step(loop);
	} while (rc >= 0);
	if (slack > (int)LOOP_TIMER_SLACK_NS)
		(void)prctl(PR_SET_TIMERSLACK, (unsigned long)slack, 0, 0, 0);
	set_mode(loop, EVD_MODE_POLL, evd__now(loop));
	__atomic_store_n(&loop->cpu_live, false, __ATOMIC_RELEASE);
	cpu_sample(loop);
	__atomic_store_n(&loop->cpu_last, 0, __ATOMIC_RELAXED);
	evd__hold_release(loop);
	return rc == -ESHUTDOWN ? 0 : rc;
}

int
evd_loop_stop(struct evd_loop *loop)
{
	int rc;

	/* no log line: this must stay async-signal-safe (a loop already
	 * destroyed is caught here most often; its memory may be gone) */
	if (loop == NULL || __atomic_load_n(&loop->magic, __ATOMIC_SEQ_CST) != EVD__LOOP_MAGIC)
		return -EINVAL;
	/* Once the flag is set the loop may return and its owner destroy it,
	 * while this call still rings the doorbell: evd_loop_destroy() waits
	 * for the calls under way, counted here before the magic is looked at
	 * (a second stop, past the look, is counted too), to end (the decrement
	 * is the last access to the loop). */
	__atomic_fetch_add(&loop->wakers, 1, __ATOMIC_SEQ_CST);
	if (__atomic_load_n(&loop->magic, __ATOMIC_SEQ_CST) != EVD__LOOP_MAGIC) {
		__atomic_fetch_sub(&loop->wakers, 1, __ATOMIC_RELEASE);
		return -EINVAL;
	}
	/* The flag first, then the doorbell: a loop about to sleep either
	 * sees the flag or finds the eventfd readable. */
	__atomic_store_n(&loop->stop, 1, __ATOMIC_RELEASE);
	rc = evd__ring_wake(loop);
	__atomic_fetch_sub(&loop->wakers, 1, __ATOMIC_RELEASE);
	return rc;
}

int
evd_loop_resume(struct evd_loop *loop)
{
	uint64_t v;
	int rc;

	if (!evd__live_loop(loop, "evd_loop_resume"))
		return -EINVAL;
	rc = evd__hold_take(loop, EVD__CONTROL);
	if (rc < 0)
		return EVD_ARG_ERR(rc, "evd_loop_resume %s: %s", loop->name,
				   evd__hold_refused(rc, "the loop is running"));
	__atomic_store_n(&loop->stop, 0, __ATOMIC_RELEASE);
	/* a call's doorbell read here is not lost: the next step runs the
	 * calls before it waits */
	while (read(loop->wake_fd, &v, sizeof(v)) > 0)
		;
	evd__hold_release(loop);
	return 0;
}
