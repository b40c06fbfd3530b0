/* SPDX-License-Identifier: BSD-3-Clause */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <string.h>
#include <unistd.h>

#include "strict_source.h"

/* Consume one injected fault, if any is left. */
static bool
take_fault(int *knob)
{
	int v = __atomic_load_n(knob, __ATOMIC_ACQUIRE);

	while (v > 0)
		if (__atomic_compare_exchange_n(knob, &v, v - 1, false, __ATOMIC_ACQ_REL,
						__ATOMIC_ACQUIRE))
			return true;
	return false;
}

static int
strict_poll(struct evd_source *src, uint16_t budget)
{
	struct strict_source *s = (struct strict_source *)src;
	uint64_t n;

	if (take_fault(&s->fail_poll))
		return -EIO;
	n = __atomic_load_n(&s->items, __ATOMIC_ACQUIRE);
	if (n == 0)
		return 0;
	if (n > budget)
		n = budget;
	__atomic_fetch_sub(&s->items, n, __ATOMIC_ACQ_REL);
	s->delivered += n;
	evd_source_deliver(src, NULL, (uint16_t)n);
	return (int)n;
}

static void
notify(struct strict_source *s)
{
	uint64_t rec = 1;

	if (s->never_notify)
		return;
	if (write(s->pipe[1], &rec, sizeof(rec)) == sizeof(rec))
		__atomic_fetch_add(&s->notified, 1, __ATOMIC_RELAXED);
}

static int
strict_arm(struct evd_source *src)
{
	struct strict_source *s = (struct strict_source *)src;

	if (take_fault(&s->fail_arm))
		return -EIO;
	if (s->inject_at_arm > 0) {
		/* lands after the last empty poll, before the arm: no event */
		__atomic_fetch_add(&s->items, (uint64_t)s->inject_at_arm, __ATOMIC_ACQ_REL);
		s->inject_at_arm = 0;
	}
	__atomic_store_n(&s->armed, 1, __ATOMIC_SEQ_CST);
	return 0;
}

static int
strict_disarm(struct evd_source *src)
{
	__atomic_store_n(&((struct strict_source *)src)->armed, 0, __ATOMIC_SEQ_CST);
	return 0;
}

static int
strict_fd(const struct evd_source *src)
{
	return ((const struct strict_source *)src)->pipe[0];
}

static int
strict_ack(struct evd_source *src)
{
	struct strict_source *s = (struct strict_source *)src;
	uint64_t rec;
	ssize_t r;

	if (take_fault(&s->ack_eagain))
		return -EAGAIN; /* the notification stays: the next wait returns at once */
	r = read(s->pipe[0], &rec, sizeof(rec));

	if (r < 0)
		return -errno;
	if (r != sizeof(rec))
		return -EIO;
	__atomic_fetch_add(&s->acked, 1, __ATOMIC_RELAXED);
	return 0;
}

static const struct evd_source_ops strict_ops = {
	.kind = "strict",
	.poll = strict_poll,
	.arm = strict_arm,
	.disarm = strict_disarm,
	.fd = strict_fd,
	.ack = strict_ack,
};

static void
count_handler(struct evd_source *src, void *burst, uint16_t n, void *arg)
{
	(void)src;
	(void)burst;
	if (arg != NULL)
		*(uint64_t *)arg += n;
}

int
strict_source_init(struct strict_source *s, const char *name)
{
	int rc;

	memset(s, 0, sizeof(*s));
	rc = evd_source_init(&s->src, &strict_ops, name, count_handler, NULL);
	if (rc < 0)
		return rc;
	if (pipe2(s->pipe, O_NONBLOCK | O_CLOEXEC) < 0)
		return -errno;
	return 0;
}

void
strict_source_fini(struct strict_source *s)
{
	close(s->pipe[0]);
	close(s->pipe[1]);
}

void
strict_source_add(struct strict_source *s, uint64_t n)
{
	/* An item added while armed raises one notification and disarms
	 * (one-shot, like ibv_req_notify_cq). */
	__atomic_fetch_add(&s->items, n, __ATOMIC_ACQ_REL);
	if (__atomic_exchange_n(&s->armed, 0, __ATOMIC_SEQ_CST))
		notify(s);
}
