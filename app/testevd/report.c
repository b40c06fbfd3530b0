/* SPDX-License-Identifier: BSD-3-Clause */
/* A run's result: pooled over runs, printed as the table and the JSON report. */
#include <errno.h>
#include <inttypes.h>
#include <string.h>

#include <evd_policy.h>

#include "hist.h"
#include "report.h"

void
result_merge(struct result *acc, const struct result *one)
{
	if (acc->runs == 0) {
		memcpy(acc->policy, one->policy, sizeof(acc->policy));
		acc->source = one->source;
		acc->pattern = one->pattern;
	}
	acc->runs++;
	acc->events_sent += one->events_sent;
	acc->events_delivered += one->events_delivered;
	acc->events_lost += one->events_lost;
	acc->lost_wakeups += one->lost_wakeups;
	acc->errors += one->errors;
	acc->incomplete |= one->incomplete;
	acc->link_lost |= one->link_lost;
	acc->stopped |= one->stopped;
	acc->ring_full += one->ring_full;
	acc->rings = one->rings;
	for (uint32_t k = 0; k < one->rings && k < TESTEVD_RINGS_MAX; k++)
		acc->ring_events[k] += one->ring_events[k];
	acc->forwarded += one->forwarded;
	acc->sleeps += one->sleeps;
	acc->naps += one->naps;
	acc->wakeups += one->wakeups;
	acc->spurious_wakeups += one->spurious_wakeups;
	acc->repoll_hits += one->repoll_hits;
	acc->sleep_timeouts += one->sleep_timeouts;
	acc->mode_switches += one->mode_switches;
	acc->wall_ns += one->wall_ns;
	acc->cpu_ns += one->cpu_ns;
	for (int m = 0; m < 3; m++)
		acc->mode_ns[m] += one->mode_ns[m];
	for (unsigned int b = 0; b < HIST_BUCKETS; b++)
		acc->lat.b[b] += one->lat.b[b];
	acc->lat.n += one->lat.n;
	if (one->lat.max > acc->lat.max)
		acc->lat.max = one->lat.max;
}

void
result_finish(struct result *r)
{
	double tot = (double)(r->mode_ns[0] + r->mode_ns[1] + r->mode_ns[2]);

	r->duration_s = (double)r->wall_ns / 1e9;
	r->cpu_pct = r->wall_ns ? 100.0 * (double)r->cpu_ns / (double)r->wall_ns : 0;
	r->events_per_s = r->wall_ns ? (double)r->events_delivered / r->duration_s : 0;
	r->lat_us[0] = (double)hist_pct(&r->lat, 0.50) / 1000.0;
	r->lat_us[1] = (double)hist_pct(&r->lat, 0.99) / 1000.0;
	r->lat_us[2] = (double)hist_pct(&r->lat, 0.999) / 1000.0;
	r->lat_us[3] = (double)r->lat.max / 1000.0;
	for (int m = 0; m < 3; m++)
		r->mode_pct[m] = tot > 0 ? 100.0 * (double)r->mode_ns[m] / tot : 0;
}

#define ROW(label, fmt, field)                                  \
	do {                                                    \
		fprintf(f, "  %-22s", label);                   \
		for (unsigned int i = 0; i < n; i++)            \
			fprintf(f, " %14" fmt, r[i].field);     \
		fputc('\n', f);                                 \
	} while (0)

/* The process's cost model, if a policy needed one (or it was given). */
static void
report_calibration(FILE *f)
{
	bool given = false;
	const struct evd_policy_env *e = evd_policy_env_peek(&given);

	if (e == NULL)
		return;
	fprintf(f, "\n  cost model (%s): B %.1f us; wake latency L after 10 us, 100 us, 1 ms, "
		"10 ms: %.1f %.1f %.1f %.1f us\n",
		given ? "given by --calibration" : evd_policy_env_origin(),
		(double)e->sleep_wake_ns / 1e3, (double)e->wake_ns[0] / 1e3,
		(double)e->wake_ns[1] / 1e3, (double)e->wake_ns[2] / 1e3, (double)e->wake_ns[3] / 1e3);
	fprintf(f, "  timeout CPU C after 100 us, 1 ms: %.1f %.1f us%s; host halt window %.0f us "
		"(a sleep past it, or within it after a longer one, wakes in at least %.1f us)%s\n",
		evd_policy_env_timeout_ns(e, 100000) / 1e3, evd_policy_env_timeout_ns(e, 1000000) / 1e3,
		e->timeout_ns[0] == 0 ? " (B's: not measured)" : "", (double)e->window_ns / 1e3,
		(double)e->cold_wake_ns / 1e3, e->window_ns == 0 ? ", none" : "");
}

void
report_table(FILE *f, const struct result *r, unsigned int n)
{
	bool ring = false; /* the row of full rings means nothing for other sources */

	for (unsigned int i = 0; i < n; i++)
		ring |= r[i].source != NULL && strcmp(r[i].source, "ring") == 0;
	fprintf(f, "\n  %-22s", "policy");
	for (unsigned int i = 0; i < n; i++)
		fprintf(f, " %14.14s", r[i].policy);
	fprintf(f, "\n  %-22s", "");
	for (unsigned int i = 0; i < n; i++)
		fprintf(f, " %14s", "--------------");
	fputc('\n', f);
	ROW("source", "s", source);
	ROW("pattern", "s", pattern);
	ROW("duration (s)", ".2f", duration_s);
	ROW("events sent", PRIu64, events_sent);
	ROW("events delivered", PRIu64, events_delivered);
	ROW("events lost", PRIu64, events_lost);
	ROW("delivered/s", ".0f", events_per_s);
	ROW("cpu (%)", ".2f", cpu_pct);
	ROW("latency p50 (us)", ".2f", lat_us[0]);
	ROW("latency p99 (us)", ".2f", lat_us[1]);
	ROW("latency p99.9 (us)", ".2f", lat_us[2]);
	ROW("latency max (us)", ".2f", lat_us[3]);
	ROW("time polling (%)", ".1f", mode_pct[0]);
	ROW("time pausing (%)", ".1f", mode_pct[1]);
	ROW("time sleeping (%)", ".1f", mode_pct[2]);
	ROW("sleeps", PRIu64, sleeps);
	ROW("naps", PRIu64, naps);
	ROW("wakeups", PRIu64, wakeups);
	ROW("spurious wakeups", PRIu64, spurious_wakeups);
	ROW("re-poll hits", PRIu64, repoll_hits);
	ROW("sleep timeouts", PRIu64, sleep_timeouts);
	ROW("mode switches", PRIu64, mode_switches);
	if (ring)
		ROW("ring full (retried)", PRIu64, ring_full);
	ROW("source errors", PRIu64, errors);
	ROW("lost wakeups", PRIu64, lost_wakeups);
	report_calibration(f);
	fputc('\n', f);
}

void
report_json_calibration(FILE *f)
{
	bool given = false;
	const struct evd_policy_env *e = evd_policy_env_peek(&given);

	if (e == NULL) {
		fputs("\"calibration\": null", f);
		return;
	}
	fprintf(f, "\"calibration\": {\"given\": %s, \"b_ns\": %" PRIu64 ", \"wake_at_ns\": [",
		given ? "true" : "false", e->sleep_wake_ns);
	for (int k = 0; k < EVD_ENV_WAKE_POINTS; k++)
		fprintf(f, "%s%" PRIu64, k ? ", " : "", e->wake_at_ns[k]);
	fputs("], \"wake_ns\": [", f);
	for (int k = 0; k < EVD_ENV_WAKE_POINTS; k++)
		fprintf(f, "%s%" PRIu64, k ? ", " : "", e->wake_ns[k]);
	fprintf(f, "], \"timeout_ns\": [%" PRIu64 ", %" PRIu64 "], \"window_ns\": %" PRIu64
		", \"cold_wake_ns\": %" PRIu64 ", \"wake_p99_ns\": %" PRIu64, e->timeout_ns[0],
		e->timeout_ns[1], e->window_ns, e->cold_wake_ns, e->wake_p99_ns);
	/* how late naps and timeouts end, as policies and --score price them */
	fprintf(f, ", \"timer_late_from\": \"%s\", \"timer_late_ns\": [",
		e->timeout_late_ns[0] == 0 ? "L" : given ? "given" : "measured");
	for (int k = 0; k < EVD_ENV_WAKE_POINTS; k++)
		fprintf(f, "%s%.0f", k ? ", " : "",
			evd_policy_env_timeout_late_ns(e, e->wake_at_ns[k]));
	fputs("]}", f);
}

void
report_json_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (const unsigned char *c = (const unsigned char *)s; *c; c++) {
		if (*c == '"' || *c == '\\')
			fprintf(f, "\\%c", *c);
		else if (*c < 0x20)
			fprintf(f, "\\u%04x", *c);
		else
			fputc(*c, f);
	}
	fputc('"', f);
}

FILE *report_json_stdout;

FILE *
report_json_open(const char *path)
{
	if (strcmp(path, "-") == 0)
		return report_json_stdout != NULL ? report_json_stdout : stdout;
	return fopen(path, "w");
}

int
report_json_close(FILE *f)
{
	int rc = ferror(f) ? -EIO : 0;

	if (f == stdout || f == report_json_stdout) {
		if (fflush(f) != 0 && rc == 0)
			rc = -errno;
	} else if (fclose(f) != 0 && rc == 0) {
		rc = -errno;
	}
	return rc;
}

static void
json_one(FILE *f, const struct result *r, const char *ind)
{
	fprintf(f, "%s{\n", ind);
	fprintf(f, "%s  \"policy\": ", ind);
	report_json_str(f, r->policy);
	fputs(",\n", f);
	/* the process's cost model (measured or given): null if no policy
	 * of the process needed one */
	fprintf(f, "%s  ", ind);
	report_json_calibration(f);
	fputs(",\n", f);
	fprintf(f, "%s  \"source\": ", ind);
	report_json_str(f, r->source);
	fprintf(f, ",\n%s  \"pattern\": ", ind);
	report_json_str(f, r->pattern);
	fputs(",\n", f);
	fprintf(f, "%s  \"runs\": %u,\n", ind, r->runs);
	fprintf(f, "%s  \"duration_s\": %.3f,\n", ind, r->duration_s);
	fprintf(f, "%s  \"events_sent\": %" PRIu64 ",\n", ind, r->events_sent);
	fprintf(f, "%s  \"events_delivered\": %" PRIu64 ",\n", ind, r->events_delivered);
	fprintf(f, "%s  \"events_lost\": %" PRIu64 ",\n", ind, r->events_lost);
	fprintf(f, "%s  \"events_per_s\": %.1f,\n", ind, r->events_per_s);
	if (r->round_events_per_s != NULL) { /* --compare: each round's, in order */
		fprintf(f, "%s  \"round_events_per_s\": [", ind);
		for (unsigned int k = 0; k < r->n_rounds; k++)
			fprintf(f, "%s%.1f", k ? ", " : "", r->round_events_per_s[k]);
		fprintf(f, "],\n");
	}
	fprintf(f, "%s  \"lost_wakeups\": %" PRIu64 ",\n", ind, r->lost_wakeups);
	fprintf(f, "%s  \"errors\": %" PRIu64 ",\n", ind, r->errors);
	fprintf(f, "%s  \"stopped_by_signal\": %s,\n", ind, r->stopped ? "true" : "false");
	fprintf(f, "%s  \"link_lost\": %s,\n", ind, r->link_lost ? "true" : "false");
	if (r->arm_probe != NULL)
		fprintf(f, "%s  \"arm_probe\": \"%s\",\n", ind, r->arm_probe);
	fprintf(f, "%s  \"cpu_pct\": %.3f,\n", ind, r->cpu_pct);
	if (r->echo) {
		fprintf(f, "%s  \"rtt_over_5ms\": %" PRIu64 ",\n", ind, r->rtt_over_5ms);
		fprintf(f, "%s  \"sender_stalls\": %" PRIu64 ", \"sender_stall_max_us\": %.0f,\n", ind,
			r->sender_stalls, r->sender_stall_max_us);
		/* every round trip; then the count of those the sender took
		 * late (its own delay is in them), and the others */
		hist_json(f, ind, "rtt_histogram_ns", &r->lat);
		fprintf(f, "%s  \"rtt_sender_late\": %" PRIu64 ",\n", ind, r->rtt_sender_late);
		hist_json(f, ind, "rtt_prompt_histogram_ns", &r->lat_prompt);
	}
	if (r->has_peer_cpu)
		fprintf(f, "%s  \"peer_cpu_pct\": %.3f,\n", ind, r->peer_cpu_pct);
	fprintf(f, "%s  \"latency_us\": {\"p50\": %.3f, \"p99\": %.3f, \"p999\": %.3f, \"max\": %.3f},\n",
		ind, r->lat_us[0], r->lat_us[1], r->lat_us[2], r->lat_us[3]);
	fprintf(f, "%s  \"sleeps\": %" PRIu64 ",\n", ind, r->sleeps);
	fprintf(f, "%s  \"naps\": %" PRIu64 ",\n", ind, r->naps);
	fprintf(f, "%s  \"wakeups\": %" PRIu64 ",\n", ind, r->wakeups);
	fprintf(f, "%s  \"spurious_wakeups\": %" PRIu64 ",\n", ind, r->spurious_wakeups);
	fprintf(f, "%s  \"repoll_hits\": %" PRIu64 ",\n", ind, r->repoll_hits);
	fprintf(f, "%s  \"sleep_timeouts\": %" PRIu64 ",\n", ind, r->sleep_timeouts);
	fprintf(f, "%s  \"mode_switches\": %" PRIu64 ",\n", ind, r->mode_switches);
	fprintf(f, "%s  \"ring_full\": %" PRIu64 ",\n", ind, r->ring_full);
	if (r->rings > 1) { /* a trace's source ids, one ring each */
		fprintf(f, "%s  \"ring_events\": [", ind);
		for (uint32_t k = 0; k < r->rings; k++)
			fprintf(f, "%s%" PRIu64, k ? ", " : "", r->ring_events[k]);
		fprintf(f, "],\n");
	}
	if (r->forwarded != 0)
		fprintf(f, "%s  \"forwarded\": %" PRIu64 ",\n", ind, r->forwarded);
	fprintf(f, "%s  \"mode_time_pct\": {\"poll\": %.2f, \"pause\": %.2f, \"sleep\": %.2f}\n",
		ind, r->mode_pct[0], r->mode_pct[1], r->mode_pct[2]);
	fprintf(f, "%s}", ind);
}

int
report_json(const char *path, const struct result *r, unsigned int n, bool array)
{
	FILE *f = report_json_open(path);
	int rc;

	if (f == NULL) {
		rc = -errno;
		goto out;
	}
	if (array) {
		fputs("[\n", f);
		for (unsigned int i = 0; i < n; i++) {
			json_one(f, &r[i], "  ");
			fputs(i + 1 < n ? ",\n" : "\n", f);
		}
		fputs("]\n", f);
	} else {
		json_one(f, &r[0], "");
		fputc('\n', f);
	}
	rc = report_json_close(f);
out:
	if (rc < 0) /* every mode's report: said here, once */
		fprintf(stderr, "testevd: cannot write %s: %s\n", path, strerror(-rc));
	return rc;
}
