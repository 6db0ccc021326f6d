"""Wall and CPU time of compile commands.

Series points and compare pairs are timed by interleaved(): the commands
being compared alternate run by run, so that load drift on a shared
machine lands on every side; each run's wall time, user + system CPU time
and peak RSS come from wait4(2). hyperfine() remains for single commands
(make bench-analyzer). Under hyperfine every timed run (warmup included) runs under `/usr/bin/time -a -o RSSFILE
-f %M`, so the peak RSS comes from the same runs as the times. hyperfine's
exported result (raw samples, user and system time) is kept whole."""
import json
import os
import shlex
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from kbuild.proc import kill_group, run, spawn
from kbuild.util import KexpandError, log

GNU_TIME = "/usr/bin/time"
OUTLIER_Z = 14.0      # hyperfine's threshold on the modified Z-score


def choose_runs(estimate_s, override=None, counted=False):
    """Timed runs per command. RUNS= (validated up front) overrides.
    Where time decides the verdict (no instruction count at some side):
    5 runs, 3 for commands over 2 s, 2 over 15 s (the fewest Welch's test
    takes). Where instructions decide at every side (`counted`), the times
    are context and cost less: 2 runs (a median and its range), 1 over 2 s."""
    if override:
        return override
    if counted:
        return 2 if estimate_s < 2 else 1
    if estimate_s < 2:
        return 5
    if estimate_s < 15:
        return 3
    return 2


def choose_warmup(estimate_s, counted=False):
    """One warmup run; none for commands over 15 s, whose caches the run
    just before warmed (the expansion run for -E, the build's own compile
    for -c): a warmup of the 47 MB line costs minutes and buys nothing.
    None either where instructions decide both -E and -c (`counted`): the
    times are context, and the exact work just ran the same commands."""
    return 0 if estimate_s > 15 or counted else 1


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


# --- interleaved runs ---------------------------------------------------------

def run_once(argv, cwd, timeout=None):
    """One run of argv: wall seconds, and from wait4(2) the user and system
    CPU seconds and peak RSS of the command and the children it waited for
    (cc1 and as under gcc), as GNU time reports them."""
    with tempfile.TemporaryFile() as err:
        t0 = time.perf_counter()
        proc = spawn(argv, cwd=cwd, stdin=subprocess.DEVNULL,
                     stdout=subprocess.DEVNULL, stderr=err)
        try:
            _, status, ru = os.wait4(proc.pid, 0)
        except BaseException:
            kill_group(proc)
            raise
        wall = time.perf_counter() - t0
        proc.returncode = os.waitstatus_to_exitcode(status)
        if proc.returncode != 0:
            err.seek(0)
            tail = "\n".join(err.read().decode(errors="replace").splitlines()[-10:])
            raise KexpandError(f"timed command failed (exit {proc.returncode}): "
                               f"{shlex.join(argv)}\n{tail}", "build")
    if timeout and wall > timeout:
        log(f"warning: a timed run took {wall:.0f} s (over {timeout} s)")
    return {"wall": wall, "user": ru.ru_utime, "system": ru.ru_stime,
            "rss_kb": ru.ru_maxrss}


def summarize(samples, warmup, order):
    """The record of one command's timed runs (same fields as before the
    runs were interleaved: median_s, stddev_s, ... of wall time), plus CPU
    time (user + system) per run and its median."""
    times = [s["wall"] for s in samples]
    cpu = [s["user"] + s["system"] for s in samples]
    r6 = lambda x: round(x, 6)       # noqa: E731
    return {
        "median_s": r6(statistics.median(times)), "mean_s": r6(statistics.fmean(times)),
        "stddev_s": r6(statistics.stdev(times) if len(times) > 1 else 0.0),
        "min_s": r6(min(times)), "max_s": r6(max(times)),
        "user_s": r6(statistics.fmean(s["user"] for s in samples)),
        "system_s": r6(statistics.fmean(s["system"] for s in samples)),
        "cpu_median_s": r6(statistics.median(cpu)),
        "cpu_stddev_s": r6(statistics.stdev(cpu) if len(cpu) > 1 else 0.0),
        "runs": len(times), "warmup": warmup,
        "peak_rss_kb": max(s["rss_kb"] for s in samples),
        "noise": noise(times), "interleaved": order,
        "samples": {"times": [r6(t) for t in times], "cpu": [r6(c) for c in cpu],
                    "user": [r6(s["user"]) for s in samples],
                    "system": [r6(s["system"]) for s in samples],
                    "rss_kb": [s["rss_kb"] for s in samples]},
    }


def round_order(sides, r):
    """The order of the sides in round r: rotated each round, so every side
    takes every place equally often (AB BA AB ... for two)."""
    k = r % len(sides)
    return sides[k:] + sides[:k]


def interleaved(sides, jobs, prepare, say=lambda s: None):
    """Run every job once per side per round, the sides alternating
    (round_order), until each job has its warmups and runs.

    sides: labels; jobs: {key: (runs, warmup, command(side) -> (argv, cwd),
    or None where the job has no command at that side)};
    prepare(side) is called before a side's turn (a checkout). Returns
    ({(side, key): summary}, {(side, key): error text})."""
    rounds = max((w + n for n, w, _ in jobs.values()), default=0)
    got, failed, orders = {}, {}, []
    for r in range(rounds):
        order = round_order(list(sides), r)
        orders.append(order)
        for side in order:
            live = [k for k, (n, w, _) in jobs.items()
                    if r < w + n and (side, k) not in failed]
            if not live:
                continue
            prepare(side)
            say(f"  round {r + 1}/{rounds}: {side} ({len(live)} commands)")
            for k in live:
                n, w, command = jobs[k]
                cmd = command(side)
                if cmd is None:           # not measured at this side
                    continue
                try:
                    s = run_once(*cmd)
                except KexpandError as e:
                    if e.klass == "infra":
                        raise
                    failed[(side, k)] = str(e)
                    continue
                if r >= w:
                    got.setdefault((side, k), []).append(s)
    out = {}
    for (side, k), samples in got.items():
        if (side, k) not in failed:
            out[(side, k)] = summarize(samples, jobs[k][1], orders)
    return out, failed
