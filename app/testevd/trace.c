/* SPDX-License-Identifier: BSD-3-Clause */
/* Arrival traces. See trace.h. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <pcap/pcap.h>

#include "testevd.h"
#include "trace.h"

#define MAX_EVENTS (50u * 1000 * 1000)

static int
push(struct trace *t, size_t *cap, uint64_t gap, uint32_t src)
{
	if (t->n == *cap) {
		size_t c = *cap ? *cap * 2 : 1024;
		uint64_t *g;
		uint32_t *s;

		if (c > MAX_EVENTS)
			return -E2BIG;
		g = realloc(t->gap_ns, c * sizeof(*g));
		if (g == NULL)
			return -ENOMEM;
		t->gap_ns = g;
		s = realloc(t->source, c * sizeof(*s));
		if (s == NULL)
			return -ENOMEM;
		t->source = s;
		*cap = c;
	}
	t->gap_ns[t->n] = gap;
	t->source[t->n] = src;
	t->n++;
	return 0;
}

void
trace_free(struct trace *t)
{
	free(t->gap_ns);
	free(t->source);
	memset(t, 0, sizeof(*t));
}

int
trace_parse_text(const char *buf, size_t len, const char *name, struct trace *t)
{
	size_t cap = 0, line = 0, i = 0;
	int rc = 0;

	memset(t, 0, sizeof(*t));
	snprintf(t->name, sizeof(t->name), "%s", name);
	while (i < len && rc == 0) {
		char l[128];
		size_t k = 0;
		char *p, *end;
		unsigned long long gap, src = 0;

		line++;
		while (i < len && buf[i] != '\n') {
			if (k < sizeof(l) - 1)
				l[k++] = buf[i];
			else
				rc = -EINVAL; /* line too long */
			i++;
		}
		i++;
		l[k] = '\0';
		if (rc < 0) {
			fprintf(stderr, "trace %s: line %zu: longer than %zu bytes\n", name, line,
				sizeof(l) - 1);
			break;
		}
		if ((p = strchr(l, '#')) != NULL)
			*p = '\0';
		p = l;
		while (*p == ' ' || *p == '\t' || *p == '\r')
			p++;
		if (*p == '\0')
			continue;
		if (*p < '0' || *p > '9') {
			fprintf(stderr, "trace %s: line %zu: expected a gap in nanoseconds\n", name, line);
			rc = -EINVAL;
			break;
		}
		errno = 0;
		gap = strtoull(p, &end, 10);
		if (errno != 0 || gap > UINT64_C(3600000000000)) {
			fprintf(stderr, "trace %s: line %zu: gap out of range (at most an hour)\n", name,
				line);
			rc = -EINVAL;
			break;
		}
		p = end;
		while (*p == ' ' || *p == '\t')
			p++;
		if (*p >= '0' && *p <= '9') {
			src = strtoull(p, &end, 10);
			if (errno != 0 || src > UINT32_MAX) {
				fprintf(stderr, "trace %s: line %zu: bad source id\n", name, line);
				rc = -EINVAL;
				break;
			}
			p = end;
		}
		while (*p == ' ' || *p == '\t' || *p == '\r')
			p++;
		if (*p != '\0') {
			fprintf(stderr, "trace %s: line %zu: unexpected '%s'\n", name, line, p);
			rc = -EINVAL;
			break;
		}
		rc = push(t, &cap, gap, (uint32_t)src);
	}
	if (rc == 0 && t->n == 0) {
		fprintf(stderr, "trace %s: no arrivals\n", name);
		rc = -EINVAL;
	}
	if (rc < 0)
		trace_free(t);
	return rc;
}

static int
load_pcap(const char *path, struct trace *t)
{
	char err[PCAP_ERRBUF_SIZE];
	pcap_t *pc = pcap_open_offline_with_tstamp_precision(path, PCAP_TSTAMP_PRECISION_NANO, err);
	struct pcap_pkthdr *h;
	const u_char *data;
	uint64_t prev = 0;
	size_t cap = 0;
	int rc = 0, r;

	if (pc == NULL) {
		fprintf(stderr, "trace %s: %s\n", path, err);
		return -EINVAL;
	}
	memset(t, 0, sizeof(*t));
	snprintf(t->name, sizeof(t->name), "%s", strrchr(path, '/') ? strrchr(path, '/') + 1 : path);
	while (rc == 0 && (r = pcap_next_ex(pc, &h, &data)) == 1) {
		uint64_t ts = (uint64_t)h->ts.tv_sec * 1000000000ull + (uint64_t)h->ts.tv_usec;

		rc = push(t, &cap, t->n == 0 || ts < prev ? 0 : ts - prev, 0);
		prev = ts;
	}
	pcap_close(pc);
	if (rc == 0 && t->n < 2)
		rc = -EINVAL;
	if (rc < 0)
		trace_free(t);
	return rc;
}

/* ---- generators ---- */

static double
uniform(uint64_t *s)
{
	return ((double)(testevd_xorshift(s) >> 11) + 0.5) / 9007199254740992.0;
}

static double
expo(uint64_t *s, double mean)
{
	return -log(uniform(s)) * mean;
}

struct gen_args {
	double rate, on_ms, off_ms, alpha, mean_us, period_us, jitter_us, sources;
};

#define GEN_PERIOD_STEP 0.41 /* periodic, sources=N: source k's period is P (1 + 0.41 k) */

static int
gen_param(const char *name, char *params, struct gen_args *a)
{
	for (char *item = strtok(params, ","); item != NULL; item = strtok(NULL, ",")) {
		char *eq = strchr(item, '='), *end;
		double v;
		double *dst = NULL;

		if (eq == NULL) {
			fprintf(stderr, "trace generator %s: '%s' is not KEY=VALUE\n", name, item);
			return -EINVAL;
		}
		*eq = '\0';
		v = strtod(eq + 1, &end);
		if (*end != '\0' || !(v > 0) || !isfinite(v)) {
			fprintf(stderr, "trace generator %s: %s: bad value '%s'\n", name, item, eq + 1);
			return -EINVAL;
		}
		if (strcmp(item, "rate") == 0)
			dst = &a->rate;
		else if (strcmp(item, "on_ms") == 0)
			dst = &a->on_ms;
		else if (strcmp(item, "off_ms") == 0)
			dst = &a->off_ms;
		else if (strcmp(item, "alpha") == 0)
			dst = &a->alpha;
		else if (strcmp(item, "mean_us") == 0)
			dst = &a->mean_us;
		else if (strcmp(item, "period_us") == 0)
			dst = &a->period_us;
		else if (strcmp(item, "jitter_us") == 0)
			dst = &a->jitter_us;
		else if (strcmp(item, "sources") == 0)
			dst = &a->sources;
		if (dst == NULL) {
			fprintf(stderr, "trace generator %s: unknown key '%s'\n", name, item);
			return -EINVAL;
		}
		*dst = v;
	}
	return 0;
}

static const char *const generators[] = { "poisson", "onoff", "pareto", "periodic", "day" };

int
trace_is_generator(const char *spec)
{
	size_t n = strcspn(spec, ":");

	for (size_t i = 0; i < sizeof(generators) / sizeof(generators[0]); i++)
		if (strlen(generators[i]) == n && strncmp(spec, generators[i], n) == 0)
			return 1;
	return 0;
}

static uint64_t
gen_one(const char *kind, const struct gen_args *a, uint64_t *rnd, double *phase_ns)
{
	if (strcmp(kind, "poisson") == 0)
		return (uint64_t)expo(rnd, 1e9 / a->rate);
	if (strcmp(kind, "onoff") == 0) {
		double g = expo(rnd, 1e9 / a->rate);

		*phase_ns += g;
		if (*phase_ns > a->on_ms * 1e6) { /* the burst is over: a silence */
			*phase_ns = 0;
			g += a->off_ms * 1e6;
		}
		return (uint64_t)g;
	}
	if (strcmp(kind, "pareto") == 0) {
		/* x_m chosen so that the mean is mean_us: mean = alpha x_m / (alpha - 1) */
		double xm = a->mean_us * 1e3 * (a->alpha - 1) / a->alpha;

		return (uint64_t)(xm / pow(uniform(rnd), 1.0 / a->alpha));
	}
	/* periodic */
	return (uint64_t)fmax(0, a->period_us * 1e3 + (uniform(rnd) * 2 - 1) * a->jitter_us * 1e3);
}

/* periodic:sources=N: N periodic sources, independent, source k (id k + 1)
 * every P (1 + 0.41 k) with its own jitter and a random phase: the loop's
 * gaps depend on how long each source has been silent (the superposition
 * adaptive learns in loops of several sources, doc/guides/policies.md). */
static int
generate_sources(const struct gen_args *a, uint64_t *rnd, size_t events, struct trace *t)
{
	double base[TESTEVD_RINGS_MAX], next[TESTEVD_RINGS_MAX], period[TESTEVD_RINGS_MAX], last = 0;
	const int n = (int)a->sources;
	size_t cap = 0;
	int rc = 0;

	for (int k = 0; k < n; k++) {
		period[k] = a->period_us * 1e3 * (1 + GEN_PERIOD_STEP * k);
		base[k] = uniform(rnd) * period[k];
		next[k] = base[k];
	}
	for (size_t i = 0; i < events && rc == 0; i++) {
		int k = 0;

		for (int j = 1; j < n; j++)
			if (next[j] < next[k])
				k = j;
		rc = push(t, &cap, (uint64_t)fmax(0, next[k] - last), (uint32_t)k + 1);
		last = fmax(last, next[k]);
		/* jitter around the source's own schedule, not its last arrival */
		base[k] += period[k];
		next[k] = base[k] + (uniform(rnd) * 2 - 1) * a->jitter_us * 1e3;
	}
	return rc;
}

static int
generate(const char *spec, uint64_t seed, size_t events, struct trace *t)
{
	char buf[128], *colon;
	struct gen_args a = { .rate = 10000, .on_ms = 5, .off_ms = 50, .alpha = 1.5, .mean_us = 200,
			      .period_us = 1000, .jitter_us = 50 };
	uint64_t rnd = seed * 0x9e3779b97f4a7c15ull + 7;
	double phase = 0;
	size_t cap = 0;
	int rc = 0;

	if (strlen(spec) >= sizeof(buf))
		return -EINVAL;
	strcpy(buf, spec);
	colon = strchr(buf, ':');
	if (colon != NULL) {
		*colon = '\0';
		rc = gen_param(buf, colon + 1, &a);
		if (rc < 0)
			return rc;
	}
	if (strcmp(buf, "pareto") == 0 && a.alpha <= 1) {
		fprintf(stderr, "trace generator pareto: alpha must be above 1\n");
		return -EINVAL;
	}
	if (a.sources != 0 && (strcmp(buf, "periodic") != 0 || a.sources != floor(a.sources) ||
			       a.sources > TESTEVD_RINGS_MAX)) {
		fprintf(stderr, "trace generator %s: sources=N is for periodic, N a whole number "
			"from 1 to %d\n", buf, TESTEVD_RINGS_MAX);
		return -EINVAL;
	}
	if (a.sources >= 1 && a.jitter_us * 2 >= a.period_us) {
		fprintf(stderr, "trace generator periodic: with sources=N, jitter_us must be under "
			"half of period_us (each source's arrivals stay in order)\n");
		return -EINVAL;
	}
	memset(t, 0, sizeof(*t));
	snprintf(t->name, sizeof(t->name), "%s", spec);
	if (a.sources >= 1) {
		rc = generate_sources(&a, &rnd, events, t);
		if (rc < 0)
			trace_free(t);
		return rc;
	}
	for (size_t i = 0; i < events && rc == 0; i++) {
		uint64_t g;

		if (strcmp(buf, "day") == 0) {
			/* five stretches: quiet, busy, bursty, periodic, heavy-tailed */
			static const struct gen_args parts[] = {
				{ .rate = 50 }, { .rate = 200000 },
				{ .rate = 100000, .on_ms = 2, .off_ms = 20 },
				{ .period_us = 500, .jitter_us = 30 },
				{ .alpha = 1.3, .mean_us = 300 },
			};
			static const char *const kinds[] = { "poisson", "poisson", "onoff", "periodic",
							     "pareto" };
			size_t part = i * 5 / events;

			g = gen_one(kinds[part], &parts[part], &rnd, &phase);
		} else {
			g = gen_one(buf, &a, &rnd, &phase);
		}
		rc = push(t, &cap, g, 0);
	}
	if (rc < 0)
		trace_free(t);
	return rc;
}

int
trace_load(const char *spec, uint64_t seed, size_t events, double speedup, struct trace *t)
{
	int rc;

	if (trace_is_generator(spec)) {
		rc = generate(spec, seed, events, t);
	} else {
		FILE *f = fopen(spec, "rb");
		unsigned char magic[4] = { 0 };

		if (f == NULL) {
			fprintf(stderr, "trace %s: %s\n", spec, strerror(errno));
			return -errno;
		}
		if (fread(magic, 1, 4, f) != 4)
			memset(magic, 0, 4);
		if ((magic[0] == 0xd4 && magic[1] == 0xc3) || (magic[0] == 0xa1 && magic[1] == 0xb2) ||
		    (magic[0] == 0x4d && magic[1] == 0x3c) || (magic[0] == 0x0a && magic[1] == 0x0d)) {
			fclose(f);
			rc = load_pcap(spec, t);
		} else {
			size_t len, cap = 1 << 16;
			char *buf = malloc(cap);

			rewind(f);
			len = 0;
			while (buf != NULL) {
				size_t k = fread(buf + len, 1, cap - len, f);

				len += k;
				if (len < cap)
					break;
				if (cap >= (size_t)1 << 30) {
					free(buf);
					buf = NULL;
					break;
				}
				cap *= 2;
				{
					char *nb = realloc(buf, cap);

					if (nb == NULL) {
						free(buf);
						buf = NULL;
					} else {
						buf = nb;
					}
				}
			}
			fclose(f);
			if (buf == NULL)
				return -ENOMEM;
			rc = trace_parse_text(buf, len, strrchr(spec, '/') ? strrchr(spec, '/') + 1 : spec, t);
			free(buf);
		}
	}
	if (rc < 0)
		return rc;
	if (speedup > 0 && speedup != 1) {
		for (size_t i = 0; i < t->n; i++)
			t->gap_ns[i] = (uint64_t)((double)t->gap_ns[i] / speedup);
		snprintf(t->name + strlen(t->name), sizeof(t->name) - strlen(t->name), " x%g", speedup);
	}
	return 0;
}

int
trace_source_ids(const struct trace *t, uint32_t *ids, uint32_t max)
{
	uint32_t n = 0;

	for (size_t i = 0; i < t->n; i++) {
		uint32_t k = 0;

		while (k < n && ids[k] != t->source[i])
			k++;
		if (k < n)
			continue;
		if (n == max)
			return -E2BIG;
		for (k = n++; k > 0 && ids[k - 1] > t->source[i]; k--) /* kept ascending */
			ids[k] = ids[k - 1];
		ids[k] = t->source[i];
	}
	return (int)n;
}
