/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The memory of loops and rings: DPDK's (rte_zmalloc_socket, hugepages on
 * a NUMA socket) once the EAL is up, libc's before it. Each block records
 * which it came from, so one made before rte_eal_init() is freed right
 * after it too.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <rte_lcore.h>
#include <rte_malloc.h>

#include "evd_private.h"

bool
evd__eal_up(void)
{
	return rte_lcore_count() > 0;
}

int
evd__socket_resolve(int numa_socket, int *socket)
{
	if (numa_socket == EVD_SOCKET_ANY) {
		*socket = SOCKET_ID_ANY;
		return 0;
	}
	if (numa_socket < 0)
		return -EINVAL;
	if (numa_socket == 0) {
		/* the caller's: SOCKET_ID_ANY off an lcore, or before the EAL */
		*socket = evd__eal_up() ? (int)rte_socket_id() : SOCKET_ID_ANY;
		return 0;
	}
	*socket = numa_socket - 1;
	if (!evd__eal_up())
		return 0; /* libc's memory: no socket to check against */
	for (unsigned int i = 0; i < rte_socket_count(); i++)
		if (rte_socket_id_by_idx(i) == *socket)
			return 0;
	return -ENODEV;
}

void *
evd__zalloc(struct evd__mem *m, size_t size, size_t align)
{
	void *p;

	if (m->dpdk)
		return rte_zmalloc_socket("evd", size, (unsigned int)align, m->socket);
	if (align <= sizeof(void *))
		return calloc(1, size);
	p = aligned_alloc(align, RTE_ALIGN_CEIL(size, align));
	if (p != NULL)
		memset(p, 0, size);
	return p;
}

void *
evd__realloc(struct evd__mem *m, void *p, size_t size)
{
	return m->dpdk ? rte_realloc_socket(p, size, 0, m->socket) : realloc(p, size);
}

void
evd__free(const struct evd__mem *m, void *p)
{
	if (m->dpdk)
		rte_free(p);
	else
		free(p);
}
