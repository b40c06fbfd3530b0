/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * testevd: demo, benchmark and comparison application for evd.
 *
 *   testevd [EAL options --] [testevd options]
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rte_eal.h>
#include <rte_ethdev.h>
#include <rte_errno.h>
#include <rte_log.h>

#include <evd.h>
#include <evd_policy.h>

#include "testevd.h"

static const struct mode *const modes[] = { &mode_demo, &mode_compare, &mode_send, &mode_raw };

/* EAL's runtime directory. EAL leaves it behind (its telemetry socket goes
 * in an exit handler registered after ours, so ours runs last): remove it if
 * it is empty, so that runs do not litter /var/run/dpdk. A directory another
 * process still uses is not empty and stays. */
static char runtime_dir[PATH_MAX];

static void
remove_runtime_dir(void)
{
	if (runtime_dir[0] != '\0')
		rmdir(runtime_dir);
}

static void
usage(FILE *f, const char *prog)
{
	fprintf(f,
		"Usage: %s [EAL options --] [options]\n"
		"\n"
		"Runs an arrival pattern through an evd loop and reports CPU, latency and\n"
		"the arm protocol's counters. With no options: the demo pattern for 10 s on\n"
		"the ring source under the adaptive policy.\n"
		"\n"
		"Options:\n"
		"  --source KIND     where events come from (default ring):\n"
		"                      ring       the software event ring\n"
		"                      verbs-emu  a verbs CQ on the emulated HCA (net-ib)\n"
		"                      verbs      a loopback RC QP on a real device (net-ib)\n"
		"  --semantics S     verbs-emu notification: strict (IBTA, default) or\n"
		"                    considerate (mlx5: arming fires for queued completions)\n"
		"                      ethdev     Rx queues of an ethdev port (EAL --vdev or -a);\n"
		"                                 a testevd --send process plays the pattern\n"
		"  --device NAME     verbs: the RDMA device (see ibv_devices)\n"
		"  --port N          ethdev and --send: the port (default 0)\n"
		"  --queues N        ethdev: Rx queues to receive on (default 1; 1..16)\n"
		"  --raw-epoll       receive on --port without evd, as DPDK's l3fwd-power\n"
		"                    does (rte_epoll_wait, 10 ms timeout): the baseline\n"
		"  --probe-arm       ethdev: before the run, check whether enabling the Rx\n"
		"                    interrupt fires for packets already queued\n"
		"  --send            transmit the pattern on --port (e.g. the vhost side of a\n"
		"                    vhost-user pair) for a --source ethdev receiver\n"
		"  --send-delay S    --send: seconds between link up and the pattern\n"
		"                    (default 1; 0..60)\n"
		"  --policy SPEC     policy spec (default adaptive): poll, intr, adaptive,\n"
		"                    adaptive:budget_us=N,spin_pct=N,pause_ns=N\n"
		"  --duration S      length of the pattern in seconds (default 10; 0.1..86400)\n"
		"  --pattern NAME    arrival pattern (default demo):\n",
		prog);
	pattern_list(f);
	fprintf(f,
		"  --rate R          base rate in events/s (default 20000; 1..100000000)\n"
		"  --seed N          random seed of the arrival gaps (default 1)\n"
		"  --max-sleep-us N  bound on one sleep, in us (default %d)\n"
		"  --json FILE       write the report as JSON ('-' for stdout); with\n"
		"                    --compare, an array with one object per policy\n"
		"  --compare         run the pattern under poll, intr and adaptive, one table\n"
		"  --rounds N        with --compare: interleave the three runs N times and\n"
		"                    add them up (default 1; 1..1000)\n"
		"  --no-progress     no live progress line (it is shown only on a terminal)\n"
		"  --help            this text\n"
		"\n"
		"EAL options go before '--'. Without any, testevd passes:\n"
		"  --no-huge --no-pci -m 128 --no-shconf --file-prefix=testevd-PID\n"
		"so it needs no hugepages. Logs go through DPDK's log system (type lib.evd).\n"
		"\n"
		"Exit status: 0 ok; 1 an event was lost or a lost wakeup was counted;\n"
		"2 bad command line; 3 EAL or library failure.\n",
		EVD_DEFAULT_MAX_SLEEP_US);
}

static int
bad(const char *prog, const char *fmt, const char *arg)
{
	fprintf(stderr, "%s: ", prog);
	fprintf(stderr, fmt, arg);
	fprintf(stderr, "\nTry '%s --help'.\n", prog);
	return EXIT_USAGE;
}

static int
parse_double(const char *s, double lo, double hi, double *out)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (*s == '\0' || *end != '\0' || errno != 0 || !isfinite(v) || v < lo || v > hi)
		return -EINVAL;
	*out = v;
	return 0;
}

static int
parse_u64(const char *s, uint64_t lo, uint64_t hi, uint64_t *out)
{
	char *end;
	unsigned long long v;

	if (*s < '0' || *s > '9')
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (*end != '\0' || errno != 0 || v < lo || v > hi)
		return -EINVAL;
	*out = v;
	return 0;
}

static int
parse_opts(int argc, char **argv, struct opts *o)
{
	enum { O_POLICY = 256, O_DURATION, O_PATTERN, O_RATE, O_SEED, O_JSON, O_COMPARE,
	       O_NOPROGRESS, O_MAXSLEEP, O_ROUNDS, O_SOURCE, O_SEMANTICS, O_DEVICE, O_PORT, O_QUEUES, O_SEND, O_SEND_DELAY, O_PROBE_ARM, O_RAW, O_HELP };
	static const struct option lo[] = {
		{ "policy", required_argument, NULL, O_POLICY },
		{ "duration", required_argument, NULL, O_DURATION },
		{ "pattern", required_argument, NULL, O_PATTERN },
		{ "rate", required_argument, NULL, O_RATE },
		{ "seed", required_argument, NULL, O_SEED },
		{ "json", required_argument, NULL, O_JSON },
		{ "compare", no_argument, NULL, O_COMPARE },
		{ "no-progress", no_argument, NULL, O_NOPROGRESS },
		{ "max-sleep-us", required_argument, NULL, O_MAXSLEEP },
		{ "rounds", required_argument, NULL, O_ROUNDS },
		{ "source", required_argument, NULL, O_SOURCE },
		{ "semantics", required_argument, NULL, O_SEMANTICS },
		{ "device", required_argument, NULL, O_DEVICE },
		{ "port", required_argument, NULL, O_PORT },
		{ "queues", required_argument, NULL, O_QUEUES },
		{ "send", no_argument, NULL, O_SEND },
		{ "probe-arm", no_argument, NULL, O_PROBE_ARM },
		{ "raw-epoll", no_argument, NULL, O_RAW },
		{ "send-delay", required_argument, NULL, O_SEND_DELAY },
		{ "help", no_argument, NULL, O_HELP },
		{ NULL, 0, NULL, 0 },
	};
	const char *prog = argv[0];
	uint64_t u;
	int c;

	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, ":", lo, NULL)) != -1) {
		switch (c) {
		case O_POLICY:
			if (evd_policy_validate(optarg) < 0)
				return bad(prog, "invalid --policy '%s' (see the log line above)", optarg);
			o->policy = optarg;
			break;
		case O_DURATION:
			if (parse_double(optarg, 0.1, 86400, &o->duration_s) < 0)
				return bad(prog, "invalid --duration '%s' (seconds, 0.1..86400)", optarg);
			break;
		case O_PATTERN:
			if (pattern_find(optarg) == NULL)
				return bad(prog, "unknown --pattern '%s'", optarg);
			o->pattern = optarg;
			break;
		case O_RATE:
			if (parse_double(optarg, 1, 1e8, &o->rate) < 0)
				return bad(prog, "invalid --rate '%s' (events/s, 1..100000000)", optarg);
			break;
		case O_SEED:
			if (parse_u64(optarg, 0, UINT64_MAX, &o->seed) < 0)
				return bad(prog, "invalid --seed '%s' (unsigned integer)", optarg);
			break;
		case O_MAXSLEEP:
			if (parse_u64(optarg, 1, 60u * 1000 * 1000, &u) < 0)
				return bad(prog, "invalid --max-sleep-us '%s' (1..60000000)", optarg);
			o->max_sleep_us = (uint32_t)u;
			break;
		case O_SOURCE:
			if (source_kind_find(optarg) == NULL)
				return bad(prog, "unknown --source '%s' (ring; verbs-emu and verbs need "
					   "the net-ib driver, built with libibverbs)", optarg);
			o->source = optarg;
			break;
		case O_SEMANTICS:
			if (strcmp(optarg, "strict") != 0 && strcmp(optarg, "considerate") != 0)
				return bad(prog, "invalid --semantics '%s' (strict or considerate)", optarg);
			o->semantics = optarg;
			o->semantics_given = true;
			break;
		case O_DEVICE:
			if (*optarg == '\0')
				return bad(prog, "empty --device%s", "");
			o->device = optarg;
			break;
		case O_PORT:
			if (parse_u64(optarg, 0, RTE_MAX_ETHPORTS - 1, &u) < 0)
				return bad(prog, "invalid --port '%s'", optarg);
			o->port = (uint16_t)u;
			break;
		case O_QUEUES:
			if (parse_u64(optarg, 1, 16, &u) < 0)
				return bad(prog, "invalid --queues '%s' (1..16)", optarg);
			o->queues = (uint16_t)u;
			break;
		case O_SEND:
			o->send = true;
			break;
		case O_PROBE_ARM:
			o->probe_arm = true;
			break;
		case O_RAW:
			o->raw_epoll = true;
			break;
		case O_SEND_DELAY:
			if (parse_double(optarg, 0, 60, &o->send_delay_s) < 0)
				return bad(prog, "invalid --send-delay '%s' (0..60 s)", optarg);
			break;
		case O_ROUNDS:
			if (parse_u64(optarg, 1, 1000, &u) < 0)
				return bad(prog, "invalid --rounds '%s' (1..1000)", optarg);
			o->rounds = (unsigned int)u;
			break;
		case O_JSON:
			if (*optarg == '\0')
				return bad(prog, "empty --json file name%s", "");
			o->json = optarg;
			break;
		case O_COMPARE:
			o->compare = true;
			break;
		case O_NOPROGRESS:
			o->progress = false;
			break;
		case O_HELP:
			usage(stdout, prog);
			exit(0);
		case ':':
			return bad(prog, "option '%s' needs a value", argv[optind - 1]);
		default:
			return bad(prog, "unknown option '%s'", argv[optind - 1]);
		}
	}
	if (optind < argc)
		return bad(prog, "unexpected argument '%s'", argv[optind]);
	if (o->rounds > 1 && !o->compare)
		return bad(prog, "--rounds needs --compare%s", "");
	if (strcmp(o->source, "verbs") == 0 && o->device == NULL)
		return bad(prog, "--source verbs needs --device NAME%s", "");
	if (o->device != NULL && strcmp(o->source, "verbs") != 0)
		return bad(prog, "--device applies to --source verbs only%s", "");
	if (o->semantics_given && strcmp(o->source, "verbs-emu") != 0)
		return bad(prog, "--semantics applies to --source verbs-emu only%s", "");
	if (o->send && (o->compare || strcmp(o->source, "ring") != 0))
		return bad(prog, "--send transmits on --port; it takes no --source or --compare%s", "");
	if (o->raw_epoll && (o->send || o->compare || strcmp(o->source, "ring") != 0))
		return bad(prog, "--raw-epoll receives on --port by itself: no --source, --send "
			   "or --compare%s", "");
	if (o->probe_arm && strcmp(o->source, "ethdev") != 0)
		return bad(prog, "--probe-arm applies to --source ethdev only%s", "");
	if (o->compare && strcmp(o->source, "ethdev") == 0)
		return bad(prog, "--compare needs a local producer; with --source ethdev run the "
			   "sender once per policy%s", "");
	return 0;
}

static bool
has_opt(int argc, char **argv, const char *const *names)
{
	for (int i = 1; i < argc; i++)
		for (const char *const *n = names; *n; n++)
			if (strncmp(argv[i], *n, strlen(*n)) == 0)
				return true;
	return false;
}

int
main(int argc, char **argv)
{
	static const char *const mem_opts[] = { "--no-huge", "--huge-dir", "--socket-mem", "-m",
						"--in-memory", "--file-prefix", "--no-shconf",
						"--single-file-segments", "--legacy-mem", NULL };
	static const char *const pci_opts[] = { "--no-pci", "-a", "--allow", "-b", "--block", NULL };
	struct opts o = {
		.source = "ring",
		.semantics = "strict",
		.policy = "adaptive",
		.pattern = "demo",
		.duration_s = 10,
		.rate = 20000,
		.seed = 1,
		.max_sleep_us = EVD_DEFAULT_MAX_SLEEP_US,
		.rounds = 1,
		.queues = 1,
		.send_delay_s = 1,
		.progress = isatty(STDOUT_FILENO),
	};
	char *eal_argv[64], prefix[64];
	int eal_argc = 0, n_eal = 0, dash = -1, rc;

	for (int i = 1; i < argc; i++)
		if (strcmp(argv[i], "--") == 0) {
			dash = i;
			break;
		}
	for (int i = 1; i < argc; i++)
		if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
			if (dash < 0 || i > dash) {
				usage(stdout, argv[0]);
				return 0;
			}
		}

	/* EAL options: what the user gave before '--', plus defaults that
	 * make testevd run anywhere (no hugepages, no PCI). */
	n_eal = dash < 0 ? 0 : dash - 1;
	if (n_eal > 48) {
		fprintf(stderr, "%s: too many EAL options\n", argv[0]);
		return EXIT_USAGE;
	}
	eal_argv[eal_argc++] = argv[0];
	eal_argv[eal_argc++] = "--log-level=lib.eal:warning";
	if (!has_opt(n_eal + 1, argv, mem_opts)) {
		snprintf(prefix, sizeof(prefix), "--file-prefix=testevd-%d", (int)getpid());
		eal_argv[eal_argc++] = "--no-huge";
		eal_argv[eal_argc++] = "-m";
		eal_argv[eal_argc++] = "128";
		eal_argv[eal_argc++] = "--no-shconf";
		eal_argv[eal_argc++] = prefix;
	}
	if (!has_opt(n_eal + 1, argv, pci_opts))
		eal_argv[eal_argc++] = "--no-pci";
	for (int i = 1; i <= n_eal; i++)
		eal_argv[eal_argc++] = argv[i];
	eal_argv[eal_argc] = NULL;

	/* testevd options: everything after '--', or everything if none. */
	{
		int app_argc = dash < 0 ? argc : argc - dash;
		char **app_argv = dash < 0 ? argv : argv + dash;

		if (dash >= 0)
			app_argv[0] = argv[0];
		rc = parse_opts(app_argc, app_argv, &o);
		if (rc != 0)
			return rc;
	}
	if (o.json != NULL && strcmp(o.json, "-") != 0) {
		FILE *f = fopen(o.json, "w");

		if (f == NULL) {
			fprintf(stderr, "%s: cannot write --json '%s': %s\n", argv[0], o.json,
				strerror(errno));
			return EXIT_USAGE;
		}
		fclose(f);
	}

	atexit(remove_runtime_dir);
	rc = rte_eal_init(eal_argc, eal_argv);
	if (rc < 0) {
		fprintf(stderr, "%s: EAL initialisation failed: %s\n", argv[0], rte_strerror(rte_errno));
		return EXIT_RUNTIME;
	}
	snprintf(runtime_dir, sizeof(runtime_dir), "%s", rte_eal_get_runtime_dir());
	rc = modes[o.raw_epoll ? 3 : o.send ? 2 : o.compare ? 1 : 0]->run(&o);
	rte_eal_cleanup();
	return rc;
}
