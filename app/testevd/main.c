/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * testevd: demo, benchmark and comparison application for evd.
 *
 *   testevd [EAL options --] [testevd options]
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <sys/stat.h>
#include <signal.h>
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
#include "trace.h"

static const struct mode *const modes[] = { &mode_demo, &mode_compare, &mode_send, &mode_raw,
					    &mode_score };

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

static bool
has_opt(int argc, char **argv, const char *const *names)
{
	for (int i = 1; i < argc; i++)
		for (const char *const *n = names; *n; n++)
			if (strncmp(argv[i], *n, strlen(*n)) == 0)
				return true;
	return false;
}

/* --calibration FILE: a line "B L(10us) L(100us) L(1ms) L(10ms)" in ns, and
 * optionally a second "T(10us) T(100us) T(1ms) T(10ms)" (how late a timed
 * wait ends: --score's naps and timeouts; without it L stands in), and
 * after it optionally a third "C(100us) C(1ms) Lc W" (a timeout's CPU, 0 0
 * for B; the host's halt window W, a sleep past it or within it after a
 * longer one waking in at least Lc, 0 0 for none: evd_policy_env), with
 * '#' comments and blank lines, as --save-calibration writes them. Anything else is refused, with
 * the line: a fourth line of numbers, a sign, a value out of range (B 1 ns
 * to 10 ms, the others up to 1 s: the most a machine's sleep or wake can
 * plausibly cost; beyond, the model's figures overflow), a C at one point
 * only, a W without its Lc. */
#define CAL_B_MAX_NS 10000000ull
#define CAL_L_MAX_NS 1000000000ull
#define CAL_FORMAT "a line of 5 numbers in ns, B L(10us) L(100us) L(1ms) L(10ms), then " \
	"optionally one of 4, T(10us) T(100us) T(1ms) T(10ms), then optionally one of 4, " \
	"C(100us) C(1ms) Lc W"

/* n unsigned numbers in ns from p into v, the first a B if @p b; NULL or why not. */
static const char *
calibration_numbers(const char *p, int n, bool b, unsigned long long *v)
{
	char *end;

	for (int k = 0; k < n; k++) {
		p += strspn(p, " \t");
		if (*p < '0' || *p > '9')
			return n == 5 ? "expected 5 unsigned numbers in ns" : "expected 4 unsigned numbers in ns";
		errno = 0;
		v[k] = strtoull(p, &end, 10);
		if (strchr(" \t\r\n", *end) == NULL) /* also "0x10", "5e3" */
			return n == 5 ? "expected 5 unsigned numbers in ns" : "expected 4 unsigned numbers in ns";
		if (errno != 0 || v[k] > (b && k == 0 ? CAL_B_MAX_NS : CAL_L_MAX_NS) || (b && k == 0 && v[k] == 0))
			return "a value out of range (B from 1 ns to 10 ms, the others up to 1 s)";
		p = end;
	}
	if (p[strspn(p, " \t\r\n")] != '\0')
		return n == 5 ? "more than 5 numbers, or text after them"
			      : "more than 4 numbers, or text after them";
	return NULL;
}

static int
calibration_load(const char *path)
{
	struct evd_policy_env e = { .wake_at_ns = { 10000, 100000, 1000000, 10000000 } };
	unsigned long long v[5], tv[4], xv[4];
	char *line = NULL;
	size_t cap = 0, lineno = 0;
	FILE *f = fopen(path, "r");
	int got = 0, rc;
	const char *why = NULL;
	ssize_t len;

	if (f == NULL) {
		fprintf(stderr, "testevd: --calibration %s: %s\n", path, strerror(errno));
		return EXIT_USAGE;
	}
	while (why == NULL && (len = getline(&line, &cap, f)) > 0) {
		char *p = line + strspn(line, " \t\r\n");

		lineno++;
		if (memchr(line, '\0', (size_t)len) != NULL) {
			why = "a NUL byte";
			break;
		}
		if (*p == '#' || *p == '\0')
			continue;
		if (got == 3) {
			why = "a fourth line of numbers (B and the 4 L, then the 4 T, then C C Lc W)";
			break;
		}
		why = got == 0 ? calibration_numbers(p, 5, true, v)
			       : calibration_numbers(p, 4, false, got == 1 ? tv : xv);
		if (why == NULL && got == 0 && (v[2] < v[1] || v[3] < v[2] || v[4] < v[3]))
			why = "L falling as the time asleep grows (a longer sleep never wakes faster)";
		if (why == NULL && got == 2 && ((xv[0] == 0) != (xv[1] == 0) || (xv[3] != 0 && xv[2] == 0)))
			why = "C(100us) and C(1ms) both 0 or neither, and W only with its Lc";
		got += why == NULL;
	}
	free(line);
	if (why == NULL && ferror(f)) { /* a directory, an I/O error: not an empty file */
		int e = errno ? errno : EIO;

		fclose(f);
		fprintf(stderr, "testevd: --calibration %s: %s\n", path, strerror(e));
		return EXIT_USAGE;
	}
	fclose(f);
	if (why != NULL || !got) {
		char at[32] = ""; /* the line at fault, if one is */

		if (why != NULL)
			snprintf(at, sizeof(at), "line %zu: ", lineno);
		fprintf(stderr, "testevd: --calibration %s: %s%s; the file is " CAL_FORMAT "\n", path,
			at, why != NULL ? why : "no line of numbers");
		return EXIT_USAGE;
	}
	e.sleep_wake_ns = v[0];
	for (int k = 0; k < EVD_ENV_WAKE_POINTS; k++)
		e.wake_ns[k] = v[k + 1];
	if (got == 3) {
		/* C (0 0: B stands in), and T at its points: the second line's,
		 * so that adaptive prices a timeout's end as --score charges it */
		e.timeout_at_ns[0] = 100000;
		e.timeout_at_ns[1] = 1000000;
		e.timeout_ns[0] = xv[0];
		e.timeout_ns[1] = xv[1];
		e.timeout_late_ns[0] = tv[1];
		e.timeout_late_ns[1] = tv[2];
		if (tv[1] == 0 || tv[2] == 0)
			e.timeout_late_ns[0] = e.timeout_late_ns[1] = 0;
		e.cold_wake_ns = xv[2];
		e.window_ns = xv[3];
	}
	rc = evd_policy_env_set(&e);
	if (rc < 0) {
		fprintf(stderr, "testevd: --calibration %s: %s\n", path, strerror(-rc));
		return EXIT_RUNTIME;
	}
	if (got >= 2) {
		uint64_t t[EVD_ENV_WAKE_POINTS];

		for (int k = 0; k < EVD_ENV_WAKE_POINTS; k++)
			t[k] = tv[k];
		timer_late_set(t);
	} else {
		timer_late_from_l(&e);
	}
	return 0;
}

static int
calibration_save(const char *path)
{
	const struct evd_policy_env *e = evd_policy_env_get();
	uint64_t t[EVD_ENV_WAKE_POINTS];
	FILE *f;

	if (timer_late_measure() < 0)
		return EXIT_RUNTIME;
	timer_late_get(t);
	f = fopen(path, "w");
	if (f == NULL) {
		fprintf(stderr, "testevd: --save-calibration %s: %s\n", path, strerror(errno));
		return EXIT_USAGE;
	}
	fprintf(f, "# evd calibration (ns): B, then the wake latency L after 10 us, 100 us, 1 ms, 10 ms\n"
		"%" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 "\n"
		"# how late a timed wait ends, T, after 10 us, 100 us, 1 ms, 10 ms (naps, timeouts)\n"
		"%" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 "\n"
		"# a timeout's CPU C after 100 us, 1 ms (0 0: B stands in); a sleep past the host's\n"
		"# halt window W, or within it after a longer one, wakes in at least Lc (W 0: no window)\n"
		"%" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 "\n", e->sleep_wake_ns,
		e->wake_ns[0], e->wake_ns[1], e->wake_ns[2], e->wake_ns[3], t[0], t[1], t[2], t[3],
		e->timeout_ns[0], e->timeout_ns[1], e->cold_wake_ns, e->window_ns);
	if (fclose(f) != 0) {
		fprintf(stderr, "testevd: --save-calibration %s: %s\n", path, strerror(errno));
		return EXIT_RUNTIME;
	}
	return 0;
}

int testevd_stop;

static void
stop_signals(void (*handler)(int))
{
	struct sigaction sa = { .sa_handler = handler };

	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
}

/* SIGINT, SIGTERM: end the run and report; a second one of either kills
 * (both go back to the default here; sigaction is async-signal-safe). */
static void
on_stop_signal(int sig)
{
	__atomic_store_n(&testevd_stop, sig, __ATOMIC_RELAXED);
	stop_signals(SIG_DFL);
}


/* Whether an output file can be written, asked before the run: without
 * touching a report already there (a run refused later for bad input must
 * not have emptied it), one that exists must be writable; else create it
 * and take it away again. */
static bool
writable(const char *prog, const char *opt, const char *path)
{
	struct stat st;
	int fd = stat(path, &st) == 0 ? (S_ISDIR(st.st_mode) ? (errno = EISDIR, -1) :
					 access(path, W_OK) == 0 ? INT_MAX : -1)
				      : open(path, O_WRONLY | O_CREAT | O_EXCL, 0644);

	if (fd < 0) {
		fprintf(stderr, "%s: cannot write %s '%s': %s\n", prog, opt, path, strerror(errno));
		return false;
	}
	if (fd != INT_MAX) {
		close(fd);
		unlink(path);
	}
	return true;
}

int
main(int argc, char **argv)
{
	static const char *const mem_opts[] = { "--no-huge", "--huge-dir", "--socket-mem", "-m",
						"--in-memory", "--file-prefix", "--no-shconf",
						"--single-file-segments", "--legacy-mem", NULL };
	static const char *const pci_opts[] = { "--no-pci", "-a", "--allow", "-b", "--block", NULL };
	struct trace trace;
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
		.speedup = 1,
		.lambda = 1,
		.events = 100000,
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
				testevd_usage(stdout, argv[0]);
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
		rc = testevd_parse_opts(app_argc, app_argv, &o);
		if (rc == TESTEVD_HELP_SHOWN)
			return 0;
		if (rc != 0)
			return rc;
	}
	/* From here a stop signal ends the run and it reports (one during
	 * EAL initialisation ends the run as soon as it starts); --score
	 * runs in virtual time and keeps the default (it ends at once). */
	if (!o.score)
		stop_signals(on_stop_signal);
	/* A vhost-user backend that dies makes virtio-user's next write to its
	 * socket raise SIGPIPE (22.11's vhost_user_write sends without
	 * MSG_NOSIGNAL), which would kill the receiver before it reports. */
	signal(SIGPIPE, SIG_IGN);
	if ((o.json != NULL && strcmp(o.json, "-") != 0 && !writable(argv[0], "--json", o.json)) ||
	    (o.timeline != NULL && !writable(argv[0], "--timeline", o.timeline)))
		return EXIT_USAGE;
	if (o.json != NULL && strcmp(o.json, "-") == 0) {
		/* --json -: the JSON alone on stdout, what testevd prints on stderr */
		int fd = dup(STDOUT_FILENO);

		fflush(stdout);
		if (fd < 0 || (report_json_stdout = fdopen(fd, "w")) == NULL ||
		    dup2(STDERR_FILENO, STDOUT_FILENO) < 0) {
			fprintf(stderr, "%s: --json -: %s\n", argv[0], strerror(errno));
			return EXIT_RUNTIME;
		}
	}

	/* a trace that cannot be read or made is bad input: say so now, not
	 * after an empty run */
	if (o.trace != NULL) {
		uint32_t ids[TESTEVD_RINGS_MAX];

		if (trace_load(o.trace, o.seed, o.events, o.speedup, &trace) < 0)
			return EXIT_USAGE;
		o.trace_data = &trace;
		if (!o.score && !o.send && !o.raw_epoll && strcmp(o.source, "ring") == 0 &&
		    trace_source_ids(&trace, ids, TESTEVD_RINGS_MAX) < 0) {
			fprintf(stderr, "%s: trace %s: more than %d source ids; the ring source "
				"replays up to %d (one ring each)\n", argv[0], o.trace,
				TESTEVD_RINGS_MAX, TESTEVD_RINGS_MAX);
			trace_free(&trace);
			return EXIT_USAGE;
		}
	}
	atexit(remove_runtime_dir);
	rc = rte_eal_init(eal_argc, eal_argv);
	if (rc < 0) {
		fprintf(stderr, "%s: EAL initialisation failed: %s\n", argv[0], rte_strerror(rte_errno));
		rc = EXIT_RUNTIME;
		goto out;
	}
	snprintf(runtime_dir, sizeof(runtime_dir), "%s", rte_eal_get_runtime_dir());
	/* the port first: a run would calibrate before finding it missing */
	if ((o.send || o.raw_epoll || strcmp(o.source, "ethdev") == 0) &&
	    !rte_eth_dev_is_valid_port(o.port)) {
		fprintf(stderr, "%s: --port %u: no such port (%u ports; give one with --vdev or -a)\n",
			argv[0], o.port, rte_eth_dev_count_avail());
		rc = EXIT_RUNTIME;
		goto out_eal;
	}
	if (o.calibration != NULL || o.save_calibration != NULL) {
		rc = o.calibration != NULL ? calibration_load(o.calibration)
					   : calibration_save(o.save_calibration);
		if (rc != 0)
			goto out_eal;
	}
	rc = modes[o.score ? 4 : o.raw_epoll ? 3 : o.send ? 2 : o.compare ? 1 : 0]->run(&o);
out_eal:
	rte_eal_cleanup();
out:
	if (o.trace_data != NULL)
		trace_free(&trace);
	return rc;
}
