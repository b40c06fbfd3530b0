/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * An emulated HCA for the tests and testevd's verbs-emu: an in-process
 * verbs provider that stands behind the real libibverbs API. ibv_poll_cq()
 * and ibv_req_notify_cq() reach it through the context's ops,
 * ibv_create_cq_ex() and ibv_modify_cq() through the verbs_context, the
 * ibv_cq_ex poll calls through the CQ's own function pointers. Its
 * completion channels are pipes carrying 8-byte event records and its async
 * fd a pipe of 16-byte records, so the real ibv_get_cq_event(),
 * ibv_ack_cq_events(), ibv_get_async_event() and ibv_ack_async_event() run.
 * The context comes from libibverbs' private _verbs_init_and_alloc_context()
 * where present (else emu_fallback.c defines those four calls).
 *
 * Two notification semantics, per CQ:
 * - EMU_STRICT (IBTA): arming raises an event only for a completion added
 *   after the arm.
 * - EMU_CONSIDERATE (mlx5): arming with completions already queued past the
 *   consumer index raises an event at once.
 */
#ifndef EMU_IBV_H
#define EMU_IBV_H

#include <stdbool.h>
#include <stdint.h>

#include <infiniband/verbs.h>

enum emu_semantics { EMU_STRICT = 0, EMU_CONSIDERATE = 1 };

/* One completion to add to a CQ. */
struct emu_cqe {
	uint64_t wr_id;
	enum ibv_wc_status status;
	enum ibv_wc_opcode opcode;
	uint32_t byte_len;
	uint32_t qp_num;
	uint32_t imm_data;  /* with IBV_WC_WITH_IMM in wc_flags */
	unsigned int wc_flags;
	uint32_t vendor_err;
	bool solicited;
};

/* Open the emulated device (one per process is enough; more are fine). */
struct ibv_context *emu_open(enum emu_semantics default_semantics);
void emu_close(struct ibv_context *ctx);
bool emu_is_context(const struct ibv_context *ctx);
/* Semantics of CQs created from now on with ibv_create_cq_ex(). */
void emu_set_semantics(struct ibv_context *ctx, enum emu_semantics sem);

/* A completion channel (what ibv_create_comp_channel() returns on this
 * device) and a legacy CQ, for tests of the adopt path. */
struct ibv_comp_channel *emu_create_channel(struct ibv_context *ctx);
int emu_destroy_channel(struct ibv_comp_channel *ch);
struct ibv_cq *emu_create_cq(struct ibv_context *ctx, int cqe, struct ibv_comp_channel *ch,
			     enum emu_semantics sem);
/* What ibv_destroy_cq() does on this device: wait (at most 2 s, then fail
 * with EBUSY and count a hang) until every event written was acknowledged. */
int emu_destroy_cq(struct ibv_cq *cq);

/* The "hardware" adds a completion; any thread. Returns 0, or -ENOSPC on
 * overrun (the completion is lost, as on real hardware: the CQ goes into
 * error and IBV_EVENT_CQ_ERR is raised). */
int emu_cq_push(struct ibv_cq *cq, const struct emu_cqe *e);
/* The race on purpose: e lands after the consumer's last empty poll, just
 * before the next req_notify is processed (strict: it raises no event). */
void emu_cq_push_at_next_arm(struct ibv_cq *cq, const struct emu_cqe *e);
/* Fault knobs. */
void emu_cq_spurious_event(struct ibv_cq *cq);          /* an event with nothing new */
void emu_cq_fail_arm(struct ibv_cq *cq, int times, int err); /* req_notify fails */
void emu_cq_fail_poll(struct ibv_cq *cq, int times);    /* poll fails */
void emu_device_fatal(struct ibv_context *ctx);         /* IBV_EVENT_DEVICE_FATAL */
void emu_port_event(struct ibv_context *ctx, enum ibv_event_type type, uint8_t port);
void emu_disable_moderation(struct ibv_context *ctx);    /* no ibv_modify_cq */

/* Counters of a CQ, for the balance checks. */
struct emu_cq_counters {
	uint64_t pushed;         /* completions accepted */
	uint64_t polled;         /* completions handed out by polls */
	uint64_t arms;           /* successful req_notify */
	uint64_t events;         /* events written to the channel */
	uint64_t events_acked;   /* cq->comp_events_completed */
	uint64_t armed_at_push;  /* completions that found the CQ armed */
	uint64_t considerate_events; /* events raised at arm time */
	uint64_t overruns;
	uint32_t queued;         /* completions waiting */
};
void emu_cq_counters(struct ibv_cq *cq, struct emu_cq_counters *c);
/* Destroys that timed out waiting for acks (must stay 0). */
uint64_t emu_destroy_hangs(void);

#endif
