/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The loop where epoll_pwait2 is missing: kernels before 5.11 (ENOSYS), or
 * a seccomp profile that refuses it (EPERM, as older Docker profiles do). A
 * seccomp filter here makes the call fail with the errno given, and the
 * loop's waits take their fallback (ppoll on the epoll fd, then a
 * non-blocking collect). Checked: a nap under a millisecond waits its whole
 * length (epoll_wait's milliseconds would round it to 0 and return at
 * once: a timed wait must never end early), a sleep is woken by a producer
 * on another thread, a stop ends a long nap.
 *   test_oldkernel ENOSYS|EPERM
 */
#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <pthread.h>
#include <stddef.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <evd.h>
#include <evd_policy.h>

#include "evd_test.h"
#include "napper_policy.h"

#if defined(__x86_64__)
#define AUDIT_ARCH_HERE AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define AUDIT_ARCH_HERE AUDIT_ARCH_AARCH64
#endif

/* epoll_pwait2 fails with err from now on, in this process */
static int
refuse_epoll_pwait2(int err)
{
#if defined(AUDIT_ARCH_HERE) && defined(SYS_epoll_pwait2)
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_HERE, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_epoll_pwait2, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (unsigned int)err),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { .len = sizeof(f) / sizeof(f[0]), .filter = f };

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 ||
	    prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) < 0)
		return -errno;
	return 0;
#else
	(void)err;
	return -ENOTSUP;
#endif
}

static void *
run_loop(void *arg)
{
	CHECK_EQ(evd_loop_run(arg), 0);
	return NULL;
}

/* A nap of 300 us waits 300 us at least, and polls the 3 events posted
 * before it in one round. */
static void
test_short_nap(void)
{
	struct evd_loop_conf conf = { .policy = "napper", .max_sleep_us = 100000 };
	struct evd_loop_stats st;
	struct evd_loop *loop;
	struct evd_source *r;

	CHECK_EQ(evd_loop_create(&conf, &loop), 0);
	CHECK_EQ(evd_ring_create("r", 16, test_nop, NULL, &r), 0);
	CHECK_EQ(evd_loop_add(loop, r), 0);
	test_napper.ring = r;
	test_napper.nap_ns = 300000;
	for (int i = 0; i < 20; i++) {
		CHECK_EQ(evd_loop_step(loop), 3);
		CHECK(test_napper.why == EVD_WAKE_TIMEOUT);
		CHECK(test_napper.slept_ns >= test_napper.nap_ns); /* a timeout never fires early */
	}
	printf("  a nap of %" PRIu64 " ns: the last one %" PRIu64 " ns\n", test_napper.nap_ns, test_napper.slept_ns);
	CHECK_EQ(evd_loop_stats_get(loop, &st), 0);
	CHECK_EQ(st.naps, 20);
	CHECK_EQ(st.events, 60);
	test_napper.ring = NULL;
	CHECK_EQ(evd_loop_remove(loop, r), 0);
	CHECK_EQ(evd_source_destroy(r), 0);
	CHECK_EQ(evd_loop_destroy(loop), 0);
}

/* intr: the loop sleeps (fallback wait, no timeout short of 100 s) until a
 * producer on another thread posts; then a stop. */
static void
test_sleep_woken(void)
{
	struct evd_loop_conf conf = { .policy = "intr", .max_sleep_us = 100000000 };
	struct evd_event ev = { 0 };
	struct evd_loop_stats st;
	struct evd_loop *loop;
	struct evd_source *r;
	pthread_t th;

	CHECK_EQ(evd_loop_create(&conf, &loop), 0);
	CHECK_EQ(evd_ring_create("r", 16, test_nop, NULL, &r), 0);
	CHECK_EQ(evd_loop_add(loop, r), 0);
	CHECK_EQ(pthread_create(&th, NULL, run_loop, loop), 0);
	test_wait_asleep(loop, 1000);
	CHECK_EQ(evd_ring_post(r, &ev), 0);
	do {
		test_sleep_us(1000);
		CHECK_EQ(evd_loop_stats_get(loop, &st), 0);
	} while (st.events < 1);
	CHECK_EQ(evd_loop_stop(loop), 0);
	CHECK_EQ(pthread_join(th, NULL), 0);
	CHECK_EQ(evd_loop_stats_get(loop, &st), 0);
	CHECK(st.wakeups >= 1);
	CHECK_EQ(st.lost_wakeups, 0);
	CHECK_EQ(st.sleep_timeouts, 0);
	CHECK_EQ(evd_loop_remove(loop, r), 0);
	CHECK_EQ(evd_source_destroy(r), 0);
	CHECK_EQ(evd_loop_destroy(loop), 0);
}

/* A nap of 60 s (no bound short of 100 s) ends by the stop. */
static void
test_stop_ends_nap(void)
{
	struct evd_loop_conf conf = { .policy = "napper", .max_sleep_us = 100000000 };
	struct evd_loop *loop;
	pthread_t th;

	test_napper.nap_ns = 60000000000ull;
	CHECK_EQ(evd_loop_create(&conf, &loop), 0);
	CHECK_EQ(pthread_create(&th, NULL, run_loop, loop), 0);
	test_wait_asleep(loop, 1000);
	CHECK_EQ(evd_loop_stop(loop), 0);
	CHECK_EQ(pthread_join(th, NULL), 0);
	CHECK(test_napper.why == EVD_WAKE_STOP);
	CHECK_EQ(evd_loop_destroy(loop), 0);
}

int
main(int argc, char **argv)
{
	int err = argc > 1 && strcmp(argv[1], "EPERM") == 0 ? EPERM : ENOSYS;
	struct epoll_event e;
	struct timespec ts = { 0, 0 };
	int rc, epfd;

	/* the environment first: measuring it sleeps too */
	CHECK_EQ(evd_policy_env_calibrate(), 0);
	CHECK_EQ(evd_policy_register(&test_napper_ops), 0);
	rc = refuse_epoll_pwait2(err);
	if (rc < 0) {
		printf("SKIP: cannot install a seccomp filter here: %s\n", strerror(-rc));
		return 77;
	}
	epfd = epoll_create1(0);
	CHECK(epfd >= 0);
#ifdef SYS_epoll_pwait2
	CHECK_EQ(syscall(SYS_epoll_pwait2, epfd, &e, 1, &ts, NULL, (size_t)8), -1);
	CHECK_EQ(errno, err);
#endif
	close(epfd);
	printf("# epoll_pwait2 now fails with %s\n", strerror(err));
	TEST(test_short_nap);
	TEST(test_sleep_woken);
	TEST(test_stop_ends_nap);
	return 0;
}
