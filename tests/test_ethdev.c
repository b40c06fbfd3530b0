/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * net-ethdev on ports this machine can make by itself:
 * - net_tap, packets injected from the kernel side (AF_PACKET on the tap
 *   interface): delivered, and the loop sleeps between them;
 * - a net_ring port (no Rx interrupt: poll-only) beside the tap: a packet
 *   put in its ring while the loop sleeps is found within the poll-only
 *   bound, although the loop's own bound is 10 s;
 * - a vhost-user port (net_vhost, the host side) whose queue joins the loop
 *   before any guest connects; a virtio-user guest in this process comes,
 *   sends, goes and comes back while the loop sleeps with a 10 s bound:
 *   each link change wakes the loop and reaches on_port_event on its thread
 *   (RTE_ETH_EVENT_INTR_LSC, counted), and each packet wakes it through the
 *   Rx interrupt of the guest connected now (no sleep timeout, no lost
 *   wakeup). net_tap raises no LSC event (it only updates its link status),
 *   so the tap cannot test this;
 * - the tap's queue attached to the application's own epoll instance first:
 *   the source is poll-only, and its destroy leaves that attachment alone;
 * - the tap port stopped and started again under a source: packets sent
 *   after the restart still wake the sleeping loop (no sleep timeout);
 * - a source made while the tap port is stopped: poll-only, and the log
 *   says the port is not started (its vectors come at start);
 * - hot removal of the tap port while its queue is armed and the loop
 *   sleeps: the source is told, leaves the loop, no crash, no hang, and the
 *   loop goes on serving its other source;
 * - bad input to each function, before and after rte_eal_init: an errno and
 *   exactly one log line of the driver's naming the argument.
 * Needs root and /dev/net/tun; exits 77 (skipped) without them.
 */
#include <arpa/inet.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/if_packet.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <pthread.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <rte_bus_vdev.h>
#include <rte_eal.h>
#include <rte_eth_ring.h>
#include <rte_ethdev.h>
#include <rte_mbuf.h>
#include <rte_ring.h>

#include <evd.h>
#include <evd_ethdev.h>
#include <evd_source.h>

#include "evd_test.h"

#define OUR_ETHERTYPE 0x88B6

static char ifname[IFNAMSIZ];
static char runtime_dir[PATH_MAX];

/* EAL leaves its (empty) runtime directory behind; runs after EAL's own
 * exit handlers since it is registered before rte_eal_init. */
static void
remove_runtime_dir(void)
{
	if (runtime_dir[0] != '\0')
		rmdir(runtime_dir);
}
static struct rte_mempool *pool;

struct counter {
	uint64_t ours, foreign;
};

static void
on_pkts(struct evd_source *src, void *burst, uint16_t n, void *arg)
{
	struct counter *c = arg;
	struct rte_mbuf **m = burst;

	(void)src;
	for (uint16_t i = 0; i < n; i++) {
		const struct rte_ether_hdr *eh = rte_pktmbuf_mtod(m[i], const struct rte_ether_hdr *);

		if (rte_pktmbuf_data_len(m[i]) >= sizeof(*eh) &&
		    eh->ether_type == rte_cpu_to_be_16(OUR_ETHERTYPE))
			c->ours++;
		else
			c->foreign++;
		rte_pktmbuf_free(m[i]);
	}
}

static int
port_start(uint16_t port, bool intr, bool lsc)
{
	struct rte_eth_conf conf = { .intr_conf = { .rxq = intr, .lsc = lsc } };
	int rc = rte_eth_dev_configure(port, 1, 1, &conf);

	if (rc == 0)
		rc = rte_eth_rx_queue_setup(port, 0, 512, SOCKET_ID_ANY, NULL, pool);
	if (rc == 0)
		rc = rte_eth_tx_queue_setup(port, 0, 512, SOCKET_ID_ANY, NULL);
	if (rc == 0)
		rc = rte_eth_dev_start(port);
	return rc;
}

/* The kernel side of the tap: up, no IPv6 chatter, an AF_PACKET socket. */
static int
kernel_side(void)
{
	struct ifreq ifr = { 0 };
	struct sockaddr_ll sll = { .sll_family = AF_PACKET };
	char path[128];
	int fd, s = socket(AF_INET, SOCK_DGRAM, 0);

	snprintf(path, sizeof(path), "/proc/sys/net/ipv6/conf/%s/disable_ipv6", ifname);
	fd = open(path, O_WRONLY);
	if (fd >= 0) {
		CHECK(write(fd, "1", 1) == 1);
		close(fd);
	}
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", ifname);
	CHECK(ioctl(s, SIOCGIFFLAGS, &ifr) == 0);
	ifr.ifr_flags |= IFF_UP;
	CHECK(ioctl(s, SIOCSIFFLAGS, &ifr) == 0);
	close(s);
	fd = socket(AF_PACKET, SOCK_RAW, htons(OUR_ETHERTYPE));
	CHECK(fd >= 0);
	sll.sll_ifindex = (int)if_nametoindex(ifname);
	sll.sll_protocol = htons(OUR_ETHERTYPE);
	CHECK(sll.sll_ifindex > 0);
	CHECK(bind(fd, (struct sockaddr *)&sll, sizeof(sll)) == 0);
	return fd;
}

/* After the port's restart: the kernel side is up and running again (the
 * PMD takes the interface down at stop; its carrier follows the start), and
 * the ENETDOWN the stop left on the AF_PACKET socket is cleared. */
static void
kernel_side_running(int afp)
{
	struct ifreq ifr = { 0 };
	int s = socket(AF_INET, SOCK_DGRAM, 0), err;
	socklen_t len = sizeof(err);

	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", ifname);
	for (;;) {
		CHECK(ioctl(s, SIOCGIFFLAGS, &ifr) == 0);
		if ((ifr.ifr_flags & (IFF_UP | IFF_RUNNING)) == (IFF_UP | IFF_RUNNING))
			break;
		test_sleep_us(1000);
	}
	close(s);
	CHECK(getsockopt(afp, SOL_SOCKET, SO_ERROR, &err, &len) == 0);
}

static void
inject(int fd)
{
	unsigned char frame[64] = { 0 };
	struct ether_header *eh = (struct ether_header *)frame;

	memset(eh->ether_dhost, 0xff, ETH_ALEN);
	eh->ether_shost[0] = 0x02;
	eh->ether_type = htons(OUR_ETHERTYPE);
	CHECK(send(fd, frame, sizeof(frame), 0) == (ssize_t)sizeof(frame));
}

/* asleep, and by now in epoll_wait */
static void
wait_asleep(struct evd_loop *loop)
{
	test_wait_asleep(loop, 500);
	test_sleep_us(3000);
}

struct injector {
	struct evd_loop *loop;
	int fd, count;
};

static void *
inject_while_asleep(void *arg)
{
	struct injector *in = arg;

	for (int i = 0; i < in->count; i++) {
		wait_asleep(in->loop);
		inject(in->fd);
	}
	return NULL;
}

static void
test_tap(uint16_t port, int afp)
{
	struct evd_loop_conf conf = { .name = "tap", .policy = "intr", .max_sleep_us = 5000000 };
	struct evd_loop *loop;
	struct evd_loop_stats st;
	struct evd_source *src;
	struct counter c = { 0 };
	struct injector in;
	pthread_t th;

	CHECK_EQ(evd_loop_create(&conf, &loop), 0);
	CHECK_EQ(evd_ethdev_rxq_create(port, 0, "tap", NULL, on_pkts, &c, &src), 0);
	CHECK(evd_ethdev_rxq_has_interrupt(src));
	CHECK_EQ(evd_loop_add(loop, src), 0);
	in = (struct injector){ loop, afp, 20 };
	CHECK_EQ(pthread_create(&th, NULL, inject_while_asleep, &in), 0);
	while (c.ours < 20)
		CHECK(evd_loop_step(loop) >= 0);
	pthread_join(th, NULL);
	CHECK_EQ(evd_loop_stats_get(loop, &st), 0);
	printf("tap: %" PRIu64 " ours (%" PRIu64 " from the kernel), sleeps %" PRIu64 " wakeups %" PRIu64
	       " timeouts %" PRIu64 " lost %" PRIu64 "\n", c.ours, c.foreign, st.sleeps, st.wakeups,
	       st.sleep_timeouts, st.lost_wakeups);
	CHECK_EQ(c.ours, 20);
	CHECK(st.sleeps >= 20);
	CHECK(st.wakeups >= 20);
	CHECK_EQ(st.sleep_timeouts, 0);
	CHECK_EQ(st.lost_wakeups, 0);
	CHECK_EQ(evd_loop_remove(loop, src), 0);
	CHECK_EQ(evd_source_destroy(src), 0);
	CHECK_EQ(evd_loop_destroy(loop), 0);
}

/*
 * A port stopped and started again (a reconfiguration) while its queue is a
 * source: the PMD drops the queue's interrupt registration at stop (tap:
 * rte_intr_free_epoll_fd; vhost and NIC PMDs make new interrupt fds at
 * start). Each packet sent after the restart, while the loop sleeps with a
 * 10 s bound, must still wake it: no sleep ends at its bound.
 */
static void
test_restart(uint16_t port, int afp)
{
	struct evd_loop_conf conf = { .name = "restart", .policy = "intr", .max_sleep_us = 10000000 };
	struct evd_loop *loop;
	struct evd_loop_stats st;
	struct evd_source *src;
	struct counter c = { 0 };
	struct injector in;
	sigset_t sigs;
	pthread_t th;

	CHECK_EQ(evd_loop_create(&conf, &loop), 0);
	CHECK_EQ(evd_ethdev_rxq_create(port, 0, "tap", NULL, on_pkts, &c, &src), 0);
	CHECK(evd_ethdev_rxq_has_interrupt(src));
	CHECK_EQ(evd_loop_add(loop, src), 0);
	/* no thread polls the port meanwhile: this one steps the loop */
	CHECK_EQ(rte_eth_dev_stop(port), 0);
	CHECK_EQ(rte_eth_dev_start(port), 0);
	kernel_side_running(afp);
	in = (struct injector){ loop, afp, 3 };
	CHECK_EQ(pthread_create(&th, NULL, inject_while_asleep, &in), 0);
	/* net_tap signals each packet (its Rx trigger: F_SETSIG, a real-time
	 * signal to the process): taken by another thread here (EAL's
	 * interrupt thread), not by the loop's thread, whose wait it would end
	 * with EINTR whatever the loop waits on (as in a process whose lcores
	 * block signals, or whose loop is not on the main thread). Its Rx
	 * burst reads nothing until that thread has run the signal's handler:
	 * the fd can wake the loop before, and the source must not let the
	 * loop sleep on the packet then (under load, 1 run in 3 here) */
	sigemptyset(&sigs);
	for (int sig = SIGRTMIN + 1; sig < SIGRTMAX; sig++)
		sigaddset(&sigs, sig);
	CHECK_EQ(pthread_sigmask(SIG_BLOCK, &sigs, NULL), 0);
	while (c.ours < 3)
		CHECK(evd_loop_step(loop) >= 0);
	pthread_join(th, NULL);
	CHECK_EQ(pthread_sigmask(SIG_UNBLOCK, &sigs, NULL), 0);
	CHECK_EQ(evd_loop_stats_get(loop, &st), 0);
	printf("restart: %" PRIu64 " packets, sleeps %" PRIu64 " timeouts %" PRIu64 " lost %" PRIu64
	       " errors %" PRIu64 "\n", c.ours, st.sleeps, st.sleep_timeouts, st.lost_wakeups, st.errors);
	CHECK_EQ(st.sleep_timeouts, 0);
	CHECK_EQ(evd_loop_remove(loop, src), 0);
	CHECK_EQ(evd_source_destroy(src), 0);
	CHECK_EQ(evd_loop_destroy(loop), 0);
}

/*
 * A queue whose interrupt is attached to another epoll instance (here the
 * application's own rte_eth_dev_rx_intr_ctl_q, as a program moving from
 * l3fwd-power's loop does; on NICs with fewer vectors than queues, another
 * queue's source on the shared vector): ethdev answers the source's attach
 * with 0 (EAL's -EEXIST). The source must not believe it has an interrupt
 * (it would sleep on an fd that never fires: poll-only, bounded sleeps), and
 * destroying it must not take the other instance's attachment away.
 */
static void
test_attached_elsewhere(uint16_t port)
{
	struct epoll_event probe = { 0 };
	struct evd_source *src;
	struct counter c = { 0 };
	int app_ep = epoll_create1(EPOLL_CLOEXEC), fd;

	CHECK(app_ep >= 0);
	CHECK_EQ(rte_eth_dev_rx_intr_ctl_q(port, 0, app_ep, RTE_INTR_EVENT_ADD, NULL), 0);
	CHECK_EQ(evd_ethdev_rxq_create(port, 0, "tap", NULL, on_pkts, &c, &src), 0);
	CHECK(!evd_ethdev_rxq_has_interrupt(src));
	CHECK_EQ(evd_source_destroy(src), 0);
	/* the application's attachment is still there */
	fd = rte_eth_dev_rx_intr_ctl_q_get_fd(port, 0);
	CHECK(fd >= 0);
	CHECK_EQ(epoll_ctl(app_ep, EPOLL_CTL_ADD, fd, &probe), -1);
	CHECK_EQ(errno, EEXIST);
	CHECK_EQ(rte_eth_dev_rx_intr_ctl_q(port, 0, app_ep, RTE_INTR_EVENT_DEL, NULL), 0);
	close(app_ep);
	/* and a source made now has the interrupt */
	CHECK_EQ(evd_ethdev_rxq_create(port, 0, "tap", NULL, on_pkts, &c, &src), 0);
	CHECK(evd_ethdev_rxq_has_interrupt(src));
	CHECK_EQ(evd_source_destroy(src), 0);
}

/*
 * A source made on a port that is not started: net_tap (as vhost and NIC
 * PMDs) sets its queues' interrupt vectors up at rte_eth_dev_start, and
 * ethdev answers -EPERM ("Rx Intr vector unset") before. The source is
 * poll-only, and the log says why, naming the start, not EPERM's
 * "Operation not permitted".
 */
static void
test_before_start(uint16_t port, int afp)
{
	struct evd_source *src;
	struct counter c = { 0 };
	char *buf = NULL;
	size_t len = 0;
	FILE *log = open_memstream(&buf, &len);
	int rc;

	CHECK(log != NULL);
	CHECK_EQ(rte_eth_dev_stop(port), 0);
	CHECK_EQ(rte_openlog_stream(log), 0);
	rc = evd_ethdev_rxq_create(port, 0, "early", NULL, on_pkts, &c, &src);
	rte_openlog_stream(NULL);
	fclose(log);
	CHECK_EQ(rc, 0);
	printf("before start: %s", buf);
	CHECK(!evd_ethdev_rxq_has_interrupt(src));
	CHECK(strstr(buf, "early: port") != NULL && strstr(buf, "not started yet") != NULL);
	free(buf);
	CHECK_EQ(evd_source_destroy(src), 0);
	CHECK_EQ(rte_eth_dev_start(port), 0);
	kernel_side_running(afp);
	/* made after the start: the interrupt */
	CHECK_EQ(evd_ethdev_rxq_create(port, 0, "late", NULL, on_pkts, &c, &src), 0);
	CHECK(evd_ethdev_rxq_has_interrupt(src));
	CHECK_EQ(evd_source_destroy(src), 0);
}

/* Each bad input gets exactly one line of the driver's own (another
 * library's are not counted), which names the argument. */
#define DRIVER_LOGGED(call, want_rc, want_log) CHECK_LOGGED(call, want_rc, "EVD_ETHDEV: ", want_log)

/* Before rte_eal_init there is no port: a clear -EPERM, not a crash. */
static void
test_before_eal(void)
{
	struct evd_source *src = (void *)1;

	DRIVER_LOGGED(evd_ethdev_rxq_create(0, 0, "early", NULL, on_pkts, NULL, &src), -EPERM,
		     "the EAL is not initialised");
	CHECK(src == NULL);
}

/* Each bad argument: its errno and one log line naming it. A port that does
 * not exist is -ENODEV, as ethdev answers. */
static void
test_bad_input(uint16_t ring_port)
{
	struct evd_ethdev_stats st;
	struct evd_source *src = (void *)1, *ring;
	char want[64];
	uint16_t unused = 0;

	DRIVER_LOGGED(evd_ethdev_rxq_create(ring_port, 0, "x", NULL, on_pkts, NULL, NULL), -EINVAL,
		     "out is NULL");
	DRIVER_LOGGED(evd_ethdev_rxq_create(ring_port, 0, "x", NULL, NULL, NULL, &src), -EINVAL,
		     "handler is NULL");
	CHECK(src == NULL);
	snprintf(want, sizeof(want), "port_id %u: no such port", RTE_MAX_ETHPORTS);
	DRIVER_LOGGED(evd_ethdev_rxq_create(RTE_MAX_ETHPORTS, 0, "x", NULL, on_pkts, NULL, &src),
		     -ENODEV, want);
	while (rte_eth_dev_is_valid_port(unused))
		unused++;
	snprintf(want, sizeof(want), "port_id %u: no such port", unused);
	DRIVER_LOGGED(evd_ethdev_rxq_create(unused, 0, "x", NULL, on_pkts, NULL, &src), -ENODEV,
		     want);
	DRIVER_LOGGED(evd_ethdev_rxq_create(ring_port, 1, "x", NULL, on_pkts, NULL, &src), -EINVAL,
		     "queue_id 1:");
	DRIVER_LOGGED(evd_ethdev_rxq_create(ring_port, UINT16_MAX, "x", NULL, on_pkts, NULL, &src),
		     -EINVAL, "queue_id 65535:");
	CHECK(src == NULL);
	/* a name the library refuses: its line alone (lib.evd's), before the
	 * driver prints the name in a line of its own (net_ring has no Rx
	 * interrupt: "poll-only") */
	CHECK_LOGGED(evd_ethdev_rxq_create(ring_port, 0, "nl\nx", NULL, on_pkts, NULL, &src),
		     -EINVAL, "EVD", "control character");
	CHECK(src == NULL);

	DRIVER_LOGGED(evd_ethdev_rxq_stats_get(NULL, &st), -EINVAL, "src is NULL");
	DRIVER_LOGGED(evd_ethdev_rxq_removed(NULL), false, "src is NULL");
	DRIVER_LOGGED(evd_ethdev_rxq_has_interrupt(NULL), false, "src is NULL");
	CHECK_EQ(evd_ethdev_rxq_create(ring_port, 0, "ok", NULL, on_pkts, NULL, &src), 0);
	DRIVER_LOGGED(evd_ethdev_rxq_stats_get(src, NULL), -EINVAL, "st is NULL");
	CHECK_EQ(evd_source_destroy(src), 0);
	/* a source of another kind */
	CHECK_EQ(evd_ring_create("notrxq", 16, test_nop, NULL, &ring), 0);
	DRIVER_LOGGED(evd_ethdev_rxq_stats_get(ring, &st), -EINVAL,
		     "src notrxq is not an ethdev queue source");
	DRIVER_LOGGED(evd_ethdev_rxq_removed(ring), false, "src notrxq is not");
	DRIVER_LOGGED(evd_ethdev_rxq_has_interrupt(ring), false, "src notrxq is not");
	CHECK_EQ(evd_source_destroy(ring), 0);
}

struct ring_feed {
	struct evd_loop *loop;
	struct rte_ring *ring;
};

static void *
feed_while_asleep(void *arg)
{
	struct ring_feed *f = arg;
	struct rte_mbuf *m;

	wait_asleep(f->loop);
	m = rte_pktmbuf_alloc(pool);
	CHECK(m != NULL);
	CHECK(rte_pktmbuf_append(m, 60) != NULL);
	memset(rte_pktmbuf_mtod(m, void *), 0, 60);
	rte_pktmbuf_mtod(m, struct rte_ether_hdr *)->ether_type = rte_cpu_to_be_16(OUR_ETHERTYPE);
	CHECK_EQ(rte_ring_enqueue(f->ring, m), 0);
	return NULL;
}

static void
test_ring_poll_only(uint16_t tap_port, uint16_t ring_port, struct rte_ring *ring)
{
	struct evd_loop_conf conf = { .name = "ring", .policy = "intr", .max_sleep_us = 10000000,
				      .poll_only_bound_us = 1000 };
	struct evd_loop *loop;
	struct evd_loop_stats st;
	struct evd_source *tap, *rs;
	struct counter ct = { 0 }, cr = { 0 };
	struct ring_feed f;
	pthread_t th;
	uint64_t t0;

	CHECK_EQ(evd_loop_create(&conf, &loop), 0);
	CHECK_EQ(evd_ethdev_rxq_create(tap_port, 0, "tap", NULL, on_pkts, &ct, &tap), 0);
	CHECK_EQ(evd_ethdev_rxq_create(ring_port, 0, "ring", NULL, on_pkts, &cr, &rs), 0);
	CHECK(!evd_ethdev_rxq_has_interrupt(rs));
	CHECK_EQ(evd_loop_add(loop, tap), 0);
	CHECK_EQ(evd_loop_add(loop, rs), 0);
	f = (struct ring_feed){ loop, ring };
	t0 = test_now_ns();
	CHECK_EQ(pthread_create(&th, NULL, feed_while_asleep, &f), 0);
	while (cr.ours < 1)
		CHECK(evd_loop_step(loop) >= 0);
	pthread_join(th, NULL);
	/* liveness, 5000 x the bound: the 10 s sleep bound was not used */
	CHECK(test_now_ns() - t0 < 5ull * 1000 * 1000 * 1000);
	CHECK_EQ(evd_loop_stats_get(loop, &st), 0);
	printf("ring: delivered after %" PRIu64 " bounded sleeps (%" PRIu64 " timeouts)\n", st.sleeps,
	       st.sleep_timeouts);
	CHECK(st.sleeps >= 1);
	CHECK(st.sleep_timeouts >= 1);
	CHECK_EQ(st.lost_wakeups, 0);
	CHECK_EQ(evd_loop_remove(loop, tap), 0);
	CHECK_EQ(evd_loop_remove(loop, rs), 0);
	CHECK_EQ(evd_source_destroy(tap), 0);
	CHECK_EQ(evd_source_destroy(rs), 0);
	CHECK_EQ(evd_loop_destroy(loop), 0);
}

/* One source a queue (two would be two consumers of one Rx ring): a second
 * is -EBUSY until the first is destroyed. A queue past those configured is
 * -EINVAL. (One configured but not set up is refused only where the PMD
 * answers rte_eth_rx_queue_info_get, which net_ring does not.) */
static void
test_queue_rules(uint16_t ring_port)
{
	struct rte_ring *rx[2], *tx[1];
	struct rte_eth_conf conf = { 0 };
	struct evd_source *a, *b;
	struct counter c = { 0 };
	uint16_t two;
	int port;

	CHECK_EQ(evd_ethdev_rxq_create(ring_port, 0, "a", NULL, on_pkts, &c, &a), 0);
	CHECK_EQ(evd_ethdev_rxq_create(ring_port, 0, "b", NULL, on_pkts, &c, &b), -EBUSY);
	CHECK(b == NULL);
	CHECK_EQ(evd_source_destroy(a), 0);
	CHECK_EQ(evd_ethdev_rxq_create(ring_port, 0, "b", NULL, on_pkts, &c, &b), 0);
	CHECK_EQ(evd_source_destroy(b), 0);

	rx[0] = rte_ring_create("q-rx0", 64, SOCKET_ID_ANY, RING_F_SP_ENQ | RING_F_SC_DEQ);
	rx[1] = rte_ring_create("q-rx1", 64, SOCKET_ID_ANY, RING_F_SP_ENQ | RING_F_SC_DEQ);
	tx[0] = rte_ring_create("q-tx0", 64, SOCKET_ID_ANY, RING_F_SP_ENQ | RING_F_SC_DEQ);
	CHECK(rx[0] != NULL && rx[1] != NULL && tx[0] != NULL);
	port = rte_eth_from_rings("QRULES", rx, 2, tx, 1, SOCKET_ID_ANY);
	CHECK(port >= 0);
	two = (uint16_t)port;
	CHECK_EQ(rte_eth_dev_configure(two, 2, 1, &conf), 0);
	CHECK_EQ(rte_eth_rx_queue_setup(two, 0, 64, SOCKET_ID_ANY, NULL, pool), 0);
	CHECK_EQ(evd_ethdev_rxq_create(two, 2, "none", NULL, on_pkts, &c, &a), -EINVAL);
	CHECK_EQ(evd_ethdev_rxq_create(two, 0, "set", NULL, on_pkts, &c, &a), 0);
	CHECK_EQ(evd_source_destroy(a), 0);
	CHECK_EQ(rte_eth_dev_close(two), 0);
}

struct removal {
	int told;
	enum rte_eth_event_type last;
	bool removed_then; /* evd_ethdev_rxq_removed() in the callback */
};

static void
on_port_event(struct evd_source *src, enum rte_eth_event_type type, void *arg)
{
	struct removal *r = arg;

	r->told++;
	r->last = type;
	r->removed_then = evd_ethdev_rxq_removed(src);
}

static void *
remove_while_asleep(void *arg)
{
	struct evd_loop *loop = arg;
	char name[64];

	wait_asleep(loop);
	snprintf(name, sizeof(name), "net_tap0");
	CHECK_EQ(rte_eal_hotplug_remove("vdev", name), 0);
	return NULL;
}

struct link_watch {
	uint64_t lsc, other; /* on_port_event calls: LSC, anything else */
	pthread_t loop_th; /* the thread that steps the loop */
	bool on_loop_th;   /* every call came on it */
};

static void
on_link(struct evd_source *src, enum rte_eth_event_type type, void *arg)
{
	struct link_watch *w = arg;

	(void)src;
	if (type == RTE_ETH_EVENT_INTR_LSC)
		w->lsc++;
	else
		w->other++;
	w->on_loop_th &= pthread_equal(pthread_self(), w->loop_th) != 0;
}

static bool
link_up(uint16_t port)
{
	struct rte_eth_link l;

	CHECK_EQ(rte_eth_link_get_nowait(port, &l), 0);
	return l.link_status == RTE_ETH_LINK_UP;
}

static char lsc_sock[108];

/* Whatever the outcome, no socket left in /tmp. */
static void
remove_lsc_sock(void)
{
	if (lsc_sock[0] != '\0')
		unlink(lsc_sock);
}

/* The guest side of the vhost-user pair (on lsc_sock): a virtio-user port
 * in this process. */
struct peer {
	struct evd_loop *loop;
	uint16_t port;
	enum { PEER_CONNECT, PEER_SEND, PEER_DISCONNECT } what;
};

static void
peer_connect(struct peer *p)
{
	char args[160];

	snprintf(args, sizeof(args), "path=%s,queues=1", lsc_sock);
	CHECK_EQ(rte_eal_hotplug_add("vdev", "net_virtio_user_lsc", args), 0);
	CHECK_EQ(rte_eth_dev_get_port_by_name("net_virtio_user_lsc", &p->port), 0);
	CHECK_EQ(port_start(p->port, false, false), 0);
}

static void
peer_send(struct peer *p)
{
	struct rte_mbuf *m = rte_pktmbuf_alloc(pool);
	struct rte_ether_hdr *eh;

	CHECK(m != NULL);
	eh = (struct rte_ether_hdr *)rte_pktmbuf_append(m, 64);
	CHECK(eh != NULL);
	memset(eh, 0, 64);
	memset(&eh->dst_addr, 0xff, sizeof(eh->dst_addr));
	eh->ether_type = rte_cpu_to_be_16(OUR_ETHERTYPE);
	CHECK_EQ(rte_eth_tx_burst(p->port, 0, &m, 1), 1);
}

static void
peer_disconnect(struct peer *p)
{
	CHECK_EQ(rte_eth_dev_stop(p->port), 0);
	CHECK_EQ(rte_eth_dev_close(p->port), 0);
	CHECK_EQ(rte_eal_hotplug_remove("vdev", "net_virtio_user_lsc"), 0);
}

/* What the guest does, once the loop sleeps. */
static void *
peer_while_asleep(void *arg)
{
	struct peer *p = arg;

	wait_asleep(p->loop);
	if (p->what == PEER_CONNECT)
		peer_connect(p);
	else if (p->what == PEER_SEND)
		peer_send(p);
	else
		peer_disconnect(p);
	return NULL;
}

/* The peer does @p what once the loop sleeps; step the loop until *seen
 * moves from @p before (a link event or a packet came). A hang guard, not a
 * timing check: 25 s, over two of the loop's 10 s sleep bounds. */
static void
while_asleep(struct peer *p, int what, const uint64_t *seen, uint64_t before)
{
	uint64_t give_up = test_now_ns() + 25000000000ull;
	struct timespec deadline;
	pthread_t th;

	p->what = what;
	CHECK_EQ(pthread_create(&th, NULL, peer_while_asleep, p), 0);
	while (__atomic_load_n(seen, __ATOMIC_RELAXED) == before) {
		CHECK(evd_loop_step(p->loop) >= 0);
		if (test_now_ns() > give_up) {
			printf("FAIL %s:%d: nothing came after the peer's step %d\n", __FILE__,
			       __LINE__, what);
			exit(1);
		}
	}
	clock_gettime(CLOCK_REALTIME, &deadline);
	deadline.tv_sec += 30;
	CHECK_EQ(pthread_timedjoin_np(th, NULL, &deadline), 0);
}


/*
 * The host side of a vhost-user port (a vswitch, a storage target) with
 * its queue in a loop from before any guest connects. The guest comes,
 * sends, goes and comes back while the loop sleeps with a 10 s bound:
 * each link change wakes it and reaches on_port_event on its thread, and
 * each packet wakes it through the Rx interrupt of the guest it came
 * from, not through a timeout.
 */
static void
test_vhost_link(void)
{
	struct evd_loop_conf conf = { .name = "vhost", .policy = "intr", .max_sleep_us = 10000000 };
	struct link_watch w = { .loop_th = pthread_self(), .on_loop_th = true };
	struct evd_ethdev_conf ec = { .on_port_event = on_link, .event_arg = &w };
	struct counter c = { 0 };
	struct evd_ethdev_stats es;
	struct evd_loop_stats st;
	struct peer p = { 0 };
	struct evd_source *src;
	char args[160];
	uint16_t vport;

	snprintf(lsc_sock, sizeof(lsc_sock), "/tmp/evd-lsc-%d.sock", (int)getpid());
	unlink(lsc_sock);
	atexit(remove_lsc_sock);
	snprintf(args, sizeof(args), "iface=%s,queues=1", lsc_sock);
	CHECK_EQ(rte_eal_hotplug_add("vdev", "net_vhost_lsc", args), 0);
	CHECK_EQ(rte_eth_dev_get_port_by_name("net_vhost_lsc", &vport), 0);
	CHECK_EQ(port_start(vport, true, true), 0);
	CHECK(!link_up(vport));
	CHECK_EQ(evd_loop_create(&conf, &p.loop), 0);
	CHECK_EQ(evd_ethdev_rxq_create(vport, 0, "vhost", &ec, on_pkts, &c, &src), 0);
	CHECK_EQ(evd_loop_add(p.loop, src), 0);

	for (int round = 0; round < 2; round++) {
		uint64_t lsc = w.lsc, ours = c.ours;
		uint64_t timeouts;

		while_asleep(&p, PEER_CONNECT, &w.lsc, lsc);
		CHECK(link_up(vport));
		CHECK(evd_ethdev_rxq_has_interrupt(src));
		CHECK_EQ(evd_loop_stats_get(p.loop, &st), 0);
		timeouts = st.sleep_timeouts;
		for (int i = 0; i < 3; i++)
			while_asleep(&p, PEER_SEND, &c.ours, ours + i);
		CHECK_EQ(evd_loop_stats_get(p.loop, &st), 0);
		printf("vhost round %d: link up after %" PRIu64 " LSC, %" PRIu64 " packets; sleep "
		       "timeouts %" PRIu64 " (%" PRIu64 " while packets came), lost wakeups %" PRIu64
		       ", errors %" PRIu64 "\n", round, w.lsc, c.ours, st.sleep_timeouts, st.sleep_timeouts - timeouts,
		       st.lost_wakeups, st.errors);
		/* the guest's packets woke the loop: no sleep ran to its bound */
		CHECK_EQ(st.sleep_timeouts, timeouts);
		CHECK_EQ(st.lost_wakeups, 0);
		lsc = w.lsc;
		while_asleep(&p, PEER_DISCONNECT, &w.lsc, lsc);
		CHECK(!link_up(vport));
	}
	CHECK_EQ(evd_loop_stats_get(p.loop, &st), 0);
	CHECK_EQ(evd_ethdev_rxq_stats_get(src, &es), 0);
	printf("vhost: %" PRIu64 " LSC events (%" PRIu64 " counted), %" PRIu64 " packets, %" PRIu64
	       " sleeps, %" PRIu64 " timeouts, %" PRIu64 " Rx interrupt errors, %" PRIu64
	       " source errors\n", w.lsc,
	       es.link_events, c.ours, st.sleeps, st.sleep_timeouts, es.intr_errors, st.errors);
	CHECK(w.lsc >= 4);
	CHECK_EQ(w.other, 0);
	CHECK(w.on_loop_th);
	CHECK_EQ((int64_t)es.link_events, (int64_t)w.lsc);
	CHECK_EQ(c.ours, 6);
	/* every wake came from a notification: link changes through the
	 * source's kick, packets through the Rx interrupt */
	CHECK_EQ(st.sleep_timeouts, 0);
	CHECK_EQ(st.lost_wakeups, 0);
	CHECK_EQ(es.intr_errors, 0);
	CHECK_EQ(evd_loop_remove(p.loop, src), 0);
	CHECK_EQ(evd_source_destroy(src), 0);
	CHECK_EQ(evd_loop_destroy(p.loop), 0);
	CHECK_EQ(rte_eth_dev_stop(vport), 0);
	CHECK_EQ(rte_eth_dev_close(vport), 0);
	CHECK_EQ(rte_eal_hotplug_remove("vdev", "net_vhost_lsc"), 0);
}

static void
ring_count(struct evd_source *src, void *burst, uint16_t n, void *arg)
{
	(void)src;
	(void)burst;
	*(uint64_t *)arg += n;
}

static void
test_hot_removal(uint16_t tap_port)
{
	struct evd_loop_conf conf = { .name = "rmv", .policy = "intr", .max_sleep_us = 5000000 };
	struct evd_ethdev_conf ec = { .on_port_event = on_port_event };
	struct removal rm = { 0 };
	struct evd_loop *loop;
	struct evd_source *tap, *ring;
	struct evd_event ev = { 0 };
	struct timespec deadline;
	uint64_t ring_n = 0;
	pthread_t th;

	ec.event_arg = &rm;
	CHECK_EQ(evd_loop_create(&conf, &loop), 0);
	CHECK_EQ(evd_ethdev_rxq_create(tap_port, 0, "tap", &ec, on_pkts, NULL, &tap), 0);
	CHECK_EQ(evd_ring_create("other", 16, ring_count, &ring_n, &ring), 0);
	CHECK_EQ(evd_loop_add(loop, tap), 0);
	CHECK_EQ(evd_loop_add(loop, ring), 0);
	CHECK_EQ(pthread_create(&th, NULL, remove_while_asleep, loop), 0);
	while (tap->loop != NULL)
		CHECK(evd_loop_step(loop) >= 0);
	clock_gettime(CLOCK_REALTIME, &deadline);
	deadline.tv_sec += 30;
	CHECK_EQ(pthread_timedjoin_np(th, NULL, &deadline), 0);
	/* a vdev's hot removal releases the port: ethdev raises DESTROY (a
	 * device with removal interrupts would raise INTR_RMV first), told as
	 * raised */
	CHECK(rm.told >= 1);
	CHECK(rm.last == RTE_ETH_EVENT_DESTROY);
	CHECK(rm.removed_then);
	CHECK(evd_ethdev_rxq_removed(tap));
	CHECK(!rte_eth_dev_is_valid_port(tap_port));
	/* a removed port's source cannot go back on a loop (its polls would
	 * read a released port, whose id another may take) */
	CHECK_EQ(evd_loop_add(loop, tap), -ENODEV);
	CHECK(tap->loop == NULL);
	/* the loop goes on with its other source */
	CHECK_EQ(evd_ring_post(ring, &ev), 0);
	while (ring_n == 0)
		CHECK(evd_loop_step(loop) >= 0);
	CHECK_EQ(evd_source_destroy(tap), 0);
	/* and its id names no port now */
	CHECK_EQ(evd_ethdev_rxq_create(tap_port, 0, "gone", NULL, on_pkts, NULL, &tap), -ENODEV);
	CHECK_EQ(evd_loop_remove(loop, ring), 0);
	CHECK_EQ(evd_source_destroy(ring), 0);
	CHECK_EQ(evd_loop_destroy(loop), 0);
	printf("removal: told %d time(s), the loop served its ring after\n", rm.told);
}

int
main(void)
{
	char prefix[64], vdev[96];
	char *argv[] = { "test_ethdev", "--no-huge", "--no-pci", "-m", "128", "--no-shconf",
			 prefix, "--vdev", vdev, "--log-level=lib.eal:warning",
			 "--log-level=lib.vhost.config:warning", "--log-level=pmd.net.vhost:warning", NULL };
	struct rte_ring *ring;
	uint16_t tap_port, ring_port;
	int afp, fd = open("/dev/net/tun", O_RDWR);

	TEST(test_before_eal);
	if (fd < 0 || geteuid() != 0) {
		printf("SKIP: net_tap needs root and /dev/net/tun (%s)\n",
		       fd < 0 ? "no /dev/net/tun" : "not root");
		return 77;
	}
	close(fd);
	snprintf(ifname, sizeof(ifname), "evdtap%d", (int)getpid() % 100000);
	snprintf(prefix, sizeof(prefix), "--file-prefix=evd-ethdev-%d", (int)getpid());
	snprintf(vdev, sizeof(vdev), "net_tap0,iface=%s", ifname);
	atexit(remove_runtime_dir);
	CHECK(rte_eal_init((int)RTE_DIM(argv) - 1, argv) >= 0);
	snprintf(runtime_dir, sizeof(runtime_dir), "%s", rte_eal_get_runtime_dir());
	pool = rte_pktmbuf_pool_create("test-pool", 4095, 128, 0, RTE_MBUF_DEFAULT_BUF_SIZE, SOCKET_ID_ANY);
	CHECK(pool != NULL);
	CHECK_EQ(rte_eth_dev_get_port_by_name("net_tap0", &tap_port), 0);
	CHECK_EQ(port_start(tap_port, true, false), 0);
	ring = rte_ring_create("test-ring", 1024, SOCKET_ID_ANY, RING_F_SP_ENQ | RING_F_SC_DEQ);
	CHECK(ring != NULL);
	CHECK(rte_eth_from_ring(ring) >= 0);
	CHECK_EQ(rte_eth_dev_get_port_by_name("ETH_RING0", &ring_port) == 0 ||
		 (ring_port = (uint16_t)(rte_eth_dev_count_avail() - 1), 1), 1);
	CHECK_EQ(port_start(ring_port, false, false), 0);
	afp = kernel_side();

	TEST_ARGS(test_tap, tap_port, afp);
	TEST_ARGS(test_ring_poll_only, tap_port, ring_port, ring);
	TEST_ARGS(test_attached_elsewhere, tap_port);
	TEST_ARGS(test_restart, tap_port, afp);
	TEST_ARGS(test_before_start, tap_port, afp);
	TEST_ARGS(test_queue_rules, ring_port);
	TEST_ARGS(test_bad_input, ring_port);
	TEST(test_vhost_link);
	TEST_ARGS(test_hot_removal, tap_port);
	close(afp);
	rte_eal_cleanup();
	return 0;
}
