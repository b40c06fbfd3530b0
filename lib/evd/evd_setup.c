/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A loop's creation and destruction: its configuration checked, its
 * memory, clock, policy, epoll set, eventfd and bell; and its names.
 */
#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "evd_private.h"

int
evd_loop_create(const struct evd_loop_conf *conf, struct evd_loop **out)
{
	static const struct evd_loop_conf defaults;
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = WAKE_KEY };
	struct epoll_event bev = { .events = EPOLLIN, .data.u64 = BELL_KEY };
	struct evd__mem mem;
	struct evd_loop *loop;
	int rc;

	if (out == NULL)
		return EVD_ARG_ERR(-EINVAL, "evd_loop_create: out is NULL");
	*out = NULL;
	if (conf == NULL)
		conf = &defaults;
	if (evd__name_check("evd_loop_create", conf->name) < 0)
		return -EINVAL;
	if (conf->burst > EVD__MAX_BURST)
		return EVD_ARG_ERR(-EINVAL, "evd_loop_create: burst %u exceeds %d", conf->burst,
				   EVD__MAX_BURST);
	if (conf->max_sources > EVD_MAX_SOURCES)
		return EVD_ARG_ERR(-EINVAL, "evd_loop_create: max_sources %u exceeds %u",
				   conf->max_sources, EVD_MAX_SOURCES);
	if (conf->clock != NULL && conf->clock->now_ns == NULL)
		return EVD_ARG_ERR(-EINVAL, "evd_loop_create: clock->now_ns is NULL");
	mem.dpdk = evd__eal_up();
	rc = evd__socket_resolve(conf->numa_socket, &mem.socket);
	if (rc < 0)
		return rc == -ENODEV
			       ? EVD_ARG_ERR(rc, "evd_loop_create: numa_socket EVD_SOCKET(%d): no "
					     "such socket", conf->numa_socket - 1)
			       : EVD_ARG_ERR(rc, "evd_loop_create: numa_socket %d: neither "
					     "EVD_SOCKET(n) nor EVD_SOCKET_ANY", conf->numa_socket);

	loop = evd__zalloc(&mem, sizeof(*loop), 0);
	if (loop == NULL)
		return EVD_ARG_ERR(-ENOMEM, "evd_loop_create: no memory (socket %d)", mem.socket);
	loop->mem = mem;
	loop->epfd = -1;
	loop->wake_fd = -1;
	loop->free_key = UINT32_MAX;
	snprintf(loop->name, sizeof(loop->name), "%s", conf->name ? conf->name : "evd");
	if (conf->clock != NULL) {
		loop->clock = *conf->clock;
	} else {
		evd__clock_default(loop);
	}
	loop->max_sleep_ns = 1000ull * (conf->max_sleep_us ? conf->max_sleep_us
							     : EVD_DEFAULT_MAX_SLEEP_US);
	loop->max_sleep_given = conf->max_sleep_us != 0;
	loop->poll_only_bound_ns = 1000ull * (conf->poll_only_bound_us ?
					      conf->poll_only_bound_us :
					      EVD_DEFAULT_POLL_ONLY_BOUND_US);
	loop->burst = conf->burst ? conf->burst : 32;
	loop->max_src = conf->max_sources ? conf->max_sources : EVD_DEFAULT_MAX_SOURCES;
	loop->on_error = conf->on_error;
	loop->on_error_arg = conf->on_error_arg;
	loop->on_idle = conf->on_idle;
	loop->on_idle_arg = conf->on_idle_arg;

	rc = evd__policy_create(conf->policy ? conf->policy : "adaptive", &loop->mem, &loop->policy);
	if (rc < 0)
		goto fail;

	loop->epfd = epoll_create1(EPOLL_CLOEXEC);
	loop->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	loop->bell = evd__bell_get();
	if (loop->epfd < 0 || loop->wake_fd < 0 || loop->bell == NULL ||
	    epoll_ctl(loop->epfd, EPOLL_CTL_ADD, loop->wake_fd, &ev) < 0 ||
	    epoll_ctl(loop->epfd, EPOLL_CTL_ADD, evd__bell_fd(loop->bell), &bev) < 0) {
		rc = -errno;
		EVD_LOG(ERR, "evd_loop_create %s: epoll set or eventfd: %s", loop->name, strerror(-rc));
		goto fail;
	}
	loop->mode = EVD_MODE_POLL;
	loop->mode_mark_ns = evd__now(loop);
	loop->last_event_ns = loop->mode_mark_ns;
	loop->magic = EVD__LOOP_MAGIC;
	evd__registry_add(loop);
	EVD_LOG(DEBUG, "loop %s (telemetry id %u) created, policy %s, clock %s", loop->name,
		loop->id, loop->policy.ops->name, evd__clock_name(loop));
	*out = loop;
	return 0;
fail:
	if (loop->policy.ops != NULL)
		evd__policy_destroy(&loop->policy);
	if (loop->epfd >= 0)
		close(loop->epfd);
	if (loop->wake_fd >= 0)
		close(loop->wake_fd);
	if (loop->bell != NULL)
		evd__bell_put(loop->bell);
	evd__free(&mem, loop);
	return rc;
}

int
evd_loop_destroy(struct evd_loop *loop)
{
	struct evd__mem mem;
	uint32_t n_src;
	int held;

	if (!evd__live_loop(loop, "evd_loop_destroy"))
		return -EINVAL;
	held = evd__hold_take(loop, EVD__CONTROL);
	if (held < 0)
		return EVD_ARG_ERR(held, "evd_loop_destroy %s: %s", loop->name,
				   evd__hold_refused(held, "the loop is running"));
	n_src = loop->n_src;
	if (n_src == 0) {
		/* an evd_loop_stop() or evd_loop_call() on another thread may
		 * still be ringing the doorbell: let it finish */
		while (__atomic_load_n(&loop->wakers, __ATOMIC_ACQUIRE) != 0)
			sched_yield();
		/* the calls still queued run here, so that what they hold is
		 * released; those they queue too */
		while (__atomic_load_n(&loop->calls, __ATOMIC_ACQUIRE) != NULL)
			evd__run_calls(loop);
		n_src = loop->n_src; /* a call may have added one */
	}
	if (n_src > 0) {
		evd__hold_release(loop);
		return EVD_ARG_ERR(-EBUSY, "evd_loop_destroy %s: %u sources still on it", loop->name,
				   n_src);
	}
	/* out of telemetry's reach first: a command that finds it must find it whole */
	evd__registry_remove(loop);
	__atomic_store_n(&loop->magic, 0, __ATOMIC_SEQ_CST);
	/* a stop that counted itself before it saw the magic go (seq_cst:
	 * the store above must not pass this load, nor the stop's count its look) */
	while (__atomic_load_n(&loop->wakers, __ATOMIC_SEQ_CST) != 0)
		sched_yield();
	evd__timers_free(&loop->timers);
	evd__policy_destroy(&loop->policy);
	close(loop->epfd);
	close(loop->wake_fd);
	evd__bell_put(loop->bell);
	mem = loop->mem;
	evd__free(&mem, loop->src);
	evd__free(&mem, loop->act);
	evd__free(&mem, loop->woke);
	evd__free(&mem, loop->fresh);
	evd__free(&mem, loop->dev);
	evd__free(&mem, loop->keys);
	evd__free(&mem, loop->fd_key);
	free(loop->trace);
	evd__free(&mem, loop);
	evd__control_holds--; /* the hold ends with the loop, never released */
	return 0;
}

const char *
evd_loop_name(const struct evd_loop *loop)
{
	return evd__live_loop(loop, "evd_loop_name") ? loop->name : NULL;
}

const char *
evd_loop_policy_name(const struct evd_loop *loop)
{
	return evd__live_loop(loop, "evd_loop_policy_name") ? loop->policy.ops->name : NULL;
}

uint64_t
evd_loop_now_ns(const struct evd_loop *loop)
{
	return evd__now(loop);
}

