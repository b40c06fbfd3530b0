/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * evd_loop_stop() from another thread, the owner destroying the loop as
 * soon as evd_loop_run() returns: the stop sets the loop's flag, then rings
 * its eventfd, and the loop can return in between. evd_loop_destroy() must
 * wait for that write; it used to free the loop under it, so the stopping
 * thread read freed memory and wrote into a closed fd number, reused
 * meanwhile by the application. The preemption is made to happen: write()
 * is interposed and holds the stopping thread 200 ms on entry. Its own
 * executable, for the interposed write().
 */
#include <pthread.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <evd.h>

#include "evd_test.h"

static __thread int slow_write;
static int write_fd = -1, write_done;

ssize_t
write(int fd, const void *buf, size_t n)
{
	ssize_t rc;

	if (!slow_write)
		return syscall(SYS_write, fd, buf, n);
	__atomic_store_n(&write_fd, fd, __ATOMIC_RELEASE);
	test_sleep_us(200000);
	rc = syscall(SYS_write, fd, buf, n);
	__atomic_store_n(&write_done, 1, __ATOMIC_RELEASE);
	return rc;
}

static void *
stopper(void *arg)
{
	slow_write = 1;
	CHECK_EQ(evd_loop_stop(arg), 0);
	return NULL;
}

static void *
runner(void *arg)
{
	CHECK_EQ(evd_loop_run(arg), 0);
	return NULL;
}

int
main(void)
{
	struct evd_loop_conf c = { .name = "stop", .policy = "poll" };
	struct evd_loop *l;
	pthread_t ts, tr;
	int fds[4];
	uint64_t v, written = 0;

	CHECK_EQ(evd_loop_create(&c, &l), 0);
	CHECK_EQ(pthread_create(&tr, NULL, runner, l), 0);
	CHECK_EQ(pthread_create(&ts, NULL, stopper, l), 0);
	pthread_join(tr, NULL); /* it saw the stop and returned */
	CHECK_EQ(evd_loop_destroy(l), 0);
	/* it waited for the stop under way (the flag comes before the write) */
	CHECK(__atomic_load_n(&write_done, __ATOMIC_ACQUIRE));
	/* the application opens fds: they take the numbers the loop freed */
	for (int i = 0; i < 4; i++) {
		fds[i] = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
		CHECK(fds[i] >= 0);
	}
	pthread_join(ts, NULL);
	for (int i = 0; i < 4; i++) {
		if (read(fds[i], &v, sizeof(v)) == 8) {
			printf("  evd_loop_stop() wrote %" PRIu64 " into fd %d, opened after the "
			       "loop was destroyed\n", v, fds[i]);
			written += v;
		}
		close(fds[i]);
	}
	CHECK_EQ(written, 0);
	printf("ok: destroy waited for stop to ring the loop's eventfd (fd %d)\n",
	       __atomic_load_n(&write_fd, __ATOMIC_ACQUIRE));
	return 0;
}
