"""The noise model of make track, after llvm-compile-time-tracker's
(compute_stddev.php): a metric's noise is estimated from the history of
its commit-to-commit differences, robust to the real jumps.

For one (compiler, file, metric) over the commits of a track, in order:
1. the differences d between consecutive measured commits, leaving out
   those across a setup change (another compiler version, config, host
   or instruction counter: never a verdict on the code);
2. a short history cannot tell its jumps from its noise, so differences
   over REL_JUMP of the value are set aside as jumps from the start;
3. of the rest, sigma_d = sqrt(sum(d^2) / (n - 1)) (the mean difference
   is expected to be zero), dropping every d with |d| >= 5 sigma_d and
   recomputing until nothing is dropped (the tracker's loop);
4. the noise of the values is sigma = sigma_d / sqrt(2) (a difference is
   the sum of two independent errors).
A change is interesting when |d| > max(Z * sigma, FLOOR[metric] x the
value before): beyond what the history's noise explains and beyond the
floor below which no change of that metric matters (instructions: the
A/A check's 0.2%; bytes and longest line: 0.1%, what a comment in a
header moves). z = |d| / sigma is reported (null when sigma is 0: every
difference outside the jumps was exactly zero)."""
import math

Z = 5.0
REL_JUMP = 0.01
FLOOR = {"bytes": 0.001, "longest_line": 0.001, "instructions_c": 0.002,
         "total_bytes": 0.001}


def diffs_sigma(diffs):
    """sigma of the values from their differences (steps 3 and 4)."""
    d = [float(x) for x in diffs]
    while len(d) >= 2:
        s = math.sqrt(sum(x * x for x in d) / (len(d) - 1))
        keep = [x for x in d if abs(x) < 5 * s] if s > 0 else d
        if len(keep) == len(d):
            return s / math.sqrt(2)
        d = keep
    return 0.0


def series_sigma(points):
    """points: [(value or None, setup)] in commit order. The noise of the
    values (steps 1 to 4)."""
    diffs, prev = [], None
    for v, setup in points:
        if v is None:
            continue
        if prev is not None and prev[1] == setup and prev[0]:
            d = v - prev[0]
            if abs(d) <= REL_JUMP * abs(prev[0]):
                diffs.append(d)
        prev = (v, setup)
    return diffs_sigma(diffs)


def changes(points, metric, sigma):
    """[(index, before, after, delta, z, threshold)] of the interesting
    changes of one series of points (commit indexes into `points`)."""
    out, prev = [], None
    for i, (v, setup) in enumerate(points):
        if v is None:
            continue
        if prev is not None and prev[2] == setup:
            before = prev[1]
            d = v - before
            threshold = max(Z * sigma, FLOOR[metric] * abs(before))
            if d and abs(d) > threshold:
                z = round(abs(d) / sigma, 1) if sigma > 0 else None
                out.append((i, before, v, d, z, threshold))
        prev = (i, v, setup)
    return out


BOUNDARY = ("config_hash", "counter")     # with each compiler's version


def setup_key(setup, cc):
    """What must be equal for two commits' values to be compared: the
    compiler's version, the config and the instruction counter. The host
    is not in it: bytes are exact, and counts under one counter (QEMU and
    its plugin, or perf) count the same compiler binary's instructions
    whatever machine runs it; a host change is shown, not a boundary."""
    return tuple([setup.get(cc)] + [setup.get(k) for k in BOUNDARY])


def setup_changes(commits, ccs):
    """[(index, what, boundary)] where a commit's setup differs from the
    previous commit's: a compiler version, config or counter (a boundary:
    no change across it is compared), or the host (shown only)."""
    out, prev = [], None
    for i, c in enumerate(commits):
        s = c.get("setup") or {}
        if prev is not None:
            keys = [*ccs, *BOUNDARY]
            what = [f"{k}: {prev.get(k)} -> {s.get(k)}" for k in keys + ["host"]
                    if prev.get(k) != s.get(k)]
            if what:
                out.append((i, "; ".join(what),
                            any(prev.get(k) != s.get(k) for k in keys)))
        prev = s
    return out
