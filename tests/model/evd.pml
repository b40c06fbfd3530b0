/*
 * SPDX-License-Identifier: BSD-3-Clause
 *
 * A Promela model of evd's loop and its sources, for spin.
 * doc/guides/model.md maps each step to the C function that implements it.
 *
 * Sources:
 *   S  a strict (IBTA) CQ: an event only for completions added after the arm
 *   C  a considerate (mlx5) CQ: arming with completions queued fires at once
 *   R  the multi-producer ring: armed flag, eventfd doorbell (a counter)
 *   F  a level-readable fd: ready while it holds bytes
 * Producers P1 and P2 add completions, post to the ring (both of them: it is
 * multi-producer), write to the fd, and P2 also raises spurious CQ events.
 * A stopper may call evd_loop_stop() at any time.
 *
 * Properties (safety run, exhaustive):
 *   - no lost wakeup: the loop never blocks in its wait while a source holds
 *     work that no notification announces (an invalid end state otherwise:
 *     the wait has no timeout here, so a lost wakeup is a deadlock);
 *   - every notification is consumed exactly once (assertions in the acks);
 *   - acks balance before destroy (assertion at the end);
 *   - stop always ends the loop (the stop fd makes the wait return; the loop
 *     must reach its end).
 *
 * Mutants, selected with -D:
 *   NO_REPOLL    the re-poll after arming is removed
 *   NO_FENCE     the ring's fences are removed: a producer's load of the
 *                armed flag may pass its enqueue, and the consumer's re-poll
 *                may pass its store of the armed flag (store-load reordering)
 *   STOP_FD_FIRST  evd_loop_stop() rings the stop eventfd before it sets
 *                the flag: a loop woken by the eventfd in between drains it,
 *                comes round without seeing the flag, and sleeps through
 *                the stop
 */

#define N_ITEMS 1      /* rounds per producer */

/* Strict CQ */
byte s_items; bool s_armed; byte s_pending; byte s_written; byte s_acked;
/* Considerate CQ */
byte c_items; bool c_armed; byte c_pending; byte c_written; byte c_acked;
/* Ring */
byte r_items; bool r_armed; byte r_db; byte r_rung; byte r_consumed;
/* Level fd */
byte f_bytes;
/* Loop */
bool stop; bool stop_fd;
byte producers_done;
bool woken_s, woken_c, woken_r;

#define READY (s_pending > 0 || c_pending > 0 || r_db > 0 || f_bytes > 0 || stop_fd)
#define ALL_EMPTY (s_items == 0 && c_items == 0 && r_items == 0 && f_bytes == 0)

/* ---- the sources' operations ---- */

/* poll: take everything (the burst bound does not matter here) */
inline poll_all(found)
{
	d_step {
		found = s_items + c_items + r_items + f_bytes;
		s_items = 0; c_items = 0; r_items = 0; f_bytes = 0
	}
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

/* evd_ring_post_burst(): publish, fence, look at armed */
inline ring_post()
{
	bool saw;
#ifdef NO_FENCE
	saw = r_armed;     /* the load passed the store */
	r_items++;
#else
	r_items++;
	saw = r_armed;     /* after the fence */
#endif
	if
	:: saw -> atomic {
			if
			:: r_armed -> r_armed = 0; r_db++; r_rung++   /* exchange: one producer rings */
			:: else -> skip
			fi
		}
	:: else -> skip
	fi
}

/* P1: the strict CQ and the ring. P2: the considerate CQ, a spurious event
 * on it, the ring, the fd. */
proctype producer(bool second)
{
	byte i = 0;
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

	run producer(0);
	run producer(1);
	run stopper();
	do
	:: stop -> break
	:: else ->
		/* 1. poll */
		poll_all(found);
		if
		:: found > 0 -> goto next
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
		:: found > 0 -> atomic { r_armed = 0 }; goto next  /* re-poll hit: disarm */
		:: else -> skip
		fi;
#else
#ifdef NO_FENCE
		r_armed = 1;
#endif
#endif
		if
		:: stop -> atomic { r_armed = 0 }; break
		:: else -> skip
		fi;
		/* 4. wait: no timeout in the model, so a lost wakeup blocks here */
		if
		:: READY -> skip
		/* all quiet: it may end here (a wait with nothing to come), but
		 * not once stop is asked: then the stop fd must end the wait */
		:: (producers_done == 2 && ALL_EMPTY && !stop) -> goto done
		fi;
		d_step {
			woken_s = (s_pending > 0); woken_c = (c_pending > 0); woken_r = (r_db > 0);
			if :: stop_fd -> stop_fd = 0 :: else -> skip fi
		};
		/* 5. poll, ack what woke us (exactly once), disarm */
		poll_all(found);
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
			r_armed = 0
		};
		goto next;
nap:
		/* a nap (nap_protocol): nothing is armed; its timer ends it at
		 * any moment here, seeing no fd ready, or it returns with what
		 * is ready then; poll, ack what woke it (exactly once). A CQ
		 * still armed from an earlier sleep it did not end may fire
		 * meanwhile (s_armed is cleared only when the CQ fires). */
		if
		:: d_step { woken_s = 0; woken_c = 0; woken_r = 0 }   /* the timer: nothing ready */
		:: d_step {
			woken_s = (s_pending > 0); woken_c = (c_pending > 0); woken_r = (r_db > 0);
			if :: stop_fd -> stop_fd = 0 :: else -> skip fi
		   }
		fi;
		poll_all(found);
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
			fi
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
		assert(r_consumed == r_rung)
	}
}
