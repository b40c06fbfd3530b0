/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * net-ethdev: ethdev Rx queues as evd sources. See evd_ethdev.h.
 *
 * The ops: poll (rte_eth_rx_burst), arm (rte_eth_dev_rx_intr_enable),
 * disarm (rte_eth_dev_rx_intr_disable), fd (a private epoll instance holding
 * the queue's interrupt fd and a kick eventfd), ack (rte_epoll_wait on it,
 * which drains the interrupt fd by its handle type).
 */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <rte_branch_prediction.h>
#include <rte_epoll.h>
#include <rte_ethdev.h>
#include <rte_lcore.h>
#include <rte_log.h>
#include <rte_spinlock.h>

#include <evd_source.h>

#include "evd_ethdev.h"

RTE_LOG_REGISTER(evd_ethdev_logtype, pmd.evd.ethdev, INFO);
#define ETH_LOG(level, fmt, ...) \
	rte_log(RTE_LOG_##level, evd_ethdev_logtype, "EVD_ETHDEV: " fmt "\n", ##__VA_ARGS__)

#define MAX_BURST 64

/* Events from EAL's interrupt thread, handled on the loop's thread. */
#define PENDING_LSC 1u
#define PENDING_RMV 2u
#define PENDING_DESTROY 4u

/*
 * What a port event callback holds. ethdev keeps callbacks of a released
 * port (they cannot be unregistered once the port id is invalid) and runs
 * them for the next port in that slot, so the callback never points at the
 * source itself: closing the source clears token->q, and the token is freed
 * only if the callbacks could be unregistered.
 */
struct cb_token {
	rte_spinlock_t lock;
	struct rxq_src *q;
	struct cb_token *next; /* on the orphan list */
};

/* Tokens ethdev still holds for released ports: kept, and reachable. */
static struct cb_token *orphans;
static rte_spinlock_t orphans_lock = RTE_SPINLOCK_INITIALIZER;

struct rxq_src {
	struct evd_source src;
	struct cb_token *token;
	uint16_t port, queue;
	int inner_epfd;      /* holds the queue's interrupt fd and kick_fd; -1: poll-only */
	int kick_fd;         /* written by port event callbacks */
	bool attached;       /* queue fd attached to inner_epfd */
	int removed;         /* atomic */
	uint32_t pending;    /* atomic: PENDING_* */
	struct rte_epoll_event kick_ev;
	void (*on_port_event)(struct evd_source *, enum rte_eth_event_type, void *);
	void *event_arg;
	struct evd_ethdev_stats st;
};

/* Enable/disable on the queues of one port share the port's interrupt mask
 * in several PMDs (DPDK's l3fwd-power takes a per-port lock for that). */
static rte_spinlock_t port_lock[RTE_MAX_ETHPORTS] = { [0 ... RTE_MAX_ETHPORTS - 1] =
							       RTE_SPINLOCK_INITIALIZER };

/* The queues that are a source: one source a queue (two would be two
 * consumers of one Rx ring, each taking the other's packets unlocked). */
static rte_spinlock_t claim_lock = RTE_SPINLOCK_INITIALIZER;
static uint64_t claimed[RTE_MAX_ETHPORTS][RTE_MAX_QUEUES_PER_PORT / 64];

static bool
claim(uint16_t port, uint16_t queue)
{
	uint64_t bit = 1ull << (queue % 64), *w = &claimed[port][queue / 64];
	bool ok;

	rte_spinlock_lock(&claim_lock);
	ok = !(*w & bit);
	*w |= bit;
	rte_spinlock_unlock(&claim_lock);
	return ok;
}

static void
release(uint16_t port, uint16_t queue)
{
	rte_spinlock_lock(&claim_lock);
	claimed[port][queue / 64] &= ~(1ull << (queue % 64));
	rte_spinlock_unlock(&claim_lock);
}

static const struct evd_source_ops rxq_ops;
static const struct evd_source_ops rxq_poll_only_ops;

static bool
is_rxq(const struct evd_source *s)
{
	return s != NULL && (s->ops == &rxq_ops || s->ops == &rxq_poll_only_ops);
}

/* ---- port events (EAL interrupt thread, or whoever removes the port) ---- */

static void
kick(struct rxq_src *q)
{
	uint64_t one = 1;

	if (q->kick_fd >= 0 && write(q->kick_fd, &one, sizeof(one)) < 0)
		ETH_LOG(ERR, "source %s: kick: %s", q->src.name, strerror(errno));
}

static int
port_event_cb(uint16_t port, enum rte_eth_event_type type, void *arg, void *ret_param)
{
	struct cb_token *t = arg;
	struct rxq_src *q;

	RTE_SET_USED(ret_param);
	rte_spinlock_lock(&t->lock);
	q = t->q;
	if (q != NULL && port == q->port) {
		if (type == RTE_ETH_EVENT_INTR_LSC) {
			__atomic_fetch_or(&q->pending, PENDING_LSC, __ATOMIC_RELEASE);
		} else {
			/* From now on the loop must not touch the port. */
			__atomic_store_n(&q->removed, 1, __ATOMIC_RELEASE);
			__atomic_fetch_or(&q->pending, type == RTE_ETH_EVENT_INTR_RMV ?
					  PENDING_RMV : PENDING_DESTROY, __ATOMIC_RELEASE);
		}
		kick(q);
	}
	rte_spinlock_unlock(&t->lock);
	return 0;
}

static const enum rte_eth_event_type watched[] = {
	RTE_ETH_EVENT_INTR_LSC, RTE_ETH_EVENT_INTR_RMV, RTE_ETH_EVENT_DESTROY,
};

static void
callbacks_on(struct rxq_src *q)
{
	for (size_t i = 0; i < RTE_DIM(watched); i++) {
		int rc = rte_eth_dev_callback_register(q->port, watched[i], port_event_cb, q->token);

		if (rc < 0)
			ETH_LOG(DEBUG, "source %s: port %u event %d callback: %s", q->src.name,
				q->port, watched[i], strerror(-rc));
	}
}

/* Detach the token from the source; free it if ethdev let go of it (a
 * released port's callbacks cannot be unregistered: the token stays). */
static void
callbacks_off(struct rxq_src *q, bool port_gone)
{
	struct cb_token *t = q->token;
	bool all = !port_gone;

	if (t == NULL)
		return;
	rte_spinlock_lock(&t->lock);
	t->q = NULL;
	rte_spinlock_unlock(&t->lock);
	for (size_t i = 0; i < RTE_DIM(watched) && !port_gone; i++)
		if (rte_eth_dev_callback_unregister(q->port, watched[i], port_event_cb, t) < 0)
			all = false;
	if (all) {
		free(t);
	} else {
		rte_spinlock_lock(&orphans_lock);
		t->next = orphans;
		orphans = t;
		rte_spinlock_unlock(&orphans_lock);
	}
	q->token = NULL;
}

/* Loop thread: act on what the callbacks saw. */
static void
handle_pending(struct rxq_src *q)
{
	uint32_t p = __atomic_exchange_n(&q->pending, 0, __ATOMIC_ACQ_REL);

	if (p & PENDING_LSC) {
		EVD_STAT_ADD(q->st.link_events, 1);
		if (q->on_port_event != NULL)
			q->on_port_event(&q->src, RTE_ETH_EVENT_INTR_LSC, q->event_arg);
	}
	if (p & (PENDING_RMV | PENDING_DESTROY)) {
		ETH_LOG(WARNING, "source %s: port %u %s; the queue leaves loop %s", q->src.name,
			q->port, p & PENDING_RMV ? "removed" : "closed",
			q->src.loop != NULL ? evd_loop_name(q->src.loop) : "(none)");
		/* first out of the loop (deferred: we are in a poll; it is not
		 * polled again), then told, with the event ethdev raised */
		if (q->src.loop != NULL)
			evd_loop_remove(q->src.loop, &q->src);
		if (q->on_port_event != NULL && (p & PENDING_RMV))
			q->on_port_event(&q->src, RTE_ETH_EVENT_INTR_RMV, q->event_arg);
		if (q->on_port_event != NULL && (p & PENDING_DESTROY))
			q->on_port_event(&q->src, RTE_ETH_EVENT_DESTROY, q->event_arg);
	}
}

/* ---- the queue's interrupt fd in the source's epoll instance ---------------- */

/*
 * Whether the queue's interrupt fd is in the source's epoll instance: 1 it
 * is, 0 it is not, < 0 the port has none now (stopped: tap and NIC PMDs free
 * the queue's vector at stop). rte_eth_dev_rx_intr_ctl_q() cannot tell:
 * its ADD answers 0 when the queue is already attached to another epoll
 * instance (EAL's -EEXIST), and a PMD drops the attachment when the port
 * stops or makes new interrupt fds when it starts. The probe is an ADD of
 * the fd with no event: EEXIST if it is there (data NULL, which
 * rte_epoll_wait skips, while the probe stands).
 */
static int
queue_fd_attached(const struct rxq_src *q)
{
	struct epoll_event probe = { .events = 0, .data.ptr = NULL };
	int fd = rte_eth_dev_rx_intr_ctl_q_get_fd(q->port, q->queue);

	if (fd < 0)
		return -ENETDOWN;
	if (epoll_ctl(q->inner_epfd, EPOLL_CTL_ADD, fd, &probe) < 0)
		return errno == EEXIST ? 1 : -errno;
	epoll_ctl(q->inner_epfd, EPOLL_CTL_DEL, fd, NULL);
	return 0;
}

/* Attach the queue to the source's epoll instance unless it is there. */
static int
attach_queue(struct rxq_src *q)
{
	int rc = queue_fd_attached(q);

	if (rc != 0)
		return rc < 0 ? rc : 0;
	/* queues of a port may share a vector: one attach at a time */
	rte_spinlock_lock(&port_lock[q->port]);
	rc = rte_eth_dev_rx_intr_ctl_q(q->port, q->queue, q->inner_epfd, RTE_INTR_EVENT_ADD, q);
	if (rc == 0)
		rc = queue_fd_attached(q);
	rte_spinlock_unlock(&port_lock[q->port]);
	if (rc == 0) {
		ETH_LOG(ERR, "port %u Rx queue %u: its interrupt is attached to another epoll "
			"instance (a vector shared with another queue, or the application's "
			"rte_eth_dev_rx_intr_ctl_q)", q->port, q->queue);
		return -EBUSY;
	}
	return rc < 0 ? rc : 0;
}

/*
 * Whether the queue's fd, readable by its content (tap: no enable), holds a
 * packet the polls left there. EAL registers Rx interrupt fds edge-triggered
 * (EPOLLET) in the source's epoll instance, and the ack took the edge: such
 * a packet raises no readiness again, and the loop would sleep to its bound
 * on it. net_tap leaves packets so: its Rx burst reads nothing until its Rx
 * signal's handler has run, on whichever thread took the signal (EAL's
 * interrupt thread, when the loop's thread blocks it or is not the main
 * thread), and the fd wakes the loop as the signal is raised: the loop can
 * poll before that handler runs. The arm then kicks, and the loop polls
 * again at once, until the handler has run.
 */
static bool
queue_fd_readable(const struct rxq_src *q)
{
	struct pollfd p = { .fd = rte_eth_dev_rx_intr_ctl_q_get_fd(q->port, q->queue),
			    .events = POLLIN };

	return p.fd >= 0 && poll(&p, 1, 0) > 0 && (p.revents & POLLIN);
}

/* ---- ops ------------------------------------------------------------------ */

static int
rxq_poll(struct evd_source *src, uint16_t budget)
{
	struct rxq_src *q = (struct rxq_src *)src;
	struct rte_mbuf *pkts[MAX_BURST];
	uint16_t n;

	if (unlikely(__atomic_load_n(&q->pending, __ATOMIC_RELAXED) != 0))
		handle_pending(q);
	/* every poll, not only the one that handles the removal: EAL's
	 * thread sets the flag before the pending bit, so a poll can see the
	 * port gone first; and nothing that polls the source after (the loop
	 * skips it once removing, evd_loop_add refuses it, but its poll op
	 * can be called directly) may read a released port, whose id a new
	 * port may take */
	if (unlikely(__atomic_load_n(&q->removed, __ATOMIC_ACQUIRE)))
		return 0;
	n = rte_eth_rx_burst(q->port, q->queue, pkts, budget > MAX_BURST ? MAX_BURST : budget);
	if (n == 0)
		return 0;
	EVD_STAT_ADD(q->st.packets, n);
	evd_source_deliver(src, pkts, n);
	return n;
}

static int
rxq_arm(struct evd_source *src)
{
	struct rxq_src *q = (struct rxq_src *)src;
	int rc;

	if (__atomic_load_n(&q->removed, __ATOMIC_ACQUIRE))
		return -ENODEV;
	/* a restart since the last arm took the queue's fd out of the source's
	 * epoll instance: the enable would arm an interrupt nobody waits for */
	rc = attach_queue(q);
	if (rc < 0) {
		EVD_STAT_ADD(q->st.intr_errors, 1);
		return rc;
	}
	rte_spinlock_lock(&port_lock[q->port]);
	rc = rte_eth_dev_rx_intr_enable(q->port, q->queue);
	rte_spinlock_unlock(&port_lock[q->port]);
	if (rc == -ENOTSUP) {
		/* the fd is readable by content (tap): always armed, but not
		 * level-triggered for the loop. See queue_fd_readable. */
		if (queue_fd_readable(q))
			kick(q);
		return -ENOTSUP;
	}
	if (rc < 0)
		EVD_STAT_ADD(q->st.intr_errors, 1);
	return rc;
}

static int
rxq_disarm(struct evd_source *src)
{
	struct rxq_src *q = (struct rxq_src *)src;
	int rc;

	if (__atomic_load_n(&q->removed, __ATOMIC_ACQUIRE))
		return 0;
	rte_spinlock_lock(&port_lock[q->port]);
	rc = rte_eth_dev_rx_intr_disable(q->port, q->queue);
	rte_spinlock_unlock(&port_lock[q->port]);
	if (rc == -ENOTSUP)
		return 0;
	if (rc < 0)
		EVD_STAT_ADD(q->st.intr_errors, 1);
	return rc;
}

/* A removed port's source is refused by evd_loop_add (its fd op's error). */
static int
rxq_fd(const struct evd_source *src)
{
	const struct rxq_src *q = (const struct rxq_src *)src;

	if (__atomic_load_n(&q->removed, __ATOMIC_ACQUIRE))
		return -ENODEV;
	return q->inner_epfd;
}

static int
rxq_poll_only_fd(const struct evd_source *src)
{
	const struct rxq_src *q = (const struct rxq_src *)src;

	return __atomic_load_n(&q->removed, __ATOMIC_ACQUIRE) ? -ENODEV : -ENOTSUP;
}

/* One zero-timeout rte_epoll_wait: EAL's callback drains each ready
 * interrupt fd by its handle type; the kick callback drains the kick. */
static int
rxq_ack(struct evd_source *src)
{
	struct rxq_src *q = (struct rxq_src *)src;
	struct rte_epoll_event ev[4];
	int n = rte_epoll_wait(q->inner_epfd, ev, RTE_DIM(ev), 0);

	if (n < 0)
		return -EIO;
	return n == 0 ? -EAGAIN : 0;
}

static void
drain_kick(int fd, void *arg)
{
	uint64_t v;

	RTE_SET_USED(arg);
	if (read(fd, &v, sizeof(v)) < 0 && errno != EAGAIN)
		ETH_LOG(ERR, "kick fd %d: %s", fd, strerror(errno));
}

static void
rxq_close(struct evd_source *src)
{
	struct rxq_src *q = (struct rxq_src *)src;
	bool gone = __atomic_load_n(&q->removed, __ATOMIC_ACQUIRE) ||
		    !rte_eth_dev_is_valid_port(q->port);

	callbacks_off(q, !rte_eth_dev_is_valid_port(q->port));
	/* only an attachment that is the source's: the queue's may be another
	 * epoll instance's, or gone with a restart */
	if (!gone && q->attached && queue_fd_attached(q) == 1)
		rte_eth_dev_rx_intr_ctl_q(q->port, q->queue, q->inner_epfd, RTE_INTR_EVENT_DEL, NULL);
	if (q->kick_fd >= 0) {
		rte_epoll_ctl(q->inner_epfd, EPOLL_CTL_DEL, q->kick_fd, &q->kick_ev);
		close(q->kick_fd);
	}
	if (q->inner_epfd >= 0)
		close(q->inner_epfd);
	release(q->port, q->queue); /* claimed before anything could fail */
	free(q);
}

static const struct evd_source_ops rxq_ops = {
	.kind = "ethdev_rxq",
	.poll = rxq_poll,
	.arm = rxq_arm,
	.disarm = rxq_disarm,
	.fd = rxq_fd,
	.ack = rxq_ack,
	.close = rxq_close,
};

/* No interrupt: the loop bounds its sleeps while this source is registered. */
static const struct evd_source_ops rxq_poll_only_ops = {
	.kind = "ethdev_rxq",
	.poll = rxq_poll,
	.fd = rxq_poll_only_fd,
	.close = rxq_close,
};

/* ---- creation ---------------------------------------------------------------- */

static int
attach_interrupt(struct rxq_src *q)
{
	int rc;

	q->inner_epfd = epoll_create1(EPOLL_CLOEXEC);
	if (q->inner_epfd < 0)
		return -errno;
	q->kick_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (q->kick_fd < 0)
		return -errno;
	q->kick_ev.epdata.event = EPOLLIN;
	q->kick_ev.epdata.cb_fun = drain_kick;
	if (rte_epoll_ctl(q->inner_epfd, EPOLL_CTL_ADD, q->kick_fd, &q->kick_ev) < 0)
		return -EIO;
	/* the answer says why a queue has no interrupt (no handle, no vector);
	 * the check after it, whether it is attached here */
	rc = rte_eth_dev_rx_intr_ctl_q(q->port, q->queue, q->inner_epfd, RTE_INTR_EVENT_ADD, q);
	if (rc == 0)
		rc = attach_queue(q);
	if (rc < 0)
		return rc;
	q->attached = true;
	return 0;
}

int
evd_ethdev_rxq_create(uint16_t port_id, uint16_t queue_id, const char *name,
		      const struct evd_ethdev_conf *conf, evd_handler_t handler, void *arg,
		      struct evd_source **out)
{
	static const struct evd_ethdev_conf defaults;
	const struct evd_ethdev_conf *c = conf ? conf : &defaults;
	struct rte_eth_dev_info info;
	struct rte_eth_rxq_info qinfo;
	char buf[EVD_NAME_MAX];
	struct rxq_src *q;
	int rc;

	if (out == NULL) {
		ETH_LOG(ERR, "%s: out is NULL", __func__);
		return -EINVAL;
	}
	*out = NULL;
	if (handler == NULL) {
		ETH_LOG(ERR, "%s: handler is NULL", __func__);
		return -EINVAL;
	}
	/* EAL counts its lcores in rte_eal_init(): none before it, no ports either */
	if (rte_lcore_count() == 0) {
		ETH_LOG(ERR, "%s: the EAL is not initialised (call rte_eal_init() first)", __func__);
		return -EPERM;
	}
	if (!rte_eth_dev_is_valid_port(port_id)) {
		ETH_LOG(ERR, "%s: port_id %u: no such port", __func__, port_id);
		return -ENODEV;
	}
	rc = rte_eth_dev_info_get(port_id, &info);
	if (rc < 0) {
		ETH_LOG(ERR, "%s: port_id %u: rte_eth_dev_info_get: %s", __func__, port_id,
			strerror(-rc));
		return rc;
	}
	if (queue_id >= info.nb_rx_queues || queue_id >= RTE_MAX_QUEUES_PER_PORT) {
		ETH_LOG(ERR, "%s: queue_id %u: port %u has %u Rx queues", __func__, queue_id,
			port_id, info.nb_rx_queues);
		return -EINVAL;
	}
	/* set up? where ethdev can tell: PMDs without rxq_info_get (net_ring)
	 * answer -ENOTSUP before the question is asked */
	if (rte_eth_rx_queue_info_get(port_id, queue_id, &qinfo) == -EINVAL) {
		ETH_LOG(ERR, "%s: queue_id %u: port %u's Rx queue is not set up "
			"(rte_eth_rx_queue_setup), or is a hairpin queue", __func__, queue_id, port_id);
		return -EINVAL;
	}
	q = calloc(1, sizeof(*q));
	if (q == NULL) {
		ETH_LOG(ERR, "%s: port %u Rx queue %u: out of memory", __func__, port_id, queue_id);
		return -ENOMEM;
	}
	if (name == NULL) {
		snprintf(buf, sizeof(buf), "port%u.rxq%u", port_id, queue_id);
		name = buf;
	}
	/* the name and the handler checked first: the lines below print the
	 * name; poll-only, the ops change below */
	rc = evd_source_init(&q->src, &rxq_ops, name, handler, arg);
	if (rc < 0) {
		free(q);
		return rc;
	}
	if (!claim(port_id, queue_id)) {
		ETH_LOG(ERR, "port %u Rx queue %u is a source already: one source a queue",
			port_id, queue_id);
		free(q);
		return -EBUSY;
	}
	q->port = port_id;
	q->queue = queue_id;
	q->inner_epfd = -1;
	q->kick_fd = -1;
	q->on_port_event = c->on_port_event;
	q->event_arg = c->event_arg;
	rc = c->no_interrupt ? -ENOTSUP : attach_interrupt(q);
	if (rc < 0) {
		/* No Rx interrupt here: poll-only, bounded sleeps. -EPERM with
		 * no fd for the queue is ethdev's "Rx Intr vector unset": the
		 * port has an interrupt handle, and PMDs set the queues' vectors
		 * up at start, with intr_conf.rxq (rte_eth_dev_conf_get is
		 * experimental in 22.11: which of the two is not asked). With
		 * an fd, -EPERM is EAL's answer to a failed epoll_ctl or a
		 * vector past the port's event fds: the message below. */
		if (rc == -EPERM && rte_eth_dev_rx_intr_ctl_q_get_fd(port_id, queue_id) < 0)
			ETH_LOG(WARNING, "%s: port %u has no Rx interrupt vectors: configured without "
				"intr_conf.rxq = 1, or not started yet (PMDs set them up at "
				"rte_eth_dev_start: make the source after it): poll-only", name, port_id);
		else if (!c->no_interrupt)
			ETH_LOG(INFO, "%s: no Rx interrupt (%s: is intr_conf.rxq set, and has PMD %s "
				"Rx interrupts?): poll-only", name, strerror(-rc), info.driver_name);
		if (q->kick_fd >= 0)
			close(q->kick_fd);
		if (q->inner_epfd >= 0)
			close(q->inner_epfd);
		q->kick_fd = q->inner_epfd = -1;
		q->src.ops = &rxq_poll_only_ops;
	}
	q->token = calloc(1, sizeof(*q->token));
	if (q->token == NULL) {
		ETH_LOG(ERR, "%s: %s: out of memory", __func__, q->src.name);
		rxq_close(&q->src);
		return -ENOMEM;
	}
	rte_spinlock_init(&q->token->lock);
	q->token->q = q;
	callbacks_on(q);
	*out = &q->src;
	return 0;
}

/* Whether @p src is a queue source; logs which argument it is not, for @p fn. */
static bool
check_rxq(const struct evd_source *src, const char *fn)
{
	if (src == NULL)
		ETH_LOG(ERR, "%s: src is NULL", fn);
	else if (!is_rxq(src))
		ETH_LOG(ERR, "%s: src %s is not an ethdev queue source", fn, src->name);
	else
		return true;
	return false;
}

bool
evd_ethdev_rxq_removed(const struct evd_source *src)
{
	return check_rxq(src, __func__) &&
	       __atomic_load_n(&((const struct rxq_src *)src)->removed, __ATOMIC_ACQUIRE);
}

bool
evd_ethdev_rxq_has_interrupt(const struct evd_source *src)
{
	return check_rxq(src, __func__) && src->ops == &rxq_ops;
}

#define LOAD(x) __atomic_load_n(&(x), __ATOMIC_RELAXED)

int
evd_ethdev_rxq_stats_get(const struct evd_source *src, struct evd_ethdev_stats *st)
{
	const struct rxq_src *q = (const struct rxq_src *)src;

	if (!check_rxq(src, __func__))
		return -EINVAL;
	if (st == NULL) {
		ETH_LOG(ERR, "%s: st is NULL", __func__);
		return -EINVAL;
	}
	st->packets = LOAD(q->st.packets);
	st->link_events = LOAD(q->st.link_events);
	st->intr_errors = LOAD(q->st.intr_errors);
	return 0;
}
