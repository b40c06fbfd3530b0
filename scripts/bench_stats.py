# SPDX-License-Identifier: BSD-3-Clause
"""Helpers of scripts/bench's reports: round-trip histograms pooled over
runs, their percentiles, and a p99 ratio's interval by resampling runs."""
import json


def load(p):
    """A run's JSON, or None when missing or cut short by a failed run."""
    try:
        with open(p) as fh:
            return json.load(fh)
    except (OSError, ValueError):
        return None


def merged(runs, key="rtt_histogram_ns"):
    """The runs' histograms (rtt_histogram_ns, or the one named) added up,
    as sorted (top, count)."""
    h = {}
    for r in runs:
        for top, c in r[key]:
            h[top] = h.get(top, 0) + c
    return sorted(h.items())


def pct(h, p, mx):
    """Percentile p (0..1) of a merged histogram in us; a bin's top, or the
    runs' largest round trip mx (ns) where that is lower."""
    n = sum(c for _, c in h)
    want, seen = min(int(p * n), n - 1), 0
    for top, c in h:
        seen += c
        if seen > want:
            return min(top, mx) / 1e3
    return mx / 1e3


def pooled_p99(runs, key="rtt_histogram_ns"):
    return pct(merged(runs, key), 0.99, max(r["latency_us"]["max"] for r in runs) * 1e3)


def p99_interval(a_runs, b_runs, rnd, draws=2000, key="rtt_histogram_ns"):
    """The 95 % interval of pooled p99(a) / pooled p99(b), resampling whole
    runs on each side (as many, with replacement); of the histogram named."""
    ratios = []
    for _ in range(draws):
        a = [rnd.choice(a_runs) for _ in a_runs]
        b = [rnd.choice(b_runs) for _ in b_runs]
        ratios.append(pooled_p99(a, key) / pooled_p99(b, key))
    ratios.sort()
    return ratios[int(0.025 * draws)], ratios[int(0.975 * draws) - 1]


def p99_ratio(runs, base, rnd, key="rtt_histogram_ns"):
    """"R x (lo-hi)": pooled p99(runs) / pooled p99(base) and its 95 %
    interval (p99_interval); "R x" alone where runs is base itself."""
    v = pooled_p99(runs, key) / pooled_p99(base, key)
    if runs is base:
        return f"{v:.2f} x"
    lo, hi = p99_interval(runs, base, rnd, key=key)
    return f"{v:.2f} x ({lo:.2f}-{hi:.2f})"


PROMPT = "rtt_prompt_histogram_ns"  # the round trips but those the sender took late


def late_columns(runs, base, rnd, mx):
    """The sender-late columns of a forwarder's row: the round trips the
    sender took late (summed), the p99 (us) of the others (mx: the runs'
    largest round trip, ns), and its ratio to base's with the interval;
    "n/a" for runs from before testevd counted them."""
    if not all(PROMPT in r for r in runs):
        return "n/a", "n/a", "n/a"
    late = str(sum(r["rtt_sender_late"] for r in runs))
    pp = f"{pct(merged(runs, PROMPT), 0.99, mx):.1f}"
    rel = p99_ratio(runs, base, rnd, key=PROMPT) if base and all(PROMPT in r for r in base) else "n/a"
    return late, pp, rel
