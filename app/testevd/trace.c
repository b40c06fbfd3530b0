/* SPDX-License-Identifier: BSD-3-Clause */
/* Arrival traces. See trace.h. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <pcap/pcap.h>

#include "testevd.h"
#include "trace.h"

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

/* One more arrival; the trace's name is set (the messages name it). */
static int
push(struct trace *t, size_t *cap, uint64_t gap, uint32_t src)
{
	if (t->n == *cap) {
		size_t c = *cap ? *cap * 2 : 1024;
		uint64_t *g;
		uint32_t *s;

		if (*cap >= TRACE_MAX_EVENTS) {
			fprintf(stderr, "trace %s: more than %u arrivals, the most a trace may have\n",
				t->name, TRACE_MAX_EVENTS);
			return -E2BIG;
		}
		if (c > TRACE_MAX_EVENTS)
			c = TRACE_MAX_EVENTS;
		g = realloc(t->gap_ns, c * sizeof(*g));
		if (g == NULL)
			goto nomem;
		t->gap_ns = g;
		s = realloc(t->source, c * sizeof(*s));
		if (s == NULL)
			goto nomem;
		t->source = s;
		*cap = c;
	}
	t->gap_ns[t->n] = gap;
	t->source[t->n] = src;
	t->n++;
	return 0;
nomem:
	fprintf(stderr, "trace %s: out of memory at %zu arrivals\n", t->name, t->n);
	return -ENOMEM;
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
		bool nul = false;

		line++;
		while (i < len && buf[i] != '\n') {
			if (buf[i] == '\0')
				nul = true;
			else if (k < sizeof(l) - 1)
				l[k++] = buf[i];
			else if (l[0] != '#')
				rc = -EINVAL; /* line too long (a comment may be any length) */
			i++;
		}
		i++;
		l[k] = '\0';
		if (nul) {
			/* the line's text stops there for every string function:
			 * what follows would be lost without a word */
			fprintf(stderr, "trace %s: line %zu: a NUL byte (not a text trace?)\n", name,
				line);
			rc = -EINVAL;
			break;
		}
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
		if (errno != 0 || gap > TRACE_MAX_GAP_NS) {
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

/* A capture's gaps: between the packets' timestamps. Damage is said, not
 * skipped over: a timestamp that cannot be (negative, a fraction of a
 * second of 10^9 ns or more, a gap over an hour) refuses the capture; a
 * packet stamped before the one before it (captures merged from several
 * queues) counts as arriving with it (gap 0), and the next gap runs from
 * the latest time seen, so the trace spans what the capture spans; a
 * capture cut short (tcpdump killed mid-write) keeps the packets before
 * the damage. Both with a warning. */
int
trace_load_pcap(FILE *f, const char *name, struct trace *t)
{
	char err[PCAP_ERRBUF_SIZE];
	pcap_t *pc = pcap_fopen_offline_with_tstamp_precision(f, PCAP_TSTAMP_PRECISION_NANO, err);
	struct pcap_pkthdr *h;
	const u_char *data;
	uint64_t prev = 0;
	size_t cap = 0, back = 0;
	int rc = 0, r = 0;

	if (pc == NULL) {
		fprintf(stderr, "trace %s: %s\n", name, err);
		fclose(f);
		return -EINVAL;
	}
	memset(t, 0, sizeof(*t));
	snprintf(t->name, sizeof(t->name), "%s", name);
	while (rc == 0 && (r = pcap_next_ex(pc, &h, &data)) == 1) {
		int64_t sec = (int64_t)h->ts.tv_sec, frac = (int64_t)h->ts.tv_usec;
		uint64_t ts, gap = 0;

		/* libpcap gives nanoseconds in tv_usec (the precision asked);
		 * seconds up to 2^34, past year 2500, stay within 64 bits */
		if (sec < 0 || sec >= INT64_C(1) << 34 || frac < 0 || frac >= 1000000000) {
			fprintf(stderr, "trace %s: packet %zu: timestamp %" PRId64 " s + %" PRId64
				" ns is not a time\n", name, t->n + 1, sec, frac);
			rc = -EINVAL;
			break;
		}
		ts = (uint64_t)sec * 1000000000ull + (uint64_t)frac;
		if (t->n > 0 && ts < prev)
			back++;
		else if (t->n > 0)
			gap = ts - prev;
		if (gap > TRACE_MAX_GAP_NS) {
			fprintf(stderr, "trace %s: packet %zu: %.1f s after the one before it; a trace's "
				"gaps are at most an hour\n", name, t->n + 1, (double)gap / 1e9);
			rc = -EINVAL;
			break;
		}
		rc = push(t, &cap, gap, 0);
		if (ts > prev)
			prev = ts;
	}
	if (rc == 0 && r == -1)
		fprintf(stderr, "trace %s: warning: %s; the trace is the %zu packets before it\n",
			name, pcap_geterr(pc), t->n);
	if (rc == 0 && back > 0)
		fprintf(stderr, "trace %s: warning: %zu packets are stamped before the one before "
			"them; each counts as arriving with it (gap 0)\n", name, back);
	pcap_close(pc); /* closes f */
	if (rc == 0 && t->n < 2) {
		fprintf(stderr, "trace %s: %zu packets; a trace is the gaps between packets, it needs "
			"2 or more\n", name, t->n);
		rc = -EINVAL;
	}
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

#define GEN_PERIOD_STEP 0.41 /* periodic, sources=N: id k's period is P (1 + 0.41 (k - 1)) */

/* The keys each generator takes (day: none), in struct gen_args order. */
static const char *const gen_keys[] = { "rate", "on_ms", "off_ms", "alpha", "mean_us", "period_us",
					"jitter_us", "sources" };
static const struct {
	const char *name;
	unsigned int keys; /* bit k: gen_keys[k] */
} gen_kinds[] = {
	{ "poisson", 1u << 0 }, { "onoff", 7u << 0 }, { "pareto", 3u << 3 },
	{ "periodic", 7u << 5 }, { "day", 0 },
};

/* KEY=VALUE,... into a: each key at most once, one the generator takes, a
 * value that is a positive finite number. */
static int
gen_param(const char *name, char *params, struct gen_args *a)
{
	double *dst[] = { &a->rate, &a->on_ms, &a->off_ms, &a->alpha, &a->mean_us, &a->period_us,
			  &a->jitter_us, &a->sources };
	unsigned int takes = 0, seen = 0;
	char *item = params;

	for (size_t i = 0; i < NELEM(gen_kinds); i++)
		if (strcmp(gen_kinds[i].name, name) == 0)
			takes = gen_kinds[i].keys;
	for (bool more = true; more;) {
		char *comma = strchr(item, ','), *eq, *end;
		size_t k;
		double v;

		more = comma != NULL;
		if (more)
			*comma = '\0';
		eq = strchr(item, '=');
		if (eq == NULL) {
			fprintf(stderr, "trace generator %s: '%s' is not KEY=VALUE\n", name, item);
			return -EINVAL;
		}
		*eq = '\0';
		for (k = 0; k < NELEM(gen_keys) && strcmp(item, gen_keys[k]) != 0; k++)
			;
		if (k == NELEM(gen_keys) || !(takes & 1u << k)) {
			fprintf(stderr, "trace generator %s: %s key '%s'%s\n", name,
				k == NELEM(gen_keys) ? "unknown" : "no", item,
				takes == 0 ? " (it takes none)" : "");
			return -EINVAL;
		}
		if (seen & 1u << k) {
			fprintf(stderr, "trace generator %s: %s given twice\n", name, item);
			return -EINVAL;
		}
		seen |= 1u << k;
		v = strtod(eq + 1, &end);
		if (!trace_decimal_text(eq + 1) || *end != '\0' || !(v > 0) || !isfinite(v)) {
			fprintf(stderr, "trace generator %s: %s: bad value '%s' (a decimal number above "
				"0)\n", name, item, eq + 1);
			return -EINVAL;
		}
		*dst[k] = v;
		if (more)
			item = comma + 1;
	}
	if (a->rate > 1e9) {
		fprintf(stderr, "trace generator %s: rate at most 1e9 arrivals/s (one a ns)\n", name);
		return -EINVAL;
	}
	return 0;
}

int
trace_is_generator(const char *spec)
{
	size_t n = strcspn(spec, ":");

	for (size_t i = 0; i < NELEM(gen_kinds); i++)
		if (strlen(gen_kinds[i].name) == n && strncmp(spec, gen_kinds[i].name, n) == 0)
			return 1;
	return 0;
}

/* One gap, in ns (not yet checked: extreme parameters make any double). */
static double
gen_one(const char *kind, const struct gen_args *a, uint64_t *rnd, double *phase_ns)
{
	if (strcmp(kind, "poisson") == 0)
		return expo(rnd, 1e9 / a->rate);
	if (strcmp(kind, "onoff") == 0) {
		double g = expo(rnd, 1e9 / a->rate);

		*phase_ns += g;
		if (*phase_ns > a->on_ms * 1e6) { /* the burst is over: a silence */
			*phase_ns = 0;
			g += a->off_ms * 1e6;
		}
		return g;
	}
	if (strcmp(kind, "pareto") == 0) {
		/* x_m chosen so that the mean is mean_us: mean = alpha x_m / (alpha - 1) */
		double xm = a->mean_us * 1e3 * (a->alpha - 1) / a->alpha;

		return xm / pow(uniform(rnd), 1.0 / a->alpha);
	}
	/* periodic */
	return fmax(0, a->period_us * 1e3 + (uniform(rnd) * 2 - 1) * a->jitter_us * 1e3);
}

/* A generated gap: at most an hour, as any trace's (extreme parameters
 * make gaps no trace may have, even inf, which no integer holds). */
static int
gen_push(struct trace *t, size_t *cap, double g, uint32_t src)
{
	if (!(g <= (double)TRACE_MAX_GAP_NS)) {
		fprintf(stderr, "trace generator %s: a gap of %.3g s: a trace's gaps are at most an "
			"hour\n", t->name, g / 1e9);
		return -EINVAL;
	}
	return push(t, cap, (uint64_t)g, src);
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
		rc = gen_push(t, &cap, fmax(0, next[k] - last), (uint32_t)k + 1);
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
	uint64_t rnd = testevd_seed(seed, 7);
	double phase = 0;
	size_t cap = 0;
	int rc = 0;

	if (strlen(spec) >= sizeof(buf)) {
		fprintf(stderr, "trace generator: a spec of %zu characters, the most is %zu\n",
			strlen(spec), sizeof(buf) - 1);
		return -EINVAL;
	}
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
	if (strcmp(buf, "periodic") == 0 && a.jitter_us > a.period_us) {
		fprintf(stderr, "trace generator periodic: jitter_us must be at most period_us (a gap "
			"is period_us +- jitter_us; past it gaps would be cut at 0 and the period "
			"lost)\n");
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
		double g;

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
		rc = gen_push(t, &cap, g, 0);
	}
	if (rc < 0)
		trace_free(t);
	return rc;
}

/* A pcap file (either byte order, microsecond or nanosecond) or a pcapng
 * section header: all four bytes, so that a text trace beginning with an
 * empty line and a CR is not taken for one. */
static bool
is_capture(const unsigned char *m)
{
	static const unsigned char magics[][4] = {
		{ 0xd4, 0xc3, 0xb2, 0xa1 }, { 0xa1, 0xb2, 0xc3, 0xd4 }, { 0x4d, 0x3c, 0xb2, 0xa1 },
		{ 0xa1, 0xb2, 0x3c, 0x4d }, { 0x0a, 0x0d, 0x0d, 0x0a },
	};

	for (size_t i = 0; i < NELEM(magics); i++)
		if (memcmp(m, magics[i], 4) == 0)
			return true;
	return false;
}

/* Read a whole text trace (or a piped input) into *buf; closes f. */
static int
read_all(FILE *f, const char *spec, char **buf, size_t *len)
{
	size_t cap = 1 << 16;
	char *b = malloc(cap);

	*len = 0;
	while (b != NULL) {
		size_t k = fread(b + *len, 1, cap - *len, f);

		*len += k;
		if (*len < cap)
			break;
		if (cap >= (size_t)1 << 30) {
			fprintf(stderr, "trace %s: over 1 GiB read from a pipe or as text, more than "
				"a trace of %u arrivals can be\n", spec, TRACE_MAX_EVENTS);
			free(b);
			fclose(f);
			return -EFBIG;
		}
		cap *= 2;
		{
			char *nb = realloc(b, cap);

			if (nb == NULL)
				free(b);
			b = nb;
		}
	}
	if (b == NULL) {
		fclose(f);
		fprintf(stderr, "trace %s: out of memory reading it\n", spec);
		return -ENOMEM;
	}
	if (ferror(f)) { /* a directory (EISDIR), an I/O error: not a short trace */
		int e = errno ? errno : EIO;

		fprintf(stderr, "trace %s: %s\n", spec, strerror(e));
		free(b);
		fclose(f);
		return -e;
	}
	fclose(f);
	*buf = b;
	return 0;
}

/* After a trace is made: --speedup, and the limits every trace keeps. */
static int
trace_finish(int rc, double speedup, struct trace *t)
{
	if (rc < 0)
		return rc;
	if (speedup > 0 && speedup != 1) {
		for (size_t i = 0; i < t->n; i++) {
			double g = (double)t->gap_ns[i] / speedup;

			/* a slow-down (--speedup under 1) can stretch a gap past
			 * the limit every trace keeps */
			if (!(g <= (double)TRACE_MAX_GAP_NS)) {
				fprintf(stderr, "trace %s: gap %zu is %.0f s at --speedup %g: gaps are at "
					"most an hour\n", t->name, i + 1, g / 1e9, speedup);
				trace_free(t);
				return -ERANGE;
			}
			t->gap_ns[i] = (uint64_t)g;
		}
		snprintf(t->name + strlen(t->name), sizeof(t->name) - strlen(t->name), " x%g", speedup);
	}
	/* the whole trace within the clocks' range (the virtual clock starts
	 * at 1 s; a replay adds its start to every arrival) */
	{
		uint64_t total = 0;

		for (size_t i = 0; i < t->n; i++) {
			total += t->gap_ns[i]; /* each at most an hour: no wrap here */
			if (total > TRACE_MAX_TOTAL_NS) {
				fprintf(stderr, "trace %s: longer than %.0f hours at arrival %zu: more "
					"than a replay's clock holds\n", t->name,
					(double)TRACE_MAX_TOTAL_NS / 3.6e12, i + 1);
				trace_free(t);
				return -ERANGE;
			}
		}
	}
	return 0;
}

bool
trace_decimal_text(const char *s)
{
	return ((*s >= '0' && *s <= '9') || *s == '.') && s[strspn(s, "0123456789.eE+-")] == '\0';
}

int
trace_load(const char *spec, uint64_t seed, size_t events, double speedup, struct trace *t)
{
	int rc;

	if (trace_is_generator(spec)) {
		rc = generate(spec, seed, events, t);
	} else {
		const char *base = strrchr(spec, '/') ? strrchr(spec, '/') + 1 : spec;
		FILE *f = fopen(spec, "rb");
		unsigned char magic[4] = { 0 };
		struct stat st;
		char *buf = NULL;
		size_t len = 0;

		if (f == NULL) {
			fprintf(stderr, "trace %s: %s\n", spec, strerror(errno));
			return -errno;
		}
		if (fstat(fileno(f), &st) == 0 && S_ISREG(st.st_mode)) {
			/* a file: its first bytes say what it is, then from the
			 * start again (a capture is streamed, whatever its size) */
			if (fread(magic, 1, 4, f) != 4)
				memset(magic, 0, 4);
			rewind(f);
			if (is_capture(magic))
				return trace_finish(trace_load_pcap(f, base, t), speedup, t); /* closes f */
			rc = read_all(f, spec, &buf, &len); /* closes f */
		} else {
			/* a pipe or a FIFO (--trace /dev/stdin) cannot be read
			 * twice: read whole, then look at it (a directory: the
			 * read's error) */
			rc = read_all(f, spec, &buf, &len); /* closes f */
			if (rc == 0 && len >= 4 && is_capture((const unsigned char *)buf)) {
				f = fmemopen(buf, len, "rb");
				if (f == NULL) {
					rc = -errno;
					fprintf(stderr, "trace %s: %s\n", spec, strerror(errno));
				} else {
					rc = trace_load_pcap(f, base, t); /* closes f */
				}
				free(buf);
				return trace_finish(rc, speedup, t);
			}
		}
		if (rc == 0)
			rc = trace_parse_text(buf, len, base, t);
		free(buf);
	}
	return trace_finish(rc, speedup, t);
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
