"""bench/report.py - bench/bench.py's tables: per workload the medians of every variant and the
ratios of pairs of variants, and at the end the summary, one row per workload and pair (nc1/tw,
nc1/px, ...), and the same pairs round by round (paired_table). Numbers only go through here to be
formatted; nothing is measured. `python3 bench/report.py RESULTS.json` prints the round-by-round
table of a run saved with bench.py --json.

Used from the benchmark's one thread.
"""
import json
import math
import statistics
import sys

# the ratios printed per workload (when both variants ran)
RATIOS = [("nc1", "tw"), ("nc1", "px"), ("nc1f", "twf"), ("nc1f", "pxf"), ("nc2f", "nc1f"), ("nc2f", "twf"),
          ("nc2f", "px2f"), ("nc1", "ncb"), ("nc2f", "ncb2f"), ("ncb2f", "twf")]
# the pairs of the summary
SUMMARY = [("nc1", "tw"), ("nc1", "px"), ("nc1f", "twf"), ("nc1f", "pxf"), ("nc2f", "px2f")]
# (key of a run's result, column title, digits)
COLUMNS = [("rps", "req/s", 0), ("proxy_us", "proxy CPU us/req", 2), ("backend_us", "backend CPU us/req", 2),
           ("load_us", "load CPU us/req", 2), ("p50_ms", "p50 ms", 3), ("p99_ms", "p99 ms", 3),
           ("req_per_read", "backend req/read", 2), ("req_per_write", "backend req/write", 2)]
SUMMARY_COLUMNS = ["proxy_us", "rps", "p50_ms", "p99_ms", "backend_us", "req_per_read", "req_per_write"]
TITLES = {key: title for key, title, _ in COLUMNS}
NOT_COUNTED = {"mc": "memcached answers with sendmsg, which /proc/PID/io does not count: no backend req/write"}


def med(vals):
    vals = [v for v in vals if v == v]
    return statistics.median(vals) if vals else float("nan")


def fmt(v, digits=2):
    if v != v:
        return "-"
    if abs(v) >= 1000:
        return f"{v:,.0f}"
    return f"{v:.{digits}f}"


def ratio(a, b):
    return a / b if b else float("nan")


def medians(variants, res):
    """{variant: {column: median over the rounds}} of the variants that ran."""
    return {v: {c: med([r[c] for r in res[v]]) for c, _, _ in COLUMNS} for v in variants if res.get(v)}


def ratio_row(m, a_name, b_name, bold=("rps", "proxy_us", "backend_us", "req_per_read")):
    cells = []
    for c, _, _ in COLUMNS:
        text = fmt(ratio(m[a_name][c], m[b_name][c]))
        cells.append(f"**{text}**" if c in bold and text != "-" else text)
    return f"| **{a_name}/{b_name}** | " + " | ".join(cells) + " |"


def workload_table(w, variants, res, skipped):
    """The table of one workload: medians of each variant, then the ratios; the variants skipped
    (the proxy does not serve the pool) are named under it. Returns (markdown, medians)."""
    name, pool, _, _, n, _, desc = w
    m = medians(variants, res)
    rounds = max(len(r) for r in res.values() if r)
    lines = [f"### {name}", "", f"{desc}; {n} requests; medians of {rounds} rounds", "",
             "| variant | " + " | ".join(t for _, t, _ in COLUMNS) + " |", "|---" * (len(COLUMNS) + 1) + "|"]
    for v in variants:
        if v in m:
            lines.append(f"| {v} | " + " | ".join(fmt(m[v][c], d) for c, _, d in COLUMNS) + " |")
    lines += [ratio_row(m, a, b) for a, b in RATIOS if a in m and b in m]
    if "nc1" in m:
        lines.append(f"| **nc1 proxy/backend CPU** | | **{fmt(ratio(m['nc1']['proxy_us'], m['nc1']['backend_us']))}** |"
                     + " |" * (len(COLUMNS) - 2))
    notes = ["backend req/read, req/write: requests over the read and write system calls of all "
             "the pool's backends (/proc/PID/io syscr, syscw; EAGAIN reads count)"]
    if pool in NOT_COUNTED:
        notes.append(NOT_COUNTED[pool])
    if skipped:
        notes.append(f"skipped: {', '.join(skipped)} (predixy has no memcached)")
    return "\n".join(lines) + "\n\n" + "\n".join(notes) + "\n", m


def summary_table(allmed):
    """Ratios of medians per workload and pair of variants (SUMMARY), both variants having run."""
    lines = ["### Summary (ratios of medians)", "",
             "| workload | ratio | " + " | ".join(TITLES[c] for c in SUMMARY_COLUMNS) + " |",
             "|---|---" + "|---" * len(SUMMARY_COLUMNS) + "|"]
    for name, m in allmed.items():
        for a, b in SUMMARY:
            if a in m and b in m:
                cells = [fmt(ratio(m[a][c], m[b][c])) for c in SUMMARY_COLUMNS]
                lines.append(f"| {name} | {a}/{b} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


# the columns of the round-by-round table
PAIRED_COLUMNS = ["proxy_us", "rps", "backend_us", "load_us"]


def median_ci(vals, level=0.90):
    """A confidence interval of the median that assumes nothing of the distribution: the order
    statistics x(k) and x(n+1-k) with the largest k for which a Binomial(n, 1/2) falls below k
    with probability at most (1 - level) / 2. None when there are too few values (n < 5 at 90%)."""
    xs = sorted(vals)
    n = len(xs)
    tail, k, below = (1 - level) / 2, 0, 0.0
    while k < n // 2:
        below += math.comb(n, k) / 2 ** n  # P(B <= k)
        if below > tail:
            break
        k += 1
    return (xs[k - 1], xs[n - k]) if k > 0 else None


def paired_cell(a_runs, b_runs, col):
    """The median of a/b over the rounds, each round's a against that round's b (the runs
    alternate, so a pair ran a few seconds apart, under the same load of the host), its 90%
    confidence interval in brackets (median_ci) and the range in parentheses."""
    rs = [ratio(a[col], b[col]) for a, b in zip(a_runs, b_runs)]
    rs = [r for r in rs if r == r]
    if not rs:
        return "-"
    ci = median_ci(rs)
    ci_text = f" [{fmt(ci[0])}-{fmt(ci[1])}]" if ci else ""
    return f"{fmt(statistics.median(rs))}{ci_text} ({fmt(min(rs))}-{fmt(max(rs))})"


def paired_table(allruns):
    """Per workload and summary pair: the median of the rounds' own ratios and their range.
    allruns: {workload: {variant: [run, ...]}}. On a host whose speed drifts between rounds (a
    shared virtual machine), this moves less than the ratio of the medians; a goal is met with
    confidence when the whole interval is on its side."""
    lines = ["### Round by round (median of each round's ratio, [its 90% confidence interval], "
             "(the range))", "",
             "| workload | ratio | " + " | ".join(TITLES[c] for c in PAIRED_COLUMNS) + " |",
             "|---|---" + "|---" * len(PAIRED_COLUMNS) + "|"]
    for name, runs in allruns.items():
        for a, b in SUMMARY:
            if runs.get(a) and runs.get(b):
                cells = [paired_cell(runs[a], runs[b], c) for c in PAIRED_COLUMNS]
                lines.append(f"| {name} | {a}/{b} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    with open(sys.argv[1]) as f:
        saved = json.load(f)
    print(paired_table({name: rec["runs"] for name, rec in saved["workloads"].items()}))
