/* SPDX-License-Identifier: BSD-3-Clause */
/* --timeline: a run's windows as CSV, or SVG when the name ends in .svg. */
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "timeline.h"

static bool
ends_with(const char *s, const char *suffix)
{
	size_t a = strlen(s), b = strlen(suffix);

	return a >= b && strcmp(s + a - b, suffix) == 0;
}

/* The SVG's layout. Series names sit above their panels and the y labels
 * left of the plot, right-aligned: the margin holds 9 characters at about
 * 6.5 px each (font-size 11). */
#define SVG_W      900
#define SVG_H      540
#define PLOT_X0    72.0
#define PLOT_X1    875.0
#define PLOT_TOP   50.0
#define PANEL_H    120.0
#define PANEL_GAP  40.0 /* a panel's name, clear of the 0 label of the one above */
#define X_TICKS    8    /* at most this many intervals between x ticks */

/* The smallest of 1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 8 x 10^k at or above v,
 * so that the y labels are round numbers and the line keeps most of the
 * panel's height. */
static double
nice_ceil(double v)
{
	static const double m[] = { 1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10 };
	double p;

	if (!(v > 0) || !isfinite(v))
		return 1;
	p = pow(10, floor(log10(v)));
	for (unsigned int i = 0; i < sizeof(m) / sizeof(m[0]); i++)
		if (m[i] * p >= v * (1 - 1e-9))
			return m[i] * p;
	return 10 * p;
}

/* The smallest of 1, 2, 5 x 10^k that cuts span into at most X_TICKS
 * intervals. */
static double
tick_step(double span)
{
	double p = pow(10, floor(log10(span / X_TICKS)));

	if (p * X_TICKS >= span)
		return p;
	if (2 * p * X_TICKS >= span)
		return 2 * p;
	if (5 * p * X_TICKS >= span)
		return 5 * p;
	return 10 * p;
}

static void
svg_text(FILE *f, const char *s)
{
	for (const char *c = s; *c; c++) /* escape for XML */
		fputs(*c == '<' ? "&lt;" : *c == '>' ? "&gt;" : *c == '&' ? "&amp;" : (char[2]){ *c, 0 },
		      f);
}

/* One panel: window i holds y[i] from t[i] to t[i + 1], drawn as a step so
 * that each window, the last one too, spans its own length. */
static void
svg_series(FILE *f, const char *name, const char *color, unsigned int n, const double *t,
	   const double *y, double tmax, int row)
{
	const double h = PANEL_H, top = PLOT_TOP + row * (PANEL_H + PANEL_GAP), bottom = top + h;
	const double xs = (PLOT_X1 - PLOT_X0) / tmax;
	double ymax = 0;

	for (unsigned int i = 0; i < n; i++)
		ymax = fmax(ymax, y[i]);
	ymax = nice_ceil(ymax);
	fprintf(f, "<rect x=\"%.0f\" y=\"%.0f\" width=\"%.0f\" height=\"%.0f\" fill=\"none\" "
		"stroke=\"#999\"/>\n", PLOT_X0, top, PLOT_X1 - PLOT_X0, h);
	fprintf(f, "<line x1=\"%.0f\" y1=\"%.0f\" x2=\"%.0f\" y2=\"%.0f\" stroke=\"#eee\"/>\n",
		PLOT_X0, top + h / 2, PLOT_X1, top + h / 2);
	fprintf(f, "<text x=\"%.0f\" y=\"%.0f\" fill=\"%s\" font-weight=\"bold\">%s</text>\n",
		PLOT_X0, top - 7, color, name);
	fprintf(f, "<text x=\"%.0f\" y=\"%.0f\" text-anchor=\"end\">%g</text>\n"
		"<text x=\"%.0f\" y=\"%.0f\" text-anchor=\"end\">%g</text>\n"
		"<text x=\"%.0f\" y=\"%.0f\" text-anchor=\"end\">0</text>\n",
		PLOT_X0 - 5, top + 8, ymax, PLOT_X0 - 5, top + h / 2 + 4, ymax / 2, PLOT_X0 - 5,
		bottom);
	fprintf(f, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"1.5\" points=\"", color);
	for (unsigned int i = 0; i < n; i++) {
		double yy = bottom - h * fmin(fmax(y[i], 0), ymax) / ymax;

		fprintf(f, "%.1f,%.2f %.1f,%.2f ", PLOT_X0 + xs * t[i], yy, PLOT_X0 + xs * t[i + 1],
			yy);
	}
	fprintf(f, "\"/>\n");
}

/* x ticks at round times, their grid through every panel, their labels in
 * s, ms or us under the last one, and the axis's name. */
static void
svg_time_axis(FILE *f, double tmax, int rows)
{
	const double bottom = PLOT_TOP + rows * PANEL_H + (rows - 1) * PANEL_GAP;
	const double scale = tmax >= 1 ? 1 : tmax >= 1e-3 ? 1e3 : 1e6;
	const char *unit = tmax >= 1 ? "s" : tmax >= 1e-3 ? "ms" : "us";
	double step = tick_step(tmax * scale);

	for (unsigned int k = 0; k * step <= tmax * scale * (1 + 1e-9); k++) {
		double x = PLOT_X0 + (PLOT_X1 - PLOT_X0) * (k * step) / (tmax * scale);

		for (int row = 0; row < rows; row++) {
			double top = PLOT_TOP + row * (PANEL_H + PANEL_GAP);

			fprintf(f, "<line x1=\"%.1f\" y1=\"%.0f\" x2=\"%.1f\" y2=\"%.0f\" "
				"stroke=\"#eee\"/>\n", x, top, x, top + PANEL_H);
		}
		fprintf(f, "<line class=\"xtick\" x1=\"%.1f\" y1=\"%.0f\" x2=\"%.1f\" y2=\"%.0f\" "
			"stroke=\"#999\"/>\n<text class=\"xtick\" x=\"%.1f\" y=\"%.0f\" "
			"text-anchor=\"middle\">%g</text>\n",
			x, bottom, x, bottom + 4, x, bottom + 16, k * step);
	}
	fprintf(f, "<text x=\"%.0f\" y=\"%.0f\" text-anchor=\"middle\">time (%s)</text>\n",
		(PLOT_X0 + PLOT_X1) / 2, bottom + 34, unit);
}

/* t_s holds n + 1 times: each window's start, then the last one's end (a
 * run's last window is as long as the run left it). */
int
timeline_write(const char *path, const char *title, unsigned int n, const double *t_s,
	       const double *rate, const double *cpu_pct, const double *sleep_pct)
{
	FILE *f = fopen(path, "w");
	double tmax = t_s[n];

	if (f == NULL)
		return -errno;
	if (!(tmax > 0))
		tmax = 1;
	if (!ends_with(path, ".svg")) {
		fprintf(f, "# %s\nt_s,arrivals_per_s,cpu_pct,sleep_pct,window_s\n", title);
		for (unsigned int i = 0; i < n; i++)
			fprintf(f, "%.9f,%.1f,%.3f,%.3f,%.9f\n", t_s[i], rate[i], cpu_pct[i],
				sleep_pct[i], t_s[i + 1] - t_s[i]);
	} else {
		fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
			"font-family=\"sans-serif\" font-size=\"11\">\n"
			"<rect width=\"%d\" height=\"%d\" fill=\"white\"/>\n"
			"<text x=\"10\" y=\"20\" font-size=\"13\">", SVG_W, SVG_H, SVG_W, SVG_H);
		svg_text(f, title);
		fprintf(f, "</text>\n");
		svg_time_axis(f, tmax, 3);
		svg_series(f, "events/s", "#1f77b4", n, t_s, rate, tmax, 0);
		svg_series(f, "CPU %", "#d62728", n, t_s, cpu_pct, tmax, 1);
		svg_series(f, "asleep %", "#2ca02c", n, t_s, sleep_pct, tmax, 2);
		fprintf(f, "</svg>\n");
	}
	return fclose(f) == 0 ? 0 : -EIO;
}
