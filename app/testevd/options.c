/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * testevd's command line (what follows the EAL options and "--"). Kept apart
 * from main() so that tests/fuzz can drive it with any input.
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <rte_build_config.h>

#include <evd.h>
#include <evd_policy.h>

#include "options.h"
#include "pattern.h"
#include "testevd.h"
#include "trace.h"

/* The source kinds of this build (src_*.c; run.c's table). */
static const char *const source_names[] = {
	"ring",
#ifdef TESTEVD_HAVE_VERBS
	"verbs-emu",
	"verbs",
#endif
	"ethdev",
};

static bool
source_known(const char *name)
{
	for (size_t i = 0; i < sizeof(source_names) / sizeof(source_names[0]); i++)
		if (strcmp(source_names[i], name) == 0)
			return true;
	return false;
}

void
testevd_usage(FILE *f, const char *prog)
{
	fprintf(f,
		"Usage: %s [EAL options --] [options]\n"
		"\n"
		"Runs arrivals through an evd loop and reports CPU, latency and the arm\n"
		"protocol's counters. With no options: the demo pattern for 10 s on the\n"
		"ring source under the adaptive policy.\n"
		"\n"
		"What to run:\n"
		"  --policy SPEC     policy (default adaptive): poll, intr,\n"
		"                    adaptive[:p99_us=N,lambda_pct=N,spin_max_us=N,nap=0|1,\n"
		"                    superpose=0|1] (p99_us: a latency target; nap=0 turns off\n"
		"                    its naps; lambda_pct and superpose act without one)\n"
		"                    or a baseline: l3fwd, pmdmgmt, napi, haltpoll, ski2, ski-rand\n"
		"  --pattern NAME    arrival pattern (default demo):\n",
		prog);
	pattern_list(f);
	fprintf(f,
		"  --rate R          base rate in events/s of a pattern's timed phases\n"
		"                    (default 20000; 1..100000000; idle and saturate have none)\n"
		"  --duration S      length of the pattern in seconds (default 10; 0.1..86400)\n"
		"  --seed N          random seed of the arrival gaps (default 1)\n"
		"  --trace T         replay an arrival trace instead of --pattern: a file (one gap\n"
		"                    in ns per line, or pcap/pcapng) or a generator:\n"
		"                    poisson:rate=R, onoff:rate=R,on_ms=A,off_ms=B,\n"
		"                    pareto:alpha=A,mean_us=M, periodic:period_us=P,jitter_us=J, day;\n"
		"                    periodic:...,sources=N: N independent periodic sources\n"
		"                    (ids 1..N, id k every P (1 + 0.41 (k - 1)); N up to 8).\n"
		"                    A key left out takes rate=10000, on_ms=5, off_ms=50,\n"
		"                    alpha=1.5, mean_us=200, period_us=1000, jitter_us=50;\n"
		"                    without sources=N, periodic is one source with no id.\n"
		"                    On the ring source a trace's source ids get one ring each\n"
		"                    (up to 8)\n"
		"  --speedup X       divide every gap of the trace by X (default 1)\n"
		"  --events N        arrivals a generator makes (default 100000)\n"
		"  --max-sleep-us N  bound on one sleep, in us (default %d; --score's too)\n"
		"  --compare         run under poll, intr and adaptive, one table (a --policy\n"
		"                    beside it may only tune adaptive: adaptive:KEY=VALUE)\n"
		"  --rounds N        with --compare: interleave the runs N times (the order\n"
		"                    turning each round), add them up, and print\n"
		"                    adaptive/poll events/s by round (default 1; 1..1000)\n"
		"\n"
		"Where events come from:\n"
		"  --source KIND     ring (default: the software event ring), verbs-emu (a verbs\n"
		"                    CQ on the emulated HCA), verbs (a loopback RC QP on a real\n"
		"                    device), ethdev (Rx queues of a port; a testevd --send\n"
		"                    process plays the pattern)\n"
		"  --semantics S     verbs-emu: strict (IBTA, default) or considerate (mlx5:\n"
		"                    arming fires for completions already queued)\n"
		"  --device NAME     verbs: the RDMA device (see ibv_devices)\n"
		"  --port N          ethdev, --send, --raw-epoll: the port (default 0)\n"
		"  --queues N        ethdev: Rx queues to receive on (default 1; 1..16)\n"
		"  --probe-arm       ethdev: first check whether enabling the Rx interrupt fires\n"
		"                    for packets already queued (strict or not)\n"
		"  --forward         ethdev: send every packet back out of the port (Tx queue 0)\n"
		"\n"
		"Other modes:\n"
		"  --score           replay --trace in virtual time and score --policy (or, with\n"
		"                    --compare, every policy) against the offline oracle\n"
		"  --lambda L        --score: price of 1 ns of added latency in ns of CPU (default 1)\n"
		"  --budget-us N     --score: a latency budget: added latency up to N us is free,\n"
		"                    lambda prices the rest (default 0; 0..1000000)\n"
		"  --p99-us N        --score: a latency target: whether each policy's p99 of\n"
		"                    added latency is N us or less, and its CPU against the\n"
		"                    cheapest spin threshold in hindsight that meets it (1..1000000);\n"
		"                    with --compare, adaptive:p99_us=N joins the policies\n"
		"  --calibration F   use B and L(g) from F instead of measuring them at start\n"
		"                    (testevd measures them where a policy of the run prices\n"
		"                    with them: adaptive, ski2, ski-rand), and\n"
		"                    --score's T(g) (how late a timed wait ends) if F has it,\n"
		"                    and a timeout's CPU C and the host's halt window W, Lc\n"
		"                    if F has a third line, the wakes' 99th percentile P99\n"
		"                    after 10 us if a fourth\n"
		"  --save-calibration F  measure B, L(g), T(g), C, W, Lc and P99 on this machine,\n"
		"                    write them to F, then run as asked with them\n"
		"  --send            transmit the pattern (or --trace) on --port, e.g. the vhost\n"
		"                    side of a vhost-user pair, for a --source ethdev receiver\n"
		"  --send-delay S    --send: seconds between link up and the pattern (default 1)\n"
		"  --echo            --send: expect every packet back (testevd --forward,\n"
		"                    l3fwd-power) and report round trips; spins between sends\n"
		"  --peer-pid-file F --echo: report the CPU of the process whose pid is in F\n"
		"  --raw-epoll       receive on --port without evd, as l3fwd-power does\n"
		"                    (rte_epoll_wait, 10 ms timeout): the baseline\n"
		"\n"
		"Output:\n"
		"  --json FILE       the report as JSON ('-': stdout, the table then on stderr;\n"
		"                    --compare and --score: an array, one entry a policy; not\n"
		"                    the file of another report, the calibration or the trace)\n"
		"  --timeline FILE   events/s, CPU %% and time asleep %% over the run; SVG if FILE\n"
		"                    ends in .svg, else CSV (real runs: per 100 ms, from the\n"
		"                    loop's mode transitions; --score: 200 windows)\n"
		"  --linger S        keep the loop S seconds after the run, for dpdk-telemetry.py\n"
		"                    (/evd/list, /evd/stats,ID, /evd/sources,ID); 0..3600\n"
		"  --no-progress     no live progress line (shown only on a terminal)\n"
		"  -h, --help        this text\n"
		"\n"
		"Examples:\n"
		"  testevd                                 # the demo: 10 s, adaptive, ring\n"
		"  testevd --compare --rounds 3 --duration 2   # poll, intr, adaptive, side by side\n"
		"  testevd --pattern idle --duration 10    # the CPU of an idle loop\n"
		"  testevd --score --compare --trace day --events 20000   # every policy against\n"
		"                                          # the oracle (seconds; 100000: a minute)\n"
		"  testevd --score --compare --trace cap.pcap --speedup 100 --json out.json\n"
		"  testevd --trace periodic:period_us=1000,jitter_us=50 --events 5000 --timeline run.svg\n"
		"  testevd --source verbs-emu --semantics considerate --compare\n"
		"  testevd --log-level=lib.evd:debug -- --duration 1 --linger 30\n"
		"  ./scripts/ethdev-demo                   # two testevd processes over vhost-user\n"
		"\n"
		"EAL options go before '--'. Unless they set memory (--no-huge, -m, --socket-mem,\n"
		"--in-memory, --file-prefix, ...), testevd adds --no-huge -m 128 --no-shconf\n"
		"--file-prefix=testevd-PID; unless they name PCI devices (--no-pci, -a, -b, ...),\n"
		"--no-pci. So it needs no hugepages and no device. EAL pins testevd's main\n"
		"thread to one CPU; --score with --calibration (which times nothing) runs on\n"
		"the CPUs it was started on instead, unless -l, -c, --lcores or --main-lcore\n"
		"is given (these names, like the ones above, in full).\n"
		"Logs go through DPDK's log system: lib.evd, pmd.evd.ib, pmd.evd.ethdev\n"
		"(e.g. --log-level=lib.evd:debug before '--').\n"
		"\n"
		"Exit status: 0 ok; 1 an event was lost, a lost wakeup was counted, (--echo)\n"
		"a packet did not come back, or (ethdev receiver) the sender's END packet never\n"
		"came (a link down for a second ends the run: the sender is gone); 2 bad command line\n"
		"(testevd's options before '--' too); 3 EAL (its options refused too), port or\n"
		"library failure (also: --send gave up on a receiver that took nothing for 5 s).\n"
		"SIGINT or SIGTERM ends a run early (not --score); it reports and writes\n"
		"--json as at the end of --duration (\"stopped_by_signal\": true). A second\n"
		"one kills.\n"
		"See man testevd and doc/guides/testevd.md.\n",
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
	if (!trace_decimal_text(s) || *end != '\0' || errno != 0 || !isfinite(v) || v < lo || v > hi)
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

enum { O_POLICY = 256, O_DURATION, O_PATTERN, O_RATE, O_SEED, O_JSON, O_COMPARE,
       O_NOPROGRESS, O_MAXSLEEP, O_ROUNDS, O_SOURCE, O_SEMANTICS, O_DEVICE, O_PORT, O_QUEUES, O_SEND, O_SEND_DELAY, O_PROBE_ARM, O_RAW, O_SCORE, O_TRACE, O_SPEEDUP, O_EVENTS, O_LAMBDA, O_BUDGET, O_P99, O_ECHO, O_FORWARD, O_PEER_PID, O_TIMELINE, O_CALIB, O_SAVE_CALIB, O_LINGER, O_HELP };

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
	{ "echo", no_argument, NULL, O_ECHO },
	{ "timeline", required_argument, NULL, O_TIMELINE },
	{ "calibration", required_argument, NULL, O_CALIB },
	{ "linger", required_argument, NULL, O_LINGER },
	{ "save-calibration", required_argument, NULL, O_SAVE_CALIB },
	{ "forward", no_argument, NULL, O_FORWARD },
	{ "peer-pid-file", required_argument, NULL, O_PEER_PID },
	{ "probe-arm", no_argument, NULL, O_PROBE_ARM },
	{ "raw-epoll", no_argument, NULL, O_RAW },
	{ "score", no_argument, NULL, O_SCORE },
	{ "trace", required_argument, NULL, O_TRACE },
	{ "speedup", required_argument, NULL, O_SPEEDUP },
	{ "events", required_argument, NULL, O_EVENTS },
	{ "lambda", required_argument, NULL, O_LAMBDA },
	{ "budget-us", required_argument, NULL, O_BUDGET },
	{ "p99-us", required_argument, NULL, O_P99 },
	{ "send-delay", required_argument, NULL, O_SEND_DELAY },
	{ "help", no_argument, NULL, O_HELP },
	{ NULL, 0, NULL, 0 },
};

/* The option @p arg ("--name" or "--name=value") names; NULL: none of testevd's. */
static const struct option *
long_opt(const char *arg)
{
	for (const struct option *x = lo; x->name != NULL; x++) {
		size_t n = strlen(x->name);

		if (strncmp(arg, "--", 2) == 0 && strncmp(arg + 2, x->name, n) == 0 &&
		    (arg[2 + n] == '\0' || arg[2 + n] == '='))
			return x;
	}
	return NULL;
}

bool
testevd_is_option(const char *arg)
{
	const struct option *x = long_opt(arg);

	/* EAL has a --trace and a --help of its own */
	return x != NULL && x->val != O_TRACE && x->val != O_HELP;
}

bool
testevd_takes_value(const char *arg)
{
	const struct option *x = long_opt(arg);

	return x != NULL && x->has_arg == required_argument && strchr(arg, '=') == NULL;
}

int
testevd_parse_opts(int argc, char **argv, struct opts *o)
{
	const char *prog = argv[0];
	uint64_t u;
	int c;

	opterr = 0;
	optind = 0; /* glibc: a full reset, so that the parser can run again */
	while ((c = getopt_long(argc, argv, ":", lo, NULL)) != -1) {
		switch (c) {
		case O_POLICY:
			if (evd_policy_validate(optarg) < 0)
				return bad(prog, "invalid --policy '%s' (see the log line above)", optarg);
			o->policy = optarg;
			o->policy_given = true;
			break;
		case O_DURATION:
			if (parse_double(optarg, 0.1, 86400, &o->duration_s) < 0)
				return bad(prog, "invalid --duration '%s' (seconds, 0.1..86400)", optarg);
			o->pattern_given = true;
			break;
		case O_PATTERN:
			if (pattern_find(optarg) == NULL)
				return bad(prog, "unknown --pattern '%s'", optarg);
			o->pattern = optarg;
			o->pattern_given = o->shape_given = true;
			break;
		case O_RATE:
			if (parse_double(optarg, 1, 1e8, &o->rate) < 0)
				return bad(prog, "invalid --rate '%s' (events/s, 1..100000000)", optarg);
			o->pattern_given = o->shape_given = o->rate_given = true;
			break;
		case O_SEED:
			if (parse_u64(optarg, 0, UINT64_MAX, &o->seed) < 0)
				return bad(prog, "invalid --seed '%s' (unsigned integer)", optarg);
			o->seed_given = true;
			break;
		case O_MAXSLEEP:
			if (parse_u64(optarg, 1, 60u * 1000 * 1000, &u) < 0)
				return bad(prog, "invalid --max-sleep-us '%s' (1..60000000)", optarg);
			o->max_sleep_us = (uint32_t)u;
			o->max_sleep_given = true;
			break;
		case O_SOURCE:
			if (!source_known(optarg))
				return bad(prog, "unknown --source '%s' (ring, ethdev; verbs-emu and "
					   "verbs need the net-ib driver, built with libibverbs)", optarg);
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
			o->port_given = true;
			break;
		case O_QUEUES:
			if (parse_u64(optarg, 1, 16, &u) < 0)
				return bad(prog, "invalid --queues '%s' (1..16)", optarg);
			o->queues = (uint16_t)u;
			o->queues_given = true;
			break;
		case O_SEND:
			o->send = true;
			break;
		case O_PROBE_ARM:
			o->probe_arm = true;
			break;
		case O_CALIB:
		case O_SAVE_CALIB:
			if (*optarg == '\0')
				return bad(prog, "empty calibration file name%s", "");
			*(c == O_CALIB ? &o->calibration : &o->save_calibration) = optarg;
			break;
		case O_TIMELINE:
			if (*optarg == '\0')
				return bad(prog, "empty --timeline file name%s", "");
			if (strcmp(optarg, "-") == 0)
				return bad(prog, "--timeline -: a file name, FILE.svg or a CSV file (stdout "
					   "is --json -'s)%s", "");
			o->timeline = optarg;
			break;
		case O_ECHO:
			o->echo = true;
			break;
		case O_FORWARD:
			o->forward = true;
			break;
		case O_PEER_PID:
			if (*optarg == '\0')
				return bad(prog, "empty --peer-pid-file%s", "");
			o->peer_pid_file = optarg;
			break;
		case O_RAW:
			o->raw_epoll = true;
			break;
		case O_SCORE:
			o->score = true;
			break;
		case O_TRACE:
			if (*optarg == '\0')
				return bad(prog, "empty --trace%s", "");
			o->trace = optarg;
			break;
		case O_SPEEDUP:
			if (parse_double(optarg, 1e-3, 1e6, &o->speedup) < 0)
				return bad(prog, "invalid --speedup '%s' (0.001..1000000)", optarg);
			o->speedup_given = true;
			break;
		case O_EVENTS:
			if (parse_u64(optarg, 1, 50000000, &u) < 0)
				return bad(prog, "invalid --events '%s' (1..50000000)", optarg);
			o->events = u;
			o->events_given = true;
			break;
		case O_LAMBDA:
			if (parse_double(optarg, 0, 1e6, &o->lambda) < 0)
				return bad(prog, "invalid --lambda '%s' (0..1000000)", optarg);
			o->lambda_given = true;
			break;
		case O_BUDGET:
			if (parse_u64(optarg, 0, 1000000, &u) < 0)
				return bad(prog, "invalid --budget-us '%s' (0..1000000)", optarg);
			o->budget_us = u;
			o->budget_given = true;
			break;
		case O_P99:
			if (parse_u64(optarg, 1, 1000000, &u) < 0)
				return bad(prog, "invalid --p99-us '%s' (1..1000000)", optarg);
			o->p99_us = u;
			break;
		case O_LINGER:
			if (parse_double(optarg, 0, 3600, &o->linger_s) < 0)
				return bad(prog, "invalid --linger '%s' (0..3600 s)", optarg);
			o->linger_given = true;
			break;
		case O_SEND_DELAY:
			if (parse_double(optarg, 0, 60, &o->send_delay_s) < 0)
				return bad(prog, "invalid --send-delay '%s' (0..60 s)", optarg);
			o->send_delay_given = true;
			break;
		case O_ROUNDS:
			if (parse_u64(optarg, 1, 1000, &u) < 0)
				return bad(prog, "invalid --rounds '%s' (1..1000)", optarg);
			o->rounds = (unsigned int)u;
			o->rounds_given = true;
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
			testevd_usage(stdout, prog);
			return TESTEVD_HELP_SHOWN;
		case ':':
			return bad(prog, "option '%s' needs a value", argv[optind - 1]);
		default:
			/* testevd has long options only: a short one is unknown
			 * (getopt stays inside "-xyz", so optind names no
			 * argument); a long one given a value it takes none of
			 * comes back with its own code; else an unknown or an
			 * ambiguous abbreviation, the argument just passed */
			if (optopt > 0 && optopt < O_POLICY) {
				char sh[3] = { '-', (char)optopt, '\0' };

				return bad(prog, "unknown option '%s' (testevd's options are long)", sh);
			}
			for (size_t k = 0; optopt >= O_POLICY && lo[k].name != NULL; k++)
				if (lo[k].val == optopt)
					return bad(prog, "option '--%s' takes no value", lo[k].name);
			return bad(prog, "unknown or ambiguous option '%s'", argv[optind - 1]);
		}
	}
	if (optind < argc)
		return bad(prog, "unexpected argument '%s'", argv[optind]);
	if (o->rounds_given && (!o->compare || o->score))
		return bad(prog, "--rounds interleaves the real runs of --compare (--score is "
			   "deterministic: one run a policy)%s", "");
	if (strcmp(o->source, "verbs") == 0 && o->device == NULL)
		return bad(prog, "--source verbs needs --device NAME%s", "");
	if (o->device != NULL && strcmp(o->source, "verbs") != 0)
		return bad(prog, "--device applies to --source verbs only%s", "");
	if (o->semantics_given && strcmp(o->source, "verbs-emu") != 0)
		return bad(prog, "--semantics applies to --source verbs-emu only%s", "");
	if (o->send && (o->compare || strcmp(o->source, "ring") != 0))
		return bad(prog, "--send transmits on --port; it takes no --source or --compare%s", "");
	if (o->trace != NULL && o->pattern_given)
		return bad(prog, "--pattern, --rate and --duration make the pattern; a --trace has "
			   "its own arrivals (a generator takes --events N)%s", "");
	if (o->score && o->trace == NULL)
		return bad(prog, "--score needs --trace FILE|GENERATOR%s", "");
	if (o->trace == NULL && (o->rate_given || o->seed_given)) {
		const struct pattern *pat = pattern_find(o->pattern);
		bool rated = false;

		for (unsigned int p = 0; p < pat->n_phases; p++)
			rated |= pat->phases[p].kind == PHASE_RATE;
		if (!rated)
			return bad(prog, "--rate and --seed drive a pattern's timed phases: --pattern "
				   "%s has none", o->pattern);
	}
	if (o->lambda_given && !o->score)
		return bad(prog, "--lambda applies to --score only (a policy takes "
			   "adaptive:lambda_pct=N)%s", "");
	if (o->speedup_given && o->trace == NULL)
		return bad(prog, "--speedup applies to a --trace only%s", "");
	if (o->events_given && (o->trace == NULL || !trace_is_generator(o->trace)))
		return bad(prog, "--events is how many arrivals a generator makes: a file trace has "
			   "its own, a pattern --duration%s", "");
	if (o->seed_given && o->trace != NULL && !trace_is_generator(o->trace))
		return bad(prog, "--seed drives a generator or a pattern: a file trace has no "
			   "randomness%s", "");
	if (o->port_given && !o->send && !o->raw_epoll && strcmp(o->source, "ethdev") != 0)
		return bad(prog, "--port applies to --source ethdev, --send and --raw-epoll%s", "");
	if (o->queues_given && strcmp(o->source, "ethdev") != 0)
		return bad(prog, "--queues applies to --source ethdev only%s", "");
	if (o->send_delay_given && !o->send)
		return bad(prog, "--send-delay applies to --send only%s", "");
	if (o->linger_given && (o->score || o->send || o->raw_epoll))
		return bad(prog, "--linger keeps a loop for telemetry: --score, --send and "
			   "--raw-epoll run none%s", "");
	/* --compare picks its policies; --policy may tune its adaptive, no
	 * more (so there o->policy is adaptive's spec, "adaptive" unless given) */
	if (o->compare &&
	    !(strncasecmp(o->policy, "adaptive", 8) == 0 && (o->policy[8] == '\0' || o->policy[8] == ':')))
		return bad(prog, "--compare runs its own policies (poll, intr, adaptive; with --score "
			   "every one): --policy there may only tune adaptive "
			   "(adaptive:KEY=VALUE), not '%s'", o->policy);
	if (o->budget_given && !o->score)
		return bad(prog, "--budget-us applies to --score only (a policy takes "
			   "adaptive:p99_us=N)%s", "");
	if (o->p99_us != 0 && !o->score)
		return bad(prog, "--p99-us applies to --score only (a policy takes "
			   "adaptive:p99_us=N)%s", "");
	if (o->score && (o->send || o->raw_epoll || strcmp(o->source, "ring") != 0))
		return bad(prog, "--score runs no source: no --source, --send or --raw-epoll%s", "");
	if (o->raw_epoll && (o->send || o->compare || strcmp(o->source, "ring") != 0))
		return bad(prog, "--raw-epoll receives on --port by itself: no --source, --send "
			   "or --compare%s", "");
	if (o->calibration != NULL && o->save_calibration != NULL)
		return bad(prog, "--calibration loads, --save-calibration measures: give one%s", "");
	if (o->timeline != NULL && (o->compare || o->send || o->raw_epoll))
		return bad(prog, "--timeline draws one run: not with --compare, --send or --raw-epoll%s", "");
	if ((o->send || o->raw_epoll) &&
	    (o->policy_given || o->max_sleep_given || o->calibration != NULL))
		return bad(prog, "--send and --raw-epoll run no evd loop: no --policy, --max-sleep-us "
			   "or --calibration%s", "");
	if ((strcmp(o->source, "ethdev") == 0 || o->raw_epoll) &&
	    (o->trace != NULL || o->shape_given || o->seed_given))
		return bad(prog, "--source ethdev and --raw-epoll receive what a --send process "
			   "plays: --pattern, --rate, --seed and --trace go to the sender (--duration "
			   "here bounds the wait for it)%s", "");
	if (o->echo && !o->send)
		return bad(prog, "--echo applies to --send only%s", "");
	if (o->peer_pid_file != NULL && !o->echo)
		return bad(prog, "--peer-pid-file applies to --send --echo only%s", "");
	if (o->forward && strcmp(o->source, "ethdev") != 0)
		return bad(prog, "--forward applies to --source ethdev only%s", "");
	if (o->probe_arm && strcmp(o->source, "ethdev") != 0)
		return bad(prog, "--probe-arm applies to --source ethdev only%s", "");
	if (o->compare && strcmp(o->source, "ethdev") == 0)
		return bad(prog, "--compare needs a local producer; with --source ethdev run the "
			   "sender once per policy%s", "");
	return 0;
}

