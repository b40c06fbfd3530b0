/* SPDX-License-Identifier: BSD-3-Clause */
/* A source whose ack or arm fails (bad_source.h). */
#include <errno.h>
#include <unistd.h>

#include "bad_source.h"
#include "evd_test.h"

static int
bad_fd(const struct evd_source *s)
{
	return ((const struct bad_source *)s)->efd;
}

static int
bad_ack(struct evd_source *s)
{
	struct bad_source *b = (struct bad_source *)s;
	uint64_t v;

	if (b->consume && read(b->efd, &v, sizeof(v)) < 0)
		return -errno;
	return -EIO;
}

static int
bad_arm(struct evd_source *s)
{
	(void)s;
	return -EIO;
}

const struct evd_source_ops bad_ack_ops = { .kind = "bad", .poll = test_poll_none, .fd = bad_fd,
					    .ack = bad_ack };
const struct evd_source_ops bad_arm_ops = { .kind = "bad", .poll = test_poll_none, .fd = bad_fd,
					    .arm = bad_arm };
