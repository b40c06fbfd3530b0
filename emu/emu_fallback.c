/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Only built where libibverbs does not export _verbs_init_and_alloc_context:
 * the emulated context then has no private ops, so the executable
 * defines the event calls itself, with libibverbs' semantics (an 8-byte
 * record per completion event, a 16-byte record per async event).
 */
#include <errno.h>
#include <pthread.h>
#include <unistd.h>

#include "emu_ibv.h"

int
ibv_get_cq_event(struct ibv_comp_channel *channel, struct ibv_cq **cq, void **cq_context)
{
	uint64_t handle;

	if (read(channel->fd, &handle, sizeof(handle)) != sizeof(handle))
		return -1;
	*cq = (struct ibv_cq *)(uintptr_t)handle;
	*cq_context = (*cq)->cq_context;
	return 0;
}

void
ibv_ack_cq_events(struct ibv_cq *cq, unsigned int nevents)
{
	pthread_mutex_lock(&cq->mutex);
	cq->comp_events_completed += nevents;
	pthread_cond_signal(&cq->cond);
	pthread_mutex_unlock(&cq->mutex);
}

int
ibv_get_async_event(struct ibv_context *context, struct ibv_async_event *event)
{
	struct {
		uint64_t element;
		uint32_t event_type;
		uint32_t reserved;
	} d;

	if (read(context->async_fd, &d, sizeof(d)) != sizeof(d))
		return -1;
	event->event_type = d.event_type;
	if (d.event_type == IBV_EVENT_CQ_ERR)
		event->element.cq = (struct ibv_cq *)(uintptr_t)d.element;
	else
		event->element.port_num = (int)d.element;
	return 0;
}

void
ibv_ack_async_event(struct ibv_async_event *event)
{
	if (event->event_type == IBV_EVENT_CQ_ERR) {
		struct ibv_cq *cq = event->element.cq;

		pthread_mutex_lock(&cq->mutex);
		cq->async_events_completed++;
		pthread_cond_signal(&cq->cond);
		pthread_mutex_unlock(&cq->mutex);
	}
}
