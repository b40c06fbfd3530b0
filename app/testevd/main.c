/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * testevd: demo, benchmark and comparison application for evd.
 *
 *   testevd [EAL options --] [testevd options]
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <sys/stat.h>
#include <signal.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rte_eal.h>
#include <rte_ethdev.h>
#include <rte_errno.h>

#include <evd.h>
#include <evd_policy.h>

#include "calibration.h"
#include "options.h"
#include "report.h"
#include "stop.h"
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

/* Whether two of the files named on the command line are one (a report
 * written over a trace, a calibration or the other report): regular files
 * by inode where both exist, else by name; "-" (stdout), devices and pipes
 * (/dev/null twice is fine) and unset names are none. */
static bool
same_file(const char *a, const char *b)
{
	struct stat sa, sb;
	int na, nb;

	if (a == NULL || b == NULL || strcmp(a, "-") == 0 || strcmp(b, "-") == 0)
		return false;
	na = stat(a, &sa);
	nb = stat(b, &sb);
	if (na == 0 && nb == 0)
		return S_ISREG(sa.st_mode) && S_ISREG(sb.st_mode) && sa.st_dev == sb.st_dev &&
		       sa.st_ino == sb.st_ino;
	return na != 0 && nb != 0 && strcmp(a, b) == 0;
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
	static const char *const core_opts[] = { "-l", "-c", "--lcores", "--main-lcore", NULL };
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
	cpu_set_t cpus;
	bool unpin;
	int eal_argc = 0, n_eal = 0, dash = -1, rc;

	for (int i = 1; i < argc; i++)
		if (strcmp(argv[i], "--") == 0) {
			dash = i;
			break;
		}
	for (int i = 1; i < argc; i++) {
		if (testevd_takes_value(argv[i])) {
			i++; /* its value, whatever it reads (--trace -h: a file) */
			continue;
		}
		if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
			if (dash < 0 || i > dash) {
				testevd_usage(stdout, argv[0]);
				return 0;
			}
		}
	}

	/* EAL options: what the user gave before '--', plus defaults that
	 * make testevd run anywhere (no hugepages, no PCI). */
	n_eal = dash < 0 ? 0 : dash - 1;
	if (n_eal > 48) {
		fprintf(stderr, "%s: too many EAL options\n", argv[0]);
		return EXIT_USAGE;
	}
	for (int i = 1; i <= n_eal; i++)
		if (testevd_is_option(argv[i])) {
			fprintf(stderr, "%s: %s is testevd's: it goes after '--' (EAL's options go "
				"before it)\n", argv[0], argv[i]);
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
		stop_on_signals();
	/* A vhost-user backend that dies makes virtio-user's next write to its
	 * socket raise SIGPIPE (22.11's vhost_user_write sends without
	 * MSG_NOSIGNAL), which would kill the receiver before it reports. */
	signal(SIGPIPE, SIG_IGN);
	{
		const char *const name[] = { "--json", "--timeline", "--save-calibration",
					     "--calibration", "--trace" };
		const char *const path[] = { o.json, o.timeline, o.save_calibration, o.calibration,
					     o.trace != NULL && !trace_is_generator(o.trace) ? o.trace
											     : NULL };

		/* each output (the first three) against every other file */
		for (int i = 0; i < 3; i++)
			for (int j = i + 1; j < 5; j++)
				if (same_file(path[i], path[j])) {
					fprintf(stderr, "%s: %s and %s name the same file, %s: "
						"give each its own\n", argv[0], name[i], name[j],
						path[i]);
					return EXIT_USAGE;
				}
	}
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
	/* EAL pins this thread to the main lcore's CPU, so scorings run side
	 * by side would share one; one on a given calibration times nothing, so it
	 * keeps the CPUs it was started on, unless told which to use */
	unpin = o.score && o.calibration != NULL && !has_opt(n_eal + 1, argv, core_opts) &&
		sched_getaffinity(0, sizeof(cpus), &cpus) == 0;
	atexit(remove_runtime_dir);
	rc = rte_eal_init(eal_argc, eal_argv);
	if (rc < 0) {
		fprintf(stderr, "%s: EAL initialisation failed: %s\n", argv[0], rte_strerror(rte_errno));
		rc = EXIT_RUNTIME;
		goto out;
	}
	if (unpin)
		(void)sched_setaffinity(0, sizeof(cpus), &cpus);
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
	} else if (!o.send && !o.raw_epoll &&
		   (o.compare || o.score || evd_policy_needs_env(o.policy) == 1)) {
		/* the library prices with defaults unless asked to measure */
		(void)evd_policy_env_calibrate();
	}
	rc = modes[o.score ? 4 : o.raw_epoll ? 3 : o.send ? 2 : o.compare ? 1 : 0]->run(&o);
out_eal:
	rte_eal_cleanup();
out:
	if (o.trace_data != NULL)
		trace_free(&trace);
	return rc;
}
