"""Wall and CPU time of compile commands, timed by hyperfine.

Series points and compare pairs are timed by interleaved(): the commands
being compared alternate run by run, so that load drift on a shared
machine lands on every side. Each timed run is one hyperfine invocation
(run_once: `hyperfine -N --runs 1 --warmup 0 ... -- '<the exact argv>'`,
started from the command's directory), because hyperfine 1.15 exports
every run's wall time but only the mean of user and system time: one run
per invocation gives every run its own. What measures what:
- hyperfine: each run's wall time and its user and system CPU time (its
  getrusage(RUSAGE_CHILDREN) around the run: the compiler and the
  subprocesses it waited for, cc1 and as under gcc); its JSON export is
  kept whole in the record (`hyperfine`, one object per run).
- wait4(2) on hyperfine: each run's peak RSS, the largest of hyperfine
  and the processes it waited for, which is the compiler's (hyperfine
  itself takes about 10 MB).
- instructions are not counted here: bench/measure/icount.py (perf, or
  QEMU with kx-icount).
Every run has a time limit (run_limit: a generous multiple of what the
expansion run took, with a floor); a run past it is killed with its whole
process group and reported as an error of that file at that side.

hyperfine() remains for single commands (make bench-analyzer): there every
run (warmup included) runs under `/usr/bin/time -a -o RSSFILE -f %M`, so
the peak RSS comes from the same runs as the times; hyperfine's exported
result (raw samples, mean user and system time) is kept whole."""
import json
import os
import re
import select
import shlex
import statistics
import subprocess
import tempfile
import time
from pathlib import Path
from typing import NamedTuple

from kbuild import sandbox
from kbuild.proc import kill_group, run, spawn
from kbuild.util import KexpandError

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


def hyperfine(argv, cwd, runs, warmup=1, timeout=None, box=None):
    """Time argv (run from cwd) with hyperfine; returns a summary dict with
    the raw samples and peak RSS in kB. box: the build dir whose sandbox
    hyperfine and argv run in (kbuild.sandbox); None: kexpand's own tools
    on its own files, outside."""
    with tempfile.TemporaryDirectory(prefix="kx-time-") as tmp:
        tmp = Path(tmp)
        rss = tmp / "rss"
        wrapped = [GNU_TIME, "-a", "-o", str(rss), "-f", "%M", *argv]
        out = tmp / "hyperfine.json"
        cmd = ["hyperfine", "-N", "--style", "none", "--warmup", str(warmup),
               "--runs", str(runs), "--export-json", str(out),
               shlex.join(wrapped)]
        if box is not None:
            cmd = sandbox.wrap(cmd, box, cwd=cwd, rw=[tmp])
        t0 = time.monotonic()
        p = run(cmd, cwd=cwd, check=False, timeout=timeout)
        if p.returncode != 0:
            tail = "\n".join(p.stdout.splitlines()[-10:])
            raise KexpandError(f"timing failed: {shlex.join(argv)}\n{tail}",
                               "build")
        try:
            hf = json.loads(out.read_text())["results"][0]
            rss_kb = [int(l) for l in rss.read_text().split() if l.isdigit()]
            times = hf["times"]
        except (OSError, ValueError, LookupError, TypeError) as e:
            raise KexpandError(f"hyperfine wrote no readable export ({e}): "
                               f"{shlex.join(argv)}", "infra")
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


# --- time limits ---------------------------------------------------------------

# A timed run may take max(RUN_LIMIT_FLOOR_S, RUN_LIMIT_FACTOR x estimate),
# the estimate being the CPU seconds of the file's preprocessor in the
# expansion run (the slowest side's): -c costs a few times its -E, and a
# loaded machine a few times more, so only a hang or a machine in trouble
# reaches it.
RUN_LIMIT_FLOOR_S = 600
RUN_LIMIT_FACTOR = 20


class Limit(NamedTuple):
    """How long one run may take, and the rule that set it (both are named
    in the error of a run that reaches it)."""
    seconds: float
    rule: str


def run_limit(estimate_s=None):
    """The limit of one timed run of a file's -E or -c, from the estimate
    (CPU seconds of its -E in the expansion run; None: unknown)."""
    est = max(0.0, estimate_s or 0.0)
    return Limit(max(RUN_LIMIT_FLOOR_S, RUN_LIMIT_FACTOR * est),
                 f"max({RUN_LIMIT_FLOOR_S} s, {RUN_LIMIT_FACTOR} x {est:.1f} s "
                 "of the file's -E CPU time in the expansion run)")


class TimedOut(KexpandError):
    """A run (timed, or an instruction count) that reached its Limit and
    was killed with its process group. Class "infra": a hang is not a
    verdict on the code under test (a compiler ends on any input; a run 20
    times slower than the file's own expansion says the machine or a tool
    is in trouble), so it is never cached; the callers report it as an
    error of that file at that side (timing.interleaved) or as a count not
    made (cost.count_one), and the next run measures it again."""

    def __init__(self, message):
        super().__init__(message, "infra")


def wait4_within(proc, seconds):
    """wait4(2) on proc for at most `seconds`: (wait status, rusage), or
    None when the time ran out (proc is then still running). Waits on a
    pidfd (no polling); where the kernel or a seccomp filter refuses
    pidfd_open, polls every 50 ms."""
    try:
        fd = os.pidfd_open(proc.pid)
    except (AttributeError, OSError):
        fd = None
    if fd is not None:
        try:
            poller = select.poll()
            poller.register(fd, select.POLLIN)
            if not poller.poll(max(1, int(seconds * 1000))):
                return None
        finally:
            os.close(fd)
        _, status, ru = os.wait4(proc.pid, 0)
        return status, ru
    deadline = time.monotonic() + seconds
    while True:
        pid, status, ru = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            return status, ru
        if time.monotonic() >= deadline:
            return None
        time.sleep(0.05)


# what hyperfine -i itself writes to stderr after a failed command
HYPERFINE_NOTE = re.compile(r"^\s*(Warning: Ignoring non-zero exit code\.?)?\s*$")


def stderr_tail(data, lines=10):
    """The last lines of a run's stderr (the command's, then hyperfine's),
    without hyperfine's note about the exit code it ignored."""
    text = data.decode(errors="replace").splitlines()
    while text and HYPERFINE_NOTE.match(text[-1]):
        text.pop()
    return "\n".join(text[-lines:])


def hyperfine_argv(line, export):
    """The hyperfine command of one timed run of the command line `line`
    (shlex.join of its argv: with -N, hyperfine splits it with POSIX shell
    quoting rules, the shell_words crate, and runs it without a shell).
    -i: a failing command still gets its exit code exported; --output
    inherit: the command's stdout and stderr go where hyperfine's go
    (/dev/null and a file, as before hyperfine timed the runs)."""
    return ["hyperfine", "-N", "--runs", "1", "--warmup", "0", "--style", "none",
            "--ignore-failure", "--output", "inherit", "--export-json", str(export),
            "--", line]


# --- interleaved runs ---------------------------------------------------------

def run_once(argv, cwd, limit=None, rw=()):
    """One run of argv from cwd, timed by hyperfine (hyperfine_argv), in a
    process group of its own (kbuild.proc.spawn), both in the sandbox of
    build dir cwd (kbuild.sandbox; rw: the dirs its output goes to). Returns wall, user and
    system seconds (hyperfine's export: the command and the children it
    waited for), peak RSS in kB (wait4 on hyperfine) and the export
    (results[0]) itself. A command that fails is a "build" error with the
    exit code hyperfine exported and the tail of its stderr; one that
    reaches `limit` (a Limit; default run_limit()) is killed with its
    process group (TimedOut); a command hyperfine cannot start (a missing
    program) or a hyperfine that fails is "infra"."""
    limit = limit or run_limit()
    line = shlex.join(map(str, argv))
    with tempfile.TemporaryDirectory(prefix="kx-time-") as tmp:
        export = Path(tmp) / "hyperfine.json"
        with open(Path(tmp) / "stderr", "w+b") as err:
            proc = spawn(sandbox.wrap(hyperfine_argv(line, export), cwd,
                                      rw=[tmp, *rw]), cwd=cwd,
                         stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                         stderr=err)
            try:
                done = wait4_within(proc, limit.seconds)
            except BaseException:
                kill_group(proc)
                raise
            if done is None:
                kill_group(proc)
                err.seek(0)
                tail = stderr_tail(err.read())
                raise TimedOut(f"timed run killed after {limit.seconds:g} s, its "
                               f"limit ({limit.rule}); a hang is not a verdict on "
                               f"the code: not cached, timed again on the next "
                               f"run: {line}" + (f"\n{tail}" if tail else ""))
            status, ru = done
            proc.returncode = os.waitstatus_to_exitcode(status)
            err.seek(0)
            tail = stderr_tail(err.read())
        if proc.returncode != 0:
            raise KexpandError(f"hyperfine could not time the command (exit "
                               f"{proc.returncode}): {line}\n{tail}", "infra")
        try:
            hf = json.loads(export.read_text())["results"][0]
            code = hf["exit_codes"][0]
            wall, user, system = hf["times"][0], hf["user"], hf["system"]
        except (OSError, ValueError, LookupError, TypeError) as e:
            raise KexpandError(f"hyperfine wrote no readable export ({e}): {line}",
                               "infra")
    if code != 0:
        raise KexpandError(f"timed command failed (exit {code}): {line}\n{tail}",
                           "build")
    return {"wall": wall, "user": user, "system": system,
            "rss_kb": ru.ru_maxrss, "hyperfine": hf}


def summarize(samples, warmup, order):
    """The record of one command's timed runs (same fields as before the
    runs were interleaved: median_s, stddev_s, ... of wall time), plus CPU
    time (user + system) per run and its median, and `hyperfine`: each
    run's exported result, unchanged, in the order of the samples."""
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
        "hyperfine": [s["hyperfine"] for s in samples],
    }


def round_order(sides, r):
    """The order of the sides in round r: rotated each round, so every side
    takes every place equally often (AB BA AB ... for two)."""
    k = r % len(sides)
    return sides[k:] + sides[:k]


def interleaved(sides, jobs, prepare, say=lambda s: None):
    """Run every job once per side per round, the sides alternating
    (round_order), until each job has its warmups and runs.

    sides: labels; jobs: {key: (runs, warmup, command(side) -> (argv, cwd)
    or (argv, cwd, Limit), or None where the job has no command at that
    side)}; prepare(side) is called before a side's turn (a checkout).
    Each run is run_once (hyperfine); a run that fails or reaches its limit
    ends its (side, key), the others go on. Returns
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
                    if e.klass == "infra" and not isinstance(e, TimedOut):
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
