/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Strong definitions, in the executable, of the verbs calls that need
 * a kernel (uverbs commands) on the create/destroy path. On the emulated
 * device they go to the emulator; on any other device they forward to
 * libibverbs. Only control-path calls; the poll, arm and event calls are
 * libibverbs' own.
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdlib.h>

#include "emu_ibv.h"

static void *
real(const char *name, const char *version)
{
	void *f = dlvsym(RTLD_NEXT, name, version);

	if (f == NULL)
		abort();
	return f;
}

struct ibv_comp_channel *
ibv_create_comp_channel(struct ibv_context *ctx)
{
	struct ibv_comp_channel *(*f)(struct ibv_context *);

	if (emu_is_context(ctx)) {
		struct ibv_comp_channel *ch = emu_create_channel(ctx);

		if (ch == NULL)
			errno = ENOMEM;
		return ch;
	}
	f = real("ibv_create_comp_channel", "IBVERBS_1.0");
	return f(ctx);
}

int
ibv_destroy_comp_channel(struct ibv_comp_channel *ch)
{
	int (*f)(struct ibv_comp_channel *);

	if (emu_is_context(ch->context))
		return emu_destroy_channel(ch);
	f = real("ibv_destroy_comp_channel", "IBVERBS_1.0");
	return f(ch);
}

int
ibv_destroy_cq(struct ibv_cq *cq)
{
	int (*f)(struct ibv_cq *);

	if (emu_is_context(cq->context))
		return emu_destroy_cq(cq);
	f = real("ibv_destroy_cq", "IBVERBS_1.1");
	return f(cq);
}
