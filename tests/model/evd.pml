/*
 * SPDX-License-Identifier: BSD-3-Clause
 *
 * A Promela model of evd's loop, its sources and the loop's bell, for spin.
 * doc/guides/model.md maps each step to the C function that implements it.
 *
 * Sources:
 *   S  a strict (IBTA) CQ: an event only for completions added after the arm
 *   C  a considerate (mlx5) CQ: arming with completions queued fires at once
 *   A  the multi-producer ring: slots claimed in order, published in any
 *      order (the poll stops at the first slot not published), its armed
 *      flag, its bit in the loop's bell
 *   B  (-DTWO_RINGS) a second ring on the same bell; the bell's bitmap then
 *      has its summary levels (A and B in two words of one chunk)
 *   D  (-DSOLICITED) a solicited-only CQ: its arm says -ENOTSUP
 *   F  a level-readable fd: watched from the start, ready while it holds bytes
 * The bell: `rung`, `sleeping`, its eventfd (readable or not), a bit per ring.
 *
 * Producers: P1 adds a completion to S (with -DSOLICITED one to D, solicited
 * or not) and posts to A (with -DTWO_RINGS then to B); P2 adds a completion
 * to C, posts to A (it is multi-producer), raises a spurious event on C and
 * writes to F. A post is one statement per step (claim, publish, load of
 * armed, its exchange, the bit, the exchange of rung, the load of sleeping,
 * the eventfd write), so a producer can be held between any two while the
 * loop runs rounds, sleeps, naps and times out. A stopper may call
 * evd_loop_stop() at any time (-DNO_STOP: never).
 *
 * A source stays armed (the loop's view: s_on, c_on, a_on, ...) across
 * rounds and sleeps until its notification comes: an arm pass arms only
 * the sources not armed, fences once, and re-polls only those. After a
 * timed-out sleep the armed devices are polled and judged; rings are not.
 * Each sleep is bounded (its timeout may end it at any moment) or unbounded
 * (only a notification ends it).
 *
 * Properties (safety run, exhaustive):
 *   - no lost wakeup: the loop never blocks in an unbounded wait while a
 *     source holds work that no notification announces (an invalid end
 *     state: a deadlock); and, as a bounded sleep cannot deadlock, the loop
 *     never begins a wait, once the producers are done, with an armed ring
 *     holding an event that its bit, summaries and `rung` do not announce
 *     (assert(!stranded): the model's oracle, no C counterpart);
 *   - no false alarm: the devices' verdict after a timeout (completions on
 *     an armed device, its fd not readable) is never reached (assert(!lost));
 *   - every CQ notification is consumed exactly once (assertions in the
 *     acks, and the balance at the end);
 *   - every event delivered once: once the producers are done and the
 *     sources empty, the polls took every item made (a poll takes a slot
 *     once);
 *   - stop always ends the loop (the stop fd makes the wait return; the
 *     loop must reach its end).
 *
 * Mutants, selected with -D (run.sh requires each to fail):
 *   NO_REPOLL        no re-poll of the sources the arm pass armed
 *   NO_ARM_FENCE     no fence after the arm pass: the re-poll's loads pass
 *                    the stores of armed (visible only after them)
 *   NO_POST_FENCE    no fence in the post: its load of armed passes its
 *                    publication
 *   RUNG_BEFORE_SLEEPING  the loop reads rung before it stores sleeping
 *   SLEEPING_BEFORE_RUNG  the producer reads sleeping before it raises rung
 *   RUNG_BEFORE_BIT  the producer raises rung before it sets its bit
 *   BITS_BEFORE_RUNG the loop takes the bits before it clears rung (with
 *                    TWO_RINGS: a bit set between the two stays, rung 0)
 *   WORD_AFTER_SUMMARY  the producer sets its word's bit after the summary
 *                    bits (with TWO_RINGS)
 *   NOTIFIED_STAYS_ARMED  a ring whose bit was taken is polled but stays
 *                    armed in the loop's view: never re-armed, its flag 0
 *   JUDGE_RINGS      after a timeout the armed rings are polled too, and an
 *                    event found while the flag is still 1 is called a lost
 *                    wakeup: a post between its publication and its load of
 *                    armed is a false alarm
 *   STOP_FD_FIRST    evd_loop_stop() rings the stop eventfd before it sets
 *                    the flag
 * Variants:
 *   TIMED_ONLY       every sleep is bounded: only the assertions can report
 *   UNTIMED_ONLY     every sleep is unbounded, no stranded oracle: only the
 *                    deadlock can report
 *   TWO_RINGS, NO_STOP, SOLICITED as above; LEVEL_IN_LIST (with SOLICITED):
 *                    an -ENOTSUP device stays in the round's list, re-armed
 *                    at each sleep (the code takes it out: see model.md)
 */

#ifdef TWO_RINGS
#define ITEMS0 6       /* S, C, two posts to A, one to B, an fd write */
#else
#define ITEMS0 5
#endif
#ifdef SOLICITED
#define ITEMS (ITEMS0 + 1)
#else
#define ITEMS ITEMS0
#endif
#define NPROD 2

/* Strict CQ: completions, hardware arm, events in the channel, and the
 * loop's view (armed until its notification comes) */
byte s_items; bool s_hw; byte s_pending; byte s_written; byte s_acked; bool s_on;
/* Considerate CQ */
byte c_items; bool c_hw; byte c_pending; byte c_written; byte c_acked; bool c_on;
#ifdef SOLICITED
/* Solicited-only CQ: its arm says -ENOTSUP (EVD_ARM_LEVEL: armed, but not
 * for every completion); d_sol: solicited completions queued */
byte d_items; byte d_sol; bool d_hw; byte d_pending; byte d_written; byte d_acked; bool d_on;
#ifdef LEVEL_IN_LIST
#define D_LISTED true          /* armed or not, polled every round */
#else
#define D_LISTED (!d_on)       /* the code: out of the round's list once armed */
#endif
#define D_READY (d_pending > 0)
#define D_EMPTY (d_items == 0)
#else
#define D_READY false
#define D_EMPTY true
#endif
/* Ring A: head (claims), tail (the consumer), pub (bit p: slot p
 * published, not taken), armed (the flag), bit (in the bell), on (the
 * loop's view) */
byte a_head; byte a_tail; byte a_pub; bool a_armed; bool a_bit; bool a_on;
#ifdef TWO_RINGS
byte b_head; byte b_tail; byte b_pub; bool b_armed; bool b_bit; bool b_on;
#endif
/* The bell */
bool rung; bool sleeping; bool bell_fd;
#ifdef TWO_RINGS
/* the bitmap's summaries: A and B in two words of one chunk; sum bit 0:
 * A's word may hold bits, bit 1: B's; top: the chunk may */
byte sum; bool top;
#endif
#define A_SUM 1
#define B_SUM 2
/* Level fd */
byte f_bytes;
/* Loop */
bool stop; bool wake_fd;
byte producers_done;
bool lost;      /* the devices' verdict after a timeout */
bool stranded;  /* the oracle: an armed ring's event nothing will announce */
bool starved;   /* the oracle: a busy round left a -ENOTSUP device's completions */
byte taken;     /* items the loop's polls took, from every source */

#define A_READY ((a_pub & (1 << a_tail)) != 0)
#define A_EMPTY (a_tail == a_head)
#ifdef TWO_RINGS
#define B_READY ((b_pub & (1 << b_tail)) != 0)
#define B_EMPTY (b_tail == b_head)
#else
#define B_READY false
#define B_EMPTY true
#endif

/* what ends a wait: a CQ event, the bell's eventfd, F's bytes, the stop fd */
#define READY (s_pending > 0 || c_pending > 0 || D_READY || bell_fd || f_bytes > 0 || wake_fd)
#define ALL_EMPTY (s_items == 0 && c_items == 0 && D_EMPTY && A_EMPTY && B_EMPTY && f_bytes == 0)

/* ---- the sources' operations ---- */

/* ring_take(): the published slots from tail on, in order; the positions
 * start over once the ring is empty (no post is between its claim and its
 * publication then), so that no two states differ by them alone */
inline ring_take(head, tail, pub)
{
	do
	:: tail < head && (pub & (1 << tail)) != 0 ->
		pub = pub & ~(1 << tail); tail++; taken++
	:: else -> break
	od;
	if
	:: tail == head -> tail = 0; head = 0
	:: else -> skip
	fi
}

inline cq_take(items)
{
	taken = taken + items; items = 0
}

/* poll_act(): every source of the round's list, that is not armed (F is
 * watched from the start: polled only when epoll reports it) */
inline poll_act()
{
	if :: !s_on -> cq_take(s_items) :: else -> skip fi;
	if :: !c_on -> cq_take(c_items) :: else -> skip fi;
#ifdef SOLICITED
	if :: D_LISTED -> cq_take(d_items); d_sol = 0 :: else -> skip fi;
#endif
	if :: !a_on -> ring_take(a_head, a_tail, a_pub) :: else -> skip fi;
#ifdef TWO_RINGS
	if :: !b_on -> ring_take(b_head, b_tail, b_pub) :: else -> skip fi;
#endif
	skip
}

/* gather()'s epoll part: what is ready, all of it (one epoll_wait); the
 * stop fd and the bell's fd are drained; a notified device's arm is spent
 * (mark_woken → disarm: the loop's view; a CQ has no disarm op); F stays
 * watched */
inline gather_fds()
{
	d_step {
		wake_fd = 0;
		bell_fd = 0;
		w_s = (s_pending > 0); w_c = (c_pending > 0); w_f = (f_bytes > 0);
		if :: w_s -> s_on = 0 :: else -> skip fi;
		if :: w_c -> c_on = 0 :: else -> skip fi;
#ifdef SOLICITED
		w_d = (d_pending > 0);
		if :: w_d -> d_on = 0 :: else -> skip fi;
#endif
		skip
	}
}

/* bell_slot(): a bit is a notification only for a ring armed in the
 * loop's view; mark_woken() then disarms it: ring_disarm() stores 0 */
inline take_bit(bt, on, armed, w)
{
	if
	:: atomic { bt && on -> bt = 0;
#ifndef NOTIFIED_STAYS_ARMED
		on = 0;
#endif
		w = 1 };
#ifndef NOTIFIED_STAYS_ARMED
		armed = 0
#else
		skip
#endif
	:: atomic { bt && !on -> bt = 0 }   /* nobody's: a stale bit */
	:: !bt -> skip
	fi
}

#ifndef TWO_RINGS
inline take_bits()
{
	take_bit(a_bit, a_on, a_armed, w_a)
}
#else
/* top down, each level exchanged to 0 (its relaxed load first: the same) */
inline take_bits()
{
	if
	:: atomic { top -> top = 0 };
		d_step { sg = sum; sum = 0 };
		if :: (sg & A_SUM) != 0 -> take_bit(a_bit, a_on, a_armed, w_a) :: else -> skip fi;
		if :: (sg & B_SUM) != 0 -> take_bit(b_bit, b_on, b_armed, w_b) :: else -> skip fi;
		sg = 0
	:: else -> skip
	fi
}
#endif

/* gather()'s bell part: evd__bell_rung(), then evd__bell_take(): rung
 * exchanged to 0, then the bits */
inline bell_take()
{
	if
#ifndef BITS_BEFORE_RUNG
	:: atomic { rung -> rung = 0 }; take_bits()
#else
	:: rung -> take_bits(); rung = 0
#endif
	:: else -> skip
	fi
}

/* the notified sources polled (look(); after_wait(): the devices and the
 * rings joined the round's list, F by poll_woken_level()), the CQs' events
 * acknowledged, exactly once (ack_woken()), the list settled */
inline poll_woken_ack_settle()
{
	d_step {
		if :: w_s -> cq_take(s_items) :: else -> skip fi;
		if :: w_c -> cq_take(c_items) :: else -> skip fi;
		if :: w_f -> taken = taken + f_bytes; f_bytes = 0 :: else -> skip fi;
		if :: w_a -> ring_take(a_head, a_tail, a_pub) :: else -> skip fi;
#ifdef TWO_RINGS
		if :: w_b -> ring_take(b_head, b_tail, b_pub) :: else -> skip fi;
#endif
		if :: w_s -> assert(s_pending > 0); s_pending--; s_acked++ :: else -> skip fi;
		if :: w_c -> assert(c_pending > 0); c_pending--; c_acked++ :: else -> skip fi;
#ifdef SOLICITED
		if :: w_d -> cq_take(d_items); d_sol = 0; assert(d_pending > 0); d_pending--; d_acked++
		   :: else -> skip fi;
		w_d = 0;
#endif
		w_s = 0; w_c = 0; w_f = 0; w_a = 0; w_b = 0
	}
}

/* after_wait(): the round's list polled (what the wait notified is in it
 * now), F if it was notified, the CQs' events acknowledged */
inline after_wait_poll(slept)
{
	d_step {
		if :: slept -> sleeping = 0 :: else -> skip fi;
		poll_act();
		if :: w_f -> taken = taken + f_bytes; f_bytes = 0 :: else -> skip fi;
		if :: w_a -> ring_take(a_head, a_tail, a_pub) :: else -> skip fi;
#ifdef TWO_RINGS
		if :: w_b -> ring_take(b_head, b_tail, b_pub) :: else -> skip fi;
#endif
		if :: w_s -> assert(s_pending > 0); s_pending--; s_acked++ :: else -> skip fi;
		if :: w_c -> assert(c_pending > 0); c_pending--; c_acked++ :: else -> skip fi;
#ifdef SOLICITED
		if :: w_d -> cq_take(d_items); d_sol = 0; assert(d_pending > 0); d_pending--; d_acked++
		   :: else -> skip fi;
		w_d = 0;
#endif
		w_s = 0; w_c = 0; w_f = 0; w_a = 0; w_b = 0
	}
}

/* after_sleep() after a timeout: an armed device is polled; completions
 * found: its fd readable, the event is acked and the device disarmed
 * (judge_silence()); not readable: owed, and lost once the grace is over.
 * The model's devices notify with the completion (no interrupt on its
 * way), so the debt is a lost wakeup at once. */
inline judge_device(items, pending, acked, on)
{
		if
		:: on && items > 0 ->
			cq_take(items);
			if
			:: pending > 0 -> pending--; acked++; on = 0
			:: else -> lost = 1
			fi
		:: else -> skip
		fi
}

/* the hardware side of a CQ completion */
inline cq_complete(items, hw, pending, written)
{
	atomic {
		items++;
		if
		:: hw -> hw = 0; pending++; written++
		:: else -> skip
		fi
	}
}

/* evd_source_ring_bell(): the bit (with TWO_RINGS, then its summaries),
 * rung exchanged to 1, and only the one that raised it looks at sleeping
 * and writes the eventfd */
#ifndef TWO_RINGS
#define SET_BIT(bt, sb) bt = 1
#elif !defined(WORD_AFTER_SUMMARY)
#define SET_BIT(bt, sb) bt = 1; sum = sum | sb; top = 1
#else
#define SET_BIT(bt, sb) sum = sum | sb; top = 1; bt = 1
#endif
inline ring_bell(bt, sb)
{
#ifndef RUNG_BEFORE_BIT
	SET_BIT(bt, sb);
#ifdef SLEEPING_BEFORE_RUNG
	slp = sleeping;
#endif
	d_step { raised = !rung; rung = 1 };
#else
	d_step { raised = !rung; rung = 1 };
	SET_BIT(bt, sb);
#endif
#ifndef SLEEPING_BEFORE_RUNG
	if
	:: raised -> raised = sleeping
	:: else -> skip
	fi;
#else
	d_step { raised = raised && slp; slp = 0 };
#endif
	if
	:: raised -> raised = 0; bell_fd = 1
	:: else -> skip
	fi
}

/* evd_ring_post_burst(), one statement per step: claim (the CAS on head),
 * publish (the slot's seq), the fence and the load of armed, its exchange
 * to 0 (one producer wins), then the bell */
inline ring_post(head, pub, armed, bt, sb)
{
	d_step { pos = head; head++ };
#ifndef NO_POST_FENCE
	d_step { pub = pub | (1 << pos); pos = 0 };
	saw = armed;
#else
	saw = armed;       /* the load passed the publication */
	d_step { pub = pub | (1 << pos); pos = 0 };
#endif
	if
	:: saw -> d_step { saw = armed; armed = 0 }
	:: else -> skip
	fi;
	if
	:: saw -> saw = 0; ring_bell(bt, sb)
	:: else -> skip
	fi
}

/* P1: the strict CQ, A (and B). P2: the considerate CQ, A, a spurious
 * event on C, the fd. */
proctype producer(bool second)
{
	byte pos; bool saw; bool raised;
#ifdef SLEEPING_BEFORE_RUNG
	bool slp;
#endif
	if
	:: !second -> cq_complete(s_items, s_hw, s_pending, s_written)
	:: second -> cq_complete(c_items, c_hw, c_pending, c_written)
	fi;
#ifdef SOLICITED
	if
	:: !second ->
		atomic {      /* a completion, solicited or not */
			d_items++;
			if
			:: d_sol++;
				if :: d_hw -> d_hw = 0; d_pending++; d_written++ :: else -> skip fi
			:: skip
			fi
		}
	:: else -> skip
	fi;
#endif
	ring_post(a_head, a_pub, a_armed, a_bit, A_SUM);
	if
	:: second ->
		atomic { c_pending++; c_written++ };  /* an event with nothing new */
		f_bytes++
	:: !second ->
#ifdef TWO_RINGS
		ring_post(b_head, b_pub, b_armed, b_bit, B_SUM)
#else
		skip
#endif
	fi;
	atomic { producers_done++ }
}

proctype stopper()
{
	if
#ifndef STOP_FD_FIRST
	:: stop = 1; wake_fd = 1   /* the flag, then the eventfd: two steps */
#else
	:: wake_fd = 1; stop = 1
#endif
	:: skip                    /* or never */
	fi
}

#ifdef TWO_RINGS
#define A_RUNG (a_bit && (sum & A_SUM) != 0 && top && rung)
#define B_STRANDED (b_on && B_READY && !(b_bit && (sum & B_SUM) != 0 && top && rung))
#else
#define A_RUNG (a_bit && rung)
#define B_STRANDED false
#endif
#ifdef SOLICITED
/* D armed with a solicited completion queued, no event for it */
#define D_STRANDED (d_on && d_sol > 0 && d_pending == 0)
#else
#define D_STRANDED false
#endif
/* the oracle, at the start of a wait: the producers are done, and an armed
 * ring holds an event that no bit with rung raised announces (or D holds a
 * solicited completion with no event) */
#define STRANDED (producers_done == NPROD && \
		  ((a_on && A_READY && !A_RUNG) || B_STRANDED || D_STRANDED))
#ifndef UNTIMED_ONLY
#define ORACLE stranded = STRANDED; assert(!stranded)
#else
#define ORACLE skip
#endif

/* ---- the loop: evd_loop_step() in a loop, as evd_loop_run() ---- */

active proctype loop()
{
	byte n;        /* the round: taken before its poll; the re-poll: what it found */
	bool seen;     /* rung, read before the wait */
	bool timedout;
	bool w_s, w_c, w_f, w_a, w_b;  /* notified in the last wait or look */
#ifdef SOLICITED
	bool w_d;
#endif
	bool f_s, f_c, f_a, f_b;       /* armed by this arm pass (fresh) */
#ifdef TWO_RINGS
	byte sg;                       /* the summary word taken */
#endif
#ifdef NO_ARM_FENCE
	bool d_a, d_b;                 /* their stores of armed, still to come */
#endif

	run producer(0);
	run producer(1);
#ifndef NO_STOP
	run stopper();
#endif
	do
	:: stop -> break
	:: else ->
		/* 1. round_poll(): the round's list, then the bell (a load) and
		 * epoll without waiting (F is watched): in an empty round,
		 * when rung, and every LOOK_ROUNDS busy ones */
		d_step { n = taken; poll_act() };   /* n: taken before the round */
		if
		:: skip -> gather_fds(); bell_take(); poll_woken_ack_settle()
		:: taken != n && !rung -> skip
		fi;
		if
		:: atomic { taken != n -> n = 0;
#ifdef SOLICITED
			/* a busy round: it polls no armed -ENOTSUP device, and
			 * only a timeout would (there is none while busy) */
			starved = (d_on && !D_LISTED && d_items > 0 && d_pending == 0);
			assert(!starved)
#else
			skip
#endif
		   }; goto next
		:: atomic { else -> n = 0 }
		fi;
		/* 2. decide: poll again (or pause), nap, or sleep */
		if
		:: goto next
		:: goto nap
		:: skip
		fi;
		/* 3. arm_and_repoll(): arm the sources not armed (in the loop's
		 * view: an arm stays until its notification), devices through
		 * their arm op, rings by ring_arm() (the store of armed) ... */
		d_step {
			if :: !s_on -> s_hw = 1; s_on = 1; f_s = 1 :: else -> skip fi;
			if
			:: !c_on ->
				if
				:: c_items > 0 -> c_pending++; c_written++   /* considerate: fires now */
				:: else -> c_hw = 1
				fi;
				c_on = 1; f_c = 1
			:: else -> skip
			fi;
#ifdef SOLICITED
			/* the solicited arm: -ENOTSUP, armed (LEVEL); not fresh, so
			 * not re-polled (with LEVEL_IN_LIST: re-armed at each sleep,
			 * polled by the re-poll of the round's list) */
#ifndef LEVEL_IN_LIST
			if :: !d_on -> d_hw = 1; d_on = 1 :: else -> skip fi;
#else
			d_hw = 1; d_on = 1;
#endif
#endif
#ifndef NO_ARM_FENCE
			if :: !a_on -> a_armed = 1; a_on = 1; f_a = 1 :: else -> skip fi;
#ifdef TWO_RINGS
			if :: !b_on -> b_armed = 1; b_on = 1; f_b = 1 :: else -> skip fi;
#endif
#else
			/* the stores wait in the store buffer past the re-poll */
			if :: !a_on -> a_on = 1; f_a = 1; d_a = 1 :: else -> skip fi;
#ifdef TWO_RINGS
			if :: !b_on -> b_on = 1; f_b = 1; d_b = 1 :: else -> skip fi;
#endif
#endif
			skip
		};
		/* ... one fence, then re-poll the round's list and those armed;
		 * f_*: the re-poll hit */
		d_step {
			n = taken;
			poll_act();
#ifndef NO_REPOLL
			if :: f_s -> f_s = (s_items > 0); cq_take(s_items) :: else -> skip fi;
			if :: f_c -> f_c = (c_items > 0); cq_take(c_items) :: else -> skip fi;
			if :: f_a -> f_a = A_READY; ring_take(a_head, a_tail, a_pub) :: else -> skip fi;
#ifdef TWO_RINGS
			if :: f_b -> f_b = B_READY; ring_take(b_head, b_tail, b_pub) :: else -> skip fi;
#endif
#else
			f_s = 0; f_c = 0; f_a = 0; f_b = 0;
#endif
			n = taken - n
		};
#ifdef NO_ARM_FENCE
		d_step {
			if :: d_a -> d_a = 0; a_armed = 1 :: else -> skip fi;
#ifdef TWO_RINGS
			if :: d_b -> d_b = 0; b_armed = 1 :: else -> skip fi;
#endif
			skip
		};
#endif
		/* a re-poll hit: busy, disarmed (a ring's flag stored 0) */
		d_step {
			if :: f_s -> s_on = 0 :: else -> skip fi;
			if :: f_c -> c_on = 0 :: else -> skip fi;
			if :: f_a -> a_on = 0; a_armed = 0 :: else -> skip fi;
#ifdef TWO_RINGS
			if :: f_b -> b_on = 0; b_armed = 0 :: else -> skip fi;
#endif
			f_s = 0; f_c = 0; f_a = 0; f_b = 0
		};
		if
		:: atomic { n > 0 -> n = 0 }; goto next
		:: else -> skip
		fi;
		/* sleep_protocol()'s stop check; 4. wait_ready():
		 * evd__bell_sleep() (sleeping, the fence, rung) */
#ifndef RUNG_BEFORE_SLEEPING
		if
		:: stop -> break
		:: atomic { else -> sleeping = 1 }
		fi;
		if
		:: rung -> gather_fds()         /* rung: a look, no wait */
		:: atomic { !rung -> ORACLE };
#else
		if
		:: stop -> break
		:: atomic { else -> seen = rung }
		fi;
		sleeping = 1;
		if
		:: atomic { seen -> seen = 0 }; gather_fds()
		:: atomic { !seen -> ORACLE };
#endif
			if
#ifndef TIMED_ONLY
			:: skip ->      /* unbounded */
				if
				:: READY -> gather_fds()
				:: (producers_done == NPROD && ALL_EMPTY && !stop) -> goto done
				fi
#endif
#ifndef UNTIMED_ONLY
			:: skip ->      /* bounded: the timeout may come at any moment */
				if
				:: READY -> gather_fds()
				:: (producers_done == NPROD && ALL_EMPTY && !stop) -> goto done
				:: timedout = 1
				fi
#endif
			fi
		fi;
		bell_take();
		/* evd__bell_wake(); 5. after_wait(): poll, ack what woke us */
		after_wait_poll(1);
		if
		:: timedout ->
			d_step {
				timedout = 0;
				judge_device(s_items, s_pending, s_acked, s_on);
				judge_device(c_items, c_pending, c_acked, c_on);
#ifdef SOLICITED
				/* an arm that said -ENOTSUP promised nothing: polled,
				 * disarmed if it found completions, never judged */
				if
				:: d_on && d_items > 0 -> cq_take(d_items); d_sol = 0; d_on = 0
				:: else -> skip
				fi;
#endif
				skip
			};
			assert(!lost);
#ifdef JUDGE_RINGS
			d_step {
				if
				:: a_on && A_READY && a_armed -> lost = 1
				:: else -> skip
				fi;
				if :: a_on -> ring_take(a_head, a_tail, a_pub) :: else -> skip fi
			};
			assert(!lost)
#endif
		:: else -> skip
		fi;
		goto next;
nap:
		/* nap_protocol(): nothing armed for it, sleeping not stored (a
		 * bell rung meanwhile writes no fd); its timer ends it at any
		 * moment, or it returns with what is ready; armed sources stay
		 * armed */
		if
		:: stop -> break
		:: else -> skip
		fi;
		if
		:: READY -> gather_fds()
		:: skip         /* the timer: nothing reported */
		fi;
		bell_take();
		after_wait_poll(0);
next:
		skip
	od;
done:
	/* destroy: every event still in a channel is read and acknowledged */
	atomic {
		s_acked = s_acked + s_pending; s_pending = 0;
		c_acked = c_acked + c_pending; c_pending = 0;
#ifdef SOLICITED
		d_acked = d_acked + d_pending; d_pending = 0;
		assert(d_acked == d_written);
#endif
		assert(s_acked == s_written);
		assert(c_acked == c_written);
		/* producers done, sources empty: the polls took every item
		 * the producers made, none twice */
		assert(producers_done < NPROD || !ALL_EMPTY || taken == ITEMS)
	}
}
