/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * /evd/sources on a loop of more sources than one telemetry reply holds:
 * the reply lists the first ones whole and says how many it left out
 * ("more"), where telemetry alone would drop what does not fit, unsaid.
 * Asked over the process's own telemetry socket, as dpdk-telemetry.py asks.
 */
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <rte_common.h>
#include <rte_eal.h>

#include <evd.h>

#include "evd_test.h"

#define N_SRC 300

static char reply[1 << 16];

static const char *
ask(int s, const char *cmd)
{
	ssize_t n;

	CHECK_EQ(write(s, cmd, strlen(cmd)), (ssize_t)strlen(cmd));
	n = read(s, reply, sizeof(reply) - 1);
	CHECK(n > 0);
	reply[n] = '\0';
	return reply;
}

static size_t
count(const char *s, const char *what)
{
	size_t n = 0;

	for (; (s = strstr(s, what)) != NULL; s++)
		n++;
	return n;
}

static void
test_sources_more(void)
{
	struct evd_loop_conf conf = { .name = "many", .policy = "poll" };
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	struct evd_source *src[N_SRC];
	struct evd_loop *loop;
	const char *r, *more;
	size_t shown;
	int s = socket(AF_UNIX, SOCK_SEQPACKET, 0);

	CHECK(s >= 0);
	CHECK_EQ(evd_loop_create(&conf, &loop), 0);
	for (int i = 0; i < N_SRC; i++) {
		/* long names, a quote and a backslash each, which the reply escapes */
		char name[32];

		snprintf(name, sizeof(name), "q\"b\\%03d_abcdefghijklmnopqrstu", i);
		CHECK_EQ(evd_ring_create(name, 64, test_nop, NULL, &src[i]), 0);
		CHECK_EQ(evd_loop_add(loop, src[i]), 0);
	}
	for (int i = 0; i < 1000; i++)
		CHECK(evd_loop_step(loop) >= 0); /* counters of several digits */
	snprintf(a.sun_path, sizeof(a.sun_path), "%s/dpdk_telemetry.v2", rte_eal_get_runtime_dir());
	CHECK_EQ(connect(s, (struct sockaddr *)&a, sizeof(a)), 0);
	CHECK(read(s, reply, sizeof(reply)) > 0); /* the greeting */
	r = ask(s, "/evd/sources,many");
	shown = count(r, "\"kind\":");
	more = strstr(r, "\"more\":");
	printf("  %zu bytes: %zu sources shown, %s\n", strlen(r), shown, more ? more : "no \"more\"");
	CHECK(shown > 0 && shown < N_SRC);
	CHECK(more != NULL);
	CHECK_EQ(shown + strtoull(more + strlen("\"more\":"), NULL, 10), N_SRC);
	CHECK(strcmp(r + strlen(r) - 2, "}}") == 0); /* whole: nothing cut after it */
	close(s);
	for (int i = 0; i < N_SRC; i++) {
		CHECK_EQ(evd_loop_remove(loop, src[i]), 0);
		CHECK_EQ(evd_source_destroy(src[i]), 0);
	}
	CHECK_EQ(evd_loop_destroy(loop), 0);
}

int
main(void)
{
	char prefix[64];
	char *argv[] = { "test_telemetry_sources", "--no-huge", "--no-pci", "-m", "64",
			 "--no-shconf", prefix, "--log-level=lib.eal:warning", NULL };

	snprintf(prefix, sizeof(prefix), "--file-prefix=evd-tmsrc%d", (int)getpid());
	CHECK(rte_eal_init((int)RTE_DIM(argv) - 1, argv) >= 0);
	TEST(test_sources_more);
	rte_eal_cleanup();
	return 0;
}
