/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Channel faults for the tests on the emulated HCA: emu_read_fault.c, linked
 * into a test executable, defines read() for libibverbs' ibv_get_cq_event().
 */
#ifndef EMU_READ_FAULT_H
#define EMU_READ_FAULT_H

/* Make the next `times` read()s of fd fail with err (EINTR, EAGAIN). */
void emu_read_fault(int fd, int err, int times);

#endif
