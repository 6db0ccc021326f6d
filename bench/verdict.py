"""The compile-cost verdict of A against B: which metric decides, and
whether the difference is beyond the measured noise. Statistics from
SciPy (Debian python3-scipy).

The rule (README, "Is it significant?"):
- decided on instructions when both sides were counted (deterministic:
  llvm-compile-time-tracker's metric); on CPU time (user + system, which
  other tenants disturb less than wall time) otherwise; on wall time for
  records without CPU samples.
- the threshold of a metric is the larger of its floor (FLOORS) and 3x the
  largest |B/A - 1| the built-in A/A check measured for that metric
  (results/noise.json, written from the bench's control pair). The A/A
  check itself is judged on the floors alone.
- instructions: significant when |B/A - 1| > threshold. Times: when also
  Welch's t-test on the runs gives p < ALPHA and |B/A - 1| of the medians
  exceeds the larger within-run spread.

pair_rows() applies it to a pair of commits (a compare, the bench's A/A
check); aa_noise() and write_noise() turn the A/A check's rows into
results/noise.json, written by make bench, where the noise is measured."""
import math
import statistics

from kbuild.util import atomic_write_json

ALPHA = 0.01
# noise floors. The same command counts the same instructions (QEMU: to
# the instruction for the compiler proper); two commits whose headers
# differ only in layout (the control point) differ by up to 0.08%
# (measured, README); a time difference under 3% is not a verdict on a
# shared machine.
FLOORS = {"instructions": 0.002, "cpu_time": 0.03, "wall_time": 0.03}
NOISE_FACTOR = 3.0


def welch(a, b):
    """(t, p) of Welch's unequal-variance t-test of b against a; (None,
    None) when either side has fewer than two runs."""
    if len(a) < 2 or len(b) < 2:
        return None, None
    if statistics.variance(a) == 0 and statistics.variance(b) == 0:
        same = statistics.fmean(a) == statistics.fmean(b)
        return (0.0, 1.0) if same else (math.inf, 0.0)
    from scipy import stats     # (0.7 s to import: only where a verdict is made)
    r = stats.ttest_ind(b, a, equal_var=False)
    return float(r.statistic), float(r.pvalue)


def rel_spread(xs):
    if len(xs) < 2:
        return 0.0
    m = statistics.median(xs)
    return statistics.stdev(xs) / m if m else 0.0


def threshold(metric, noise=None):
    """(threshold, where it came from) for a metric."""
    floor = FLOORS[metric]
    aa = (noise or {}).get(metric)
    if aa is None:
        return floor, "floor"
    t = max(floor, NOISE_FACTOR * aa)
    return t, ("A/A noise" if t > floor else "floor")


def samples(t, metric):
    s = t.get("samples") or t.get("hyperfine") or {}
    return s.get("cpu" if metric == "cpu_time" else "times") or []


def verdict(ta, tb, noise=None):
    """The verdict on two time_c (or time_E) entries. Returns decided_by,
    significant, threshold, and each metric's ratio B/A."""
    out = {"instructions_a": ta.get("instructions"),
           "instructions_b": tb.get("instructions")}
    ia, ib = out["instructions_a"], out["instructions_b"]
    out["instructions_ratio"] = round(ib / ia, 6) if ia and ib else None
    for m in ("cpu_time", "wall_time"):
        a, b = samples(ta, m), samples(tb, m)
        if a and b:
            ma, mb = statistics.median(a), statistics.median(b)
            _, p = welch(a, b)
            out[f"{m}_ratio"] = round(mb / ma, 4) if ma else None
            out[f"{m}_p"] = None if p is None else round(p, 6)
            out[f"{m}_spread"] = round(max(rel_spread(a), rel_spread(b)), 4)
    if out["instructions_ratio"] is not None:
        by = "instructions"
    elif out.get("cpu_time_ratio") is not None:
        by = "cpu_time"
    else:
        by = "wall_time"
    thr, src = threshold(by, noise)
    ratio = out["instructions_ratio"] if by == "instructions" else out.get(f"{by}_ratio")
    if ratio is None:
        sig = False
    elif by == "instructions":
        sig = abs(ratio - 1) > thr
    else:
        p = out.get(f"{by}_p")
        sig = p is not None and p < ALPHA and \
            abs(ratio - 1) > max(thr, out[f"{by}_spread"])
    out.update(decided_by=by, significant=bool(sig), threshold=round(thr, 6),
               threshold_from=src)
    return out


def aa_noise(rows):
    """The noise an A/A comparison measured, per metric: the largest
    |B/A - 1| over its (file, compiler) rows (both kinds, -E and -c)."""
    out = {}
    for m in ("instructions", "cpu_time", "wall_time"):
        vals = [abs(r[k] - 1) for r in rows for k in (f"c_{m}_ratio", f"e_{m}_ratio")
                if isinstance(r.get(k), (int, float))]
        out[m] = round(max(vals), 6) if vals else None
    return out


NOISE_FILE = "noise.json"     # what the bench's A/A check measured


def write_noise(results, pair_name, rows):
    """results/noise.json from the A/A check's rows (judged on the floors):
    the largest |B/A - 1| per metric, how many rows and how many flagged."""
    ok_rows = [r for r in rows if r["status"] == "ok"]
    n = dict(aa_noise(ok_rows), pair=pair_name, rows=len(ok_rows),
             flagged=sum(bool(r.get("significant") or r.get("e_significant"))
                         for r in ok_rows))
    atomic_write_json(results / NOISE_FILE, n)
    return n


def ok(e):
    return bool(e) and e.get("status") == "ok"


def pair_rows(pair, records, noise=None):
    """One row per (file, compiler): bytes from the records, compile cost
    from the pair's own interleaved runs (pair.json "timings", `make
    compare`) or else from the records (the bench's A/A pair, timed with
    all points), judged by verdict() with `noise` (A/A)."""
    by = {(r["commit"], r["compiler"]): r for r in records}
    rows = []
    for cc in pair["compilers"]:
        ra = by.get((pair["a"]["commit"], cc))
        rb = by.get((pair["b"]["commit"], cc))
        if not ra or not rb:
            continue
        for f in pair["files"]:
            ea, eb = ra["files"].get(f), rb["files"].get(f)
            if not ok(ea) or not ok(eb):
                rows.append({"file": f, "compiler": cc, "status":
                             f"A {(ea or {}).get('status')}, B {(eb or {}).get('status')}"})
                continue
            row = {"file": f, "compiler": cc, "status": "ok",
                   "bytes_a": ea["expanded_bytes"], "bytes_b": eb["expanded_bytes"],
                   "bytes_ratio": round(eb["expanded_bytes"] / ea["expanded_bytes"], 6),
                   "longest_line_a": ea["longest_line_bytes"],
                   "longest_line_b": eb["longest_line_bytes"],
                   "hot_a": ea.get("hot_lines", []), "hot_b": eb.get("hot_lines", [])}
            own = ((pair.get("timings") or {}).get(cc) or {}).get(f)
            if own:
                ea, eb = own["a"], own["b"]
            row.update(cost_columns(ea, eb, noise))
            rows.append(row)
    return rows


def cost_columns(ea, eb, noise):
    """The compile-cost columns of a row: -c (the verdict) and -E."""
    row = {}
    ta, tb = ea.get("time_c"), eb.get("time_c")
    if ta and tb:
        v = verdict(ta, tb, noise)
        row.update({"c_time_a_s": ta["median_s"], "c_time_b_s": tb["median_s"],
                    "c_sd_a": ta["stddev_s"], "c_sd_b": tb["stddev_s"],
                    "c_time_ratio": round(tb["median_s"] / ta["median_s"], 4),
                    "significant": v["significant"], "decided_by": v["decided_by"],
                    "threshold": v["threshold"], "threshold_from": v["threshold_from"],
                    "c_time_p_value": v.get("wall_time_p"),
                    "noise_rel": v.get("wall_time_spread", 0.0),
                    "c_instructions_a": v["instructions_a"],
                    "c_instructions_b": v["instructions_b"],
                    "c_instructions_ratio": v["instructions_ratio"],
                    "c_cpu_a_s": ta.get("cpu_median_s"), "c_cpu_b_s": tb.get("cpu_median_s"),
                    "c_cpu_time_ratio": v.get("cpu_time_ratio"),
                    "c_wall_time_ratio": v.get("wall_time_ratio"),
                    "peak_rss_a_kb": ta.get("peak_rss_kb"),
                    "peak_rss_b_kb": tb.get("peak_rss_kb")})
    ta, tb = ea.get("time_E"), eb.get("time_E")
    if ta and tb:
        v = verdict(ta, tb, noise)
        row.update({"e_instructions_ratio": v["instructions_ratio"],
                    "e_cpu_time_ratio": v.get("cpu_time_ratio"),
                    "e_wall_time_ratio": v.get("wall_time_ratio"),
                    "e_time_ratio": round(tb["median_s"] / ta["median_s"], 4),
                    "e_significant": v["significant"], "e_decided_by": v["decided_by"]})
    return row


