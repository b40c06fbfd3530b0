/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * read() as seen by libibverbs' ibv_get_cq_event() in a test executable:
 * a strong definition that fails on demand with EINTR or EAGAIN, to inject
 * channel faults, and otherwise issues the system call.
 */
#include <errno.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "emu_read_fault.h"

static int fault_fd = -1, fault_err, fault_times;

void
emu_read_fault(int fd, int err, int times)
{
	__atomic_store_n(&fault_err, err, __ATOMIC_RELAXED);
	__atomic_store_n(&fault_times, times, __ATOMIC_RELAXED);
	__atomic_store_n(&fault_fd, fd, __ATOMIC_RELEASE);
}

ssize_t
read(int fd, void *buf, size_t count)
{
	if (fd == __atomic_load_n(&fault_fd, __ATOMIC_ACQUIRE) &&
	    __atomic_load_n(&fault_times, __ATOMIC_RELAXED) > 0) {
		__atomic_fetch_sub(&fault_times, 1, __ATOMIC_RELAXED);
		errno = __atomic_load_n(&fault_err, __ATOMIC_RELAXED);
		return -1;
	}
	return syscall(SYS_read, fd, buf, count);
}
