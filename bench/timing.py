"""Wall-time measurements with hyperfine, peak RSS with GNU time.

Every timed run (warmup included) runs under `/usr/bin/time -a -o RSSFILE
-f %M`, so the peak RSS comes from the same runs as the times. hyperfine's
exported result (raw samples, user and system time) is kept whole."""
import json
import os
import shlex
import statistics
import tempfile
import time
from pathlib import Path

from kbuild.util import KexpandError, run

GNU_TIME = "/usr/bin/time"
OUTLIER_Z = 14.0      # hyperfine's threshold on the modified Z-score


def choose_runs(estimate_s, override=None):
    """Timed runs per command. RUNS= (validated up front) overrides;
    otherwise fewer runs for slow commands so that a whole `make bench`
    stays under an hour here."""
    if override:
        return override
    if estimate_s < 2:
        return 5
    if estimate_s < 15:
        return 3
    return 2


def choose_warmup(estimate_s):
    """One warmup run; none for commands over 15 s, whose caches the run
    just before warmed (the expansion run for -E, the build's own compile
    for -c): a warmup of the 47 MB line costs minutes and buys nothing."""
    return 0 if estimate_s > 15 else 1


def noise(times):
    """hyperfine-style judgement of the samples."""
    med = statistics.median(times)
    mad = statistics.median(abs(t - med) for t in times)
    outliers = 0
    if mad > 0:
        outliers = sum(1 for t in times if abs(0.6745 * (t - med) / mad) > OUTLIER_Z)
    sd = statistics.stdev(times) if len(times) > 1 else 0.0
    rel = sd / med if med else 0.0
    notes = []
    if outliers:
        notes.append(f"{outliers} statistical outlier(s): other programs or "
                     "the shared machine interfered")
    if rel > 0.10:
        notes.append(f"spread {rel:.0%} of the median: treat differences "
                     "below that as noise")
    return {"outliers": outliers, "rel_stddev": round(rel, 4),
            "note": "; ".join(notes) or "ok"}


def hyperfine(argv, cwd, runs, warmup=1, timeout=None):
    """Time argv (run from cwd) with hyperfine; returns a summary dict with
    the raw samples and peak RSS in kB."""
    with tempfile.TemporaryDirectory(prefix="kx-time-") as tmp:
        tmp = Path(tmp)
        rss = tmp / "rss"
        wrapped = [GNU_TIME, "-a", "-o", str(rss), "-f", "%M", *argv]
        out = tmp / "hyperfine.json"
        cmd = ["hyperfine", "-N", "--style", "none", "--warmup", str(warmup),
               "--runs", str(runs), "--export-json", str(out),
               shlex.join(wrapped)]
        t0 = time.monotonic()
        p = run(cmd, cwd=cwd, check=False, timeout=timeout)
        if p.returncode != 0:
            tail = "\n".join(p.stdout.splitlines()[-10:])
            raise KexpandError(f"timing failed: {shlex.join(argv)}\n{tail}",
                               "build")
        hf = json.loads(out.read_text())["results"][0]
        rss_kb = [int(l) for l in rss.read_text().split() if l.isdigit()]
        times = hf["times"]
        return {
            "median_s": round(hf["median"], 6), "mean_s": round(hf["mean"], 6),
            "stddev_s": round(hf.get("stddev") or 0.0, 6),
            "min_s": round(hf["min"], 6), "max_s": round(hf["max"], 6),
            "user_s": round(hf["user"], 6), "system_s": round(hf["system"], 6),
            "runs": len(times), "warmup": warmup,
            "peak_rss_kb": max(rss_kb) if rss_kb else None,
            "noise": noise(times),
            "wall_s": round(time.monotonic() - t0, 3),
            "hyperfine": hf,
        }
