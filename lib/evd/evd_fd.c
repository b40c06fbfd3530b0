/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Any pollable fd as a source, with level semantics. It needs no arm and no
 * ack: the kernel reports the fd's content, so it cannot lose a wakeup; the
 * handler consumes what it wants and is called again while the fd stays ready.
 */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>

#include "evd_private.h"

struct evd_fd_source {
	struct evd_source src;
	int fd;
	uint32_t revents;
};

/* The fd source whose handler this thread runs: evd_fd_revents() answers
 * for it alone, and so never reads a loop, which another thread may be
 * destroying. */
static __thread const struct evd_fd_source *fd_in_handler;

static int
fd_poll(struct evd_source *s, uint16_t budget)
{
	struct evd_fd_source *f = (struct evd_fd_source *)s;
	/* epoll and poll share their event bit values on Linux. */
	struct pollfd p = { .fd = f->fd, .events = (short)s->epoll_events };
	const struct evd_fd_source *prev;
	int rc;

	RTE_SET_USED(budget);
	rc = poll(&p, 1, 0);
	if (rc < 0)
		return errno == EINTR ? 0 : -errno;
	if (rc == 0 || p.revents == 0)
		return 0;
	if (p.revents & POLLNVAL)
		return -EBADF;
	f->revents = (uint32_t)p.revents;
	prev = fd_in_handler;
	fd_in_handler = f;
	evd_source_deliver(s, NULL, 1);
	fd_in_handler = prev;
	return 1;
}

static int
fd_fd(const struct evd_source *s)
{
	return ((const struct evd_fd_source *)s)->fd;
}

static void
fd_close(struct evd_source *s)
{
	free(s);
}

static const struct evd_source_ops fd_ops = {
	.kind = "fd",
	.poll = fd_poll,
	.fd = fd_fd,
	.close = fd_close,
};

int
evd_fd_create(const char *name, int fd, uint32_t events, evd_handler_t handler, void *arg,
	      struct evd_source **out)
{
	struct evd_fd_source *f;
	int rc;

	if (evd__name_check("evd_fd_create", name) < 0)
		return -EINVAL;
	if (out == NULL)
		return EVD_ARG_ERR(-EINVAL, "evd_fd_create %s: out is NULL", name ? name : "");
	*out = NULL;
	if (fd < 0)
		return EVD_ARG_ERR(-EINVAL, "evd_fd_create %s: fd %d", name ? name : "", fd);
	if (handler == NULL)
		return EVD_ARG_ERR(-EINVAL, "evd_fd_create %s: handler is NULL", name ? name : "");
	if (events & (EPOLLET | EPOLLONESHOT | EPOLLEXCLUSIVE)) {
		EVD_LOG(ERR, "fd source %s: edge/one-shot/exclusive flags not supported",
			name ? name : "");
		return -EINVAL;
	}
	/* a mask of flags alone (EPOLLWAKEUP) watches nothing: its handler never ran */
	if (events != 0 && !(events & (EPOLLIN | EPOLLPRI | EPOLLOUT | EPOLLRDHUP | EPOLLRDNORM |
					 EPOLLRDBAND | EPOLLWRNORM | EPOLLWRBAND | EPOLLMSG)))
		return EVD_ARG_ERR(-EINVAL, "evd_fd_create %s: events 0x%x name no event to watch",
				   name ? name : "", events);
	f = calloc(1, sizeof(*f));
	if (f == NULL)
		return EVD_ARG_ERR(-ENOMEM, "evd_fd_create %s: no memory", name ? name : "");
	rc = evd_source_init(&f->src, &fd_ops, name, handler, arg);
	if (rc < 0) {
		free(f);
		return rc;
	}
	f->fd = fd;
	f->src.epoll_events = events ? events : EPOLLIN;
	*out = &f->src;
	return 0;
}

uint32_t
evd_fd_revents(const struct evd_source *s)
{
	if (!evd__live_source(s, "evd_fd_revents"))
		return 0;
	if (s->ops != &fd_ops) {
		EVD_LOG(ERR, "evd_fd_revents %s: not an fd source", s->name);
		return 0;
	}
	/* what the last poll saw, meaningful in the handler only: elsewhere, on
	 * the loop's thread or another, a stale value would pass for a fresh one */
	if ((const struct evd_fd_source *)s != fd_in_handler) {
		EVD_LOG(ERR, "evd_fd_revents %s: not in its handler", s->name);
		return 0;
	}
	return ((const struct evd_fd_source *)s)->revents;
}
