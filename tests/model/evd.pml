/*
 * SPDX-License-Identifier: BSD-3-Clause
 *
 * A Promela model of evd's loop and its sources, for spin.
 * doc/guides/model.md maps each step to the C function that implements it.
 *
 * Sources:
 *   S  a strict (IBTA) CQ: an event only for completions added after the arm
 *   C  a considerate (mlx5) CQ: arming with completions queued fires at once
 *   R  the multi-producer ring: armed flag, eventfd doorbell (a counter),
 *      and the producers' counters head (claimed) and done (doorbell step over)
 *   F  a level-readable fd: ready while it holds bytes
 * Producers P1 and P2 add completions, post to the ring (both of them: it is
 * multi-producer), write to the fd, and P2 also raises spurious CQ events.
 * A ring post is one statement per step (claim, publish, fence and load of
 * armed, exchange, doorbell write, done), so a producer can be held between
 * any two while the loop runs many rounds, sleeps and times out.
 * A stopper may call evd_loop_stop() at any time.
 *
 * Each sleep is either bounded (its timeout may end it at any moment, with
 * nothing marked) or unbounded. After a timed-out sleep whose poll found ring
 * items, the loop judges them: done read before head, unequal: a post is in
 * flight (its doorbell comes later, or it finds armed 0 after the disarm);
 * equal: the doorbell must be in the eventfd (consumed), else the wakeup was
 * lost.
 *
 * Properties (safety run, exhaustive):
 *   - no lost wakeup: the loop never blocks in an unbounded wait while a
 *     source holds work that no notification announces (an invalid end
 *     state: a deadlock);
 *   - no false alarm: the lost-wakeup verdict after a timeout is never
 *     reached (assert(!lost)); the mutants show it is reached on a real loss;
 *   - every notification is consumed exactly once (assertions in the acks);
 *   - acks balance before destroy, and once the producers are done and the
 *     sources empty the polls took every item made, none twice (assertions
 *     at the end);
 *   - stop always ends the loop (the stop fd makes the wait return; the loop
 *     must reach its end).
 *
 * Mutants and variants, selected with -D:
 *   NO_REPOLL    the re-poll after arming is removed
 *   NO_FENCE     the ring's fences are removed: a producer's load of the
 *                armed flag may pass its enqueue, and the consumer's re-poll
 *                may pass its store of the armed flag (store-load reordering)
 *   STOP_FD_FIRST  evd_loop_stop() rings the stop eventfd before it sets
 *                the flag: a loop woken by the eventfd in between drains it,
 *                comes round without seeing the flag, and sleeps through
 *                the stop
 *   OLD_DOORBELL_OWED  the verdict calls a post in flight only if armed is
 *                0 (a producer exchanged it, its write to come): a producer
 *                held between its load of armed and its exchange is called
 *                a lost wakeup
 *   DONE_EARLY   a producer adds to done as soon as it has published, before
 *                its doorbell step: done can equal head while a doorbell
 *                is still to come
 *   HEAD_FIRST   the verdict reads head before done: while one post is held
 *                between its exchange and its write, another can claim,
 *                find armed 0 and add to done between the two reads, which
 *                then match with a doorbell still to come
 *   TIMED_ONLY   every sleep is bounded: a lost wakeup cannot deadlock, so
 *                only the verdict can report it
 *   UNTIMED_ONLY every sleep is unbounded: only the deadlock can report it
 */

#define N_ITEMS 1      /* rounds per producer */

/* Strict CQ */
byte s_items; bool s_armed; byte s_pending; byte s_written; byte s_acked;
/* Considerate CQ */
byte c_items; bool c_armed; byte c_pending; byte c_written; byte c_acked;
/* Ring; r_head, r_done: the producers' counters (positions claimed, and
 * positions whose doorbell step is over) */
byte r_items; bool r_armed; byte r_db; byte r_rung; byte r_consumed;
byte r_head; byte r_done;
/* Level fd */
byte f_bytes;
/* Loop */
bool stop; bool stop_fd;
byte producers_done;
bool woken_s, woken_c, woken_r;   /* cleared after the acks, as found */
bool lost;     /* the verdict after a timeout: a lost wakeup */
byte taken;    /* items the loop's polls took, from every source */

/* what the producers make: a completion on each CQ, a post each, an fd write */
#define ITEMS (5 * N_ITEMS)

#define READY (s_pending > 0 || c_pending > 0 || r_db > 0 || f_bytes > 0 || stop_fd)
#define ALL_EMPTY (s_items == 0 && c_items == 0 && r_items == 0 && f_bytes == 0)

/* ---- the sources' operations ---- */

/* poll: take everything (the burst bound does not matter here); taken
 * counts the items for the end's check. The count found is kept only where
 * the loop uses it, and cleared once used, so that no state differs by a
 * stale count. */
#define TAKE_ALL \
		taken = taken + s_items + c_items + r_items + f_bytes; \
		s_items = 0; c_items = 0; r_items = 0; f_bytes = 0

inline poll_all(found)
{
	d_step { found = s_items + c_items + r_items + f_bytes; TAKE_ALL }
}

/* a poll whose count is not used */
inline poll_any()
{
	d_step { TAKE_ALL }
}

/* a poll after a timeout: how many items the ring held (the sleep's bound
 * is done with) */
inline poll_ring(rf)
{
	d_step { timed = 0; rf = r_items; TAKE_ALL }
}

/* arm: CQs as ibv_req_notify_cq; the ring as ring_arm() */
inline arm_all()
{
	atomic {
		s_armed = 1;
		if
		:: c_items > 0 -> c_pending++; c_written++   /* considerate: fires now */
		:: else -> c_armed = 1
		fi
	}
#ifndef NO_FENCE
	r_armed = 1   /* store, then full fence: the re-poll cannot pass it */
#endif
}

/* the hardware/producer side of a CQ completion */
inline cq_complete(items, armed, pending, written)
{
	atomic {
		items++;
		if
		:: armed -> armed = 0; pending++; written++
		:: else -> skip
		fi
	}
}

/* evd_ring_post_burst(), one statement per step: claim (the CAS on head),
 * publish (the slot's seq), fence and load armed, exchange it to 0 (one
 * producer wins), write the eventfd, add to done (release: the write is
 * visible to a loop that sees the add). Held between any two, the producer
 * leaves the loop free to sleep, time out and judge. */
inline ring_post()
{
	r_head++;
#ifdef NO_FENCE
	saw = r_armed;     /* the load passed the store */
	r_items++;
#else
	r_items++;
#ifdef DONE_EARLY
	r_done++;
#endif
	saw = r_armed;     /* after the fence */
#endif
	if
	:: saw ->
		d_step {
			if
			:: r_armed -> r_armed = 0
			:: else -> saw = 0          /* another producer, or the disarm */
			fi
		};
		d_step {
			if
			:: saw -> r_db++; r_rung++; saw = 0
			:: else -> skip
			fi
		}
	:: else -> skip
	fi;
#ifndef DONE_EARLY
	r_done++
#else
	skip
#endif
}

/* P1: the strict CQ and the ring. P2: the considerate CQ, a spurious event
 * on it, the ring, the fd. */
proctype producer(bool second)
{
	byte i = 0;
	bool saw;
	do
	:: i < N_ITEMS ->
		if
		:: !second -> cq_complete(s_items, s_armed, s_pending, s_written)
		:: second -> cq_complete(c_items, c_armed, c_pending, c_written)
		fi;
		ring_post();
		if
		:: second ->
			atomic { c_pending++; c_written++ };  /* an event with nothing new */
			f_bytes++
		:: else -> skip
		fi;
		i++
	:: else -> break
	od;
	atomic { producers_done++ }
}

proctype stopper()
{
	if
#ifndef STOP_FD_FIRST
	:: stop = 1; stop_fd = 1   /* the flag, then the eventfd: two steps */
#else
	:: stop_fd = 1; stop = 1
#endif
	:: skip                               /* or never */
	fi
}

/* ---- the loop: evd_loop_step() in a loop, as evd_loop_run() ---- */

active proctype loop()
{
	byte found;
	byte rf;       /* ring items found after a timeout */
	byte seen;     /* the verdict's first read (done, or head in HEAD_FIRST) */
	bool timed;    /* this sleep has a timeout */

	run producer(0);
	run producer(1);
	run stopper();
	do
	:: stop -> break
	:: else ->
		/* 1. poll */
		poll_all(found);
		if
		:: atomic { found > 0 -> found = 0 }; goto next
		:: else -> skip
		fi;
		/* 2. decide: poll again, nap, or sleep */
		if
		:: goto next
		:: goto nap
		:: skip
		fi;
		/* 3. arm, then re-poll */
		arm_all();
#ifndef NO_REPOLL
		poll_all(found);
#ifdef NO_FENCE
		r_armed = 1;  /* the store becomes visible after the re-poll's loads */
#endif
		if
		:: atomic { found > 0 -> found = 0; r_armed = 0 }; goto next  /* re-poll hit: disarm */
		:: else -> skip
		fi;
#else
#ifdef NO_FENCE
		r_armed = 1;
#endif
#endif
		/* the stop check; then the sleep's bound: a timeout (the policy's
		 * or the loop's), or none, where a lost wakeup is a deadlock */
		if
		:: stop -> atomic { r_armed = 0 }; break
#ifndef UNTIMED_ONLY
		:: !stop -> timed = 1
#endif
#ifndef TIMED_ONLY
		:: !stop -> timed = 0
#endif
		fi;
		/* 4. wait */
		if
		:: READY -> skip
		/* all quiet: it may end here (a wait with nothing to come), but
		 * not once stop is asked: then the stop fd must end the wait */
		:: (producers_done == 2 && ALL_EMPTY && !stop) -> goto done
		/* the timeout, at any moment (also racing a notification) */
		:: timed -> goto timed_out
		fi;
		d_step {
			timed = 0;
			woken_s = (s_pending > 0); woken_c = (c_pending > 0); woken_r = (r_db > 0);
			if :: stop_fd -> stop_fd = 0 :: else -> skip fi
		};
		/* 5. poll, ack what woke us (exactly once), disarm */
		poll_any();
		atomic {
			if
			:: woken_s -> assert(s_pending > 0); s_pending--; s_acked++
			:: else -> skip
			fi;
			if
			:: woken_c -> assert(c_pending > 0); c_pending--; c_acked++
			:: else -> skip
			fi;
			if
			:: woken_r -> assert(r_db > 0); r_consumed = r_consumed + r_db; r_db = 0
			:: else -> skip
			fi;
			woken_s = 0; woken_c = 0; woken_r = 0;
			r_armed = 0
		};
		goto next;
timed_out:
		/* the sleep timed out, nothing marked: poll with the sources still
		 * armed; ring items found owe a notification, and none was seen
		 * (after_wake). The CQs' own check is not modelled: their events
		 * stay pending for the next wake or the destroy. */
		poll_ring(rf);
		if
		:: rf == 0 -> goto disarm
		:: else -> rf = 0
		fi;
#if defined(OLD_DOORBELL_OWED)
		if
		:: !r_armed -> goto disarm    /* exchanged: its write is to come */
		:: else
		fi;
#elif defined(HEAD_FIRST)
		seen = r_head;
		if
		:: atomic { r_done != seen -> seen = 0 }; goto disarm
		:: atomic { r_done == seen -> seen = 0 }
		fi;
#else
		/* done first: head, read after it, is at least as far, so equal
		 * values mean no post between its claim and its done */
		seen = r_done;
		if
		:: atomic { seen != r_head -> seen = 0 }; goto disarm  /* a post in flight */
		:: atomic { seen == r_head -> seen = 0 }
		fi;
#endif
		/* every post that made what was found is over: its doorbell is
		 * in the eventfd (consume it), or there is none */
		if
		:: atomic { r_db > 0 -> r_consumed = r_consumed + r_db; r_db = 0 }
		:: atomic { r_db == 0 -> lost = 1; assert(!lost) }
		fi;
disarm:
		r_armed = 0;
		goto next;
nap:
		/* a nap (nap_protocol): nothing is armed; its timer ends it at
		 * any moment here, seeing no fd ready, or it returns with what
		 * is ready then; poll, ack what woke it (exactly once). A CQ
		 * still armed from an earlier sleep it did not end may fire
		 * meanwhile (s_armed is cleared only when the CQ fires). */
		if
		:: skip   /* the timer: nothing ready, no woken_* set */
		:: d_step {
			woken_s = (s_pending > 0); woken_c = (c_pending > 0); woken_r = (r_db > 0);
			if :: stop_fd -> stop_fd = 0 :: else -> skip fi
		   }
		fi;
		poll_any();
		atomic {
			if
			:: woken_s -> assert(s_pending > 0); s_pending--; s_acked++
			:: else -> skip
			fi;
			if
			:: woken_c -> assert(c_pending > 0); c_pending--; c_acked++
			:: else -> skip
			fi;
			if
			:: woken_r -> assert(r_db > 0); r_consumed = r_consumed + r_db; r_db = 0
			:: else -> skip
			fi;
			woken_s = 0; woken_c = 0; woken_r = 0
		};
next:
		skip
	od;
done:
	/* destroy: every event still in a channel is read and acknowledged */
	atomic {
		s_acked = s_acked + s_pending; s_pending = 0;
		c_acked = c_acked + c_pending; c_pending = 0;
		r_consumed = r_consumed + r_db; r_db = 0;
		assert(s_acked == s_written);
		assert(c_acked == c_written);
		assert(r_consumed == r_rung);
		/* producers done, sources empty: the polls took every item
		 * the producers made, none twice */
		assert(producers_done < 2 || !ALL_EMPTY || (taken == ITEMS && r_done == r_head))
	}
}
